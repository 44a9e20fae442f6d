/**
 * The shared pieces of `ops_compare.ts`'s cases: tolerances, the seeded inputs, the
 * scope that frees a case's tensors, and small array helpers.
 *
 * @module
 */
import { Kernels, Tensor } from "../../../ffi/mod.ts";

/** cuBLAS products on TF32 tensor cores (10-bit mantissa inputs, fp32 accumulation). */
export const TOL_GEMM = 2e-3;
/** fp32 math in another order (reductions, atomics, FMA contraction, CUDA vs libm exp/log). */
export const TOL_FP32 = 1e-4;
/** bf16 weights: the CUDA library rounds the activations to bf16 too (8-bit mantissa)
 * for its tensor-core GEMMs; the CPU library widens the weights and computes in fp32. */
export const TOL_BF16 = 1e-2;
/** Data movement or one correctly rounded operation per element (copy, a + b, a * s,
 * round-to-nearest-even): bitwise equal. */
export const EXACT = 0;

// ---- seeded inputs ----------------------------------------------------------

/** A small seeded generator (mulberry32), one stream per case name. */
export class Rand {
  #a: number;
  constructor(name: string, seed: number) {
    let h = (seed ^ 0x9e3779b9) >>> 0;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
    this.#a = h;
  }
  uniform(): number {
    this.#a = (this.#a + 0x6d2b79f5) >>> 0;
    let t = this.#a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  range(lo: number, hi: number): number {
    return lo + (hi - lo) * this.uniform();
  }
  normal(): number {
    return Math.sqrt(-2 * Math.log(1 - this.uniform())) * Math.cos(2 * Math.PI * this.uniform());
  }
  // (plain loops: TypedArray.from over an array-like object is ~10x slower, seconds here)
  randn(n: number, s = 1): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.normal() * s;
    return out;
  }
  uniforms(n: number, lo: number, hi: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.range(lo, hi);
    return out;
  }
  ints(n: number, lo: number, hi: number): Int32Array {
    const out = new Int32Array(n);
    for (let i = 0; i < n; i++) out[i] = lo + Math.floor(this.uniform() * (hi - lo + 1));
    return out;
  }
  mask(n: number, p: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.uniform() < p ? 1 : 0;
    return out;
  }
}

/** Tensors of one case on one device, freed together. */
export class Scope implements Disposable {
  #held: Tensor[] = [];
  constructor(readonly k: Kernels) {}
  #keep<T extends Tensor>(t: T): T {
    this.#held.push(t);
    return t;
  }
  f32(data: Float32Array, shape: readonly number[] = [data.length]): Tensor<"f32"> {
    return this.#keep(Tensor.from(this.k, data, shape));
  }
  i32(data: Int32Array, shape: readonly number[] = [data.length]): Tensor<"i32"> {
    return this.#keep(Tensor.from(this.k, data, shape));
  }
  /** An output the op must write: NaN until it does. */
  nan(shape: readonly number[]): Tensor<"f32"> {
    return this.f32(new Float32Array(size(shape)).fill(NaN), shape);
  }
  bf16(bits: Uint16Array, shape: readonly number[] = [bits.length]): Tensor<"bf16"> {
    const t = this.#keep(new Tensor(this.k, shape, "bf16"));
    t.write(bits);
    return t;
  }
  [Symbol.dispose](): void {
    for (const t of this.#held) t.free();
  }
}

export const cuOf = (lens: number[]) => Int32Array.from([0, ...lens].map((_, i) => sumTo(lens, i)));
export const sumTo = (xs: number[], n: number) => xs.slice(0, n).reduce((a, b) => a + b, 0);
export const size = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);
/** after - before, in float64: what an accumulating (+=) op added. */
export const delta = (after: Float32Array, before: Float32Array) =>
  Float64Array.from(after, (x, i) => x - before[i]!);
/** float32 values rounded to bf16 bits (nearest even; finite inputs). */
export const bf16Bits = (x: Float32Array) => {
  const bits = new Uint32Array(Float32Array.from(x).buffer);
  const out = new Uint16Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i]!;
    out[i] = ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
  }
  return out;
};
/** bf16 bits as the float32 values they encode (NaN bits stay NaN). */
export const bf16Values = (bits: Uint16Array) =>
  new Float32Array(Uint32Array.from(bits, (b) => b << 16).buffer);

/**
 * `make()`'s value, made at the first call and kept: a case's inputs built only when it runs (a
 * filtered run skips them), once for both libraries.
 */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | null = null;
  return () => (made ??= { value: make() }).value;
}

/** A decode layer's step constants: one token of `slot` at `pos` (eps 1e-6, theta 10000). */
export const decodeStep = (s: Scope, slot: number, pos: number, hq: number, hd: number) => ({
  slot: s.i32(Int32Array.of(slot)),
  position: s.i32(Int32Array.of(pos)),
  len: s.i32(Int32Array.of(pos + 1)),
  hq,
  eps: 1e-6,
  theta: 10000,
  scale: 1 / Math.sqrt(hd),
});

export type Output = ArrayLike<number> | Record<string, number>;
export interface Case {
  op: string;
  /** One tolerance for every output, or one per output name. */
  tol: number | Record<string, number>;
  run: (s: Scope) => Record<string, Output>;
  /** An optional entry point the case calls: skipped, with a note, where a library lacks it. */
  needs?: "arl_rope_freqs" | "arl_norm_rope_kv_cache_write" | "arl_decode_layer_norms_bf16";
}
