/**
 * Hints for two mix-ups between a subcommand's options and config overrides:
 * an option written as an override (`agentrl rollout episodes=2`, which the
 * config has no key for) and an override written as an option
 * (`agentrl train --max_steps=1`, which Commander does not know).
 *
 * @module
 */
import type { Command } from "npm:@commander-js/extra-typings@15.1.0";
import { AgenticConfigSchema } from "../config/agentic_config.ts";
import { ConfigError } from "../config/errors.ts";
import { declaresPath } from "../config/schema/walk.ts";

/** The subcommand `argv` runs (its first argument that names one), or undefined. */
function subcommandOf(program: Command, argv: readonly string[]): Command | undefined {
  for (const arg of argv) {
    if (arg.startsWith("-")) continue;
    return program.commands.find((c) => c.name() === arg) as Command | undefined;
  }
  return undefined;
}

/**
 * `error` with a hint naming the option, when it says an override's key does not exist and that
 * key is one of the subcommand's long options (`episodes=2` for `--episodes 2`); else `error`.
 *
 * @example
 * ```ts
 * import { Command } from "npm:@commander-js/extra-typings@15.1.0";
 * import { ConfigError } from "../config/errors.ts";
 * import { withOptionHint } from "./option_hints.ts";
 * const program = new Command("agentrl");
 * program.addCommand(new Command("rollout").option("--episodes <n>"));
 * const e = new ConfigError("Could not override 'episodes': no such key in the config", {
 *   key: "episodes",
 * });
 * const argv = ["rollout", "episodes=2"];
 * console.log(withOptionHint(e, program as never, argv).details.hint);
 * // 'episodes' is an option of agentrl rollout, not a config key: write --episodes 2
 * ```
 */
export function withOptionHint(
  error: ConfigError,
  program: Command,
  argv: readonly string[],
): ConfigError {
  const key = error.details.key;
  if (key === undefined || !/^Could not override '.*': no such key/.test(error.message)) {
    return error;
  }
  const sub = subcommandOf(program, argv);
  const option = sub?.options.find((o) => o.long === `--${key.replaceAll("_", "-")}`);
  if (sub === undefined || option?.long === undefined) return error;
  const written = argv.find((a) => a.replace(/^\++/, "").split("=")[0] === key);
  const value = written?.includes("=") ? written.slice(written.indexOf("=") + 1) : "";
  const takesValue = option.required || option.optional;
  const how = takesValue
    ? `write ${option.long} ${value === "" ? "VALUE" : shellWord(value)}`
    : /^(false|no|off|0|)$/i.test(value)
    ? `leave ${option.long} out`
    : `write ${option.long}`;
  return new ConfigError(error.message, {
    ...error.details,
    hint: `'${key}' is an option of agentrl ${sub.name()}, not a config key: ${how}`,
  });
}

/** `text` as one shell word: as it is when that is safe, else in single quotes. */
function shellWord(text: string): string {
  return /^[\w.,:/@%+=-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * Commander's error text, with a hint added when it is an unknown option that looks like a
 * config override written with dashes (`--max_steps=1`, `--actor_train.model_args.dtype`).
 *
 * @example
 * ```ts
 * import { withOverrideHint } from "./option_hints.ts";
 * console.log(withOverrideHint("error: unknown option '--max_steps=1'\n"));
 * // error: unknown option '--max_steps=1'
 * // (config overrides take no dashes: max_steps=1)
 * ```
 */
export function withOverrideHint(text: string): string {
  const m = /unknown option '--([A-Za-z_][\w.]*)(?:=([^']*))?'/.exec(text);
  // (only a key the config declares: not Commander's near miss of an option, --env_config)
  if (!m || /Did you mean/.test(text)) return text;
  if (!declaresPath(AgenticConfigSchema, m[1]!.split("."))) return text;
  const hint = `(config overrides take no dashes: ${m[1]}=${m[2] ?? "VALUE"})`;
  return `${text.trimEnd()}\n${hint}\n`;
}
