import assert from "node:assert/strict";
import { ChatEncoder, ChatTemplateIncrementError } from "../../lib/model/chat_template.ts";
import { RolloutScheduler } from "../../lib/rollout/scheduler.ts";
import { groupSeed } from "../../lib/rollout/seeding.ts";
import type { PolicyResponse, RolloutPolicy, TrajectorySample } from "../../lib/rollout/types.ts";
import {
  decodeForEnv,
  encoder,
  IM_END,
  randomMove,
  smallConfig,
  TextPolicy,
  tokenizer,
  trainScheduler,
} from "./_setup.ts";

function byGroup(samples: TrajectorySample[]): Map<string, TrajectorySample[]> {
  const m = new Map<string, TrajectorySample[]>();
  for (const s of samples) m.set(s.trajGroupId, [...(m.get(s.trajGroupId) ?? []), s]);
  return m;
}

/** The first observation the model saw (the first user message). */
const firstPrompt = (s: TrajectorySample) => s.messages[1]!.content;

Deno.test("rollout: group members start from identical states, groups and steps from different ones", async () => {
  const config = await smallConfig([
    "train_env_manager.num_env_groups=4",
    "train_env_manager.num_groups_partition=[4]",
    "rollout_batch_size=16",
  ]);
  const policy = new TextPolicy((r) => randomMove(r.seed));
  await using scheduler = trainScheduler(config, policy);
  const seen = new Map<string, number>(); // seed -> step
  const starts = new Set<string>();
  for (let step = 0; step < 2; step++) {
    const batch = await scheduler.getBatch(16, step);
    assert.equal(batch.samples.length, 16);
    const groups = byGroup(batch.samples);
    assert.equal(groups.size, 4);
    for (const members of groups.values()) {
      assert.equal(members.length, 4);
      // same seed, same start state, different envs
      assert.equal(new Set(members.map((s) => s.seed)).size, 1);
      assert.equal(new Set(members.map(firstPrompt)).size, 1);
      assert.equal(new Set(members.map((s) => s.envId)).size, 4);
      const s = members[0]!;
      assert.equal(s.seed, groupSeed(config.seed, "train", s.groupId) + s.episodeId);
      assert.equal(s.createStep, step);
    }
    // different groups (and the same group at another step) have different seeds
    const seeds = [...groups.values()].map((m) => m[0]!.seed);
    assert.equal(new Set(seeds).size, 4);
    for (const members of groups.values()) {
      starts.add(firstPrompt(members[0]!));
      const key = `${members[0]!.seed}`;
      assert.ok(!seen.has(key), "a seed came back at a later step");
      seen.set(key, step);
    }
  }
  assert.equal(seen.size, 8);
  // start states differ too, not just seeds (random 4x4 maps: nearly all 8 differ)
  assert.ok(starts.size >= 6, `only ${starts.size} distinct start states in 8 groups`);
  // validation seeds never reuse the training ones
  for (let g = 0; g < 4; g++) {
    assert.notEqual(groupSeed(config.seed, "val", g), groupSeed(config.seed, "train", g));
  }
});

Deno.test("rollout: samples hold [p1 r1 p2 r2 ...] exactly; the mask covers exactly the generated tokens", async () => {
  const config = await smallConfig();
  const policy = new TextPolicy((r) => randomMove(r.seed));
  await using scheduler = trainScheduler(config, policy);
  const batch = await scheduler.getBatch(8, 0);
  const responses = new Map<string, number[][]>();
  for (const r of policy.requests) {
    const traj = r.requestId.split("/")[0]!;
    responses.set(traj, [...(responses.get(traj) ?? []), []]);
  }
  for (const s of batch.samples) {
    // every prompt the policy saw is a prefix of the sample's tokens
    const mine = policy.requests.filter((r) => r.requestId.startsWith(`${s.trajId}/`));
    assert.equal(mine.length, s.stepRewards.length);
    for (const r of mine) assert.deepEqual([...s.tokens.slice(0, r.promptIds.length)], r.promptIds);
    // generated spans: exactly the policy's answers, each ending with <|im_end|>
    const spans: number[][] = [];
    for (let i = 0; i < s.tokens.length; i++) {
      if (s.responseMask[i] === 1) {
        if (i === 0 || s.responseMask[i - 1] === 0) spans.push([]);
        spans.at(-1)!.push(s.tokens[i]!);
      }
    }
    assert.equal(spans.length, mine.length);
    spans.forEach((span, t) => {
      assert.equal(span.at(-1), IM_END);
      assert.equal(tokenizer.decode(span.slice(0, -1)), randomMove(mine[t]!.seed));
    });
    // log-probs only on generated tokens
    s.logprobs.forEach((lp, i) => assert.equal(lp !== 0, s.responseMask[i] === 1));
    // no re-tokenization drift: the whole conversation encodes to the same ids
    assert.deepEqual(
      [...s.tokens],
      encoder.encode(s.messages, { addGenerationPrompt: false }).slice(0, s.tokens.length),
    );
    assert.equal(s.score, s.stepRewards.reduce((a, b) => a + b, 0));
    assert.equal(s.metrics.num_actions, s.stepRewards.length);
  }
  assert.equal(batch.metrics["rollout/num_trajectories"], 8);
  assert.ok("env/FrozenLake/success" in batch.metrics);
  assert.ok("rollout/response_length/mean" in batch.metrics);
  // ROLL's lengths: the first prompt, and every token after it
  const first = batch.samples.map((s) => s.responseMask.indexOf(1));
  assert.equal(batch.metrics["rollout/prompt_length/max"], Math.max(...first));
  assert.equal(
    batch.metrics["rollout/non_prompt_length/min"],
    Math.min(...batch.samples.map((s, i) => s.tokens.length - first[i]!)),
  );
});

