/**
 * Compares every op of the kernel ABI between two kernel contexts (the CPU
 * library and the CUDA one) on the same seeded random inputs. Per output it
 * reports the relative L2 error ||cuda - cpu|| / ||cpu||, the largest absolute
 * error and pass/fail against a tolerance (NaN or infinity never passes).
 * Outputs the op writes are poisoned with NaN first; outputs it accumulates
 * into (+=) start from the same random values on both sides and are compared
 * by their increment (after - before), so a kernel that overwrites fails.
 *
 * Usage: `deno run --allow-read --allow-env --allow-ffi bench/gpu/ops_compare.ts [--self-check]`
 * prints a table and exits 1 if any output is out of tolerance; without a CUDA
 * device it says "skipped: no CUDA device" and exits 0. `--self-check`
 * compares two CPU contexts (1 thread against all cores) instead: a check of
 * this harness that needs no GPU. `AGENTRL_OPS_ONLY=a|b` runs only the ops whose name
 * contains `a` or `b`; `AGENTRL_OPS_SKIP=a|b` leaves out those whose name contains `a` or `b`
 * (`|` separates, as names hold commas).
 *
 * @module
 */
import {
  adamw,
  add,
  attentionBackward,
  attentionDecode,
  attentionForward,
  type AttentionPrecision,
  decodeLayer,
  decodeLayers,
  embeddingBackward,
  embeddingForward,
  fill,
  fmaPeak,
  fromBf16,
  KernelGraph,
  Kernels,
  klFull,
  kvCacheWrite,
  linearBackward,
  linearForward,
  lmHead,
  logprobBackward,
  logprobForward,
  LOSS_AGG_MODES,
  ppoLoss,
  type PpoLossParams,
  rmsnormBackward,
  rmsnormForward,
  rmsnormLinearForward,
  rmsnormLinearSwigluForward,
  rmsnormQkvRopeForward,
  rope,
  ropeKvCacheWrite,
  sample,
  type SampleRow,
  sampleStart,
  scale,
  sgemm,
  sumSquares,
  swigluBackward,
  swigluForward,
  Tensor,
  toBf16,
  valueHeadBackward,
  valueHeadForward,
  valueLoss,
} from "../../ffi/mod.ts";
import type { Qwen2Config } from "../../lib/model/config.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";

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

/** One compared output of one op. */
export interface OpRow {
  op: string;
  output: string;
  /** ||cuda - cpu|| / ||cpu|| (L2); for named scalars (metrics) the largest
   * |cuda - cpu| / max(|cpu|, 1e-3). */
  relErr: number;
  maxAbs: number;
  /** 0: must be bitwise equal. */
  tol: number;
  ok: boolean;
  note?: string;
}

// ---- seeded inputs ----------------------------------------------------------

/** A small seeded generator (mulberry32), one stream per case name. */
class Rand {
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
class Scope implements Disposable {
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

const cuOf = (lens: number[]) => Int32Array.from([0, ...lens].map((_, i) => sumTo(lens, i)));
const sumTo = (xs: number[], n: number) => xs.slice(0, n).reduce((a, b) => a + b, 0);
const size = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);
/** after - before, in float64: what an accumulating (+=) op added. */
const delta = (after: Float32Array, before: Float32Array) =>
  Float64Array.from(after, (x, i) => x - before[i]!);
/** float32 values rounded to bf16 bits (nearest even; finite inputs). */
const bf16Bits = (x: Float32Array) => {
  const bits = new Uint32Array(Float32Array.from(x).buffer);
  const out = new Uint16Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i]!;
    out[i] = ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
  }
  return out;
};
/** bf16 bits as the float32 values they encode (NaN bits stay NaN). */
const bf16Values = (bits: Uint16Array) =>
  new Float32Array(Uint32Array.from(bits, (b) => b << 16).buffer);

// ---- cases ------------------------------------------------------------------

/** A decode layer's step constants: one token of `slot` at `pos` (eps 1e-6, theta 10000). */
const decodeStep = (s: Scope, slot: number, pos: number, hq: number, hd: number) => ({
  slot: s.i32(Int32Array.of(slot)),
  position: s.i32(Int32Array.of(pos)),
  len: s.i32(Int32Array.of(pos + 1)),
  hq,
  eps: 1e-6,
  theta: 10000,
  scale: 1 / Math.sqrt(hd),
});

type Output = ArrayLike<number> | Record<string, number>;
interface Case {
  op: string;
  /** One tolerance for every output, or one per output name. */
  tol: number | Record<string, number>;
  run: (s: Scope) => Record<string, Output>;
}

