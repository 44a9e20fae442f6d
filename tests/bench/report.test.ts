/**
 * The benchmark results writer (`bench/_report.ts`): ratio orientation, the
 * JSON file's shape, the table; `bench/main.ts` name dispatch; and a short run
 * of the envs benchmark.
 */
import { deepStrictEqual, equal, match, ok, rejects, throws } from "node:assert/strict";
import { benchRow, formatTable, writeReport } from "../../bench/_report.ts";
import { main } from "../../bench/main.ts";
import { runEnvsBenchmark } from "../../bench/envs.ts";

Deno.test("benchRow orients ratio so that higher is better", () => {
  deepStrictEqual(benchRow("rate", "op/s", 30, "noop", 60), {
    name: "rate",
    unit: "op/s",
    value: 30,
    baseline: "noop",
    baseline_value: 60,
    ratio: 0.5,
  });
  equal(benchRow("time", "ms", 5, "pytorch", 10, { lowerIsBetter: true }).ratio, 2);
  throws(() => benchRow("x", "ms", 0, "b", 1), /value 0 is not a positive finite number/);
  throws(() => benchRow("x", "ms", 1, "b", NaN), /baseline value NaN/);
});

Deno.test("writeReport writes {commit, machine, rows} and formatTable aligns columns", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_bench_" });
  try {
    const rows = [
      benchRow("a", "op/s", 1234.5, "noop", 5000),
      benchRow("bb", "op/s", 0.5, "noop", 2),
    ];
    const { path, report } = await writeReport("unit", rows, { dir, print: false });
    equal(path, `${dir}/unit.json`);
    const written = JSON.parse(await Deno.readTextFile(path));
    deepStrictEqual(written, report);
    deepStrictEqual(Object.keys(written), ["commit", "machine", "rows"]);
    deepStrictEqual(Object.keys(written.machine), ["cpu", "cores", "os", "deno"]);
    equal(written.rows.length, 2);
    ok(typeof written.commit === "string" && written.commit.length > 0);
    const table = formatTable(rows).split("\n");
    equal(table.length, 4);
    match(table[2]!, /^a\s+1,235\s+op\/s\s+noop\s+5,000\s+0\.247$/);
    await rejects(() => writeReport("../x", rows, { dir, print: false }), /not valid/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bench/main.ts rejects an unknown name and lists the benchmarks", async () => {
  const errors: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => errors.push(args.join(" "));
  try {
    equal(await main(["nope"]), 2);
  } finally {
    console.error = original;
  }
  match(errors.join("\n"), /Unknown benchmark 'nope': expected one of envs/);
});

Deno.test("the envs benchmark measures every configuration against the no-op env", async () => {
  const rows = await runEnvsBenchmark(30);
  ok(rows.length >= 5);
  for (const r of rows) {
    equal(r.unit, "steps/s");
    match(r.baseline, /noop_env/);
    ok(r.value > 0 && r.value < r.baseline_value, `${r.name}: ${r.value} vs ${r.baseline_value}`);
    equal(r.ratio, r.value / r.baseline_value);
  }
});
