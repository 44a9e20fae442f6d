/** AdamW, gradient norms, scaling, fills and dtype conversion. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";
import { anyShape, expectDisjoint, expectInt, expectNumber, expectTensor } from "./_args.ts";

/** Settings of {@linkcode adamw}. */
export interface AdamWParams {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
  /** 1-based step count (for bias correction). */
  step: number;
  /** Multiplies gradients first (e.g. the clipping factor). */
  gradScale?: number;
}

/** One AdamW step over same-shaped params, m, v and grads. */
export function adamw(
  k: Kernels,
  params: Tensor,
  m: Tensor,
  v: Tensor,
  grads: Tensor,
  p: AdamWParams,
): void {
  expectTensor(params, "params", "f32", anyShape(params));
  for (const [t, n] of [[params, "params"], [m, "m"], [v, "v"], [grads, "grads"]] as const) {
    expectTensor(t, n, "f32", params.shape);
  }
  expectInt(p.step, "step");
  expectNumber(p.lr, "lr");
  for (const [x, n] of [[p.beta1, "beta1"], [p.beta2, "beta2"], [p.eps, "eps"]] as const) {
    if (x !== undefined) expectNumber(x, n);
  }
  if (p.weightDecay !== undefined) expectNumber(p.weightDecay, "weightDecay");
  if (p.gradScale !== undefined) expectNumber(p.gradScale, "gradScale");
  expectDisjoint([["params", params], ["m", m], ["v", v]], [["grads", grads]]);
  k.check(
    "arl_adamw",
    k.sym.arl_adamw(
      k.ctx,
      params.ptrIn(k),
      m.ptrIn(k),
      v.ptrIn(k),
      grads.ptrIn(k),
      BigInt(params.size),
      p.lr,
      p.beta1 ?? 0.9,
      p.beta2 ?? 0.999,
      p.eps ?? 1e-8,
      p.weightDecay ?? 0,
      p.step,
      p.gradScale ?? 1,
    ),
  );
}

/** Sum of squares of all elements (in double precision). */
export function sumSquares(k: Kernels, x: Tensor): number {
  expectTensor(x, "x", "f32", anyShape(x));
  const out = new Float64Array(1);
  k.check(
    "arl_sum_squares",
    k.sym.arl_sum_squares(k.ctx, Deno.UnsafePointer.of(out), x.ptrIn(k), BigInt(x.size)),
  );
  return out[0]!;
}

/** x *= s */
export function scale(k: Kernels, x: Tensor, s: number): void {
  expectTensor(x, "x", "f32", anyShape(x));
  expectNumber(s, "s");
  k.check("arl_scale", k.sym.arl_scale(k.ctx, x.ptrIn(k), s, BigInt(x.size)));
}

/** Sets every element to `value` (zeroing with 0). */
export function fill(k: Kernels, x: Tensor, value: number): void {
  expectTensor(x, "x", "f32", anyShape(x));
  // (NaN and the infinities are values a buffer may be filled with; 1e39 would become one)
  if (
    typeof value !== "number" || (Number.isFinite(value) && !Number.isFinite(Math.fround(value)))
  ) {
    throw new RangeError(
      `value must be a number a float32 holds (NaN, the infinities, or at most 3.4e38 in ` +
        `size), got ${value}`,
    );
  }
  k.check("arl_fill_f32", k.sym.arl_fill_f32(k.ctx, x.ptrIn(k), value, BigInt(x.size)));
}

/** bf16 (round to nearest even) of an f32 tensor of the same shape. */
export function toBf16(k: Kernels, out: Tensor, x: Tensor): void {
  expectTensor(x, "x", "f32", anyShape(x));
  expectTensor(out, "out", "bf16", x.shape);
  expectDisjoint([["out", out]], [["x", x]]);
  k.check(
    "arl_f32_to_bf16",
    k.sym.arl_f32_to_bf16(k.ctx, out.ptrIn(k), x.ptrIn(k), BigInt(x.size)),
  );
}

/** f32 of a bf16 tensor of the same shape. */
export function fromBf16(k: Kernels, out: Tensor, x: Tensor): void {
  expectTensor(x, "x", "bf16", anyShape(x));
  expectTensor(out, "out", "f32", x.shape);
  expectDisjoint([["out", out]], [["x", x]]);
  k.check(
    "arl_bf16_to_f32",
    k.sym.arl_bf16_to_f32(k.ctx, out.ptrIn(k), x.ptrIn(k), BigInt(x.size)),
  );
}

/** The device's measured fused multiply-add peak in GFLOP/s (a benchmark baseline). */
export function fmaPeak(k: Kernels, iterations = 200_000_000): number {
  // (at most 2^34: past that a call runs for minutes on any CPU)
  expectInt(iterations, "iterations", 1, 2 ** 34);
  const out = new Float64Array(1);
  k.check(
    "arl_fma_peak",
    k.sym.arl_fma_peak(k.ctx, Deno.UnsafePointer.of(out), BigInt(iterations)),
  );
  return out[0]!;
}
