/** Packed causal attention, its backward pass, and KV-cache decoding. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";
import { dim, expectDisjoint, expectNumber, expectTensor } from "./_args.ts";

function shapes(q: Tensor, kk: Tensor, cuSeqlens: Tensor) {
  expectTensor(q, "q", "f32", [-1, -1, -1]);
  const [t, hq, d] = [dim(q, 0), dim(q, 1), dim(q, 2)];
  expectTensor(kk, "k", "f32", [t, -1, d]);
  const hkv = dim(kk, 1);
  if (hq % hkv !== 0) {
    throw new RangeError(`query heads ${hq} must be a multiple of kv heads ${hkv}`);
  }
  expectTensor(cuSeqlens, "cuSeqlens", "i32", [-1]);
  const b = dim(cuSeqlens, 0) - 1;
  if (b < 1) throw new RangeError("cuSeqlens needs at least 2 entries (B + 1)");
  return { t, hq, hkv, d, b };
}

/**
 * Products of the packed attention: `f32`, or `bf16` operands with fp32 accumulation (the
 * tensor cores on CUDA; the CPU library computes both in fp32).
 */
export type AttentionPrecision = "f32" | "bf16";

function checkPrecision(precision: AttentionPrecision): boolean {
  if (precision !== "f32" && precision !== "bf16") {
    throw new RangeError(`precision must be f32 or bf16, got '${precision}'`);
  }
  return precision === "bf16";
}

/** out (T, HQ, D), lse (HQ, T) from q (T, HQ, D), k, v (T, HKV, D) over packed sequences. */
export function attentionForward(
  k: Kernels,
  out: Tensor,
  lse: Tensor,
  q: Tensor,
  kk: Tensor,
  v: Tensor,
  cuSeqlens: Tensor,
  scale = 1 / Math.sqrt(q.shape[2] ?? 1),
  precision: AttentionPrecision = "f32",
): void {
  const { t, hq, hkv, d, b } = shapes(q, kk, cuSeqlens);
  expectTensor(v, "v", "f32", [t, hkv, d]);
  expectTensor(out, "out", "f32", [t, hq, d]);
  expectTensor(lse, "lse", "f32", [hq, t]);
  expectDisjoint([["out", out], ["lse", lse]], [["q", q], ["k", kk], ["v", v], [
    "cuSeqlens",
    cuSeqlens,
  ]]);
  expectNumber(scale, "scale", true);
  const bf16 = checkPrecision(precision);
  k.check(
    bf16 ? "arl_attention_forward_bf16" : "arl_attention_forward",
    (bf16 ? k.sym.arl_attention_forward_bf16 : k.sym.arl_attention_forward)(
      k.ctx,
      out.ptrIn(k),
      lse.ptrIn(k),
      q.ptrIn(k),
      kk.ptrIn(k),
      v.ptrIn(k),
      cuSeqlens.ptrIn(k),
      b,
      t,
      hq,
      hkv,
      d,
      scale,
    ),
  );
}

/** dq, dk, dv written from dout and the forward pass's out and lse. */
export function attentionBackward(
  k: Kernels,
  grads: { dq: Tensor; dk: Tensor; dv: Tensor },
  dout: Tensor,
  q: Tensor,
  kk: Tensor,
  v: Tensor,
  out: Tensor,
  lse: Tensor,
  cuSeqlens: Tensor,
  scale = 1 / Math.sqrt(q.shape[2] ?? 1),
  precision: AttentionPrecision = "f32",
): void {
  const { t, hq, hkv, d, b } = shapes(q, kk, cuSeqlens);
  expectTensor(v, "v", "f32", [t, hkv, d]);
  for (const [x, n] of [[dout, "dout"], [out, "out"], [grads.dq, "dq"]] as const) {
    expectTensor(x, n, "f32", [t, hq, d]);
  }
  expectTensor(grads.dk, "dk", "f32", [t, hkv, d]);
  expectTensor(grads.dv, "dv", "f32", [t, hkv, d]);
  expectTensor(lse, "lse", "f32", [hq, t]);
  expectDisjoint([["dq", grads.dq], ["dk", grads.dk], ["dv", grads.dv]], [
    ["dout", dout],
    ["q", q],
    ["k", kk],
    ["v", v],
    ["out", out],
    ["lse", lse],
    ["cuSeqlens", cuSeqlens],
  ]);
  expectNumber(scale, "scale", true);
  const bf16 = checkPrecision(precision);
  k.check(
    bf16 ? "arl_attention_backward_bf16" : "arl_attention_backward",
    (bf16 ? k.sym.arl_attention_backward_bf16 : k.sym.arl_attention_backward)(
      k.ctx,
      grads.dq.ptrIn(k),
      grads.dk.ptrIn(k),
      grads.dv.ptrIn(k),
      dout.ptrIn(k),
      q.ptrIn(k),
      kk.ptrIn(k),
      v.ptrIn(k),
      out.ptrIn(k),
      lse.ptrIn(k),
      cuSeqlens.ptrIn(k),
      b,
      t,
      hq,
      hkv,
      d,
      scale,
    ),
  );
}

