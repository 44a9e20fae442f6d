/**
 * Advantages and returns of a batch from its token rewards (ROLL's
 * `agentic_compute_advantage`): optional reward whitening, the estimator, optional
 * advantage whitening, the mask, then advantage clipping.
 *
 * Estimators: `gae` (critic values, gamma, lambd); `reinforce`, `grpo`, `gigpo`,
 * `step_reinforce` (discounted reward-to-go; they differ only in how the score was
 * normalized before, which is the caller's reward_normalization); `agentic_reinforce`
 * (one step per turn); `reinforce_plus_plus` (discounted reward-to-go of the token
 * rewards, KL penalty included, whitened over the batch).
 *
 * Whitening pools every generated token of the batch and needs two of them: with
 * fewer, ROLL (and this) skips it.
 *
 * @module
 */
import { checkLength, checkOneOf, checkPositive, checkRows, checkUnit } from "./_check.ts";
import { clipSymmetric } from "./clip.ts";
import { countMasked, maskedWhiten } from "./masked_stats.ts";
import { discountedReturns, gae, segmentReturns } from "./returns.ts";
import {
  ADV_ESTIMATORS,
  type AdvEstimator,
  type RecursionPositions,
  type TokenValues,
} from "./types.ts";

/** Settings of {@linkcode computeAdvantages} (ROLL's field names in camelCase). */
export interface AdvantageOptions {
  estimator: AdvEstimator;
  /** Discount per step, in [0, 1]. */
  gamma: number;
  /** GAE lambda, in [0, 1] (used by `gae` only). */
  lambd: number;
  /** Whiten the token rewards over the batch before the estimator. */
  whitenRewards?: boolean;
  /** Whiten the advantages over the batch after the estimator. */
  whitenAdvantages?: boolean;
  /** Clamp advantages to [-c, c] (null or absent: no clip). */
  advantageClip?: number | null;
  /** Steps of the GAE / return recursions (default "response"). */
  positions?: RecursionPositions;
}

/** Per-sample outputs of {@linkcode computeAdvantages}; all 0 where the mask is 0. */
export interface AdvantageResult {
  advantages: Float32Array[];
  returns: Float32Array[];
  /** The token rewards the estimator saw (whitened when asked, masked). */
  tokenRewards: Float32Array[];
  /** Share of generated tokens whose advantage was clipped (null without advantageClip). */
  advantageClipFrac: number | null;
  /** Whether whitening could run (at least two generated tokens in the batch). */
  whitened: boolean;
}

/**
 * Computes advantages and returns for a batch of per-token rewards. `values` (one
 * per sample, per token) are required by `gae` and ignored otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { computeAdvantages } from "./advantage.ts";
 * // grpo, gamma 1: the normalized score 0.5 reaches every generated token
 * const r = computeAdvantages([[0, 0, 0.5]], [[0, 1, 1]], { estimator: "grpo", gamma: 1, lambd: 1 });
 * assert.deepEqual(Array.from(r.advantages[0]!), [0, 0.5, 0.5]);
 * ```
 */
export function computeAdvantages(
  tokenRewards: readonly TokenValues[],
  masks: readonly TokenValues[],
  options: AdvantageOptions,
  values?: readonly (TokenValues | undefined)[],
): AdvantageResult {
  const estimator = checkOneOf(options.estimator, ADV_ESTIMATORS, "advantage estimator");
  checkRows(tokenRewards, masks, "tokenRewards", "responseMask");
  checkUnit(options.gamma, "gamma");
  checkUnit(options.lambd, "lambd");
  const clip = options.advantageClip ?? null;
  if (clip !== null) checkPositive(clip, "advantageClip");
  const positions = options.positions ?? "response";
  const { gamma, lambd } = options;

  // Whitening needs >= 2 tokens (unbiased variance); ROLL skips it below that.
  const canWhiten = countMasked(masks) > 1;
  let rewards = options.whitenRewards && canWhiten
    ? maskedWhiten(tokenRewards, masks)
    : tokenRewards.map((r) => Float32Array.from(r));
  rewards = rewards.map((r, b) => applyMask(r, masks[b]!));

  let advantages: Float32Array[];
  let returns: Float32Array[];
  switch (estimator) {
    case "gae": {
      if (!values || values.length !== rewards.length) {
        throw new RangeError(
          `Estimator "gae" needs critic values for every sample: got ${
            values ? values.length : "none"
          } for ${rewards.length} samples`,
        );
      }
      const out = rewards.map((r, b) => {
        const v = values[b];
        if (!v) throw new TypeError(`Estimator "gae" needs critic values: sample ${b} has none`);
        checkLength(v, r.length, `values[${b}]`);
        return gae(r, v, masks[b]!, gamma, lambd, positions);
      });
      advantages = out.map((o) => o.advantages);
      returns = out.map((o) => o.returns);
      break;
    }
    case "agentic_reinforce":
      returns = rewards.map((r, b) => segmentReturns(r, masks[b]!, gamma));
      advantages = returns.map((r) => r.slice());
      break;
    case "reinforce_plus_plus":
      returns = rewards.map((r, b) => discountedReturns(r, masks[b]!, gamma, positions));
      advantages = canWhiten ? maskedWhiten(returns, masks) : returns.map((r) => r.slice());
      break;
    default: // reinforce, grpo, gigpo, step_reinforce
      returns = rewards.map((r, b) => discountedReturns(r, masks[b]!, gamma, positions));
      advantages = returns.map((r) => r.slice());
  }

  if (options.whitenAdvantages && canWhiten) advantages = maskedWhiten(advantages, masks);
  advantages = advantages.map((a, b) => applyMask(a, masks[b]!));

  let advantageClipFrac: number | null = null;
  if (clip !== null) {
    let counted = 0, clipped = 0;
    advantages = advantages.map((a, b) => {
      const c = clipSymmetric(a, clip, masks[b]!);
      counted += c.counted;
      clipped += c.clipped;
      return c.values;
    });
    advantageClipFrac = counted === 0 ? 0 : clipped / counted;
  }
  return { advantages, returns, tokenRewards: rewards, advantageClipFrac, whitened: canWhiten };
}

/** Zeroes `values` where `mask` is 0 (in place) and returns it. */
function applyMask(values: Float32Array, mask: TokenValues): Float32Array {
  for (let i = 0; i < values.length; i++) if (!mask[i]) values[i] = 0;
  return values;
}
