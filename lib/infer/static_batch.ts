/**
 * The static-batching baseline of the generation engine, for benchmarks: a
 * whole batch is admitted, runs until all of it has finished, then the next.
 *
 * @module
 */
import type { Qwen2Model } from "../model/qwen2.ts";
import { GenerationEngine, type GenerationEngineOptions } from "./engine.ts";
import type { GenerationRequest, GenerationResult } from "./types.ts";

/**
 * Options of {@linkcode generateStatic}: the engine's, but for `batching`.
 *
 * @example
 * ```ts
 * import type { StaticBatchOptions } from "./static_batch.ts";
 * const options: StaticBatchOptions = { maxRunningRequests: 16, maxModelLen: 96 };
 * console.log(options.maxRunningRequests); // 16
 * ```
 */
export type StaticBatchOptions = Omit<GenerationEngineOptions, "batching">;

/**
 * The static-batching baseline (benchmarks only): requests run in batches of
 * `maxRunningRequests` in submission order; a batch is admitted (prefilled
 * together) only when every sequence of the previous batch has finished.
 * Finished sequences leave the batch's compute (no padding), but their slots
 * stay empty until the whole batch is done. Same model calls, sampling and
 * stop handling as the engine, so a comparison measures scheduling alone.
 * Results come in request order.
 *
 * @example
 * ```ts
 * import { Kernels } from "../../ffi/mod.ts";
 * import { Qwen2Model } from "../model/qwen2.ts";
 * import { generateStatic } from "./static_batch.ts";
 * using k = Kernels.open({ threads: 2 });
 * using model = new Qwen2Model(k, {
 *   vocab_size: 64, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
 *   num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8,
 *   max_position_embeddings: 256, rope_theta: 10000, rms_norm_eps: 1e-6,
 *   tie_word_embeddings: true, attention_bias: true, bos_token_id: null, eos_token_id: null,
 * });
 * const requests = [3, 9, 5].map((n) => ({ prompt_token_ids: [1, 2], max_new_tokens: n }));
 * const results = await generateStatic(model, requests, { maxRunningRequests: 2, maxModelLen: 32 });
 * console.log(results.map((r) => r.completion_tokens)); // [ 3, 9, 5 ]
 * ```
 */
export async function generateStatic(
  model: Qwen2Model,
  requests: readonly GenerationRequest[],
  options: StaticBatchOptions,
): Promise<GenerationResult[]> {
  const engine = new GenerationEngine(model, { ...options, batching: "static" });
  try {
    return await Promise.all(requests.map((r) => engine.generate(r)));
  } finally {
    await engine.close();
  }
}