function matmulCases(seed: number): Case[] {
  const cases: Case[] = [];
  const [m, n, kk] = [67, 45, 83];
  const combos = [[false, false], [false, true], [true, false], [true, true]] as const;
  for (const [ta, tb] of combos) {
    const tr = `${ta ? "T" : "N"}${tb ? "T" : "N"}`;
    const r = new Rand(`sgemm ${tr}`, seed);
    const [a, b, c0] = [r.randn(m * kk), r.randn(kk * n), r.randn(m * n)];
    const aShape = ta ? [kk, m] : [m, kk], bShape = tb ? [n, kk] : [kk, n];
    for (const [alpha, beta] of [[1, 0], [0.7, 0.3]] as const) {
      cases.push({
        op: `sgemm ${tr} alpha=${alpha} beta=${beta}`,
        tol: TOL_GEMM,
        run: (s) => {
          // beta 0 must ignore C's old content, NaNs included.
          const c = beta === 0 ? s.nan([m, n]) : s.f32(c0, [m, n]);
          const o = { transA: ta, transB: tb, alpha, beta };
          sgemm(s.k, c, s.f32(a, aShape), s.f32(b, bShape), o);
          return { c: c.read() };
        },
      });
    }
    // Leading dimensions past the columns: arl_sgemm itself (the wrapper passes packed rows).
    const [lda, ldb, ldc] = [aShape[1]! + 5, bShape[1]! + 3, n + 7];
    const [ap, bp, cp] = [r.randn(aShape[0]! * lda), r.randn(bShape[0]! * ldb), r.randn(m * ldc)];
    cases.push({
      op: `sgemm ${tr} lda/ldb/ldc padded`,
      tol: { c: TOL_GEMM, "c padding": EXACT },
      run: (s) => {
        const [A, B, c] = [s.f32(ap), s.f32(bp), s.f32(cp)];
        const sizes = [m, n, kk, 0.7, 0.3, lda, ldb, ldc] as const;
        s.k.check("arl_sgemm", s.k.sym.arl_sgemm(s.k.ctx, c.ptr, A.ptr, B.ptr, +ta, +tb, ...sizes));
        const all = c.read(); // the padding must keep its old values
        return {
          c: all.filter((_, i) => i % ldc < n),
          "c padding": all.filter((_, i) => i % ldc >= n),
        };
      },
    });
  }

  const [lm, ln, lk] = [37, 53, 96];
  const r = new Rand("linear", seed);
  const [x, w, bias, y0] = [r.randn(lm * lk), r.randn(ln * lk, 0.1), r.randn(ln), r.randn(lm * ln)];
  const [dy, dx0, db0] = [r.randn(lm * ln), r.randn(lm * lk), r.randn(ln)];
  const dw0 = r.randn(ln * lk, 0.1);
  const xw = (s: Scope) => [s.f32(x, [lm, lk]), s.f32(w, [ln, lk])] as const;
  for (const [withBias, acc] of [[true, false], [true, true], [false, false]] as const) {
    cases.push({
      op: `linearForward${withBias ? " bias" : ""}${acc ? " accumulate" : ""}`,
      tol: TOL_GEMM,
      run: (s) => {
        const y = acc ? s.f32(y0, [lm, ln]) : s.nan([lm, ln]);
        linearForward(s.k, y, ...xw(s), withBias ? s.f32(bias) : null, acc);
        return { y: y.read() };
      },
    });
  }
  // Few rows (decode): the CUDA library's fp32 GEMV path; k = 37 takes its unaligned loop.
  for (const [fm, fk] of [[1, 96], [3, 96], [8, 96], [2, 37]] as const) {
    const q = new Rand(`linear rows ${fm}x${fk}`, seed);
    const [fx, fw, fb, fy0] = [
      q.randn(fm * fk),
      q.randn(ln * fk, 0.1),
      q.randn(ln),
      q.randn(fm * ln),
    ];
    for (const acc of [false, true]) {
      cases.push({
        op: `linearForward ${fm} rows k=${fk} bias${acc ? " accumulate" : ""}`,
        tol: TOL_FP32,
        run: (s) => {
          const y = acc ? s.f32(fy0, [fm, ln]) : s.nan([fm, ln]);
          linearForward(s.k, y, s.f32(fx, [fm, fk]), s.f32(fw, [ln, fk]), s.f32(fb), acc);
          return { y: y.read() };
        },
      });
    }
  }
  // bf16 weights: batch rows (bf16 GEMM on CUDA) and few rows (the bf16 GEMV, fp32 x).
  const w16 = bf16Bits(w);
  for (const rows of [lm, 1, 8]) {
    cases.push({
      op: `linearForward bf16 weights, ${rows} rows, bias accumulate`,
      tol: rows > 8 ? TOL_BF16 : TOL_FP32,
      run: (s) => {
        const y = s.f32(y0.subarray(0, rows * ln), [rows, ln]);
        const xs = s.f32(x.subarray(0, rows * lk), [rows, lk]);
        linearForward(s.k, y, xs, s.bf16(w16, [ln, lk]), s.f32(bias), true);
        return { y: y.read() };
      },
    });
  }
  // Decode fusion: RMSNorm inside the GEMV (up to 8 rows; k = 37 the unaligned loop), and the
  // unfused path past 8 rows; fp32 and bf16 weights.
  for (const [fm, fk] of [[1, 96], [3, 96], [8, 96], [2, 37], [12, 96]] as const) {
    const q = new Rand(`rmsnorm linear ${fm}x${fk}`, seed);
    const [fx, nw, fw, fb] = [
      q.randn(fm * fk, 2),
      q.uniforms(fk, 0.5, 1.5),
      q.randn(ln * fk, 0.1),
      q.randn(ln),
    ];
    const fw16 = bf16Bits(fw);
    for (const [weights, bias] of [["fp32", true], ["bf16", true], ["bf16", false]] as const) {
      cases.push({
        op: `rmsnormLinearForward ${weights} weights, ${fm} rows k=${fk}${bias ? " bias" : ""}`,
        tol: fm > 8 && weights === "bf16" ? TOL_BF16 : fm > 8 ? TOL_GEMM : TOL_FP32,
        run: (s) => {
          const y = s.nan([fm, ln]);
          const ws = weights === "bf16" ? s.bf16(fw16, [ln, fk]) : s.f32(fw, [ln, fk]);
          const b = bias ? s.f32(fb) : null;
          rmsnormLinearForward(s.k, y, s.f32(fx, [fm, fk]), s.f32(nw), ws, b, 1e-6);
          return { y: y.read() };
        },
      });
    }
  }
  // Decode fusion: RMSNorm, the stacked gate|up GEMV and SwiGLU of its outputs (up to 8 rows;
  // k = 37 the unaligned loop, k = 1024 several warps per column), unfused past 8 rows.
  const rowsK: [number, number][] = [
    [1, 96],
    [1, 1024],
    [2, 37],
    [3, 96],
    [5, 1024],
    [8, 96],
    [8, 37],
    [12, 96],
    [12, 37],
  ];
  for (const [fm, fk] of rowsK) {
    const q = new Rand(`rmsnorm linear swiglu ${fm}x${fk}`, seed);
    const [fx, nw, fw, fb] = [
      q.randn(fm * fk, 2),
      q.uniforms(fk, 0.5, 1.5),
      q.randn(2 * ln * fk, 0.1),
      q.randn(2 * ln),
    ];
    const fw16 = bf16Bits(fw);
    const combos = [["fp32", true], ["bf16", true], ["bf16", false], ["fp32", false]] as const;
    for (const [weights, bias] of combos) {
      cases.push({
        op: `rmsnormLinearSwigluForward ${weights} weights, ${fm} rows k=${fk}${
          bias ? " bias" : ""
        }`,
        tol: fm > 8 && weights === "bf16" ? TOL_BF16 : fm > 8 ? TOL_GEMM : TOL_FP32,
        run: (s) => {
          const y = s.nan([fm, ln]);
          const ws = weights === "bf16" ? s.bf16(fw16, [2 * ln, fk]) : s.f32(fw, [2 * ln, fk]);
          const b = bias ? s.f32(fb) : null;
          rmsnormLinearSwigluForward(s.k, y, s.f32(fx, [fm, fk]), s.f32(nw), ws, b, 1e-6);
          return { y: y.read() };
        },
      });
    }
  }
  // One-row GEMVs with more column groups than two blocks per SM hold (so that the streaming
  // GEMV, AGENTRL_CUDA_GEMV_STREAM=1, takes from one to four groups a block on 132 SMs), bf16
  // weights: plain (k = 4864: 4 warps a column, 5 loads a lane), with the norm, and with the norm
  // and SwiGLU (4864 x 96: Qwen2.5-0.5B's gate|up grouping, 608 groups).
  const wide: [string, number, number][] = [
    ["linear", 4500, 96],
    ["linear", 700, 4864],
    ["rmsnormLinear", 2400, 96],
    ["rmsnormLinear", 7000, 96],
    ["rmsnormLinearSwiglu", 2300, 448],
    ["rmsnormLinearSwiglu", 4864, 96],
  ];
  for (const [fused, wn, wk] of wide) {
    const q = new Rand(`wide gemv ${fused} ${wn}x${wk}`, seed);
    const stacked = fused === "rmsnormLinearSwiglu" ? 2 : 1;
    const [fx, nw, fb, fy0] = [
      q.randn(wk, 2),
      q.uniforms(wk, 0.5, 1.5),
      q.randn(stacked * wn),
      q.randn(wn),
    ];
    const fw16 = bf16Bits(q.randn(stacked * wn * wk, 0.1));
    for (const acc of fused === "linear" ? [false, true] : [false]) {
      cases.push({
        op: `${fused}Forward bf16 weights, 1 row, ${wn} columns k=${wk} bias${
          acc ? " accumulate" : ""
        }`,
        tol: TOL_FP32,
        run: (s) => {
          const y = acc ? s.f32(fy0, [1, wn]) : s.nan([1, wn]);
          const x = s.f32(fx, [1, wk]);
          const w = s.bf16(fw16, [stacked * wn, wk]);
          if (fused === "linear") linearForward(s.k, y, x, w, s.f32(fb), acc);
          else if (fused === "rmsnormLinear") {
            rmsnormLinearForward(s.k, y, x, s.f32(nw), w, s.f32(fb), 1e-6);
          } else rmsnormLinearSwigluForward(s.k, y, x, s.f32(nw), w, s.f32(fb), 1e-6);
          return { y: y.read() };
        },
      });
    }
  }
  // Decode fusion: RMSNorm, the stacked q|k|v GEMV, RoPE of q and k and the cache write (up to 8
  // rows, GQA 4:2, d 16; k = 37 the unaligned loop), unfused past 8 rows.
  for (const [fm, fk] of [[1, 96], [2, 37], [3, 1024], [8, 96], [9, 96]] as const) {
    const [hq, hkv, hd, S, L] = [4, 2, 16, 3, 12];
    const qn = (hq + 2 * hkv) * hd;
    const q = new Rand(`rmsnorm qkv rope ${fm}x${fk}`, seed);
    const [fx, nw, fw, fb] = [
      q.randn(fm * fk, 2),
      q.uniforms(fk, 0.5, 1.5),
      q.randn(qn * fk, 0.1),
      q.randn(qn),
    ];
    const [kc0, vc0] = [q.randn(S * hkv * L * hd), q.randn(S * hkv * L * hd)];
    const slots = Int32Array.from({ length: fm }, (_, i) => i % S);
    const positions = Int32Array.from({ length: fm }, (_, i) => (5 * i + 3) % L);
    const fw16 = bf16Bits(fw);
    for (const weights of ["fp32", "bf16"] as const) {
      cases.push({
        op: `rmsnormQkvRopeForward ${weights} weights, ${fm} rows k=${fk}`,
        tol: fm > 8 && weights === "bf16" ? TOL_BF16 : fm > 8 ? TOL_GEMM : TOL_FP32,
        run: (s) => {
          const y = s.nan([fm, qn]);
          const ws = weights === "bf16" ? s.bf16(fw16, [qn, fk]) : s.f32(fw, [qn, fk]);
          const cache = [S, hkv, L, hd];
          const [kCache, vCache] = [s.f32(kc0, cache), s.f32(vc0, cache)];
          rmsnormQkvRopeForward(s.k, y, s.f32(fx, [fm, fk]), s.f32(nw), ws, s.f32(fb), 1e-6, {
            hq,
            kCache,
            vCache,
            slots: s.i32(slots),
            positions: s.i32(positions),
            theta: 10000,
          });
          return { y: y.read(), kCache: kCache.read(), vCache: vCache.read() };
        },
      });
    }
  }
  // A whole decoder layer for one token: the chained kernels of decode_chain.cu for head dims 64
  // and 128 (the cache's last position, a split boundary and the first token); head dim 32 takes
  // the separate calls.
  for (
    const [c, f, hq, hkv, hd, pos, bias] of [
      [96, 160, 4, 2, 64, 37, true],
      [96, 160, 4, 2, 64, 79, true],
      [96, 160, 4, 2, 64, 0, false],
      [64, 96, 2, 1, 128, 50, false],
      [64, 96, 4, 2, 32, 20, true],
      // Qwen2.5-0.5B's attention (its MLP half as wide, which keeps the emulated run short) at a
      // long context: a full grid of 132 blocks, GEMV rows split across warps
      [896, 2432, 14, 2, 64, 1000, true],
      // Qwen2.5-1.5B's attention (a narrow MLP): kernel 1 the fused GEMV (C > 1024), 12 key
      // splits of head dim 128, 12 rows a block of kernel 4 (two groups of its rows)
      [1536, 1024, 12, 2, 128, 90, true],
      // the same with an MLP wide enough that a block an SM cannot hold kernel 3's gate and up
      // rows: 264 blocks of 20 columns (two waves on an H100)
      [1536, 4864, 12, 2, 128, 90, true],
    ] as const
  ) {
    const [S, L, slot] = pos >= 80 ? [2, 1100, 1] : [3, 80, 1];
    const nq = (hq + 2 * hkv) * hd;
    const q = new Rand(`decode layer ${c} ${hd} ${pos}`, seed);
    const x0 = q.randn(c, 1);
    const [ln1, ln2] = [q.uniforms(c, 0.5, 1.5), q.uniforms(c, 0.5, 1.5)];
    const [wqkv, bqkv] = [bf16Bits(q.randn(nq * c, 0.1)), q.randn(nq, 0.1)];
    const wo = bf16Bits(q.randn(c * hq * hd, 0.1));
    const [wgu, wd] = [bf16Bits(q.randn(2 * f * c, 0.1)), bf16Bits(q.randn(c * f, 0.1))];
    const [kc0, vc0] = [q.randn(S * hkv * L * hd), q.randn(S * hkv * L * hd)];
    cases.push({
      op: `decodeLayer c=${c} f=${f} ${hq}:${hkv} heads d=${hd} position ${pos}${
        bias ? "" : " no bias"
      }`,
      tol: TOL_FP32,
      run: (s) => {
        const x = s.f32(x0);
        const rows = { qkv: s.nan([nq]), attn: s.nan([hq * hd]), act: s.nan([f]) };
        const cache = [S, hkv, L, hd];
        const [kCache, vCache] = [s.f32(kc0, cache), s.f32(vc0, cache)];
        const w = {
          ln1: s.f32(ln1),
          qkv: s.bf16(wqkv, [nq, c]),
          bqkv: bias ? s.f32(bqkv) : null,
          o: s.bf16(wo, [c, hq * hd]),
          ln2: s.f32(ln2),
          gateUp: s.bf16(wgu, [2 * f, c]),
          down: s.bf16(wd, [c, f]),
        };
        decodeLayer(s.k, x, w, { kCache, vCache, ...decodeStep(s, slot, pos, hq, hd) }, rows);
        return {
          x: x.read(),
          qkv: rows.qkv.read(),
          attn: rows.attn.read(),
          act: rows.act.read(),
          kCache: kCache.read(),
          vCache: vCache.read(),
        };
      },
    });
  }
  // Several layers for one token in one call: with AGENTRL_CUDA_DECODE_TOKEN=1 one persistent
  // kernel on the GPU (its ring of weight slots runs across the layers; small shapes leave most
  // blocks without units), else the decode layer once a layer.
  for (
    const [c, f, hq, hkv, hd, pos, layers] of [
      [96, 160, 4, 2, 64, 37, 3],
      [64, 96, 2, 1, 128, 0, 2],
      // Qwen2.5-0.5B's attention and a narrow MLP at a long context: every block has units
      [896, 608, 14, 2, 64, 1000, 1],
      // rows of 1088 columns (down: two column parts a row), head dim 128; on few SMs
      // (AGENTRL_CUDA_EMU_SMS=8 in emu.test.ts) several waves a step, rotations and x rows that
      // do not fit the block's tables
      [1152, 1088, 9, 3, 128, 90, 2],
      // more layers than one launch takes (48)
      [64, 96, 2, 1, 64, 5, 50],
    ] as const
  ) {
    const [S, L, slot] = pos >= 80 ? [2, 1100, 1] : [3, 80, 2];
    const nq = (hq + 2 * hkv) * hd;
    const q = new Rand(`decode layers ${c} ${hd} ${pos}`, seed);
    const x0 = q.randn(c, 1);
    const per = Array.from({ length: layers }, () => ({
      ln1: q.uniforms(c, 0.5, 1.5),
      ln2: q.uniforms(c, 0.5, 1.5),
      wqkv: bf16Bits(q.randn(nq * c, 0.1)),
      bqkv: q.randn(nq, 0.1),
      wo: bf16Bits(q.randn(c * hq * hd, 0.1)),
      wgu: bf16Bits(q.randn(2 * f * c, 0.1)),
      wd: bf16Bits(q.randn(c * f, 0.1)),
      kc0: q.randn(S * hkv * L * hd),
      vc0: q.randn(S * hkv * L * hd),
    }));
    // (the wide and the 50-layer cases are slow in the emulator at 132 SMs: emu.test.ts runs them
    // with 8, their names marked "many units")
    const heavy = c > 1000 || layers > 48 ? " (many units)" : "";
    cases.push({
      op:
        `decodeLayers ${layers} layers c=${c} f=${f} ${hq}:${hkv} heads d=${hd} position ${pos}${heavy}`,
      tol: TOL_FP32,
      run: (s) => {
        const x = s.f32(x0);
        const rows = { qkv: s.nan([nq]), attn: s.nan([hq * hd]), act: s.nan([f]) };
        const cache = [S, hkv, L, hd];
        const entries = per.map((p, i) => ({
          ln1: s.f32(p.ln1),
          qkv: s.bf16(p.wqkv, [nq, c]),
          bqkv: i === 1 ? null : s.f32(p.bqkv),
          o: s.bf16(p.wo, [c, hq * hd]),
          ln2: s.f32(p.ln2),
          gateUp: s.bf16(p.wgu, [2 * f, c]),
          down: s.bf16(p.wd, [c, f]),
          kCache: s.f32(p.kc0, cache),
          vCache: s.f32(p.vc0, cache),
        }));
        decodeLayers(s.k, x, entries, decodeStep(s, slot, pos, hq, hd), rows);
        const out: Record<string, Float32Array> = {
          x: x.read(),
          qkv: rows.qkv.read(),
          attn: rows.attn.read(),
          act: rows.act.read(),
        };
        entries.forEach((e, i) => {
          out[`kCache ${i}`] = e.kCache.read();
          out[`vCache ${i}`] = e.vCache.read();
        });
        return out;
      },
    });
  }
  cases.push({
    op: "linearBackward bf16 weights",
    tol: { dx: TOL_BF16, "dw (+=)": TOL_BF16, "dbias (+=)": TOL_FP32 },
    run: (s) => {
      const dx = s.nan([lm, lk]);
      const dw = s.f32(dw0, [ln, lk]), dbias = s.f32(db0);
      const [xs, ws] = [s.f32(x, [lm, lk]), s.bf16(w16, [ln, lk])];
      linearBackward(s.k, { dx, dw, dbias }, s.f32(dy, [lm, ln]), xs, ws);
      return {
        dx: dx.read(),
        "dw (+=)": delta(dw.read(), dw0),
        "dbias (+=)": delta(dbias.read(), db0),
      };
    },
  });
  for (const acc of [false, true]) {
    cases.push({
      op: `linearBackward${acc ? " accumulateDx" : ""}`,
      tol: { dx: TOL_GEMM, "dw (+=)": TOL_GEMM, "dbias (+=)": TOL_FP32 },
      run: (s) => {
        const dx = acc ? s.f32(dx0, [lm, lk]) : s.nan([lm, lk]);
        const dw = s.f32(dw0, [ln, lk]), dbias = s.f32(db0);
        linearBackward(s.k, { dx, dw, dbias }, s.f32(dy, [lm, ln]), ...xw(s), acc);
        return {
          dx: acc ? delta(dx.read(), dx0) : dx.read(),
          "dw (+=)": delta(dw.read(), dw0),
          "dbias (+=)": delta(dbias.read(), db0),
        };
      },
    });
  }
  return cases;
}

