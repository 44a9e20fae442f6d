import { deepStrictEqual, equal, match, notStrictEqual, ok } from "node:assert/strict";
import { parseInterpolation } from "../../lib/config/interpolation.ts";
import { OriginMap } from "../../lib/config/origins.ts";
import { pythonNumber, pythonStr } from "../../lib/config/python_format.ts";
import { resolveConfig, type ResolveOptions } from "../../lib/config/resolve.ts";
import type { CfgObject } from "../../lib/config/types.ts";
import { loadYaml } from "../../lib/config/yaml_load.ts";
import { configError } from "../_helpers.ts";

const NO_ENV: ResolveOptions = { env: () => undefined };

/** Resolves a plain object with an empty origin map and no environment. */
function resolve(root: CfgObject, options: ResolveOptions = NO_ENV): CfgObject {
  return resolveConfig(root, new OriginMap(), options);
}

/** Loads YAML text as `x.yaml` and resolves it. */
function resolveYaml(text: string, options: ResolveOptions = NO_ENV) {
  const { value, origins } = loadYaml(text, "x.yaml");
  return { value: resolveConfig(value, origins, options), origins, input: value };
}

function envOf(vars: Record<string, string>): ResolveOptions {
  return { env: (name) => vars[name] };
}

Deno.test("absolute interpolation ${a.b} reads another key", () => {
  const out = resolve({ a: { b: 7, c: "text" }, x: "${a.b}", y: "${a.c}" });
  equal(out.x, 7);
  equal(out.y, "text");
});

Deno.test("relative interpolations: ${.x} is a sibling, ${..x} is the parent's sibling", () => {
  const out = resolve({
    x: "root",
    a: { x: 1, y: "${.x}", b: { x: 2, y: "${..x}", z: "${.x}", w: "${...x}" } },
  });
  const a = out.a as CfgObject;
  const b = a.b as CfgObject;
  equal(a.y, 1);
  equal(b.y, 1);
  equal(b.z, 2);
  equal(b.w, "root");
});

Deno.test("relative interpolation inside a list refers to sibling items", () => {
  const out = resolve({ l: [5, "${.0}"] });
  deepStrictEqual(out.l, [5, 5]);
});

Deno.test("relative interpolation above the root is an error", async () => {
  const e = await configError(() => resolve({ a: "${..x}", x: 1 }));
  match(e.message, /above the root/);
  equal(e.details.key, "a");
});

Deno.test("list indexing: ${a[0]} and ${a.0}", () => {
  const out = resolve({ a: [10, 20, { k: "v" }], x: "${a[1]}", y: "${a.0}", z: "${a[2].k}" });
  equal(out.x, 20);
  equal(out.y, 10);
  equal(out.z, "v");
});

Deno.test("${oc.env:VAR,default}: set, unset with default, default null", () => {
  const out = resolve(
    {
      set: "${oc.env:MY_VAR,fallback}",
      plain: "${oc.env:MY_VAR}",
      unset: "${oc.env:NOPE,fallback}",
      num: "${oc.env:NOPE,5}",
      small: "${oc.env:NOPE,1e-5}",
      flag: "${oc.env:NOPE,true}",
      none: "${oc.env:NOPE,null}",
      legacy: "${env:MY_VAR}",
      text: "dir=${oc.env:MY_VAR}/x",
    },
    envOf({ MY_VAR: "value" }),
  );
  equal(out.set, "value");
  equal(out.plain, "value");
  equal(out.unset, "fallback");
  equal(out.num, "5"); // OmegaConf's oc.env returns str(default), in Python's spelling
  equal(out.small, "1e-05");
  equal(out.flag, "True");
  equal(out.none, null);
  equal(out.legacy, "value");
  equal(out.text, "dir=value/x");
});

Deno.test("${oc.env:VAR} unset without a default is an error naming the key", async () => {
  const { value, origins } = loadYaml("db:\n  password: ${oc.env:DB_PASSWORD}\n", "x.yaml");
  const e = await configError(() => resolveConfig(value, origins, NO_ENV));
  match(e.message, /DB_PASSWORD/);
  match(e.message, /not set/);
  equal(e.details.key, "db.password");
  equal(e.details.origin?.source, "x.yaml");
  equal(e.details.origin?.line, 2);
});

Deno.test("oc.env uses Deno.env when no env option is given", () => {
  Deno.env.set("AGENTRL_TEST_INTERP_VAR", "from-deno");
  try {
    const out = resolveConfig({ v: "${oc.env:AGENTRL_TEST_INTERP_VAR}" }, new OriginMap());
    equal(out.v, "from-deno");
  } finally {
    Deno.env.delete("AGENTRL_TEST_INTERP_VAR");
  }
});

