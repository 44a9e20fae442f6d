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

/** The semaphores of one scheduler: a per-tag step limiter and the shared lock. */
export class EnvLimits {
  readonly #perTag = new Map<string, Semaphore>();
  readonly #lock = new Semaphore(1);

  /** Runs `fn` (building an env of `entry`) under the lock when the entry asks for it. */
  build<T>(entry: CustomEnv, fn: () => Promise<T>): Promise<T> {
    return entry.use_thread_lock ? this.#lock.run(fn) : fn();
  }

  /** `env` with its reset and step under the tag's limits (`env` itself when it has none). */
  wrap(tag: string, entry: CustomEnv, env: EnvHandle): EnvHandle {
    const cap = entry.max_env_step_concurrent;
    if (cap <= 0 && !entry.use_thread_lock) return env;
    let limiter = this.#perTag.get(tag);
    if (cap > 0 && !limiter) this.#perTag.set(tag, limiter = new Semaphore(cap));
    const lock = entry.use_thread_lock ? this.#lock : null;
    const limited = <T>(fn: () => Promise<T>): Promise<T> => {
      const capped = limiter ? () => limiter.run(fn) : fn;
      return lock ? lock.run(capped) : capped();
    };
    return {
      instruction: env.instruction,
      reset: (seed) => limited(() => env.reset(seed)),
      step: (action) => limited(() => env.step(action)),
      renderRgb: () => env.renderRgb(),
      sampleAction: (seed) => env.sampleAction(seed),
      close: () => env.close(),
    };
  }
}
