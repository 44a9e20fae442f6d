/** Decode fusions: calls a decode step makes back to back, fused on the GPU. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";
import { KernelLibraryError, libraryPath } from "../library.ts";
import { dim, expectDisjoint, expectNumber, expectTensor, expectWeight, ptrOf } from "./_args.ts";

/**
 * Rows up to which the CUDA library fuses these calls into one kernel; above it they run
 * unfused through scratch memory (which a graph being recorded cannot use).
 */
export const DECODE_FUSION_MAX_ROWS = 8;

/**
 * y (M, N) = rmsnorm(x (M, K); normWeight (K), eps) . w (N, K)^T + bias (N): the norm and the
 * linear layer in one call, the normalized rows never stored. w is fp32 or bf16.
 */
export function rmsnormLinearForward(
  k: Kernels,
  y: Tensor,
  x: Tensor,
  normWeight: Tensor,
  w: Tensor,
  bias: Tensor | null,
  eps: number,
): void {
  expectTensor(x, "x", "f32", [-1, -1]);
  const [m, kk] = [dim(x, 0), dim(x, 1)];
  expectTensor(normWeight, "normWeight", "f32", [kk]);
  const bf16 = expectWeight(w, "w", [-1, kk]);
  const n = dim(w, 0);
  expectTensor(y, "y", "f32", [m, n]);
  if (bias) expectTensor(bias, "bias", "f32", [n]);
  expectNumber(eps, "eps");
  expectDisjoint([["y", y]], [["x", x], ["normWeight", normWeight], ["w", w], ["bias", bias]]);
  const name = bf16 ? "arl_rmsnorm_linear_forward_bf16" : "arl_rmsnorm_linear_forward";
  const fn = bf16 ? k.sym.arl_rmsnorm_linear_forward_bf16 : k.sym.arl_rmsnorm_linear_forward;
  k.check(
    name,
    fn(
      k.ctx,
      y.ptrIn(k),
      x.ptrIn(k),
      normWeight.ptrIn(k),
      w.ptrIn(k),
      ptrOf(k, bias),
      m,
      n,
      kk,
      eps,
    ),
  );
}

/**
 * y (M, F) = silu(g) * u where [g | u] = rmsnorm(x (M, K); normWeight (K), eps) . w (2F, K)^T +
 * bias (2F): the norm, the stacked gate|up linear layer (w's first F rows the gate, the next F
 * the up projection) and SwiGLU in one call, neither the normalized rows nor g and u stored.
 * w is fp32 or bf16.
 */
export function rmsnormLinearSwigluForward(
  k: Kernels,
  y: Tensor,
  x: Tensor,
  normWeight: Tensor,
  w: Tensor,
  bias: Tensor | null,
  eps: number,
): void {
  expectTensor(x, "x", "f32", [-1, -1]);
  const [m, kk] = [dim(x, 0), dim(x, 1)];
  expectTensor(normWeight, "normWeight", "f32", [kk]);
  const bf16 = expectWeight(w, "w", [-1, kk]);
  const f = dim(w, 0) / 2;
  if (!Number.isInteger(f)) {
    throw new RangeError(
      `w must have an even number of rows (gate, then up), got [${w.shape.join(", ")}]`,
    );
  }
  expectTensor(y, "y", "f32", [m, f]);
  if (bias) expectTensor(bias, "bias", "f32", [2 * f]);
  expectNumber(eps, "eps");
  expectDisjoint([["y", y]], [["x", x], ["normWeight", normWeight], ["w", w], ["bias", bias]]);
  const name = bf16
    ? "arl_rmsnorm_linear_swiglu_forward_bf16"
    : "arl_rmsnorm_linear_swiglu_forward";
  const fn = bf16
    ? k.sym.arl_rmsnorm_linear_swiglu_forward_bf16
    : k.sym.arl_rmsnorm_linear_swiglu_forward;
  k.check(
    name,
    fn(
      k.ctx,
      y.ptrIn(k),
      x.ptrIn(k),
      normWeight.ptrIn(k),
      w.ptrIn(k),
      ptrOf(k, bias),
      m,
      f,
      kk,
      eps,
    ),
  );
}

