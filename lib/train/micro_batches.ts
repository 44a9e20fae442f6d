/**
 * From training samples to the packed batches the model runs on.
 *
 * A rollout batch is cut into **mini-batches** (one optimizer update each,
 * `per_device_train_batch_size * gradient_accumulation_steps` samples, as
 * ROLL's `backward_batch_size`), and each mini-batch into **micro-batches**
 * (one forward/backward pass each, gradients accumulated):
 * - dynamic batching (`use_dynamic_batching_in_train`): samples sorted by
 *   length, micro-batches filled up to `max_tokens_per_microbatch_in_train`
 *   tokens, as ROLL's `dynamic_batching_shard`;
 * - fixed: `per_device_train_batch_size` samples per micro-batch, in order.
 *
 * Every micro-batch is one packed batch (tokens concatenated, positions
 * restarting at 0 per sample, `cuSeqlens`): the kernels never see padding,
 * whether or not `use_sequence_packing` is set. The statistics report the
 * fraction of a padded `[B, max_len]` layout of the same micro-batches that
 * would have been padding, i.e. what packing saves.
 *
 * **Gradient accumulation.** The accumulated gradient equals the gradient of
 * the whole mini-batch's loss, however it is split, when every micro-batch's
 * loss is normalised by the *mini-batch's* denominator (e.g. the number of
 * loss tokens in the whole mini-batch, {@linkcode sumField}, for a token
 * mean; its number of samples for a sequence mean) and the micro-batch
 * gradients are summed. Dividing each micro-batch's own mean by the number of
 * micro-batches (transformers before 4.46) weighs tokens by the micro-batch
 * they land in, and so depends on the split.
 *
 * @example
 * ```ts
 * import { buildMicroBatches } from "./micro_batches.ts";
 * const samples = [3, 1, 2].map((n) => ({ tokens: new Int32Array(n).fill(7) }));
 * const { microBatches, stats } = buildMicroBatches(samples, { maxTokens: 4 });
 * console.log(microBatches.map((b) => b.indices)); // [[1, 2], [0]]
 * console.log(microBatches[0]!.positions, microBatches[0]!.cuSeqlens); // [0, 0, 1] [0, 1, 3]
 * console.log(stats.paddingFraction); // ≈ 0.143: [2, 2] and [1, 3] pad 1 of 7 slots
 * ```
 *
 * @module
 */
import type { PackedBatch } from "../model/qwen2.ts";

/** A per-token array carried along with a sample's tokens. */
export type PerTokenArray = Float32Array | Int32Array;

/** Named per-token arrays (targets, old log-probs, advantages, loss masks, ...). */
export type PerTokenFields = Record<string, PerTokenArray>;

/** One training sequence. */
export interface TrainSample<F extends PerTokenFields = PerTokenFields> {
  /** Token ids. */
  tokens: Int32Array;
  /** Arrays of the tokens' length, concatenated into the micro-batch like the tokens. */
  fields?: F;
  /**
   * How many samples this one stands for (default 1): a merged duplicate
   * ({@linkcode mergeDuplicateSamples} in `dedup.ts`). Mini-batches are cut by
   * these weights, so merging does not change the number of updates.
   */
  weight?: number;
}

/** How micro-batches are formed: a token budget (dynamic batching) or a sample count. */
export type MicroBatchPlan = { maxTokens: number } | { batchSize: number };

/**
 * One micro-batch: a packed batch (pass it to `Qwen2Model.forward` with
 * `targets`) plus the samples' per-token fields in the same order.
 */
export interface MicroBatch<F extends PerTokenFields = PerTokenFields> extends PackedBatch {
  /** Indices (into the input samples) of the packed sequences, in order. */
  indices: number[];
  /** The fields, concatenated like the tokens. */
  fields: F;
  /** Tokens in the micro-batch. */
  numTokens: number;
  /** The longest sequence's length. */
  maxLen: number;
}

/** Counts over a set of micro-batches. */
export interface MicroBatchStats {
  numMicroBatches: number;
  numSamples: number;
  /** Tokens the kernels process (packed). */
  numTokens: number;
  /** Tokens padded `[B, max_len]` micro-batches would hold: sum of B * max_len. */
  paddedTokens: number;
  /** 1 - numTokens / paddedTokens: the share of a padded layout that is padding. */
  paddingFraction: number;
}

