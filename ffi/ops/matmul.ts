/** Matrix products: general SGEMM and the linear layer. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";
import { dim, expectDisjoint, expectNumber, expectTensor, expectWeight, ptrOf } from "./_args.ts";

/** Options of {@linkcode sgemm}. */
export interface SgemmOptions {
  transA?: boolean;
  transB?: boolean;
  alpha?: number;
  beta?: number;
}

/**
 * c (M, N) = alpha op(a) op(b) + beta c, with op(a) (M, K) and op(b) (K, N);
 * a is (K, M) when transA, b is (N, K) when transB.
 */
export function sgemm(k: Kernels, c: Tensor, a: Tensor, b: Tensor, o: SgemmOptions = {}): void {
  expectTensor(a, "a", "f32", [-1, -1]);
  expectTensor(b, "b", "f32", [-1, -1]);
  const [m, kk] = o.transA ? [dim(a, 1), dim(a, 0)] : [dim(a, 0), dim(a, 1)];
  const [kb, n] = o.transB ? [dim(b, 1), dim(b, 0)] : [dim(b, 0), dim(b, 1)];
  if (kb !== kk) throw new RangeError(`sgemm: op(a) is (${m}, ${kk}) but op(b) is (${kb}, ${n})`);
  expectTensor(c, "c", "f32", [m, n]);
  const alpha = o.alpha ?? 1;
  const beta = o.beta ?? 0;
  expectNumber(alpha, "alpha");
  expectNumber(beta, "beta");
  expectDisjoint([["c", c]], [["a", a], ["b", b]]);
  k.check(
    "arl_sgemm",
    k.sym.arl_sgemm(
      k.ctx,
      c.ptrIn(k),
      a.ptrIn(k),
      b.ptrIn(k),
      o.transA ? 1 : 0,
      o.transB ? 1 : 0,
      m,
      n,
      kk,
      alpha,
      beta,
      dim(a, 1),
      dim(b, 1),
      n,
    ),
  );
}

/**
 * y (M, N) = x (M, K) w (N, K)^T + bias (N) [+ y when accumulate]; w fp32, or bf16 for
 * mixed precision (fp32 accumulation; see `arl_linear_forward_bf16`).
 */
export function linearForward(
  k: Kernels,
  y: Tensor,
  x: Tensor,
  w: Tensor,
  bias: Tensor | null = null,
  accumulate = false,
): void {
  expectTensor(x, "x", "f32", [-1, -1]);
  const bf16 = expectWeight(w, "w", [-1, dim(x, 1)]);
  const [m, kk, n] = [dim(x, 0), dim(x, 1), dim(w, 0)];
  expectTensor(y, "y", "f32", [m, n]);
  if (bias) expectTensor(bias, "bias", "f32", [n]);
  expectDisjoint([["y", y]], [["x", x], ["w", w], ["bias", bias]]);
  const fn = bf16 ? k.sym.arl_linear_forward_bf16 : k.sym.arl_linear_forward;
  k.check(
    bf16 ? "arl_linear_forward_bf16" : "arl_linear_forward",
    fn(k.ctx, y.ptrIn(k), x.ptrIn(k), w.ptrIn(k), ptrOf(k, bias), m, n, kk, accumulate ? 1 : 0),
  );
}

/** Gradients of the linear layer: dx written (or += when accumulateDx), dw and dbias +=. */
export function linearBackward(
  k: Kernels,
  grads: { dx?: Tensor | null; dw?: Tensor | null; dbias?: Tensor | null },
  dy: Tensor,
  x: Tensor,
  w: Tensor,
  accumulateDx = false,
): void {
  expectTensor(x, "x", "f32", [-1, -1]);
  const bf16 = expectWeight(w, "w", [-1, dim(x, 1)]);
  const [m, kk, n] = [dim(x, 0), dim(x, 1), dim(w, 0)];
  expectTensor(dy, "dy", "f32", [m, n]);
  if (grads.dx) expectTensor(grads.dx, "dx", "f32", [m, kk]);
  if (grads.dw) expectTensor(grads.dw, "dw", "f32", [n, kk]);
  if (grads.dbias) expectTensor(grads.dbias, "dbias", "f32", [n]);
  expectDisjoint([["dx", grads.dx], ["dw", grads.dw], ["dbias", grads.dbias]], [
    ["dy", dy],
    ["x", x],
    ["w", w],
  ]);
  k.check(
    bf16 ? "arl_linear_backward_bf16" : "arl_linear_backward",
    (bf16 ? k.sym.arl_linear_backward_bf16 : k.sym.arl_linear_backward)(
      k.ctx,
      ptrOf(k, grads.dx),
      ptrOf(k, grads.dw),
      ptrOf(k, grads.dbias),
      dy.ptrIn(k),
      x.ptrIn(k),
      w.ptrIn(k),
      m,
      n,
      kk,
      accumulateDx ? 1 : 0,
    ),
  );
}
