import { deepStrictEqual, equal, match } from "node:assert/strict";
import {
  formatKeyPath,
  getChild,
  getPath,
  normalizeSegment,
  parseKeyPath,
} from "../../lib/config/key_path.ts";
import type { KeySegment } from "../../lib/config/types.ts";
import { didYouMean, editDistance } from "../../lib/util/did_you_mean.ts";
import { configError } from "../_helpers.ts";

Deno.test("parseKeyPath reads dotted keys, list indices and bracketed names", () => {
  const cases: [string, KeySegment[]][] = [
    ["", []],
    ["a", ["a"]],
    ["a.b[0].c", ["a", "b", 0, "c"]],
    ["a.b.0", ["a", "b", "0"]],
    ["a['x.y']", ["a", "x.y"]],
    ['a["k"].b', ["a", "k", "b"]],
    ["a[0][1]", ["a", 0, 1]],
    ["[2].x", [2, "x"]],
    ["a[ 3 ]", ["a", 3]],
    ["actor_train.training_args.learning_rate", [
      "actor_train",
      "training_args",
      "learning_rate",
    ]],
  ];
  for (const [text, expected] of cases) deepStrictEqual(parseKeyPath(text), expected, text);
});

Deno.test("formatKeyPath and parseKeyPath round-trip", () => {
  for (const text of ["a.b[0].c", "a.b.0", "[2].x", "a[0][1]", "a", ""]) {
    equal(formatKeyPath(parseKeyPath(text)), text, text);
    deepStrictEqual(parseKeyPath(formatKeyPath(parseKeyPath(text))), parseKeyPath(text), text);
  }
  equal(formatKeyPath(["a", "b", 0, "c"]), "a.b[0].c");
  equal(formatKeyPath(parseKeyPath('a["k"].b')), "a.k.b");
});

Deno.test({
  name: "formatKeyPath round-trips a key that contains a dot",
  // Was a bug: formatKeyPath(["a", "x.y"]) gives "a.x.y", which parses back as
  // ["a", "x", "y"]; keys with '.' (or '[') are not quoted. resolve.ts and
  // OriginMap key their maps by this text, so such keys collide with nested ones.

  fn() {
    const segments = parseKeyPath("a['x.y']");
    deepStrictEqual(parseKeyPath(formatKeyPath(segments)), segments);
  },
});

Deno.test("parseKeyPath rejects empty keys and unclosed brackets", async () => {
  match((await configError(() => parseKeyPath("a..b"))).message, /Empty key in path 'a\.\.b'/);
  match((await configError(() => parseKeyPath("a."))).message, /Empty key/);
  match((await configError(() => parseKeyPath("a["))).message, /Unclosed '\['/);
  match((await configError(() => parseKeyPath("a[0"))).message, /Unclosed '\['/);
  match((await configError(() => parseKeyPath("a[]"))).message, /Empty '\[\]'/);
});

Deno.test("getChild, getPath and normalizeSegment index lists and mappings", () => {
  const root = { a: { l: [10, { k: "v" }] }, "0": "zero" };
  equal(getChild(root, "0"), "zero");
  equal(getChild(root, 0), "zero");
  equal(getChild([5, 6], "1"), 6);
  equal(getChild([5, 6], 1), 6);
  equal(getChild([5, 6], "x"), undefined);
  equal(getChild([5, 6], 2), undefined);
  equal(getChild("text", "length"), undefined);
  equal(getChild({}, "toString"), undefined);
  equal(getPath(root, ["a", "l", 1, "k"]), "v");
  equal(getPath(root, ["a", "l", "1", "k"]), "v");
  equal(getPath(root, ["a", "nope", 0]), undefined);
  equal(normalizeSegment([1], "0"), 0);
  equal(normalizeSegment({}, 0), "0");
  equal(normalizeSegment({}, "x"), "x");
  equal(normalizeSegment([1], "x"), "x");
});

Deno.test("editDistance counts insertions, deletions and substitutions", () => {
  const cases: [string, string, number][] = [
    ["", "", 0],
    ["abc", "abc", 0],
    ["", "abc", 3],
    ["abc", "", 3],
    ["kitten", "sitting", 3],
    ["flaw", "lawn", 2],
    ["max_step", "max_steps", 1],
    ["lr", "rl", 2],
    ["Seed", "seed", 1],
  ];
  for (const [a, b, d] of cases) {
    equal(editDistance(a, b), d, `${a} -> ${b}`);
    equal(editDistance(b, a), d, `${b} -> ${a}`);
  }
});

Deno.test("didYouMean names the closest candidate when it is close enough", () => {
  equal(
    didYouMean("lerning_rate", ["seed", "learning_rate", "warmup"]),
    "did you mean 'learning_rate'?",
  );
  equal(didYouMean("max_step", ["max_steps", "max_stop_x"]), "did you mean 'max_steps'?");
  equal(didYouMean("SEED", ["seed"]), "did you mean 'seed'?");
  equal(didYouMean("xyz", ["max_steps", "learning_rate"]), undefined);
  equal(didYouMean("anything", []), undefined);
  // ties go to the first candidate
  equal(didYouMean("ab", ["ac", "ad"]), "did you mean 'ac'?");
  // the limit is a third of the word, at least 2 (1 for words of 3 letters or fewer)
  equal(didYouMean("abcdefghijkl", ["abcdefghWXYZ"]), "did you mean 'abcdefghWXYZ'?");
  equal(didYouMean("abcdefghijkl", ["abcdefgVWXYZ"]), undefined);
  equal(didYouMean("ab", ["cd"]), undefined);
  equal(didYouMean("ab", ["cde"]), undefined);
  equal(didYouMean("foo", ["now"]), undefined);
  equal(didYouMean("sed", ["seed"]), "did you mean 'seed'?");
});