function layerCases(seed: number, cpu: Kernels): Case[] {
  const cases: Case[] = [];
  {
    const [t, v, c] = [40, 97, 48];
    const r = new Rand("embedding", seed);
    const tokens = r.ints(t, 0, v - 1);
    tokens.set([tokens[0]!, tokens[0]!, tokens[1]!], 5); // repeated ids: scatter-adds collide
    const [wte, dout, dwte0] = [r.randn(v * c), r.randn(t * c), r.randn(v * c, 0.1)];
    cases.push({
      op: "embeddingForward",
      tol: EXACT,
      run: (s) => {
        const out = s.nan([t, c]);
        embeddingForward(s.k, out, s.i32(tokens), s.f32(wte, [v, c]));
        return { out: out.read() };
      },
    }, {
      op: "embeddingBackward",
      tol: TOL_FP32,
      run: (s) => {
        const dwte = s.f32(dwte0, [v, c]);
        embeddingBackward(s.k, dwte, s.f32(dout, [t, c]), s.i32(tokens));
        return { "dwte (+=)": delta(dwte.read(), dwte0) };
      },
    });
  }
  {
    const [t, c, eps] = [23, 200, 1e-6];
    const r = new Rand("rmsnorm", seed);
    const [x, weight, dout, dw0] = [
      r.randn(t * c, 2),
      r.uniforms(c, 0.5, 1.5),
      r.randn(t * c),
      r.randn(c),
    ];
    // The backward pass of both devices reads the CPU's saved rstd.
    using s0 = new Scope(cpu);
    const rstd = s0.nan([t]);
    rmsnormForward(cpu, s0.nan([t, c]), rstd, s0.f32(x, [t, c]), s0.f32(weight), eps);
    const rstdCpu = rstd.read();
    cases.push({
      op: "rmsnormForward",
      tol: TOL_FP32,
      run: (s) => {
        const [out, rs] = [s.nan([t, c]), s.nan([t])];
        rmsnormForward(s.k, out, rs, s.f32(x, [t, c]), s.f32(weight), eps);
        return { out: out.read(), rstd: rs.read() };
      },
    }, {
      op: "rmsnormBackward",
      tol: TOL_FP32,
      run: (s) => {
        const [dx, dweight] = [s.nan([t, c]), s.f32(dw0)];
        const [dO, X, W] = [s.f32(dout, [t, c]), s.f32(x, [t, c]), s.f32(weight)];
        rmsnormBackward(s.k, dx, dweight, dO, X, s.f32(rstdCpu), W);
        return { dx: dx.read(), "dweight (+=)": delta(dweight.read(), dw0) };
      },
    });
  }
  {
    // Positions up to 4095 with Qwen2's theta: angles of thousands of radians (the CPU
    // computes them in double; an fp32 pos * inv_freq is off by up to ~pos * 6e-8 rad).
    const [t, h, d, theta] = [19, 3, 64, 1e6];
    const r = new Rand("rope", seed);
    const [x, pos] = [r.randn(t * h * d), r.ints(t, 0, 4095)];
    cases.push({
      op: "rope",
      tol: TOL_FP32,
      run: (s) => {
        const [xs, ps] = [s.f32(x, [t, h, d]), s.i32(pos)];
        const [out, inv, inPlace] = [s.nan([t, h, d]), s.nan([t, h, d]), s.f32(x, [t, h, d])];
        rope(s.k, out, xs, ps, theta);
        rope(s.k, inv, xs, ps, theta, true);
        rope(s.k, inPlace, inPlace, ps, theta);
        return { out: out.read(), "out (inverse)": inv.read(), "out (in place)": inPlace.read() };
      },
    });
  }
  {
    const shape = [10, 101], n = size(shape);
    const r = new Rand("swiglu", seed);
    const [gate, up, dout] = [r.randn(n, 3), r.randn(n), r.randn(n)];
    cases.push({
      op: "swigluForward",
      tol: TOL_FP32,
      run: (s) => {
        const out = s.nan(shape);
        swigluForward(s.k, out, s.f32(gate, shape), s.f32(up, shape));
        return { out: out.read() };
      },
    }, {
      op: "swigluBackward",
      tol: TOL_FP32,
      run: (s) => {
        const [dgate, dup] = [s.nan(shape), s.nan(shape)];
        swigluBackward(s.k, dgate, dup, s.f32(dout, shape), s.f32(gate, shape), s.f32(up, shape));
        return { dgate: dgate.read(), dup: dup.read() };
      },
    }, {
      // 1009 values from an offset of one float: the CUDA kernels' one-by-one path
      op: "swigluForward, swigluBackward, add (unaligned)",
      tol: TOL_FP32,
      run: (s) => {
        const m = n - 1;
        const at = (t: Tensor<"f32">) => Tensor.viewOf(t, 4, [m]);
        const [g, u, go] = [at(s.f32(gate)), at(s.f32(up)), at(s.f32(dout))];
        const [out, dgate, dup, sum] = [s.nan([n]), s.nan([n]), s.nan([n]), s.nan([n])];
        swigluForward(s.k, at(out), g, u);
        swigluBackward(s.k, at(dgate), at(dup), go, g, u);
        add(s.k, at(sum), g, u);
        const tail = (t: Tensor<"f32">) => t.read().subarray(1);
        return { out: tail(out), dgate: tail(dgate), dup: tail(dup), "a + b": tail(sum) };
      },
    });
  }
  {
    const r = new Rand("add", seed);
    const [a, b] = [r.randn(1003), r.randn(1003)];
    cases.push({
      op: "add",
      tol: EXACT,
      run: (s) => {
        const [ta, tb, out] = [s.f32(a), s.f32(b), s.nan([1003])];
        add(s.k, out, ta, tb);
        add(s.k, ta, ta, tb);
        return { out: out.read(), "out (aliasing a)": ta.read() };
      },
    });
  }
  {
    const [t, c, bias] = [33, 256, 0.3];
    const r = new Rand("value head", seed);
    const [h, w, dv] = [r.randn(t * c), r.randn(c, 0.05), r.randn(t)];
    const [dw0, db0] = [r.randn(c), r.randn(1)];
    cases.push({
      op: "valueHeadForward",
      tol: TOL_FP32,
      run: (s) => {
        const values = s.nan([t]);
        valueHeadForward(s.k, values, s.f32(h, [t, c]), s.f32(w), bias);
        return { values: values.read() };
      },
    }, {
      op: "valueHeadBackward",
      tol: TOL_FP32,
      run: (s) => {
        const [dh, dw, dbias] = [s.nan([t, c]), s.f32(dw0), s.f32(db0)];
        valueHeadBackward(s.k, { dh, dw, dbias }, s.f32(dv), s.f32(h, [t, c]), s.f32(w));
        return {
          dh: dh.read(),
          "dw (+=)": delta(dw.read(), dw0),
          "dbias (+=)": delta(dbias.read(), db0),
        };
      },
    });
  }
  return cases;
}

