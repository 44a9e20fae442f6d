// The whole AgenticConfig: ROLL's PPOConfig/BaseConfig fields plus the agentic ones.
import { z } from "npm:zod@4.6.7";
import { count, freeDict, int, num, positive, section } from "./common.ts";
import { CustomEnv, EnvManagerConfig } from "./env_manager.ts";
import { WorkerConfig } from "./worker.ts";

export const ADV_ESTIMATORS = [
  "gae",
  "grpo",
  "reinforce",
  "reinforce_plus_plus",
  "gigpo",
  "step_reinforce",
  "agentic_reinforce",
] as const;

export const LOSS_AGG_MODES = [
  "token-mean",
  "seq-mean-token-sum",
  "seq-mean-token-mean",
  "seq-mean-token-sum-norm",
] as const;

export const RewardNormalization = section({
  grouping: z.string().default("batch"),
  method: z.enum(["identity", "mean", "mean_std", "asym_clip"]).default("identity"),
  norm_mean_type: z.enum(["batch", "group"]).nullable().default(null),
  norm_std_type: z.enum(["batch", "group"]).nullable().default(null),
});

export const EnvMonitor = section({
  enable: z.boolean().default(true),
  monitor_interval: positive.default(30),
  hung_timeout: positive.default(3600),
});

export const HydraSettings = z.looseObject({
  run: z.looseObject({ dir: z.string().default(".") }).default({ dir: "." }),
  output_subdir: z.string().nullable().optional(),
});

const worker = () => WorkerConfig.default(() => WorkerConfig.parse({}));
const envManager = () => EnvManagerConfig.default(() => EnvManagerConfig.parse({}));

