import { formatOrigin, type Origin } from "./types.ts";

/** Details that locate a configuration error for the user. */
export interface ConfigErrorDetails {
  /** The dotted key the error is about, e.g. `actor_train.training_args.learning_rate`. */
  key?: string | undefined;
  /** Where the offending value was written. */
  origin?: Origin | undefined;
  /** A short description of what was found. */
  found?: string | undefined;
  /** A short description of what was expected. */
  expected?: string | undefined;
  /** A suggestion such as `did you mean 'max_steps'?`. */
  hint?: string | undefined;
}

/**
 * An error in a configuration file, an override or a config argument: a user's
 * mistake, reported without a stack trace and with exit status 2 by the CLI.
 *
 * @example
 * ```ts
 * import { ConfigError } from "./errors.ts";
 * const e = new ConfigError("Unknown key", { key: "a.b", hint: "did you mean 'a.c'?" });
 * console.log(e.format());
 * ```
 */
export class ConfigError extends Error {
  /** Where and what: key, origin, found, expected, hint. */
  readonly details: ConfigErrorDetails;

  /** An error with a sentence-case message and the details that locate it. */
  constructor(message: string, details: ConfigErrorDetails = {}) {
    super(message);
    this.name = "ConfigError";
    this.details = details;
  }

  /** A multi-line message for the terminal: what, where, found, expected. */
  format(): string {
    const d = this.details;
    const lines = [`Config error: ${this.message}`];
    if (d.origin) lines.push(`  at:       ${formatOrigin(d.origin)}`);
    if (d.key !== undefined) lines.push(`  key:      ${d.key === "" ? "(the root)" : d.key}`);
    if (d.found !== undefined) lines.push(`  found:    ${d.found}`);
    if (d.expected !== undefined) lines.push(`  expected: ${d.expected}`);
    if (d.hint !== undefined) lines.push(`  hint:     ${d.hint}`);
    return lines.join("\n");
  }
}

/**
 * Several configuration errors found in one validation pass.
 *
 * @example
 * ```ts
 * import { ConfigError, ConfigErrors } from "./errors.ts";
 * const all = new ConfigErrors([new ConfigError("A"), new ConfigError("B")]);
 * console.log(all.errors.length); // 2
 * ```
 */
export class ConfigErrors extends ConfigError {
  /** The individual errors. */
  readonly errors: ConfigError[];

  /** Groups errors found together. */
  constructor(errors: ConfigError[]) {
    super(`${errors.length} problems in the config`);
    this.errors = errors;
  }

  /** Every error formatted, up to eight, one blank line apart. */
  override format(): string {
    const shown = this.errors.slice(0, 8).map((e) => e.format());
    const more = this.errors.length - shown.length;
    if (more > 0) shown.push(`... and ${more} more`);
    return shown.join("\n\n");
  }
}

/** Describes a value briefly for an error message: `"abc" (string)`, `3 (number)`. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (typeof value === "object") return "a mapping";
  const text = typeof value === "string" ? JSON.stringify(value) : String(value);
  const short = text.length > 60 ? `${text.slice(0, 57)}...` : text;
  return `${short} (${typeof value})`;
}
