/**
 * `deno task bench envs`: environment steps per second, resets included, with
 * uniformly random valid actions (each env's `sampleAction`), one row per
 * environment configuration. The baseline, measured in the same run, is a
 * no-op environment driven by the same loop: the harness's own ceiling (reset,
 * action choice, step call and result object of an env that does nothing), so
 * `ratio` is the fraction of that ceiling an environment reaches.
 *
 * @module
 */
import { createEnv } from "../envs/registry.ts";
import { Rng } from "../envs/random.ts";
import type { Env, ResetResult, RgbFrame, StepResult } from "../envs/types.ts";
import { type BenchRow, benchRow } from "./_report.ts";

/** An environment that does nothing: the cost floor of the benchmark loop. */
class NoopEnv implements Env {
  readonly instruction = "";
  readonly actionDescription = "";
  #steps = 0;
  reset(_seed: number): ResetResult {
    this.#steps = 0;
    return { observation: "", info: {} };
  }
  step(_action: string): StepResult {
    this.#steps++;
    return {
      observation: "",
      reward: 0,
      terminated: false,
      truncated: this.#steps >= 10,
      info: {
        metrics: {
          action_is_valid: true,
          action_is_effective: true,
          success: false,
          format_penalty: 0,
        },
      },
    };
  }
  render(mode: "text"): string;
  render(mode: "rgb"): RgbFrame;
  render(mode: "text" | "rgb"): string | RgbFrame {
    return mode === "text" ? "" : { width: 1, height: 1, data: new Uint8Array(3) };
  }
  close(): void {}
  sampleAction(random: () => number): string {
    return random() < 2 ? "<answer>Left</answer>" : "";
  }
}

/** The configurations measured (ROLL's shipped ones first), each with 10 actions per episode. */
export const ENV_CASES: ReadonlyArray<
  { name: string; type: string; config: Record<string, unknown> }
> = [
  { name: "frozen_lake 4x4 (FrozenLake)", type: "frozen_lake", config: { is_slippery: false } },
  { name: "frozen_lake 8x8 slippery", type: "frozen_lake", config: { size: 8 } },
  {
    name: "sokoban 6x6 1 box (SimpleSokoban)",
    type: "sokoban",
    config: { dim_room: [6, 6], num_boxes: 1 },
  },
  {
    name: "sokoban 8x8 2 boxes (LargerSokoban)",
    type: "sokoban",
    config: { dim_room: [8, 8], num_boxes: 2, search_depth: 10 },
  },
  {
    name: "sokoban 10x10 2 boxes (ROLL's LargerSokoban)",
    type: "sokoban",
    config: { dim_room: [10, 10], num_boxes: 2, search_depth: 10 },
  },
  { name: "countdown 4 numbers (1 step/episode)", type: "countdown", config: {} },
  { name: "webshop text (WebShop, synthetic catalog)", type: "webshop", config: {} },
];

/** Steps per second of `env` over about `budgetMs`, after a warm-up; every episode starts with a reset. */
async function stepsPerSecond(env: Env, budgetMs: number): Promise<number> {
  const rng = new Rng(1);
  const random = () => rng.float();
  let seed = 0;
  const run = async (ms: number) => {
    let steps = 0;
    const start = performance.now();
    let now = start;
    while (now - start < ms) {
      await env.reset(seed++);
      for (;;) {
        const r = await env.step(env.sampleAction!(random));
        steps++;
        if (r.terminated || r.truncated) break;
      }
      now = performance.now();
    }
    return steps / ((now - start) / 1000);
  };
  await run(budgetMs / 5);
  const rounds = [await run(budgetMs / 3), await run(budgetMs / 3), await run(budgetMs / 3)];
  return rounds.sort((a, b) => a - b)[1]!; // the median
}

/** Runs the benchmark and returns its rows (about 1.5 s per configuration). */
export async function runEnvsBenchmark(budgetMs = 1500): Promise<BenchRow[]> {
  const noop = await stepsPerSecond(new NoopEnv(), budgetMs);
  const rows: BenchRow[] = [];
  for (const c of ENV_CASES) {
    const env = await createEnv(c.type, { ...c.config, max_steps: 10 });
    const rate = await stepsPerSecond(env, budgetMs);
    rows.push(benchRow(c.name, "steps/s", rate, "noop_env (harness ceiling)", noop));
  }
  return rows;
}