// Forward and backward of the packed attention over sequences of the given lengths. The
// backward pass of both devices reads the CPU's out and lse.
function packedAttentionCases(
  seed: number,
  cpu: Kernels,
  lens: number[],
  [hq, hkv, d]: [number, number, number],
  precision: AttentionPrecision,
): Case[] {
  const t = sumTo(lens, lens.length);
  const cu = cuOf(lens);
  const r = new Rand(`attention ${hq}:${hkv} d${d} ${precision}`, seed);
  const [q, dout] = [r.randn(t * hq * d), r.randn(t * hq * d)];
  const [kk, v] = [r.randn(t * hkv * d), r.randn(t * hkv * d)];
  const qkv = (s: Scope) =>
    [s.f32(q, [t, hq, d]), s.f32(kk, [t, hkv, d]), s.f32(v, [t, hkv, d])] as const;
  const scale = 1 / Math.sqrt(d);
  const forward = (s: Scope) => {
    const [out, lse] = [s.nan([t, hq, d]), s.nan([hq, t])];
    attentionForward(s.k, out, lse, ...qkv(s), s.i32(cu), scale, precision);
    return { out: out.read(), lse: lse.read() };
  };
  using s0 = new Scope(cpu);
  const saved = forward(s0);
  const tol = precision === "bf16" ? TOL_BF16 : TOL_FP32;
  const what = precision === "bf16"
    ? ` bf16 ${hq}:${hkv} heads, d ${d}, ${t} rows (CPU: fp32)`
    : "";
  return [
    { op: `attentionForward${what}`, tol, run: forward },
    {
      op: `attentionBackward${what}`,
      tol,
      run: (s) => {
        const [dq, dk, dv] = [s.nan([t, hq, d]), s.nan([t, hkv, d]), s.nan([t, hkv, d])];
        const out = s.f32(saved.out as Float32Array, [t, hq, d]);
        const lse = s.f32(saved.lse as Float32Array, [hq, t]);
        attentionBackward(
          s.k,
          { dq, dk, dv },
          s.f32(dout, [t, hq, d]),
          ...qkv(s),
          out,
          lse,
          s.i32(cu),
          scale,
          precision,
        );
        return { dq: dq.read(), dk: dk.read(), dv: dv.read() };
      },
    },
  ];
}

