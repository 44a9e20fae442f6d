// The whole advantage step on a small batch, hand-computed end to end.
//
// Batch (grouping traj_group_id, method mean_std, grpo, gamma 1):
//   s0: group g1, score 1, mask [0, 1, 1], logp [0, -1, -1], ref [0, -1, -2] -> kl [0, 0, 1]
//   s1: group g1, score 0, mask [0, 1],    logp = ref                         -> kl [0, 0]
//   s2: group g2, score 5, mask [1, 1],    logp = ref (a single-member group -> score 0)
// g1: mean 0.5, unbiased std sqrt(0.5) = 0.70710678 -> +-0.5 / (0.70710678 + 1e-6) = +-0.70710578
// add_token_level_kl with coefficient 0.1: s0's last token 0.70710578 - 0.1 * 1 = 0.60710578
// Batch KL: per-sample means 0.5, 0, 0 -> 1/6.
import assert from "node:assert/strict";
import {
  AdaptiveKlController,
  computeBatchAdvantages,
  FixedKlController,
} from "../../lib/algo/mod.ts";
import type { AlgoSample, BatchAdvantageSettings } from "../../lib/algo/mod.ts";
import { assertAllClose, assertNear, assertThrowsMsg } from "./_helpers.ts";

const Z = 0.5 / (Math.SQRT1_2 + 1e-6); // 0.70710578

function batch(): AlgoSample[] {
  return [
    {
      responseMask: [0, 1, 1],
      score: 1,
      trajGroupId: "g1",
      tag: "FrozenLake",
      logprobs: [0, -1, -1],
      refLogprobs: [0, -1, -2],
      values: [0, 0.2, 0.3],
    },
    {
      responseMask: [0, 1],
      score: 0,
      trajGroupId: "g1",
      tag: "FrozenLake",
      logprobs: [0, -1],
      refLogprobs: [0, -1],
      values: [0, -0.1],
    },
    {
      responseMask: [1, 1],
      score: 5,
      trajGroupId: "g2",
      tag: "Sokoban",
      logprobs: [-1, -1],
      refLogprobs: [-1, -1],
      values: [0.4, 0.5],
    },
  ];
}

const GRPO: BatchAdvantageSettings = {
  advEstimator: "grpo",
  gamma: 1,
  lambd: 1,
  rewardNormalization: { grouping: "traj_group_id", method: "mean_std" },
  addTokenLevelKl: true,
  klPenalty: "kl",
};

Deno.test("grpo with token-level KL: normalized scores, penalty, broadcast", () => {
  const ctl = new FixedKlController(0.1);
  const out = computeBatchAdvantages(batch(), GRPO, ctl);
  assertAllClose(out.responseRewards, [Z, -Z, 0]);
  assertAllClose(out.tokenRewards[0]!, [0, 0, Z - 0.1]);
  assertAllClose(out.tokenRewards[1]!, [0, -Z]);
  assertAllClose(out.advantages[0]!, [0, Z - 0.1, Z - 0.1]);
  assertAllClose(out.advantages[1]!, [0, -Z]);
  assertAllClose(out.advantages[2]!, [0, 0]);
  assertAllClose(out.kl![0]!, [0, 0, 1]);
  assertNear(out.metrics["critic/kl"]!, 1 / 6);
  assert.equal(out.metrics["critic/kl_coef"], 0.1);
  assert.equal(ctl.value, 0.1);
});

Deno.test("the adaptive controller is read first, then updated with the batch KL", () => {
  // KL 1/6 vs target 0.1: error 0.667 -> clipped 0.2; 3 samples over horizon 30:
  // 0.1 * (1 + 0.2 * 3 / 30) = 0.102
  const ctl = new AdaptiveKlController(0.1, 0.1, 30);
  const out = computeBatchAdvantages(batch(), GRPO, ctl);
  assert.equal(out.metrics["critic/kl_coef"], 0.1);
  assertAllClose(out.tokenRewards[0]!, [0, 0, Z - 0.1]);
  assertNear(ctl.value, 0.102, 1e-12);
  // without add_token_level_kl the coefficient is reported as 0 but the controller still moves
  const ctl2 = new AdaptiveKlController(0.1, 0.1, 30);
  const plain = computeBatchAdvantages(batch(), { ...GRPO, addTokenLevelKl: false }, ctl2);
  assert.equal(plain.metrics["critic/kl_coef"], 0);
  assertAllClose(plain.tokenRewards[0]!, [0, 0, Z]);
  assertNear(ctl2.value, 0.102, 1e-12);
});

