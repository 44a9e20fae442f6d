// Gradient accumulation on the real model: the gradient of a masked token-mean
// loss over one packed batch equals the sum of micro-batch gradients when each
// micro-batch's loss is divided by the whole mini-batch's token count, for any
// split (dynamic or fixed). Dividing each micro-batch's own mean by the number
// of micro-batches does not (checked too, so the comparison can fail).
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import {
  buildMicroBatches,
  type MicroBatch,
  type MicroBatchPlan,
  sumField,
  type TrainSample,
} from "../../lib/train/micro_batches.ts";
import { maxAbs, Rng } from "../kernels/_helpers.ts";
import { randomizeParams, tinyConfig } from "../model/_qwen2_reference.ts";

type Fields = { targets: Int32Array; mask: Float32Array };

function randomSamples(rng: Rng, vocab: number, lens: number[]): TrainSample<Fields>[] {
  return lens.map((n) => ({
    tokens: rng.ints(n, 0, vocab - 1),
    fields: {
      targets: rng.ints(n, 0, vocab - 1),
      // a response mask: the first tokens (the prompt) carry no loss
      mask: Float32Array.from({ length: n }, (_, j) => (j >= Math.min(2, n - 1) ? 1 : 0)),
    },
  }));
}

/**
 * Accumulates the gradient of loss = -sum(mask * logp) / denom(micro-batch)
 * over the micro-batches, from zero.
 */
function accumulate(
  model: Qwen2Model,
  micro: MicroBatch<Fields>[],
  denom: (mb: MicroBatch<Fields>) => number,
): Float32Array {
  model.zeroGrad();
  for (const mb of micro) {
    model.forward({ ...mb, targets: mb.fields.targets }, { entropy: false });
    const d = denom(mb);
    model.backward({ dlogp: Float32Array.from(mb.fields.mask, (m) => -m / d) });
  }
  return model.grads.toArray();
}

/** max |a - b| relative to max |b|. */
function relDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m / maxAbs(b);
}

Deno.test("accumulated micro-batch gradients equal the one-batch gradient", () => {
  using k = Kernels.open({ threads: 2 });
  const cfg = tinyConfig();
  using model = new Qwen2Model(k, cfg);
  randomizeParams(model, "grad accumulation");
  const samples = randomSamples(new Rng("grad accumulation"), cfg.vocab_size, [
    5,
    3,
    9,
    2,
    6,
    4,
    7,
    1,
  ]);

  const whole = buildMicroBatches(samples, { maxTokens: 1000 }).microBatches;
  assert.equal(whole.length, 1);
  const n = sumField(whole, "mask");
  const reference = accumulate(model, whole, () => n);

  const plans: MicroBatchPlan[] = [{ maxTokens: 10 }, { maxTokens: 7 }, { batchSize: 3 }, {
    batchSize: 1,
  }];
  for (const plan of plans) {
    const micro = buildMicroBatches(samples, plan).microBatches;
    assert.ok(micro.length >= 3, `${JSON.stringify(plan)} splits into ${micro.length}`);
    assert.equal(sumField(micro, "mask"), n);
    const split = accumulate(model, micro, () => n);
    const diff = relDiff(split, reference);
    assert.ok(diff < 2e-6, `${JSON.stringify(plan)}: gradients differ by ${diff} (relative)`);

    // the split-dependent rule: each micro-batch's own token mean / number of micro-batches
    const naive = accumulate(model, micro, (mb) => sumField([mb], "mask") * micro.length);
    const off = relDiff(naive, reference);
    assert.ok(off > 1e-2, `${JSON.stringify(plan)}: the naive rule differs by only ${off}`);
  }
});
