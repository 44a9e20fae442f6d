/** Embedding, RMSNorm, RoPE, SwiGLU, residual add and the value head. @module */
import type { Kernels } from "../kernels.ts";
import { KernelLibraryError, libraryPath } from "../library.ts";
import type { Tensor } from "../tensor.ts";
import {
  anyShape,
  dim,
  expectDisjoint,
  expectNumber,
  expectSameOrApart,
  expectTensor,
  ptrOf,
} from "./_args.ts";

/**
 * out (T, C) = wte (V, C)[tokens (T)]. A token id outside [0, V) is an error; the CUDA library
 * writes zeros for its row and reports it at the next call that synchronizes.
 */
export function embeddingForward(k: Kernels, out: Tensor, tokens: Tensor, wte: Tensor): void {
  expectTensor(tokens, "tokens", "i32", [-1]);
  expectTensor(wte, "wte", "f32", [-1, -1]);
  const [t, v, c] = [dim(tokens, 0), dim(wte, 0), dim(wte, 1)];
  expectTensor(out, "out", "f32", [t, c]);
  expectDisjoint([["out", out]], [["tokens", tokens], ["wte", wte]]);
  k.check(
    "arl_embedding_forward",
    k.sym.arl_embedding_forward(k.ctx, out.ptrIn(k), tokens.ptrIn(k), wte.ptrIn(k), t, v, c),
  );
}

/** dwte (V, C) += scatter of dout (T, C) by tokens. */
export function embeddingBackward(k: Kernels, dwte: Tensor, dout: Tensor, tokens: Tensor): void {
  expectTensor(tokens, "tokens", "i32", [-1]);
  expectTensor(dwte, "dwte", "f32", [-1, -1]);
  const [t, v, c] = [dim(tokens, 0), dim(dwte, 0), dim(dwte, 1)];
  expectTensor(dout, "dout", "f32", [t, c]);
  expectDisjoint([["dwte", dwte]], [["dout", dout], ["tokens", tokens]]);
  k.check(
    "arl_embedding_backward",
    k.sym.arl_embedding_backward(k.ctx, dwte.ptrIn(k), dout.ptrIn(k), tokens.ptrIn(k), t, v, c),
  );
}

/** out (T, C) = x / rms(x) * weight; rstd (T) saved for the backward pass. */
export function rmsnormForward(
  k: Kernels,
  out: Tensor,
  rstd: Tensor,
  x: Tensor,
  weight: Tensor,
  eps: number,
): void {
  expectTensor(x, "x", "f32", [-1, -1]);
  const [t, c] = [dim(x, 0), dim(x, 1)];
  expectTensor(out, "out", "f32", [t, c]);
  expectTensor(rstd, "rstd", "f32", [t]);
  expectTensor(weight, "weight", "f32", [c]);
  expectNumber(eps, "eps");
  expectDisjoint([["out", out], ["rstd", rstd]], [["x", x], ["weight", weight]]);
  k.check(
    "arl_rmsnorm_forward",
    k.sym.arl_rmsnorm_forward(
      k.ctx,
      out.ptrIn(k),
      rstd.ptrIn(k),
      x.ptrIn(k),
      weight.ptrIn(k),
      t,
      c,
      eps,
    ),
  );
}

/** dx (T, C) written; dweight (C) += (when given). */
export function rmsnormBackward(
  k: Kernels,
  dx: Tensor,
  dweight: Tensor | null,
  dout: Tensor,
  x: Tensor,
  rstd: Tensor,
  weight: Tensor,
): void {
  expectTensor(x, "x", "f32", [-1, -1]);
  const [t, c] = [dim(x, 0), dim(x, 1)];
  expectTensor(dx, "dx", "f32", [t, c]);
  expectTensor(dout, "dout", "f32", [t, c]);
  expectTensor(rstd, "rstd", "f32", [t]);
  expectTensor(weight, "weight", "f32", [c]);
  if (dweight) expectTensor(dweight, "dweight", "f32", [c]);
  expectDisjoint([["dx", dx], ["dweight", dweight]], [
    ["dout", dout],
    ["x", x],
    ["rstd", rstd],
    ["weight", weight],
  ]);
  k.check(
    "arl_rmsnorm_backward",
    k.sym.arl_rmsnorm_backward(
      k.ctx,
      dx.ptrIn(k),
      ptrOf(k, dweight),
      dout.ptrIn(k),
      x.ptrIn(k),
      rstd.ptrIn(k),
      weight.ptrIn(k),
      t,
      c,
    ),
  );
}

