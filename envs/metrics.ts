/**
 * Aggregating per-step metrics into per-episode ones, as ROLL's env managers
 * do: a mean over the episode's steps, except `success`, whose last value counts.
 *
 * @module
 */
import type { StepMetrics } from "./types.ts";

/** How one metric's per-step values become one per-episode value. */
export type MetricAggregation = "mean" | "last" | "sum" | "max" | "min";

/** ROLL's `metrics_agg_mode`: means, and the last value for `success`. */
export const ROLL_METRIC_AGGREGATION: Readonly<Record<string, MetricAggregation>> = Object
  .freeze({
    action_is_effective: "mean",
    action_is_valid: "mean",
    format_penalty: "mean",
    success: "last",
  });

/** The per-episode metrics of {@linkcode aggregateEpisodeMetrics} (booleans become 0/1). */
export interface EpisodeMetrics {
  /** Fraction of the episode's actions that were valid. */
  action_is_valid: number;
  /** Fraction of the episode's actions that changed the state. */
  action_is_effective: number;
  /** Mean format penalty per action. */
  format_penalty: number;
  /** 1 when the last step reported success, else 0. */
  success: number;
  /** Number of actions taken (ROLL's `num_actions`). */
  num_actions: number;
}

/**
 * Aggregates any per-step metric records: each key with its mode from `modes`
 * (default: `mean`, and `last` for `success`); booleans count as 0/1. A key
 * missing from some steps is aggregated over the steps that have it.
 *
 * @example
 * ```ts
 * import { aggregateMetrics } from "./metrics.ts";
 * const m = aggregateMetrics([{ success: false, hits: 1 }, { success: true, hits: 3 }]);
 * console.log(m); // { success: 1, hits: 2 }
 * ```
 */
export function aggregateMetrics(
  steps: readonly Readonly<Record<string, number | boolean>>[],
  modes: Readonly<Record<string, MetricAggregation>> = ROLL_METRIC_AGGREGATION,
): Record<string, number> {
  const values = new Map<string, number[]>();
  for (const step of steps) {
    for (const [key, v] of Object.entries(step)) {
      let list = values.get(key);
      if (!list) values.set(key, list = []);
      list.push(typeof v === "boolean" ? (v ? 1 : 0) : v);
    }
  }
  const out: Record<string, number> = {};
  for (const [key, list] of values) out[key] = reduce(list, modes[key] ?? "mean");
  return out;
}

/**
 * The per-episode metrics ROLL logs under `env/{tag}/...`: means of
 * `action_is_valid`, `action_is_effective` and `format_penalty`, the last
 * `success`, and the number of actions. An episode without steps has zeros.
 *
 * @example
 * ```ts
 * import { aggregateEpisodeMetrics } from "./metrics.ts";
 * const m = aggregateEpisodeMetrics([
 *   { action_is_valid: false, action_is_effective: false, success: false, format_penalty: -0.1 },
 *   { action_is_valid: true, action_is_effective: true, success: true, format_penalty: 0 },
 * ]);
 * console.log(m.action_is_valid, m.success, m.num_actions); // 0.5 1 2
 * ```
 */
export function aggregateEpisodeMetrics(steps: readonly StepMetrics[]): EpisodeMetrics {
  if (steps.length === 0) {
    return {
      action_is_valid: 0,
      action_is_effective: 0,
      format_penalty: 0,
      success: 0,
      num_actions: 0,
    };
  }
  const m = aggregateMetrics(
    steps.map((s) => ({
      action_is_valid: s.action_is_valid,
      action_is_effective: s.action_is_effective,
      format_penalty: s.format_penalty,
      success: s.success,
    })),
  );
  return {
    action_is_valid: m.action_is_valid!,
    action_is_effective: m.action_is_effective!,
    format_penalty: m.format_penalty!,
    success: m.success!,
    num_actions: steps.length,
  };
}

function reduce(list: number[], mode: MetricAggregation): number {
  switch (mode) {
    case "last":
      return list[list.length - 1]!;
    case "sum":
      return list.reduce((a, b) => a + b, 0);
    case "max":
      return Math.max(...list);
    case "min":
      return Math.min(...list);
    case "mean":
      return list.reduce((a, b) => a + b, 0) / list.length;
  }
}