function attentionCases(seed: number, cpu: Kernels): Case[] {
  // Packed varlen batch (an empty sequence, a single token, one past 64 rows), GQA 8:2, D = 64;
  // with bf16 products (tensor cores) also D = 128 without GQA, and a batch of long sequences.
  const lens = [37, 0, 1, 64, 90, 5];
  const [hq, hkv, d] = [8, 2, 64];
  const packed = [
    ...packedAttentionCases(seed, cpu, lens, [hq, hkv, d], "f32"),
    ...packedAttentionCases(seed, cpu, lens, [hq, hkv, d], "bf16"),
    ...packedAttentionCases(seed, cpu, [70, 3, 129], [2, 2, 128], "bf16"),
    ...packedAttentionCases(seed, cpu, [200, 131], [4, 1, 64], "bf16"),
  ];
  // KV cache: S slots of L positions; decode queries attend to the first lens[i] of their slot.
  const [S, L, n] = [3, 40, 4];
  const rc = new Rand("kv cache", seed);
  const [kc0, vc0] = [rc.randn(S * hkv * L * d), rc.randn(S * hkv * L * d)];
  const [kn, vn, qd] = [rc.randn(n * hkv * d), rc.randn(n * hkv * d), rc.randn(5 * hq * d)];
  const [slots, positions] = [Int32Array.of(0, 1, 2, 1), Int32Array.of(5, 17, 39, 0)];
  const [qSlots, qLens] = [Int32Array.of(0, 1, 2, 1, 2), Int32Array.of(6, 18, 40, 1, 23)];
  const cacheShape = [S, hkv, L, d];
  return [
    ...packed,
    {
      op: "kvCacheWrite + attentionDecode",
      tol: { kCache: EXACT, vCache: EXACT, out: TOL_FP32 },
      run: (s) => {
        const [kc, vc] = [s.f32(kc0, cacheShape), s.f32(vc0, cacheShape)];
        const [K, V] = [s.f32(kn, [n, hkv, d]), s.f32(vn, [n, hkv, d])];
        kvCacheWrite(s.k, kc, vc, K, V, s.i32(slots), s.i32(positions));
        const out = s.nan([5, hq, d]);
        attentionDecode(s.k, out, s.f32(qd, [5, hq, d]), kc, vc, s.i32(qSlots), s.i32(qLens));
        return { kCache: kc.read(), vCache: vc.read(), out: out.read() };
      },
    },
    {
      op: "ropeKvCacheWrite (decode fusion)",
      tol: { q: TOL_FP32, k: TOL_FP32, kCache: TOL_FP32, vCache: EXACT },
      run: (s) => {
        const [kc, vc] = [s.f32(kc0, cacheShape), s.f32(vc0, cacheShape)];
        const [Q, K] = [s.f32(qd.subarray(0, n * hq * d), [n, hq, d]), s.f32(kn, [n, hkv, d])];
        const Vs = s.f32(vn, [n, hkv, d]);
        ropeKvCacheWrite(s.k, Q, K, kc, vc, Vs, s.i32(slots), s.i32(positions), 10000);
        return { q: Q.read(), k: K.read(), kCache: kc.read(), vCache: vc.read() };
      },
    },
    // One query over a long cache (split across blocks on CUDA) and 20 queries (one block each).
    ...[[1, 600], [20, 600]].map(([nq, L2]) => {
      const rl = new Rand(`decode ${nq}x${L2}`, seed);
      const shape = [2, hkv, L2!, d];
      const [kc2, vc2] = [rl.randn(2 * hkv * L2! * d), rl.randn(2 * hkv * L2! * d)];
      const q2 = rl.randn(nq! * hq * d);
      const slots2 = Int32Array.from({ length: nq! }, (_, i) => i % 2);
      const lens2 = Int32Array.from({ length: nq! }, (_, i) => i === 0 ? L2! : 1 + (i * 37) % L2!);
      return {
        op: `attentionDecode ${nq} queries, cache of ${L2}`,
        tol: TOL_FP32,
        run: (s: Scope) => {
          const out = s.nan([nq!, hq, d]);
          const [kc, vc] = [s.f32(kc2, shape), s.f32(vc2, shape)];
          attentionDecode(s.k, out, s.f32(q2, [nq!, hq, d]), kc, vc, s.i32(slots2), s.i32(lens2));
          return { out: out.read() };
        },
      };
    }),
  ];
}

function logprobCases(seed: number, cpu: Kernels): Case[] {
  // V ~ 5000, C 256; weights scaled so that logits / temperature have a spread of ~3.
  const [t, v, c, temp] = [24, 5000, 256, 0.7];
  const r = new Rand("logprob", seed);
  const [h, w, targets] = [r.randn(t * c), r.randn(v * c, 0.1), r.ints(t, 0, v - 1)];
  const [dlogp, dent, dw0] = [r.randn(t), r.randn(t), r.randn(v * c, 0.1)];
  const htw = (s: Scope) => [s.f32(h, [t, c]), s.i32(targets), s.f32(w, [v, c])] as const;
  const forward = (s: Scope) => {
    const [logp, entropy, lse] = [s.nan([t]), s.nan([t]), s.nan([t])];
    logprobForward(s.k, { logp, entropy, lse }, ...htw(s), temp);
    return { logp: logp.read(), entropy: entropy.read(), lse: lse.read() };
  };
  using s0 = new Scope(cpu);
  const saved = forward(s0); // the backward pass of both devices reads the CPU's lse and entropy
  const hl = r.randn(7 * c);
  const w16 = bf16Bits(w);
  return [
    { op: `logprobForward T=${t} V=${v} C=${c} temp=${temp}`, tol: TOL_GEMM, run: forward },
    {
      op: "logprobBackward (dlogp, dentropy)",
      tol: TOL_GEMM,
      run: (s) => {
        const [dh, dw] = [s.nan([t, c]), s.f32(dw0, [v, c])];
        const up = { dlogp: s.f32(dlogp), dentropy: s.f32(dent) };
        const lse = s.f32(saved.lse as Float32Array);
        const entropy = s.f32(saved.entropy as Float32Array);
        logprobBackward(s.k, { dh, dw }, up, ...htw(s), { lse, entropy }, temp);
        return { dh: dh.read(), "dw (+=)": delta(dw.read(), dw0) };
      },
    },
    {
      op: "lmHead",
      tol: TOL_GEMM,
      run: (s) => {
        const logits = s.nan([7, v]);
        lmHead(s.k, logits, s.f32(hl, [7, c]), s.f32(w, [v, c]));
        return { logits: logits.read() };
      },
    },
    // bf16 weights
    {
      op: `logprobForward bf16 weights`,
      tol: TOL_BF16,
      run: (s) => {
        const [logp, entropy, lse] = [s.nan([t]), s.nan([t]), s.nan([t])];
        const [hs, ts] = [s.f32(h, [t, c]), s.i32(targets)];
        logprobForward(s.k, { logp, entropy, lse }, hs, ts, s.bf16(w16, [v, c]), temp);
        return { logp: logp.read(), entropy: entropy.read(), lse: lse.read() };
      },
    },
    {
      op: "logprobBackward bf16 weights (dlogp, dentropy)",
      tol: TOL_BF16,
      run: (s) => {
        const [dh, dw] = [s.nan([t, c]), s.f32(dw0, [v, c])];
        const up = { dlogp: s.f32(dlogp), dentropy: s.f32(dent) };
        const lse = s.f32(saved.lse as Float32Array);
        const entropy = s.f32(saved.entropy as Float32Array);
        const [hs, ts] = [s.f32(h, [t, c]), s.i32(targets)];
        logprobBackward(s.k, { dh, dw }, up, hs, ts, s.bf16(w16, [v, c]), { lse, entropy }, temp);
        return { dh: dh.read(), "dw (+=)": delta(dw.read(), dw0) };
      },
    },
    ...[1, 7, t].map((rows) => ({
      op: `lmHead bf16 weights, ${rows} rows`,
      tol: rows > 8 ? TOL_BF16 : TOL_FP32,
      run: (s: Scope) => {
        const logits = s.nan([rows, v]);
        lmHead(s.k, logits, s.f32(h.subarray(0, rows * c), [rows, c]), s.bf16(w16, [v, c]));
        return { logits: logits.read() };
      },
    })),
  ];
}

// Settings crossed with every aggregation mode: dual clip, the four KL kinds
// (with and without clamps), entropy and SFT terms.
const PPO_SETTINGS: PpoLossParams[] = [
  { clipLow: 0.2, clipHigh: 0.2 },
  {
    clipLow: 0.2,
    clipHigh: 0.28,
    dualClip: 3,
    klCoef: 0.1,
    klKind: "k3",
    klClamp: 10,
    entropyCoef: 0.01,
    sftCoef: 0.1,
  },
  { clipLow: 0.1, clipHigh: 0.3, klCoef: 0.05, klKind: "abs" },
  { clipLow: 0.2, clipHigh: 0.2, klCoef: 0.2, klKind: "mse", klClamp: 0.5, entropyCoef: 0.003 },
  { clipLow: 0.3, clipHigh: 0.2, dualClip: 2, klCoef: 0.3, klKind: "kl", klClamp: 1 },
  { clipLow: 0.2, clipHigh: 0.28, dualClip: 3, klCoef: 0.1, klKind: "k3", ratioType: "segment" },
];

/** Whether a segment's ratio (exp of its mean log-ratio) is within 1e-3 of a token's kink. */
function segmentNearKink(
  x: { logp: Float32Array; old: Float32Array; a: Float32Array },
  mask: Float32Array,
  cu: Int32Array,
  p: PpoLossParams,
): boolean {
  const [lo, hi, dual] = [1 - p.clipLow, 1 + p.clipHigh, p.dualClip ?? 0];
  for (let s = 0; s + 1 < cu.length; s++) {
    for (let i = cu[s]!; i < cu[s + 1]!;) {
      let e = i, sum = 0;
      while (e < cu[s + 1]! && mask[e]! > 0) sum += Math.fround(x.logp[e]!) - x.old[e++]!;
      const ratio = Math.exp(sum / Math.max(1, e - i));
      for (let j = i; j < e; j++) {
        const a = x.a[j]!;
        const pg = Math.max(-a * ratio, -a * Math.min(hi, Math.max(lo, ratio)));
        const kinks = [ratio - lo, ratio - hi, dual > 1 && a < 0 ? pg + a * dual : 1];
        if (kinks.some((k) => Math.abs(k) < 1e-3)) return true;
      }
      i = Math.max(e, i + 1);
    }
  }
  return false;
}

