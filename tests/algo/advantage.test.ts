// computeAdvantages: estimator dispatch, reward / advantage whitening (ROLL's
// masked_whiten, unbiased), masking and advantage_clip, hand-computed.
import assert from "node:assert/strict";
import { ADV_ESTIMATORS, computeAdvantages } from "../../lib/algo/mod.ts";
import type { AdvEstimator } from "../../lib/algo/mod.ts";
import { assertAllClose, assertThrowsMsg } from "./_helpers.ts";

// Two samples: A generates tokens 1, 2 (reward 2 at the end); B tokens 0, 1 (reward -1).
const REWARDS = [[0, 0, 2], [0, -1]];
const MASKS = [[0, 1, 1], [1, 1]];
const opts = (estimator: AdvEstimator, extra = {}) => ({ estimator, gamma: 1, lambd: 1, ...extra });

Deno.test("reinforce, grpo, gigpo, step_reinforce: the reward-to-go on every generated token", () => {
  for (const e of ["reinforce", "grpo", "gigpo", "step_reinforce"] as const) {
    const r = computeAdvantages(REWARDS, MASKS, opts(e));
    assertAllClose(r.advantages[0]!, [0, 2, 2], 1e-6, e);
    assertAllClose(r.advantages[1]!, [-1, -1], 1e-6, e);
    assertAllClose(r.returns[0]!, [0, 2, 2], 1e-6, e);
    assert.equal(r.advantageClipFrac, null);
  }
  // gamma 0.5: A's token 1 is one step before the reward: 1
  const d = computeAdvantages(REWARDS, MASKS, opts("grpo", { gamma: 0.5 }));
  assertAllClose(d.advantages[0]!, [0, 1, 2]);
  assertAllClose(d.advantages[1]!, [-0.5, -1]);
});

Deno.test("gae uses the critic values", () => {
  // A: values [9, 0.5, 1.5], gamma = lambda = 1 -> A_t = 2 - V_t; B: values [0.5, -0.5] -> -1 - V
  const r = computeAdvantages(REWARDS, MASKS, opts("gae"), [[9, 0.5, 1.5], [0.5, -0.5]]);
  assertAllClose(r.advantages[0]!, [0, 1.5, 0.5]);
  assertAllClose(r.advantages[1]!, [-1.5, -0.5]);
  assertAllClose(r.returns[0]!, [0, 2, 2]);
  assertAllClose(r.returns[1]!, [-1, -1]);
  assertThrowsMsg(
    () => computeAdvantages(REWARDS, MASKS, opts("gae")),
    /"gae" needs critic values for every sample: got none for 2 samples/,
  );
  assertThrowsMsg(
    () => computeAdvantages(REWARDS, MASKS, opts("gae"), [[0, 0, 0], undefined]),
    /sample 1 has none/,
  );
  assertThrowsMsg(
    () => computeAdvantages(REWARDS, MASKS, opts("gae"), [[0, 0, 0], [0]]),
    /values\[1\] has 1 elements, expected 2/,
  );
});

Deno.test("whiten_advantages over the batch, masked afterwards", () => {
  // advantages on generated tokens: 2, 2, -1, -1 -> mean 0.5, deviations 4 * 2.25 = 9,
  // unbiased variance 9 / 3 = 3, std 1.7320508: 2 -> 1.5 / 1.732 = 0.8660254, -1 -> -0.8660254.
  // A's position 0 would whiten to -0.5 / 1.732 but is masked to 0.
  const r = computeAdvantages(REWARDS, MASKS, opts("grpo", { whitenAdvantages: true }));
  assertAllClose(r.advantages[0]!, [0, 0.8660254, 0.8660254]);
  assertAllClose(r.advantages[1]!, [-0.8660254, -0.8660254]);
  assertAllClose(r.returns[0]!, [0, 2, 2]); // returns stay unwhitened
  assert.equal(r.whitened, true);
});

Deno.test("whiten_rewards before the estimator", () => {
  // generated-token rewards 0, 2, 0, -1: mean 0.25, deviations 0.0625 + 3.0625 + 0.0625 + 1.5625
  // = 4.75, variance 4.75 / 3 = 1.5833333, std 1.2583057.
  // A: token 1 -> -0.25 / 1.2583 = -0.1986799, token 2 -> 1.75 / 1.2583 = 1.3907594
  // B: token 0 -> -0.1986799, token 1 -> -1.25 / 1.2583 = -0.9933993
  // reward-to-go (gamma 1): A [_, -0.1986799 + 1.3907594, 1.3907594]; B [-0.1986799 - 0.9933993, -0.9933993]
  const r = computeAdvantages(REWARDS, MASKS, opts("reinforce", { whitenRewards: true }));
  assertAllClose(r.tokenRewards[0]!, [0, -0.1986799, 1.3907594]);
  assertAllClose(r.tokenRewards[1]!, [-0.1986799, -0.9933993]);
  assertAllClose(r.advantages[0]!, [0, 1.1920795, 1.3907594]);
  assertAllClose(r.advantages[1]!, [-1.1920792, -0.9933993]);
});

