/**
 * Rollout metrics under ROLL's names: `env/{tag}/{success, action_is_valid,
 * action_is_effective, format_penalty, num_actions}` (means over the tag's
 * trajectories), `rollout/{score, response_length, prompt_length,
 * non_prompt_length}/{mean, max, min}` (as ROLL counts them: prompt_length is
 * the first prompt, non_prompt_length every token after it, responses and later
 * observations alike), and the scheduler's losses. Validation metrics are the
 * same under `val/`.
 *
 * @module
 */
import type { LostTrajectory, TrajectorySample } from "./types.ts";

const ENV_KEYS = [
  "success",
  "action_is_valid",
  "action_is_effective",
  "format_penalty",
  "num_actions",
] as const;

function stats(prefix: string, xs: readonly number[], out: Record<string, number>): void {
  if (xs.length === 0) return;
  let sum = 0, max = -Infinity, min = Infinity;
  for (const x of xs) {
    sum += x;
    if (x > max) max = x;
    if (x < min) min = x;
  }
  out[`${prefix}/mean`] = sum / xs.length;
  out[`${prefix}/max`] = max;
  out[`${prefix}/min`] = min;
}

/** Metrics of a batch of trajectories and the trajectories lost while making it. */
export function rolloutMetrics(
  samples: readonly TrajectorySample[],
  lost: readonly LostTrajectory[] = [],
  tags: readonly string[] = [...new Set(samples.map((s) => s.tag))],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tag of tags) {
    const mine = samples.filter((s) => s.tag === tag);
    if (mine.length === 0) continue;
    for (const key of ENV_KEYS) {
      out[`env/${tag}/${key}`] = mine.reduce((a, s) => a + s.metrics[key], 0) / mine.length;
    }
  }
  stats("rollout/score", samples.map((s) => s.score), out);
  const responseLengths = samples.map((s) => s.responseMask.reduce((a, b) => a + b, 0));
  stats("rollout/response_length", responseLengths, out);
  // the first prompt: the tokens before the first generated one
  const firstPrompt = samples.map((s) => {
    const i = s.responseMask.indexOf(1);
    return i < 0 ? s.tokens.length : i;
  });
  stats("rollout/prompt_length", firstPrompt, out);
  stats("rollout/non_prompt_length", samples.map((s, i) => s.tokens.length - firstPrompt[i]!), out);
  stats("rollout/num_turns", samples.map((s) => s.stepRewards.length), out);
  out["rollout/num_trajectories"] = samples.length;
  out["scheduler/lost_trajectories"] = lost.length;
  out["scheduler/env_errors"] = lost.filter((l) => l.reason === "env_error").length;
  out["scheduler/env_timeouts"] = lost.filter((l) => l.reason === "env_timeout").length;
  out["scheduler/policy_errors"] = lost.filter((l) => l.reason === "policy_error").length;
  return out;
}

/** The same metrics under `val/` (ROLL's validation prefix). */
export function withPrefix(
  prefix: string,
  metrics: Record<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(metrics)) out[`${prefix}/${k}`] = v;
  return out;
}

/**
 * `scheduler/weight_lag/{mean,max}`: how many weight updates behind `current` each
 * trajectory's oldest token was sampled (0 in synchronous training; with
 * async_generation_ratio, at most about that many steps of updates).
 *
 * @example
 * ```ts
 * import { weightLag } from "./metrics.ts";
 * const samples = [{ weightVersions: [3, 4] as [number, number] }, { weightVersions: [4, 4] as [number, number] }];
 * console.log(weightLag(samples, 4)); // { "scheduler/weight_lag/mean": 0.5, "scheduler/weight_lag/max": 1 }
 * ```
 */
export function weightLag(
  samples: readonly { weightVersions: [number, number] }[],
  current: number,
): Record<string, number> {
  if (samples.length === 0) return {};
  const lags = samples.map((s) => current - s.weightVersions[0]);
  return {
    "scheduler/weight_lag/mean": lags.reduce((a, b) => a + b, 0) / lags.length,
    "scheduler/weight_lag/max": Math.max(...lags),
  };
}