/**
 * The checks rope and ropeFreqs share (x, out (T, H, D), positions (T); out may be x) and the
 * shape (T, H, D).
 */
function ropeShape(out: Tensor, x: Tensor, positions: Tensor): [number, number, number] {
  expectTensor(x, "x", "f32", [-1, -1, -1]);
  const [t, h, d] = [dim(x, 0), dim(x, 1), dim(x, 2)];
  expectTensor(out, "out", "f32", [t, h, d]);
  expectTensor(positions, "positions", "i32", [t]);
  expectSameOrApart([["out", out]], [["x", x]]);
  expectDisjoint([["out", out]], [["positions", positions]]);
  return [t, h, d];
}

/**
 * Rotary embedding (HF rotate_half) of x (T, H, D) at positions (T); inverse for the backward
 * pass. out may be x (in place).
 */
export function rope(
  k: Kernels,
  out: Tensor,
  x: Tensor,
  positions: Tensor,
  theta: number,
  inverse = false,
): void {
  const [t, h, d] = ropeShape(out, x, positions);
  expectNumber(theta, "theta", true);
  k.check(
    "arl_rope",
    k.sym.arl_rope(
      k.ctx,
      out.ptrIn(k),
      x.ptrIn(k),
      positions.ptrIn(k),
      t,
      h,
      d,
      theta,
      inverse ? 1 : 0,
    ),
  );
}

/**
 * {@linkcode rope} with the frequencies given: the pair (j, j + D/2) of each head rotated by
 * `positions[i] * invFreq[j]`, invFreq (D/2) f32 on the kernels' device (a scaled RoPE's table,
 * such as Llama 3.1's). out may be x. A library built before this entry point lacks it: a
 * {@linkcode KernelLibraryError} that says to rebuild.
 */
export function ropeFreqs(
  k: Kernels,
  out: Tensor,
  x: Tensor,
  positions: Tensor,
  invFreq: Tensor,
  inverse = false,
): void {
  const [t, h, d] = ropeShape(out, x, positions);
  expectTensor(invFreq, "invFreq", "f32", [d / 2]);
  expectDisjoint([["out", out]], [["invFreq", invFreq]]);
  const fn = k.sym.arl_rope_freqs;
  if (fn === null) {
    throw new KernelLibraryError(
      `The ${k.device} kernel library ${libraryPath(k.device)} was built before arl_rope_freqs ` +
        "(RoPE with a frequency table, for scaled RoPE): run `deno task build` to rebuild it.",
    );
  }
  k.check(
    "arl_rope_freqs",
    fn(
      k.ctx,
      out.ptrIn(k),
      x.ptrIn(k),
      positions.ptrIn(k),
      invFreq.ptrIn(k),
      t,
      h,
      d,
      inverse ? 1 : 0,
    ),
  );
}

/** out = silu(gate) * up, elementwise over same-shaped tensors (out may be gate or up). */
export function swigluForward(k: Kernels, out: Tensor, gate: Tensor, up: Tensor): void {
  expectTensor(gate, "gate", "f32", anyShape(gate)); // (any shape)
  expectTensor(up, "up", "f32", gate.shape);
  expectTensor(out, "out", "f32", gate.shape);
  expectSameOrApart([["out", out]], [["gate", gate], ["up", up]]);
  k.check(
    "arl_swiglu_forward",
    k.sym.arl_swiglu_forward(k.ctx, out.ptrIn(k), gate.ptrIn(k), up.ptrIn(k), BigInt(gate.size)),
  );
}

