/**
 * Supervised fine-tuning on packed sequences with a loss mask: the loss is
 * the mean over masked tokens of -log p(token | the tokens before it), and
 * one step is a forward and backward pass of the whole batch (split into
 * micro-batches when it is large) then one AdamW update over the model's flat
 * parameter buffer (the `adamw` kernel; the moments are this trainer's own).
 *
 * Masks are per token: `lossMask[i]` says whether token i is trained (is
 * predicted from tokens 0..i-1), so the first token of a sequence cannot be.
 * A mask may hold weights instead of 0/1: the loss is then the weighted mean.
 *
 * @example
 * ```ts
 * import { Kernels } from "../../ffi/mod.ts";
 * import { Qwen2Model } from "../model/qwen2.ts";
 * import { SftTrainer } from "./sft.ts";
 * using k = Kernels.open({ threads: 2 });
 * using model = new Qwen2Model(k, {
 *   vocab_size: 32, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 2,
 *   num_attention_heads: 4, num_key_value_heads: 2, head_dim: 4,
 *   max_position_embeddings: 64, rope_theta: 10000, rms_norm_eps: 1e-6,
 *   tie_word_embeddings: true, attention_bias: true, bos_token_id: null, eos_token_id: null,
 * }, { seed: 1 });
 * using sft = new SftTrainer(model, { lr: 1e-2 });
 * const examples = [{ tokens: [1, 2, 3, 4], lossMask: [0, 0, 1, 1] }];
 * const first = sft.step(examples).loss;
 * for (let i = 0; i < 20; i++) sft.step(examples);
 * console.log(sft.step(examples).loss < first); // true
 * ```
 *
 * @module
 */
import { adamw, fill, sumSquares, Tensor } from "../../ffi/mod.ts";
import type { LogprobBatch, Qwen2Model } from "../model/qwen2.ts";

/** One training sequence: its token ids and which of them are trained. */
export interface SftExample {
  /** Token ids (at least one). */
  tokens: ArrayLike<number>;
  /**
   * Per token (same length): 1 or true when the token is predicted and counted
   * in the loss, 0 or false when not; another non-negative number weighs it.
   */
  lossMask: ArrayLike<number | boolean>;
}

/** A packed batch with per-row loss weights (row i predicts `targets[i]` = token i + 1). */
export interface SftBatch extends LogprobBatch {
  /** Weight of row i's target (its token's mask; the last row of every sequence is 0). */
  weights: Float32Array;
  /** The sum of the weights (trained tokens, with a 0/1 mask). */
  count: number;
}

/**
 * Packs examples into one batch without padding: row i of a sequence holds
 * token i, its target is token i + 1 (row weight = that token's mask), and the
 * last row of each sequence has target 0 and weight 0.
 *
 * @example
 * ```ts
 * import { packSftBatch } from "./sft.ts";
 * const b = packSftBatch([{ tokens: [5, 6, 7], lossMask: [0, 1, 1] }, { tokens: [8, 9], lossMask: [0, 1] }]);
 * console.log([...b.targets], [...b.weights], b.count); // [6, 7, 0, 9, 0] [1, 1, 0, 1, 0] 3
 * ```
 */
export function packSftBatch(examples: readonly SftExample[]): SftBatch {
  if (examples.length === 0) throw new RangeError("An SFT batch needs at least one example");
  let total = 0;
  for (const [s, ex] of examples.entries()) {
    if (ex.tokens.length < 1) throw new RangeError(`Example ${s} has no tokens`);
    if (ex.lossMask.length !== ex.tokens.length) {
      throw new RangeError(
        `Example ${s} has ${ex.tokens.length} tokens but a loss mask of ${ex.lossMask.length}`,
      );
    }
    total += ex.tokens.length;
  }
  const tokens = new Int32Array(total);
  const positions = new Int32Array(total);
  const targets = new Int32Array(total);
  const weights = new Float32Array(total);
  const cuSeqlens = new Int32Array(examples.length + 1);
  let row = 0, count = 0;
  for (const [s, ex] of examples.entries()) {
    const n = ex.tokens.length;
    for (let i = 0; i < n; i++) {
      tokens[row + i] = ex.tokens[i]!;
      positions[row + i] = i;
      if (i + 1 < n) {
        targets[row + i] = ex.tokens[i + 1]!;
        const w = Number(ex.lossMask[i + 1]!);
        if (!(w >= 0) || !Number.isFinite(w)) {
          throw new RangeError(`Example ${s} has loss weight ${w} at ${i + 1}: expected >= 0`);
        }
        weights[row + i] = w;
        count += w;
      }
    }
    row += n;
    cuSeqlens[s + 1] = row;
  }
  return { tokens, positions, cuSeqlens, targets, weights, count };
}

/** Settings of {@linkcode SftTrainer} (AdamW, clipping, micro-batching). */
export interface SftOptions {
  /** Learning rate (default 1e-3; a step may override it, e.g. for a schedule). */
  lr?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled weight decay (default 0). */
  weightDecay?: number;
  /** Clip the global gradient norm to this (default 1; 0 or Infinity: no clipping). */
  maxGradNorm?: number;
  /** Tokens per forward/backward pass at most (default 8192); a longer example goes alone. */
  microBatchTokens?: number;
}

