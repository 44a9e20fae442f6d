/** Trackers: metrics.jsonl always, plus stdout lines, TensorBoard files, the wandb fallback. */
import { deepStrictEqual, equal, match, ok, rejects } from "node:assert/strict";
import { readJsonlMetrics } from "../../lib/track/jsonl.ts";
import { readTfEvents } from "../../lib/track/tfevents.ts";
import { formatNumber } from "../../lib/track/format_number.ts";
import {
  createTracker,
  MultiTracker,
  StdoutTracker,
  type Tracker,
} from "../../lib/track/tracker.ts";

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_track_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function eventFiles(dir: string): Promise<string[]> {
  const names = [];
  for await (const e of Deno.readDir(dir)) if (e.name.includes("tfevents")) names.push(e.name);
  return names.sort().map((n) => `${dir}/${n}`);
}

const metrics = {
  "actor/pg_loss": -0.012345678,
  "critic/kl": 0.002,
  "val/env/FrozenLake/success": 0.25,
  "env/FrozenLake/success": 0.5,
  "env/FrozenLake/action_is_valid": 1,
  "system/tps": 1234567.8,
};

Deno.test("formatNumber: compact and readable", () => {
  deepStrictEqual(
    [0, 12, -3, 0.5, 0.123456, -0.012345678, 1e-5, 1234567.8, 2e6, 123.456, NaN, -Infinity, null]
      .map(formatNumber),
    [
      "0",
      "12",
      "-3",
      "0.5",
      "0.1235",
      "-0.01235",
      "1e-5",
      "1.235e+6",
      "2e+6",
      "123.5",
      "nan",
      "-inf",
      "nan",
    ],
  );
});

Deno.test("stdout: chosen keys in pattern order, default keys, fallback to all", async () => {
  const lines: string[] = [];
  const t = new StdoutTracker(["env/*/success", "actor/*", "missing"], (l) => lines.push(l));
  t.log(7, metrics);
  new StdoutTracker(undefined, (l) => lines.push(l)).log(8, metrics);
  new StdoutTracker(undefined, (l) => lines.push(l)).log(9, { b: 2, a: 1 });
  await t.close();
  deepStrictEqual(lines, [
    "step 7  env/FrozenLake/success=0.5  actor/pg_loss=-0.01235",
    "step 8  val/env/FrozenLake/success=0.25  env/FrozenLake/success=0.5  " +
    "actor/pg_loss=-0.01235  critic/kl=0.002  system/tps=1.235e+6",
    "step 9  a=1  b=2",
  ]);
});

Deno.test("createTracker: tensorboard writes events and metrics.jsonl", async () => {
  await withTempDir(async (dir) => {
    const t = await createTracker("tensorboard", {}, `${dir}/out/`);
    t.log(1, metrics);
    t.log(2, { "actor/pg_loss": 0.5 });
    await t.close();
    const [file, ...rest] = await eventFiles(`${dir}/out/tensorboard`);
    equal(rest.length, 0);
    const events = await readTfEvents(file!);
    deepStrictEqual(events.map((e) => e.step), [0, 1, 2]);
    equal(events[1]!.values["val/env/FrozenLake/success"], 0.25);
    equal(events[2]!.values["actor/pg_loss"], 0.5);
    const rows = await readJsonlMetrics(`${dir}/out/metrics.jsonl`);
    deepStrictEqual(rows, [{ step: 1, ...metrics }, { step: 2, "actor/pg_loss": 0.5 }]);
  });
});

Deno.test("createTracker: tracker_kwargs.log_dir, and stdout with keys", async () => {
  await withTempDir(async (dir) => {
    const t = await createTracker("tensorboard", { log_dir: `${dir}/tb` }, `${dir}/out`);
    t.log(1, { x: 1 });
    await t.close();
    equal((await eventFiles(`${dir}/tb`)).length, 1);

    const lines: string[] = [];
    const s = await createTracker("stdout", { keys: ["critic/kl"] }, `${dir}/out2`, {
      print: (l) => lines.push(l),
    });
    s.log(4, metrics);
    await s.close();
    deepStrictEqual(lines, ["step 4  critic/kl=0.002"]);
    deepStrictEqual((await readJsonlMetrics(`${dir}/out2/metrics.jsonl`)).map((r) => r.step), [4]);
    await rejects(createTracker("stdout", { keys: "critic/kl" }, dir), /tracker_kwargs.keys must/);
    await rejects(createTracker("tensorboard", { log_dir: 3 }, dir), /tracker_kwargs.log_dir/);
  });
});

Deno.test("createTracker: wandb falls back to tensorboard with a wandb sync notice", async () => {
  await withTempDir(async (dir) => {
    const notes: string[] = [];
    const t = await createTracker("wandb", { project: "agentrl", api_key: "secret" }, dir, {
      warn: (l) => notes.push(l),
    });
    t.log(1, { x: 1 });
    await t.close();
    equal(notes.length, 1);
    match(notes[0]!, /needs network access/);
    ok(notes[0]!.includes(`\`wandb sync --project agentrl ${dir}/tensorboard\``));
    ok(!notes[0]!.includes("secret"));
    equal((await eventFiles(`${dir}/tensorboard`)).length, 1);
  });
});

Deno.test("createTracker: unknown names list the valid ones", async () => {
  await rejects(
    createTracker("tensorbord", {}, "/nonexistent"),
    (e: Error) =>
      e.message ===
        "Unknown track_with 'tensorbord': expected one of stdout, tensorboard, wandb " +
          "(did you mean 'tensorboard'?)",
  );
  await rejects(createTracker("mlflow", {}, "/nonexistent"), /expected one of stdout/);
});

Deno.test("createTracker: resume drops later jsonl rows and marks the restart for TensorBoard", async () => {
  await withTempDir(async (dir) => {
    const t1 = await createTracker("tensorboard", {}, dir);
    for (let s = 1; s <= 5; s++) t1.log(s, s === 5 ? { x: s, "val/score": 1 } : { x: s });
    await t1.close();
    const warned: string[] = [];
    const t2 = await createTracker("tensorboard", {}, dir, {
      resumeStep: 3,
      warn: (l) => void warned.push(l),
    });
    // the drop is said, and a validation among the dropped rows is named
    deepStrictEqual(warned, [
      "metrics.jsonl: 2 row(s) after step 3 dropped (steps 4, 5), which the resumed run writes " +
      "again; the validation at step 5 goes with them (this run validates every eval_steps and " +
      "at its last step)",
    ]);
    t2.log(4, { x: 40 });
    await t2.close();
    const rows = await readJsonlMetrics(`${dir}/metrics.jsonl`);
    deepStrictEqual(rows.map((r) => [r.step, r.x]), [[1, 1], [2, 2], [3, 3], [4, 40]]);
    const files = await eventFiles(`${dir}/tensorboard`);
    equal(files.length, 2);
    const restart = (await Promise.all(files.map((f) => readTfEvents(f)))).flat()
      .find((e) => e.sessionStart);
    equal(restart?.step, 4);
  });
});

Deno.test("MultiTracker: every tracker closes even when one fails", async () => {
  const seen: string[] = [];
  const make = (name: string, fail: boolean): Tracker => ({
    log: (step) => void seen.push(`${name}${step}`),
    close: () => {
      seen.push(`close ${name}`);
      return fail ? Promise.reject(new Error(`${name} failed`)) : Promise.resolve();
    },
  });
  const m = new MultiTracker([make("a", true), make("b", false)]);
  m.log(1, {});
  await rejects(m.close(), /a failed/);
  deepStrictEqual(seen, ["a1", "b1", "close a", "close b"]);
});
