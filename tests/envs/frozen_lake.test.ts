/**
 * FrozenLake against gymnasium's rules: a transition table built here the way
 * gymnasium builds `P` (an independent reference), hand-played sequences on
 * gymnasium's 4x4 map, the slippery 1/3 distribution, determinism by seed, and
 * random maps that are reproducible and always solvable.
 */
import { deepStrictEqual, equal, notDeepStrictEqual, ok, throws } from "node:assert/strict";
import {
  createFrozenLakeEnv,
  describeFrozenLakeBoard,
  FROZEN_LAKE_COLORS,
  FROZEN_LAKE_TILE,
  generateRandomMap,
  isValidMap,
  shortestPath,
} from "../../envs/frozen_lake/mod.ts";
import { getPixel } from "../../envs/frames/canvas.ts";
import { Rng } from "../../envs/random.ts";

/** Gymnasium's 4x4 map. */
const MAP_4X4 = ["SFFF", "FHFH", "FFFH", "HFFG"];
const ACTIONS = ["Left", "Down", "Right", "Up"];
const act = (i: number) => `<answer>${ACTIONS[i]}</answer>`;

/** Gymnasium's transition table: P[s][a] = [(prob, next, reward, terminated)]. */
function gymnasiumP(desc: readonly string[], slippery: boolean) {
  const nrow = desc.length, ncol = desc[0]!.length;
  const inc = (row: number, col: number, a: number): [number, number] => {
    if (a === 0) col = Math.max(col - 1, 0);
    else if (a === 1) row = Math.min(row + 1, nrow - 1);
    else if (a === 2) col = Math.min(col + 1, ncol - 1);
    else row = Math.max(row - 1, 0);
    return [row, col];
  };
  const P: Array<Array<Array<[number, number, number, boolean]>>> = [];
  for (let row = 0; row < nrow; row++) {
    for (let col = 0; col < ncol; col++) {
      const s = row * ncol + col;
      P[s] = [];
      for (let a = 0; a < 4; a++) {
        const li: Array<[number, number, number, boolean]> = [];
        const letter = desc[row]![col];
        if (letter === "G" || letter === "H") li.push([1, s, 0, true]);
        else {
          for (const b of slippery ? [(a + 3) % 4, a, (a + 1) % 4] : [a]) {
            const [nr, nc] = inc(row, col, b);
            const l = desc[nr]![nc]!;
            li.push([slippery ? 1 / 3 : 1, nr * ncol + nc, l === "G" ? 1 : 0, "GH".includes(l)]);
          }
        }
        P[s]![a] = li;
      }
    }
  }
  return P;
}

Deno.test("a hand-played episode on gymnasium's 4x4 map (not slippery)", () => {
  const env = createFrozenLakeEnv({ size: 4, is_slippery: false, max_steps: 100 });
  const r0 = env.resetToMap(MAP_4X4);
  equal(r0.observation, "P___\n_O_O\n___O\nO__G");
  // Left into the border: no move, valid but not effective.
  let r = env.step(act(0));
  deepStrictEqual([r.reward, r.terminated, r.info.metrics.action_is_effective], [0, false, false]);
  equal(r.info.metrics.action_is_valid, true);
  for (const a of [2, 2, 1, 1, 1]) {
    r = env.step(act(a));
    equal(r.terminated, false);
    equal(r.reward, 0);
  }
  equal(env.position, 14);
  equal(r.observation, "____\n_O_O\n___O\nO_PG");
  r = env.step(act(2));
  deepStrictEqual([r.reward, r.terminated, r.truncated], [1, true, false]);
  equal(r.info.metrics.success, true);
  equal(r.observation, "____\n_O_O\n___O\nO__√");
});

Deno.test("falling into a hole terminates with reward 0 and shows X", () => {
  const env = createFrozenLakeEnv({ size: 4, is_slippery: false });
  env.resetToMap(MAP_4X4);
  env.step(act(2));
  const r = env.step(act(1));
  deepStrictEqual([r.reward, r.terminated, r.info.metrics.success], [0, true, false]);
  equal(r.observation, "____\n_X_O\n___O\nO__G");
  // After the end nothing changes.
  const after = env.step(act(2));
  deepStrictEqual([after.reward, after.terminated, after.observation], [0, true, r.observation]);
  equal(after.info.metrics.action_is_effective, false);
});