/** What {@linkcode SftTrainer.step} did. */
export interface SftStepResult {
  /** Mean -log p over the trained tokens (weighted), before the update. */
  loss: number;
  /** Trained tokens (the sum of their weights). */
  count: number;
  /** Tokens processed (trained or not). */
  tokens: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** The learning rate used. */
  lr: number;
}

/**
 * SFT steps on a {@linkcode Qwen2Model}: it owns the AdamW moments (two f32
 * buffers the size of the parameters); dispose it to free them.
 */
export class SftTrainer implements Disposable {
  readonly model: Qwen2Model;
  readonly #m: Tensor<"f32">;
  readonly #v: Tensor<"f32">;
  readonly #o: Required<SftOptions>;
  #step = 0;

  constructor(model: Qwen2Model, options: SftOptions = {}) {
    this.model = model;
    this.#o = {
      lr: options.lr ?? 1e-3,
      beta1: options.beta1 ?? 0.9,
      beta2: options.beta2 ?? 0.999,
      eps: options.eps ?? 1e-8,
      weightDecay: options.weightDecay ?? 0,
      maxGradNorm: options.maxGradNorm ?? 1,
      microBatchTokens: options.microBatchTokens ?? 8192,
    };
    if (!(this.#o.microBatchTokens >= 1)) {
      throw new RangeError(`microBatchTokens must be >= 1, got ${this.#o.microBatchTokens}`);
    }
    const k = model.kernels;
    this.#m = new Tensor(k, model.params.shape, "f32");
    this.#v = new Tensor(k, model.params.shape, "f32");
    fill(k, this.#m, 0);
    fill(k, this.#v, 0);
  }

  /** Optimizer steps taken. */
  get steps(): number {
    return this.#step;
  }

  /** Splits examples into micro-batches of at most `microBatchTokens` tokens (order kept). */
  #microBatches(examples: readonly SftExample[]): SftExample[][] {
    const out: SftExample[][] = [];
    let cur: SftExample[] = [];
    let n = 0;
    for (const ex of examples) {
      if (cur.length > 0 && n + ex.tokens.length > this.#o.microBatchTokens) {
        out.push(cur);
        cur = [];
        n = 0;
      }
      cur.push(ex);
      n += ex.tokens.length;
    }
    if (cur.length > 0) out.push(cur);
    return out;
  }

  /**
   * Accumulates the gradient of the mean masked loss over `examples` into the
   * model's grads (zeroed first) and returns the loss, without updating.
   */
  accumulate(examples: readonly SftExample[]): { loss: number; count: number; tokens: number } {
    const batches = this.#microBatches(examples).map(packSftBatch);
    const count = batches.reduce((a, b) => a + b.count, 0);
    if (count === 0) throw new RangeError("The SFT batch has no trained (masked) token");
    this.model.zeroGrad();
    let sum = 0, tokens = 0;
    for (const b of batches) {
      tokens += b.tokens.length;
      const { logp } = this.model.forward(b, { entropy: false });
      const lp = logp.read() as Float32Array;
      const dlogp = new Float32Array(b.tokens.length);
      for (let i = 0; i < dlogp.length; i++) {
        const w = b.weights[i]!;
        if (w === 0) continue;
        sum -= w * lp[i]!;
        dlogp[i] = -w / count;
      }
      if (b.count > 0) this.model.backward({ dlogp });
    }
    return { loss: sum / count, count, tokens };
  }

  /** One step: gradient of the mean masked loss over `examples`, clipping, AdamW. */
  step(examples: readonly SftExample[], options: { lr?: number } = {}): SftStepResult {
    const { loss, count, tokens } = this.accumulate(examples);
    const k = this.model.kernels;
    const gradNorm = Math.sqrt(sumSquares(k, this.model.grads));
    const clip = this.#o.maxGradNorm;
    const gradScale = clip > 0 && Number.isFinite(clip) && gradNorm > clip ? clip / gradNorm : 1;
    const lr = options.lr ?? this.#o.lr;
    this.#step++;
    adamw(k, this.model.params, this.#m, this.#v, this.model.grads, {
      lr,
      beta1: this.#o.beta1,
      beta2: this.#o.beta2,
      eps: this.#o.eps,
      weightDecay: this.#o.weightDecay,
      step: this.#step,
      gradScale,
    });
    this.model.markParamsChanged();
    return { loss, count, tokens, gradNorm, lr };
  }

  /** The mean masked loss over `examples` (no gradient kept, nothing updated). */
  loss(examples: readonly SftExample[]): number {
    let sum = 0, count = 0;
    for (const mb of this.#microBatches(examples)) {
      const b = packSftBatch(mb);
      if (b.count === 0) continue;
      const lp = this.model.forward(b, { entropy: false }).logp.read() as Float32Array;
      for (let i = 0; i < lp.length; i++) if (b.weights[i]) sum -= b.weights[i]! * lp[i]!;
      count += b.count;
    }
    if (count === 0) throw new RangeError("The examples have no trained (masked) token");
    return sum / count;
  }

  /** Frees the AdamW moments (the model is the caller's). */
  dispose(): void {
    this.#m.free();
    this.#v.free();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
