/**
 * The actor's and the critic's update settings from a run's config: PPO's clips and loss terms,
 * `loss_agg_mode` and seq-mean-token-sum-norm's divisor, mini- and micro-batching, and the
 * passes over a step's samples.
 *
 * @module
 */
import { clipSettingsFromConfig } from "../algo/mod.ts";
import type { AgenticConfig } from "../config/agentic_config.ts";
import type { PpoSettings } from "../train/actor.ts";
import type { CriticSettings } from "../train/critic.ts";
import { trainBatching } from "../train/micro_batches.ts";

/**
 * seq-mean-token-sum-norm's divisor: ROLL pads every sample to `sequence_length` and divides by
 * the width of its mask shifted by one.
 */
function sumNorm(config: AgenticConfig): { sumNormLength?: number } {
  return config.sequence_length ? { sumNormLength: config.sequence_length - 1 } : {};
}

/** actor_train's PPO settings. */
export function actorSettingsOf(config: AgenticConfig): PpoSettings {
  const batching = trainBatching(config.actor_train);
  return {
    ...clipSettingsFromConfig(config),
    klLossCoef: config.use_kl_loss ? config.kl_loss_coef : 0,
    entropyCoef: config.entropy_loss_coef,
    aggMode: config.loss_agg_mode,
    ratioType: config.ratio_type,
    ppoEpochs: config.ppo_epochs,
    miniBatchSize: batching.miniBatchSize,
    plan: batching.plan,
    maxGradNorm: config.max_grad_norm,
    ...sumNorm(config),
  };
}

/** The critic's settings: one pass a step, as ROLL's `CriticWorker.train_step`, whatever `ppo_epochs` says. */
export function criticSettingsOf(config: AgenticConfig): CriticSettings {
  const batching = trainBatching(config.critic);
  return {
    valueClip: config.value_clip,
    aggMode: config.loss_agg_mode,
    miniBatchSize: batching.miniBatchSize,
    plan: batching.plan,
    maxGradNorm: config.max_grad_norm,
    ppoEpochs: 1,
    ...sumNorm(config),
  };
}
