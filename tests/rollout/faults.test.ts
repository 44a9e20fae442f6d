import assert from "node:assert/strict";
import { WorkerEnvHost } from "../../lib/rollout/env_worker_host.ts";
import { groupSeed } from "../../lib/rollout/seeding.ts";
import { smallConfig, TextPolicy, trainScheduler } from "./_setup.ts";

const FLAKY = new URL("../fixtures/envs/flaky_env.ts", import.meta.url).pathname;

/**
 * Starts one env worker and builds a Flaky env in it, once: under `deno test` a worker
 * type-checks its modules, and eight workers starting together on a cold cache each check
 * them at once (about 25 s on 2 cores, against about 3 s for one).
 */
let warmed: Promise<void> | null = null;
function warmWorkerModules(): Promise<void> {
  warmed ??= (async () => {
    const host = new WorkerEnvHost(60, 1);
    const markers = await Deno.makeTempDir();
    try {
      const env = await host.open(0, FLAKY, { bad_seed: -1, mode: "throw", marker_dir: markers });
      await env.close();
    } finally {
      await host.close();
      await Deno.remove(markers, { recursive: true });
    }
  })();
  return warmed;
}

async function runFlaky(mode: "throw" | "hang" | "block", runner: "main" | "worker") {
  if (runner === "worker") await warmWorkerModules();
  const markers = await Deno.makeTempDir();
  try {
    const seed = 42;
    const badSeed = groupSeed(seed, "train", 0); // episode 0 of group 0
    const config = await smallConfig([
      `seed=${seed}`,
      "train_env_manager.tags=[Flaky]",
      "train_env_manager.env_step_timeout=0.5",
      `train_env_manager.env_runner=${runner}`,
      "train_env_manager.max_env_num_per_worker=1",
      `+custom_envs.Flaky={env_type: '${FLAKY}', max_steps: 4, max_tokens_per_step: 8, ` +
      `env_config: {bad_seed: ${badSeed}, mode: ${mode}, marker_dir: '${markers}'}}`,
    ]);
    const policy = new TextPolicy(() => "ok");
    await using scheduler = trainScheduler(config, policy);
    const batch = await scheduler.getBatch(8, 0);
    return { batch, badSeed };
  } finally {
    await Deno.remove(markers, { recursive: true });
  }
}

for (
  const [mode, runner, reason] of [
    ["throw", "main", "env_error"],
    ["hang", "main", "env_timeout"],
    ["throw", "worker", "env_error"],
    ["block", "worker", "env_timeout"],
  ] as const
) {
  Deno.test(`rollout: an env that ${mode === "throw" ? "throws" : mode === "hang" ? "hangs" : "blocks its thread"} (${runner} thread${runner === "worker" ? "s" : ""}) costs one trajectory; the rollout goes on`, async () => {
    const { batch, badSeed } = await runFlaky(mode, runner);
    assert.equal(batch.samples.length, 8);
    for (const s of batch.samples) assert.equal(s.metrics.success, 1);
    assert.equal(batch.lost.length, 1);
    assert.equal(batch.lost[0]!.reason, reason);
    assert.equal(batch.lost[0]!.seed, badSeed);
    assert.equal(batch.metrics["scheduler/lost_trajectories"], 1);
    assert.equal(batch.metrics[`scheduler/${reason}s`], 1);
    // the lost place was played again: group 0 is complete with the same start state
    const group0 = batch.samples.filter((s) => s.groupId === 0);
    assert.equal(group0.length, 4);
    for (const s of group0) assert.equal(s.seed, badSeed);
  });
}
