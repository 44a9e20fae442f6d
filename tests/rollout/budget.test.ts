import assert from "node:assert/strict";
import { RolloutScheduler } from "../../lib/rollout/scheduler.ts";
import { decodeForEnv, encoder, smallConfig, TextPolicy } from "./_setup.ts";

Deno.test("rollout: each turn's budget is min(max_tokens_per_step, max_new_tokens, sequence_length - context)", async () => {
  // a long-winded policy: answers never parse, so episodes run to max_steps or the cap
  const config = await smallConfig([
    "sequence_length=420",
    "max_tokens_per_step=24",
    "train_env_manager.generating_args.max_new_tokens=20",
  ]);
  const policy = new TextPolicy(() => "I think the best move is probably to go left, then down.");
  await using scheduler = new RolloutScheduler({
    config,
    mode: "train",
    policy,
    encoder,
    decodeForEnv,
  });
  const batch = await scheduler.getBatch(8, 0);
  let capped = 0;
  for (const r of policy.requests) {
    const expected = Math.min(24, 20, 420 - r.promptIds.length);
    assert.equal(r.maxNewTokens, expected, r.requestId);
    if (expected < 20) capped++;
  }
  for (const s of batch.samples) {
    assert.ok(s.tokens.length <= 420, `${s.tokens.length} tokens`);
    // every response got its full budget of 20 but the last may be cut by the cap
    assert.equal(s.endReason, "sequence_length");
    assert.equal(s.metrics.action_is_valid, 0);
  }
  assert.ok(capped > 0, "no turn met the sequence cap");
});

Deno.test("rollout: max_steps ends a trajectory after that many actions", async () => {
  // the manager's max_steps (3) below the env's own step limit (max_actions_per_traj = 10)
  const config = await smallConfig(["custom_env.FrozenLake.max_steps=3", "sequence_length=4096"]);
  const policy = new TextPolicy(() => "<answer>Up</answer>");
  await using scheduler = new RolloutScheduler({
    config,
    mode: "train",
    policy,
    encoder,
    decodeForEnv,
  });
  const batch = await scheduler.getBatch(8, 0);
  for (const s of batch.samples) {
    assert.ok(s.stepRewards.length <= 3);
    if (s.endReason === "max_actions") assert.equal(s.stepRewards.length, 3);
    else assert.equal(s.endReason, "terminated");
  }
  assert.ok(batch.samples.some((s) => s.endReason === "max_actions"));
});