Deno.test("whole-value interpolation keeps the target's type", () => {
  const out = resolve({
    n: 3,
    f: 0.5,
    t: true,
    z: null,
    m: { k: 1, inner: { q: [1, 2] } },
    l: [1, "two", { three: 3 }],
    xn: "${n}",
    xf: "${f}",
    xt: "${t}",
    xz: "${z}",
    xm: "${m}",
    xl: "${l}",
    spaced: "${ n }",
  });
  equal(out.xn, 3);
  equal(out.xf, 0.5);
  equal(out.xt, true);
  equal(out.xz, null);
  deepStrictEqual(out.xm, { k: 1, inner: { q: [1, 2] } });
  deepStrictEqual(out.xl, [1, "two", { three: 3 }]);
  equal(out.spaced, 3);
});

Deno.test("a copied mapping or list is independent of the original", () => {
  const out = resolve({ m: { k: 1, inner: { q: [1, 2] } }, l: [1, [2]], xm: "${m}", xl: "${l}" });
  notStrictEqual(out.xm, out.m);
  notStrictEqual(out.xl, out.l);
  const xm = out.xm as CfgObject;
  xm.k = 99;
  ((xm.inner as CfgObject).q as number[]).push(3);
  ((out.xl as unknown[])[1] as number[]).push(9);
  deepStrictEqual(out.m, { k: 1, inner: { q: [1, 2] } });
  deepStrictEqual(out.l, [1, [2]]);
});

Deno.test("a copied mapping takes the origins of its target", () => {
  const { origins } = resolveYaml("lib:\n  item:\n    n: 1\nx: ${lib.item}\n");
  deepStrictEqual(origins.get(["x", "n"]), { source: "x.yaml", line: 3, column: 8 });
});

Deno.test("resolving does not modify its input", () => {
  const input: CfgObject = { a: 1, b: "${a}", m: { k: "${a}" } };
  const out = resolve(input);
  deepStrictEqual(out, { a: 1, b: 1, m: { k: 1 } });
  deepStrictEqual(input, { a: 1, b: "${a}", m: { k: "${a}" } });
});

Deno.test("embedded interpolation formats values as Python's str()", () => {
  const out = resolve({
    t: true,
    f: false,
    z: null,
    tiny: 1e-5,
    tenth: 0.1,
    big: 1e20,
    i: 42,
    s: "str",
    a: "x${t}",
    b: "x${f}",
    c: "x${z}",
    d: "lr=${tiny}",
    e: "p=${tenth}",
    g: "${big}!",
    h: "${i}-${s}-${i}",
  });
  equal(out.a, "xTrue");
  equal(out.b, "xFalse");
  equal(out.c, "xNone");
  equal(out.d, "lr=1e-05");
  equal(out.e, "p=0.1");
  equal(out.g, "1e+20!");
  equal(out.h, "42-str-42");
});

Deno.test("\\${a} escapes give the literal text ${a}", () => {
  const out = resolve({ a: 1, v: "\\${a}", w: "cost: \\${a} vs ${a}" });
  equal(out.v, "${a}");
  equal(out.w, "cost: ${a} vs 1");
  const fromYaml = resolveYaml("a: 1\nv: \\${a}\n").value;
  equal(fromYaml.v, "${a}");
});

Deno.test("an escaped literal is not interpolated again when referenced", () => {
  const out = resolve({ a: 1, v: "\\${a}", w: "${v}" });
  equal(out.w, "${a}");
});

Deno.test("??? left unset is an error with the key and its file position", async () => {
  const { value, origins } = loadYaml("model:\n  path: ???\n", "x.yaml");
  const e = await configError(() => resolveConfig(value, origins, NO_ENV));
  match(e.message, /Missing mandatory value/);
  equal(e.details.key, "model.path");
  deepStrictEqual(e.details.origin, { source: "x.yaml", line: 2, column: 9 });
});

Deno.test("an interpolation of a ??? value is an error too", async () => {
  const e = await configError(() => resolve({ a: "${b}", b: "???" }));
  match(e.message, /Missing mandatory value/);
  equal(e.details.key, "b");
});

Deno.test("reference cycles are errors that mention the cycle", async () => {
  const two = await configError(() => resolve({ a: "${b}", b: "${a}" }));
  match(two.message, /cycle/);
  match(two.message, /a -> b -> a/);
  const three = await configError(() => resolve({ a: "${c}", b: "${a}", c: "${b}" }));
  match(three.message, /cycle/);
  const self = await configError(() => resolve({ a: { b: "${a}" } }));
  match(self.message, /cycle/);
  const embedded = await configError(() => resolve({ a: "x${b}", b: "y${a}" }));
  match(embedded.message, /cycle/);
});

