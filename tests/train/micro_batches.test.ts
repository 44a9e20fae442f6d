// Micro-batch and mini-batch assembly: hand-worked groupings, packed layouts
// and padding fractions, then random cases checked for the invariants (every
// sample exactly once, budgets kept, packing consistent with the samples).
import assert from "node:assert/strict";
import {
  buildMicroBatches,
  inferBatching,
  type MicroBatch,
  splitMiniBatches,
  sumField,
  trainBatching,
  type TrainSample,
} from "../../lib/train/micro_batches.ts";
import { Rng } from "../kernels/_helpers.ts";

type Fields = { targets: Int32Array; mask: Float32Array };

/** Sample i has tokens 100 i + j, targets 100 i + j + 1, mask j % 2. */
function samplesOf(lens: number[]): TrainSample<Fields>[] {
  return lens.map((n, i) => ({
    tokens: Int32Array.from({ length: n }, (_, j) => 100 * i + j),
    fields: {
      targets: Int32Array.from({ length: n }, (_, j) => 100 * i + j + 1),
      mask: Float32Array.from({ length: n }, (_, j) => j % 2),
    },
  }));
}

/** Checks a micro-batch's packed arrays against its samples. */
function checkPacked(mb: MicroBatch<Fields>, samples: TrainSample<Fields>[]): void {
  let at = 0;
  assert.equal(mb.cuSeqlens.length, mb.indices.length + 1);
  assert.equal(mb.cuSeqlens[0], 0);
  mb.indices.forEach((i, s) => {
    const src = samples[i]!;
    const n = src.tokens.length;
    assert.equal(mb.cuSeqlens[s + 1], at + n, `cuSeqlens[${s + 1}]`);
    assert.deepEqual(mb.tokens.subarray(at, at + n), src.tokens);
    assert.deepEqual(
      mb.positions.subarray(at, at + n),
      Int32Array.from({ length: n }, (_, j) => j),
    );
    assert.deepEqual(mb.fields.targets.subarray(at, at + n), src.fields!.targets);
    assert.deepEqual(mb.fields.mask.subarray(at, at + n), src.fields!.mask);
    at += n;
  });
  assert.equal(mb.numTokens, at);
  assert.equal(mb.tokens.length, at);
  assert.ok(mb.fields.targets instanceof Int32Array && mb.fields.mask instanceof Float32Array);
  assert.equal(mb.maxLen, Math.max(...mb.indices.map((i) => samples[i]!.tokens.length)));
}

Deno.test("dynamic batching: sorted by length, filled to the token budget", () => {
  const samples = samplesOf([5, 1, 7, 3, 3, 9, 2]);
  const { microBatches, stats } = buildMicroBatches(samples, { maxTokens: 8 });
  // by length: 1(1) 6(2) 3(3) 4(3) 0(5) 2(7) 5(9); 1+2+3 = 6, +3 > 8; 3+5 = 8; 7; 9 alone
  assert.deepEqual(microBatches.map((b) => b.indices), [[1, 6, 3], [4, 0], [2], [5]]);
  assert.deepEqual(microBatches.map((b) => b.numTokens), [6, 8, 7, 9]);
  for (const mb of microBatches) checkPacked(mb, samples);
  assert.deepEqual(microBatches[0]!.cuSeqlens, Int32Array.of(0, 1, 3, 6));
  assert.deepEqual(microBatches[0]!.positions, Int32Array.of(0, 0, 1, 0, 1, 2));
  // padded [B, max_len]: 3x3 + 2x5 + 1x7 + 1x9 = 35 slots for 30 tokens
  assert.deepEqual(stats, {
    numMicroBatches: 4,
    numSamples: 7,
    numTokens: 30,
    paddedTokens: 35,
    paddingFraction: 1 - 30 / 35,
  });
});

Deno.test("fixed batching: per_device_train_batch_size samples in order", () => {
  const samples = samplesOf([5, 1, 7, 3, 3, 9, 2]);
  const { microBatches, stats } = buildMicroBatches(samples, { batchSize: 3 });
  assert.deepEqual(microBatches.map((b) => b.indices), [[0, 1, 2], [3, 4, 5], [6]]);
  for (const mb of microBatches) checkPacked(mb, samples);
  // 3x7 + 3x9 + 1x2 = 50 slots for 30 tokens
  assert.equal(stats.paddedTokens, 50);
  assert.equal(stats.paddingFraction, 0.4);
  // a subset, in the order given
  const sub = buildMicroBatches(samples, { batchSize: 2 }, [6, 2, 0]);
  assert.deepEqual(sub.microBatches.map((b) => b.indices), [[6, 2], [0]]);
  assert.equal(sub.stats.numTokens, 14);
});