Deno.test("reinforce_plus_plus: discounted returns of the KL-penalized rewards, whitened", () => {
  // rewards A [0, -0.1, 1] (token KL on token 1), B [-0.2, 0]; gamma 1
  // returns: A [_, 0.9, 1], B [-0.2, 0]; mean 1.7 / 4 = 0.425; deviations
  // 0.225625 + 0.330625 + 0.390625 + 0.180625 = 1.1275, variance 0.3758333, std 0.6130525
  const r = computeAdvantages([[0, -0.1, 1], [-0.2, 0]], MASKS, opts("reinforce_plus_plus"));
  assertAllClose(r.returns[0]!, [0, 0.9, 1]);
  assertAllClose(r.returns[1]!, [-0.2, 0]);
  assertAllClose(r.advantages[0]!, [0, 0.475 / 0.6130525, 0.575 / 0.6130525], 1e-6);
  assertAllClose(r.advantages[1]!, [-0.625 / 0.6130525, -0.425 / 0.6130525], 1e-6);
});

Deno.test("agentic_reinforce: one step per turn", () => {
  // turns [1] and [3, 4], gamma 0.5: G(turn 2) = 2, G(turn 1) = 1 + 0.5 * 2 = 2
  const r = computeAdvantages(
    [[0, 1, 0, 0, 2]],
    [[0, 1, 0, 1, 1]],
    opts("agentic_reinforce", {
      gamma: 0.5,
    }),
  );
  assertAllClose(r.advantages[0]!, [0, 2, 0, 2, 2]);
});

Deno.test("advantage_clip clamps and reports the share of generated tokens clipped", () => {
  // advantages 2, 2 (clipped to 1.5) and -1, -1 (kept): 2 of 4
  const r = computeAdvantages(REWARDS, MASKS, opts("grpo", { advantageClip: 1.5 }));
  assertAllClose(r.advantages[0]!, [0, 1.5, 1.5]);
  assertAllClose(r.advantages[1]!, [-1, -1]);
  assert.equal(r.advantageClipFrac, 0.5);
  // after whitening (+-0.8660254), clip 0.2 clips every token, as in the frozen_lake example
  const w = computeAdvantages(
    REWARDS,
    MASKS,
    opts("grpo", { whitenAdvantages: true, advantageClip: 0.2 }),
  );
  assertAllClose(w.advantages[0]!, [0, 0.2, 0.2]);
  assertAllClose(w.advantages[1]!, [-0.2, -0.2]);
  assert.equal(w.advantageClipFrac, 1);
});

Deno.test("edge cases: one generated token disables whitening; empty masks", () => {
  // a single generated token: whitening is skipped (ROLL warns), rpp advantage = return
  const one = computeAdvantages(
    [[0, 3]],
    [[0, 1]],
    opts("reinforce_plus_plus", { whitenAdvantages: true }),
  );
  assertAllClose(one.advantages[0]!, [0, 3]);
  assert.equal(one.whitened, false);
  // nothing generated anywhere: zeros, clip fraction 0
  const none = computeAdvantages(
    [[1, 2], [3]],
    [[0, 0], [0]],
    opts("grpo", {
      whitenAdvantages: true,
      advantageClip: 0.1,
    }),
  );
  assertAllClose(none.advantages[0]!, [0, 0]);
  assertAllClose(none.returns[1]!, [0]);
  assert.equal(none.advantageClipFrac, 0);
  // an empty batch
  assert.deepEqual(computeAdvantages([], [], opts("grpo")).advantages, []);
  // all-equal advantages whiten to 0 (variance 0: (v - mean) / sqrt(0 + 1e-8) = 0)
  const flat = computeAdvantages(
    [[0, 1], [1]],
    [[0, 1], [1]],
    opts("grpo", { whitenAdvantages: true }),
  );
  assertAllClose(flat.advantages[0]!, [0, 0]);
  assertAllClose(flat.advantages[1]!, [0]);
});

Deno.test("bad input is named", () => {
  assertThrowsMsg(
    () => computeAdvantages(REWARDS, MASKS, opts("ppo" as AdvEstimator)),
    /advantage estimator "ppo"/,
    new RegExp(`expected one of ${ADV_ESTIMATORS.join(", ")}`),
  );
  assertThrowsMsg(
    () => computeAdvantages(REWARDS, [[0, 1, 1]], opts("grpo")),
    /tokenRewards has 2 rows but responseMask has 1/,
  );
  assertThrowsMsg(
    () => computeAdvantages(REWARDS, [[0, 1, 1], [1]], opts("grpo")),
    /tokenRewards\[1\] has 2 elements, expected 1/,
  );
  assertThrowsMsg(() => computeAdvantages(REWARDS, MASKS, opts("grpo", { gamma: 2 })), /gamma/);
  assertThrowsMsg(
    () => computeAdvantages(REWARDS, MASKS, opts("grpo", { advantageClip: -1 })),
    /advantageClip must be > 0, got -1/,
  );
});