/** dgate, dup written from dout. */
export function swigluBackward(
  k: Kernels,
  dgate: Tensor,
  dup: Tensor,
  dout: Tensor,
  gate: Tensor,
  up: Tensor,
): void {
  expectTensor(gate, "gate", "f32", anyShape(gate)); // (any shape)
  for (const [t, n] of [[dgate, "dgate"], [dup, "dup"], [dout, "dout"], [up, "up"]] as const) {
    expectTensor(t, n, "f32", gate.shape);
  }
  expectDisjoint([["dgate", dgate], ["dup", dup]], [["dout", dout], ["gate", gate], ["up", up]]);
  k.check(
    "arl_swiglu_backward",
    k.sym.arl_swiglu_backward(
      k.ctx,
      dgate.ptrIn(k),
      dup.ptrIn(k),
      dout.ptrIn(k),
      gate.ptrIn(k),
      up.ptrIn(k),
      BigInt(gate.size),
    ),
  );
}

/** out = a + b (out may be a or b). */
export function add(k: Kernels, out: Tensor, a: Tensor, b: Tensor): void {
  expectTensor(a, "a", "f32", anyShape(a)); // (any shape; b and out match it)
  expectTensor(b, "b", "f32", a.shape);
  expectTensor(out, "out", "f32", a.shape);
  expectSameOrApart([["out", out]], [["a", a], ["b", b]]);
  k.check("arl_add", k.sym.arl_add(k.ctx, out.ptrIn(k), a.ptrIn(k), b.ptrIn(k), BigInt(a.size)));
}

/** values (T) = h (T, C) w (C) + bias. */
export function valueHeadForward(
  k: Kernels,
  values: Tensor,
  h: Tensor,
  w: Tensor,
  bias: number,
): void {
  expectTensor(h, "h", "f32", [-1, -1]);
  const [t, c] = [dim(h, 0), dim(h, 1)];
  expectTensor(values, "values", "f32", [t]);
  expectTensor(w, "w", "f32", [c]);
  expectNumber(bias, "bias");
  expectDisjoint([["values", values]], [["h", h], ["w", w]]);
  k.check(
    "arl_value_head_forward",
    k.sym.arl_value_head_forward(k.ctx, values.ptrIn(k), h.ptrIn(k), w.ptrIn(k), bias, t, c),
  );
}

/** dh written; dw, dbias (1) +=. */
export function valueHeadBackward(
  k: Kernels,
  grads: { dh?: Tensor | null; dw?: Tensor | null; dbias?: Tensor | null },
  dvalues: Tensor,
  h: Tensor,
  w: Tensor,
): void {
  expectTensor(h, "h", "f32", [-1, -1]);
  const [t, c] = [dim(h, 0), dim(h, 1)];
  expectTensor(dvalues, "dvalues", "f32", [t]);
  expectTensor(w, "w", "f32", [c]);
  if (grads.dh) expectTensor(grads.dh, "dh", "f32", [t, c]);
  if (grads.dw) expectTensor(grads.dw, "dw", "f32", [c]);
  if (grads.dbias) expectTensor(grads.dbias, "dbias", "f32", [1]);
  expectDisjoint([["dh", grads.dh], ["dw", grads.dw], ["dbias", grads.dbias]], [
    ["dvalues", dvalues],
    ["h", h],
    ["w", w],
  ]);
  k.check(
    "arl_value_head_backward",
    k.sym.arl_value_head_backward(
      k.ctx,
      ptrOf(k, grads.dh),
      ptrOf(k, grads.dw),
      ptrOf(k, grads.dbias),
      dvalues.ptrIn(k),
      h.ptrIn(k),
      w.ptrIn(k),
      t,
      c,
    ),
  );
}
