/**
 * Token alignment and gradient accumulation, shared by the actor and the
 * critic: per-token arrays between token and position alignment, per-sequence
 * outputs of a micro-batched forward pass, and how each micro-batch's loss
 * enters its mini-batch's.
 *
 * {@linkcode runUpdates} is the mini-batch update loop both trainers run.
 *
 * The kernels aggregate a loss within one call (`loss_agg_mode` over the
 * call's sequences; sequences without a masked token do not count). Scaling
 * each micro-batch's loss and gradient by its weight below and summing makes
 * the result the mini-batch's own aggregate, whatever the split:
 * - token-mean: the micro-batch's share of the mini-batch's masked tokens;
 * - seq-mean-token-sum / seq-mean-token-mean: its share of the mini-batch's
 *   sequences that have a masked token;
 * - seq-mean-token-sum-norm: 1, with the mini-batch's longest sequence as
 *   `normLen` in every call.
 *
 * @module
 */
import type { LossAggMode } from "../../ffi/mod.ts";
import type { Qwen2Model } from "../model/qwen2.ts";
import {
  type MicroBatch,
  type MicroBatchPlan,
  type MiniBatch,
  type PerTokenFields,
  splitMiniBatches,
  type TrainSample,
} from "./micro_batches.ts";
import type { AdamW } from "./optimizer.ts";

/**
 * Token-aligned entries (entry t belongs to token t) to position-aligned ones
 * (position t predicts token t + 1): `out[t] = a[t + 1]`, the last position 0.
 */
export function shiftToPositions(a: ArrayLike<number>, out: Float32Array | Int32Array): void {
  for (let t = 0; t + 1 < a.length; t++) out[t] = a[t + 1]!;
  out[a.length - 1] = 0;
}

/**
 * Runs `forward` over `samples` micro-batched by `plan` and returns, per
 * sample, its position-aligned output (T) back in token alignment: entry
 * t + 1 is position t's output, entry 0 is 0.
 */
export function tokenAlignedOutputs<F extends PerTokenFields>(
  samples: readonly TrainSample<F>[],
  plan: MicroBatchPlan,
  forward: (mb: MicroBatch<F>) => Float32Array,
): Float32Array[] {
  const out = samples.map((s) => new Float32Array(s.tokens.length));
  if (samples.length === 0) return out;
  const [mini] = splitMiniBatches(samples, samples.length, plan);
  for (const mb of mini?.microBatches ?? []) {
    const y = forward(mb);
    mb.indices.forEach((i, j) => {
      const start = mb.cuSeqlens[j]!;
      const dst = out[i]!;
      for (let t = 0; t + 1 < dst.length; t++) dst[t + 1] = y[start + t]!;
    });
  }
  return out;
}

/** Masked tokens and sequences with a masked token, in one micro-batch. */
function counts(mb: MicroBatch<{ mask: Float32Array }>): { tokens: number; seqs: number } {
  const mask = mb.fields.mask;
  let tokens = 0, seqs = 0;
  for (let j = 0; j + 1 < mb.cuSeqlens.length; j++) {
    let any = false;
    for (let i = mb.cuSeqlens[j]!; i < mb.cuSeqlens[j + 1]!; i++) {
      tokens += mask[i]!;
      if (mask[i]! > 0) any = true;
    }
    if (any) seqs++;
  }
  return { tokens, seqs };
}

/**
 * Each micro-batch's weight in its mini-batch, and the `normLen` for every call:
 * `sumNormLength` where given (ROLL's padded width, `sequence_length - 1`: a constant, as
 * Dr. GRPO means it), else the mini-batch's longest row.
 */
export function microBatchWeights(
  microBatches: readonly MicroBatch<{ mask: Float32Array }>[],
  aggMode: LossAggMode,
  sumNormLength?: number,
): { weights: number[]; normLen: number } {
  const per = microBatches.map(counts);
  const tokens = per.reduce((a, c) => a + c.tokens, 0);
  const seqs = per.reduce((a, c) => a + c.seqs, 0);
  const normLen = sumNormLength ?? Math.max(1, ...microBatches.map((mb) => mb.maxLen));
  const weights = per.map((c) => {
    if (aggMode === "token-mean") return tokens > 0 ? c.tokens / tokens : 0;
    if (aggMode === "seq-mean-token-sum-norm") return 1;
    return seqs > 0 ? c.seqs / seqs : 0;
  });
  return { weights, normLen };
}

/** What {@linkcode runUpdates} needs of a trainer's settings. */
export interface UpdateSettings {
  /** Passes over a step's samples (ppo_epochs for the actor; ROLL's critic makes one). */
  ppoEpochs: number;
  /** per_device_train_batch_size x gradient_accumulation_steps samples per update. */
  miniBatchSize: number;
  plan: MicroBatchPlan;
  /** loss_agg_mode. */
  aggMode: LossAggMode;
  /** max_grad_norm. */
  maxGradNorm: number;
  /**
   * seq-mean-token-sum-norm's divisor: ROLL pads every sample to `sequence_length` and divides
   * by the width of its shifted mask, `sequence_length - 1`. Absent: the longest row.
   */
  sumNormLength?: number;
}

/** One mini-batch's update, as a trainer does it. */
export interface MiniBatchUpdate<F extends PerTokenFields> {
  /** Forward and backward of a micro-batch, its loss and gradient scaled by `weight`. */
  micro(mb: MicroBatch<F>, weight: number, normLen: number): void;
  /** After the optimizer step: the mini-batch's gradient norm (before clipping). */
  done(norm: number): void;
}

/**
 * The update loop of the actor and the critic: `ppoEpochs` passes over
 * `data`, each in mini-batches of a seeded random order (`shuffle(n)` returns
 * a permutation). Per mini-batch: zero the grads, run every micro-batch
 * through `start(mini).micro` with its {@linkcode microBatchWeights}, clip the
 * global gradient norm, take an AdamW step at `lr` when the norm is finite,
 * then `done(norm)`. Returns the summed padding fractions, the number of
 * micro-batches and the number of steps skipped for a non-finite norm (a NaN or
 * Inf loss or gradient: the weights and optimizer state are left as they were).
 */
export function runUpdates<F extends PerTokenFields & { mask: Float32Array }>(
  model: Qwen2Model,
  optimizer: AdamW,
  data: TrainSample<F>[],
  settings: UpdateSettings,
  lr: number,
  shuffle: (n: number) => number[],
  start: (mini: MiniBatch<F>) => MiniBatchUpdate<F>,
): { padding: number; microBatches: number; skipped: number } {
  let padding = 0, microBatches = 0, skipped = 0;
  for (let epoch = 0; epoch < settings.ppoEpochs; epoch++) {
    const minis = splitMiniBatches(
      data,
      settings.miniBatchSize,
      settings.plan,
      shuffle(data.length),
    );
    for (const mini of minis) {
      model.zeroGrad();
      padding += mini.stats.paddingFraction;
      microBatches += mini.stats.numMicroBatches;
      const update = start(mini);
      // the kernel aggregates within a micro-batch; each enters by its share of the mini-batch
      const { weights, normLen } = microBatchWeights(
        mini.microBatches,
        settings.aggMode,
        settings.sumNormLength,
      );
      mini.microBatches.forEach((mb, j) => update.micro(mb, weights[j]!, normLen));
      const norm = optimizer.clipGradNorm(settings.maxGradNorm);
      if (Number.isFinite(norm)) optimizer.step(lr);
      else skipped++;
      update.done(norm);
    }
  }
  return { padding, microBatches, skipped };
}
