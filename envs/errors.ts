/**
 * The error for a user's mistake in an environment's type or `env_config`.
 *
 * @module
 */

/**
 * A mistake in an `env_type` or an `env_config`: an unknown type, an unknown
 * key, a value of the wrong kind, a module that exports no environment. The
 * message names the value and what was expected; the CLI prints it without a
 * stack trace and exits with status 2.
 *
 * @example
 * ```ts
 * import { EnvConfigError } from "./errors.ts";
 * const e = new EnvConfigError("Unknown env_type 'frozen_lak'", "did you mean 'frozen_lake'?");
 * console.log(e.format());
 * ```
 */
export class EnvConfigError extends Error {
  /** A suggestion such as `did you mean 'frozen_lake'?`, when there is one. */
  readonly hint: string | undefined;

  /** An error with a sentence-case message and an optional hint. */
  constructor(message: string, hint?: string) {
    super(message);
    this.name = "EnvConfigError";
    this.hint = hint;
  }

  /** The message for a terminal: `Env config error: ...` and the hint on its own line. */
  format(): string {
    return `Env config error: ${this.message}` + (this.hint ? `\n  hint: ${this.hint}` : "");
  }
}
