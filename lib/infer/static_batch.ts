/**
 * The static-batching baseline of the generation engine, for benchmarks: a
 * whole batch is admitted, runs until all of it has finished, then the next.
 *
 * @module
 */
import { sample } from "../../ffi/mod.ts";
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

/** Options of {@linkcode generateStaticPadded}. */
export interface StaticPaddedOptions {
  maxRunningRequests: number;
  maxModelLen: number;
  /** Called after every decode step with the number of rows it ran. */
  onStep?: (rows: number) => void;
}

/**
 * The classic static-batching baseline (benchmarks only), as a plain
 * `generate` over a padded batch runs: `maxRunningRequests` requests at a
 * time, prefilled together, then every row decodes at every step until the
 * longest request of the batch is done — finished rows keep their slot and
 * their compute (their tokens are discarded). Stops at `max_new_tokens` only
 * (no stop tokens or strings). Returns the tokens generated per request.
 *
 * @example
 * ```ts
 * import { Kernels } from "../../ffi/mod.ts";
 * import { Qwen2Model } from "../model/qwen2.ts";
 * import { generateStaticPadded } from "./static_batch.ts";
 * using k = Kernels.open({ threads: 1 });
 * using model = new Qwen2Model(k, {
 *   vocab_size: 64, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
 *   num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8,
 *   max_position_embeddings: 256, rope_theta: 10000, rms_norm_eps: 1e-6,
 *   tie_word_embeddings: true, attention_bias: true, bos_token_id: null, eos_token_id: null,
 * });
 * let steps = 0;
 * const out = generateStaticPadded(model, [3, 9, 5].map((n, i) => ({
 *   prompt_token_ids: [1, 2], max_new_tokens: n, seed: i,
 * })), { maxRunningRequests: 2, maxModelLen: 32, onStep: () => steps++ });
 * console.log(out.map((t) => t.length), steps); // [ 3, 9, 5 ] 12
 * ```
 */
export function generateStaticPadded(
  model: Qwen2Model,
  requests: readonly GenerationRequest[],
  options: StaticPaddedOptions,
): number[][] {
  const n = options.maxRunningRequests;
  const results: number[][] = [];
  using cache = model.createKvCache(n, options.maxModelLen);
  for (let b0 = 0; b0 < requests.length; b0 += n) {
    const batch = requests.slice(b0, b0 + n);
    const prompts = batch.map((r) => Array.from(r.prompt_token_ids));
    const limits = batch.map((r) => r.max_new_tokens ?? 16);
    const longest = Math.max(...limits);
    // every row decodes as long as the longest (padding compute): each must fit that far
    prompts.forEach((p, i) => {
      if (p.length + longest > options.maxModelLen) {
        throw new RangeError(
          `Request ${b0 + i}: its ${p.length}-token prompt plus the batch's longest ` +
            `max_new_tokens (${longest}) exceed maxModelLen ${options.maxModelLen} (a padded ` +
            "batch decodes every row as long as the longest)",
        );
      }
    });
    const out: number[][] = batch.map(() => []);
    const rows = batch.map((r, i) => ({
      temperature: r.do_sample === false ? 0 : r.temperature ?? 1, // do_sample false: greedy
      topK: r.top_k ?? -1,
      topP: r.top_p ?? 1,
      seed: r.seed ?? b0 + i,
      counter: 0,
    }));
    // prefill every prompt in one call
    const tokens: number[] = [],
      positions: number[] = [],
      slots: number[] = [],
      last: number[] = [];
    prompts.forEach((p, i) => {
      p.forEach((t, j) => {
        tokens.push(t);
        positions.push(j);
        slots.push(i);
      });
      last.push(tokens.length - 1);
    });
    let logits = model.forwardCached(
      cache,
      Int32Array.from(tokens),
      Int32Array.from(positions),
      Int32Array.from(slots),
      Int32Array.from(last),
    )!;
    const pos = prompts.map((p) => p.length);
    const rowIds = Int32Array.from(batch.map((_, i) => i));
    for (let step = 0; step < longest; step++) {
      const { tokens: next } = sample(
        model.kernels,
        logits,
        rows.map((r, i) => ({ ...r, counter: out[i]!.length })),
      );
      next.forEach((t, i) => {
        if (out[i]!.length < limits[i]!) out[i]!.push(t);
      });
      if (step + 1 === longest) break;
      // every row decodes, finished or not (padding compute)
      logits = model.forwardCached(
        cache,
        Int32Array.from(next),
        Int32Array.from(pos),
        rowIds,
        rowIds,
      )!;
      for (let i = 0; i < pos.length; i++) pos[i]!++;
      options.onStep?.(batch.length);
    }
    results.push(...out);
  }
  return results;
}
