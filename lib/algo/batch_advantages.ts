/**
 * The whole advantage step of ROLL's agentic pipeline for a trajectory-wise batch:
 * normalize the episode scores (reward_normalization), clip them (reward_clip),
 * spread them to token rewards with the optional token-level KL penalty, update the
 * KL controller with the batch KL, then estimate advantages and returns
 * (whitening, advantage_clip). It also returns the `critic/*` metrics of the step.
 *
 * @module
 */
import { computeAdvantages } from "./advantage.ts";
import { checkOneOf } from "./_check.ts";
import type { KlController } from "./kl_controller.ts";
import { normalizeSampleScores, type RewardNormalizationOptions } from "./reward_normalization.ts";
import { rewardStep } from "./token_rewards.ts";
import {
  ADV_ESTIMATORS,
  type AdvEstimator,
  type AlgoSample,
  type KlPenaltyKind,
  type RecursionPositions,
} from "./types.ts";

/** Settings of {@linkcode computeBatchAdvantages} (ROLL's fields in camelCase). */
export interface BatchAdvantageSettings {
  advEstimator: AdvEstimator;
  gamma: number;
  lambd: number;
  rewardNormalization: RewardNormalizationOptions;
  rewardClip?: number | null;
  whitenRewards?: boolean;
  whitenAdvantages?: boolean;
  advantageClip?: number | null;
  addTokenLevelKl?: boolean;
  klPenalty?: KlPenaltyKind;
  /** Steps of the GAE / return recursions (default "response"). */
  positions?: RecursionPositions;
}

/** Per-sample outputs (token arrays are 0 off the generated tokens) and the step's metrics. */
export interface BatchAdvantages {
  /**
   * The normalized, clipped score of each sample (an episode's, or with the pipeline's step
   * samples each turn's: then one per piece, while the token arrays are joined per episode).
   */
  responseRewards: Float32Array;
  tokenRewards: Float32Array[];
  advantages: Float32Array[];
  returns: Float32Array[];
  /** Per-token KL estimates; null when the samples carry no reference log-probs. */
  kl: Float32Array[] | null;
  /**
   * critic/kl (when measured), critic/kl_coef, and critic/reward_clip_frac,
   * critic/token_reward_clip_frac, critic/advantage_clip_frac when those clips are set.
   */
  metrics: Record<string, number>;
}

/**
 * Runs the advantage step on a batch. The KL controller (needed when
 * `addTokenLevelKl` is on) supplies the coefficient and is then updated with the
 * measured batch KL and the batch size, as ROLL does every step. `gigpo` is not
 * handled here (its turns' rewards mix episode and state-group normalizations: use
 * `computeTurnGigpoAdvantages`); for `step_reinforce` on a batch's turns use
 * `computeTurnStepReinforceAdvantages`, or here give each step-wise sample's
 * discounted return as its `score`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { computeBatchAdvantages } from "./batch_advantages.ts";
 * const sample = (score: number) => ({
 *   responseMask: [0, 1, 1], score, trajGroupId: "g", tag: "FrozenLake",
 * });
 * const out = computeBatchAdvantages([sample(1), sample(0)], {
 *   advEstimator: "grpo", gamma: 1, lambd: 1,
 *   rewardNormalization: { grouping: "traj_group_id", method: "mean" },
 * });
 * assert.deepEqual(Array.from(out.advantages[0]!), [0, 0.5, 0.5]);
 * assert.deepEqual(Array.from(out.advantages[1]!), [0, -0.5, -0.5]);
 * ```
 */
export function computeBatchAdvantages(
  samples: readonly AlgoSample[],
  settings: BatchAdvantageSettings,
  klController?: KlController,
): BatchAdvantages {
  const estimator = checkOneOf(settings.advEstimator, ADV_ESTIMATORS, "advantage estimator");
  if (estimator === "gigpo") {
    throw new RangeError(
      'Estimator "gigpo" needs step-wise samples with episode and state-group rewards: ' +
        "use computeTurnGigpoAdvantages (lib/algo/turn_gigpo.ts)",
    );
  }
  const metrics: Record<string, number> = {};
  const responseRewards = normalizeSampleScores(samples, settings.rewardNormalization);
  const tokens = rewardStep(samples, responseRewards, settings, metrics, klController);

  const adv = computeAdvantages(
    tokens.tokenRewards,
    samples.map((s) => s.responseMask),
    {
      estimator,
      gamma: settings.gamma,
      lambd: settings.lambd,
      whitenRewards: settings.whitenRewards ?? false,
      whitenAdvantages: settings.whitenAdvantages ?? false,
      advantageClip: settings.advantageClip ?? null,
      positions: settings.positions ?? "response",
    },
    samples.map((s) => s.values),
  );
  if (adv.advantageClipFrac !== null) {
    metrics["critic/advantage_clip_frac"] = adv.advantageClipFrac;
  }
  return {
    responseRewards: tokens.responseRewards,
    tokenRewards: adv.tokenRewards,
    advantages: adv.advantages,
    returns: adv.returns,
    kl: tokens.kl,
    metrics,
  };
}
