/**
 * agentrl's environments: gym-like multi-turn text environments (FrozenLake,
 * Sokoban, Countdown, WebShop), the registry that builds them from `env_type`
 * and `env_config`, ROLL-style action parsing and metric aggregation, and frame
 * writers (PNG, GIF).
 *
 * @example
 * ```ts
 * import { createEnv } from "./mod.ts";
 * const env = await createEnv("sokoban", { dim_room: [6, 6], num_boxes: 1, max_steps: 10 });
 * const { observation } = await env.reset(42);
 * console.log(observation);
 * const step = await env.step("<answer>Up</answer><|im_end|>");
 * console.log(step.reward, step.info.metrics);
 * ```
 *
 * @module
 */
export type { Env, ResetResult, RgbFrame, StepMetrics, StepResult } from "./types.ts";
export {
  ActionParser,
  type ActionParserOptions,
  DEFAULT_ACTION_PATTERN,
  DEFAULT_SPECIAL_TOKENS,
  type ParsedResponse,
  THINK_ACTION_PATTERN,
} from "./action_parser.ts";
export {
  aggregateEpisodeMetrics,
  aggregateMetrics,
  type EpisodeMetrics,
  type MetricAggregation,
  ROLL_METRIC_AGGREGATION,
} from "./metrics.ts";
export { EnvConfigError } from "./errors.ts";
export {
  createEnv,
  type EnvFactory,
  isEnvModulePath,
  listEnvTypes,
  parseEnvConfig,
  registerEnv,
  resolveEnvFactory,
  type ResolveOptions,
  unregisterEnv,
} from "./registry.ts";
export { Rng } from "./random.ts";
export { createFrozenLakeEnv, FrozenLakeConfig, FrozenLakeEnv } from "./frozen_lake/mod.ts";
export { createSokobanEnv, SokobanConfig, SokobanEnv } from "./sokoban/mod.ts";
export { CountdownConfig, CountdownEnv, createCountdownEnv } from "./countdown/mod.ts";
export { encodeGif, encodePng, type GifOptions } from "./frames/encode.ts";
export { writeEpisodeFrames, type WrittenEpisode } from "./frames/episode_writer.ts";