Deno.test("a reference to a missing key is an error with a did-you-mean hint", async () => {
  const { value, origins } = loadYaml(
    "lib:\n  item: 1\nuse: ${lib.itme}\n",
    "x.yaml",
  );
  const e = await configError(() => resolveConfig(value, origins, NO_ENV));
  match(e.message, /lib\.itme/);
  match(e.message, /does not exist/);
  equal(e.details.key, "use");
  equal(e.details.hint, "did you mean 'item'?");
  equal(e.details.origin?.line, 3);
  const far = await configError(() => resolve({ a: "${completely_different}", b: 1 }));
  equal(far.details.hint, undefined);
});

Deno.test("interpolation through an interpolated node", () => {
  const out = resolve({
    lib: { item: { field: { q: 1 }, n: 2 } },
    x: "${lib.item}",
    y: "${x.field}",
    z: "${x.field.q}",
    w: "n=${x.n}",
  });
  deepStrictEqual(out.x, { field: { q: 1 }, n: 2 });
  deepStrictEqual(out.y, { q: 1 });
  equal(out.z, 1);
  equal(out.w, "n=2");
});

Deno.test("a missing key under an interpolated node is an error", async () => {
  const e = await configError(() =>
    resolve({ lib: { item: { n: 1 } }, x: "${lib.item}", y: "${x.nope}" })
  );
  match(e.message, /x\.nope/);
  equal(e.details.key, "y");
});

Deno.test("a key made by interpolations: ${a.${b}}, ${${k}}, ${arr[${i}]}, relative inside", () => {
  const out = resolve({
    a: "x",
    k: "a",
    whole: "${${k}}",
    d: { p: { z: 5 }, q: 2 },
    w: "q",
    v: "${d.${w}}",
    text: "v=${ d.${w} }",
    deep: "${d.${k2}.z}",
    k2: "p",
    arr: [10, 20],
    i: 1,
    item: "${arr[${i}]}",
    s: { w: "q", rel: "${d.${.w}}" },
  });
  equal(out.whole, "x");
  equal(out.v, 2);
  equal(out.text, "v=2");
  equal(out.deep, 5);
  equal(out.item, 20);
  equal(out.s && (out.s as CfgObject).rel, 2);
  deepStrictEqual(parseInterpolation("${a.${b}}"), [{
    kind: "dynamic",
    source: "${a.${b}}",
    key: [{ kind: "text", text: "a." }, { kind: "node", source: "${b}", up: 0, segments: ["b"] }],
  }]);
});

Deno.test("a made key that is not a key, or names nothing, is an error at the value", async () => {
  const bad = await configError(() => resolve({ w: "bad key", d: {}, e: "${d.${w}}" }));
  equal(bad.message, "Interpolation ${d.${w}} makes the key 'd.bad key'");
  equal(bad.details.key, "e");
  const missing = await configError(() => resolve({ w: "nope", d: { nop: 1 }, e: "${d.${w}}" }));
  equal(missing.message, "Interpolation ${d.${w}} refers to 'd.nope', which does not exist");
  equal(missing.details.hint, "did you mean 'nop'?");
});

Deno.test("nested interpolation inside resolver arguments", () => {
  const out = resolve({
    a: { b: 5, s: "dflt" },
    x: "${oc.env:NOPE,${a.s}}",
    y: "${oc.env:NOPE,${a.b}}",
    z: "${oc.env:NOPE,pre-${a.b}}",
  });
  equal(out.x, "dflt");
  equal(out.y, "5");
  equal(out.z, "pre-5");
  const set = resolve({ a: { b: 5 }, x: "${oc.env:V,${a.b}}" }, envOf({ V: "env" }));
  equal(set.x, "env");
});

Deno.test("${oc.select:key,default}", () => {
  const out = resolve({
    present: { key: 3 },
    n: null,
    a: "${oc.select:missing.key,fallback}",
    b: "${oc.select:present.key,fallback}",
    c: "${oc.select:missing.key}",
    d: "${oc.select:missing.key,7}",
    e: "${oc.select:n,fallback}",
  });
  equal(out.a, "fallback");
  equal(out.b, 3);
  equal(out.c, null);
  equal(out.d, 7);
  equal(out.e, null); // an existing null is returned, not the default (as in OmegaConf)
});

