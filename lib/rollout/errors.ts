/**
 * Errors that stop a rollout, with a message for the user (the CLI prints it
 * without a stack trace): a config the rollout cannot run
 * ({@linkcode RolloutConfigError}), a model folder that does not load
 * ({@linkcode ModelLoadError}), and a rollout that cannot go on because every
 * trajectory fails ({@linkcode RolloutError}).
 *
 * @module
 */
import { KvCacheSizeError } from "../infer/kv_cache_size.ts";

/** The config cannot run, e.g. `sequence_length` below the first prompt. */
export class RolloutConfigError extends Error {
  /** An error with a sentence-case message. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "RolloutConfigError";
  }
}

/** A model folder (`pretrain`, `--checkpoint`, a checkpoint to resume) does not load. */
export class ModelLoadError extends Error {
  /** `path` is the folder; `cause` what went wrong. */
  constructor(readonly path: string, cause: unknown) {
    super(`Cannot load the model ${path}: ${cause instanceof Error ? cause.message : cause}`, {
      cause,
    });
    this.name = "ModelLoadError";
  }
}

/** The rollout cannot go on: every trajectory is lost (an env or the policy always fails). */
export class RolloutError extends Error {
  /** An error with a sentence-case message. */
  constructor(message: string) {
    super(message);
    this.name = "RolloutError";
  }
}

/**
 * Runs `make` (a generation engine's construction); a KV cache too large for memory becomes a
 * RolloutConfigError that adds `hint`: which config keys set its two sizes.
 */
export function withKvCacheHint<T>(make: () => T, hint: string): T {
  try {
    return make();
  } catch (e) {
    if (e instanceof KvCacheSizeError) {
      throw new RolloutConfigError(`${e.message}. ${hint}`, { cause: e });
    }
    throw e;
  }
}
