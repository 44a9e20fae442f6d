/**
 * Countdown's `env_config`.
 *
 * @module
 */
import { z } from "npm:zod@4.6.7";
import { commonConfigShape } from "../config_fields.ts";

/**
 * Countdown's `env_config` (unknown keys are errors). Rewards follow TinyZero's
 * Countdown scorer, which RAGEN uses: `correct_score` for an expression that
 * uses each number once and equals the target, `format_score` for any other
 * well-formed expression.
 *
 * @example
 * ```ts
 * import { CountdownConfig } from "./config.ts";
 * const c = CountdownConfig.parse({ num_numbers: 3 });
 * console.log(c.max_number, c.max_target, c.format_score); // 99 100 0.1
 * ```
 */
export const CountdownConfig = z.strictObject({
  ...commonConfigShape,
  /** Answers allowed per episode; the first well-formed expression ends it (RAGEN: one turn). */
  max_steps: z.number().int().positive().default(3),
  /** How many numbers the puzzle gives (2..5). */
  num_numbers: z.number().int().min(2).max(5).default(4),
  /** Smallest and largest number drawn. */
  min_number: z.number().int().min(0).default(1),
  max_number: z.number().int().max(1000).default(99),
  /** Smallest and largest target. */
  min_target: z.number().int().default(1),
  max_target: z.number().int().default(100),
  /** Reward of a correct answer. */
  correct_score: z.number().default(1),
  /** Reward of a well-formed but wrong answer (TinyZero's format score). */
  format_score: z.number().default(0.1),
}).check((ctx) => {
  const c = ctx.value;
  if (c.min_number > c.max_number) {
    ctx.issues.push({
      code: "custom",
      input: c.min_number,
      path: ["min_number"],
      message: `min_number ${c.min_number} is above max_number ${c.max_number}`,
    });
  }
  if (c.min_target > c.max_target) {
    ctx.issues.push({
      code: "custom",
      input: c.min_target,
      path: ["min_target"],
      message: `min_target ${c.min_target} is above max_target ${c.max_target}`,
    });
  }
});

/** Countdown's validated `env_config`. */
export type CountdownConfig = z.output<typeof CountdownConfig>;
