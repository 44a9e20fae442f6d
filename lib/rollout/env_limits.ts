/**
 * ROLL's per-tag env limits: `max_env_step_concurrent` caps how many envs of a tag are in
 * `reset` or `step` at once (a shared backend such as WebShop's search), and
 * `use_thread_lock` lets one env at a time of every such tag be built, reset or stepped
 * (envs whose set-up or steps are not safe to run side by side, or are CPU-heavy).
 *
 * @module
 */
import type { CustomEnv } from "../config/schema/env_manager.ts";
import type { EnvHandle } from "./env_host.ts";

/** An async counting semaphore: at most `limit` calls of {@linkcode Semaphore.run} at once. */
export class Semaphore {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(`Semaphore limit ${limit} is not valid: expected an integer >= 1`);
    }
    this.#free = limit;
  }

  /** Runs `fn` once a place is free; frees the place when it settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next(); // the place passes straight to the next caller
      else this.#free++;
    }
  }
}

/**
 * The semaphores env loops share: a limiter per tag (and cap) and one lock. The schedulers of
 * a process share {@linkcode SHARED_ENV_LIMITS}, as ROLL's limiters are per process: a
 * validation running beside the training rollout counts against the same cap.
 */
export class EnvLimits {
  readonly #perTag = new Map<string, Semaphore>();
  readonly #lock = new Semaphore(1);

  /** Runs `fn` (building an env of `tag`) under the entry's lock and cap, as reset and step. */
  build<T>(tag: string, entry: CustomEnv, fn: () => Promise<T>): Promise<T> {
    return this.#limited(tag, entry, fn);
  }

  /** `env` with its reset and step under the tag's limits (`env` itself when it has none). */
  wrap(tag: string, entry: CustomEnv, env: EnvHandle): EnvHandle {
    if (entry.max_env_step_concurrent <= 0 && !entry.use_thread_lock) return env;
    return {
      instruction: env.instruction,
      reset: (seed) => this.#limited(tag, entry, () => env.reset(seed)),
      step: (action) => this.#limited(tag, entry, () => env.step(action)),
      renderRgb: () => env.renderRgb(),
      sampleAction: (seed) => env.sampleAction(seed),
      close: () => env.close(),
    };
  }

  /** `fn` under the lock (when asked for), then the tag's cap (when set). */
  #limited<T>(tag: string, entry: CustomEnv, fn: () => Promise<T>): Promise<T> {
    const cap = entry.max_env_step_concurrent;
    let run = fn;
    if (cap > 0) {
      const key = `${tag}\u0000${cap}`; // (two configs with another cap for a tag: apart)
      let limiter = this.#perTag.get(key);
      if (!limiter) this.#perTag.set(key, limiter = new Semaphore(cap));
      run = () => limiter.run(fn);
    }
    return entry.use_thread_lock ? this.#lock.run(run) : run();
  }
}

/** The limits every scheduler of this process uses unless given others. */
export const SHARED_ENV_LIMITS: EnvLimits = new EnvLimits();
