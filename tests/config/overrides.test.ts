import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { applyOverrides, type KnownKey } from "../../lib/config/apply_overrides.ts";
import { OriginMap } from "../../lib/config/origins.ts";
import { parseOverride } from "../../lib/config/override_parser.ts";
import { parseOverrideValue } from "../../lib/config/override_value.ts";
import { resolveConfig } from "../../lib/config/resolve.ts";
import type { CfgObject, KeySegment } from "../../lib/config/types.ts";
import { configError } from "../_helpers.ts";

/** Applies overrides (as typed) to `root` and returns the origin map used. */
function apply(root: CfgObject, texts: string[], knownKey?: KnownKey, origins = new OriginMap()) {
  applyOverrides(root, origins, texts.map(parseOverride), knownKey);
  return origins;
}

const CLI = (text: string) => ({ source: "command line", override: text });

// ---------------------------------------------------------------- values

Deno.test("override values are typed like Hydra: null, booleans, numbers", () => {
  const cases: [string, unknown][] = [
    ["null", null],
    ["NULL", null],
    ["Null", null],
    ["true", true],
    ["False", false],
    ["TRUE", true],
    ["42", 42],
    ["1_000", 1000],
    ["-5", -5],
    ["+3", 3],
    ["0", 0],
    ["1.5", 1.5],
    ["1e-5", 1e-5],
    ["-2.5E3", -2500],
    [".5", 0.5],
    ["3.", 3],
    ["inf", Infinity],
    ["-inf", -Infinity],
    ["+INF", Infinity],
    ["abc", "abc"],
    ["1__0", "1__0"],
    ["1_", "1_"],
    ["007", "007"], // an int has no leading zeros (a float may: 007.5)
    ["007.5", 7.5],
    ["1_0.2_5", 10.25],
    ["1.e3", 1000],
    ["1e", "1e"],
    ["0x10", "0x10"],
    ["1e5x", "1e5x"],
    ["a.b/c-d", "a.b/c-d"],
    ["  7  ", 7],
  ];
  for (const [text, expected] of cases) deepStrictEqual(parseOverrideValue(text), expected, text);
  ok(Number.isNaN(parseOverrideValue("nan")));
  ok(Number.isNaN(parseOverrideValue("NaN")));
});

Deno.test("quoted override values are strings, with escapes", () => {
  equal(parseOverrideValue("'1'"), "1");
  equal(parseOverrideValue('"null"'), "null");
  equal(parseOverrideValue("'it\\'s'"), "it's");
  equal(parseOverrideValue('"say \\"hi\\""'), 'say "hi"');
  equal(parseOverrideValue("'back\\\\slash'"), "back\\slash");
  equal(parseOverrideValue("'a,b'"), "a,b");
  equal(parseOverrideValue('"[1,2]"'), "[1,2]");
  equal(parseOverrideValue("''"), "");
});

Deno.test("lists and dicts nest and type their items", () => {
  deepStrictEqual(parseOverrideValue("[1,[2,3]]"), [1, [2, 3]]);
  deepStrictEqual(parseOverrideValue("[]"), []);
  deepStrictEqual(parseOverrideValue("[ a , 'b c', null, 1.5 ]"), ["a", "b c", null, 1.5]);
  deepStrictEqual(parseOverrideValue("{a:1,b:[x,y]}"), { a: 1, b: ["x", "y"] });
  deepStrictEqual(parseOverrideValue("{}"), {});
  deepStrictEqual(parseOverrideValue("{'k.x': {n: true}}"), { "k.x": { n: true } });
});

Deno.test("interpolations stay strings; an empty value is the empty string", () => {
  equal(parseOverrideValue("${seed}"), "${seed}");
  equal(parseOverrideValue("run_${oc.env:USER,x}"), "run_${oc.env:USER,x}");
  deepStrictEqual(parseOverrideValue("[${a},2]"), ["${a}", 2]);
  equal(parseOverrideValue(""), "");
  equal(parseOverrideValue("   "), "");
  equal(parseOverrideValue("a\\,b"), "a,b");
});

