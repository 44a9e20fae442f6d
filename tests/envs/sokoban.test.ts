/**
 * Sokoban against gym-sokoban's rules: rewards and push moves on hand-made
 * levels, reverse playing on a hand-computed corridor, and 500 generated levels
 * per ROLL preset checked for shape, reproducibility and solvability by a
 * push-level breadth-first search written here (independent of the env's own
 * move-level solver, whose plans are replayed too).
 */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import {
  createSokobanEnv,
  parseLevel,
  reversePlaying,
  SOKOBAN_COLORS,
  SOKOBAN_TILE,
  SokobanConfig,
  type SokobanLevel,
  solveSokoban,
} from "../../envs/sokoban/mod.ts";
import { getPixel } from "../../envs/frames/canvas.ts";

const up = "<answer>Up</answer>", down = "<answer>Down</answer>";
const left = "<answer>Left</answer>", right = "<answer>Right</answer>";

function close(actual: number, expected: number, label = "") {
  ok(Math.abs(actual - expected) < 1e-9, `${label} reward ${actual}, expected ${expected}`);
}

/** ROLL's presets as the shipped configs write them. */
const PRESETS: Record<string, Record<string, unknown>> = {
  SimpleSokoban: { dim_room: [6, 6], num_boxes: 1 },
  LargerSokoban: { dim_room: [8, 8], num_boxes: 2, search_depth: 10 },
  SokobanDifferentGridVocab: { dim_room: [6, 6], num_boxes: 1, search_depth: 30 },
};

/**
 * Minimum number of pushes to solve a level, or -1: breadth-first search over
 * (player's reachable region, boxes), one push per edge.
 */
function minPushes(level: SokobanLevel, limit = 200_000): number {
  const { fixed, cols } = level;
  const dirs = [-cols, cols, -1, 1];
  const solved = (boxes: number[]) => boxes.every((b) => fixed[b] === 2);
  const region = (player: number, boxes: Set<number>) => {
    const seen = new Set([player]);
    const stack = [player];
    while (stack.length) {
      const p = stack.pop()!;
      for (const d of dirs) {
        const n = p + d;
        if (fixed[n] !== 0 && !boxes.has(n) && !seen.has(n)) {
          seen.add(n);
          stack.push(n);
        }
      }
    }
    return seen;
  };
  const keyOf = (reach: Set<number>, boxes: number[]) =>
    `${Math.min(...reach)}|${[...boxes].sort((a, b) => a - b).join(",")}`;
  let frontier: Array<[number, number[]]> = [[level.player, [...level.boxes]]];
  const seen = new Set([keyOf(region(level.player, new Set(level.boxes)), level.boxes)]);
  for (let pushes = 0; frontier.length > 0 && seen.size < limit; pushes++) {
    const next: Array<[number, number[]]> = [];
    for (const [player, boxes] of frontier) {
      if (solved(boxes)) return pushes;
      const boxSet = new Set(boxes);
      const reach = region(player, boxSet);
      for (const [i, b] of boxes.entries()) {
        for (const d of dirs) {
          if (!reach.has(b - d) || fixed[b + d] === 0 || boxSet.has(b + d)) continue;
          const moved = boxes.with(i, b + d);
          const k = keyOf(region(b, new Set(moved)), moved);
          if (seen.has(k)) continue;
          seen.add(k);
          next.push([b, moved]);
        }
      }
    }
    frontier = next;
  }
  return -1;
}

/** Fewest moves to solve a level by plain breadth-first search over moves (no pruning), or -1. */
function minMoves(level: SokobanLevel): number {
  const { fixed, cols } = level;
  const dirs = [-cols, cols, -1, 1];
  const key = (p: number, boxes: number[]) => `${p}|${[...boxes].sort((a, b) => a - b)}`;
  let frontier: Array<[number, number[]]> = [[level.player, level.boxes]];
  const seen = new Set([key(level.player, level.boxes)]);
  for (let moves = 0; frontier.length > 0; moves++) {
    const next: Array<[number, number[]]> = [];
    for (const [p, boxes] of frontier) {
      if (boxes.every((b) => fixed[b] === 2)) return moves;
      for (const d of dirs) {
        const n = p + d;
        if (fixed[n] === 0) continue;
        let moved = boxes;
        const i = boxes.indexOf(n);
        if (i >= 0) {
          if (fixed[n + d] === 0 || boxes.includes(n + d)) continue;
          moved = boxes.with(i, n + d);
        }
        const k = key(n, moved);
        if (!seen.has(k)) {
          seen.add(k);
          next.push([n, moved]);
        }
      }
    }
    frontier = next;
  }
  return -1;
}

Deno.test("the push-level reference solver agrees with hand-made levels", () => {
  equal(minPushes(parseLevel("######\n#PXO_#\n######")), 1);
  equal(minPushes(parseLevel("######\n#P_XO#\n######")), 1);
  equal(minPushes(parseLevel("######\n#OXP_#\n######")), 1);
  equal(minPushes(parseLevel("#####\n#PX_#\n#__O#\n#####")), -1); // box against the top wall
  equal(minPushes(parseLevel("######\n#P√__#\n######")), 0);
});

