/**
 * The actor_train role: per-token log-probs of trajectory samples (old and
 * reference log-probs), and PPO updates from the loss kernel — clip low/high,
 * dual clip, KL loss, entropy bonus, `loss_agg_mode` — over mini-batches
 * (one optimizer step each) cut into packed micro-batches (gradient
 * accumulation), `ppo_epochs` times.
 *
 * Per-token arrays here are token-aligned: entry t belongs to token t (the
 * log-prob of token t given tokens < t), as in a `TrajectorySample`. The
 * model predicts token t+1 at position t, so they are shifted by one on the
 * way in.
 *
 * @module
 */
import {
  type Kernels,
  ppoLoss,
  type PpoLossMetrics,
  type RatioType,
  scale,
  Tensor,
} from "../../ffi/mod.ts";
import type { Qwen2Model } from "../model/qwen2.ts";
import {
  runUpdates,
  shiftToPositions,
  tokenAlignedOutputs,
  type UpdateSettings,
} from "./accumulation.ts";
import { mergesExactly } from "./dedup.ts";
import {
  type MicroBatch,
  type MicroBatchPlan,
  sumField,
  type TrainSample,
} from "./micro_batches.ts";
import type { AdamW } from "./optimizer.ts";

/** A sample to train on. */
export interface ActorSample {
  tokens: Int32Array;
  /** 1 on generated tokens. */
  responseMask: Uint8Array;
  /** Token-aligned advantages (0 off the response). */
  advantages: Float32Array;
  /** Token-aligned log-probs of the policy that generated the data (recomputed). */
  oldLogprobs: Float32Array;
  /** Token-aligned reference log-probs (KL loss only). */
  refLogprobs?: Float32Array;
  /**
   * How many identical samples this one stands for (default 1; see `dedup.ts`). Other
   * than 1 only with `token-mean` or `seq-mean-token-sum-norm`, where merging is exact.
   */
  weight?: number;
}

/** PPO settings (ROLL's names in the comments), with the update loop's. */
export interface PpoSettings extends UpdateSettings {
  /** pg_clip_low / pg_clip_high (pg_clip when use_pg_clip_range is off). */
  clipLow: number;
  clipHigh: number;
  /** The dual clip's bound c when dual_clip_loss (clipSettingsFromConfig), else 0. */
  dualClip: number;
  /** kl_loss_coef when use_kl_loss, else 0. */
  klLossCoef: number;
  entropyCoef: number;
  /** ratio_type: "segment" gives each turn one ratio (default "token"). */
  ratioType?: RatioType;
}

type Fields = {
  targets: Int32Array;
  mask: Float32Array;
  adv: Float32Array;
  old: Float32Array;
  ref: Float32Array;
};

/** The model's packed input for `samples`, with shifted targets and fields. */
export function toTrainSamples(samples: readonly ActorSample[]): TrainSample<Fields>[] {
  return samples.map((s) => {
    const n = s.tokens.length;
    const f: Fields = {
      targets: new Int32Array(n),
      mask: new Float32Array(n),
      adv: new Float32Array(n),
      old: new Float32Array(n),
      ref: new Float32Array(n),
    };
    shiftToPositions(s.tokens, f.targets);
    shiftToPositions(s.responseMask, f.mask);
    const w = s.weight ?? 1;
    if (w !== 1) { for (let i = 0; i < n; i++) f.mask[i] = f.mask[i]! * w; }
    shiftToPositions(s.advantages, f.adv);
    shiftToPositions(s.oldLogprobs, f.old);
    if (s.refLogprobs) shiftToPositions(s.refLogprobs, f.ref);
    return { tokens: s.tokens, fields: f, ...(s.weight !== undefined && { weight: s.weight }) };
  });
}

/**
 * Token-aligned log-probs of every token of each sequence under `model`
 * (entry 0 is 0: the first token has no prefix), micro-batched by `plan`.
 */
export function sequenceLogprobs(
  model: Qwen2Model,
  sequences: readonly Int32Array[],
  plan: MicroBatchPlan,
): Float32Array[] {
  const samples = sequences.map((tokens) => {
    const targets = new Int32Array(tokens.length);
    shiftToPositions(tokens, targets);
    return { tokens, fields: { targets } };
  });
  return tokenAlignedOutputs(
    samples,
    plan,
    (mb) => model.forward({ ...mb, targets: mb.fields.targets }).logp.read() as Float32Array,
  );
}

/**
 * Metric sums over a mini-batch's micro-batches. The losses enter by each micro-batch's
 * loss weight (its share under `loss_agg_mode`); the token ratios (clipfrac, approxkl,
 * ratio_mean) by its share of the mini-batch's masked tokens, so that they are the
 * mini-batch's token means whatever the split.
 */
