/**
 * The critic role: token-aligned values of trajectory samples (ROLL's
 * `compute_values`, feeding GAE) and value-function updates from the clipped
 * value-loss kernel over mini-batches (one optimizer step each) cut into
 * packed micro-batches (gradient accumulation), `ppoEpochs` times (the pipeline passes 1, as
 * ROLL's `CriticWorker.train_step` makes one pass; `loss_func`).
 *
 * **Alignment.** Per-token arrays here are token-aligned, as in a
 * `TrajectorySample` and in `lib/algo`: entry t belongs to token t. The value
 * of token t is V(s_t), the value of the state *before* token t is generated
 * (the prefix tokens < t), which the value head outputs at position t - 1
 * (the last position that has read the whole prefix). Entry 0 has no prefix
 * and is 0. This is ROLL's `values = output[:, :-1]` read against
 * `response_mask[:, 1:]`, and what `gae` in `lib/algo/returns.ts`
 * expects: at a generated token t it takes `values[t]` as V_t and the next
 * generated token's entry as V_{t+1}, so `returns[t]` is the target of the
 * head output at position t - 1. The model sees everything shifted by one on
 * the way in (position t holds entry t + 1; the last position carries no
 * loss), as in `actor.ts`.
 *
 * **Loss.** Per token 0.5 (V - R)^2, or with `valueClip` (ROLL's
 * `value_clip`) 0.5 max((V - R)^2, (clip(V, V_old - c, V_old + c) - R)^2),
 * aggregated over the response tokens by `aggMode` (ROLL's critic always
 * takes seq-mean-token-mean, `masked_mean(loss, mask, dim=-1).mean()`). The
 * mini-batch loss is the loss of the mini-batch as one batch, whatever the
 * micro-batch split: each micro-batch's kernel loss and gradient are scaled
 * by its share of the mini-batch's denominator (tokens for token-mean,
 * sequences with a response token for the seq-mean modes), and
 * seq-mean-token-sum-norm divides by the mini-batch's longest sequence.
 *
 * @module
 */
import { type Kernels, type LossAggMode, scale, Tensor, valueLoss } from "../../ffi/mod.ts";
import type { Qwen2Model } from "../model/qwen2.ts";
import { type MicroBatch, type MicroBatchPlan, type TrainSample } from "./micro_batches.ts";
import type { AdamW } from "./optimizer.ts";
import {
  runUpdates,
  shiftToPositions,
  tokenAlignedOutputs,
  type UpdateSettings,
} from "./accumulation.ts";

/** A sample to train the critic on (every array token-aligned, the tokens' length). */
export interface CriticSample {
  tokens: Int32Array;
  /** 1 on generated tokens (the loss lives there), 0 elsewhere. */
  responseMask: ArrayLike<number>;
  /** Value targets (GAE's returns = advantages + values); read on the response only. */
  returns: Float32Array;
  /** The values the returns were computed with ({@linkcode sequenceValues} before the update). */
  oldValues: Float32Array;
}

/** Critic settings (ROLL's names in the comments), with the update loop's. */
export interface CriticSettings extends UpdateSettings {
  /** value_clip: clip the new values to old ± valueClip in the loss (> 0), or null for none. */
  valueClip: number | null;
  /** loss_agg_mode of the value loss (ROLL's critic uses seq-mean-token-mean). */
  aggMode: LossAggMode;
}

type Fields = { mask: Float32Array; ret: Float32Array; old: Float32Array };

function checkSample(s: CriticSample, i: number): void {
  const n = s.tokens.length;
  for (
    const [name, a] of [["responseMask", s.responseMask], ["returns", s.returns], [
      "oldValues",
      s.oldValues,
    ]] as const
  ) {
    if (a.length !== n) {
      throw new RangeError(`Sample ${i}'s ${name} has ${a.length} entries for ${n} tokens`);
    }
  }
  for (let t = 1; t < n; t++) {
    if (s.responseMask[t] && !(Number.isFinite(s.returns[t]) && Number.isFinite(s.oldValues[t]))) {
      throw new RangeError(`Sample ${i} has a non-finite return or old value at token ${t}`);
    }
  }
}

/**
 * Token-aligned values of every token of each sequence under `model` (a
 * model with a value head): entry t is the value head's output at position
 * t - 1, V(state before token t); entry 0 is 0. Micro-batched by `plan`.
 */
