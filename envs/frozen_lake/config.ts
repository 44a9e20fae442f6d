/**
 * FrozenLake's `env_config`: the keys ROLL's `FrozenLakeEnv` takes, with its defaults.
 *
 * @module
 */
import { z } from "npm:zod@4.6.7";
import { codeTable, commonConfigShape, gridVocab } from "../config_fields.ts";

/** The actions, indexed by gymnasium's ids. */
export const FROZEN_LAKE_ACTIONS: readonly string[] = ["Left", "Down", "Right", "Up"];

/**
 * The text symbols, indexed by ROLL's codes: 0 player, 1 frozen, 2 hole, 3 goal,
 * 4 player in a hole, 5 player on the goal.
 */
export const FROZEN_LAKE_SYMBOLS: readonly string[] = ["P", "_", "O", "G", "X", "√"];

/** What each code means, for the instruction. */
export const FROZEN_LAKE_MEANINGS: readonly string[] = [
  "player",
  "empty",
  "hole",
  "goal",
  "player in hole",
  "player on goal",
];

/**
 * FrozenLake's `env_config` (unknown keys are errors). `map_seed` and `seed` only
 * pick the map shown before the first reset: as in ROLL, every reset draws its
 * map from the reset seed.
 *
 * @example
 * ```ts
 * import { FrozenLakeConfig } from "./config.ts";
 * const c = FrozenLakeConfig.parse({ size: 6, is_slippery: false });
 * console.log(c.size, c.p, c.max_steps); // 6 0.8 20
 * ```
 */
export const FrozenLakeConfig = z.strictObject({
  ...commonConfigShape,
  /** Rows and columns of the square map. */
  size: z.number().int().min(2).max(64).default(4),
  /** Probability that a tile is frozen (1 - p are holes). */
  p: z.number().min(0).max(1).default(0.8),
  /** Gymnasium's slippery ice: the intended move, or either perpendicular one, 1/3 each. */
  is_slippery: z.boolean().default(true),
  /** The map before the first reset (ROLL's constructor argument). */
  map_seed: z.number().int().nullable().default(null),
  /** Symbols by code (0 P, 1 _, 2 O, 3 G, 4 X, 5 √). */
  grid_lookup: codeTable("grid_lookup", [0, 1, 2, 3, 4, 5]).nullable().default(null),
  /** Symbol → meaning, for the instruction (default: derived from grid_lookup). */
  grid_vocab: gridVocab,
  /** Action names by gymnasium id (0 Left, 1 Down, 2 Right, 3 Up). */
  action_lookup: codeTable("action_lookup", [0, 1, 2, 3], true).nullable().default(null),
});

/** FrozenLake's validated `env_config`. */
export type FrozenLakeConfig = z.output<typeof FrozenLakeConfig>;
