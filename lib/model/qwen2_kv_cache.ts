/**
 * The key/value cache of a Qwen2 model for generation: per layer, a key and a
 * value tensor (S, HKV, L, D) for S slots (sequences) of up to L positions,
 * all carved out of one native allocation.
 *
 * @example
 * ```ts
 * import { Kernels } from "../../ffi/mod.ts";
 * import { Qwen2KvCache } from "./qwen2_kv_cache.ts";
 * using k = Kernels.open();
 * using cache = new Qwen2KvCache(k, {
 *   numLayers: 2, numKvHeads: 2, headDim: 8, numSlots: 4, maxLen: 64,
 * });
 * console.log(cache.k[0]!.shape); // [ 4, 2, 64, 8 ]
 * ```
 *
 * @module
 */
import { type Kernels, Tensor } from "../../ffi/mod.ts";

/** Sizes of a {@linkcode Qwen2KvCache}. */
export interface KvCacheShape {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  /** Sequences the cache holds at once (S). */
  numSlots: number;
  /** Positions per slot (L): a token at position p needs p < maxLen. */
  maxLen: number;
}

/** Per-layer key and value caches (S, HKV, L, D) in one native buffer. */
export class Qwen2KvCache implements Disposable {
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly numSlots: number;
  readonly maxLen: number;
  /** Key caches, one (S, HKV, L, D) view per layer. */
  readonly k: readonly Tensor<"f32">[];
  /** Value caches, one (S, HKV, L, D) view per layer. */
  readonly v: readonly Tensor<"f32">[];
  readonly #buffer: Tensor<"f32">;

  constructor(kernels: Kernels, shape: KvCacheShape) {
    for (const key of ["numLayers", "numKvHeads", "headDim", "numSlots", "maxLen"] as const) {
      const n = shape[key];
      if (!Number.isInteger(n) || n <= 0 || n > 2 ** 31 - 1) {
        throw new RangeError(`KV cache ${key} must be a positive integer, got ${n}`);
      }
    }
    this.numLayers = shape.numLayers;
    this.numKvHeads = shape.numKvHeads;
    this.headDim = shape.headDim;
    this.numSlots = shape.numSlots;
    this.maxLen = shape.maxLen;
    const dims = [this.numSlots, this.numKvHeads, this.maxLen, this.headDim];
    const per = dims.reduce((a, b) => a * b, 1);
    this.#buffer = new Tensor(kernels, [2 * this.numLayers, per], "f32");
    const k: Tensor<"f32">[] = [];
    const v: Tensor<"f32">[] = [];
    for (let l = 0; l < this.numLayers; l++) {
      k.push(Tensor.viewOf(this.#buffer, (2 * l) * per * 4, dims));
      v.push(Tensor.viewOf(this.#buffer, (2 * l + 1) * per * 4, dims));
    }
    this.k = k;
    this.v = v;
  }

  /** Bytes of native memory the cache holds. */
  get byteSize(): number {
    return this.#buffer.byteSize;
  }

  /** Whether the memory is still held. */
  get alive(): boolean {
    return this.#buffer.alive;
  }

  /** Frees the cache (idempotent); its views stop working. */
  free(): void {
    this.#buffer.free();
  }

  [Symbol.dispose](): void {
    this.free();
  }
}
