/**
 * Qwen2.5-0.5B's shape (Hugging Face `Qwen/Qwen2.5-0.5B` config.json), for the
 * benchmarks. Its own module with no npm imports, so the GPU benchmark
 * (`bench/gpu/bench.ts`) can use it on a machine with no network.
 *
 * @module
 */
import type { Qwen2Config } from "../lib/model/config.ts";

/** Qwen2.5-0.5B's shape. */
export const QWEN2_5_0_5B_CONFIG: Qwen2Config = {
  vocab_size: 151936,
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  head_dim: 64,
  max_position_embeddings: 32768,
  rope_theta: 1000000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
  attention_bias: true,
  bos_token_id: 151643,
  eos_token_id: 151643,
};