Deno.test("resolver arguments may be [lists] and {dicts}, commas and all", () => {
  const out = resolve({
    a: "${oc.select:missing,[]}",
    b: "${oc.select:missing,[1, 2, x]}",
    c: "${oc.select:missing,{k: 1, l: [2, 3]}}",
    d: "${oc.select:missing, [ ${n} ] }",
    n: 4,
  });
  deepStrictEqual(out.a, []);
  deepStrictEqual(out.b, [1, 2, "x"]);
  deepStrictEqual(out.c, { k: 1, l: [2, 3] });
  deepStrictEqual(out.d, [4]);
});

Deno.test({
  name: "${oc.select:key,default} gives the default for a ??? value; the ??? itself still errors",
  async fn() {
    // oc.select reads '???' as absent (as OmegaConf does), so a and b resolve; the
    // unset mandatory value m is then reported by itself.
    const e = await configError(() =>
      resolve({ a: "${oc.select:m,dflt}", b: "${oc.select:m}", m: "???" })
    );
    equal(e.details.key, "m");
    const out = resolve({ a: "${oc.select:m,dflt}", b: "${oc.select:nope}", m: 3 });
    deepStrictEqual([out.a, out.b], [3, null]);
  },
});

Deno.test({
  name: "${oc.select:.k} and ${oc.select:..k} are relative to the node, as in OmegaConf",
  // Was a bug: oc.select parses its key with parseKeyPath, which drops one leading dot
  // (`.k` is read as the absolute `k`) and rejects `..k` ("Empty key in path").

  fn() {
    const out = resolve({
      k: 10,
      nested: { k: 20, a: "${oc.select:.k,zzz}", b: "${oc.select:..k,zzz}" },
    });
    equal((out.nested as CfgObject).a, 20);
    equal((out.nested as CfgObject).b, 10);
  },
});

Deno.test({
  name: "${oc.select:...} of a mapping gives an independent copy",
  // Was a bug: oc.select returns the memoized resolved mapping itself, so the result
  // aliases the original: out.x === out.lib, and changing one changes the other.

  fn() {
    const out = resolve({ lib: { v: 1 }, x: "${oc.select:lib}" });
    deepStrictEqual(out.x, { v: 1 });
    notStrictEqual(out.x, out.lib);
  },
});

Deno.test("${oc.dict.keys:k}, ${oc.dict.values:k} and ${oc.create:...}, as in OmegaConf", async () => {
  const out = resolve({
    d: { a: 1, b: { c: 2 } },
    keys: "${oc.dict.keys:d}",
    values: "${oc.dict.values:d}",
    s: { e: { x: 1 }, rel: "${oc.dict.keys:.e}" },
    made: "${oc.create:{a: 1, b: [1, 2]}}",
  });
  deepStrictEqual(out.keys, ["a", "b"]);
  deepStrictEqual(out.values, [1, { c: 2 }]);
  deepStrictEqual((out.s as CfgObject).rel, ["x"]);
  deepStrictEqual(out.made, { a: 1, b: [1, 2] });
  const missing = await configError(() => resolve({ k: "${oc.dict.keys:nope}" }));
  match(missing.message, /^oc\.dict\.keys takes the key of a mapping/);
  equal(missing.details.found, "'nope', which does not exist");
  equal(missing.details.key, "k");
  const scalar = await configError(() => resolve({ n: 5, k: "${oc.dict.values:n}" }));
  equal(scalar.details.found, "'n', not a mapping");
  match((await configError(() => resolve({ c: "${oc.create:5}" }))).message, /oc\.create takes/);
});

Deno.test("${oc.decode:'...'} parses a value", () => {
  const out = resolve({
    s: "{a: 1}",
    l: "${oc.decode:'[1,2]'}",
    n: "${oc.decode:'3'}",
    d: "${oc.decode:${s}}",
    z: "${oc.decode:null}",
  });
  deepStrictEqual(out.l, [1, 2]);
  equal(out.n, 3);
  deepStrictEqual(out.d, { a: 1 });
  equal(out.z, null);
});

Deno.test("${now:...} formats the fixed time", () => {
  const now = new Date(2031, 6, 4, 9, 5, 3, 250);
  const out = resolve(
    { y: "${now:%Y}", full: "${now:%Y-%m-%d_%H-%M-%S}", f: "${now:%f}", pct: "run_${now:%%Y}" },
    { env: () => undefined, now },
  );
  equal(out.y, "2031");
  equal(out.full, "2031-07-04_09-05-03");
  equal(out.f, "250000");
  equal(out.pct, "run_%Y");
});