/** The shapes ropeKvCacheWrite and normRopeKvCacheWrite check: the caches give S, HKV, L, D. */
function ropeKvShapes(
  q: Tensor,
  kk: Tensor,
  kCache: Tensor,
  vCache: Tensor,
  v: Tensor,
  slots: Tensor,
  positions: Tensor,
): { n: number; hq: number; s: number; hkv: number; l: number; d: number } {
  expectTensor(kCache, "kCache", "f32", [-1, -1, -1, -1]);
  const [s, hkv, l, d] = kCache.shape as [number, number, number, number];
  expectTensor(vCache, "vCache", "f32", [s, hkv, l, d]);
  expectTensor(q, "q", "f32", [-1, -1, d]);
  const [n, hq] = [dim(q, 0), dim(q, 1)];
  expectTensor(kk, "k", "f32", [n, hkv, d]);
  expectTensor(v, "v", "f32", [n, hkv, d]);
  expectTensor(slots, "slots", "i32", [n]);
  expectTensor(positions, "positions", "i32", [n]);
  return { n, hq, s, hkv, l, d };
}

/**
 * RoPE of q (N, HQ, D) and k (N, HKV, D) in place at positions (N), then the rotated k and v
 * (N, HKV, D) into the caches (S, HKV, L, D) at (slots, positions): `rope` twice and
 * `kvCacheWrite` in one call.
 */
export function ropeKvCacheWrite(
  k: Kernels,
  q: Tensor,
  kk: Tensor,
  kCache: Tensor,
  vCache: Tensor,
  v: Tensor,
  slots: Tensor,
  positions: Tensor,
  theta: number,
): void {
  const { n, hq, s, hkv, l, d } = ropeKvShapes(q, kk, kCache, vCache, v, slots, positions);
  expectNumber(theta, "theta", true);
  expectDisjoint([["q", q], ["k", kk], ["kCache", kCache], ["vCache", vCache]], [
    ["v", v],
    ["slots", slots],
    ["positions", positions],
  ]);
  k.check(
    "arl_rope_kv_cache_write",
    k.sym.arl_rope_kv_cache_write(
      k.ctx,
      q.ptrIn(k),
      kk.ptrIn(k),
      kCache.ptrIn(k),
      vCache.ptrIn(k),
      v.ptrIn(k),
      slots.ptrIn(k),
      positions.ptrIn(k),
      n,
      hq,
      s,
      hkv,
      l,
      d,
      theta,
    ),
  );
}

/** What {@linkcode normRopeKvCacheWrite} adds to {@linkcode ropeKvCacheWrite}. */
export interface NormRopeOptions {
  /** Each query head's RMSNorm weight (D), applied before RoPE (Qwen3's q_norm); null: none. */
  qNorm: Tensor | null;
  /** Each key head's RMSNorm weight (D), likewise (k_norm); null: none. */
  kNorm: Tensor | null;
  /** The rotation frequencies (D / 2), as {@linkcode ropeFreqs} takes them; null: theta's. */
  invFreq: Tensor | null;
  eps: number;
  theta: number;
}

/**
 * {@linkcode ropeKvCacheWrite} with each head of q and k RMS-normalized first where its weight
 * is given, and the frequencies of a table where given (one kernel on the GPU, where the
 * separate calls take up to five). Throws a KernelLibraryError on a library built before
 * arl_norm_rope_kv_cache_write ({@linkcode hasNormRopeKvCacheWrite} says first).
 */
export function normRopeKvCacheWrite(
  k: Kernels,
  q: Tensor,
  kk: Tensor,
  kCache: Tensor,
  vCache: Tensor,
  v: Tensor,
  slots: Tensor,
  positions: Tensor,
  options: NormRopeOptions,
): void {
  const { n, hq, s, hkv, l, d } = ropeKvShapes(q, kk, kCache, vCache, v, slots, positions);
  const { qNorm, kNorm, invFreq, eps, theta } = options;
  if (qNorm) expectTensor(qNorm, "qNorm", "f32", [d]);
  if (kNorm) expectTensor(kNorm, "kNorm", "f32", [d]);
  if (invFreq) expectTensor(invFreq, "invFreq", "f32", [d / 2]);
  expectNumber(eps, "eps");
  expectNumber(theta, "theta", true);
  const read: [string, Tensor][] = [["v", v], ["slots", slots], ["positions", positions]];
  for (const [name, t] of [["qNorm", qNorm], ["kNorm", kNorm], ["invFreq", invFreq]] as const) {
    if (t) read.push([name, t]);
  }
  expectDisjoint([["q", q], ["k", kk], ["kCache", kCache], ["vCache", vCache]], read);
  const fn = k.sym.arl_norm_rope_kv_cache_write;
  if (fn === null) {
    throw new KernelLibraryError(
      `The ${k.device} kernel library ${libraryPath(k.device)} was built before ` +
        "arl_norm_rope_kv_cache_write: run `deno task build` to rebuild it.",
    );
  }
  const opt = (t: Tensor | null) => t ? t.ptrIn(k) : null;
  k.check(
    "arl_norm_rope_kv_cache_write",
    fn(
      k.ctx,
      q.ptrIn(k),
      kk.ptrIn(k),
      kCache.ptrIn(k),
      vCache.ptrIn(k),
      v.ptrIn(k),
      opt(qNorm),
      opt(kNorm),
      opt(invFreq),
      slots.ptrIn(k),
      positions.ptrIn(k),
      n,
      hq,
      s,
      hkv,
      l,
      d,
      eps,
      theta,
    ),
  );
}

