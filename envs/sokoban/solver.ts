/**
 * A Sokoban solver: breadth-first search over (player, boxes) states with
 * gym-sokoban's moves, so the plan has the fewest actions. Pushing a box onto a
 * cell from which no target can be reached is pruned (a simple deadlock).
 *
 * @module
 */
import { DIRECTIONS, type SokobanLevel, TARGET, WALL } from "./level.ts";

/** gym-sokoban's action ids of the four directions: 1 Up, 2 Down, 3 Left, 4 Right. */
export const SOKOBAN_ACTION_IDS: readonly number[] = [1, 2, 3, 4];

/**
 * The cells a box can stand on and still reach some target: those from which a
 * box can be pushed onto a target with the player behind it (walls only, other
 * boxes ignored).
 *
 * @example
 * ```ts
 * import { liveCells } from "./solver.ts";
 * import { parseLevel } from "./level.ts";
 * const level = parseLevel("#####\n#P_O#\n#####");
 * console.log([...liveCells(level)].map(Number)); // [0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]
 * ```
 */
export function liveCells(level: SokobanLevel): Uint8Array {
  const { fixed, cols } = level;
  const live = new Uint8Array(fixed.length);
  const queue: number[] = [];
  fixed.forEach((v, i) => {
    if (v === TARGET) {
      live[i] = 1;
      queue.push(i);
    }
  });
  const deltas = DIRECTIONS.map(([dr, dc]) => dr * cols + dc);
  const open = (i: number) => i >= 0 && i < fixed.length && fixed[i] !== WALL;
  for (let head = 0; head < queue.length; head++) {
    const b = queue[head]!;
    for (const d of deltas) {
      // The box came from b - d, pushed by a player standing at b - 2d.
      const from = b - d, player = b - 2 * d;
      if (open(from) && open(player) && !live[from]) {
        live[from] = 1;
        queue.push(from);
      }
    }
  }
  return live;
}

/** Options of {@linkcode solveSokoban}. */
export interface SolveOptions {
  /** States explored before giving up (default 2,000,000). */
  maxStates?: number;
}

/**
 * The shortest action sequence (gym-sokoban ids, 1 Up, 2 Down, 3 Left, 4 Right)
 * that puts every box on a target, `[]` when they already are, or undefined
 * when there is none (or the search passes `maxStates`).
 *
 * @example
 * ```ts
 * import { solveSokoban } from "./solver.ts";
 * import { parseLevel } from "./level.ts";
 * console.log(solveSokoban(parseLevel("######\n#P_XO#\n######"))); // [4, 4]
 * ```
 */
export function solveSokoban(
  level: SokobanLevel,
  options: SolveOptions = {},
): number[] | undefined {
  const { fixed, cols } = level;
  const maxStates = options.maxStates ?? 2_000_000;
  const n = level.boxes.length;
  const live = liveCells(level);
  const deltas = DIRECTIONS.map(([dr, dc]) => dr * cols + dc);
  const isGoal = (boxes: readonly number[]) => boxes.every((b) => fixed[b] === TARGET);
  const start = [...level.boxes].sort((a, b) => a - b);
  if (isGoal(start)) return [];

  // State i: player players[i], boxes boxesFlat[i*n .. i*n+n) sorted.
  const players: number[] = [level.player];
  const boxesFlat: number[] = [...start];
  const parent: number[] = [-1];
  const via: number[] = [0];
  const seen = new Set<string>([key(level.player, start)]);
  const occupied = new Uint8Array(fixed.length);
  for (let head = 0; head < players.length; head++) {
    const p = players[head]!;
    const boxes = boxesFlat.slice(head * n, head * n + n);
    for (const b of boxes) occupied[b] = 1;
    for (let a = 0; a < 4; a++) {
      const d = deltas[a]!;
      const next = p + d;
      if (fixed[next] === WALL) continue;
      let nextBoxes = boxes;
      if (occupied[next]) {
        const beyond = next + d;
        if (fixed[beyond] === WALL || occupied[beyond] || !live[beyond]) continue;
        nextBoxes = boxes.map((b) => (b === next ? beyond : b)).sort((x, y) => x - y);
      }
      const k = key(next, nextBoxes);
      if (seen.has(k)) continue;
      seen.add(k);
      players.push(next);
      boxesFlat.push(...nextBoxes);
      parent.push(head);
      via.push(a);
      if (nextBoxes !== boxes && isGoal(nextBoxes)) {
        for (const b of boxes) occupied[b] = 0;
        const plan: number[] = [];
        for (let s = players.length - 1; s > 0; s = parent[s]!) {
          plan.push(SOKOBAN_ACTION_IDS[via[s]!]!);
        }
        return plan.reverse();
      }
      if (seen.size > maxStates) {
        for (const b of boxes) occupied[b] = 0;
        return undefined;
      }
    }
    for (const b of boxes) occupied[b] = 0;
  }
  return undefined;
}

function key(player: number, boxes: readonly number[]): string {
  return String.fromCharCode(player, ...boxes);
}