class MetricSums {
  readonly #sums = new Map<string, number>();
  #updates = 0;
  add(m: PpoLossMetrics, lossWeight: number, tokenShare: number): void {
    const add = (k: string, v: number, w: number) =>
      this.#sums.set(k, (this.#sums.get(k) ?? 0) + v * w);
    add("actor/pg_loss", m.pgLoss, lossWeight);
    add("actor/kl_loss", m.klLoss, lossWeight);
    add("actor/entropy_loss", m.entropyLoss, lossWeight);
    add("actor/total_loss", m.loss, lossWeight);
    add("actor/approxkl", m.approxKl, tokenShare);
    add("actor/clipfrac", m.clipfrac, tokenShare);
    add("actor/dual_clipfrac", m.dualClipfrac, tokenShare);
    add("actor/ratio_mean", m.ratioMean, tokenShare);
  }
  update(gradNorm: number): void {
    this.#updates++;
    this.#sums.set("actor/grad_norm", (this.#sums.get("actor/grad_norm") ?? 0) + gradNorm);
  }
  result(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, v] of this.#sums) out[k] = v / Math.max(1, this.#updates);
    out["actor/num_updates"] = this.#updates;
    return out;
  }
}

/** actor_train: PPO updates of `model` with an AdamW optimizer. */
export class ActorTrainer {
  readonly model: Qwen2Model;
  readonly optimizer: AdamW;
  readonly settings: PpoSettings;
  readonly #k: Kernels;

  constructor(model: Qwen2Model, optimizer: AdamW, settings: PpoSettings) {
    this.model = model;
    this.optimizer = optimizer;
    this.settings = settings;
    this.#k = model.kernels;
  }

  /**
   * PPO on `samples` at learning rate `lr`: `ppoEpochs` passes, each over
   * mini-batches in a seeded random order (`shuffle(n)` returns a
   * permutation); returns ROLL's actor/* metrics (means over updates), and
   * `actor/skipped_updates`: optimizer steps not taken because the gradient norm
   * was not finite (the weights stay as they were).
   */
  train(
    samples: readonly ActorSample[],
    lr: number,
    shuffle: (n: number) => number[],
  ): Record<string, number> {
    const s = this.settings;
    const merged = samples.findIndex((x) => (x.weight ?? 1) !== 1);
    if (merged >= 0 && !mergesExactly(s.aggMode)) {
      // the kernels count a weighted sequence once in a sequence mean: the loss would be wrong
      throw new RangeError(
        `samples[${merged}].weight is ${samples[merged]!.weight}: a sample standing for several ` +
          `is exact only with loss_agg_mode token-mean or seq-mean-token-sum-norm, not ` +
          `${s.aggMode} (pass each copy with weight 1)`,
      );
    }
    const data = toTrainSamples(samples);
    const sums = new MetricSums();
    const { padding, microBatches, skipped } = runUpdates(
      this.model,
      this.optimizer,
      data,
      s,
      lr,
      shuffle,
      (mini) => {
        const maskedTokens = sumField(mini.microBatches, "mask");
        return {
          micro: (mb, weight, normLen) => {
            const m = this.#microStep(mb, weight, normLen);
            sums.add(m, weight, maskedTokens > 0 ? m.numTokens / maskedTokens : 0);
          },
          done: (norm) => sums.update(norm),
        };
      },
    );
    const out = sums.result();
    out["actor/lr"] = lr;
    out["actor/padding_fraction"] = padding / Math.max(1, out["actor/num_updates"]!);
    out["actor/micro_batches"] = microBatches;
    out["actor/skipped_updates"] = skipped;
    return out;
  }

  #microStep(mb: MicroBatch<Fields>, weight: number, normLen: number): PpoLossMetrics {
    const s = this.settings;
    const k = this.#k;
    const entropy = s.entropyCoef !== 0;
    const { logp, entropy: ent } = this.model.forward(
      { ...mb, targets: mb.fields.targets },
      { entropy },
    );
    const t = mb.numTokens;
    const owned: Tensor[] = [];
    const tensor = (a: Float32Array | Int32Array) => {
      const x = a instanceof Float32Array ? Tensor.from(k, a) : Tensor.from(k, a);
      owned.push(x);
      return x;
    };
    try {
      const dlogp = tensor(new Float32Array(t)) as Tensor<"f32">;
      const dentropy = entropy ? tensor(new Float32Array(t)) as Tensor<"f32"> : null;
      const m = ppoLoss(k, { dlogp, dentropy }, {
        logp,
        oldLogp: tensor(mb.fields.old),
        advantages: tensor(mb.fields.adv),
        mask: tensor(mb.fields.mask),
        cuSeqlens: tensor(mb.cuSeqlens),
        refLogp: s.klLossCoef !== 0 ? tensor(mb.fields.ref) : null,
        entropy: entropy ? ent : null,
      }, {
        clipLow: s.clipLow,
        clipHigh: s.clipHigh,
        dualClip: s.dualClip,
        klCoef: s.klLossCoef,
        klKind: "k3",
        klClamp: 10,
        entropyCoef: s.entropyCoef,
        aggMode: s.aggMode,
        normLen,
        ratioType: s.ratioType ?? "token",
      });
      scale(this.model.kernels, dlogp, weight);
      if (dentropy) scale(this.model.kernels, dentropy, weight);
      this.model.backward(dentropy ? { dlogp, dentropy } : { dlogp });
      return m;
    } finally {
      for (const x of owned) x.free();
    }
  }
}
