/**
 * The shapes `lib/algo` works on: a trajectory-wise batch is an array of
 * {@linkcode AlgoSample}s, each with per-token arrays of its own length, and the
 * option names of ROLL's algorithm fields.
 *
 * Per-token arrays are aligned with the sample's tokens: index i describes token i
 * (its log-prob given the prefix, the critic's value there, ...). Every output is a
 * new `Float32Array` of the same length.
 *
 * @module
 */
import { ADV_ESTIMATORS, LOSS_AGG_MODES } from "../config/schema/agentic.ts";

/** Per-token numbers: a typed array or a plain array. */
export type TokenValues = ArrayLike<number>;

/**
 * One trajectory-wise training sample. A rollout `TrajectorySample` is one as it is
 * (plus `values` / `refLogprobs` once the critic and the reference have run).
 */
export interface AlgoSample {
  /** 1 on tokens the model generated (the loss and advantages live there), 0 elsewhere. */
  responseMask: TokenValues;
  /** Episode score (sum of step rewards); it lands on the last response token. */
  score: number;
  /** ROLL's traj_group_id: the samples that share an episode seed (a GRPO group). */
  trajGroupId: string;
  /** The env tag (ROLL's `tags` grouping key). */
  tag: string;
  /** Critic values per token (needed by `gae`). */
  values?: TokenValues;
  /** Log-probs of the policy that generated the batch ("old" log-probs). */
  logprobs?: TokenValues;
  /** Log-probs of the reference model (needed for a KL penalty). */
  refLogprobs?: TokenValues;
  /** Precomputed per-token KL(p || p_ref) over the whole vocabulary (kl_penalty "full"). */
  fullKl?: TokenValues;
}

/** ROLL's `adv_estimator` values (the config schema's list). */
export { ADV_ESTIMATORS };
/** One of {@linkcode ADV_ESTIMATORS}. */
export type AdvEstimator = typeof ADV_ESTIMATORS[number];

/** ROLL's `reward_normalization.method` values. */
export const NORM_METHODS = ["identity", "mean", "mean_std", "asym_clip"] as const;
/** One of {@linkcode NORM_METHODS}. */
export type NormMethod = typeof NORM_METHODS[number];

/** Where a normalization statistic (mean or std) is taken: the whole batch or the group. */
export const NORM_STAT_TYPES = ["batch", "group"] as const;
/** One of {@linkcode NORM_STAT_TYPES}. */
export type NormStatType = typeof NORM_STAT_TYPES[number];

/** ROLL's `kl_penalty` values: per-token KL estimators. */
export const KL_PENALTY_KINDS = ["kl", "abs", "mse", "k3", "full"] as const;
/** One of {@linkcode KL_PENALTY_KINDS}. */
export type KlPenaltyKind = typeof KL_PENALTY_KINDS[number];

/** ROLL's `loss_agg_mode` values (the config schema's list). */
export { LOSS_AGG_MODES };
/** One of {@linkcode LOSS_AGG_MODES}. */
export type LossAggMode = typeof LOSS_AGG_MODES[number];

/**
 * Which token positions a discounted recursion (GAE, returns) steps through:
 * `"response"` only the generated tokens (env/template tokens between turns are
 * skipped, one discount step per generated token); `"all"` every position of the
 * sample, as ROLL's tensors do (the critic's values at non-generated positions take
 * part, and a discount step is spent on each of them).
 */
export type RecursionPositions = "response" | "all";
