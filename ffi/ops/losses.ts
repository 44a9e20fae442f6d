/** PPO-family token loss, clipped value loss, full KL. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";
import { dim, expectNumber, expectTensor, ptrOf } from "./_args.ts";

/** The four loss aggregation modes (ROLL/verl's `loss_agg_mode`). */
export const LOSS_AGG_MODES = [
  "token-mean",
  "seq-mean-token-sum",
  "seq-mean-token-mean",
  "seq-mean-token-sum-norm",
] as const;
/** One of {@linkcode LOSS_AGG_MODES}. */
export type LossAggMode = typeof LOSS_AGG_MODES[number];

/** The per-token KL estimators the loss kernel computes. */
export const KL_KINDS = ["kl", "abs", "mse", "k3"] as const;
/** One of {@linkcode KL_KINDS}. */
export type KlKind = typeof KL_KINDS[number];

/** Per-token ratios, or one per segment (ROLL's `ratio_type`). */
export const RATIO_TYPES = ["token", "segment"] as const;
/** One of {@linkcode RATIO_TYPES}. */
export type RatioType = typeof RATIO_TYPES[number];

/** Settings of {@linkcode ppoLoss}. */
export interface PpoLossParams {
  clipLow: number;
  clipHigh: number;
  /** Dual-clip constant c > 1 (0 disables). */
  dualClip?: number;
  klCoef?: number;
  klKind?: KlKind;
  /** Clamp |per-token KL| (0 disables). */
  klClamp?: number;
  entropyCoef?: number;
  sftCoef?: number;
  aggMode?: LossAggMode;
  /** Divisor of seq-mean-token-sum-norm. */
  normLen?: number;
  /**
   * "segment": every token of a run of masked tokens (a turn) takes the run's ratio,
   * exp(mean log-ratio), and its policy-loss gradient is shared over the run (default "token").
   */
  ratioType?: RatioType;
}

/** What {@linkcode ppoLoss} reports. */
export interface PpoLossMetrics {
  loss: number;
  pgLoss: number;
  klLoss: number;
  entropyLoss: number;
  sftLoss: number;
  clipfrac: number;
  approxKl: number;
  ratioMean: number;
  ratioMin: number;
  ratioMax: number;
  dualClipfrac: number;
  numTokens: number;
}

/** The token inputs of {@linkcode ppoLoss}: all (T), cuSeqlens (B + 1). */
export interface PpoLossInputs {
  logp: Tensor;
  oldLogp: Tensor;
  advantages: Tensor;
  mask: Tensor;
  cuSeqlens: Tensor;
  refLogp?: Tensor | null;
  entropy?: Tensor | null;
  sftMask?: Tensor | null;
}

/** B, the number of sequences whose offsets cuSeqlens (B + 1, starting at 0) holds. */
function sequenceCount(cuSeqlens: Tensor): number {
  expectTensor(cuSeqlens, "cuSeqlens", "i32", [-1]);
  const b = dim(cuSeqlens, 0) - 1;
  if (b < 1) {
    throw new RangeError(
      `cuSeqlens must hold B + 1 offsets for B >= 1 sequences (0 first), got ${b + 1} offset`,
    );
  }
  return b;
}

/** Computes the PPO loss and writes dlogp (T) and dentropy (T, when entropyCoef != 0). */
export function ppoLoss(
  k: Kernels,
  grads: { dlogp: Tensor; dentropy?: Tensor | null },
  x: PpoLossInputs,
  p: PpoLossParams,
): PpoLossMetrics {
  expectTensor(x.logp, "logp", "f32", [-1]);
  const t = dim(x.logp, 0);
  for (
    const [v, n] of [[x.oldLogp, "oldLogp"], [x.advantages, "advantages"], [x.mask, "mask"], [
      grads.dlogp,
      "dlogp",
    ]] as const
  ) {
    expectTensor(v, n, "f32", [t]);
  }
  for (
    const [v, n] of [[x.refLogp, "refLogp"], [x.entropy, "entropy"], [x.sftMask, "sftMask"], [
      grads.dentropy,
      "dentropy",
    ]] as const
  ) {
    if (v) expectTensor(v, n, "f32", [t]);
  }
  const b = sequenceCount(x.cuSeqlens);
  const klCoef = p.klCoef ?? 0;
  const entropyCoef = p.entropyCoef ?? 0;
  const sftCoef = p.sftCoef ?? 0;
  if (klCoef !== 0 && !x.refLogp) throw new TypeError("klCoef != 0 needs refLogp");
  if (entropyCoef !== 0 && (!x.entropy || !grads.dentropy)) {
    throw new TypeError("entropyCoef != 0 needs entropy and dentropy");
  }
  if (sftCoef !== 0 && !x.sftMask) throw new TypeError("sftCoef != 0 needs sftMask");
  const aggMode = LOSS_AGG_MODES.indexOf(p.aggMode ?? "seq-mean-token-mean");
  if (aggMode < 0) throw new RangeError(`aggMode must be one of ${LOSS_AGG_MODES.join(", ")}`);
  const klKind = KL_KINDS.indexOf(p.klKind ?? "kl");
  if (klKind < 0) throw new RangeError(`klKind must be one of ${KL_KINDS.join(", ")}`);
  const ratioType = RATIO_TYPES.indexOf(p.ratioType ?? "token");
  if (ratioType < 0) throw new RangeError(`ratioType must be one of ${RATIO_TYPES.join(", ")}`);
  for (const [v, n] of [[p.clipLow, "clipLow"], [p.clipHigh, "clipHigh"]] as const) {
    expectNumber(v, n);
  }
  for (
    const [v, n] of [
      [p.dualClip, "dualClip"],
      [klCoef, "klCoef"],
      [p.klClamp, "klClamp"],
      [entropyCoef, "entropyCoef"],
      [sftCoef, "sftCoef"],
      [p.normLen, "normLen"],
    ] as const
  ) {
    if (v !== undefined) expectNumber(v, n);
  }
  const params = new ArrayBuffer(44);
  const f = new Float32Array(params);
  const i = new Int32Array(params);
  f[0] = p.clipLow;
  f[1] = p.clipHigh;
  f[2] = p.dualClip ?? 0;
  f[3] = klCoef;
  i[4] = klKind;
  f[5] = p.klClamp ?? 0;
  f[6] = entropyCoef;
  f[7] = sftCoef;
  i[8] = aggMode;
  f[9] = p.normLen ?? 0;
  i[10] = ratioType;
  const metrics = new Float32Array(12);
  k.check(
    "arl_ppo_loss",
    k.sym.arl_ppo_loss(
      k.ctx,
      Deno.UnsafePointer.of(metrics),
      grads.dlogp.ptrIn(k),
      ptrOf(k, grads.dentropy),
      x.logp.ptrIn(k),
      x.oldLogp.ptrIn(k),
      ptrOf(k, x.refLogp),
      x.advantages.ptrIn(k),
      ptrOf(k, x.entropy),
      x.mask.ptrIn(k),
      ptrOf(k, x.sftMask),
      x.cuSeqlens.ptrIn(k),
      b,
      t,
      Deno.UnsafePointer.of(params),
    ),
  );
  const [
    loss,
    pgLoss,
    klLoss,
    entropyLoss,
    sftLoss,
    clipfrac,
    approxKl,
    ratioMean,
    ratioMin,
    ratioMax,
    dualClipfrac,
    numTokens,
  ] = metrics as unknown as number[];
  return {
    loss,
    pgLoss,
    klLoss,
    entropyLoss,
    sftLoss,
    clipfrac,
    approxKl,
    ratioMean,
    ratioMin,
    ratioMax,
    dualClipfrac,
    numTokens,
  } as PpoLossMetrics;
}