/** PPO inputs with no token within 1e-3 of a kink of the loss (clip bounds, dual clip, |d| = 0,
 * the KL clamp), where exp/log rounding could flip a branch between devices. */
function ppoInputs(r: Rand, t: number, p: PpoLossParams) {
  const f = () => new Float32Array(t);
  const x = { logp: f(), old: f(), ref: f(), a: f() };
  const [lo, hi, dual, clamp] = [1 - p.clipLow, 1 + p.clipHigh, p.dualClip ?? 0, p.klClamp ?? 0];
  const klOf = (d: number) =>
    ({ kl: d, abs: Math.abs(d), mse: 0.5 * d * d, k3: Math.exp(-d) - 1 + d })[p.klKind ?? "kl"];
  for (let i = 0; i < t;) {
    const [logp, a] = [r.range(-4, -0.1), r.normal()];
    const [old, ref] = [logp - r.range(-1.5, 1.5), logp - r.range(-2.5, 2.5)];
    const ratio = Math.exp(logp - old), d = logp - ref;
    const pg = Math.max(-a * ratio, -a * Math.min(hi, Math.max(lo, ratio)));
    const kinks = [ratio - lo, ratio - hi, a, d, dual > 1 && a < 0 ? pg + a * dual : 1];
    if (clamp > 0) kinks.push(Math.abs(klOf(d)) - clamp);
    if (kinks.some((k) => Math.abs(k) < 1e-3)) continue;
    [x.logp[i], x.old[i], x.ref[i], x.a[i]] = [logp, old, ref, a];
    i++;
  }
  return x;
}

function lossCases(seed: number): Case[] {
  const cases: Case[] = [];
  const lens = [5, 4, 0, 8, 1, 9, 7];
  const t = sumTo(lens, lens.length), cu = cuOf(lens);
  PPO_SETTINGS.forEach((base, si) => {
    for (const aggMode of LOSS_AGG_MODES) {
      const p: PpoLossParams = { ...base, aggMode, normLen: 16 };
      const r = new Rand(`ppo ${si} ${aggMode}`, seed);
      let x = ppoInputs(r, t, p);
      let mask = r.mask(t, 0.75);
      mask.fill(0, cu[1], cu[2]); // a fully masked sequence
      while (p.ratioType === "segment" && segmentNearKink(x, mask, cu, p)) {
        [x, mask] = [ppoInputs(r, t, p), r.mask(t, 0.75)];
        mask.fill(0, cu[1], cu[2]);
      }
      const [entropy, sftMask] = [r.uniforms(t, 0.1, 3), r.mask(t, 0.3)];
      const name = [
        base.dualClip ? "dual" : "",
        base.klCoef ? `kl=${base.klKind}${base.klClamp ? "/clamp" : ""}` : "",
        base.entropyCoef ? "entropy" : "",
        base.sftCoef ? "sft" : "",
        base.ratioType === "segment" ? "segment" : "",
      ].filter((s) => s).join(",");
      cases.push({
        op: `ppoLoss ${name || "plain"} ${aggMode}`,
        tol: TOL_FP32,
        run: (s) => {
          const [dlogp, dentropy] = [s.nan([t]), s.nan([t])];
          const withEnt = (p.entropyCoef ?? 0) !== 0;
          const metrics = ppoLoss(s.k, { dlogp, dentropy: withEnt ? dentropy : null }, {
            logp: s.f32(x.logp),
            oldLogp: s.f32(x.old),
            advantages: s.f32(x.a),
            mask: s.f32(mask),
            cuSeqlens: s.i32(cu),
            refLogp: p.klCoef ? s.f32(x.ref) : null,
            entropy: withEnt ? s.f32(entropy) : null,
            sftMask: p.sftCoef ? s.f32(sftMask) : null,
          }, p);
          const out: Record<string, Output> = { dlogp: dlogp.read(), metrics: { ...metrics } };
          if (withEnt) out.dentropy = dentropy.read();
          return out;
        },
      });
    }
  });
  for (const clip of [0, 0.2]) {
    for (const aggMode of LOSS_AGG_MODES) {
      const r = new Rand(`value loss ${clip} ${aggMode}`, seed);
      const [values, returns, mask] = [r.randn(t), r.randn(t), r.mask(t, 0.75)];
      const old = Float32Array.from(values, (v) => {
        // keep |v - v_old| away from the clip bound (a branch of the loss)
        for (;;) {
          const o = v + r.range(-0.5, 0.5);
          if (Math.abs(Math.abs(v - o) - clip) > 1e-3) return o;
        }
      });
      mask.fill(0, cu[1], cu[2]);
      cases.push({
        op: `valueLoss clip=${clip} ${aggMode}`,
        tol: TOL_FP32,
        run: (s) => {
          const dvalues = s.nan([t]);
          const m = valueLoss(s.k, dvalues, {
            values: s.f32(values),
            oldValues: s.f32(old),
            returns: s.f32(returns),
            mask: s.f32(mask),
            cuSeqlens: s.i32(cu),
          }, { valueClip: clip, aggMode, normLen: 16 });
          return { dvalues: dvalues.read(), metrics: { ...m } };
        },
      });
    }
  }
  {
    const [tk, v] = [9, 3000];
    const r = new Rand("kl full", seed);
    const [logits, ref, dkl] = [r.randn(tk * v, 2), r.randn(tk * v, 2), r.randn(tk)];
    cases.push({
      op: "klFull",
      tol: TOL_FP32,
      run: (s) => {
        const [kl, dlogits] = [s.nan([tk]), s.nan([tk, v])];
        klFull(s.k, kl, s.f32(logits, [tk, v]), s.f32(ref, [tk, v]), { dlogits, dkl: s.f32(dkl) });
        return { kl: kl.read(), dlogits: dlogits.read() };
      },
    });
  }
  return cases;
}

function optimCases(seed: number): Case[] {
  const r = new Rand("optim", seed);
  const [x, p0, g] = [r.randn(100_003), r.randn(5000), r.randn(5000, 0.01)];
  const [m0, v0] = [r.randn(5000, 0.01), r.uniforms(5000, 1e-6, 1e-4)];
  // bf16 rounding: random values plus exact ties (round to even, both directions) and a carry.
  const f = r.randn(1000, 10);
  new Uint32Array(f.buffer).set([0x3f808000, 0x3f818000, 0xbf808000, 0x3f7fffff, 0xc0ff8000], 0);
  const bits = new Uint16Array(r.randn(1000, 100).buffer).filter((_, i) => i % 2 === 1);
  return [
    {
      op: "sumSquares",
      tol: TOL_FP32,
      run: (s) => ({ sum: [sumSquares(s.k, s.f32(x))] }),
    },
    {
      op: "scale",
      tol: EXACT,
      run: (s) => {
        const t = s.f32(x);
        scale(s.k, t, -0.37);
        return { x: t.read() };
      },
    },
    {
      op: "adamw step=3 wd=0.1 gradScale=0.5",
      tol: TOL_FP32,
      run: (s) => {
        const [params, m, v] = [s.f32(p0), s.f32(m0), s.f32(v0)];
        adamw(s.k, params, m, v, s.f32(g), { lr: 1e-3, weightDecay: 0.1, step: 3, gradScale: 0.5 });
        // The update is ~1e-3 of the parameters: compare it, not the parameters.
        return { "params (update)": delta(params.read(), p0), m: m.read(), v: v.read() };
      },
    },
    {
      op: "fill",
      tol: EXACT,
      run: (s) => {
        const t = s.nan([777]);
        fill(s.k, t, 0.625);
        return { x: t.read() };
      },
    },
    {
      op: "toBf16 / fromBf16",
      tol: EXACT,
      run: (s) => {
        const out = s.bf16(new Uint16Array(1000).fill(0x7fc1)); // NaN until written
        toBf16(s.k, out, s.f32(f));
        const back = s.nan([1000]);
        fromBf16(s.k, back, s.bf16(bits));
        return { "toBf16 out": bf16Values(out.read()), "fromBf16 out": back.read() };
      },
    },
    {
      op: "toBf16 of 998 values (4 a step, then 2), and of 997 from an offset of 1 (1 a step)",
      tol: EXACT,
      run: (s) => {
        const [tail, unaligned] = [s.bf16(new Uint16Array(998)), s.bf16(new Uint16Array(998))];
        const x = s.f32(f.subarray(0, 998));
        toBf16(s.k, tail, x);
        toBf16(s.k, Tensor.viewOf(unaligned, 2, [997]), Tensor.viewOf(x, 4, [997]));
        return {
          "998 values": bf16Values(tail.read()),
          "997 unaligned": bf16Values(unaligned.read()).subarray(1),
        };
      },
    },
  ];
}

