/**
 * The Deno Worker that hosts environments for `WorkerEnvHost`: it builds envs
 * with the registry (built-in types and module paths) and answers
 * open / reset / step / render / close messages, one reply per request id.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import { createEnv } from "../../envs/registry.ts";
import type { Env } from "../../envs/types.ts";
import { sampleWith } from "./env_host.ts";
import { CRASH_REPLY_ID } from "./env_worker_protocol.ts";
import { describeThrown } from "../util/describe_thrown.ts";
import { onEscapedError } from "../util/on_escaped_error.ts";

/** A request from the host. */
export type EnvWorkerRequest =
  | {
    id: number;
    op: "open";
    envId: number;
    envType: string;
    envConfig: Record<string, unknown> | null;
  }
  | { id: number; op: "reset"; envId: number; seed: number }
  | { id: number; op: "step"; envId: number; action: string }
  | { id: number; op: "render"; envId: number }
  | { id: number; op: "sample"; envId: number; seed: number }
  | { id: number; op: "close"; envId: number };

/** The reply to a request. */
export type EnvWorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; name: string; message: string };

const envs = new Map<number, Env>();

function envOf(envId: number): Env {
  const env = envs.get(envId);
  if (!env) throw new Error(`env ${envId} is not open in this worker`);
  return env;
}

async function handle(
  req: EnvWorkerRequest,
): Promise<{ result: unknown; transfer: Transferable[] }> {
  switch (req.op) {
    case "open": {
      envs.get(req.envId)?.close();
      const env = await createEnv(req.envType, req.envConfig);
      envs.set(req.envId, env);
      return { result: { instruction: env.instruction }, transfer: [] };
    }
    case "reset":
      return { result: await envOf(req.envId).reset(req.seed), transfer: [] };
    case "step":
      return { result: await envOf(req.envId).step(req.action), transfer: [] };
    case "render": {
      const frame = envOf(req.envId).render("rgb");
      const data = frame.data.slice();
      return {
        result: { width: frame.width, height: frame.height, data },
        transfer: [data.buffer],
      };
    }
    case "sample":
      return { result: sampleWith(envOf(req.envId), req.seed), transfer: [] };
    case "close": {
      const env = envs.get(req.envId);
      envs.delete(req.envId);
      env?.close();
      return { result: null, transfer: [] };
    }
  }
}

// An error that escapes every request (an env's timer, a promise nobody awaits) ends this
// worker: the host hears of it as a crash reply and restarts the env, and Deno does not print
// it as an uncaught error with its stack.
function crash(error: unknown): void {
  self.postMessage(
    {
      id: CRASH_REPLY_ID,
      ok: false,
      name: error instanceof Error ? error.name : "Error",
      message: describeThrown(error, true),
    } satisfies EnvWorkerReply,
  );
  self.close();
}
onEscapedError(crash);

self.onmessage = async (event: MessageEvent<EnvWorkerRequest>) => {
  const req = event.data;
  try {
    const { result, transfer } = await handle(req);
    self.postMessage({ id: req.id, ok: true, result } satisfies EnvWorkerReply, transfer);
  } catch (e) {
    const error = e instanceof Error ? e : new Error(String(e));
    self.postMessage(
      { id: req.id, ok: false, name: error.name, message: error.message } satisfies EnvWorkerReply,
    );
  }
};
