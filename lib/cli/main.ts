import { Command, CommanderError } from "npm:@commander-js/extra-typings@15.1.0";
import { ConfigError } from "../config/errors.ts";
import { KernelError } from "../../ffi/kernels.ts";
import { KernelLibraryError } from "../../ffi/library.ts";
import { EnvConfigError } from "../../envs/errors.ts";
import { CheckpointError } from "../model/safetensors.ts";
import { TokenizerLoadError } from "../model/tokenizer.ts";
import { ModelLoadError, RolloutConfigError, RolloutError } from "../rollout/errors.ts";
import { describeThrown } from "../util/describe_thrown.ts";
import { onEscapedError } from "../util/on_escaped_error.ts";
import { normalizeArgv } from "./argv.ts";
import { withOptionHint, withOverrideHint } from "./option_hints.ts";
import {
  benchCommand,
  configCommand,
  evalCommand,
  ExitRequest,
  inspectCommand,
  rolloutCommand,
  trainCommand,
} from "./commands.ts";

/** Exit status for a user's mistake in a config, an override or an argument. */
export const USAGE_ERROR = 2;

/** Commander's error text through {@linkcode withOverrideHint} (`--max_steps=1`). */
const HINTED_ERRORS = {
  outputError: (text: string, write: (s: string) => void) => write(withOverrideHint(text)),
};

/** Builds the `agentrl` command line. */
export function buildProgram(): Command {
  const program = new Command("agentrl")
    .description("Train LLM agents with reinforcement learning on multi-turn environments")
    .version("0.1.0")
    .showHelpAfterError("(run with --help for usage)")
    .configureOutput(HINTED_ERRORS)
    .exitOverride();
  for (
    const sub of [
      trainCommand(),
      evalCommand(),
      rolloutCommand(),
      inspectCommand(),
      configCommand(),
      benchCommand(),
    ]
  ) {
    program.addCommand(
      sub.exitOverride().showHelpAfterError("(run with --help for usage)")
        .configureOutput(HINTED_ERRORS) as unknown as Command,
    );
  }
  return program as unknown as Command;
}

/** Runs the CLI and returns the process exit status. */
export async function runCli(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  const args = normalizeArgv(argv);
  try {
    await program.parseAsync(args, { from: "user" });
    return 0;
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(withOptionHint(e, program, args).format());
      return USAGE_ERROR;
    }
    if (e instanceof EnvConfigError) {
      console.error(e.format());
      return USAGE_ERROR;
    }
    if (
      e instanceof RolloutConfigError || e instanceof ModelLoadError ||
      e instanceof CheckpointError || e instanceof TokenizerLoadError
    ) {
      console.error(e.message);
      return USAGE_ERROR;
    }
    if (e instanceof RolloutError || e instanceof KernelError || e instanceof KernelLibraryError) {
      console.error(e.message);
      return 1;
    }
    if (e instanceof ExitRequest) {
      if (e.message) console.error(e.message);
      return e.status;
    }
    if (e instanceof CommanderError) {
      // Commander has printed its message (or the help) already.
      return e.exitCode === 0 ? 0 : USAGE_ERROR;
    }
    // anything else is a failure no check names (a crashed env worker, or a bug)
    printFailure(describeThrown(e, true), e);
    return 1;
  }
}

/** Prints a failure no check names in one line; AGENTRL_DEBUG=1 adds the stack of `e`. */
function printFailure(line: string, e: unknown): void {
  const stack = Deno.env.get("AGENTRL_DEBUG") === "1" && e instanceof Error ? e.stack : undefined;
  console.error(line + (stack ? `\n${stack}` : " (AGENTRL_DEBUG=1 prints the stack)"));
}

/**
 * Reports an error that escaped every awaited call (an environment's timer or a promise
 * nobody awaits, in envs run in the main thread) and ends the process.
 */
function reportEscaped(error: unknown): void {
  printFailure(
    `An error escaped outside the calls agentrl awaits (an environment's timer or unawaited ` +
      `promise, when envs run in the main thread; env_runner=worker isolates them): ` +
      describeThrown(error),
    error,
  );
  Deno.exit(1);
}

if (import.meta.main) {
  onEscapedError(reportEscaped);
  Deno.exit(await runCli(Deno.args));
}
