/**
 * A Sokoban level: the fixed room (walls, floor, targets) and where the player
 * and the boxes stand, with gym-sokoban's cell codes and moves.
 *
 * @module
 */

/** gym-sokoban's fixed-room codes. */
export const WALL = 0;
/** An empty floor cell. */
export const FLOOR = 1;
/** A box target. */
export const TARGET = 2;

/**
 * gym-sokoban's full state codes, which ROLL's `grid_lookup` is keyed by:
 * 0 wall, 1 floor, 2 target, 3 box on target, 4 box, 5 player, 6 player on target.
 */
export const CELL = {
  wall: 0,
  floor: 1,
  target: 2,
  boxOnTarget: 3,
  box: 4,
  player: 5,
  playerOnTarget: 6,
} as const;

/** Row and column deltas of gym-sokoban's directions 0 up, 1 down, 2 left, 3 right. */
export const DIRECTIONS: ReadonlyArray<readonly [number, number]> = [[-1, 0], [1, 0], [0, -1], [
  0,
  1,
]];

/** A level: `fixed` is row-major `rows` x `cols` (WALL, FLOOR, TARGET); positions are cell indices. */
export interface SokobanLevel {
  rows: number;
  cols: number;
  fixed: Uint8Array;
  player: number;
  boxes: number[];
}

/**
 * The state code of every cell (see {@linkcode CELL}), row-major.
 *
 * @example
 * ```ts
 * import { stateCodes } from "./level.ts";
 * const codes = stateCodes({ rows: 1, cols: 4, fixed: new Uint8Array([0, 2, 1, 0]), player: 1, boxes: [2] });
 * console.log([...codes]); // [0, 6, 4, 0]
 * ```
 */
export function stateCodes(level: SokobanLevel): Uint8Array {
  const codes = new Uint8Array(level.fixed);
  for (const b of level.boxes) codes[b] = level.fixed[b] === TARGET ? CELL.boxOnTarget : CELL.box;
  codes[level.player] = level.fixed[level.player] === TARGET ? CELL.playerOnTarget : CELL.player;
  return codes;
}

/**
 * Parses a level drawn with ROLL's symbols (`#` wall, `_` floor, `O` target,
 * `X` box, `√` box on target, `P` player, `S` player on target), one row per line.
 *
 * @example
 * ```ts
 * import { parseLevel } from "./level.ts";
 * const level = parseLevel("#####\n#PXO#\n#####");
 * console.log(level.player, level.boxes); // 6 [7]
 * ```
 */
export function parseLevel(text: string, symbols = "#_O√XPS"): SokobanLevel {
  const lines = text.split("\n").map((l) => [...l]);
  const rows = lines.length, cols = lines[0]?.length ?? 0;
  const sym = [...symbols];
  const fixed = new Uint8Array(rows * cols);
  const boxes: number[] = [];
  let player = -1;
  lines.forEach((line, r) => {
    if (line.length !== cols) {
      throw new RangeError(`Row ${r} has ${line.length} cells: expected ${cols}`);
    }
    line.forEach((ch, c) => {
      const code = sym.indexOf(ch);
      if (code < 0) throw new RangeError(`Unknown Sokoban symbol '${ch}' at row ${r}, column ${c}`);
      const i = r * cols + c;
      fixed[i] = code === CELL.wall
        ? WALL
        : code === CELL.target || code === CELL.boxOnTarget || code === CELL.playerOnTarget
        ? TARGET
        : FLOOR;
      if (code === CELL.box || code === CELL.boxOnTarget) boxes.push(i);
      if (code === CELL.player || code === CELL.playerOnTarget) player = i;
    });
  });
  if (player < 0) throw new RangeError("The level has no player");
  return { rows, cols, fixed, player, boxes };
}
