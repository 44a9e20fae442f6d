/**
 * The decoder's hyper-parameters, as Hugging Face `config.json` writes them for
 * `Qwen2ForCausalLM` (Qwen2.5), `Qwen3ForCausalLM` (Qwen3's dense models),
 * `LlamaForCausalLM` (with Llama 3.1's RoPE scaling) and `MistralForCausalLM`: one decoder
 * with q/k/v biases (`attention_bias`), Qwen3's per-head RMSNorm of queries and keys, and an
 * optional RoPE frequency table.
 *
 * @module
 */

/** The Hugging Face architectures the decoder implements, by `model_type`. */
export const MODEL_TYPES = ["qwen2", "qwen3", "llama", "mistral"] as const;

/** One of {@linkcode MODEL_TYPES}. */
export type ModelType = typeof MODEL_TYPES[number];

/** Whether `v` is one of {@linkcode MODEL_TYPES}. */
export function isModelType(v: unknown): v is ModelType {
  return (MODEL_TYPES as readonly unknown[]).includes(v);
}

/** Model shape and numerics (the subset of `config.json` the model reads). */
export interface Qwen2Config {
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  /** Defaults to hidden_size / num_attention_heads. */
  head_dim: number;
  max_position_embeddings: number;
  rope_theta: number;
  rms_norm_eps: number;
  tie_word_embeddings: boolean;
  /** Qwen2 has biases on q/k/v projections (not on o). */
  attention_bias: boolean;
  bos_token_id: number | null;
  eos_token_id: number | number[] | null;
  /**
   * The Hugging Face architecture (default `"qwen2"`). `"qwen3"` adds a per-head RMSNorm
   * of the queries and of the keys before RoPE (`self_attn.q_norm.weight` and
   * `self_attn.k_norm.weight`, [head_dim] each); `"llama"` and `"mistral"` are Qwen2's layer
   * without q/k/v biases. Saved checkpoints name it in `config.json`.
   */
  model_type?: ModelType;
  /**
   * RoPE scaling: Llama 3.1's `llama3` type, the `linear` type, YaRN (`yarn`), or none (absent or
   * null).
   */
  rope_scaling?: RopeScaling | null;
}

/**
 * The RoPE scalings the model implements: each a table of rotation frequencies, and YaRN's also
 * an attention factor.
 */
export type RopeScaling = Llama3RopeScaling | LinearRopeScaling | YarnRopeScaling;

/**
 * The `linear` RoPE scaling (position interpolation): every frequency divided by `factor`, as if
 * the positions were.
 */
export interface LinearRopeScaling {
  rope_type: "linear";
  factor: number;
}

/** Llama 3.1's RoPE scaling (`rope_scaling` with `rope_type: "llama3"`), as `config.json` has it. */
export interface Llama3RopeScaling {
  rope_type: "llama3";
  /** The low frequencies' divisor (Llama 3.1: 8, Llama 3.2: 32). */
  factor: number;
  low_freq_factor: number;
  high_freq_factor: number;
  /** The context length the frequencies were trained for (8192). */
  original_max_position_embeddings: number;
}

/**
 * YaRN (`rope_type: "yarn"`, as Qwen2.5 / Qwen3 model cards add it for long contexts): the
 * frequencies that turn fewer than `beta_slow` times over the original context divided by
 * `factor`, those that turn more than `beta_fast` times kept, a linear ramp between; the
 * rotated queries and keys scaled by an attention factor (0.1 ln(factor) + 1 unless given).
 */
export interface YarnRopeScaling {
  rope_type: "yarn";
  /** The context extension (Qwen's model cards: 4). */
  factor: number;
  /** The context the frequencies were trained for (default: `max_position_embeddings`). */
  original_max_position_embeddings: number;
  /** The fast bound in turns over the original context (default 32). */
  beta_fast?: number;
  /** The slow bound in turns over the original context (default 1). */
  beta_slow?: number;
  /** The rotation's scale, overriding the one derived from `factor`. */
  attention_factor?: number;
  /** DeepSeek's mscale: with `mscale_all_dim`, the factor is mscale(f, mscale) / mscale(f, all). */
  mscale?: number;
  mscale_all_dim?: number;
  /** Whether the ramp's bounds are rounded out to whole dimensions (default true). */
  truncate?: boolean;
}

/**
 * The positions a model reads: `max_position_embeddings`, or with YaRN `factor` x
 * `original_max_position_embeddings` where that is more (vLLM takes the product: Qwen's model
 * cards add YaRN with factor 4 over 32,768 and leave max_position_embeddings at 32,768; we never
 * go below max_position_embeddings).
 *
 * @example
 * ```ts
 * import { contextLength } from "./config.ts";
 * const yarn = { rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768 } as const;
 * console.log(contextLength({ max_position_embeddings: 32768, rope_scaling: yarn })); // 131072
 * ```
 */
export function contextLength(
  config: Pick<Qwen2Config, "max_position_embeddings" | "rope_scaling">,
): number {
  const s = config.rope_scaling;
  const yarn = s?.rope_type === "yarn"
    ? Math.floor(s.factor * s.original_max_position_embeddings)
    : 0;
  return Math.max(config.max_position_embeddings, yarn);
}

/**
 * What sets {@linkcode contextLength}, for messages: `max_position_embeddings`, or YaRN's
 * `factor x original_max_position_embeddings`.
 */
export function contextLengthName(
  config: Pick<Qwen2Config, "max_position_embeddings" | "rope_scaling">,
): string {
  return contextLength(config) > config.max_position_embeddings
    ? "context (YaRN's factor x original_max_position_embeddings)"
    : "max_position_embeddings";
}

/** Whether `config`'s attention normalizes each head's query and key (Qwen3). */
export function hasQkNorm(config: { model_type?: ModelType }): boolean {
  return config.model_type === "qwen3";
}
