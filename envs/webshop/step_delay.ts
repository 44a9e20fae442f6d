/**
 * Per-step delays that simulate slow environments (for benchmarking asynchronous
 * rollout): fixed, lognormal or Pareto, drawn from a seeded RNG.
 *
 * @module
 */
import type { StepDelayConfig } from "./config.ts";
import { PyRandom } from "./rng.ts";

/** Draws delays in milliseconds. */
export interface DelaySampler {
  /** The next delay in milliseconds (>= 0). */
  next(): number;
}

/**
 * A sampler for a delay config: `fixed` → `ms`; `lognormal` → median·exp(sigma·Z);
 * `pareto` → scale / U^(1/alpha) with U uniform in (0, 1]; each capped at `cap_ms`.
 *
 * @example
 * ```ts
 * import { delaySampler } from "./step_delay.ts";
 * const s = delaySampler({ distribution: "pareto", scale_ms: 5, alpha: 1.5, seed: 1 });
 * console.log(s.next() >= 5); // true
 * ```
 */
export function delaySampler(config: StepDelayConfig, stream = 0): DelaySampler {
  const rng = new PyRandom(Math.abs(config.seed) * 1_000_003 + stream);
  const cap = config.cap_ms ?? Infinity;
  const draw = (): number => {
    switch (config.distribution) {
      case "fixed":
        return config.ms;
      case "lognormal":
        return config.median_ms * Math.exp(config.sigma * rng.normal());
      case "pareto":
        return config.scale_ms / Math.pow(1 - rng.random(), 1 / config.alpha);
    }
  };
  return { next: () => Math.min(cap, Math.max(0, draw())) };
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
