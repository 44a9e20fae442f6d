/**
 * Sokoban (gym-sokoban's rules and generator, ROLL's text interface): the
 * factory the registry uses for `env_type: sokoban`, and its parts.
 *
 * @module
 */
import { SokobanConfig } from "./config.ts";
import { SokobanEnv } from "./env.ts";

export { SOKOBAN_ACTIONS, SOKOBAN_MEANINGS, SOKOBAN_SYMBOLS, SokobanConfig } from "./config.ts";
export { SOKOBAN_REWARDS, SokobanEnv } from "./env.ts";
export {
  type GeneratedLevel,
  generateLevel,
  type GenerateOptions,
  placePlayerAndTargets,
  randomPlayerMoves,
  reversePlaying,
  roomTopology,
  SokobanGenerationError,
} from "./generate.ts";
export { CELL, parseLevel, type SokobanLevel, stateCodes } from "./level.ts";
export { renderSokoban, SOKOBAN_COLORS, SOKOBAN_TILE } from "./render_rgb.ts";
export { liveCells, SOKOBAN_ACTION_IDS, solveSokoban } from "./solver.ts";

/**
 * A Sokoban environment from a raw `env_config` (validated with {@linkcode SokobanConfig}).
 *
 * @example
 * ```ts
 * import { createSokobanEnv } from "./mod.ts";
 * const env = createSokobanEnv({ dim_room: [6, 6], num_boxes: 1 });
 * console.log(env.reset(1).observation.split("\n").length); // 6
 * ```
 */
export function createSokobanEnv(config: Record<string, unknown> = {}): SokobanEnv {
  return new SokobanEnv(SokobanConfig.parse(config));
}
