/**
 * Where an environment runs: an {@linkcode EnvHandle} gives the env manager
 * the same asynchronous interface whether the env lives in the main thread
 * ({@linkcode MainThreadEnvHost}) or in a Deno Worker (env_worker_host.ts).
 * Every call has a time limit (`env_step_timeout`); a call that overruns or
 * throws costs the trajectory it belongs to, and the handle is then rebuilt
 * before its next episode.
 *
 * A main-thread env that blocks the thread (a synchronous endless loop)
 * cannot be interrupted from the same thread: run such envs in workers.
 *
 * @module
 */
import { Rng } from "../../envs/random.ts";
import { createEnv } from "../../envs/registry.ts";
import type { Env, ResetResult, RgbFrame, StepResult } from "../../envs/types.ts";

/** An env call that did not finish in time. */
export class EnvTimeoutError extends Error {
  /** `what` names the call, e.g. `step of env 3`. */
  constructor(what: string, seconds: number) {
    super(`${what} did not finish within env_step_timeout = ${seconds} s`);
    this.name = "EnvTimeoutError";
  }
}

/** An environment as the env manager drives it. */
export interface EnvHandle {
  /** The env's task description (ROLL's env_instruction). */
  readonly instruction: string;
  reset(seed: number): Promise<ResetResult>;
  step(action: string): Promise<StepResult>;
  renderRgb(): Promise<RgbFrame>;
  /** A uniformly random legal action drawn with `seed` (null when the env has no sampleAction). */
  sampleAction(seed: number): Promise<string | null>;
  /** Frees the env; never throws. */
  close(): Promise<void>;
}

/** Makes env handles; `restart` replaces a handle whose env failed or hung. */
export interface EnvHost {
  /** A handle for env `envId` of `envType` built from `envConfig`. */
  open(
    envId: number,
    envType: string,
    envConfig: Record<string, unknown> | null,
  ): Promise<EnvHandle>;
  /** Frees every env (and worker). */
  close(): Promise<void>;
}

/** `env.sampleAction` with a seeded uniform source, or null when the env has none. */
export function sampleWith(env: Env, seed: number): string | null {
  if (!env.sampleAction) return null;
  const rng = new Rng(seed, 0x5a3e);
  return env.sampleAction(() => rng.float());
}

/** Rejects with an {@linkcode EnvTimeoutError} when `p` takes longer than `seconds`. */
export function withTimeout<T>(p: Promise<T>, seconds: number, what: string): Promise<T> {
  // once the time is up nobody awaits p: a rejection it gets later must not go unhandled
  p.catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EnvTimeoutError(what, seconds)), seconds * 1000);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/** Seconds allowed at least for building an env (a worker's start and module import included). */
export const OPEN_TIMEOUT_SECONDS = 120;

/** Envs in the main thread (the default): no messaging cost. */
export class MainThreadEnvHost implements EnvHost {
  readonly #timeout: number;
  readonly #openTimeout: number;
  readonly #open = new Set<EnvHandle>();

  /**
   * `timeoutSeconds` bounds every reset and step; building an env may take
   * `openTimeoutSeconds` (default: that, but at least {@linkcode OPEN_TIMEOUT_SECONDS}).
   */
  constructor(timeoutSeconds: number, openTimeoutSeconds?: number) {
    this.#timeout = timeoutSeconds;
    this.#openTimeout = openTimeoutSeconds ?? Math.max(timeoutSeconds, OPEN_TIMEOUT_SECONDS);
  }

  async open(
    envId: number,
    envType: string,
    envConfig: Record<string, unknown> | null,
  ): Promise<EnvHandle> {
    // as in workers: importing an env module may take a while, a creation that never ends not
    // (under use_thread_lock it would hold the lock for good)
    const env: Env = await withTimeout(
      createEnv(envType, envConfig),
      this.#openTimeout,
      `creating env ${envId}`,
    );
    const timeout = this.#timeout;
    const open = this.#open;
    const handle: EnvHandle = {
      instruction: env.instruction,
      reset: (seed) =>
        withTimeout(
          Promise.resolve().then(() => env.reset(seed)),
          timeout,
          `reset of env ${envId}`,
        ),
      step: (action) =>
        withTimeout(
          Promise.resolve().then(() => env.step(action)),
          timeout,
          `step of env ${envId}`,
        ),
      renderRgb: () => Promise.resolve().then(() => env.render("rgb")),
      sampleAction: (seed) => Promise.resolve().then(() => sampleWith(env, seed)),
      close: () => {
        open.delete(handle);
        try {
          env.close();
        } catch {
          // a failing close must not take the run down
        }
        return Promise.resolve();
      },
    };
    open.add(handle);
    return handle;
  }

  async close(): Promise<void> {
    for (const h of [...this.#open]) await h.close();
  }
}