function sampleCases(seed: number): Case[] {
  const kinds: Omit<SampleRow, "seed" | "counter">[] = [
    { temperature: 0 },
    { temperature: 0.8 },
    { temperature: 1.2, topK: 50 },
    { temperature: 1, topP: 0.9 },
    { temperature: 0.7, topK: 20, topP: 0.8 },
    { temperature: 0, topK: 5, topP: 0.5 },
  ];
  const rows = kinds.flatMap((kind, i) =>
    [0, 1].map((j) => ({ ...kind, seed: 100 + 2 * i + j, counter: 7 * i + j }))
  );
  const [n, v] = [rows.length, 2000];
  const logits = new Rand("sample", seed).randn(n * v, 2);
  // Greedy rows only, few of them, a large vocabulary: CUDA splits each row across blocks.
  // Row 0 ties its max across two blocks (the lower id wins), row 1 starts with a stretch of
  // -inf, row 2 is plain.
  const [gn, gv] = [3, 151_936];
  const big = new Rand("sample greedy", seed).randn(gn * gv, 2);
  big[5] = big[100_000] = 50;
  big.fill(-Infinity, gv, gv + 20_000);
  const greedyRows = Array.from(
    { length: gn },
    (_, i) => ({ temperature: 0, seed: i, counter: 0 }),
  );
  return [{
    op: "sample (greedy, temperature, top-k, top-p)",
    tol: { tokens: EXACT, logprobs: TOL_FP32 },
    run: (s) => sample(s.k, s.f32(logits, [n, v]), rows),
  }, {
    op: `sample (greedy only, ${gn} rows of ${gv})`,
    tol: { tokens: EXACT, logprobs: TOL_FP32 },
    run: (s) => sample(s.k, s.f32(big, [gn, gv]), greedyRows),
  }, {
    // Both kinds queued before either is read, read in the other order; the tokens also on the
    // device.
    op: "sampleStart (two pending, finished out of order, ids on the device)",
    tol: { tokens: EXACT, logprobs: TOL_FP32, ids: EXACT, greedy: EXACT, greedyIds: EXACT },
    run: (s) => {
      const ids = s.i32(new Int32Array(n).fill(-1));
      const greedyIds = s.i32(new Int32Array(gn).fill(-1));
      const first = sampleStart(s.k, s.f32(big, [gn, gv]), greedyRows, greedyIds);
      const second = sampleStart(s.k, s.f32(logits, [n, v]), rows, ids);
      const mixed = second.wait();
      return {
        ...mixed,
        ids: ids.read(),
        greedy: first.wait().tokens,
        greedyIds: greedyIds.read(),
      };
    },
  }];
}

// ---- graphs ---------------------------------------------------------------

/** A random Qwen2 small enough to compare on both devices (biases set too). */
function graphModel(
  k: Kernels,
  precision: "f32" | "bf16" = "f32",
  headDim = 16,
): Qwen2Model {
  const config: Qwen2Config = {
    vocab_size: 96,
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: headDim,
    max_position_embeddings: 64,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    attention_bias: true,
    bos_token_id: null,
    eos_token_id: null,
  };
  const model = new Qwen2Model(k, config, { seed: 3, precision }); // compared with the CPU
  const all = model.params.read() as Float32Array;
  const r = new Rand("graph model biases", 0);
  for (const g of model.layout.regions) {
    if (g.name.endsWith(".bias")) all.set(r.randn(g.size, 0.05), g.offset);
  }
  model.params.write(all);
  model.markParamsChanged();
  return model;
}

/**
 * Graph replays (CUDA; the CPU runs the same calls directly): a recorded pair of
 * calls replayed twice on new input data, and a KV-cache decode whose layer calls
 * are recorded at the second step and replayed after (lib/model/_decode_graphs.ts).
 */
function graphCases(seed: number): Case[] {
  const r = new Rand("graph", seed);
  const [m, n, kk] = [2, 24, 32];
  const [x1, x2, w, b, z0] = [
    r.randn(m * kk),
    r.randn(m * kk),
    r.randn(n * kk, 0.1),
    r.randn(n),
    r.randn(m * n),
  ];
  const tokens = r.ints(12, 0, 95);
  return [{
    op: "graph replay (linear + add, new input, twice)",
    tol: TOL_FP32,
    run: (s) => {
      const [x, y, z] = [s.f32(x1, [m, kk]), s.nan([m, n]), s.f32(z0, [m, n])];
      const [wt, bt] = [s.f32(w, [n, kk]), s.f32(b)];
      const body = () => {
        linearForward(s.k, y, x, wt, bt);
        add(s.k, z, z, y);
      };
      if (KernelGraph.supported(s.k)) {
        using g = KernelGraph.record(s.k, body);
        x.write(x2); // the replay reads the memory as it is at launch
        g.launch();
        g.launch();
      } else {
        x.write(x2);
        body();
        body();
      }
      return { z: z.read() };
    },
  }, {
    op: "decode with graphs (8 steps after a 4-token prefill)",
    tol: TOL_GEMM,
    run: (s) => {
      using model = graphModel(s.k);
      using cache = model.createKvCache(2, 16);
      const out: number[] = [];
      const prompt = Int32Array.from(tokens.subarray(0, 4));
      const logits = model.forwardCached(
        cache,
        Int32Array.from([...prompt, ...prompt]),
        Int32Array.from([0, 1, 2, 3, 0, 1, 2, 3]),
        Int32Array.from([0, 0, 0, 0, 1, 1, 1, 1]),
        Int32Array.from([3, 7]),
      )!;
      out.push(...logits.read());
      for (let step = 0; step < 8; step++) {
        const t = tokens[4 + step]!;
        const l = model.forwardCached(
          cache,
          Int32Array.from([t, (t + 1) % 96]),
          Int32Array.from([4 + step, 4 + step]),
          Int32Array.from([0, 1]),
          Int32Array.from([0, 1]),
        )!;
        out.push(...l.read());
      }
      return { logits: Float32Array.from(out) };
    },
  }, {
    // one sequence, bf16 weights: the stacked q|k|v path, fused with RoPE and the cache on CUDA
    // head dim 64: each layer one arl_decode_layer_bf16 call, four chained kernels on CUDA
    op: "decode with graphs, bf16 weights, batch 1 (8 steps after a 4-token prefill)",
    tol: TOL_GEMM,
    run: (s) => {
      using model = graphModel(s.k, "bf16", 64);
      using cache = model.createKvCache(1, 16);
      const out: number[] = [];
      const prompt = Int32Array.from(tokens.subarray(0, 4));
      const logits = model.forwardCached(
        cache,
        prompt,
        Int32Array.from([0, 1, 2, 3]),
        new Int32Array(4),
        Int32Array.from([3]),
      )!;
      out.push(...logits.read());
      for (let step = 0; step < 8; step++) {
        const [pos, zero] = [Int32Array.from([4 + step]), new Int32Array(1)];
        const l = model.forwardCached(cache, tokens.subarray(4 + step, 5 + step), pos, zero, zero)!;
        out.push(...l.read());
      }
      return { logits: Float32Array.from(out) };
    },
  }, {
    // Token ids from the device: each step's id is sampled (greedy, from one-hot logits) into
    // one of two id tensors, which the next forwardCached reads (a graph for each).
    op: "decode with graphs, bf16 weights, batch 1, token ids sampled on the device",
    tol: { logits: TOL_GEMM, tokens: EXACT },
    run: (s) => {
      using model = graphModel(s.k, "bf16", 64);
      using cache = model.createKvCache(1, 16);
      const ids = [s.i32(new Int32Array(1)), s.i32(new Int32Array(1))];
      const greedy = [{ temperature: 0, seed: 0, counter: 0 }];
      const out: number[] = [];
      const sampled: number[] = [];
      const prompt = Int32Array.from(tokens.subarray(0, 4));
      out.push(
        ...model.forwardCached(
          cache,
          prompt,
          Int32Array.of(0, 1, 2, 3),
          new Int32Array(4),
          Int32Array.of(3),
        )!
          .read(),
      );
      for (let step = 0; step < 8; step++) {
        const oneHot = new Float32Array(96);
        oneHot[tokens[4 + step]!] = 10;
        const pending = sampleStart(s.k, s.f32(oneHot, [1, 96]), greedy, ids[step % 2]!);
        const zero = new Int32Array(1);
        const l = model.forwardCached(cache, ids[step % 2]!, Int32Array.of(4 + step), zero, zero)!;
        sampled.push(...pending.wait().tokens);
        out.push(...l.read());
      }
      return { logits: Float32Array.from(out), tokens: Int32Array.from(sampled) };
    },
  }, {
    // AGENTRL_DECODE_LAYER=0 (head dim 64): each layer the separate fused calls, not one
    // arl_decode_layer_bf16 call (the default, which the case above takes), recorded in the graph
    op:
      "decode with graphs, bf16 weights, batch 1, separate calls a layer (AGENTRL_DECODE_LAYER=0)",
    tol: TOL_GEMM,
    run: (s) => {
      const before = Deno.env.get("AGENTRL_DECODE_LAYER");
      Deno.env.set("AGENTRL_DECODE_LAYER", "0");
      let made: Qwen2Model;
      try {
        made = graphModel(s.k, "bf16", 64);
      } finally {
        if (before === undefined) Deno.env.delete("AGENTRL_DECODE_LAYER");
        else Deno.env.set("AGENTRL_DECODE_LAYER", before);
      }
      using model = made;
      using cache = model.createKvCache(1, 40);
      const out: number[] = [];
      // a 30-token prefill, then positions 30..37: split decode attention's key splits (32 keys
      // each) go from one to two
      const prompt = Int32Array.from({ length: 30 }, (_, i) => tokens[i % 12]!);
      const at = Int32Array.from({ length: 30 }, (_, i) => i);
      out.push(
        ...model.forwardCached(cache, prompt, at, new Int32Array(30), Int32Array.of(29))!.read(),
      );
      for (let step = 0; step < 8; step++) {
        const [pos, zero] = [Int32Array.from([30 + step]), new Int32Array(1)];
        const t = tokens.subarray(4 + step, 5 + step);
        out.push(...model.forwardCached(cache, t, pos, zero, zero)!.read());
      }
      return { logits: Float32Array.from(out) };
    },
  }];
}