/** Micro-batches and their statistics. */
export interface MicroBatches<F extends PerTokenFields = PerTokenFields> {
  microBatches: MicroBatch<F>[];
  stats: MicroBatchStats;
}

/** One optimizer update's samples, cut into micro-batches. */
export interface MiniBatch<F extends PerTokenFields = PerTokenFields> extends MicroBatches<F> {
  /** Indices (into the input samples) of the mini-batch's samples, in input order. */
  indices: number[];
}

function expectPositiveInt(n: number, name: string): void {
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`${name} must be a positive integer, got ${n}`);
  }
}

/** Checks the samples once: non-empty tokens, the same field names, fields of the right length. */
function checkSamples(samples: readonly TrainSample[]): string[] {
  const names = Object.keys(samples[0]?.fields ?? {}).sort();
  samples.forEach((s, i) => {
    if (!(s.tokens instanceof Int32Array) || s.tokens.length === 0) {
      throw new RangeError(`Sample ${i} must have a non-empty Int32Array of tokens`);
    }
    const own = Object.keys(s.fields ?? {}).sort();
    if (own.join("\0") !== names.join("\0")) {
      throw new RangeError(
        `Sample ${i} has fields [${own.join(", ")}]; sample 0 has [${names.join(", ")}]`,
      );
    }
    for (const name of own) {
      const a = s.fields![name]!;
      if (!(a instanceof Float32Array || a instanceof Int32Array)) {
        throw new TypeError(`Sample ${i}'s field '${name}' must be a Float32Array or Int32Array`);
      }
      if (a.length !== s.tokens.length) {
        throw new RangeError(
          `Sample ${i}'s field '${name}' has ${a.length} values for ${s.tokens.length} tokens`,
        );
      }
    }
  });
  return names;
}

