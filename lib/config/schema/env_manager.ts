// Environment managers (train_env_manager / val_env_manager) and custom_envs entries.
import { z } from "npm:zod@4.6.7";
import { count, freeDict, int, num, positive, section } from "./common.ts";
import { workerShape } from "./worker.ts";

export const LlmProxy = section({
  proxy_type: z.enum(["policy", "random", "openai"]).default("policy"),
  proxy_config: freeDict.default({}),
});

export const EnvManagerConfig = section({
  ...workerShape,
  llm_proxy: LlmProxy.default(() => LlmProxy.parse({})),
  num_env_groups: positive.default(128),
  /** The seeds' older spelling of num_env_groups. */
  env_groups: positive.nullable().default(null),
  group_size: positive.default(1),
  group_size_redundancy: count.default(0),
  tags: z.array(z.string()).min(1).default(["SimpleSokoban"]),
  num_groups_partition: z.array(count).nullable().default(null),
  /** The seeds' older spelling of num_groups_partition. */
  n_groups: z.array(count).nullable().default(null),
  max_traj_per_env: int.default(-1),
  format_penalty: num.default(0),
  max_env_num_per_worker: count.default(0),
  group_filter_cls: z.string().nullable().default(null),
  /** Seconds one environment step may take before its trajectory is dropped. */
  env_step_timeout: num.positive().default(600),
  /**
   * Where envs run (agentrl): `main` (the main thread) or `worker` (Deno
   * Workers of at most max_env_num_per_worker envs each).
   */
  env_runner: z.enum(["main", "worker"]).default("main"),
});

/** One entry of `custom_envs`: an environment tag's type, config and prompt templates. */
export const CustomEnv = section({
  env_type: z.string().min(1),
  env_config: freeDict.nullable().default(null),
  max_steps: positive.default(10),
  max_tokens_per_step: positive.default(128),
  env_manager_cls: z.string().nullable().default(null),
  agent_system_template: z.string().nullable().default(null),
  agent_template: z.string().nullable().default(null),
  pre_step_template: z.string().nullable().default(null),
  next_step_template: z.string().nullable().default(null),
  history_length: count.nullable().default(null),
  use_thread_lock: z.boolean().default(false),
  max_env_step_concurrent: count.default(0),
  tool_wrapper: freeDict.nullable().default(null),
  agent_runner_cls: z.string().nullable().default(null),
  http_timeout: num.positive().default(3600),
});

export type EnvManagerConfig = z.output<typeof EnvManagerConfig>;
export type CustomEnv = z.output<typeof CustomEnv>;
