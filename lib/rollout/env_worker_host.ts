/**
 * Environments in Deno Workers: env `i` lives in worker
 * `floor(i / max_env_num_per_worker)`, so CPU-heavy envs (WebShop's search)
 * run beside the model instead of between its steps, and an env that blocks
 * its thread can be stopped. A call that overruns `env_step_timeout`
 * terminates its worker: every env sharing that worker loses its current
 * trajectory (set `max_env_num_per_worker: 1` to isolate envs fully), and the
 * worker is started again when its envs open their next episode.
 *
 * Workers build envs with the registry: built-in types and module paths. An
 * env type registered at run time with `registerEnv` exists only in the main
 * thread, so it needs `env_runner: main`.
 *
 * @module
 */
import type { ResetResult, RgbFrame, StepResult } from "../../envs/types.ts";
import { EnvConfigError } from "../../envs/errors.ts";
import { type EnvHandle, type EnvHost, EnvTimeoutError, OPEN_TIMEOUT_SECONDS } from "./env_host.ts";
import type { EnvWorkerReply, EnvWorkerRequest } from "./env_worker.ts";
import { CRASH_REPLY_ID } from "./env_worker_protocol.ts";

/** A worker was stopped (another env in it hung) while this call was pending. */
export class EnvWorkerStoppedError extends Error {
  /** `why` says which call hung. */
  constructor(why: string) {
    super(`the env worker was restarted: ${why}`);
    this.name = "EnvWorkerStoppedError";
  }
}

type Request = EnvWorkerRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never
  : never;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

/** One worker and its pending calls. */
class EnvWorker {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  alive = true;

  constructor() {
    this.#worker = new Worker(new URL("./env_worker.ts", import.meta.url), { type: "module" });
    this.#worker.onmessage = (e: MessageEvent<EnvWorkerReply>) => {
      const reply = e.data;
      if (reply.id === CRASH_REPLY_ID && !reply.ok) {
        this.stop(`it crashed: ${reply.message}`);
        return;
      }
      const p = this.#pending.get(reply.id);
      if (!p) return;
      this.#pending.delete(reply.id);
      if (reply.ok) p.resolve(reply.result);
      else {
        const error = reply.name === "EnvConfigError"
          ? new EnvConfigError(reply.message)
          : new Error(reply.message);
        if (reply.name !== "EnvConfigError") error.name = reply.name;
        p.reject(error);
      }
    };
    this.#worker.onerror = (e) => {
      e.preventDefault();
      this.stop(`it crashed: ${e.message}`);
    };
  }

  call(req: Request, timeoutSeconds: number, what: string): Promise<unknown> {
    if (!this.alive) return Promise.reject(new EnvWorkerStoppedError("it was stopped earlier"));
    const id = this.#nextId++;
    const call = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const error = new EnvTimeoutError(what, timeoutSeconds);
        this.#pending.delete(id);
        reject(error);
        this.stop(`${what} hung`);
      }, timeoutSeconds * 1000);
      this.#pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#worker.postMessage({ ...req, id });
    });
    // A caller that stopped waiting (an abandoned episode, a race it lost) still leaves this
    // promise to reject when the worker stops: that rejection is handled here, not unhandled.
    call.catch(() => {});
    return call;
  }

  /** Terminates the worker and fails its pending calls. */
  stop(why: string): void {
    if (!this.alive) return;
    this.alive = false;
    this.#worker.terminate();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(new EnvWorkerStoppedError(why));
  }
}

/** Envs spread over Deno Workers, `perWorker` envs each. */
export class WorkerEnvHost implements EnvHost {
  readonly #timeout: number;
  readonly #perWorker: number;
  readonly #workers = new Map<number, EnvWorker>();

  /** `timeoutSeconds` bounds every call; `perWorker` = max_env_num_per_worker. */
  constructor(timeoutSeconds: number, perWorker: number) {
    if (!Number.isInteger(perWorker) || perWorker < 1) {
      throw new RangeError(`max_env_num_per_worker must be a positive integer, got ${perWorker}`);
    }
    this.#timeout = timeoutSeconds;
    this.#perWorker = perWorker;
  }

  /** Number of workers started and running. */
  get runningWorkers(): number {
    return [...this.#workers.values()].filter((w) => w.alive).length;
  }

  async open(
    envId: number,
    envType: string,
    envConfig: Record<string, unknown> | null,
  ): Promise<EnvHandle> {
    const index = Math.floor(envId / this.#perWorker);
    let worker = this.#workers.get(index);
    if (!worker || !worker.alive) {
      worker = new EnvWorker();
      this.#workers.set(index, worker);
    }
    const w = worker;
    const t = this.#timeout;
    // starting a worker loads its modules: not bounded by the step limit
    const opened = await w.call(
      { op: "open", envId, envType, envConfig },
      Math.max(t, OPEN_TIMEOUT_SECONDS),
      `creating env ${envId}`,
    ) as { instruction: string };
    return {
      instruction: opened.instruction,
      reset: (seed) =>
        w.call({ op: "reset", envId, seed }, t, `reset of env ${envId}`) as Promise<ResetResult>,
      step: (action) =>
        w.call({ op: "step", envId, action }, t, `step of env ${envId}`) as Promise<StepResult>,
      sampleAction: (seed) =>
        w.call({ op: "sample", envId, seed }, t, `sampleAction of env ${envId}`) as Promise<
          string | null
        >,
      renderRgb: () =>
        w.call({ op: "render", envId }, t, `render of env ${envId}`) as Promise<RgbFrame>,
      close: async () => {
        if (!w.alive) return;
        try {
          await w.call({ op: "close", envId }, t, `close of env ${envId}`);
        } catch {
          // a failing close must not take the run down
        }
      },
    };
  }

  close(): Promise<void> {
    for (const w of this.#workers.values()) w.stop("the rollout closed");
    this.#workers.clear();
    return Promise.resolve();
  }
}
