/**
 * FrozenLake (gymnasium's rules, ROLL's text interface): the factory the
 * registry uses for `env_type: frozen_lake`, and its parts.
 *
 * @module
 */
import { FrozenLakeConfig } from "./config.ts";
import { FrozenLakeEnv } from "./env.ts";

export {
  FROZEN_LAKE_ACTIONS,
  FROZEN_LAKE_MEANINGS,
  FROZEN_LAKE_SYMBOLS,
  FrozenLakeConfig,
} from "./config.ts";
export { FrozenLakeEnv } from "./env.ts";
export { describeFrozenLakeBoard } from "./describe.ts";
export { type FrozenLakeMap, generateRandomMap, isValidMap, shortestPath } from "./map.ts";
export { FROZEN_LAKE_COLORS, FROZEN_LAKE_TILE, renderFrozenLake } from "./render_rgb.ts";

/**
 * A FrozenLake environment from a raw `env_config` (validated with
 * {@linkcode FrozenLakeConfig}; zod reports a bad value).
 *
 * @example
 * ```ts
 * import { createFrozenLakeEnv } from "./mod.ts";
 * const env = createFrozenLakeEnv({ size: 4, is_slippery: false });
 * console.log(env.reset(0).observation.split("\n").length); // 4
 * ```
 */
export function createFrozenLakeEnv(config: Record<string, unknown> = {}): FrozenLakeEnv {
  return new FrozenLakeEnv(FrozenLakeConfig.parse(config));
}