export function sequenceValues(
  model: Qwen2Model,
  sequences: readonly Int32Array[],
  plan: MicroBatchPlan,
): Float32Array[] {
  return tokenAlignedOutputs(
    sequences.map((tokens) => ({ tokens })),
    plan,
    (mb) => model.forwardValues(mb).read() as Float32Array,
  );
}

/**
 * ROLL's `critic/values/*` metrics of a batch (the pipeline's, over the
 * values {@linkcode sequenceValues} gave): mean, max and min over the
 * response tokens of all samples (0 when there are none).
 */
export function valueMetrics(
  values: readonly ArrayLike<number>[],
  responseMasks: readonly ArrayLike<number>[],
): Record<string, number> {
  let sum = 0, n = 0, max = -Infinity, min = Infinity;
  values.forEach((v, i) => {
    const m = responseMasks[i]!;
    for (let t = 0; t < v.length; t++) {
      if (!m[t]) continue;
      sum += v[t]!;
      n++;
      max = Math.max(max, v[t]!);
      min = Math.min(min, v[t]!);
    }
  });
  return {
    "critic/values/mean": n > 0 ? sum / n : 0,
    "critic/values/max": n > 0 ? max : 0,
    "critic/values/min": n > 0 ? min : 0,
  };
}

/** Per-sequence masked means, summed over the sequences with a response token. */
interface SeqSums {
  value: number;
  vpred: number;
  error: number;
  clipfrac: number;
}

/** critic/* metric sums over updates. */
class MetricSums {
  readonly #sums = new Map<string, number>();
  #updates = 0;
  add(name: string, v: number): void {
    this.#sums.set(name, (this.#sums.get(name) ?? 0) + v);
  }
  update(): void {
    this.#updates++;
  }
  get updates(): number {
    return this.#updates;
  }
  result(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, v] of this.#sums) out[k] = v / Math.max(1, this.#updates);
    return out;
  }
}

/** The critic role: value-loss updates of `model` (with a value head) with AdamW. */
export class CriticTrainer {
  readonly model: Qwen2Model;
  readonly optimizer: AdamW;
  readonly settings: CriticSettings;
  readonly #k: Kernels;

  constructor(model: Qwen2Model, optimizer: AdamW, settings: CriticSettings) {
    if (!model.hasValueHead) {
      throw new TypeError("CriticTrainer needs a model created with { valueHead: true }");
    }
    const c = settings.valueClip;
    if (c !== null && !(c > 0 && Number.isFinite(c))) {
      throw new RangeError(`valueClip must be a finite number > 0 or null, got ${c}`);
    }
    if (!Number.isInteger(settings.ppoEpochs) || settings.ppoEpochs < 1) {
      throw new RangeError(`ppoEpochs must be a positive integer, got ${settings.ppoEpochs}`);
    }
    this.model = model;
    this.optimizer = optimizer;
    this.settings = settings;
    this.#k = model.kernels;
  }