Deno.test("random cases: every sample once, budgets kept, packing right", () => {
  const rng = new Rng("micro batches");
  for (let trial = 0; trial < 200; trial++) {
    const lens = Array.from({ length: rng.int(1, 30) }, () => rng.int(1, 40));
    const samples = samplesOf(lens);
    const budget = rng.int(1, 80);
    const plan = rng.chance(0.5) ? { maxTokens: budget } : { batchSize: rng.int(1, 6) };
    const { microBatches, stats } = buildMicroBatches(samples, plan);
    const seen = microBatches.flatMap((b) => b.indices).sort((a, b) => a - b);
    assert.deepEqual(seen, lens.map((_, i) => i), `trial ${trial}: every sample exactly once`);
    let padded = 0;
    for (const mb of microBatches) {
      checkPacked(mb, samples);
      padded += mb.indices.length * mb.maxLen;
      if ("maxTokens" in plan) {
        assert.ok(
          mb.numTokens <= plan.maxTokens || mb.indices.length === 1,
          `trial ${trial}: ${mb.numTokens} tokens over a budget of ${plan.maxTokens}`,
        );
      } else {
        assert.ok(mb.indices.length <= plan.batchSize);
      }
    }
    if ("maxTokens" in plan) {
      // greedy: no micro-batch could have taken the next one's first sample
      for (let b = 0; b + 1 < microBatches.length; b++) {
        const next = samples[microBatches[b + 1]!.indices[0]!]!.tokens.length;
        assert.ok(
          microBatches[b]!.numTokens + next > plan.maxTokens,
          `trial ${trial}: underfilled`,
        );
      }
    }
    assert.equal(stats.numTokens, lens.reduce((a, b) => a + b, 0));
    assert.equal(stats.paddedTokens, padded);
    assert.equal(stats.numSamples, lens.length);
  }
});

Deno.test("mini-batches: mini_batch_size samples per update, each cut into micro-batches", () => {
  const samples = samplesOf([4, 4, 2, 6, 1, 3, 5]);
  const minis = splitMiniBatches(samples, 3, { maxTokens: 6 }, [6, 5, 4, 3, 2, 1, 0]);
  assert.deepEqual(minis.map((m) => m.indices), [[6, 5, 4], [3, 2, 1], [0]]);
  // [6, 5, 4] by length: 4(1) 5(3) 6(5) -> [4, 5], [6]
  assert.deepEqual(minis[0]!.microBatches.map((b) => b.indices), [[4, 5], [6]]);
  assert.deepEqual(minis.map((m) => m.stats.numSamples), [3, 3, 1]);
  // the loss denominator of a token mean: mask ones across the whole mini-batch
  // (lengths 5, 3, 1: j % 2 gives 2 + 1 + 0)
  assert.equal(sumField(minis[0]!.microBatches, "mask"), 3);
  assert.throws(
    () => splitMiniBatches(samples, 3, { maxTokens: 6 }, [0, 1]),
    /order has 2 entries for 7 samples/,
  );
});

Deno.test("config: mini-batch size and micro-batch plan of a worker", () => {
  const training_args = { per_device_train_batch_size: 2, gradient_accumulation_steps: 8 };
  assert.deepEqual(
    trainBatching({
      use_dynamic_batching_in_train: false,
      max_tokens_per_microbatch_in_train: 0,
      training_args,
    }),
    { miniBatchSize: 16, plan: { batchSize: 2 } },
  );
  assert.deepEqual(
    trainBatching({
      use_dynamic_batching_in_train: true,
      max_tokens_per_microbatch_in_train: 2048,
      training_args,
    }),
    { miniBatchSize: 16, plan: { maxTokens: 2048 } },
  );
  assert.throws(
    () =>
      trainBatching({
        use_dynamic_batching_in_train: true,
        max_tokens_per_microbatch_in_train: 0,
        training_args,
      }),
    /max_tokens_per_microbatch_in_train must be a positive integer, got 0/,
  );
});

Deno.test("config: the forward-only passes' plan follows infer_batch_size or the infer token budget", () => {
  const base = { infer_batch_size: 16, max_tokens_per_microbatch_in_infer: null };
  assert.deepEqual(inferBatching({ ...base, use_dynamic_batching_in_infer: false }), {
    batchSize: 16,
  });
  assert.deepEqual(
    inferBatching({
      ...base,
      use_dynamic_batching_in_infer: true,
      max_tokens_per_microbatch_in_infer: 8192,
    }),
    { maxTokens: 8192 },
  );
  assert.throws(
    () => inferBatching({ ...base, use_dynamic_batching_in_infer: true }),
    /max_tokens_per_microbatch_in_infer must be a positive integer, got 0/,
  );
});

Deno.test("bad samples and plans are refused clearly", () => {
  const good = samplesOf([2, 3]);
  assert.throws(
    () => buildMicroBatches([{ tokens: new Int32Array(0) }], { maxTokens: 4 }),
    /Sample 0 must have a non-empty Int32Array of tokens/,
  );
  assert.throws(
    () =>
      buildMicroBatches([good[0]!, {
        ...good[1]!,
        fields: { ...good[1]!.fields!, mask: new Float32Array(2) },
      }], {
        maxTokens: 4,
      }),
    /Sample 1's field 'mask' has 2 values for 3 tokens/,
  );
  assert.throws(
    () => buildMicroBatches<Fields>([good[0]!, { tokens: new Int32Array(2) }], { maxTokens: 4 }),
    /Sample 1 has fields \[\]; sample 0 has \[mask, targets\]/,
  );
  assert.throws(() => buildMicroBatches(good, { maxTokens: 0 }), /maxTokens must be a positive/);
  assert.throws(() => buildMicroBatches(good, { batchSize: 1.5 }), /batchSize must be a positive/);
  assert.throws(() => buildMicroBatches(good, { batchSize: 1 }, [1, 1]), /repeated/);
  assert.throws(
    () =>
      buildMicroBatches([
        { tokens: Int32Array.of(1), fields: { x: Float32Array.of(1) } },
        { tokens: Int32Array.of(1), fields: { x: Int32Array.of(1) } },
      ], { batchSize: 2 }),
    /Field 'x' mixes Float32Array and Int32Array/,
  );
});
