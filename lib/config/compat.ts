// What runs here for the names ROLL configs use: strategies and Python class paths.
import { didYouMean } from "../util/did_you_mean.ts";

/** This project's engines. */
export type Engine = "agentrl_train" | "agentrl_infer" | "agentrl_forward";

/** What each strategy name from the seeds runs as here. */
export const STRATEGY_ENGINES: Record<string, Engine> = {
  megatron_train: "agentrl_train",
  deepspeed_train: "agentrl_train",
  fsdp2_train: "agentrl_train",
  agentrl_train: "agentrl_train",
  vllm: "agentrl_infer",
  sglang: "agentrl_infer",
  agentrl_infer: "agentrl_infer",
  hf_infer: "agentrl_forward",
  megatron_infer: "agentrl_forward",
  fsdp2_infer: "agentrl_forward",
  agentrl_forward: "agentrl_forward",
};

/** What each engine is, for notices. */
export const ENGINE_DESCRIPTIONS: Record<Engine, string> = {
  agentrl_train: "agentrl's trainer (native kernels, one process)",
  agentrl_infer: "agentrl's continuous-batching generation engine",
  agentrl_forward: "agentrl's forward pass for log-probs and values",
};

/** The env managers this project has. */
export type EnvManagerKind = "traj" | "step";

const ROLL_ENV_MANAGERS: Record<string, EnvManagerKind | null> = {
  "roll.pipeline.agentic.env_manager.traj_env_manager.TrajEnvManager": "traj",
  "roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager": "step",
  "roll.pipeline.agentic.env_manager.step_concat_env_manager.StepConcatEnvManager": null,
  "roll.pipeline.agentic.env_manager.vl_traj_env_manager.VLTrajEnvManager": null,
  "roll.pipeline.agentic.env_manager.agent_native_env_manager.AgentNativeStepEnvManager": null,
  "roll.pipeline.agentic.env_manager.proxy_env_manager.ProxyEnvManager": null,
};

/** The result of mapping a name: what it maps to, or why it cannot be used. */
export type Mapping<T> = { ok: true; value: T } | { ok: false; reason: string; hint?: string };

/** Maps an `env_manager_cls` (ROLL's class path or `traj`/`step`) to an env manager kind. */
export function envManagerKind(cls: string | null): Mapping<EnvManagerKind> {
  if (cls === null || cls === "traj" || cls === "trajectory") return { ok: true, value: "traj" };
  if (cls === "step") return { ok: true, value: "step" };
  const mapped = ROLL_ENV_MANAGERS[cls];
  if (mapped) return { ok: true, value: mapped };
  const known = [
    "traj",
    "step",
    ...Object.keys(ROLL_ENV_MANAGERS).filter((k) => ROLL_ENV_MANAGERS[k]),
  ];
  if (mapped === null) {
    return {
      ok: false,
      reason: `env manager '${cls}' is not available in agentrl`,
      hint: `use one of: ${known.join(", ")}`,
    };
  }
  const hint = didYouMean(cls, known);
  return {
    ok: false,
    reason: `unknown env manager '${cls}'`,
    hint: hint ?? `use one of: ${known.join(", ")}`,
  };
}

const ROLL_WORKERS: Record<string, string> = {
  "roll.pipeline.agentic.environment_worker.EnvironmentWorker": "environment worker",
  "roll.pipeline.agentic.agentic_actor_worker.ActorWorker": "actor_train",
  "roll.pipeline.base_worker.ActorWorker": "actor / reference",
  "roll.pipeline.base_worker.InferWorker": "actor_infer",
  "roll.pipeline.base_worker.CriticWorker": "critic",
};

/** Checks a `worker_cls` class path: the ones ROLL's agentic pipeline uses map to our roles. */
export function workerClass(cls: string | null): Mapping<string> {
  if (cls === null) return { ok: true, value: "default" };
  const role = ROLL_WORKERS[cls];
  if (role) return { ok: true, value: role };
  const known = Object.keys(ROLL_WORKERS);
  return {
    ok: false,
    reason: `worker class '${cls}' is not available in agentrl`,
    hint: didYouMean(cls, known) ?? `agentrl maps these ROLL classes: ${known.join(", ")}`,
  };
}

const GROUP_FILTERS = ["roll.pipeline.agentic.agentic_pipeline.GroupFilter"];

/** Checks a `group_filter_cls`: only ROLL's default (keep every group) is available. */
export function groupFilterClass(cls: string | null): Mapping<string> {
  if (cls === null || GROUP_FILTERS.includes(cls)) return { ok: true, value: "keep all groups" };
  return {
    ok: false,
    reason: `group filter '${cls}' is not available in agentrl`,
    hint: `use ${GROUP_FILTERS[0]} or leave it unset`,
  };
}