Deno.test("an unknown resolver is an error listing the resolvers", async () => {
  const e = await configError(() => resolve({ a: "${oc.nv:HOME}" }));
  match(e.message, /Unknown resolver 'oc\.nv'/);
  equal(e.details.key, "a");
  for (const name of ["oc.env", "oc.select", "oc.decode", "now"]) {
    ok(e.details.expected?.includes(name), `expected lists ${name}: ${e.details.expected}`);
  }
  equal(e.details.hint, "did you mean 'oc.env'?");
});

Deno.test("embedding a mapping or a list inside text is an error", async () => {
  const m = await configError(() => resolve({ m: { k: 1 }, a: "pre ${m} post" }));
  match(m.message, /Cannot embed a mapping/);
  equal(m.details.key, "a");
  equal(m.details.found, "${m}");
  const l = await configError(() => resolve({ l: [1], a: "x${l}" }));
  match(l.message, /Cannot embed a list/);
});

Deno.test("braces without $ are left untouched", () => {
  const out = resolve({
    a: 1,
    prompt: "Turn {turn_idx}: {obs}",
    mixed: "{turn_idx} of ${a} {max}",
    dollar: "costs $5 {x}",
  });
  equal(out.prompt, "Turn {turn_idx}: {obs}");
  equal(out.mixed, "{turn_idx} of 1 {max}");
  equal(out.dollar, "costs $5 {x}");
});

Deno.test("malformed interpolations are errors naming the key", async () => {
  const e = await configError(() => resolve({ a: { b: "${x" } }));
  match(e.message, /Invalid interpolation/);
  equal(e.details.key, "a.b");
  const empty = await configError(() => resolve({ a: "${}" }));
  match(empty.message, /empty/);
});

Deno.test({
  name: "a key containing a dot does not collide with a nested key of the same spelling",
  // Was a bug: resolve.ts memoizes by formatKeyPath, which writes ["a","x.y"] and
  // ["a","x","y"] both as "a.x.y", so a.x.y resolves to the value of a["x.y"].

  fn() {
    const out = resolve({ a: { "x.y": 1, x: { y: 2 } } });
    deepStrictEqual(out, { a: { "x.y": 1, x: { y: 2 } } });
  },
});

Deno.test("parseInterpolation splits text, node references and resolver calls", () => {
  deepStrictEqual(parseInterpolation("a${b.c}d"), [
    { kind: "text", text: "a" },
    { kind: "node", source: "${b.c}", up: 0, segments: ["b", "c"] },
    { kind: "text", text: "d" },
  ]);
  deepStrictEqual(parseInterpolation("${..x[1]}"), [
    { kind: "node", source: "${..x[1]}", up: 2, segments: ["x", 1] },
  ]);
  deepStrictEqual(parseInterpolation("${oc.env:HOME, 'a,b' ,${c}}"), [
    {
      kind: "call",
      source: "${oc.env:HOME, 'a,b' ,${c}}",
      name: "oc.env",
      args: [
        { pieces: [{ kind: "text", text: "HOME" }], quoted: false },
        { pieces: [{ kind: "text", text: "a,b" }], quoted: true },
        { pieces: [{ kind: "node", source: "${c}", up: 0, segments: ["c"] }], quoted: false },
      ],
    },
  ]);
  deepStrictEqual(parseInterpolation("\\${a} {b}"), [{ kind: "text", text: "${a} {b}" }]);
  deepStrictEqual(parseInterpolation("plain"), [{ kind: "text", text: "plain" }]);
});

Deno.test("parseInterpolation rejects malformed text", async () => {
  match((await configError(() => parseInterpolation("${a"))).message, /missing '}'/);
  match((await configError(() => parseInterpolation("${}"))).message, /empty/);
  match((await configError(() => parseInterpolation("${a b}"))).message, /invalid key/);
  match((await configError(() => parseInterpolation("${oc.env:'x}"))).message, /unterminated/);
});

Deno.test("pythonNumber and pythonStr match Python's str()", () => {
  const cases: [number, string][] = [
    [1e-5, "1e-05"],
    [0.1, "0.1"],
    [42, "42"],
    [-7, "-7"],
    [0.0001, "0.0001"],
    [0.00012, "0.00012"],
    [1.5e-7, "1.5e-07"],
    [-2.5e-10, "-2.5e-10"],
    [1e16, "1e+16"],
    [1e22, "1e+22"],
    [123.456, "123.456"],
    [Infinity, "inf"],
    [-Infinity, "-inf"],
    [NaN, "nan"],
  ];
  for (const [n, text] of cases) equal(pythonNumber(n), text, String(n));
  equal(pythonStr(true), "True");
  equal(pythonStr(false), "False");
  equal(pythonStr(null), "None");
  equal(pythonStr("s"), "s");
});