/** Clipped value loss; writes dvalues (T) and returns the loss and clip fraction. */
export function valueLoss(
  k: Kernels,
  dvalues: Tensor,
  x: {
    values: Tensor;
    oldValues?: Tensor | null;
    returns: Tensor;
    mask: Tensor;
    cuSeqlens: Tensor;
  },
  o: { valueClip?: number; aggMode?: LossAggMode; normLen?: number } = {},
): { loss: number; clipfrac: number } {
  expectTensor(x.values, "values", "f32", [-1]);
  const t = dim(x.values, 0);
  for (const [v, n] of [[x.returns, "returns"], [x.mask, "mask"], [dvalues, "dvalues"]] as const) {
    expectTensor(v, n, "f32", [t]);
  }
  const clip = o.valueClip ?? 0;
  expectNumber(clip, "valueClip");
  if (o.normLen !== undefined) expectNumber(o.normLen, "normLen");
  if (clip > 0) {
    if (!x.oldValues) throw new TypeError("valueClip > 0 needs oldValues");
    expectTensor(x.oldValues, "oldValues", "f32", [t]);
  }
  sequenceCount(x.cuSeqlens);
  const aggMode = LOSS_AGG_MODES.indexOf(o.aggMode ?? "seq-mean-token-mean");
  if (aggMode < 0) throw new RangeError(`aggMode must be one of ${LOSS_AGG_MODES.join(", ")}`);
  const out = new Float32Array(2);
  k.check(
    "arl_value_loss",
    k.sym.arl_value_loss(
      k.ctx,
      Deno.UnsafePointer.of(out.subarray(0, 1)),
      Deno.UnsafePointer.of(out.subarray(1, 2)),
      dvalues.ptrIn(k),
      x.values.ptrIn(k),
      ptrOf(k, x.oldValues),
      x.returns.ptrIn(k),
      x.mask.ptrIn(k),
      x.cuSeqlens.ptrIn(k),
      dim(x.cuSeqlens, 0) - 1,
      t,
      clip,
      aggMode,
      o.normLen ?? 0,
    ),
  );
  return { loss: out[0]!, clipfrac: out[1]! };
}

/** Full-distribution KL(p || p_ref) per row of logits (T, V); dlogits from dkl when given. */
export function klFull(
  k: Kernels,
  kl: Tensor,
  logits: Tensor,
  refLogits: Tensor,
  backward: { dlogits: Tensor; dkl: Tensor } | null = null,
): void {
  expectTensor(logits, "logits", "f32", [-1, -1]);
  const [t, v] = [dim(logits, 0), dim(logits, 1)];
  expectTensor(refLogits, "refLogits", "f32", [t, v]);
  expectTensor(kl, "kl", "f32", [t]);
  if (backward) {
    expectTensor(backward.dlogits, "dlogits", "f32", [t, v]);
    expectTensor(backward.dkl, "dkl", "f32", [t]);
  }
  k.check(
    "arl_kl_full",
    k.sym.arl_kl_full(
      k.ctx,
      kl.ptrIn(k),
      ptrOf(k, backward?.dlogits),
      logits.ptrIn(k),
      refLogits.ptrIn(k),
      ptrOf(k, backward?.dkl),
      t,
      v,
    ),
  );
}
