/**
 * Sokoban level generation after gym-sokoban's `room_utils`: a random-walk room
 * topology, the player and boxes placed with every box on its target, then
 * *reverse playing* (a depth-first search that pulls boxes off their targets)
 * keeps the state that scores best, and finally ROLL's few random player moves.
 * Every level is solvable by construction: the reverse moves, played forward,
 * solve it.
 *
 * @module
 */
import type { Rng } from "../random.ts";
import { DIRECTIONS, FLOOR, type SokobanLevel, TARGET, WALL } from "./level.ts";

/** Options of {@linkcode generateLevel}, gym-sokoban's arguments. */
export interface GenerateOptions {
  /** Rows and columns, walls included. */
  rows: number;
  cols: number;
  /** Boxes (and targets). */
  numBoxes: number;
  /** Random-walk steps; gym-sokoban's default is `int(1.7 * (rows + cols))`. */
  numSteps?: number;
  /** Probability that the walk changes direction at a step (0.35). */
  pChangeDirections?: number;
  /** Depth of the reverse-playing search (gym-sokoban's `ttl`, ROLL's `search_depth`). */
  searchDepth: number;
  /** Rooms drawn before giving up when no box can be moved (4). */
  tries?: number;
  /** States the reverse search explores at most (300,000). */
  maxStates?: number;
  /** ROLL's random player walk after reverse playing (default true). */
  randomPlayerMoves?: boolean;
}

/** A generated level and how it was made. */
export interface GeneratedLevel extends SokobanLevel {
  /** box_swaps x total box displacement of the chosen state. */
  score: number;
  /** Total Manhattan distance of the boxes from their targets. */
  displacement: number;
}

/** The generator could not make a level (too small a room, or no box could move). */
export class SokobanGenerationError extends Error {
  /** An error naming what failed and what was expected. */
  constructor(message: string) {
    super(message);
    this.name = "SokobanGenerationError";
  }
}

/** The 3x3 masks the walk stamps: floor where 1. */
const MASKS: ReadonlyArray<readonly number[]> = [
  [0, 0, 0, 1, 1, 1, 0, 0, 0],
  [0, 1, 0, 0, 1, 0, 0, 1, 0],
  [0, 0, 0, 1, 1, 0, 0, 1, 0],
  [0, 0, 0, 1, 1, 0, 1, 1, 0],
  [0, 0, 0, 0, 1, 1, 0, 1, 0],
];

/** The walk's directions, gym-sokoban's order. */
const WALK: ReadonlyArray<readonly [number, number]> = [[1, 0], [0, 1], [-1, 0], [0, -1]];

/**
 * A room of walls and floor carved by a random walk: start inside the room,
 * change direction with probability `pChange` at each step, step (clamped to the
 * interior) and stamp a random 3x3 mask of floor; the border stays wall.
 *
 * @example
 * ```ts
 * import { roomTopology } from "./generate.ts";
 * import { Rng } from "../random.ts";
 * const room = roomTopology(6, 6, 20, 0.35, new Rng(1));
 * console.log(room.length); // 36
 * ```
 */
export function roomTopology(
  rows: number,
  cols: number,
  numSteps: number,
  pChange: number,
  rng: Rng,
): Uint8Array {
  const level = new Uint8Array(rows * cols);
  let direction = rng.pick(WALK);
  // randint(1, dim - 1) is inclusive in Python.
  let r = 1 + rng.int(rows - 1), c = 1 + rng.int(cols - 1);
  for (let s = 0; s < numSteps; s++) {
    if (rng.float() < pChange) direction = rng.pick(WALK);
    r = Math.max(Math.min(r + direction[0], rows - 2), 1);
    c = Math.max(Math.min(c + direction[1], cols - 2), 1);
    const mask = rng.pick(MASKS);
    for (let i = 0; i < 9; i++) {
      if (mask[i]) level[(r - 1 + Math.floor(i / 3)) * cols + (c - 1 + (i % 3))] = FLOOR;
    }
  }
  for (let i = 0; i < cols; i++) level[i] = level[(rows - 1) * cols + i] = WALL;
  for (let j = 0; j < rows; j++) level[j * cols] = level[j * cols + cols - 1] = WALL;
  return level;
}

/**
 * Places the player on a random floor cell, then `numBoxes` targets on random
 * remaining floor cells (gym-sokoban: the boxes start on their targets). Throws
 * {@linkcode SokobanGenerationError} when there are not more floor cells than
 * boxes plus the player.
 */
export function placePlayerAndTargets(
  room: Uint8Array,
  numBoxes: number,
  rng: Rng,
): { fixed: Uint8Array; player: number; targets: number[] } {
  const fixed = new Uint8Array(room);
  const floors = () => [...fixed.keys()].filter((i) => fixed[i] === FLOOR);
  const free = floors();
  if (free.length <= numBoxes + 1) {
    throw new SokobanGenerationError(
      `Not enough free cells (${free.length}) to place the player and ${numBoxes} boxes`,
    );
  }
  const player = rng.pick(free);
  const targets: number[] = [];
  for (let n = 0; n < numBoxes; n++) {
    const cells = floors().filter((i) => i !== player);
    const t = rng.pick(cells);
    fixed[t] = TARGET;
    targets.push(t);
  }
  return { fixed, player, targets };
}

/** The state reverse playing keeps. */
interface ReverseResult {
  player: number;
  boxes: number[];
  score: number;
  displacement: number;
}