/** Writes k, v (N, HKV, D) into the caches (S, HKV, L, D) at (slots, positions). */
export function kvCacheWrite(
  k: Kernels,
  kCache: Tensor,
  vCache: Tensor,
  kk: Tensor,
  v: Tensor,
  slots: Tensor,
  positions: Tensor,
): void {
  expectTensor(kCache, "kCache", "f32", [-1, -1, -1, -1]);
  const [s, hkv, l, d] = kCache.shape as [number, number, number, number];
  expectTensor(vCache, "vCache", "f32", [s, hkv, l, d]);
  expectTensor(kk, "k", "f32", [-1, hkv, d]);
  const n = dim(kk, 0);
  expectTensor(v, "v", "f32", [n, hkv, d]);
  expectTensor(slots, "slots", "i32", [n]);
  expectTensor(positions, "positions", "i32", [n]);
  expectDisjoint([["kCache", kCache], ["vCache", vCache]], [
    ["k", kk],
    ["v", v],
    ["slots", slots],
    ["positions", positions],
  ]);
  k.check(
    "arl_kv_cache_write",
    k.sym.arl_kv_cache_write(
      k.ctx,
      kCache.ptrIn(k),
      vCache.ptrIn(k),
      kk.ptrIn(k),
      v.ptrIn(k),
      slots.ptrIn(k),
      positions.ptrIn(k),
      n,
      s,
      hkv,
      l,
      d,
    ),
  );
}

/** out, q (N, HQ, D): query i attends to the first lens[i] positions of slot slots[i]. */
export function attentionDecode(
  k: Kernels,
  out: Tensor,
  q: Tensor,
  kCache: Tensor,
  vCache: Tensor,
  slots: Tensor,
  lens: Tensor,
  scale = 1 / Math.sqrt(q.shape[2] ?? 1),
): void {
  expectTensor(kCache, "kCache", "f32", [-1, -1, -1, -1]);
  const [s, hkv, l, d] = kCache.shape as [number, number, number, number];
  expectTensor(vCache, "vCache", "f32", [s, hkv, l, d]);
  expectTensor(q, "q", "f32", [-1, -1, d]);
  const [n, hq] = [dim(q, 0), dim(q, 1)];
  expectTensor(out, "out", "f32", [n, hq, d]);
  expectTensor(slots, "slots", "i32", [n]);
  expectTensor(lens, "lens", "i32", [n]);
  expectNumber(scale, "scale", true);
  expectDisjoint([["out", out]], [
    ["q", q],
    ["kCache", kCache],
    ["vCache", vCache],
    ["slots", slots],
    ["lens", lens],
  ]);
  k.check(
    "arl_attention_decode",
    k.sym.arl_attention_decode(
      k.ctx,
      out.ptrIn(k),
      q.ptrIn(k),
      kCache.ptrIn(k),
      vCache.ptrIn(k),
      slots.ptrIn(k),
      lens.ptrIn(k),
      n,
      s,
      hq,
      hkv,
      l,
      d,
      scale,
    ),
  );
}