Deno.test("an invalid action: state unchanged, reward = format_penalty, not terminated", () => {
  const env = createFrozenLakeEnv({ is_slippery: false, format_penalty: -0.01, max_steps: 3 });
  env.resetToMap(MAP_4X4);
  for (const [i, text] of ["<answer>Jump</answer>", "Left", "<answer>Left"].entries()) {
    const r = env.step(text);
    equal(r.reward, -0.01);
    equal(r.terminated, false);
    equal(r.observation, "P___\n_O_O\n___O\nO__G");
    deepStrictEqual(r.info.metrics, {
      action_is_valid: false,
      action_is_effective: false,
      success: false,
      format_penalty: -0.01,
    });
    // Every action counts toward max_steps: the third one truncates.
    equal(r.truncated, i === 2);
  }
});

Deno.test("max_steps truncates unless the same step terminates", () => {
  const env = createFrozenLakeEnv({ is_slippery: false, max_steps: 2 });
  env.resetToMap(MAP_4X4);
  equal(env.step(act(3)).truncated, false);
  const r = env.step(act(3));
  deepStrictEqual([r.terminated, r.truncated], [false, true]);
  env.resetToMap(["SG__".replaceAll("_", "F"), "FFFF", "FFFF", "FFFF"]);
  env.step(act(0));
  const last = env.step(act(2));
  deepStrictEqual([last.terminated, last.truncated, last.reward], [true, false, 1]);
});

Deno.test("random maps and action sequences follow gymnasium's transition table (not slippery)", () => {
  const env = createFrozenLakeEnv({ size: 5, p: 0.7, is_slippery: false, max_steps: 1000 });
  const rng = new Rng(1);
  for (let seed = 0; seed < 300; seed++) {
    env.reset(seed);
    const P = gymnasiumP(env.map, false);
    let s = env.position;
    for (let t = 0; t < 30; t++) {
      const a = rng.int(4);
      const [[, next, reward, done]] = P[s]![a]! as [[number, number, number, boolean]];
      const r = env.step(act(a));
      equal(env.position, next, `seed ${seed} step ${t}`);
      equal(r.reward, reward);
      equal(r.terminated, done);
      equal(r.info.metrics.action_is_effective, next !== s);
      s = next;
      if (done) break;
    }
  }
});

Deno.test("slippery: every outcome is one gymnasium allows, each with probability 1/3", () => {
  const env = createFrozenLakeEnv({ size: 5, is_slippery: true, max_steps: 10 });
  const open = ["FFFFF", "FFFFF", "FFSFF", "FFFFF", "FFFFG"];
  const P = gymnasiumP(open, true);
  const counts = [0, 0, 0, 0];
  const n = 6000;
  for (let i = 0; i < n; i++) {
    env.resetToMap(open, i);
    const a = i % 4;
    env.step(act(a));
    const allowed = P[12]![a]!.map(([, next]) => next);
    ok(allowed.includes(env.position), `outcome ${env.position} not in ${allowed}`);
    // Which of (a-1, a, a+1) happened.
    counts[allowed.indexOf(env.position)]! += 1;
  }
  // Chi-square with 2 degrees of freedom: 13.8 is the 0.1% critical value.
  const chi2 = counts.slice(0, 3).reduce((sum, c) => sum + (c - n / 3) ** 2 / (n / 3), 0);
  ok(chi2 < 13.8, `counts ${counts} (chi2 ${chi2.toFixed(2)})`);
});

Deno.test("slippery outcomes are reproducible by seed and differ across seeds", () => {
  const play = (seed: number) => {
    const env = createFrozenLakeEnv({ size: 6, is_slippery: true, max_steps: 50 });
    env.reset(seed);
    const trace: number[] = [env.position];
    for (let t = 0; t < 50; t++) {
      const r = env.step(act(t % 4));
      trace.push(env.position);
      if (r.terminated || r.truncated) break;
    }
    return { map: env.map.join("\n"), trace };
  };
  for (const seed of [0, 1, 17, 123456789, -5]) deepStrictEqual(play(seed), play(seed));
  notDeepStrictEqual(play(1), play(2));
});

Deno.test("random maps: reproducible by seed, one start and one goal, always solvable", () => {
  for (const [size, p] of [[4, 0.8], [6, 0.6], [8, 0.8], [3, 0.3]] as const) {
    const env = createFrozenLakeEnv({ size, p, is_slippery: false });
    const maps = new Set<string>();
    let holes = 0;
    for (let seed = 0; seed < 1000; seed++) {
      const text = env.reset(seed).observation;
      const map = env.map;
      equal(env.reset(seed).observation, text, "same seed, same map");
      deepStrictEqual(env.map, map);
      equal(map.length, size);
      equal(map.join("").split("S").length - 1, 1);
      equal(map.join("").split("G").length - 1, 1);
      ok(isValidMap(map), map.join("/"));
      const path = shortestPath(map, env.position);
      ok(path && path.length > 0, `seed ${seed}: no path`);
      holes += map.join("").split("H").length - 1;
      maps.add(map.join("/"));
    }
    // A 3x3 board has few solvable layouts; bigger ones almost never repeat.
    ok(maps.size > (size > 3 ? 900 : 200), `only ${maps.size} distinct ${size}x${size} maps`);
    // Redrawing unsolvable boards lowers the hole rate a little below 1 - p, never above.
    const rate = holes / (1000 * (size * size - 2));
    ok(rate < 1 - p + 0.02 && rate > (1 - p) * 0.6, `hole rate ${rate} for p ${p}`);
  }
});