/** Every field of the AgenticConfig, with ROLL's defaults. */
export const agenticShape = {
  // Experiment and outputs
  exp_name: z.string().min(1).default("agentic_pipeline"),
  seed: int.default(42),
  rpc_timeout: positive.default(3600),
  output_dir: z.string().min(1).default("./output"), // (no folder can be made at "")
  base_dir: z.string().default("./output"),
  logging_dir: z.string().default("./output/logs"),
  render_save_dir: z.string().nullable().default(null),
  rollout_dump_dir: z.string().nullable().default(null),
  track_with: z.enum(["stdout", "tensorboard", "wandb"]).default("tensorboard"),
  tracker_kwargs: freeDict.default({}),
  system_envs: z.record(z.string(), z.string()).default({}),
  // Pipeline control
  max_steps: int.default(500),
  save_steps: positive.default(50),
  max_ckpt_to_keep: count.default(0),
  logging_steps: positive.default(1),
  eval_steps: count.default(10), // 0: no validation (as ROLL)
  resume_from_checkpoint: z.union([z.boolean(), z.string()]).default(false),
  checkpoint_config: freeDict.nullable().default(null),
  // Batches and lengths
  rollout_batch_size: int.default(128),
  val_batch_size: int.default(128),
  prompt_length: positive.nullable().default(1024),
  response_length: positive.nullable().default(null),
  sequence_length: positive.nullable().default(null),
  val_prompt_length: positive.nullable().default(null),
  val_sequence_length: positive.nullable().default(null),
  num_return_sequences_in_group: positive.default(1),
  // Distributed
  local_rank: int.default(-1),
  num_nodes: positive.default(1),
  num_gpus_per_node: count.default(8),
  // Scheduling and requests
  generate_opt_level: z.union([z.literal(0), z.literal(1)]).default(1),
  is_num_return_sequences_expand: z.boolean().default(false),
  max_running_requests: positive.default(128),
  is_use_additional_prompts: z.boolean().default(false),
  max_additional_running_prompts: count.default(16),
  async_generation_ratio: num.nonnegative().default(0),
  // Models
  pretrain: z.string().nullable().default(null),
  reward_pretrain: z.string().nullable().default(null),
  // PPO and the algorithm
  ppo_epochs: positive.default(1),
  max_grad_norm: num.positive().default(1),
  l2: num.nonnegative().default(0),
  lambd: num.min(0).max(1).default(0.95),
  gamma: num.min(0).max(1).default(1),
  // (the one in use, pg_clip_low with use_pg_clip_range else pg_clip, is below 1: finalize.ts)
  pg_clip: num.positive().nullable().default(0.2),
  use_pg_clip_range: z.boolean().default(false),
  pg_clip_low: num.positive().nullable().default(0.2),
  pg_clip_high: num.positive().nullable().default(0.2),
  dual_clip_loss: z.boolean().default(false),
  // agentrl's field: the dual clip's bound c (verl's clip_ratio_c); null is ROLL's 1 + 2 pg_clip
  dual_clip_c: num.gt(1).nullable().default(null),
  value_clip: num.positive().nullable().default(null),
  kl_penalty: z.enum(["kl", "abs", "mse", "k3", "full"]).default("kl"),
  target_kl: num.positive().nullable().default(null),
  init_kl_coef: num.nonnegative().default(0.2),
  kl_horizon: positive.default(10000),
  adv_estimator: z.enum(ADV_ESTIMATORS).default("gae"),
  // Reward and advantage processing
  use_reward_scaling: z.boolean().default(false),
  add_len_reward: z.boolean().default(false),
  reward_clip: num.positive().nullable().default(null),
  use_reward_norm: z.boolean().default(false),
  whiten_rewards: z.boolean().default(false),
  whiten_advantages: z.boolean().default(false),
  advantage_clip: num.positive().nullable().default(null),
  reward_norm: z.enum(["batch", "group", "running"]).nullable().default(null),
  reward_shift: z.boolean().default(false),
  reward_scale: z.boolean().default(false),
  difficulty_loss_weight: z.boolean().default(false),
  length_loss_weight: z.boolean().default(false),
  norm_mean_type: z.enum(["batch", "group", "running"]).nullable().default(null),
  norm_std_type: z.enum(["batch", "group", "running"]).nullable().default(null),
  // Loss components
  add_token_level_kl: z.boolean().default(false),
  critic_warmup: count.default(0),
  use_kl_loss: z.boolean().default(false),
  kl_loss_coef: num.nonnegative().default(0),
  entropy_loss_coef: num.default(0),
  sft_loss_coef: num.nonnegative().default(0),
  use_topr_loss: z.boolean().default(false),
  rl_loss_coef: num.default(1),
  loss_agg_mode: z.enum(LOSS_AGG_MODES).default("seq-mean-token-mean"),
  // "answer": only each response's answer (from its last <answer> tag) carries the advantage;
  // the reasoning before it gets the KL and entropy terms only (agentrl's own field)
  policy_gradient_tokens: z.enum(["response", "answer"]).default("response"),
  enable_reference: z.boolean().default(false),
  enable_old_logprobs_recompute: z.boolean().default(false),
  force_disable_old_logprobs_recompute: z.boolean().default(false),
  // Roles
  actor_train: worker(),
  actor_infer: worker(),
  critic: worker(),
  reference: worker(),
  // Agentic
  custom_envs: z.record(z.string(), CustomEnv).default({}),
  train_env_manager: envManager(),
  val_env_manager: envManager(),
  reward_normalization: RewardNormalization.default(() => RewardNormalization.parse({})),
  env_monitor: EnvMonitor.default(() => EnvMonitor.parse({})),
  // ROLL's resizing of a step's samples to whole mini-batches; "none" (agentrl's) keeps them all
  batch_adjust_mode: z.enum(["copy", "delete", "auto", "random_sample", "none"]).default("copy"),
  episode_reward_weight: num.default(1),
  step_reward_weight: num.default(1),
  step_reward_gamma: num.min(0).max(1).default(0.95),
  // agentrl's field: what a step-wise turn (envs=step) trains on under grpo, reinforce,
  // reinforce_plus_plus, agentic_reinforce and gae. "step": ROLL's StepEnvManager samples, each
  // turn a sample scored by its own reward; "episode": the episode's advantage over its turns
  // laid end to end. (gigpo and step_reinforce give turn-level credit either way.)
  step_sample_reward: z.enum(["step", "episode"]).default("step"),
  // agentrl's field: the positions returns and GAE step through in a multi-turn sequence.
  // "response": the generated tokens only (verl's multi-turn GAE: an observation between turns
  // does not decay the credit); "all": every position, as ROLL's tensors do.
  recursion_positions: z.enum(["response", "all"]).default("response"),
  ratio_type: z.enum(["token", "segment"]).default("token"),
  exp_mode: z.string().default("train"),
  dirty_data_mask: z.boolean().default(false),
  open_feedback_turn: z.boolean().default(false),
  use_token_reward: z.boolean().default(false),
  partial_gpu_mode: z.boolean().default(true),
  skip_mock_system_prompt: z.boolean().default(false),
  // Accepted so ROLL configs load unchanged; they have no effect here (see NO_EFFECT_FIELDS).
  profiler_timeline: z.boolean().default(false),
  profiler_memory: z.boolean().default(false),
  report_length_and_rewards: z.boolean().default(false),
  is_offload_states: z.boolean().default(false),
  is_offload_optimizer_states_in_train_step: z.boolean().default(false),
  length_profiler_dir: z.string().default("./output/profiler"),
  profiler_output_dir: z.string().default("./output/profiler"),
  otlp_output_dir: z.string().default("./output/otlp"),
  model_update_buffer_size_mb: positive.default(1024),
  model_download_type: z.string().nullable().default(null),
  user_defined_rollout_loop_cls: z.string().nullable().default(null),
  router_args: freeDict.nullable().default(null),
  transfer_backend: freeDict.nullable().default(null),
  rollout_mock: freeDict.nullable().default(null),
  train_infer_correction: freeDict.nullable().default(null),
  parse_tool_call_parameter_to_dict: z.boolean().default(false),
  is_pure_opd: z.literal(false).default(false),
  use_opd: z.literal(false).default(false),
  // Hydra's own block: run.dir is where relative output paths live.
  hydra: HydraSettings.default(() => HydraSettings.parse({})),
};

export const AgenticConfigObject = section(agenticShape);

/** Fields accepted for ROLL compatibility that change nothing in agentrl. */
export const NO_EFFECT_FIELDS = [
  "rpc_timeout",
  "local_rank",
  "num_nodes",
  "num_gpus_per_node",
  "profiler_timeline",
  "profiler_memory",
  "report_length_and_rewards",
  "is_offload_states",
  "is_offload_optimizer_states_in_train_step",
  "length_profiler_dir",
  "profiler_output_dir",
  "otlp_output_dir",
  "model_update_buffer_size_mb",
  "model_download_type",
  "user_defined_rollout_loop_cls",
  "router_args",
  "transfer_backend",
  "rollout_mock",
  "train_infer_correction",
  "parse_tool_call_parameter_to_dict",
  "system_envs",
  "generate_opt_level",
  "is_num_return_sequences_expand",
  "is_use_additional_prompts",
  "max_additional_running_prompts",
  "dirty_data_mask",
  "open_feedback_turn",
  "use_token_reward",
  "partial_gpu_mode",
  "exp_mode",
] as const;
