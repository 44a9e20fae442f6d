/**
 * Environment groups and asynchronous, environment-granular rollout: env
 * layout and seeding, the trajectory-wise episode, group queues, the
 * rollout scheduler (main thread or Deno Workers), the engine as a policy,
 * and ROLL's rollout metrics.
 *
 * @module
 */
export { type EnvSlot, layoutEnvs } from "./env_layout.ts";
export { EnvLimits, Semaphore, SHARED_ENV_LIMITS } from "./env_limits.ts";
export { capSequenceLengths, type SequenceLengthKey } from "./context_limit.ts";
export { incrementConfigError, probeTurnIncrements } from "./turn_probe.ts";
export { chatEncoderFor } from "./chat_setup.ts";
export {
  type EnvHandle,
  type EnvHost,
  EnvTimeoutError,
  MainThreadEnvHost,
  sampleWith,
  withTimeout,
} from "./env_host.ts";
export { EnvWorkerStoppedError, WorkerEnvHost } from "./env_worker_host.ts";
export { ModelLoadError, RolloutConfigError, RolloutError } from "./errors.ts";
export { endOfTurnIds, EnginePolicy, type PolicySampling, samplingOf } from "./engine_policy.ts";
export { RandomPolicy } from "./random_policy.ts";
export { type EpisodeOptions, type EpisodeSpec, PolicyError, runEpisode } from "./episode.ts";
export { type CompleteGroup, GroupQueue, type GroupQueueOptions } from "./group_queue.ts";
export { rolloutMetrics, weightLag, withPrefix } from "./metrics.ts";
export { loadPolicyModel, type PolicyModel } from "./policy_model.ts";
export { runValidation, type ValidationOptions, type ValidationResult } from "./validation.ts";
export {
  DEFAULT_AGENT_SYSTEM_TEMPLATE,
  DEFAULT_AGENT_TEMPLATE,
  fillTemplate,
  turnMessages,
} from "./prompt.ts";
export { type RolloutBatch, RolloutScheduler, type RolloutSchedulerOptions } from "./scheduler.ts";
export { episodeSeed, groupSeed, turnSeed } from "./seeding.ts";
export type {
  EndReason,
  LostTrajectory,
  PolicyRequest,
  PolicyResponse,
  RolloutPolicy,
  TrajectorySample,
} from "./types.ts";