Deno.test("generateRandomMap rejects sizes and probabilities out of range", () => {
  throws(() => generateRandomMap(1, 0.8, new Rng(0)), /size 1/);
  throws(() => generateRandomMap(4, 1.5, new Rng(0)), /p 1.5/);
});

Deno.test("the scripted oracle follows a shortest path to the goal", () => {
  const env = createFrozenLakeEnv({ size: 6, is_slippery: false, max_steps: 100 });
  for (let seed = 0; seed < 300; seed++) {
    env.reset(seed);
    const length = shortestPath(env.map, env.position)!.length;
    let steps = 0, r;
    do {
      r = env.step(env.oracleAction()!);
      steps++;
    } while (!r.terminated);
    equal(r.info.metrics.success, true);
    equal(steps, length);
    equal(env.oracleAction(), undefined);
  }
});

Deno.test("text render honours grid_lookup and action_lookup overrides (ROLL's keys)", () => {
  const env = createFrozenLakeEnv({
    is_slippery: false,
    grid_lookup: { 0: "A", 1: ".", 2: "#", 3: "*", 4: "x", 5: "!" },
    action_lookup: { 0: "west", 1: "south", 2: "east", 3: "north" },
    env_instruction: "Custom task.",
  });
  env.resetToMap(MAP_4X4);
  equal(env.render("text"), "A...\n.#.#\n...#\n#..*");
  equal(env.step("<answer>SOUTH</answer>").info.metrics.action_is_valid, true);
  equal(env.step("<answer>Down</answer>").info.metrics.action_is_valid, false);
  ok(env.instruction.startsWith("Custom task.\nThe meaning of each symbol"));
  ok(env.instruction.includes("west, south, east, north"));
});

Deno.test("rgb frames: one tile per cell, distinct colors per tile kind", () => {
  const env = createFrozenLakeEnv({ is_slippery: false });
  env.resetToMap(MAP_4X4);
  const f = env.render("rgb");
  const t = FROZEN_LAKE_TILE;
  equal(f.width, 4 * t);
  equal(f.data.length, f.width * f.height * 3);
  const centre = (r: number, c: number) => getPixel(f, c * t + t / 2, r * t + t / 2);
  deepStrictEqual(centre(0, 0), FROZEN_LAKE_COLORS.player);
  deepStrictEqual(centre(1, 1), FROZEN_LAKE_COLORS.hole);
  deepStrictEqual(centre(0, 1), FROZEN_LAKE_COLORS.ice);
  deepStrictEqual(getPixel(f, 3 * t + 3, 3 * t + t - 4), FROZEN_LAKE_COLORS.goal);
  const colors = new Set(Object.values(FROZEN_LAKE_COLORS).map((c) => c.join(",")));
  equal(colors.size, Object.keys(FROZEN_LAKE_COLORS).length);
});

Deno.test("describeFrozenLakeBoard: the four sides and the goal's direction, seen from the player", () => {
  equal(
    describeFrozenLakeBoard("_P__\nO__G\n__O_\n____"),
    "left ice, down ice, right ice, up edge; goal down right",
  );
  equal(
    describeFrozenLakeBoard("G___\n__O_\n_OP_\n____"),
    "left hole, down ice, right ice, up hole; goal up left",
  );
  // level with the goal on one axis: that direction is left out
  equal(
    describeFrozenLakeBoard("____\n__GP\n____\n___O"),
    "left goal, down ice, right edge, up ice; goal left",
  );
  equal(describeFrozenLakeBoard("P\nG"), "left edge, down goal, right edge, up edge; goal down");
  // an ended episode (X in a hole, √ on the goal), no goal, or a ragged or foreign board: null
  for (const board of ["X___\n___G", "√___\n____", "P___\n____", "P__\nG___", "P#_G", ""]) {
    equal(describeFrozenLakeBoard(board), null, JSON.stringify(board));
  }
  // the env's own renders always describe while the episode runs
  const env = createFrozenLakeEnv({ size: 4, is_slippery: false });
  for (let seed = 0; seed < 50; seed++) {
    const obs = env.reset(seed).observation;
    ok(describeFrozenLakeBoard(obs)?.includes("; goal "), obs);
  }
});