Deno.test("sweeps and malformed values are errors", async () => {
  const sweep = await configError(() => parseOverrideValue("a,b"));
  match(sweep.message, /multirun/);
  const range = await configError(() => parseOverrideValue("range(1,3)"));
  match(range.message, /range/);
  match(range.message, /multirun/);
  const choice = await configError(() => parseOverrideValue("choice(a, b)"));
  match(choice.message, /multirun/);
  match((await configError(() => parseOverrideValue("[1,2"))).message, /expected ',' or '\]'/);
  match((await configError(() => parseOverrideValue("{a 1}"))).message, /expected ':'/);
  match((await configError(() => parseOverrideValue("'abc"))).message, /unterminated/);
  match((await configError(() => parseOverrideValue("[1] x"))).message, /unexpected text/);
});

Deno.test("cast functions convert as Hydra's do, leaf by leaf in lists and dicts", () => {
  const cases: [string, unknown][] = [
    ["str(5)", "5"],
    ["str(1.0)", "1.0"], // Python's str of a float, which a JS number cannot tell from 1
    ["str(1e-5)", "1e-05"],
    ["str(1e3)", "1000.0"],
    ["str(true)", "true"], // Hydra lower-cases booleans
    ["str('a b')", "a b"],
    ["int(3.9)", 3],
    ["int(-3.9)", -3],
    ["int('12')", 12],
    ["int(value=4)", 4],
    ["int(true)", 1],
    ["float(3)", 3],
    ["float(' 1_0.5 ')", 10.5],
    ["float('-inf')", -Infinity],
    ["bool(0)", false],
    ["bool(0.5)", true],
    ["bool('True')", true],
    ["str(int(1.5))", "1"],
    ["str(float(1))", "1.0"],
    ["str([1, 2.5, true, a])", ["1", "2.5", "true", "a"]],
    ["int({a: 1.5, b: '2'})", { a: 1, b: 2 }],
    ["[str(1), int(2.5)]", ["1", 2]],
    ["json_str({a: 1, b: [1.0, 'x', null, true]})", '{"a": 1, "b": [1.0, "x", null, true]}'],
    ["json_str('é')", '"\\u00e9"'],
    // integers past 2^53 keep their digits as text; Python's -0.0
    ["str(12345678901234567890)", "12345678901234567890"],
    ["json_str([12345678901234567890])", "[12345678901234567890]"],
    ["str(-0.0)", "-0.0"],
    ["str(+5)", "5"],
  ];
  for (const [text, want] of cases) deepStrictEqual(parseOverrideValue(text), want, text);
  // OmegaConf's oc.decode and resolver arguments have no cast functions
  equal(parseOverrideValue("str(5)", { functions: false }), "str(5)");
  // an unknown function name stays text, as before
  equal(parseOverrideValue("foo(bar)"), "foo(bar)");
});

