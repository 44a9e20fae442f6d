/**
 * The generation engine's size in a training run and in `agentrl eval`: how many sequences it
 * holds at once and how long each may grow, from the config, and the config keys that set them
 * (for the message when its KV cache does not fit).
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";
import { GenerationEngine } from "../infer/engine.ts";
import type { Qwen2Model } from "../model/qwen2.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import { withKvCacheHint } from "../rollout/errors.ts";

/** The engine's `maxRunningRequests` and `maxModelLen`, and the keys that set them. */
export interface EngineSize {
  maxRunningRequests: number;
  maxModelLen: number;
  /** Which config keys set the two numbers (a sentence, for error messages). */
  keys: string;
}

/** The most sequences an engine holds at once, whatever the environment count. */
export const MAX_RUNNING_REQUESTS = 128;

type Manager = AgenticConfig["train_env_manager"];
const envCount = (m: Manager) => m.num_env_groups * (m.group_size + m.group_size_redundancy);

/**
 * A training run's engine: every environment's episode at once (the larger of the train and
 * validation env counts, at most 128) at the longer of `sequence_length` (4096 when unset) and
 * `val_sequence_length`, at most the model's context (`max_position_embeddings`, or YaRN's longer one).
 *
 * @example
 * ```ts ignore
 * const { maxRunningRequests, maxModelLen } = trainEngineSize(config, 32768);
 * ```
 */
export function trainEngineSize(config: AgenticConfig, maxPositions: number): EngineSize {
  return {
    maxRunningRequests: Math.min(
      Math.max(envCount(config.train_env_manager), envCount(config.val_env_manager)),
      MAX_RUNNING_REQUESTS,
    ),
    maxModelLen: Math.min(
      Math.max(config.sequence_length ?? 4096, config.val_sequence_length ?? 0),
      maxPositions,
    ),
    keys: "It holds every environment's episode at once (the larger of train_env_manager's and " +
      "val_env_manager's num_env_groups x (group_size + group_size_redundancy), at most 128) at " +
      "the longer of sequence_length and val_sequence_length (at most the model's context, " +
      "max_position_embeddings or YaRN's longer one): lower either",
  };
}

/**
 * `agentrl eval`'s engine: the validation environments' episodes at once (at most 128) at
 * `val_sequence_length` (else `sequence_length`, else 4096), at most the model's context.
 */
export function evalEngineSize(config: AgenticConfig, maxPositions: number): EngineSize {
  return {
    maxRunningRequests: Math.min(envCount(config.val_env_manager), MAX_RUNNING_REQUESTS),
    maxModelLen: Math.min(
      config.val_sequence_length ?? config.sequence_length ?? 4096,
      maxPositions,
    ),
    keys: "It holds every environment's episode at once (val_env_manager's num_env_groups x " +
      "(group_size + group_size_redundancy), at most 128) at val_sequence_length (else " +
      "sequence_length; at most the model's context, max_position_embeddings or YaRN's longer " +
      "one): lower either",
  };
}

/**
 * The engine of `size` over `model`, its text decoded by `tok`; a KV cache too large for memory
 * is a RolloutConfigError naming `size.keys`.
 */
export function engineOfSize(
  model: Qwen2Model,
  size: EngineSize,
  tok: Tokenizer,
  seed: number | undefined,
): GenerationEngine {
  return withKvCacheHint(
    () =>
      new GenerationEngine(model, {
        maxRunningRequests: size.maxRunningRequests,
        maxModelLen: size.maxModelLen,
        decode: (ids) => tok.decode(ids, { skipSpecialTokens: true }),
        ...(seed === undefined ? {} : { seed }),
      }),
    size.keys,
  );
}