/** Groups sample indices into micro-batches by the plan. */
function group(samples: readonly TrainSample[], order: readonly number[], plan: MicroBatchPlan) {
  const groups: number[][] = [];
  if ("batchSize" in plan) {
    expectPositiveInt(plan.batchSize, "batchSize");
    for (let i = 0; i < order.length; i += plan.batchSize) {
      groups.push(order.slice(i, i + plan.batchSize));
    }
    return groups;
  }
  expectPositiveInt(plan.maxTokens, "maxTokens");
  // Shortest first (a stable sort keeps equal lengths in input order), filled greedily.
  const sorted = [...order].sort((a, b) => samples[a]!.tokens.length - samples[b]!.tokens.length);
  let current: number[] = [];
  let tokens = 0;
  for (const i of sorted) {
    const len = samples[i]!.tokens.length;
    if (current.length > 0 && tokens + len > plan.maxTokens) {
      groups.push(current);
      current = [];
      tokens = 0;
    }
    current.push(i);
    tokens += len;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** Packs the samples `indices` into one micro-batch. */
function pack<F extends PerTokenFields>(
  samples: readonly TrainSample<F>[],
  indices: number[],
  fieldNames: string[],
): MicroBatch<F> {
  const lens = indices.map((i) => samples[i]!.tokens.length);
  const numTokens = lens.reduce((a, b) => a + b, 0);
  const tokens = new Int32Array(numTokens);
  const positions = new Int32Array(numTokens);
  const cuSeqlens = new Int32Array(indices.length + 1);
  const fields: Record<string, PerTokenArray> = {};
  for (const name of fieldNames) {
    const first = samples[indices[0]!]!.fields![name]!;
    fields[name] = first instanceof Float32Array
      ? new Float32Array(numTokens)
      : new Int32Array(numTokens);
  }
  let at = 0;
  indices.forEach((i, s) => {
    const sample = samples[i]!;
    const len = sample.tokens.length;
    tokens.set(sample.tokens, at);
    for (let j = 0; j < len; j++) positions[at + j] = j;
    for (const name of fieldNames) {
      const src = sample.fields![name]!;
      const dst = fields[name]!;
      if ((src instanceof Float32Array) !== (dst instanceof Float32Array)) {
        throw new TypeError(`Field '${name}' mixes Float32Array and Int32Array across samples`);
      }
      dst.set(src, at);
    }
    at += len;
    cuSeqlens[s + 1] = at;
  });
  return {
    indices,
    tokens,
    positions,
    cuSeqlens,
    fields: fields as F,
    numTokens,
    maxLen: Math.max(...lens),
  };
}

/** Statistics of a set of micro-batches. */
function statsOf(microBatches: readonly MicroBatch[]): MicroBatchStats {
  let numSamples = 0, numTokens = 0, paddedTokens = 0;
  for (const b of microBatches) {
    numSamples += b.indices.length;
    numTokens += b.numTokens;
    paddedTokens += b.indices.length * b.maxLen;
  }
  return {
    numMicroBatches: microBatches.length,
    numSamples,
    numTokens,
    paddedTokens,
    paddingFraction: paddedTokens === 0 ? 0 : 1 - numTokens / paddedTokens,
  };
}

/**
 * Cuts `samples` (or the subset `indices`, default all in order) into packed
 * micro-batches. With `{ maxTokens }` the samples are sorted by length
 * (shortest first) and each micro-batch takes samples while its token count
 * stays within the budget; a sample longer than the budget gets a micro-batch
 * of its own (the budget is never split across a sequence). With
 * `{ batchSize }` consecutive samples are grouped, the last group possibly
 * smaller. Every sample lands in exactly one micro-batch.
 *
 * @example
 * ```ts
 * import { buildMicroBatches } from "./micro_batches.ts";
 * const samples = [2, 2, 3].map((n) => ({
 *   tokens: new Int32Array(n),
 *   fields: { mask: new Float32Array(n).fill(1) },
 * }));
 * const { microBatches, stats } = buildMicroBatches(samples, { batchSize: 2 });
 * console.log(microBatches.map((b) => b.indices), stats.paddingFraction); // [[0, 1], [2]] 0
 * console.log(microBatches[0]!.fields.mask.length); // 4
 * ```
 */
export function buildMicroBatches<F extends PerTokenFields>(
  samples: readonly TrainSample<F>[],
  plan: MicroBatchPlan,
  indices?: readonly number[],
): MicroBatches<F> {
  const names = checkSamples(samples);
  const order = indices ?? samples.map((_, i) => i);
  const seen = new Set<number>();
  for (const i of order) {
    if (!Number.isInteger(i) || i < 0 || i >= samples.length || seen.has(i)) {
      throw new RangeError(
        `Sample index ${i} is out of range [0, ${samples.length}) or repeated`,
      );
    }
    seen.add(i);
  }
  const microBatches = group(samples, order, plan).map((g) => pack(samples, g, names));
  return { microBatches, stats: statsOf(microBatches) };
}

/**
 * Cuts the samples (in `order`, default input order; shuffle it for PPO
 * epochs) into mini-batches of `miniBatchSize` samples (counted by their
 * `weight`), one optimizer update each, the last possibly smaller, and each
 * into micro-batches by `plan`.
 *
 * @example
 * ```ts
 * import { splitMiniBatches } from "./micro_batches.ts";
 * const samples = [1, 2, 3, 4, 5].map((n) => ({ tokens: new Int32Array(n) }));
 * const minis = splitMiniBatches(samples, 2, { batchSize: 1 }, [4, 3, 2, 1, 0]);
 * console.log(minis.map((m) => m.indices)); // [[4, 3], [2, 1], [0]]
 * console.log(minis[0]!.stats.numMicroBatches); // 2
 * ```
 */
export function splitMiniBatches<F extends PerTokenFields>(
  samples: readonly TrainSample<F>[],
  miniBatchSize: number,
  plan: MicroBatchPlan,
  order?: readonly number[],
): MiniBatch<F>[] {
  expectPositiveInt(miniBatchSize, "miniBatchSize");
  const all = order ?? samples.map((_, i) => i);
  if (all.length !== samples.length) {
    throw new RangeError(`order has ${all.length} entries for ${samples.length} samples`);
  }
  samples.forEach((s, i) => {
    if (s.weight !== undefined && !(Number.isFinite(s.weight) && s.weight > 0)) {
      throw new RangeError(`Sample ${i}'s weight must be a positive number, got ${s.weight}`);
    }
  });
  const minis: MiniBatch<F>[] = [];
  // cut where the running weight crosses a multiple of miniBatchSize (all weights 1: every n)
  let indices: number[] = [], weight = 0, bound = miniBatchSize;
  for (const i of all) {
    indices.push(i);
    weight += samples[i]?.weight ?? 1;
    if (weight >= bound) {
      minis.push({ indices, ...buildMicroBatches(samples, plan, indices) });
      indices = [];
      while (bound <= weight) bound += miniBatchSize;
    }
  }
  if (indices.length) minis.push({ indices, ...buildMicroBatches(samples, plan, indices) });
  return minis;
}

/**
 * The sum of per-token field `name` over all micro-batches (e.g. a loss mask:
 * the token count a token-mean loss divides by, for every micro-batch alike).
 *
 * @example
 * ```ts
 * import { buildMicroBatches, sumField } from "./micro_batches.ts";
 * const samples = [{ tokens: new Int32Array(3), fields: { mask: Float32Array.of(0, 1, 1) } }];
 * console.log(sumField(buildMicroBatches(samples, { maxTokens: 8 }).microBatches, "mask")); // 2
 * ```
 */
export function sumField<F extends PerTokenFields>(
  microBatches: readonly MicroBatch<F>[],
  name: keyof F & string,
): number {
  let sum = 0;
  for (const b of microBatches) {
    const a = b.fields[name];
    if (a === undefined) throw new RangeError(`Micro-batches have no field '${name}'`);
    for (let i = 0; i < a.length; i++) sum += a[i]!;
  }
  return sum;
}

/** The worker settings {@linkcode trainBatching} reads (a WorkerConfig fits). */
export interface TrainBatchingConfig {
  use_dynamic_batching_in_train: boolean;
  max_tokens_per_microbatch_in_train: number;
  training_args: { per_device_train_batch_size: number; gradient_accumulation_steps: number };
}

/**
 * The mini-batch size (`per_device_train_batch_size *
 * gradient_accumulation_steps`, ROLL's backward batch size) and the
 * micro-batch plan a training worker's config asks for.
 *
 * @example
 * ```ts
 * import { trainBatching } from "./micro_batches.ts";
 * console.log(trainBatching({
 *   use_dynamic_batching_in_train: true, max_tokens_per_microbatch_in_train: 4096,
 *   training_args: { per_device_train_batch_size: 2, gradient_accumulation_steps: 64 },
 * })); // { miniBatchSize: 128, plan: { maxTokens: 4096 } }
 * ```
 */
export function trainBatching(
  w: TrainBatchingConfig,
): { miniBatchSize: number; plan: MicroBatchPlan } {
  const { per_device_train_batch_size: b, gradient_accumulation_steps: g } = w.training_args;
  expectPositiveInt(b, "per_device_train_batch_size");
  expectPositiveInt(g, "gradient_accumulation_steps");
  if (w.use_dynamic_batching_in_train) {
    expectPositiveInt(w.max_tokens_per_microbatch_in_train, "max_tokens_per_microbatch_in_train");
    return { miniBatchSize: b * g, plan: { maxTokens: w.max_tokens_per_microbatch_in_train } };
  }
  return { miniBatchSize: b * g, plan: { batchSize: b } };
}

/** The worker settings {@linkcode inferBatching} reads (a WorkerConfig fits). */
export interface InferBatchingConfig {
  infer_batch_size: number;
  use_dynamic_batching_in_infer: boolean;
  max_tokens_per_microbatch_in_infer: number | null;
}

/**
 * The micro-batch plan of a worker's forward-only passes (old and reference log-probs,
 * critic values), as ROLL's `infer_batch_size` and dynamic batching in inference set it.
 * The results do not depend on it; memory and speed do.
 *
 * @example
 * ```ts
 * import { inferBatching } from "./micro_batches.ts";
 * console.log(inferBatching({
 *   infer_batch_size: 16, use_dynamic_batching_in_infer: true,
 *   max_tokens_per_microbatch_in_infer: 8192,
 * })); // { maxTokens: 8192 }
 * ```
 */
export function inferBatching(w: InferBatchingConfig): MicroBatchPlan {
  if (w.use_dynamic_batching_in_infer) {
    const budget = w.max_tokens_per_microbatch_in_infer ?? 0;
    expectPositiveInt(budget, "max_tokens_per_microbatch_in_infer");
    return { maxTokens: budget };
  }
  expectPositiveInt(w.infer_batch_size, "infer_batch_size");
  return { batchSize: w.infer_batch_size };
}