Deno.test("rewards: -0.1 per step, +1 onto a target, +10 when all are placed", () => {
  const env = createSokobanEnv({ dim_room: [6, 6], num_boxes: 2, max_steps: 50 });
  env.resetToLevel(parseLevel("######\n#PXO_#\n#_XO_#\n#____#\n######"));
  const expected = [[right, 0.9, false], [left, -0.1, false], [down, -0.1, false], [
    right,
    10.9,
    true,
  ]] as const;
  for (const [action, reward, done] of expected) {
    const r = env.step(action);
    close(r.reward, reward, action);
    equal(r.terminated, done);
  }
  equal(env.boxesOnTarget, 2);
  equal(env.render("text"), "######\n#__√_#\n#_P√_#\n#____#\n######");
});

Deno.test("rewards: -1 for pushing a box off a target; blocked pushes and walls cost -0.1", () => {
  const env = createSokobanEnv({ dim_room: [6, 6], num_boxes: 2, max_steps: 50 });
  env.resetToLevel(parseLevel("########\n#P√_XO_#\n########"));
  equal(env.boxesOnTarget, 1);
  let r = env.step(right); // box off its target
  close(r.reward, -1.1);
  deepStrictEqual([env.boxesOnTarget, r.info.metrics.action_is_effective], [0, true]);
  equal(r.observation, "########\n#_SXXO_#\n########");
  r = env.step(right); // two boxes in a row cannot be pushed, and the player cannot walk in
  close(r.reward, -0.1);
  equal(r.info.metrics.action_is_effective, false);
  r = env.step(up); // wall
  close(r.reward, -0.1);
  equal(r.info.metrics.action_is_effective, false);
  equal(r.info.metrics.action_is_valid, true);
});

Deno.test("a solved push: box on target, player follows, episode ends with success", () => {
  const env = createSokobanEnv({ dim_room: [6, 6], num_boxes: 1 });
  env.resetToLevel(parseLevel("######\n#PXO_#\n######"));
  const r = env.step(right);
  close(r.reward, 10.9);
  deepStrictEqual([r.terminated, r.truncated, r.info.metrics.success], [true, false, true]);
  equal(r.observation, "######\n#_P√_#\n######");
});

Deno.test("an invalid action changes nothing and costs format_penalty; max_steps truncates", () => {
  const env = createSokobanEnv({
    dim_room: [6, 6],
    num_boxes: 1,
    format_penalty: -0.15,
    max_steps: 3,
  });
  env.resetToLevel(parseLevel("######\n#P_XO#\n######"));
  let r = env.step("<answer>Jump</answer>");
  close(r.reward, -0.15);
  deepStrictEqual([r.terminated, r.truncated, r.observation], [
    false,
    false,
    "######\n#P_XO#\n######",
  ]);
  deepStrictEqual(r.info.metrics, {
    action_is_valid: false,
    action_is_effective: false,
    success: false,
    format_penalty: -0.15,
  });
  r = env.step(left); // wall: valid, not effective
  equal(r.info.metrics.format_penalty, 0);
  r = env.step(right);
  deepStrictEqual([r.terminated, r.truncated], [false, true]);
});

Deno.test("reverse playing on a corridor: pulls score box_swaps x displacement (hand-computed)", () => {
  const fixed = parseLevel("######\n#__PO#\n######").fixed; // the target is cell 10
  // The box starts on its target (cell 10), the player beside it (cell 9).
  deepStrictEqual(reversePlaying(fixed, 6, 9, [10], 300), {
    player: 7,
    boxes: [8],
    score: 2,
    displacement: 2,
  });
  // ttl 2 explores only the start (score 0); ttl 3 one pull (score 1).
  equal(reversePlaying(fixed, 6, 9, [10], 2).score, 0);
  deepStrictEqual(reversePlaying(fixed, 6, 9, [10], 3), {
    player: 8,
    boxes: [9],
    score: 1,
    displacement: 1,
  });
});

