// Worker (role) configuration: actor_train, actor_infer, critic, reference.
// Field names and defaults follow ROLL's WorkerConfig and argument classes.
import { z } from "npm:zod@4.6.7";
import { RESERVED_TEMPLATE_VARIABLES } from "../../model/chat_template.ts";
import { count, deviceMapping, F32_MAX, freeDict, int, num, positive, section } from "./common.ts";

export const ModelArguments = section({
  model_name_or_path: z.string().nullable().default(null),
  adapter_name_or_path: z.string().nullable().default(null),
  dtype: z.enum(["fp32", "bf16", "fp16"]).nullable().default("bf16"),
  attn_implementation: z.enum(["sdpa", "fa2", "auto", "eager", "flash_attention_2"]).nullable()
    .default(null),
  disable_gradient_checkpointing: z.boolean().nullable().default(false),
  gradient_checkpointing_use_reentrant: z.boolean().nullable().default(null),
  model_type: z.enum(["auto_sequence_classification", "auto_token_classification", "trl"])
    .nullable().default(null),
  num_labels: int.nullable().default(1),
  device_map: z.string().nullable().default("balanced"),
  model_config_kwargs: freeDict.default({}),
  freeze_module_prefix: z.string().nullable().default(null),
  moe_aux_loss_coef: num.nullable().default(null),
  ulysses_size: positive.nullable().default(1),
  lora_rank: positive.nullable().default(8),
  lora_alpha: positive.nullable().default(null),
  lora_dropout: num.nullable().default(0),
  lora_target: z.string().nullable().default(null),
  additional_target: z.string().nullable().default(null),
  autocast_adapter_dtype: z.boolean().default(true),
});

export const TrainingArguments = section({
  output_dir: z.string().default(""),
  max_steps: int.default(-1),
  num_train_epochs: num.default(1),
  learning_rate: num.nonnegative().default(5e-5),
  lr_scheduler_type: z.enum(["constant", "constant_with_warmup", "linear", "cosine"])
    .default("linear"),
  weight_decay: num.nonnegative().default(0),
  adam_beta1: num.min(0).lt(1).default(0.9),
  adam_beta2: num.min(0).lt(1).default(0.999),
  adam_epsilon: num.positive().default(1e-8),
  per_device_train_batch_size: positive.default(8),
  gradient_accumulation_steps: positive.default(1),
  seed: int.default(42),
  data_seed: int.nullable().default(null),
  dataloader_num_workers: count.default(0),
  fp16: z.boolean().default(false),
  bf16: z.boolean().default(false),
  tf32: z.boolean().nullable().default(null),
  warmup_ratio: num.min(0).max(1).default(0),
  warmup_steps: count.default(0),
  save_hf_model: z.boolean().default(false),
});

export const GeneratingArguments = section({
  do_sample: z.boolean().nullable().default(true),
  // (as the engine checks each request: sampling runs in float32)
  temperature: num.nonnegative().max(F32_MAX).nullable().default(0.95),
  top_p: num.gt(0).max(1).nullable().default(0.7),
  top_k: int.min(-1).max(2 ** 31 - 1).nullable().default(50),
  num_beams: positive.nullable().default(1),
  max_length: positive.nullable().default(8192),
  max_new_tokens: positive.nullable().default(8192),
  repetition_penalty: num.positive().nullable().default(1),
  length_penalty: num.nullable().default(1),
  num_return_sequences: positive.nullable().default(1),
  stop_strings: z.array(z.string()).nullable().default(null),
  include_stop_str_in_output: z.boolean().nullable().default(null),
  logprobs: count.nullable().default(0),
});

