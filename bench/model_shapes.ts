/**
 * The shapes the benchmarks can time (`bench/gpu/bench.ts --model NAME`): Qwen2.5-0.5B (the
 * default, `bench/qwen2_5_0_5b.ts`), Qwen3-0.6B (per-head q/k norms, head_dim 128 beside hidden
 * 1024), Llama-3.2-1B (Llama 3's scaled RoPE), Qwen2.5-1.5B and Qwen2.5-3B (wider MLPs), each as
 * its Hugging Face config.json gives it.
 * No npm imports, so the GPU benchmark can use it on a machine with no network.
 *
 * @module
 */
import type { Qwen2Config } from "../lib/model/config.ts";
import { QWEN2_5_0_5B_CONFIG } from "./qwen2_5_0_5b.ts";

/** Qwen3-0.6B's shape (`Qwen/Qwen3-0.6B`: 596,049,920 parameters, tied). */
export const QWEN3_0_6B_CONFIG: Qwen2Config = {
  model_type: "qwen3",
  vocab_size: 151936,
  hidden_size: 1024,
  intermediate_size: 3072,
  num_hidden_layers: 28,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  head_dim: 128,
  max_position_embeddings: 40960,
  rope_theta: 1000000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
  attention_bias: false,
  bos_token_id: 151643,
  eos_token_id: 151645,
};

/** Llama-3.2-1B's shape (`meta-llama/Llama-3.2-1B`: tied, RoPE scaled by 32 past 8192). */
export const LLAMA3_2_1B_CONFIG: Qwen2Config = {
  model_type: "llama",
  vocab_size: 128256,
  hidden_size: 2048,
  intermediate_size: 8192,
  num_hidden_layers: 16,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  head_dim: 64,
  max_position_embeddings: 131072,
  rope_theta: 500000,
  rms_norm_eps: 1e-5,
  tie_word_embeddings: true,
  attention_bias: false,
  bos_token_id: 128000,
  eos_token_id: 128001,
  rope_scaling: {
    rope_type: "llama3",
    factor: 32,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 8192,
  },
};

/**
 * Qwen2.5-1.5B's shape (`Qwen/Qwen2.5-1.5B`: 1,543,714,304 parameters, tied): a wider MLP than a
 * block an SM of the decode chain holds.
 */
export const QWEN2_5_1_5B_CONFIG: Qwen2Config = {
  ...QWEN2_5_0_5B_CONFIG,
  hidden_size: 1536,
  intermediate_size: 8960,
  num_hidden_layers: 28,
  num_attention_heads: 12,
  num_key_value_heads: 2,
  head_dim: 128,
  max_position_embeddings: 131072,
};

/** Qwen2.5-3B's shape (`Qwen/Qwen2.5-3B`: 3,085,938,688 parameters, tied). */
export const QWEN2_5_3B_CONFIG: Qwen2Config = {
  ...QWEN2_5_0_5B_CONFIG,
  hidden_size: 2048,
  intermediate_size: 11008,
  num_hidden_layers: 36,
  num_attention_heads: 16,
  num_key_value_heads: 2,
  head_dim: 128,
  max_position_embeddings: 32768,
};

/** The shapes by the names `--model` takes. */
export const BENCH_MODELS: Readonly<Record<string, Qwen2Config>> = {
  "qwen2_5_0_5b": QWEN2_5_0_5B_CONFIG,
  "qwen3_0_6b": QWEN3_0_6B_CONFIG,
  "llama3_2_1b": LLAMA3_2_1B_CONFIG,
  "qwen2_5_1_5b": QWEN2_5_1_5B_CONFIG,
  "qwen2_5_3b": QWEN2_5_3B_CONFIG,
};

/** The shape named `name`; throws naming the known ones. */
export function benchModel(name: string): Qwen2Config {
  const config = BENCH_MODELS[name];
  if (!config) {
    throw new Error(
      `--model ${JSON.stringify(name)}: expected one of ${Object.keys(BENCH_MODELS).join(", ")}`,
    );
  }
  return config;
}
