/**
 * Generation (ROLL's actor_infer role): the continuous-batching
 * {@linkcode GenerationEngine} over a Qwen2 model's KV cache, its request and
 * result records, and the static-batching baseline {@linkcode generateStatic}.
 *
 * @example
 * ```ts
 * import { Kernels } from "../../ffi/mod.ts";
 * import { Qwen2Model } from "../model/qwen2.ts";
 * import { GenerationEngine } from "./mod.ts";
 * using k = Kernels.open({ threads: 2 });
 * using model = new Qwen2Model(k, {
 *   vocab_size: 64, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
 *   num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8,
 *   max_position_embeddings: 256, rope_theta: 10000, rms_norm_eps: 1e-6,
 *   tie_word_embeddings: true, attention_bias: true, bos_token_id: null, eos_token_id: null,
 * });
 * await using engine = new GenerationEngine(model, { maxRunningRequests: 2, maxModelLen: 32 });
 * const out = await engine.generate({ prompt_token_ids: [3, 4], max_new_tokens: 4, stop_token_ids: [9] });
 * console.log(out.finish_reason === "length" || out.stop_reason === 9); // true
 * ```
 *
 * @module
 */
export {
  type DecodeFn,
  type GenerateOptions,
  GenerationEngine,
  type GenerationEngineOptions,
  type NamedWeights,
  type UpdateWeightsOptions,
} from "./engine.ts";
export { formatBytes, kvCacheBytes, KvCacheSizeError } from "./kv_cache_size.ts";
export {
  generateStatic,
  generateStaticPadded,
  type StaticBatchOptions,
  type StaticPaddedOptions,
} from "./static_batch.ts";
export type {
  AdmittedSequence,
  EngineStats,
  FinishedSequence,
  FinishReason,
  GenerationRequest,
  GenerationResult,
  StepInfo,
} from "./types.ts";
