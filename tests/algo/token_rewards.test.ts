// Token rewards (ROLL's compute_token_reward): the response-level reward on the
// last generated token, minus klCoef * kl per generated token, then reward_clip.
//
// Samples used below:
//   A: mask [0, 1, 1, 0, 1, 0], logp [0, -1, -1, 0, -2, 0], ref [0, -1.5, -1, 0, -1, 0]
//      -> kl ("kl") on generated tokens 1, 2, 4: 0.5, 0, -1; per-sample mean -1/6;
//      last generated token: 4
//   B: mask [1, 1], logp = ref -> kl 0, mean 0
//   C: mask [0, 0] (nothing generated): no reward lands, mean KL counts as 0
// Batch KL (critic/kl) = (-1/6 + 0 + 0) / 3 = -1/18.
// Response rewards 2, -1, 7; klCoef 0.1:
//   A: [0, -0.05, 0, 0, 2 + 0.1, 0]   B: [0, -1]   C: [0, 0]
import assert from "node:assert/strict";
import { computeTokenRewards } from "../../lib/algo/mod.ts";
import { assertAllClose, assertNear, assertThrowsMsg } from "./_helpers.ts";

const A = {
  responseMask: new Uint8Array([0, 1, 1, 0, 1, 0]),
  logprobs: new Float32Array([0, -1, -1, 0, -2, 0]),
  refLogprobs: new Float32Array([0, -1.5, -1, 0, -1, 0]),
};
const B = { responseMask: [1, 1], logprobs: [-1, -1], refLogprobs: [-1, -1] };
const C = { responseMask: [0, 0], logprobs: [0, 0], refLogprobs: [0, 0] };

Deno.test("score on the last generated token, token-level KL subtracted", () => {
  const r = computeTokenRewards([A, B, C], [2, -1, 7], { addTokenLevelKl: true, klCoef: 0.1 });
  assertAllClose(r.tokenRewards[0]!, [0, -0.05, 0, 0, 2.1, 0]);
  assertAllClose(r.tokenRewards[1]!, [0, -1]);
  assertAllClose(r.tokenRewards[2]!, [0, 0]);
  assertAllClose(r.kl![0]!, [0, 0.5, 0, 0, -1, 0]);
  assertNear(r.meanKl!, -1 / 18);
  assert.equal(r.klCoef, 0.1);
  assert.equal(r.tokenRewardClipFrac, null);
});

Deno.test("without add_token_level_kl the KL is measured but not added", () => {
  const r = computeTokenRewards([A, B, C], [2, -1, 7], { klCoef: 0.1 });
  assertAllClose(r.tokenRewards[0]!, [0, 0, 0, 0, 2, 0]);
  assertNear(r.meanKl!, -1 / 18);
  assert.equal(r.klCoef, 0);
});

Deno.test("other estimators feed the penalty (abs, k3)", () => {
  // abs: A's kl 0.5, 0, 1 -> rewards [0, -0.05, 0, 0, 2 - 0.1, 0]; mean 1.5 / 3 = 0.5 -> batch 0.5 / 3
  const r = computeTokenRewards([A, B, C], [2, -1, 7], {
    addTokenLevelKl: true,
    klCoef: 0.1,
    klPenalty: "abs",
  });
  assertAllClose(r.tokenRewards[0]!, [0, -0.05, 0, 0, 1.9, 0]);
  assertNear(r.meanKl!, 0.5 / 3);
  // k3 at d = 0.5: 0.1065307; d = -1: 0.7182818
  const k = computeTokenRewards([A], [2], { addTokenLevelKl: true, klCoef: 1, klPenalty: "k3" });
  assertAllClose(k.tokenRewards[0]!, [0, -0.1065307, 0, 0, 2 - 0.7182818, 0]);
});

Deno.test("reward_clip clamps token rewards; the fraction counts generated tokens", () => {
  // A: 2.1 -> 1.5; B: -1 stays. Generated tokens 3 + 2 + 0 = 5, one clipped.
  const r = computeTokenRewards([A, B, C], [2, -1, 7], {
    addTokenLevelKl: true,
    klCoef: 0.1,
    rewardClip: 1.5,
  });
  assertAllClose(r.tokenRewards[0]!, [0, -0.05, 0, 0, 1.5, 0]);
  assertAllClose(r.tokenRewards[1]!, [0, -1]);
  assert.equal(r.tokenRewardClipFrac, 0.2);
});

Deno.test("samples without reference log-probs: no KL, no penalty", () => {
  const r = computeTokenRewards([{ responseMask: [0, 1, 1] }], [3]);
  assertAllClose(r.tokenRewards[0]!, [0, 0, 3]);
  assert.equal(r.kl, null);
  assert.equal(r.meanKl, null);
  assert.deepEqual(computeTokenRewards([], []).tokenRewards, []);
});

Deno.test("bad input is named", () => {
  assertThrowsMsg(
    () => computeTokenRewards([{ responseMask: [1] }], [1], { addTokenLevelKl: true, klCoef: 0.1 }),
    /add_token_level_kl with KL penalty "kl" needs logprobs and refLogprobs/,
  );
  assertThrowsMsg(
    () => computeTokenRewards([A, { responseMask: [1] }], [1, 2]),
    /on every sample or none: 1 of 2/,
  );
  assertThrowsMsg(
    () => computeTokenRewards([A], [1, 2]),
    /responseRewards has 2 values, expected 1/,
  );
  assertThrowsMsg(
    () => computeTokenRewards([{ ...B, refLogprobs: [0] }], [1]),
    /samples\[0\]\.refLogprobs has 1 elements, expected 2/,
  );
  assertThrowsMsg(
    () => computeTokenRewards([{ responseMask: [0, 2] }], [1]),
    /samples\[0\]\.responseMask\[1\] is 2, expected 0 or 1/,
  );
  assertThrowsMsg(() => computeTokenRewards([B], [1], { rewardClip: 0 }), /rewardClip must be > 0/);
});