Deno.test("rollout: getBatch returns only complete groups, in completion order, and keeps the rest", async () => {
  // group 0's envs answer slowly: group 1 must come first, not wait behind it
  const config = await smallConfig(["train_env_manager.max_traj_per_env=2"]);
  const policy = new TextPolicy(async (r) => {
    if (r.requestId.startsWith("FrozenLake_0_")) await new Promise((res) => setTimeout(res, 15));
    return randomMove(r.seed);
  });
  await using scheduler = trainScheduler(config, policy);
  const first = await scheduler.getBatch(4, 0);
  assert.equal(first.samples.length, 4);
  assert.equal(new Set(first.samples.map((s) => s.trajGroupId)).size, 1);
  assert.equal(first.samples[0]!.groupId, 1, "the fast group completes first");
  // the next call gets the remaining complete groups of the same step
  const second = await scheduler.getBatch(8, 0);
  assert.equal(second.samples.length, 8);
  for (const members of byGroup(second.samples).values()) assert.equal(members.length, 4);
  await assert.rejects(() => scheduler.getBatch(6, 1), /multiple of group_size 4/);
});

Deno.test("rollout: step-wise episodes (envs=step) prompt afresh each turn, recall the last steps, and mark where each piece starts", async () => {
  const config = await smallConfig(["envs=step", "max_actions_per_traj=4"]);
  const policy = new TextPolicy((r) => randomMove(r.seed));
  await using scheduler = trainScheduler(config, policy);
  const batch = await scheduler.getBatch(8, 0);
  let multiTurn = 0;
  for (const s of batch.samples) {
    const starts = s.stepStarts!;
    assert.equal(starts.length, s.stepRewards.length);
    assert.equal(starts[0], 0);
    const mine = policy.requests.filter((r) => r.requestId.startsWith(`${s.trajId}/`));
    assert.equal(mine.length, starts.length);
    mine.forEach((r, t) => {
      // each piece is [the fresh prompt the policy saw, its answer]
      const end = starts[t + 1] ?? s.tokens.length;
      assert.deepEqual(
        [...s.tokens.slice(starts[t], starts[t]! + r.promptIds.length)],
        r.promptIds,
      );
      assert.ok(
        s.responseMask.slice(starts[t], starts[t]! + r.promptIds.length).every((m) => m === 0),
      );
      assert.ok(s.responseMask.slice(starts[t]! + r.promptIds.length, end).every((m) => m === 1));
      const text = tokenizer.decode(r.promptIds);
      assert.match(text, /^<\|im_start\|>system\n/); // a fresh conversation every turn
      if (t > 0) {
        multiTurn++;
        assert.match(text, /\(step: 1, observation: /); // the history recalls step 1
      }
    });
  }
  assert.ok(multiTurn > 0, "no episode lasted two turns");
});

Deno.test("scheduler: a chat template that cannot extend the conversation stops the rollout at once", async () => {
  // an encoder whose template rewrites earlier turns: every second turn fails
  class RewritingEncoder extends ChatEncoder {
    override turnIds(...args: Parameters<ChatEncoder["turnIds"]>): number[] {
      if (args[0].length > 0) throw new ChatTemplateIncrementError("Chat template X rewrites");
      return super.turnIds(...args);
    }
  }
  const config = await smallConfig();
  const lost: string[] = [];
  const policy = new TextPolicy((r) => randomMove(r.seed));
  await using scheduler = new RolloutScheduler({
    config,
    mode: "train",
    policy,
    encoder: new RewritingEncoder(tokenizer),
    decodeForEnv,
    onLost: (l) => lost.push(l.reason),
  });
  await assert.rejects(
    () => scheduler.getBatch(8, 0),
    (e: Error) => {
      assert.equal(e.name, "RolloutConfigError");
      assert.match(e.message, /^Chat template X rewrites\. Trajectory-wise episodes need/);
      assert.match(e.message, /step-wise episodes \(envs=step\)/);
      return true;
    },
  );
  assert.deepEqual(lost, []); // not retried as env failures
});

Deno.test("scheduler: close() aborts the turns still in flight, freeing their engine slots", async () => {
  // a policy whose turns end only when aborted
  const pending = new Map<string, (r: PolicyResponse) => void>();
  const aborted: string[] = [];
  const policy: RolloutPolicy = {
    generate: (r) => new Promise((resolve) => pending.set(r.requestId, resolve)),
    abort: (id) => {
      aborted.push(id);
      pending.get(id)?.({ tokenIds: [], logprobs: [], finishReason: "abort" });
    },
  };
  const scheduler = trainScheduler(await smallConfig(), policy);
  const batch = scheduler.getBatch(8, 0).then(() => "resolved", (e: Error) => e.message);
  for (let i = 0; i < 200 && pending.size < 8; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(pending.size, 8); // one turn per env
  await scheduler.close();
  assert.deepEqual(aborted.sort(), [...pending.keys()].sort());
  // and a getBatch that was waiting ends instead of hanging
  assert.equal(await batch, "The RolloutScheduler was closed while getBatch waited");
});
