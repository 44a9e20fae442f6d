/**
 * Countdown: the factory the registry uses for `env_type: countdown`, and its parts.
 *
 * @module
 */
import { CountdownConfig } from "./config.ts";
import { CountdownEnv } from "./env.ts";

export { CountdownConfig } from "./config.ts";
export { CountdownEnv } from "./env.ts";
export {
  MAX_EXPRESSION_LENGTH,
  type ParsedExpression,
  parseExpression,
  usesExactly,
} from "./expression.ts";
export { applyOp, formatFraction, type Fraction, fraction } from "./fraction.ts";
export {
  type CountdownGenerateOptions,
  type CountdownPuzzle,
  generateCountdown,
  solveCountdown,
} from "./solver.ts";

/**
 * A Countdown environment from a raw `env_config` (validated with {@linkcode CountdownConfig}).
 *
 * @example
 * ```ts
 * import { createCountdownEnv } from "./mod.ts";
 * const env = createCountdownEnv({ num_numbers: 3 });
 * console.log(env.reset(5).observation.startsWith("Numbers: ")); // true
 * ```
 */
export function createCountdownEnv(config: Record<string, unknown> = {}): CountdownEnv {
  return new CountdownEnv(CountdownConfig.parse(config));
}