// ---- comparison -------------------------------------------------------------

/** A row; NaN errors (a non-finite value on either side) never pass. */
function row(op: string, output: string, err: [number, number], tol: number, note = ""): OpRow {
  const [relErr, maxAbs] = err;
  const ok = tol === EXACT ? maxAbs === 0 : relErr <= tol;
  return {
    op,
    output,
    relErr,
    maxAbs,
    tol,
    ok: ok && !Number.isNaN(relErr),
    ...(note && { note }),
  };
}

function compareArrays(
  op: string,
  output: string,
  cpu: ArrayLike<number>,
  cuda: ArrayLike<number>,
  tol: number,
): OpRow {
  if (cpu.length !== cuda.length) {
    return row(op, output, [NaN, NaN], tol, `length ${cuda.length} != ${cpu.length}`);
  }
  let [diff2, ref2, maxAbs, finite] = [0, 0, 0, true];
  for (let i = 0; i < cpu.length; i++) {
    const [a, b] = [cuda[i]!, cpu[i]!];
    finite &&= Number.isFinite(a) && Number.isFinite(b);
    diff2 += (a - b) ** 2;
    ref2 += b * b;
    maxAbs = Math.max(maxAbs, Math.abs(a - b));
  }
  if (!finite) return row(op, output, [NaN, NaN], tol, "NaN or infinity");
  const relErr = diff2 === 0 ? 0 : Math.sqrt(diff2 / ref2);
  return row(op, output, [relErr, maxAbs], tol, ref2 === 0 ? "cpu output is all zero" : "");
}

/** Named scalars (loss metrics): the worst |cuda - cpu| / max(|cpu|, 1e-3) over the names. */
function compareScalars(
  op: string,
  output: string,
  cpu: Record<string, number>,
  cuda: Record<string, number>,
  tol: number,
): OpRow {
  let [relErr, maxAbs, worst] = [0, 0, ""];
  for (const key of Object.keys(cpu)) {
    const [a, b] = [cuda[key]!, cpu[key]!];
    if (!Number.isFinite(a) || !Number.isFinite(b)) {
      return row(op, output, [NaN, NaN], tol, `${key}: cuda ${a} cpu ${b}`);
    }
    const rel = Math.abs(a - b) / Math.max(Math.abs(b), 1e-3);
    if (rel > relErr) [relErr, worst] = [rel, `worst: ${key} cuda ${a} cpu ${b}`];
    maxAbs = Math.max(maxAbs, Math.abs(a - b));
  }
  return row(op, output, [relErr, maxAbs], tol, worst);
}

function errorRow(op: string, e: unknown): OpRow {
  return row(op, "(error)", [NaN, NaN], NaN, e instanceof Error ? e.message : String(e));
}

function runCase(c: Case, cpu: Kernels, cuda: Kernels): OpRow[] {
  let a: Record<string, Output>, b: Record<string, Output>;
  try {
    using s = new Scope(cpu);
    a = c.run(s);
  } catch (e) {
    return [errorRow(c.op, `reference (cpu) side: ${e instanceof Error ? e.message : e}`)];
  }
  try {
    using s = new Scope(cuda);
    b = c.run(s);
  } catch (e) {
    return [errorRow(c.op, `compared (cuda) side: ${e instanceof Error ? e.message : e}`)];
  }
  return Object.keys(a).map((key) => {
    const tol = typeof c.tol === "number" ? c.tol : c.tol[key]!;
    const [x, y] = [a[key]!, b[key]!];
    const isArray = (o: Output): o is ArrayLike<number> =>
      ArrayBuffer.isView(o) || Array.isArray(o);
    return isArray(x) && isArray(y)
      ? compareArrays(c.op, key, x, y, tol)
      : compareScalars(c.op, key, x as Record<string, number>, y as Record<string, number>, tol);
  });
}

/**
 * Runs every op of the ABI on both contexts with the same inputs and compares
 * the second (`cuda`) against the first (`cpu`). Never throws for a failing
 * op: its row says why.
 */
export function compareOps(cpu: Kernels, cuda: Kernels, seed = 20240611): OpRow[] {
  const cases = [
    ...matmulCases(seed),
    ...layerCases(seed, cpu),
    ...attentionCases(seed, cpu),
    ...logprobCases(seed, cpu),
    ...lossCases(seed),
    ...optimCases(seed),
    ...sampleCases(seed),
    ...graphCases(seed),
    {
      op: "abiVersion",
      tol: EXACT,
      run: (s: Scope) => ({ version: [s.k.sym.arl_abi_version()] }),
    },
  ];
  // AGENTRL_OPS_ONLY=a|b: only the ops whose name contains a or b (a quick check of a kernel);
  // AGENTRL_OPS_SKIP=a|b: not those whose name contains a or b.
  const texts = (name: string) => (Deno.env.get(name) ?? "").split("|").filter((t) => t !== "");
  const [only, skip] = [texts("AGENTRL_OPS_ONLY"), texts("AGENTRL_OPS_SKIP")];
  const rows = cases
    .filter((c) =>
      (only.length === 0 || only.some((t) => c.op.includes(t))) &&
      !skip.some((t) => c.op.includes(t))
    )
    .flatMap((c) => runCase(c, cpu, cuda));
  // fmaPeak: only that it runs and reports a positive rate on both.
  try {
    // The CPU emulator (backend "cuda-emulated") runs each GPU thread's loop on one core.
    const iterations = cuda.backend === "cuda-emulated" ? 10 : 100_000;
    const [g0, g1] = [fmaPeak(cpu, 100_000), fmaPeak(cuda, iterations)];
    const ok = g0 > 0 && g1 > 0 && Number.isFinite(g0) && Number.isFinite(g1);
    const note = `runs: cpu ${g0.toFixed(0)} GFLOP/s, ${cuda.device} ${g1.toFixed(0)} GFLOP/s`;
    rows.push({ op: "fmaPeak", output: "gflops", relErr: 0, maxAbs: 0, tol: NaN, ok, note });
  } catch (e) {
    rows.push(errorRow("fmaPeak", e));
  }
  return rows;
}

/** The rows as a fixed-width table (op, output, rel err, max abs, tol, ok, note). */
export function formatTable(rows: readonly OpRow[]): string {
  const w = [
    Math.max(2, ...rows.map((r) => r.op.length)),
    Math.max(6, ...rows.map((r) => r.output.length)),
  ];
  const num = (x: number) => (Number.isNaN(x) ? "NaN" : x === 0 ? "0" : x.toExponential(2));
  const line = (c: string[]) =>
    [
      c[0]!.padEnd(w[0]!),
      c[1]!.padEnd(w[1]!),
      c[2]!.padStart(9),
      c[3]!.padStart(9),
      c[4]!.padStart(8),
      c[5]!.padEnd(4),
      c[6] ?? "",
    ]
      .join("  ").trimEnd();
  const tolText = (t: number) => (Number.isNaN(t) ? "-" : t === EXACT ? "exact" : num(t));
  return [
    line(["op", "output", "rel err", "max abs", "tol", "ok", "note"]),
    ...rows.map((r) =>
      line([
        r.op,
        r.output,
        num(r.relErr),
        num(r.maxAbs),
        tolText(r.tol),
        r.ok ? "ok" : "FAIL",
        r.note ?? "",
      ])
    ),
  ].join("\n");
}

if (import.meta.main) {
  const selfCheck = Deno.args.includes("--self-check");
  if (!selfCheck && !Kernels.available("cuda")) {
    let why = "";
    try {
      Kernels.open({ device: "cuda" }).close();
    } catch (e) {
      why = e instanceof Error ? ` (${e.message})` : "";
    }
    console.log(`ops_compare: skipped: no CUDA device${why}`);
    Deno.exit(0);
  }
  using cpu = Kernels.open();
  using other = selfCheck ? Kernels.open({ threads: 1 }) : Kernels.open({ device: "cuda" });
  const rows = compareOps(cpu, other);
  console.log(formatTable(rows));
  const failed = rows.filter((r) => !r.ok).length;
  console.log(
    `\n${
      rows.length - failed
    } of ${rows.length} outputs within tolerance (${cpu.backend} vs ${other.backend})`,
  );
  if (failed > 0) Deno.exit(1);
}