for (const [name, config] of Object.entries(PRESETS)) {
  Deno.test(`${name}: 500 generated levels are well-formed, reproducible and solvable`, () => {
    const env = createSokobanEnv(config);
    const twin = createSokobanEnv(config);
    const [rows, cols] = config.dim_room as [number, number];
    const distinct = new Set<string>();
    for (let seed = 0; seed < 500; seed++) {
      const text = env.reset(seed).observation;
      equal(twin.reset(seed).observation, text, `seed ${seed} not reproducible`);
      distinct.add(text);
      const level = env.level;
      deepStrictEqual([level.rows, level.cols], [rows, cols]);
      for (let c = 0; c < cols; c++) {
        equal(level.fixed[c], 0);
        equal(level.fixed[(rows - 1) * cols + c], 0);
      }
      for (let r = 0; r < rows; r++) {
        equal(level.fixed[r * cols], 0);
        equal(level.fixed[r * cols + cols - 1], 0);
      }
      equal(level.boxes.length, config.num_boxes);
      equal([...level.fixed].filter((v) => v === 2).length, config.num_boxes);
      equal(new Set(level.boxes).size, level.boxes.length);
      ok(level.boxes.every((b) => level.fixed[b] === 1), "a box starts on a target");
      ok(level.fixed[level.player] !== 0 && !level.boxes.includes(level.player));
      ok(minPushes(level) > 0, `seed ${seed} is not solvable:\n${text}`);
    }
    ok(distinct.size > 450, `only ${distinct.size} distinct levels`);
  });

  Deno.test(`${name}: the env's solver finds shortest plans that replay to success`, () => {
    const env = createSokobanEnv({ ...config, max_steps: 1000 });
    for (let seed = 0; seed < 150; seed++) {
      env.reset(seed);
      const plan = solveSokoban(env.level)!;
      ok(plan && plan.length > 0);
      equal(plan.length, minMoves(env.level), `seed ${seed}: not a shortest plan`);
      let r;
      let total = 0;
      for (let i = 0; i < plan.length; i++) {
        const oracle = env.oracleAction()!;
        equal(oracle, `<answer>${["Up", "Down", "Left", "Right"][plan[i]! - 1]}</answer>`);
        r = env.step(oracle);
        total += r.reward;
      }
      equal(r!.terminated, true);
      equal(r!.info.metrics.success, true);
      ok(total > 10 - 0.1 * plan.length - 1e-9);
    }
  });
}

Deno.test("ROLL's default (10x10, 4 boxes, search_depth 300) generates well-formed levels", () => {
  const env = createSokobanEnv({});
  for (let seed = 0; seed < 3; seed++) {
    const level = (env.reset(seed), env.level);
    equal(level.boxes.length, 4);
    equal([...level.fixed].filter((v) => v === 2).length, 4);
    ok(level.boxes.every((b) => level.fixed[b] === 1));
  }
});

Deno.test("SokobanDifferentGridVocab renders with W . G C B A @", () => {
  const env = createSokobanEnv({
    dim_room: [6, 6],
    num_boxes: 1,
    search_depth: 30,
    grid_lookup: { 0: "W", 1: ".", 2: "G", 3: "C", 4: "B", 5: "A", 6: "@" },
    grid_vocab: {
      W: "wall",
      ".": "empty",
      G: "target",
      C: "box on target",
      B: "box",
      A: "player",
      "@": "player on target",
    },
  });
  env.resetToLevel(parseLevel("######\n#PXO_#\n#_√__#\n######"));
  equal(env.render("text"), "WWWWWW\nWABG.W\nW.C..W\nWWWWWW");
  env.step("<answer>Down</answer>");
  env.step("<answer>Right</answer>"); // pushes the box off its target; the player stands on it
  equal(env.render("text"), "WWWWWW\nW.BG.W\nW.@B.W\nWWWWWW");
  ok(env.instruction.includes("W: wall, .: empty, G: target"));
});

Deno.test("rgb frames: one tile per cell, box colors tell on-target from off-target", () => {
  const env = createSokobanEnv({ dim_room: [6, 6], num_boxes: 2 });
  env.resetToLevel(parseLevel("######\n#PX√O#\n######"));
  const f = env.render("rgb");
  const t = SOKOBAN_TILE;
  deepStrictEqual([f.width, f.height], [6 * t, 3 * t]);
  // A point inside a box's face, off its border and its diagonal cross.
  const centre = (r: number, c: number) => getPixel(f, c * t + 12, r * t + 7);
  deepStrictEqual(centre(1, 2), SOKOBAN_COLORS.box);
  deepStrictEqual(centre(1, 3), SOKOBAN_COLORS.boxOnTarget);
  deepStrictEqual(getPixel(f, 0, 0), SOKOBAN_COLORS.wall);
  deepStrictEqual(getPixel(f, 4 * t + 4, t + t / 2), SOKOBAN_COLORS.target);
  deepStrictEqual(getPixel(f, t + 12, t + 17), SOKOBAN_COLORS.player);
});

Deno.test("sokoban: config rejects rooms where no box can move and boxes that do not fit", () => {
  const issues = (config: unknown) => {
    const r = SokobanConfig.safeParse(config);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };
  deepStrictEqual(issues({ dim_room: [4, 4], num_boxes: 1 }), [
    "dim_room: a 4x4 room has no three inner cells in a line, so no box can move: " +
    "expected a side of at least 5",
  ]);
  deepStrictEqual(issues({ dim_room: [5, 5], num_boxes: 8 }), [
    "num_boxes: num_boxes 8 does not fit a 5x5 room: expected fewer than 8",
  ]);
  deepStrictEqual(issues({ dim_room: [4, 5], num_boxes: 1 }), []);
});