Deno.test("a cast that cannot convert is an error naming the value and the function", async () => {
  const cases: [string, RegExp][] = [
    ["int(abc)", /^Cannot cast "abc" to int: the text is not an integer$/],
    ["int('3.5')", /^Cannot cast "3.5" to int/],
    ["int(inf)", /^Cannot cast inf to int: it is not a finite number$/],
    ["float(x1)", /^Cannot cast "x1" to float/],
    ["bool(yes)", /^Cannot cast "yes" to bool: only the text true or false converts$/],
    ["str(null)", /^Cannot cast null to str/],
    ["str()", /str\(\) needs a value/],
    ["str(5", /expected '\)' to close str\(/],
    ["str(1,2)", /several values is a sweep, which needs multirun/],
    ["str(range(3))", /Sweep 'range\(\.\.\.\)' needs multirun/],
  ];
  for (const [text, pattern] of cases) {
    match((await configError(() => parseOverrideValue(text))).message, pattern, text);
  }
  equal(
    (await configError(() => parseOverrideValue("float(lr)"))).details.hint,
    "to pass the text as it is, quote the whole value",
  );
  equal(
    (await configError(() => parseOverrideValue("str(5)_run"))).details.hint,
    "quote it to pass it as text: 'str(5)_run'",
  );
});

// ---------------------------------------------------------------- parseOverride

Deno.test("parseOverride reads the kind, key and value", () => {
  deepStrictEqual(parseOverride("a.b=1"), {
    kind: "set",
    key: "a.b",
    value: 1,
    rawValue: "1",
    text: "a.b=1",
  });
  deepStrictEqual(parseOverride("+a.b=x"), {
    kind: "add",
    key: "a.b",
    value: "x",
    rawValue: "x",
    text: "+a.b=x",
  });
  deepStrictEqual(parseOverride("++a.b=[1]"), {
    kind: "force",
    key: "a.b",
    value: [1],
    rawValue: "[1]",
    text: "++a.b=[1]",
  });
  deepStrictEqual(parseOverride("~a.b"), { kind: "delete", key: "a.b", text: "~a.b" });
  deepStrictEqual(parseOverride("~a.b=3"), {
    kind: "delete",
    key: "a.b",
    value: 3,
    rawValue: "3",
    text: "~a.b=3",
  });
  const empty = parseOverride("a=");
  equal(empty.value, "");
  equal(empty.rawValue, "");
  equal(parseOverride("a[0]=1").key, "a[0]");
  equal(parseOverride("lr=1e-5").value, 1e-5);
  equal(parseOverride("name='1'").value, "1");
  equal(parseOverride("name='1'").rawValue, "'1'");
  equal(parseOverride("x=a=b").value, "a=b");
});

Deno.test("parseOverride reads a group@package key", () => {
  const o = parseOverride("db@backup=mysql");
  equal(o.kind, "set");
  equal(o.key, "db");
  equal(o.package, "backup");
  equal(o.value, "mysql");
  const nested = parseOverride("+envs/train@actor.envs=frozen_lake");
  equal(nested.kind, "add");
  equal(nested.key, "envs/train");
  equal(nested.package, "actor.envs");
  equal(nested.value, "frozen_lake");
  equal(parseOverride("db=mysql").package, undefined);
});

Deno.test("parseOverride errors: no '=', a bad key, a sweep, a bad value", async () => {
  const noEq = await configError(() => parseOverride("abc"));
  match(noEq.message, /has no '='/);
  deepStrictEqual(noEq.details.origin, CLI("abc"));
  match((await configError(() => parseOverride("+abc"))).message, /has no '='/);
  match((await configError(() => parseOverride("++abc"))).message, /has no '='/);
  match((await configError(() => parseOverride("a b=1"))).message, /Invalid key 'a b'/);
  match((await configError(() => parseOverride("=1"))).message, /Invalid key/);
  match((await configError(() => parseOverride("a!=1"))).message, /Invalid key/);
  match((await configError(() => parseOverride("~"))).message, /Invalid key/);
  const sweep = await configError(() => parseOverride("lr=1e-5,1e-4"));
  match(sweep.message, /multirun/);
  equal(sweep.details.key, "lr");
  deepStrictEqual(sweep.details.origin, CLI("lr=1e-5,1e-4"));
  const range = await configError(() => parseOverride("seed=range(1,3)"));
  match(range.message, /range/);
  match(range.message, /multirun/);
  const bad = await configError(() => parseOverride("a=[1,"));
  match(bad.message, /Invalid override value/);
  equal(bad.details.key, "a");
});

// ---------------------------------------------------------------- applyOverrides

Deno.test("setting an existing key replaces its value and records the override as origin", () => {
  const root: CfgObject = { trainer: { lr: 1, steps: 10 }, name: "x" };
  const origins = new OriginMap();
  origins.set(["trainer", "lr"], { source: "f.yaml", line: 2, column: 7 });
  apply(root, ["trainer.lr=1e-5", "name=y"], undefined, origins);
  deepStrictEqual(root, { trainer: { lr: 1e-5, steps: 10 }, name: "y" });
  deepStrictEqual(origins.get(["trainer", "lr"]), CLI("trainer.lr=1e-5"));
  deepStrictEqual(origins.get(["name"]), CLI("name=y"));
});

Deno.test("a mapping value merges into the mapping there, as Hydra's OmegaConf.update(merge=True)", () => {
  const root: CfgObject = {
    a: { b: 1, c: { d: 2, e: 3 }, l: [1, 2] },
    lib: { x: 1, y: 2 },
    r: "${lib}",
  };
  const origins = new OriginMap();
  origins.set(["a"], { source: "f.yaml", line: 1 });
  origins.set(["a", "b"], { source: "f.yaml", line: 2 });
  apply(root, ["a={c:{d:5},l:[9],n:1}", "r={y:7}"], undefined, origins);
  deepStrictEqual(root.a, { b: 1, c: { d: 5, e: 3 }, l: [9], n: 1 });
  deepStrictEqual(origins.get(["a", "b"]), { source: "f.yaml", line: 2 });
  deepStrictEqual(origins.get(["a", "c", "d"]), CLI("a={c:{d:5},l:[9],n:1}"));
  deepStrictEqual(origins.find(["a", "c", "e"]), { source: "f.yaml", line: 1 });
  // through a reference: a copy of its target, merged; the target is unchanged
  deepStrictEqual(root.r, { x: 1, y: 7 });
  deepStrictEqual(root.lib, { x: 1, y: 2 });
  // a scalar or list value still replaces a mapping
  apply(root, ["a=[1]"]);
  deepStrictEqual(root.a, [1]);
});

Deno.test("override values are copies: later changes do not leak into the override", () => {
  const overrides = [parseOverride("a=[1,2]")];
  const root: CfgObject = { a: null };
  applyOverrides(root, new OriginMap(), overrides);
  (root.a as number[]).push(3);
  deepStrictEqual(overrides[0]!.value, [1, 2]);
});

Deno.test("setting a missing key is an error suggesting + or a close key", async () => {
  const root: CfgObject = { trainer: { learning_rate: 1 } };
  const far = await configError(() => apply(root, ["trainer.zzzzzzzz=2"]));
  match(far.message, /no such key/);
  equal(far.details.key, "trainer.zzzzzzzz");
  equal(far.details.hint, "to add a new key, use +trainer.zzzzzzzz=2");
  deepStrictEqual(far.details.origin, CLI("trainer.zzzzzzzz=2"));
  const close = await configError(() => apply(root, ["trainer.lerning_rate=2"]));
  equal(
    close.details.hint,
    "did you mean 'learning_rate'? (or, to add a new key, use +trainer.lerning_rate=2)",
  );
  deepStrictEqual(root, { trainer: { learning_rate: 1 } });
});

Deno.test("setting a key under a missing mapping is an error", async () => {
  const root: CfgObject = { trainer: { lr: 1 } };
  const e = await configError(() => apply(root, ["trainr.lr=2"]));
  match(e.message, /no such key/);
  equal(e.details.key, "trainr.lr");
  equal(e.details.hint, "did you mean 'trainer'? (or, to add a new key, use +trainr.lr=2)");
  deepStrictEqual(root, { trainer: { lr: 1 } });
});

Deno.test({
  name: "the hint for a missing intermediate key names the whole + override",
  // Was a bug: apply_overrides.ts walk() gives the hint "to add a new key, use +"
  // (no key, no value) when a parent of the key is missing, e.g. qqqqq.y=1.

  async fn() {
    const e = await configError(() => apply({}, ["qqqqq.y=1"]));
    equal(e.details.hint, "to add a new key, use +qqqqq.y=1");
  },
});

Deno.test("a key the schema knows can be set even when absent; intermediates are created", () => {
  const seen: KeySegment[][] = [];
  const known: KnownKey = (path) => {
    seen.push([...path]);
    return path[0] === "trainer";
  };
  const root: CfgObject = {};
  const origins = apply(root, ["trainer.opt.lr=0.1"], known);
  deepStrictEqual(root, { trainer: { opt: { lr: 0.1 } } });
  deepStrictEqual(origins.get(["trainer", "opt", "lr"]), CLI("trainer.opt.lr=0.1"));
  ok(seen.some((p) => p.join(".") === "trainer.opt.lr"));
});

Deno.test("an unknown key stays an error when the schema does not know it", async () => {
  const root: CfgObject = {};
  const e = await configError(() => apply(root, ["other.x=1"], (path) => path[0] === "trainer"));
  match(e.message, /no such key/);
  deepStrictEqual(root, {});
});

Deno.test("+key=v on an existing key is an error", async () => {
  const root: CfgObject = { a: { b: 1 } };
  const e = await configError(() => apply(root, ["+a.b=2"]));
  match(e.message, /already has a value/);
  equal(e.details.key, "a.b");
  equal(e.details.found, "1 (number)");
  match(e.details.hint ?? "", /a\.b=2/);
  match(e.details.hint ?? "", /\+\+a\.b=2/);
  deepStrictEqual(root, { a: { b: 1 } });
});

Deno.test("+key=v adds onto null or ???, and a mapping or list merges onto an existing value", () => {
  const root: CfgObject = { n: null, q: "???", m: { a: 1 }, l: [1], s: { e: "${m}" } };
  apply(root, ["+n=3", "+q=4", "+m={b:2}", "+l=[4,5]", "s={e:{c:1}}"]);
  deepStrictEqual(root, {
    n: 3,
    q: 4,
    m: { a: 1, b: 2 },
    l: [4, 5],
    s: { e: { a: 1, b: 2, c: 1 } },
  });
});

Deno.test("+key=v adds a new key, creating intermediate mappings", () => {
  const root: CfgObject = { a: { b: 1 }, n: null };
  const origins = apply(root, ["+x.y.z=1", "+a.c=[1]", "+n.k=v"]);
  deepStrictEqual(root, { a: { b: 1, c: [1] }, x: { y: { z: 1 } }, n: { k: "v" } });
  deepStrictEqual(origins.get(["x", "y", "z"]), CLI("+x.y.z=1"));
});

Deno.test("++key=v sets an existing key or adds a new one", () => {
  const root: CfgObject = { a: { b: 1 } };
  const origins = apply(root, ["++a.b=5", "++p.q=true"]);
  deepStrictEqual(root, { a: { b: 5 }, p: { q: true } });
  deepStrictEqual(origins.get(["a", "b"]), CLI("++a.b=5"));
  deepStrictEqual(origins.get(["p", "q"]), CLI("++p.q=true"));
});

Deno.test("~key deletes a key and its origins", () => {
  const root: CfgObject = { a: { b: 1, c: { d: 2 } }, l: [1, 2, 3] };
  const origins = new OriginMap();
  origins.set(["a", "c", "d"], { source: "f.yaml", line: 3 });
  apply(root, ["~a.c", "~a.b=1", "~l.0", "~l[0]=2"], undefined, origins);
  deepStrictEqual(root, { a: {}, l: [3] });
  equal(origins.get(["a", "c", "d"]), undefined);
});

Deno.test("~key=v with a different value is an error", async () => {
  const root: CfgObject = { a: { b: 1 } };
  const e = await configError(() => apply(root, ["~a.b=2"]));
  match(e.message, /not the one given/);
  equal(e.details.found, "1 (number)");
  equal(e.details.expected, "2 (number)");
  const typed = await configError(() => apply(root, ["~a.b='1'"]));
  match(typed.message, /not the one given/);
  deepStrictEqual(root, { a: { b: 1 } });
});

Deno.test({
  name: "~key={...} compares mappings regardless of key order",
  // Was a bug: apply_overrides.ts compares with JSON.stringify, which is key-order
  // sensitive, so ~a={y:2,x:1} fails on a: {x: 1, y: 2} (Hydra compares with ==).

  fn() {
    const root: CfgObject = { a: { x: 1, y: 2 } };
    apply(root, ["~a={y:2,x:1}"]);
    deepStrictEqual(root, {});
  },
});

Deno.test("~missing is an error", async () => {
  const root: CfgObject = { a: { bee: 1 } };
  const e = await configError(() => apply(root, ["~a.be"]));
  match(e.message, /Could not delete 'a\.be'/);
  equal(e.details.hint, "did you mean 'bee'?");
  const top = await configError(() => apply(root, ["~nothing.here"]));
  match(top.message, /no such key/);
});

Deno.test("list items are set with a.1=5 and a[1]=5", () => {
  const root: CfgObject = { a: [0, 0, 0], m: { l: [{ x: 1, y: 0 }] } };
  const origins = apply(root, ["a.1=5", "a[2]=6", "m.l[0].x=2", "m.l.0.y=3"]);
  deepStrictEqual(root, { a: [0, 5, 6], m: { l: [{ x: 2, y: 3 }] } });
  deepStrictEqual(origins.get(["a", 1]), CLI("a.1=5"));
  deepStrictEqual(origins.get(["a", 2]), CLI("a[2]=6"));
});

Deno.test("an index outside the list is an error", async () => {
  const root: CfgObject = { a: [1, 2] };
  const set = await configError(() => apply(root, ["a.5=1"]));
  match(set.message, /a\.5/);
  equal(set.details.key, "a.5");
  const force = await configError(() => apply(root, ["++a.5=1"]));
  match(force.message, /Index 5 is outside the list at 'a'/);
  equal(force.details.found, "a list of 2");
  const add = await configError(() => apply(root, ["+a[2]=1"]));
  match(add.message, /outside the list/);
  deepStrictEqual(root, { a: [1, 2] });
});

Deno.test("setting a key under a scalar is an error", async () => {
  const root: CfgObject = { a: 3 };
  const e = await configError(() => apply(root, ["a.b=1"]));
  match(e.message, /not a mapping/);
  equal(e.details.found, "3 (number)");
  deepStrictEqual(root, { a: 3 });
});

Deno.test("overriding through a whole-value interpolation materializes a copy", () => {
  const root: CfgObject = {
    lib: { F: { max_steps: 10, name: "frozen", opts: { a: 1 } } },
    custom_envs: { F: "${lib.F}", G: "${custom_envs.F}" },
  };
  const origins = new OriginMap();
  origins.set(["lib", "F", "name"], { source: "lib.yaml", line: 3, column: 11 });
  apply(root, ["custom_envs.F.max_steps=3", "custom_envs.F.opts.a=2"], undefined, origins);
  deepStrictEqual(root.lib, { F: { max_steps: 10, name: "frozen", opts: { a: 1 } } });
  deepStrictEqual((root.custom_envs as CfgObject).F, {
    max_steps: 3,
    name: "frozen",
    opts: { a: 2 },
  });
  deepStrictEqual(origins.get(["custom_envs", "F", "max_steps"]), CLI("custom_envs.F.max_steps=3"));
  deepStrictEqual(origins.get(["custom_envs", "F", "name"]), {
    source: "lib.yaml",
    line: 3,
    column: 11,
  });
  deepStrictEqual(origins.get(["lib", "F", "name"]), { source: "lib.yaml", line: 3, column: 11 });
  // G still points at the (now overridden) custom_envs.F when resolved.
  const out = resolveConfig(root, origins, { env: () => undefined });
  deepStrictEqual((out.custom_envs as CfgObject).G, {
    max_steps: 3,
    name: "frozen",
    opts: { a: 2 },
  });
  equal(((out.lib as CfgObject).F as CfgObject).max_steps, 10);
});

Deno.test("overriding through a chain of interpolations copies the final target", () => {
  const root: CfgObject = {
    lib: { F: { n: 1 } },
    mid: "${lib.F}",
    use: { F: "${mid}" },
  };
  apply(root, ["use.F.n=2"]);
  deepStrictEqual(root.use, { F: { n: 2 } });
  deepStrictEqual(root.lib, { F: { n: 1 } });
  equal(root.mid, "${lib.F}");
});

Deno.test("overrides apply in order", () => {
  const root: CfgObject = { a: 1 };
  apply(root, ["a=2", "~a", "+a=3"]);
  deepStrictEqual(root, { a: 3 });
});
