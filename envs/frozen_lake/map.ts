/**
 * FrozenLake maps as gymnasium writes them (`S` start, `F` frozen, `H` hole,
 * `G` goal), generated like ROLL's and RAGEN's `generate_random_map`: every tile
 * frozen with probability `p`, start and goal at random distinct tiles, redrawn
 * until the goal is reachable from the start.
 *
 * @module
 */
import type { Rng } from "../random.ts";

/** A map: `size` rows of `size` characters from `SFHG`. */
export type FrozenLakeMap = readonly string[];

/** Row and column deltas of gymnasium's actions 0 Left, 1 Down, 2 Right, 3 Up. */
export const MOVES: ReadonlyArray<readonly [number, number]> = [[0, -1], [1, 0], [0, 1], [-1, 0]];

/**
 * Whether the goal can be reached from the start through non-hole tiles
 * (gymnasium's `is_valid`, a depth-first search from `S`).
 *
 * @example
 * ```ts
 * import { isValidMap } from "./map.ts";
 * console.log(isValidMap(["SH", "HG"])); // false
 * console.log(isValidMap(["SF", "HG"])); // true
 * ```
 */
export function isValidMap(map: FrozenLakeMap): boolean {
  const rows = map.length, cols = map[0]?.length ?? 0;
  let start = -1;
  for (let r = 0; r < rows; r++) {
    const c = map[r]!.indexOf("S");
    if (c >= 0) start = r * cols + c;
  }
  if (start < 0) return false;
  const seen = new Uint8Array(rows * cols);
  const stack = [start];
  while (stack.length > 0) {
    const s = stack.pop()!;
    if (seen[s]) continue;
    seen[s] = 1;
    const r = Math.floor(s / cols), c = s % cols;
    for (const [dr, dc] of MOVES) {
      const nr = r + dr, nc = c + dc;
      if (nr < 0 || nr >= rows || nc < 0 || nc >= cols) continue;
      const tile = map[nr]![nc];
      if (tile === "G") return true;
      if (tile !== "H") stack.push(nr * cols + nc);
    }
  }
  return false;
}

/**
 * A random solvable `size` x `size` map: each tile frozen with probability `p`
 * (else a hole), then a random start and a random distinct goal; the whole draw
 * repeats until {@linkcode isValidMap}. Deterministic given the generator's state.
 *
 * @example
 * ```ts
 * import { generateRandomMap } from "./map.ts";
 * import { Rng } from "../random.ts";
 * const map = generateRandomMap(4, 0.8, new Rng(0));
 * console.log(map.join("\n"));
 * ```
 */
export function generateRandomMap(size: number, p: number, rng: Rng): FrozenLakeMap {
  if (!Number.isInteger(size) || size < 2) {
    throw new RangeError(`FrozenLake size ${size} is not valid: expected an integer >= 2`);
  }
  if (!(p >= 0 && p <= 1)) {
    throw new RangeError(`FrozenLake p ${p} is not valid: expected a probability in [0, 1]`);
  }
  for (;;) {
    const board: string[][] = [];
    for (let r = 0; r < size; r++) {
      const row: string[] = [];
      for (let c = 0; c < size; c++) row.push(rng.float() < p ? "F" : "H");
      board.push(row);
    }
    const sr = rng.int(size), sc = rng.int(size);
    const gr = rng.int(size), gc = rng.int(size);
    if (sr === gr && sc === gc) continue;
    board[sr]![sc] = "S";
    board[gr]![gc] = "G";
    const map = board.map((row) => row.join(""));
    if (isValidMap(map)) return map;
  }
}

/**
 * The actions of a shortest path from tile `from` (row-major index) to the goal
 * through non-hole tiles, as gymnasium action ids (0 Left, 1 Down, 2 Right, 3 Up);
 * undefined when the goal cannot be reached. Ties go to the lower action id.
 *
 * @example
 * ```ts
 * import { shortestPath } from "./map.ts";
 * console.log(shortestPath(["SF", "HG"], 0)); // [2, 1]
 * ```
 */
export function shortestPath(map: FrozenLakeMap, from: number): number[] | undefined {
  const rows = map.length, cols = map[0]?.length ?? 0;
  const tileAt = (s: number) => map[Math.floor(s / cols)]![s % cols];
  if (tileAt(from) === "G") return [];
  if (tileAt(from) === "H") return undefined;
  const prev = new Int32Array(rows * cols).fill(-1);
  const how = new Int8Array(rows * cols);
  prev[from] = from;
  const queue = [from];
  for (let head = 0; head < queue.length; head++) {
    const s = queue[head]!;
    const r = Math.floor(s / cols), c = s % cols;
    for (let a = 0; a < 4; a++) {
      const [dr, dc] = MOVES[a]!;
      const nr = r + dr, nc = c + dc;
      if (nr < 0 || nr >= rows || nc < 0 || nc >= cols) continue;
      const n = nr * cols + nc;
      if (prev[n] !== -1 || tileAt(n) === "H") continue;
      prev[n] = s;
      how[n] = a;
      if (tileAt(n) === "G") {
        const path: number[] = [];
        for (let x = n; x !== from; x = prev[x]!) path.push(how[x]!);
        return path.reverse();
      }
      queue.push(n);
    }
  }
  return undefined;
}
