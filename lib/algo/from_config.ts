/**
 * Reading lib/algo's settings from an AgenticConfig. The fields are listed here
 * structurally (snake_case, as in the config) so lib/algo does not depend on the
 * config loader; a validated AgenticConfig fits these types as it is.
 *
 * @module
 */
import type { BatchAdvantageSettings } from "./batch_advantages.ts";
import { createKlController, type KlController } from "./kl_controller.ts";
import type {
  AdvEstimator,
  KlPenaltyKind,
  NormMethod,
  NormStatType,
  RecursionPositions,
} from "./types.ts";

/** The config fields the advantage step reads (names and types as in AgenticConfig). */
export interface AlgoConfigFields {
  adv_estimator: AdvEstimator;
  gamma: number;
  lambd: number;
  reward_normalization: {
    grouping: string;
    method: NormMethod;
    norm_mean_type: NormStatType | null;
    norm_std_type: NormStatType | null;
  };
  reward_clip: number | null;
  whiten_rewards: boolean;
  whiten_advantages: boolean;
  advantage_clip: number | null;
  add_token_level_kl: boolean;
  kl_penalty: KlPenaltyKind;
  /** agentrl's: the positions returns and GAE step through (default "response"). */
  recursion_positions?: RecursionPositions;
}

/** The config fields of the KL controller. */
export interface KlConfigFields {
  init_kl_coef: number;
  target_kl: number | null;
  kl_horizon: number;
}

/**
 * {@linkcode BatchAdvantageSettings} from the config's fields.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { advantageSettingsFromConfig } from "./from_config.ts";
 * const s = advantageSettingsFromConfig({
 *   adv_estimator: "grpo", gamma: 1, lambd: 0.95,
 *   reward_normalization: { grouping: "traj_group_id", method: "mean_std", norm_mean_type: null, norm_std_type: null },
 *   reward_clip: null, whiten_rewards: false, whiten_advantages: true, advantage_clip: 0.2,
 *   add_token_level_kl: false, kl_penalty: "kl",
 * });
 * assert.equal(s.advEstimator, "grpo");
 * assert.equal(s.rewardNormalization.method, "mean_std");
 * ```
 */
export function advantageSettingsFromConfig(cfg: AlgoConfigFields): BatchAdvantageSettings {
  const rn = cfg.reward_normalization;
  return {
    advEstimator: cfg.adv_estimator,
    gamma: cfg.gamma,
    lambd: cfg.lambd,
    rewardNormalization: {
      grouping: rn.grouping,
      method: rn.method,
      normMeanType: rn.norm_mean_type,
      normStdType: rn.norm_std_type,
    },
    rewardClip: cfg.reward_clip,
    whitenRewards: cfg.whiten_rewards,
    whitenAdvantages: cfg.whiten_advantages,
    advantageClip: cfg.advantage_clip,
    addTokenLevelKl: cfg.add_token_level_kl,
    klPenalty: cfg.kl_penalty,
    positions: cfg.recursion_positions ?? "response",
  };
}

/**
 * The KL controller the config asks for: adaptive when `target_kl` is set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { klControllerFromConfig } from "./from_config.ts";
 * const c = klControllerFromConfig({ init_kl_coef: 0.2, target_kl: null, kl_horizon: 10000 });
 * assert.deepEqual(c.toJSON(), { kind: "fixed", value: 0.2 });
 * ```
 */
export function klControllerFromConfig(cfg: KlConfigFields): KlController {
  return createKlController({
    initKlCoef: cfg.init_kl_coef,
    targetKl: cfg.target_kl,
    klHorizon: cfg.kl_horizon,
  });
}

/** The config fields of the PPO clip. */
export interface ClipConfigFields {
  pg_clip: number | null;
  use_pg_clip_range: boolean;
  pg_clip_low: number | null;
  pg_clip_high: number | null;
  dual_clip_loss: boolean;
  dual_clip_c: number | null;
}

/**
 * The PPO clip range and dual-clip bound from the config: `pg_clip` both ways unless
 * `use_pg_clip_range` (then `pg_clip_low` / `pg_clip_high`); with `dual_clip_loss`, a negative
 * advantage's loss is bounded at c |A|, c = `dual_clip_c` or ROLL's 1 + 2 `pg_clip`; dualClip 0
 * is off.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clipSettingsFromConfig } from "./from_config.ts";
 * const c = clipSettingsFromConfig({
 *   pg_clip: 0.2, use_pg_clip_range: false, pg_clip_low: null, pg_clip_high: null,
 *   dual_clip_loss: true, dual_clip_c: null,
 * });
 * assert.deepEqual(c, { clipLow: 0.2, clipHigh: 0.2, dualClip: 1.4 });
 * ```
 */
export function clipSettingsFromConfig(
  cfg: ClipConfigFields,
): { clipLow: number; clipHigh: number; dualClip: number } {
  const clip = cfg.pg_clip ?? 0.2;
  return {
    clipLow: cfg.use_pg_clip_range ? cfg.pg_clip_low ?? 0.2 : clip,
    clipHigh: cfg.use_pg_clip_range ? cfg.pg_clip_high ?? 0.2 : clip,
    dualClip: cfg.dual_clip_loss ? cfg.dual_clip_c ?? 1 + 2 * clip : 0,
  };
}
