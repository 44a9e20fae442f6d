import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { loadYaml, readPackageHeader } from "../../lib/config/yaml_load.ts";
import { resolvePlainScalar } from "../../lib/config/yaml_scalar.ts";
import { configError } from "../_helpers.ts";

Deno.test("plain scalars follow YAML 1.1 as OmegaConf reads them", () => {
  const cases: [string, unknown][] = [
    ["yes", true],
    ["On", true],
    ["TRUE", true],
    ["no", false],
    ["off", false],
    ["False", false],
    ["~", null],
    ["null", null],
    ["", null],
    ["42", 42],
    ["-7", -7],
    ["1_000", 1000],
    ["012", 10],
    ["0x1F", 31],
    ["0b101", 5],
    ["190:20:30", 685230],
    ["1e-5", 1e-5],
    ["1.0e-6", 1e-6],
    ["3.", 3],
    [".5", 0.5],
    ["-1.5E+3", -1500],
    [".inf", Infinity],
    ["-.Inf", -Infinity],
    ["2020-01-01", "2020-01-01"],
    ["2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"],
    ["y", "y"],
    ["n", "n"],
    ["1e5x", "1e5x"],
    ["0.5.1", "0.5.1"],
    ["list(range(0,8))", "list(range(0,8))"],
  ];
  for (const [text, expected] of cases) deepStrictEqual(resolvePlainScalar(text), expected, text);
  ok(Number.isNaN(resolvePlainScalar(".nan")));
});

Deno.test("quoted and block scalars stay strings; explicit tags are honoured", () => {
  const { value } = loadYaml(
    "a: 'yes'\nb: \"1e-5\"\nc: |\n  7\nd: !!str 12\ne: !!float 3\nf: !!int '0x10'\ng:\n",
    "t.yaml",
  );
  deepStrictEqual(value, { a: "yes", b: "1e-5", c: "7\n", d: "12", e: 3, f: 16, g: null });
});

Deno.test("positions: every value knows its file, line and column", () => {
  const { origins } = loadYaml("a:\n  b: 1\n  c:\n    - x\n    - y\n", "cfg.yaml");
  deepStrictEqual(origins.get(["a", "b"]), { source: "cfg.yaml", line: 2, column: 6 });
  deepStrictEqual(origins.get(["a", "c", 1]), { source: "cfg.yaml", line: 5, column: 7 });
  deepStrictEqual(origins.find(["a", "c", 1, "deeper"]), {
    source: "cfg.yaml",
    line: 5,
    column: 7,
  });
});

Deno.test("duplicate keys are an error that names the line", async () => {
  const e = await configError(() => loadYaml("seed: 1\nmax_steps: 2\nseed: 3\n", "dup.yaml"));
  match(e.message, /unique/i);
  equal(e.details.origin?.source, "dup.yaml");
  equal(e.details.origin?.line, 3);
});

Deno.test("invalid YAML and a non-mapping top level are errors with a location", async () => {
  const bad = await configError(() => loadYaml("a: [1, 2\nb: 3\n", "bad.yaml"));
  match(bad.message, /Invalid YAML/);
  equal(bad.details.origin?.source, "bad.yaml");
  // an unclosed bracket at the end is reported at the last line, not the one past the file
  const open = await configError(() => loadYaml("a: 1\nb: [1\n\n", "open.yaml"));
  match(open.message, /Invalid YAML: .*\(at the end of the file\)$/);
  equal(open.details.origin?.line, 2);
  equal(open.details.origin?.column, 6); // just past "b: [1"
  const list = await configError(() => loadYaml("- 1\n- 2\n", "list.yaml"));
  match(list.message, /mapping at its top level/);
});

Deno.test("anchors, aliases and merge keys work; own keys win over merged ones", () => {
  const { value } = loadYaml(
    "base: &b\n  lr: 1\n  wd: 0\nx:\n  <<: *b\n  lr: 2\ny: *b\n",
    "m.yaml",
  );
  deepStrictEqual(value.x, { lr: 2, wd: 0 });
  deepStrictEqual(value.y, { lr: 1, wd: 0 });
});

Deno.test("unsupported tags are errors", async () => {
  const e = await configError(() => loadYaml("a: !!python/object x\n", "tag.yaml"));
  match(e.message, /Unsupported YAML tag/);
});

Deno.test("the # @package header is read from the leading comments only", () => {
  equal(readPackageHeader("# a comment\n# @package _global_\nx: 1\n"), "_global_");
  equal(readPackageHeader("#@package: foo.bar\n"), "foo.bar");
  equal(readPackageHeader("x: 1\n# @package late\n"), undefined);
});