export const DataArguments = section({
  // agentrl honors `qwen2_5`; any other name (ROLL's `qwen3`, ...) renders with the folder's own
  // template, as ROLL's agentic pipeline does (lib/rollout/chat_setup.ts)
  template: z.string().nullable().default("native"),
  // extra variables for every rendering of the template, as apply_chat_template's keyword
  // arguments (TRL's and vLLM's chat_template_kwargs): {enable_thinking: false} for Qwen3
  chat_template_kwargs: freeDict.superRefine((d, ctx) => {
    for (const key of Object.keys(d).filter((k) => RESERVED_TEMPLATE_VARIABLES.includes(k))) {
      ctx.addIssue({
        code: "custom",
        path: [key],
        input: d[key],
        message: `${key} is defined by the renderer or the template language: expected another ` +
          "variable name",
      });
    }
  }).nullable().default(null),
  file_name: z.union([z.string(), z.array(z.string())]).nullable().default(null),
  eval_file_name: z.string().nullable().default(null),
  dataset_type: z.union([z.string(), z.array(z.string())]).nullable().default("json"),
  prompt: z.string().nullable().default(null),
  messages: z.string().nullable().default(null),
  response: z.string().nullable().default("solution"),
  tag: z.string().nullable().default("tag"),
  id: z.string().nullable().default("id"),
  domain_interleave_probs: z.record(z.string(), num).nullable().default(null),
  preprocessing_num_workers: count.nullable().default(null),
}).refine((d) => !(d.prompt && d.messages), {
  message: "prompt and messages are mutually exclusive",
  path: ["messages"],
});

/** The strategies the seeds name, and this project's own engine names. */
export const STRATEGY_NAMES = [
  "megatron_train",
  "deepspeed_train",
  "fsdp2_train",
  "vllm",
  "sglang",
  "hf_infer",
  "megatron_infer",
  "fsdp2_infer",
  "agentrl_train",
  "agentrl_infer",
  "agentrl_forward",
] as const;

export const StrategyArguments = section({
  strategy_name: z.enum(STRATEGY_NAMES).default("agentrl_train"),
  strategy_config: freeDict.nullable().default(null),
});

export const SequencePackingArguments = section({
  algorithm: z.enum(["none", "load_balance"]).default("none"),
  max_packed_sequence_length_forward: positive.nullable().default(null),
  max_packed_sequence_length_train: positive.nullable().default(null),
  min_num_micro_batches_forward: positive.default(1),
  min_num_micro_batches_train: positive.default(1),
});

/** Fields every worker role shares (ROLL's WorkerConfig). */
export const workerShape = {
  name: z.string().nullable().default(null),
  worker_cls: z.string().nullable().default(null),
  pg_variant: z.string().nullable().default(null),
  model_args: ModelArguments.default(() => ModelArguments.parse({})),
  training_args: TrainingArguments.default(() => TrainingArguments.parse({})),
  data_args: DataArguments.nullable().default(null),
  generating_args: GeneratingArguments.nullable().default(null),
  strategy_args: StrategyArguments.nullable().default(null),
  world_size: positive.nullable().default(null),
  device_mapping: deviceMapping.default(null),
  num_gpus_per_worker: count.default(1),
  model_update_frequency: positive.default(1),
  infer_batch_size: positive.default(16),
  backend_timeout: positive.default(30),
  system_envs: z.record(z.string(), z.string()).default({}),
  max_concurrency: positive.default(1),
  use_dynamic_batching_in_train: z.boolean().default(false),
  max_tokens_per_microbatch_in_train: count.default(0),
  sequence_length_round_in_train: positive.default(4),
  use_dynamic_batching_in_infer: z.boolean().default(false),
  max_tokens_per_microbatch_in_infer: count.nullable().default(null),
  sequence_length_round_in_infer: positive.default(4),
  use_sequence_packing: z.boolean().default(false),
  sequence_packing_args: SequencePackingArguments.default(() => SequencePackingArguments.parse({})),
  logits_in_fp32: z.boolean().default(false),
  apply_loss_scale: z.boolean().default(true),
  offload_nccl: z.boolean().default(false),
  topr_positive_weight: num.default(1),
  topr_negative_weight: num.default(1),
};

export const WorkerConfig = section(workerShape).superRefine((w, ctx) => {
  if (w.use_dynamic_batching_in_train && w.max_tokens_per_microbatch_in_train <= 0) {
    ctx.addIssue({
      code: "custom",
      path: ["max_tokens_per_microbatch_in_train"],
      message: "dynamic batching in training needs a positive token budget per micro-batch",
      input: w.max_tokens_per_microbatch_in_train,
    });
  }
  if (w.use_dynamic_batching_in_infer && !w.max_tokens_per_microbatch_in_infer) {
    ctx.addIssue({
      code: "custom",
      path: ["max_tokens_per_microbatch_in_infer"],
      message: "dynamic batching in inference needs a positive token budget per micro-batch",
      input: w.max_tokens_per_microbatch_in_infer,
    });
  }
});

export type WorkerConfig = z.output<typeof WorkerConfig>;
export type GeneratingArguments = z.output<typeof GeneratingArguments>;
