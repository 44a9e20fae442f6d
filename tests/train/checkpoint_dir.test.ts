// Checkpoint folders: atomic saves (a writer that throws, or a crash that
// leaves a temporary or manifest-less folder, never yields a checkpoint),
// the latest by step number, replacement, pruning, and resume resolution.
import assert from "node:assert/strict";
import { join } from "node:path";
import { CheckpointError } from "../../lib/model/safetensors.ts";
import {
  checkpointsDir,
  damagedCheckpoints,
  latestCheckpoint,
  listCheckpoints,
  loadCheckpointManifest,
  MANIFEST_FILE,
  pruneCheckpoints,
  readCheckpointJson,
  removeIncompleteCheckpoints,
  resolveResume,
  saveCheckpoint,
  setAsideCheckpointsAfter,
} from "../../lib/train/checkpoint_dir.ts";

/** Runs `fn` with a fresh output folder, removed afterwards. */
async function withOutputDir(fn: (out: string) => Promise<void>): Promise<void> {
  const out = await Deno.makeTempDir({ prefix: "agentrl_ckpt_" });
  try {
    await fn(out);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
}

/** A writer putting a model-like and an optimizer-like file into the checkpoint. */
function writeState(step: number) {
  return async (dir: string) => {
    await Deno.mkdir(join(dir, "model"));
    await Deno.writeFile(join(dir, "model", "weights.bin"), new Uint8Array(100 + step));
    await Deno.writeTextFile(join(dir, "trainer_state.json"), JSON.stringify({ step }));
  };
}

const names = (out: string) => [...Deno.readDirSync(checkpointsDir(out))].map((e) => e.name).sort();

Deno.test("saves land in checkpoint-<step> with a manifest; latest is the highest step", async () => {
  await withOutputDir(async (out) => {
    assert.equal(latestCheckpoint(out), null);
    for (const step of [2, 10, 9]) {
      const info = await saveCheckpoint(out, step, writeState(step), { meta: { step2: step * 2 } });
      assert.equal(info.dir, join(out, "checkpoints", `checkpoint-${step}`));
    }
    assert.deepEqual(names(out), ["checkpoint-10", "checkpoint-2", "checkpoint-9"]);
    assert.equal(latestCheckpoint(out)?.step, 10, "10 > 9 numerically, not by name");
    assert.deepEqual(listCheckpoints(out).map((c) => c.step), [2, 9, 10]);
    const m = loadCheckpointManifest(join(checkpointsDir(out), "checkpoint-9"));
    assert.equal(m.step, 9);
    assert.deepEqual(m.files, { "model/weights.bin": 109, "trainer_state.json": 10 });
    assert.deepEqual(m.meta, { step2: 18 });
  });
});

Deno.test("a writer that throws leaves no checkpoint and no temporary folder", async () => {
  await withOutputDir(async (out) => {
    await saveCheckpoint(out, 5, writeState(5));
    await assert.rejects(
      saveCheckpoint(out, 6, async (dir) => {
        await Deno.writeTextFile(join(dir, "half.bin"), "partial");
        throw new Error("disk full (simulated)");
      }),
      /disk full \(simulated\)/,
    );
    assert.deepEqual(names(out), ["checkpoint-5"]);
    assert.equal(latestCheckpoint(out)?.step, 5);
    await assert.rejects(
      saveCheckpoint(out, 7, (dir) => Deno.writeTextFile(join(dir, MANIFEST_FILE), "{}")),
      /must not write manifest.json/,
    );
    assert.deepEqual(names(out), ["checkpoint-5"]);
  });
});

Deno.test("what a crash leaves behind is never a checkpoint, and can be removed", async () => {
  await withOutputDir(async (out) => {
    await saveCheckpoint(out, 3, writeState(3));
    const root = checkpointsDir(out);
    // killed while writing: a temporary folder (even with a manifest in it)
    await Deno.mkdir(join(root, "checkpoint-40.tmp-1a2b3c4d"));
    await Deno.copyFile(
      join(root, "checkpoint-3", MANIFEST_FILE),
      join(root, "checkpoint-40.tmp-1a2b3c4d", MANIFEST_FILE),
    );
    // a final name without the manifest (e.g. copied by hand, or an older writer)
    await Deno.mkdir(join(root, "checkpoint-50"));
    await Deno.writeTextFile(join(root, "checkpoint-50", "trainer_state.json"), "{}");
    // a complete-looking checkpoint whose file was truncated afterwards
    await saveCheckpoint(out, 60, writeState(60));
    await Deno.truncate(join(root, "checkpoint-60", "model", "weights.bin"), 10);
    assert.equal(latestCheckpoint(out)?.step, 3);
    assert.throws(
      () => loadCheckpointManifest(join(root, "checkpoint-50")),
      /checkpoint-50 is not a complete checkpoint: it has no manifest.json/,
    );
    assert.throws(
      () => loadCheckpointManifest(join(root, "checkpoint-60")),
      /weights.bin is 10 bytes; its manifest says 160/,
    );
    // a model folder where a checkpoint belongs: named as such, with what to set instead
    const modelDir = await Deno.makeTempDir();
    await Deno.writeTextFile(join(modelDir, "config.json"), "{}");
    assert.throws(
      () => loadCheckpointManifest(modelDir),
      new RegExp(
        `${modelDir} is a model folder, not a training checkpoint .*set pretrain=${modelDir} ` +
          "and resume_from_checkpoint=false",
      ),
    );
    await Deno.remove(modelDir, { recursive: true });
    const removed = (await removeIncompleteCheckpoints(out)).map((d) => d.slice(root.length + 1));
    assert.deepEqual(removed.sort(), [
      "checkpoint-40.tmp-1a2b3c4d",
      "checkpoint-50",
      "checkpoint-60",
    ]);
    assert.deepEqual(names(out), ["checkpoint-3"]);
  });
});

Deno.test("a complete set-aside copy of a step whose folder is missing or incomplete is put back", async () => {
  await withOutputDir(async (out) => {
    const root = checkpointsDir(out);
    // stopped between the renames of a replacing save: checkpoint-5 missing, its copy aside
    await saveCheckpoint(out, 5, writeState(5));
    await Deno.rename(join(root, "checkpoint-5"), join(root, "checkpoint-5.old-0a1b2c3d"));
    // checkpoint-6 incomplete, with a complete copy aside; checkpoint-7 complete, a stale copy
    await saveCheckpoint(out, 6, writeState(6));
    await Deno.rename(join(root, "checkpoint-6"), join(root, "checkpoint-6.old-1a1b2c3d"));
    await Deno.mkdir(join(root, "checkpoint-6"));
    await saveCheckpoint(out, 7, writeState(7));
    await Deno.mkdir(join(root, "checkpoint-7.old-2a1b2c3d"));
    const removed = (await removeIncompleteCheckpoints(out)).map((d) => d.slice(root.length + 1));
    assert.deepEqual(removed, ["checkpoint-7.old-2a1b2c3d"]);
    assert.deepEqual(names(out), ["checkpoint-5", "checkpoint-6", "checkpoint-7"]);
    assert.deepEqual(listCheckpoints(out).map((c) => c.step), [5, 6, 7]);
  });
});

Deno.test("pruning never removes the checkpoint just saved; a resumed run sets later steps aside; damaged folders can be kept", async () => {
  await withOutputDir(async (out) => {
    const root = checkpointsDir(out);
    for (const step of [10, 15, 20]) await saveCheckpoint(out, step, writeState(step));
    // a save below the newest steps, keeping 2: the one saved stays
    const saved = await saveCheckpoint(out, 12, writeState(12), { keepLastN: 2 });
    assert.deepEqual(listCheckpoints(out).map((c) => c.step), [12, 15, 20]);
    assert.ok(saved.dir.endsWith("checkpoint-12"));
    const moved = (await setAsideCheckpointsAfter(out, 12)).map((d) => d.slice(root.length + 1));
    assert.equal(moved.length, 2);
    assert.ok(
      moved.every((n) => /^checkpoint-(15|20)\.superseded-[0-9a-f]{8}$/.test(n)),
      moved.join(),
    );
    assert.deepEqual(listCheckpoints(out).map((c) => c.step), [12]);
    // a damaged checkpoint folder stays with keepDamaged (set-aside copies stay either way)
    await Deno.mkdir(join(root, "checkpoint-30"));
    assert.deepEqual(await removeIncompleteCheckpoints(out, { keepDamaged: true }), []);
    assert.ok(names(out).includes("checkpoint-30"));
    assert.equal(names(out).length, 4);
    // resumed from an earlier step, the damaged one is set aside too (its step's save would
    // otherwise replace it)
    const aside = (await setAsideCheckpointsAfter(out, 12)).map((d) => d.slice(root.length + 1));
    assert.ok(aside.length === 1 && /^checkpoint-30\.superseded-/.test(aside[0]!), aside.join());
    assert.ok(!names(out).includes("checkpoint-30"));
  });
});

Deno.test("saving a step again replaces it; keepLastN prunes the oldest", async () => {
  await withOutputDir(async (out) => {
    await saveCheckpoint(out, 4, writeState(4));
    await saveCheckpoint(out, 4, async (dir) => {
      await Deno.writeTextFile(join(dir, "trainer_state.json"), "again");
    });
    const m = loadCheckpointManifest(join(checkpointsDir(out), "checkpoint-4"));
    assert.deepEqual(m.files, { "trainer_state.json": 5 });
    assert.deepEqual(names(out), ["checkpoint-4"]);
    for (const step of [8, 12, 16]) {
      await saveCheckpoint(out, step, writeState(step), { keepLastN: 2 });
    }
    assert.deepEqual(listCheckpoints(out).map((c) => c.step), [12, 16]);
    assert.deepEqual(await pruneCheckpoints(out, 1), [join(checkpointsDir(out), "checkpoint-12")]);
    assert.deepEqual(names(out), ["checkpoint-16"]);
    await assert.rejects(pruneCheckpoints(out, 0), /keepLastN must be a positive integer/);
  });
});

Deno.test("resume_from_checkpoint: false, true (latest or a notice), a path (validated)", async () => {
  await withOutputDir(async (out) => {
    assert.deepEqual(resolveResume(false, out), { checkpoint: null });
    const none = resolveResume(true, out);
    assert.equal(none.checkpoint, null);
    assert.match(none.notice!, /holds no complete checkpoint; starting from scratch/);

    await saveCheckpoint(out, 1, writeState(1));
    await saveCheckpoint(out, 2, writeState(2));
    assert.equal(resolveResume(true, out).checkpoint?.step, 2);
    const given = join(checkpointsDir(out), "checkpoint-1");
    assert.equal(resolveResume(given, out).checkpoint?.step, 1);

    assert.throws(() => resolveResume(join(out, "nope"), out), /nope does not exist/);
    assert.throws(
      () => resolveResume(out, out),
      (e: unknown) =>
        e instanceof CheckpointError &&
        /is not a checkpoint folder; its latest checkpoint is .*checkpoint-2/.test(e.message),
    );
    assert.throws(
      () => resolveResume(checkpointsDir(out), out),
      /its latest checkpoint is .*checkpoint-2/,
    );
    const partial = join(checkpointsDir(out), "checkpoint-3.tmp-ffffffff");
    await Deno.mkdir(partial);
    assert.throws(() => resolveResume(partial, out), /not a complete checkpoint/);
    assert.throws(() => resolveResume("", out), CheckpointError);
    assert.throws(() => resolveResume("", out), /must be true, false or a checkpoint folder/);
  });
});

Deno.test("resume_from_checkpoint true past a damaged latest checkpoint is an error; older damage is not", async () => {
  await withOutputDir(async (out) => {
    // the only checkpoint damaged: no silent fresh start over the old run
    await saveCheckpoint(out, 1, writeState(1));
    const weights1 = join(checkpointsDir(out), "checkpoint-1", "model", "weights.bin");
    await Deno.truncate(weights1, 10);
    assert.deepEqual(damagedCheckpoints(out).map((d) => d.step), [1]);
    assert.throws(
      () => resolveResume(true, out),
      (e: unknown) =>
        e instanceof CheckpointError &&
        /the latest checkpoint, .*checkpoint-1, is damaged \(.*weights\.bin.*\): restore it, or move it away to start from scratch$/
          .test(e.message),
    );
    // a complete checkpoint before a damaged one: the error names the one to fall back to
    await Deno.remove(join(checkpointsDir(out), "checkpoint-1"), { recursive: true });
    await saveCheckpoint(out, 1, writeState(1));
    await saveCheckpoint(out, 2, writeState(2));
    await saveCheckpoint(out, 3, writeState(3));
    await Deno.truncate(join(checkpointsDir(out), "checkpoint-2", "model", "weights.bin"), 10);
    await Deno.truncate(join(checkpointsDir(out), "checkpoint-3", "model", "weights.bin"), 10);
    assert.throws(
      () => resolveResume(true, out),
      /checkpoint-3, is damaged .*move it and 1 more damaged one\(s\) away to resume from .*checkpoint-1 \(step 1\)/,
    );
    // damage older than the latest complete checkpoint does not stop a resume
    await saveCheckpoint(out, 4, writeState(4));
    assert.equal(resolveResume(true, out).checkpoint?.step, 4);
  });
});

Deno.test("readCheckpointJson: a file that is missing, not JSON or not an object names itself", async () => {
  await withOutputDir(async (out) => {
    const path = join(out, "state.json");
    const fails = (pattern: RegExp) =>
      assert.throws(() => readCheckpointJson(path), (e: Error) => {
        assert.ok(e instanceof CheckpointError, String(e));
        assert.equal(e.details.file, path);
        assert.match(e.message, pattern);
        return true;
      });
    fails(/Cannot read checkpoint file .*state\.json/);
    await Deno.writeTextFile(path, '{"step": 3');
    fails(/state\.json is not valid JSON/);
    await Deno.writeTextFile(path, "[1, 2]");
    fails(/holds \[1,2\]: expected a JSON object/);
    await Deno.writeTextFile(path, '{"step": 3}');
    assert.deepEqual(readCheckpointJson(path), { step: 3 });
  });
});
