// Asynchronous rollout (async_generation_ratio > 0): batches take one group per group queue a
// round, oldest episode first, so a fast group cannot crowd slow ones out; the age of the
// episodes trained on is measured and bounded by the ratio.
import assert from "node:assert/strict";
import { weightLag } from "../../lib/rollout/metrics.ts";
import { RolloutScheduler } from "../../lib/rollout/scheduler.ts";
import type { PolicyRequest, PolicyResponse, RolloutPolicy } from "../../lib/rollout/types.ts";
import { decodeForEnv, encoder, IM_END, smallConfig, tokenizer } from "./_setup.ts";

/** Answers `Up` at once for group 0 and after 20 ms for the others. */
class OneFastGroup implements RolloutPolicy {
  async generate(r: PolicyRequest): Promise<PolicyResponse> {
    const group = Number(r.requestId.split("_")[1]);
    await new Promise((done) => setTimeout(done, group === 0 ? 0 : 20));
    const ids = [...tokenizer.encode("<answer>Up</answer>", { addSpecialTokens: false }), IM_END];
    return { tokenIds: ids, logprobs: ids.map(() => -1), finishReason: "stop" };
  }
}

/** 4 group queues of 2 envs, a batch of 8, episodes up to one step ahead. */
function fourGroupsAsync() {
  return smallConfig([
    "rollout_batch_size=8",
    "train_env_manager.num_env_groups=4",
    "train_env_manager.group_size=2",
    "train_env_manager.num_groups_partition=[4]",
    "async_generation_ratio=1",
  ]);
}

Deno.test("async rollout: every group queue gives one group a batch however fast it is; episode age is bounded and reported", async () => {
  const config = await fourGroupsAsync();
  await using scheduler = new RolloutScheduler({
    config,
    mode: "train",
    policy: new OneFastGroup(),
    encoder,
    decodeForEnv,
  });
  let sawAge = false;
  for (let step = 0; step < 4; step++) {
    const batch = await scheduler.getBatch(8, step);
    const perGroup = new Map<number, number>();
    for (const s of batch.samples) perGroup.set(s.groupId, (perGroup.get(s.groupId) ?? 0) + 1);
    assert.deepEqual([...perGroup].sort(), [[0, 2], [1, 2], [2, 2], [3, 2]], `step ${step}`);
    const age = batch.metrics["scheduler/episode_age/max"]!;
    assert.ok(age >= 0 && age <= 1, `step ${step}: age ${age}`);
    assert.ok(Number.isFinite(batch.metrics["scheduler/expired_episodes"]));
    if (age === 1) sawAge = true;
  }
  assert.ok(sawAge, "with the ratio at 1, some batch trains on episodes from the step before");
});

Deno.test("rollout: a batch smaller than the groups' episodes does not shut a slow group out (leftovers expire first)", async () => {
  // 4 group queues of 2 envs, 2 groups a batch, synchronous; group 3 is slow, and a pause
  // between batches (training) lets the others finish their leftover episodes
  const config = await smallConfig([
    "rollout_batch_size=4",
    "train_env_manager.num_env_groups=4",
    "train_env_manager.group_size=2",
    "train_env_manager.num_groups_partition=[4]",
  ]);
  class SlowGroup3 implements RolloutPolicy {
    async generate(r: PolicyRequest): Promise<PolicyResponse> {
      const group = Number(r.requestId.split("_")[1]);
      await new Promise((done) => setTimeout(done, group === 3 ? 30 : 2));
      const ids = [...tokenizer.encode("<answer>Up</answer>", { addSpecialTokens: false }), IM_END];
      return { tokenIds: ids, logprobs: ids.map(() => -1), finishReason: "stop" };
    }
  }
  await using scheduler = new RolloutScheduler({
    config,
    mode: "train",
    policy: new SlowGroup3(),
    encoder,
    decodeForEnv,
  });
  const trained = new Map<number, number>();
  for (let step = 0; step < 8; step++) {
    const batch = await scheduler.getBatch(4, step);
    for (const s of batch.samples) trained.set(s.groupId, (trained.get(s.groupId) ?? 0) + 1);
    await new Promise((done) => setTimeout(done, 50));
  }
  for (const g of [0, 1, 2, 3]) {
    assert.ok((trained.get(g) ?? 0) >= 4, `group ${g}: ${JSON.stringify([...trained])}`);
  }
});

Deno.test("async rollout: weight_lag counts the updates between a trajectory's first token and the trainer's weights", async () => {
  const config = await fourGroupsAsync();
  let version = 0; // the engine's weights: one update after each step's batch
  const policy: RolloutPolicy = {
    async generate(r) {
      const group = Number(r.requestId.split("_")[1]);
      const from = version;
      await new Promise((done) => setTimeout(done, group === 0 ? 0 : 20));
      const ids = [...tokenizer.encode("<answer>Up</answer>", { addSpecialTokens: false }), IM_END];
      return {
        tokenIds: ids,
        logprobs: ids.map(() => -1),
        finishReason: "stop",
        weightVersions: [from, version],
      };
    },
  };
  await using scheduler = new RolloutScheduler({
    config,
    mode: "train",
    policy,
    encoder,
    decodeForEnv,
  });
  let most = 0;
  for (let step = 0; step < 4; step++) {
    const batch = await scheduler.getBatch(8, step);
    const lag = weightLag(batch.samples, version);
    const max = lag["scheduler/weight_lag/max"]!;
    assert.ok(max >= 0 && max <= 1, `step ${step}: lag ${max}`);
    assert.ok(lag["scheduler/weight_lag/mean"]! <= max);
    most = Math.max(most, max);
    version++;
  }
  assert.equal(most, 1, "some trajectory started before the last update");
  assert.deepEqual(weightLag([], 3), {});
});