/** Whether `k`'s library has arl_norm_rope_kv_cache_write (libraries built before it do not). */
export function hasNormRopeKvCacheWrite(k: Kernels): boolean {
  return k.sym.arl_norm_rope_kv_cache_write !== null;
}

/**
 * The q|k|v projection of a decode step in one call: y (M, (HQ + 2 HKV) D) =
 * rmsnorm(x (M, K); normWeight, eps) . w^T + bias, with w the stacked q, k and v weights
 * ((HQ + 2 HKV) D, K; fp32 or bf16), then each row's q and k parts rotated at positions (M)
 * (RoPE, theta) and its rotated k and its v written to kCache, vCache (S, HKV, L, D) at
 * (slots, positions), as {@linkcode ropeKvCacheWrite} does. HQ is the number of query heads.
 */
export function rmsnormQkvRopeForward(
  k: Kernels,
  y: Tensor,
  x: Tensor,
  normWeight: Tensor,
  w: Tensor,
  bias: Tensor | null,
  eps: number,
  rope: {
    hq: number;
    kCache: Tensor;
    vCache: Tensor;
    slots: Tensor;
    positions: Tensor;
    theta: number;
  },
): void {
  expectTensor(x, "x", "f32", [-1, -1]);
  const [m, kk] = [dim(x, 0), dim(x, 1)];
  expectTensor(normWeight, "normWeight", "f32", [kk]);
  expectTensor(rope.kCache, "kCache", "f32", [-1, -1, -1, -1]);
  const [s, hkv, l, d] = rope.kCache.shape as [number, number, number, number];
  expectTensor(rope.vCache, "vCache", "f32", [s, hkv, l, d]);
  if (!Number.isInteger(rope.hq) || rope.hq < 1) {
    throw new RangeError(`hq must be a positive integer, got ${rope.hq}`);
  }
  const n = (rope.hq + 2 * hkv) * d;
  const bf16 = expectWeight(w, "w", [n, kk]);
  expectTensor(y, "y", "f32", [m, n]);
  if (bias) expectTensor(bias, "bias", "f32", [n]);
  expectTensor(rope.slots, "slots", "i32", [m]);
  expectTensor(rope.positions, "positions", "i32", [m]);
  expectNumber(eps, "eps");
  expectNumber(rope.theta, "theta", true);
  expectDisjoint([["y", y], ["kCache", rope.kCache], ["vCache", rope.vCache]], [
    ["x", x],
    ["normWeight", normWeight],
    ["w", w],
    ["bias", bias],
    ["slots", rope.slots],
    ["positions", rope.positions],
  ]);
  const name = bf16 ? "arl_rmsnorm_qkv_rope_forward_bf16" : "arl_rmsnorm_qkv_rope_forward";
  const fn = bf16 ? k.sym.arl_rmsnorm_qkv_rope_forward_bf16 : k.sym.arl_rmsnorm_qkv_rope_forward;
  k.check(
    name,
    fn(
      k.ctx,
      y.ptrIn(k),
      x.ptrIn(k),
      normWeight.ptrIn(k),
      w.ptrIn(k),
      ptrOf(k, bias),
      m,
      kk,
      eps,
      rope.kCache.ptrIn(k),
      rope.vCache.ptrIn(k),
      rope.slots.ptrIn(k),
      rope.positions.ptrIn(k),
      rope.hq,
      s,
      hkv,
      l,
      d,
      rope.theta,
    ),
  );
}
