/**
 * The options of the generation engine (`GenerationEngine`): its constructor's,
 * `generate`'s and `updateWeights`', and the named weights `updateWeights` takes.
 *
 * @example
 * ```ts
 * import type { GenerationEngineOptions } from "./engine_options.ts";
 * const options: GenerationEngineOptions = { maxRunningRequests: 8, maxModelLen: 512 };
 * console.log(options.maxModelLen); // 512
 * ```
 *
 * @module
 */
import type { NamedParam } from "../model/qwen2.ts";
import type { StepInfo } from "./types.ts";
import type { DecodeFn } from "./_stop.ts";

/**
 * Options of the `GenerationEngine` constructor.
 *
 * @example
 * ```ts
 * import type { GenerationEngineOptions } from "./engine_options.ts";
 * const options: GenerationEngineOptions = {
 *   maxRunningRequests: 64, // KV-cache slots
 *   maxModelLen: 4096, // prompt + generation per request
 *   eosTokenIds: [2],
 *   onStep: (s) => console.log(`step ${s.step}: ${s.decoded} decoded, ${s.admitted.length} admitted`),
 * };
 * console.log(options.maxRunningRequests); // 64
 * ```
 */
export interface GenerationEngineOptions {
  /**
   * Sequences that run at once: the KV cache's slots. Further requests wait
   * for a free slot.
   */
  maxRunningRequests: number;
  /**
   * Prompt + generated tokens of one request at most (the KV cache's length
   * per slot; at most the model's `max_position_embeddings`). A request whose
   * prompt + max_new_tokens exceeds it is rejected.
   */
  maxModelLen: number;
  /**
   * Decodes token ids to text (e.g. `(ids) => tokenizer.decode(ids)`): fills
   * the results' `text` and makes `stop_strings` work. Without it, text is "".
   */
  decode?: DecodeFn;
  /** Token ids that end every request unless it sets `ignore_eos` (e.g. `tokenizer.eosTokenIds`). */
  eosTokenIds?: readonly number[];
  /**
   * Tokens in one step's forwardCached call at most (decode tokens + admitted
   * prompts). One prompt is always admitted when a slot is free, whatever its
   * length, so no request starves. Default max(2048, maxRunningRequests).
   */
  maxBatchedTokens?: number;
  /**
   * `"continuous"` (default): admit waiting requests whenever slots are free.
   * `"static"`: admit a batch only when every running sequence has finished
   * (the static-batching baseline, see `generateStatic` in static_batch.ts).
   */
  batching?: "continuous" | "static";
  /** Seed of the streams of requests that name no seed (default 0). */
  seed?: number;
  /**
   * Queue each step before reading the tokens of the step before it (default: on when the
   * model runs on CUDA). The step's token ids are then the ones the last step sampled on the
   * device, and the host's work for a step (scheduling, launches) overlaps the GPU's work for
   * the step before. Used while the next step runs the same sequences (nobody waiting for a
   * free slot, none sure to finish); a sequence that stops at a stop token costs one row of
   * the step after, which is dropped (`discardedTokens`), and a weight update drops a queued
   * step. A request that arrives (or waits for a slot that a stop token frees) while a step is
   * queued ahead starts one step later. A request's tokens are the same either way on the CPU;
   * on CUDA the batch's rows can pick other kernels (a single-row decode path, the greedy
   * sampler) and so round differently, as any change of batch does. On the CPU it only adds the
   * dropped rows, so it is off there by default.
   */
  lookahead?: boolean;
  /**
   * Called after every step with what it did (for monitoring and tests), once
   * the step's model calls are done: it may abort requests or update weights,
   * but it must not throw (a throw stops the engine and fails every request).
   */
  onStep?: (info: StepInfo) => void;
}

/**
 * Options of `GenerationEngine.generate`.
 *
 * @example
 * ```ts
 * import type { GenerateOptions } from "./engine_options.ts";
 * const options: GenerateOptions = { signal: AbortSignal.timeout(30_000) }; // give up after 30 s
 * console.log(options.signal instanceof AbortSignal); // true
 * ```
 */
export interface GenerateOptions {
  /** Aborting it aborts the request (as `GenerationEngine.abort`). */
  signal?: AbortSignal;
}

/**
 * Named weights for `GenerationEngine.updateWeights`: a map from
 * Hugging Face name to data, or (name, data[, shape]) records such as
 * `Qwen2Model.exportNamed` yields.
 *
 * @example
 * ```ts
 * import type { NamedWeights } from "./engine_options.ts";
 * const norm = new Float32Array(896).fill(1);
 * const asMap: NamedWeights = new Map([["model.norm.weight", norm]]);
 * const asRecords: NamedWeights = [{ name: "model.norm.weight", data: norm, shape: [896] }];
 * console.log(asMap instanceof Map, Array.isArray(asRecords)); // true true
 * ```
 */
export type NamedWeights =
  | ReadonlyMap<string, Float32Array>
  | Iterable<Pick<NamedParam, "name" | "data"> & { shape?: readonly number[] }>;

/**
 * Options of `GenerationEngine.updateWeights`.
 *
 * @example
 * ```ts
 * import type { UpdateWeightsOptions } from "./engine_options.ts";
 * const partial: UpdateWeightsOptions = { strict: false }; // e.g. only the LoRA-merged layers
 * console.log(partial.strict); // false
 * ```
 */
export interface UpdateWeightsOptions {
  /**
   * Default true: the source must give every weight of the engine's model and
   * no other. When false, weights it lacks keep their values and names the
   * model lacks are ignored (a partial update).
   */
  strict?: boolean;
}
