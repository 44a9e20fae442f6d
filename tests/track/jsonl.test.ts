/** metrics.jsonl: rows as written, nulls for non-finite values, killed runs, resume truncation. */
import { deepStrictEqual, equal, rejects, throws } from "node:assert/strict";
import {
  JsonlMetricsWriter,
  readJsonlMetrics,
  truncateJsonlMetrics,
} from "../../lib/track/jsonl.ts";

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_track_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("jsonl: one line per step, step first, non-finite as null", async () => {
  await withTempDir(async (dir) => {
    const w = await JsonlMetricsWriter.open(`${dir}/out`);
    equal(w.path, `${dir}/out/metrics.jsonl`);
    w.log(1, { "actor/pg_loss": 0.5, step: 99, "critic/kl": NaN, "system/tps": Infinity });
    w.log(2, { "rollout/score/mean": -1e-7 });
    await w.flush();
    await w.close();
    throws(() => w.log(3, {}), /closed/);
    throws(() => w.log(1.5, {}), /integer/);
    equal(
      await Deno.readTextFile(w.path),
      '{"step":1,"actor/pg_loss":0.5,"critic/kl":null,"system/tps":null}\n' +
        '{"step":2,"rollout/score/mean":-1e-7}\n',
    );
    deepStrictEqual(await readJsonlMetrics(w.path), [
      { step: 1, "actor/pg_loss": 0.5, "critic/kl": null, "system/tps": null },
      { step: 2, "rollout/score/mean": -1e-7 },
    ]);
  });
});

Deno.test("jsonl: reopening appends; a cut-off last line is dropped on read and on reopen", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/metrics.jsonl`;
    await Deno.writeTextFile(path, '{"step":1,"x":1}\n{"step":2,"x":2}\n{"step":3,"x');
    deepStrictEqual((await readJsonlMetrics(path)).map((r) => r.step), [1, 2]);
    const w = await JsonlMetricsWriter.open(dir);
    w.log(3, { x: 3 });
    await w.close();
    equal(
      await Deno.readTextFile(path),
      '{"step":1,"x":1}\n{"step":2,"x":2}\n{"step":3,"x":3}\n',
    );
    // A complete last line without its newline is kept and terminated.
    await Deno.writeTextFile(path, '{"step":1}\n{"step":2}');
    const w2 = await JsonlMetricsWriter.open(dir);
    w2.log(3, {});
    await w2.close();
    equal(await Deno.readTextFile(path), '{"step":1}\n{"step":2}\n{"step":3}\n');
  });
});

Deno.test("jsonl: a bad line that is not the cut-off tail is an error naming the line", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/m.jsonl`;
    await Deno.writeTextFile(path, '{"step":1}\n{"step":2,\n{"step":3}\n');
    await rejects(readJsonlMetrics(path), (e: Error) => e.message.startsWith(`${path}:2: bad`));
    await Deno.writeTextFile(path, '{"step":1}\n{"step":"2"}\n');
    await rejects(readJsonlMetrics(path), /:2: bad metrics row \("step" is not an integer/);
    await Deno.writeTextFile(path, "[1]\n");
    await rejects(readJsonlMetrics(path), /not a JSON object/);
    // A terminated last line is complete, so a bad one is corruption, not a killed write.
    await Deno.writeTextFile(path, '{"step":1}\n{"step"\n');
    await rejects(readJsonlMetrics(path), /:2: bad/);
  });
});

Deno.test("jsonl: truncate for resume keeps steps <= N and drops a cut-off tail", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/metrics.jsonl`;
    const w = await JsonlMetricsWriter.open(dir);
    for (let s = 1; s <= 5; s++) w.log(s, { x: s / 10 });
    await w.close();
    await Deno.writeTextFile(path, '{"step":6,"x":0.', { append: true });
    const kept = await truncateJsonlMetrics(path, 3);
    deepStrictEqual(kept.map((r) => r.step), [1, 2, 3]);
    equal(
      await Deno.readTextFile(path),
      '{"step":1,"x":0.1}\n{"step":2,"x":0.2}\n{"step":3,"x":0.3}\n',
    );
    deepStrictEqual(await readJsonlMetrics(path), kept);
    // Nothing to drop: the file is left as it is; a missing file is an empty history.
    const before = (await Deno.stat(path)).mtime;
    deepStrictEqual((await truncateJsonlMetrics(path, 10)).length, 3);
    deepStrictEqual((await Deno.stat(path)).mtime, before);
    deepStrictEqual(await truncateJsonlMetrics(`${dir}/none.jsonl`, 1), []);
    // Resuming at 0 empties it; the writer then starts the new history.
    deepStrictEqual(await truncateJsonlMetrics(path, 0), []);
    equal(await Deno.readTextFile(path), "");
    for await (const e of Deno.readDir(dir)) equal(e.name, "metrics.jsonl"); // no temp file left
  });
});