/**
 * gym-sokoban's reverse playing: from the solved state, a depth-first search over
 * pull moves (the player steps and drags the box behind it) and plain moves, to
 * depth `ttl` and at most `maxStates` distinct states, scoring each state
 * `box_swaps x total displacement` (0 while a box or the player stands on a
 * target) and keeping the best. `boxes[i]` is the box that started on
 * `targets[i]`. States are told apart by the player's and the boxes' cells.
 */
export function reversePlaying(
  fixed: Uint8Array,
  cols: number,
  player: number,
  targets: readonly number[],
  ttl: number,
  maxStates = 300_000,
): ReverseResult {
  const occupied = new Int16Array(fixed.length).fill(-1); // box index per cell
  const boxes = [...targets];
  boxes.forEach((b, i) => occupied[b] = i);
  const deltas = DIRECTIONS.map(([dr, dc]) => dr * cols + dc);
  const explored = new Set<string>();
  let best: ReverseResult = { player, boxes: [...boxes], score: -1, displacement: 0 };

  const displacementOf = () => {
    let d = 0;
    for (let i = 0; i < boxes.length; i++) {
      const a = boxes[i]!, t = targets[i]!;
      d += Math.abs(Math.floor(a / cols) - Math.floor(t / cols)) +
        Math.abs((a % cols) - (t % cols));
    }
    return d;
  };
  const keyOf = (p: number) => String.fromCharCode(p, ...[...boxes].sort((a, b) => a - b));

  const search = (p: number, swaps: number, lastPull: number, depth: number): void => {
    depth -= 1;
    if (depth <= 0 || explored.size >= maxStates) return;
    const key = keyOf(p);
    if (explored.has(key)) return;
    const displacement = displacementOf();
    let score = swaps * displacement;
    if (fixed[p] === TARGET || boxes.some((b) => fixed[b] === TARGET)) score = 0;
    if (score > best.score) best = { player: p, boxes: [...boxes], score, displacement };
    explored.add(key);
    for (let action = 0; action < 8; action++) {
      const d = deltas[action % 4]!;
      const next = p + d;
      if (fixed[next] === WALL || occupied[next]! >= 0) continue; // the state would not change
      const behind = p - d;
      const pulled = action < 4 ? occupied[behind]! : -1;
      if (pulled >= 0) {
        occupied[behind] = -1;
        occupied[p] = pulled;
        boxes[pulled] = p;
      }
      const nextPull = pulled >= 0 ? pulled : lastPull;
      search(next, nextPull !== lastPull ? swaps + 1 : swaps, nextPull, depth);
      if (pulled >= 0) {
        occupied[p] = -1;
        occupied[behind] = pulled;
        boxes[pulled] = behind;
      }
    }
  };
  search(player, 0, -1, ttl);
  return best;
}

/**
 * ROLL's random player walk after reverse playing: with probability `moveProb`,
 * up to `maxSteps` moves to random free cells not visited yet, continuing after
 * each with probability `continueProb`. The level stays solvable (the player can
 * walk back).
 */
export function randomPlayerMoves(
  fixed: Uint8Array,
  cols: number,
  player: number,
  boxes: readonly number[],
  rng: Rng,
  moveProb: number,
  continueProb = 0.5,
  maxSteps = 3,
): number {
  if (rng.float() > moveProb) return player;
  const boxSet = new Set(boxes);
  const visited = [player];
  let p = player;
  for (let steps = 0; steps < maxSteps;) {
    const options = DIRECTIONS.map(([dr, dc]) => p + dr * cols + dc)
      .filter((n) => fixed[n] !== WALL && !boxSet.has(n) && !visited.includes(n));
    if (options.length === 0) break;
    p = rng.pick(options);
    visited.push(p);
    steps++;
    if (steps >= maxSteps || rng.float() > continueProb) break;
  }
  return p;
}

/**
 * A solvable level, gym-sokoban's `generate_room` with ROLL's random player
 * moves: up to `tries` rooms (topology, placement, reverse playing) until one
 * has a positive score. Throws {@linkcode SokobanGenerationError} when none has.
 *
 * @example
 * ```ts
 * import { generateLevel } from "./generate.ts";
 * import { Rng } from "../random.ts";
 * const level = generateLevel({ rows: 6, cols: 6, numBoxes: 1, searchDepth: 30 }, new Rng(3));
 * console.log(level.boxes.length, level.score > 0); // 1 true
 * ```
 */
export function generateLevel(options: GenerateOptions, rng: Rng): GeneratedLevel {
  const { rows, cols, numBoxes, searchDepth } = options;
  const numSteps = options.numSteps ?? Math.floor(1.7 * (rows + cols));
  const tries = options.tries ?? 4;
  let result: (ReverseResult & { fixed: Uint8Array }) | undefined;
  for (let t = 0; t < tries; t++) {
    const room = roomTopology(rows, cols, numSteps, options.pChangeDirections ?? 0.35, rng);
    const { fixed, player, targets } = placePlayerAndTargets(room, numBoxes, rng);
    const best = reversePlaying(fixed, cols, player, targets, searchDepth, options.maxStates);
    result = { ...best, fixed };
    if (best.score > 0) break;
  }
  if (!result || result.score <= 0) {
    throw new SokobanGenerationError(`Generated a level with score 0 in ${tries} tries`);
  }
  let player = result.player;
  if (options.randomPlayerMoves ?? true) {
    const moveProb = result.displacement === 1 ? 0.8 : 0.5;
    player = randomPlayerMoves(result.fixed, cols, player, result.boxes, rng, moveProb);
  }
  return {
    rows,
    cols,
    fixed: result.fixed,
    player,
    boxes: result.boxes,
    score: result.score,
    displacement: result.displacement,
  };
}
