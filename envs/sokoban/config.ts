/**
 * Sokoban's `env_config`: the keys ROLL's `SokobanEnv` and gym-sokoban take, with
 * their defaults.
 *
 * @module
 */
import { z } from "npm:zod@4.6.7";
import { codeTable, commonConfigShape, gridVocab } from "../config_fields.ts";

/** The actions, in the order of gym-sokoban's ids 1..4. */
export const SOKOBAN_ACTIONS: readonly string[] = ["Up", "Down", "Left", "Right"];

/**
 * The text symbols by state code (ROLL): 0 `#` wall, 1 `_` floor, 2 `O` target,
 * 3 `√` box on target, 4 `X` box, 5 `P` player, 6 `S` player on target.
 */
export const SOKOBAN_SYMBOLS: readonly string[] = ["#", "_", "O", "√", "X", "P", "S"];

/** What each code means, for the instruction. */
export const SOKOBAN_MEANINGS: readonly string[] = [
  "wall",
  "empty",
  "target",
  "box on target",
  "box",
  "player",
  "player on target",
];

/**
 * Sokoban's `env_config` (unknown keys are errors). `dim_room` is [rows, cols]
 * with the walls; `num_gen_steps` defaults to gym-sokoban's int(1.7 x (rows + cols)).
 *
 * @example
 * ```ts
 * import { SokobanConfig } from "./config.ts";
 * const c = SokobanConfig.parse({ dim_room: [6, 6], num_boxes: 1 });
 * console.log(c.search_depth, c.max_steps); // 300 20
 * ```
 */
export const SokobanConfig = z.strictObject({
  ...commonConfigShape,
  /** Rows and columns of the room, border walls included (ROLL's default 10 x 10). */
  dim_room: z.tuple([z.number().int().min(4).max(64), z.number().int().min(4).max(64)])
    .default([10, 10]),
  /** Boxes and targets (ROLL's default 4). */
  num_boxes: z.number().int().min(1).max(16).default(4),
  /** Depth of the reverse-playing search (ROLL's default 300). */
  search_depth: z.number().int().min(2).max(10_000).default(300),
  /** Random-walk steps of the room topology (default int(1.7 x (rows + cols))). */
  num_gen_steps: z.number().int().positive().nullable().default(null),
  /** Symbols by state code (0 # 1 _ 2 O 3 √ 4 X 5 P 6 S). */
  grid_lookup: codeTable("grid_lookup", [0, 1, 2, 3, 4, 5, 6]).nullable().default(null),
  /** Symbol → meaning, for the instruction (default: derived from grid_lookup). */
  grid_vocab: gridVocab,
  /** Action names by gym-sokoban id (1 Up, 2 Down, 3 Left, 4 Right). */
  action_lookup: codeTable("action_lookup", [1, 2, 3, 4], true).nullable().default(null),
}).check((ctx) => {
  const [rows, cols] = ctx.value.dim_room;
  // a box moves only along three free cells in a line (player, box, the cell beyond)
  if (Math.max(rows, cols) < 5) {
    ctx.issues.push({
      code: "custom",
      input: ctx.value.dim_room,
      path: ["dim_room"],
      message: `a ${rows}x${cols} room has no three inner cells in a line, so no box can move: ` +
        `expected a side of at least 5`,
    });
  } else if ((rows - 2) * (cols - 2) <= ctx.value.num_boxes + 1) {
    ctx.issues.push({
      code: "custom",
      input: ctx.value.num_boxes,
      path: ["num_boxes"],
      message: `num_boxes ${ctx.value.num_boxes} does not fit a ${rows}x${cols} room: ` +
        `expected fewer than ${(rows - 2) * (cols - 2) - 1}`,
    });
  }
});

/** Sokoban's validated `env_config`. */
export type SokobanConfig = z.output<typeof SokobanConfig>;