  /**
   * Value-function updates on `samples` at learning rate `lr`: `ppoEpochs`
   * passes, each over mini-batches in a seeded random order (`shuffle(n)`
   * returns a permutation), one AdamW step per mini-batch after global-norm
   * clipping (skipped when the norm is not finite).
   *
   * Returns means over updates of ROLL's critic metrics: `critic/loss` (the
   * aggregated value loss), `critic/clipfrac` (share of response tokens whose
   * clipped loss is the larger, seq-mean-token-mean; 0 without `valueClip`),
   * `critic/value` and `critic/vpred` (old and new values, seq-mean-token-mean),
   * `critic/error` ((V - R)^2, seq-mean-token-mean), `critic/grad_norm` (before
   * clipping); the same loss and clip fraction as `critic/vf_loss` and
   * `critic/vf_clipfrac`; and `critic/lr`, `critic/num_updates`,
   * `critic/padding_fraction`, `critic/micro_batches`, `critic/skipped_updates`
   * (steps not taken for a non-finite gradient norm).
   */
  train(
    samples: readonly CriticSample[],
    lr: number,
    shuffle: (n: number) => number[],
  ): Record<string, number> {
    const s = this.settings;
    samples.forEach(checkSample);
    const data: TrainSample<Fields>[] = samples.map((x) => {
      const n = x.tokens.length;
      const f: Fields = {
        mask: new Float32Array(n),
        ret: new Float32Array(n),
        old: new Float32Array(n),
      };
      shiftToPositions(x.responseMask, f.mask);
      shiftToPositions(x.returns, f.ret);
      shiftToPositions(x.oldValues, f.old);
      for (let t = 0; t < n; t++) f.mask[t] = f.mask[t] ? 1 : 0;
      return { tokens: x.tokens, fields: f };
    });
    const valid = data.map((d) => d.fields!.mask.some((m) => m > 0));
    const sums = new MetricSums();
    const { padding, microBatches, skipped } = runUpdates(
      this.model,
      this.optimizer,
      data,
      s,
      lr,
      shuffle,
      (mini) => {
        const seqs = mini.indices.filter((i) => valid[i]).length;
        let loss = 0;
        const seq: SeqSums = { value: 0, vpred: 0, error: 0, clipfrac: 0 };
        return {
          micro: (mb, weight, normLen) => {
            loss += weight * this.#microStep(mb, weight, normLen, seq);
          },
          done: (norm) => {
            sums.update();
            sums.add("critic/loss", loss);
            sums.add("critic/grad_norm", norm);
            const per = Math.max(1, seqs);
            sums.add("critic/value", seq.value / per);
            sums.add("critic/vpred", seq.vpred / per);
            sums.add("critic/error", seq.error / per);
            sums.add("critic/clipfrac", seq.clipfrac / per);
          },
        };
      },
    );
    const out = sums.result();
    out["critic/vf_loss"] = out["critic/loss"] ?? 0;
    out["critic/vf_clipfrac"] = out["critic/clipfrac"] ?? 0;
    out["critic/lr"] = lr;
    out["critic/num_updates"] = sums.updates;
    out["critic/padding_fraction"] = padding / Math.max(1, sums.updates);
    out["critic/micro_batches"] = microBatches;
    out["critic/skipped_updates"] = skipped;
    return out;
  }

  /**
   * One micro-batch: values forward, the kernel's loss and dvalues (scaled by
   * `weight`), backward; adds ROLL's per-sequence metric means into `seq`.
   * Returns the kernel's (unscaled) loss of the micro-batch.
   */
  #microStep(mb: MicroBatch<Fields>, weight: number, normLen: number, seq: SeqSums): number {
    const s = this.settings;
    const k = this.#k;
    const values = this.model.forwardValues(mb);
    const v = values.read() as Float32Array;
    const { mask, ret, old } = mb.fields;
    const clip = s.valueClip === null ? 0 : Math.fround(s.valueClip);
    // ROLL's metrics, per sequence, with the kernel's clip test (in double, as it does)
    for (let j = 0; j + 1 < mb.cuSeqlens.length; j++) {
      let n = 0, sv = 0, so = 0, se = 0, sc = 0;
      for (let i = mb.cuSeqlens[j]!; i < mb.cuSeqlens[j + 1]!; i++) {
        if (!(mask[i]! > 0)) continue;
        const e = v[i]! - ret[i]!;
        n++;
        sv += v[i]!;
        so += old[i]!;
        se += e * e;
        if (clip > 0) {
          const vc = old[i]! + Math.min(Math.max(v[i]! - old[i]!, -clip), clip);
          if ((vc - ret[i]!) ** 2 > e * e) sc++;
        }
      }
      if (n === 0) continue;
      seq.vpred += sv / n;
      seq.value += so / n;
      seq.error += se / n;
      seq.clipfrac += sc / n;
    }
    const owned: Tensor[] = [];
    const f32 = (a: Float32Array) => {
      const x = Tensor.from(k, a);
      owned.push(x);
      return x;
    };
    try {
      const dvalues = f32(new Float32Array(mb.numTokens));
      const cuSeqlens = Tensor.from(k, mb.cuSeqlens);
      owned.push(cuSeqlens);
      const { loss } = valueLoss(k, dvalues, {
        values,
        oldValues: f32(old),
        returns: f32(ret),
        mask: f32(mask),
        cuSeqlens,
      }, { valueClip: clip, aggMode: s.aggMode, normLen });
      scale(k, dvalues, weight);
      this.model.backward({ dvalues });
      return loss;
    } finally {
      for (const x of owned) x.free();
    }
  }
}