Deno.test("reward_clip on the response rewards, then on the token rewards", () => {
  // response rewards +-0.7071 -> +-0.5 (2 of 3 clipped); s0's last token 0.5 - 0.1 = 0.4
  const out = computeBatchAdvantages(
    batch(),
    { ...GRPO, rewardClip: 0.5 },
    new FixedKlController(0.1),
  );
  assertAllClose(out.responseRewards, [0.5, -0.5, 0]);
  assertNear(out.metrics["critic/reward_clip_frac"]!, 2 / 3);
  assertAllClose(out.advantages[0]!, [0, 0.4, 0.4]);
  assertAllClose(out.advantages[1]!, [0, -0.5]);
  assert.equal(out.metrics["critic/token_reward_clip_frac"], 0);
});

Deno.test("gae with critic values, whitening and clip metrics", () => {
  // method identity, no KL: token rewards s0 [0, 0, 1], s1 [0, 0], s2 [0, 5]; gamma = lambda = 1:
  // A = (reward) - V: s0 [_, 0.8, 0.7]; s1 [_, 0.1]; s2 [4.6, 4.5]; returns = the score
  const out = computeBatchAdvantages(batch(), {
    advEstimator: "gae",
    gamma: 1,
    lambd: 1,
    rewardNormalization: { grouping: "batch", method: "identity" },
    advantageClip: 4.55,
  });
  assertAllClose(out.advantages[0]!, [0, 0.8, 0.7]);
  assertAllClose(out.advantages[1]!, [0, 0.1]);
  assertAllClose(out.advantages[2]!, [4.55, 4.5]);
  assertAllClose(out.returns[0]!, [0, 1, 1]);
  assertAllClose(out.returns[2]!, [5, 5]);
  assert.equal(out.metrics["critic/advantage_clip_frac"], 1 / 5);
  assertNear(out.metrics["critic/kl"]!, 1 / 6);
  assert.equal(out.metrics["critic/kl_coef"], 0);
});

Deno.test("batch and tags groupings reach the normalization", () => {
  // tags: FrozenLake {1, 0} -> -+0.5 with "mean"; Sokoban {5} -> 0
  const out = computeBatchAdvantages(batch(), {
    ...GRPO,
    addTokenLevelKl: false,
    rewardNormalization: { grouping: "tags", method: "mean" },
  });
  assertAllClose(out.responseRewards, [0.5, -0.5, 0]);
  // batch mean 2: -1, -2, 3
  const b = computeBatchAdvantages(batch(), {
    ...GRPO,
    addTokenLevelKl: false,
    rewardNormalization: { grouping: "batch", method: "mean" },
  });
  assertAllClose(b.responseRewards, [-1, -2, 3]);
});

Deno.test("what the step refuses", () => {
  assertThrowsMsg(
    () => computeBatchAdvantages(batch(), GRPO),
    /addTokenLevelKl needs a KL controller/,
  );
  assertThrowsMsg(
    () => computeBatchAdvantages(batch(), { ...GRPO, advEstimator: "gigpo" }),
    /"gigpo" needs step-wise samples/,
  );
  assertThrowsMsg(
    () =>
      computeBatchAdvantages(batch(), {
        ...GRPO,
        rewardNormalization: { grouping: "state_hash" },
      }, new FixedKlController(0)),
    /grouping "state_hash": expected one of traj_group_id, tags, batch/,
  );
});

Deno.test("gae over a two-turn conversation: the generated tokens only (default), or every position as ROLL", () => {
  // turn 1 on tokens 2-4, the observation on 5-8, turn 2 on 9-11; reward 1 at the end, V 0.5
  const mask = [0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1];
  const sample: AlgoSample = {
    responseMask: mask,
    score: 1,
    trajGroupId: "g",
    tag: "t",
    values: mask.map(() => 0.5),
  };
  const run = (positions?: "response" | "all") =>
    computeBatchAdvantages([sample], {
      advEstimator: "gae",
      gamma: 1,
      lambd: 0.95,
      rewardNormalization: { grouping: "traj_group_id", method: "identity" },
      ...(positions && { positions }),
    }, new FixedKlController(0)).advantages[0]!;
  // turn 1's deltas are 0 and the 0.5 of turn 2's end reaches it through 3 (response) or 7 (all)
  // steps of lambda: 0.5 x 0.95^k
  const turn1 = (steps: number) => [2, 1, 0].map((j) => 0.5 * 0.95 ** (steps + j));
  assertAllClose(Array.from(run().subarray(2, 5)), turn1(3), 1e-6);
  assertAllClose(Array.from(run("response").subarray(2, 5)), turn1(3), 1e-6);
  assertAllClose(Array.from(run("all").subarray(2, 5)), turn1(7), 1e-6);
  // turn 2 is the same either way
  assertAllClose(Array.from(run("all").subarray(9)), Array.from(run().subarray(9)), 1e-6);
});
