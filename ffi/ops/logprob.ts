/** The fused LM head + log-softmax + gather + entropy, and full logits. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";
import { dim, expectDisjoint, expectDivisor, expectTensor, expectWeight, ptrOf } from "./_args.ts";

function shapes(h: Tensor, targets: Tensor, w: Tensor) {
  expectTensor(h, "h", "f32", [-1, -1]);
  const [t, c] = [dim(h, 0), dim(h, 1)];
  expectTensor(targets, "targets", "i32", [t]);
  const bf16 = expectWeight(w, "w", [-1, c]);
  return { t, c, v: dim(w, 0), bf16 };
}

/**
 * logp (T), entropy (T, optional), lse (T) of targets under softmax(h w^T / temperature);
 * w fp32 or bf16 (mixed precision: fp32 math on bf16 weights).
 */
export function logprobForward(
  k: Kernels,
  out: { logp: Tensor; lse: Tensor; entropy?: Tensor | null },
  h: Tensor,
  targets: Tensor,
  w: Tensor,
  temperature = 1,
): void {
  const { t, c, v, bf16 } = shapes(h, targets, w);
  expectTensor(out.logp, "logp", "f32", [t]);
  expectTensor(out.lse, "lse", "f32", [t]);
  if (out.entropy) expectTensor(out.entropy, "entropy", "f32", [t]);
  expectDivisor(temperature, "temperature");
  expectDisjoint([["logp", out.logp], ["lse", out.lse], ["entropy", out.entropy]], [
    ["h", h],
    ["targets", targets],
    ["w", w],
  ]);
  k.check(
    bf16 ? "arl_logprob_forward_bf16" : "arl_logprob_forward",
    (bf16 ? k.sym.arl_logprob_forward_bf16 : k.sym.arl_logprob_forward)(
      k.ctx,
      out.logp.ptrIn(k),
      ptrOf(k, out.entropy),
      out.lse.ptrIn(k),
      h.ptrIn(k),
      targets.ptrIn(k),
      w.ptrIn(k),
      t,
      v,
      c,
      temperature,
    ),
  );
}

/** dh (T, C) written and dw (V, C) += from dlogp (T) and dentropy (T, optional). */
export function logprobBackward(
  k: Kernels,
  grads: { dh: Tensor; dw?: Tensor | null },
  upstream: { dlogp: Tensor; dentropy?: Tensor | null },
  h: Tensor,
  targets: Tensor,
  w: Tensor,
  saved: { lse: Tensor; entropy?: Tensor | null },
  temperature = 1,
): void {
  const { t, c, v, bf16 } = shapes(h, targets, w);
  expectTensor(grads.dh, "dh", "f32", [t, c]);
  if (grads.dw) expectTensor(grads.dw, "dw", "f32", [v, c]);
  expectTensor(upstream.dlogp, "dlogp", "f32", [t]);
  expectTensor(saved.lse, "lse", "f32", [t]);
  if (upstream.dentropy) {
    expectTensor(upstream.dentropy, "dentropy", "f32", [t]);
    if (!saved.entropy) throw new TypeError("dentropy needs the forward pass's entropy");
    expectTensor(saved.entropy, "entropy", "f32", [t]);
  }
  expectDisjoint([["dh", grads.dh], ["dw", grads.dw]], [
    ["dlogp", upstream.dlogp],
    ["dentropy", upstream.dentropy],
    ["h", h],
    ["targets", targets],
    ["w", w],
    ["lse", saved.lse],
    ["entropy", saved.entropy],
  ]);
  expectDivisor(temperature, "temperature");
  k.check(
    bf16 ? "arl_logprob_backward_bf16" : "arl_logprob_backward",
    (bf16 ? k.sym.arl_logprob_backward_bf16 : k.sym.arl_logprob_backward)(
      k.ctx,
      grads.dh.ptrIn(k),
      ptrOf(k, grads.dw),
      upstream.dlogp.ptrIn(k),
      ptrOf(k, upstream.dentropy),
      h.ptrIn(k),
      targets.ptrIn(k),
      w.ptrIn(k),
      saved.lse.ptrIn(k),
      ptrOf(k, saved.entropy),
      t,
      v,
      c,
      temperature,
    ),
  );
}

/** logits (T, V) = h (T, C) w (V, C)^T; w fp32 or bf16. */
export function lmHead(k: Kernels, logits: Tensor, h: Tensor, w: Tensor): void {
  expectTensor(h, "h", "f32", [-1, -1]);
  const [t, c] = [dim(h, 0), dim(h, 1)];
  const bf16 = expectWeight(w, "w", [-1, c]);
  const v = dim(w, 0);
  expectTensor(logits, "logits", "f32", [t, v]);
  expectDisjoint([["logits", logits]], [["h", h], ["w", w]]);
  const fn = bf16 ? k.sym.arl_lm_head_bf16 : k.sym.arl_lm_head;
  k.check(
    bf16 ? "arl_lm_head_bf16" : "arl_lm_head",
    fn(k.ctx, logits.ptrIn(k), h.ptrIn(k), w.ptrIn(k), t, v, c),
  );
}
