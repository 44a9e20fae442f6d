/**
 * The Qwen2 architecture's hyper-parameters, as Hugging Face `config.json`
 * writes them for `Qwen2ForCausalLM`.
 *
 * @module
 */

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
}
