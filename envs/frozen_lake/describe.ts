/**
 * What a player sees on a FrozenLake text board: where the goal lies (its
 * direction, not its distance) and what is on each of the four sides. This is
 * perception, not a policy: it names no move. The tiny base model learns to
 * write it in `<think>` before a (random) answer, so that what a policy needs
 * sits in the few tokens just before its decision.
 *
 * @module
 */

/** Names of the tiles a side can show, by the default text symbols. */
const SIDE_NAMES: Readonly<Record<string, string>> = { _: "ice", O: "hole", G: "goal" };

/** The sides in gymnasium's action order (0 Left, 1 Down, 2 Right, 3 Up). */
const SIDES: ReadonlyArray<readonly [string, number, number]> = [
  ["left", 0, -1],
  ["down", 1, 0],
  ["right", 0, 1],
  ["up", -1, 0],
];

/**
 * The description of a FrozenLake text board (ROLL's symbols: rows of
 * `P _ O G`), or null when it shows no player or no goal (an episode that has
 * ended: `X` in a hole, `√` on the goal) or is not a rectangular board.
 * Format: `left <tile>, down <tile>, right <tile>, up <tile>; goal <down|up>
 * <left|right>`, a tile one of `ice`, `hole`, `goal`, `edge`, and a direction
 * left out when the goal is level with the player on that axis. The goal's
 * direction comes last, next to the answer that follows the description.
 *
 * @example
 * ```ts
 * import { describeFrozenLakeBoard } from "./describe.ts";
 * console.log(describeFrozenLakeBoard("_P__\nO__G\n__O_\n____"));
 * // "left ice, down ice, right ice, up edge; goal down right"
 * ```
 */
export function describeFrozenLakeBoard(observation: string): string | null {
  const rows = observation.split("\n").map((row) => [...row]);
  const width = rows[0]?.length ?? 0;
  if (width === 0 || rows.some((row) => row.length !== width)) return null;
  let player: [number, number] | null = null;
  let goal: [number, number] | null = null;
  for (let r = 0; r < rows.length; r++) {
    for (let c = 0; c < width; c++) {
      const tile = rows[r]![c]!;
      if (tile === "P") player = [r, c];
      else if (tile === "G") goal = [r, c];
      else if (!(tile in SIDE_NAMES)) return null;
    }
  }
  if (player === null || goal === null) return null;
  const [pr, pc] = player;
  const [gr, gc] = goal;
  const where = [gr > pr ? "down" : gr < pr ? "up" : "", gc > pc ? "right" : gc < pc ? "left" : ""]
    .filter((d) => d !== "");
  const sides = SIDES.map(([name, dr, dc]) => {
    const r = pr + dr, c = pc + dc;
    const tile = r < 0 || c < 0 || r >= rows.length || c >= width
      ? "edge"
      : SIDE_NAMES[rows[r]![c]!];
    return `${name} ${tile}`;
  });
  return `${sides.join(", ")}; goal ${where.join(" ")}`;
}
