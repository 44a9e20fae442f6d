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
  /** RoPE scaling: Llama 3.1's `llama3` type, the `linear` type, or none (absent or null). */
  rope_scaling?: RopeScaling | null;
}

/** The RoPE scalings the model implements (each a table of rotation frequencies). */
export type RopeScaling = Llama3RopeScaling | LinearRopeScaling;

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

/** Whether `config`'s attention normalizes each head's query and key (Qwen3). */
export function hasQkNorm(config: { model_type?: ModelType }): boolean {
  return config.model_type === "qwen3";
}
