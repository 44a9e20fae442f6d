// The critic role on the real model: token-aligned values, value-loss updates
// that fit the returns, value clipping, and micro-batch accumulation.
import assert from "node:assert/strict";
import { Kernels, LOSS_AGG_MODES } from "../../ffi/mod.ts";
import { gae } from "../../lib/algo/returns.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import {
  type CriticSample,
  type CriticSettings,
  CriticTrainer,
  sequenceValues,
  valueMetrics,
} from "../../lib/train/critic.ts";
import type { MicroBatchPlan } from "../../lib/train/micro_batches.ts";
import { AdamW } from "../../lib/train/optimizer.ts";
import { maxAbs, Rng } from "../kernels/_helpers.ts";
import { randomizeParams, refParams, refValues, tinyConfig } from "../model/_qwen2_reference.ts";

const LENS = [5, 3, 9, 2, 6, 4, 7];
const identity = (n: number) => Array.from({ length: n }, (_, i) => i);

function criticModel(k: Kernels, seed: string): Qwen2Model {
  const model = new Qwen2Model(k, tinyConfig(), { valueHead: true });
  randomizeParams(model, seed);
  return model;
}

/** Sequences of `lens` tokens; the first 2 tokens (or 1 of a 2-token one) are the prompt. */
function sequences(rng: Rng, vocab: number, lens: number[]) {
  return lens.map((n) => ({
    tokens: rng.ints(n, 0, vocab - 1),
    responseMask: Uint8Array.from({ length: n }, (_, t) => (t >= Math.min(2, n - 1) ? 1 : 0)),
  }));
}

function settings(over: Partial<CriticSettings> = {}): CriticSettings {
  return {
    valueClip: null,
    aggMode: "seq-mean-token-mean",
    miniBatchSize: 64,
    plan: { maxTokens: 1000 },
    maxGradNorm: 1e9,
    ppoEpochs: 1,
    ...over,
  };
}

/** ROLL's critic loss, float64: 0.5 seq-mean-token-mean of (V - R)^2 (max with the clipped one). */
function rollLoss(
  values: Float32Array[],
  samples: readonly CriticSample[],
  clip: number | null = null,
): { loss: number; clipfrac: number } {
  let loss = 0, clipfrac = 0, seqs = 0;
  samples.forEach((s, b) => {
    let n = 0, l = 0, c = 0;
    for (let t = 0; t < s.tokens.length; t++) {
      if (!s.responseMask[t]) continue;
      const v = values[b]![t]!, r = s.returns[t]!, old = s.oldValues[t]!;
      const l1 = (v - r) ** 2;
      const vc = clip === null ? v : Math.min(Math.max(v, old - clip), old + clip);
      const l2 = (vc - r) ** 2;
      n++;
      l += Math.max(l1, l2);
      if (l2 > l1) c++;
    }
    if (n === 0) return;
    seqs++;
    loss += l / n;
    clipfrac += c / n;
  });
  return { loss: 0.5 * loss / seqs, clipfrac: clipfrac / seqs };
}

Deno.test("sequenceValues: entry t is the value head's output at position t - 1", () => {
  using k = Kernels.open({ threads: 2 });
  using model = criticModel(k, "critic values");
  const rng = new Rng("critic values");
  const seqs = LENS.map((n) => rng.ints(n, 0, model.config.vocab_size - 1));
  const params = refParams(model);
  for (const plan of [{ maxTokens: 1000 }, { maxTokens: 10 }, { batchSize: 1 }] as const) {
    const values = sequenceValues(model, seqs, plan);
    assert.equal(values.length, seqs.length);
    seqs.forEach((tokens, i) => {
      const n = tokens.length;
      const batch = {
        tokens,
        positions: Int32Array.from({ length: n }, (_, t) => t),
        cuSeqlens: Int32Array.of(0, n),
      };
      const alone = model.forwardValues(batch).toArray();
      const ref = refValues(model.config, params, batch);
      const v = values[i]!;
      assert.equal(v.length, n);
      assert.equal(v[0], 0);
      for (let t = 1; t < n; t++) {
        assert.ok(
          Math.abs(v[t]! - alone[t - 1]!) <= 1e-5 * Math.max(1, Math.abs(alone[t - 1]!)),
          `${JSON.stringify(plan)} seq ${i} token ${t}: ${v[t]} vs alone ${alone[t - 1]}`,
        );
        assert.ok(Math.abs(v[t]! - ref[t - 1]!) < 1e-4, `seq ${i} token ${t} vs reference`);
      }
    });
  }
  assert.deepEqual(sequenceValues(model, [], { maxTokens: 8 }), []);
});

Deno.test("the trainer reads values where sequenceValues puts them (returns = values: zero loss)", () => {
  using k = Kernels.open({ threads: 2 });
  using model = criticModel(k, "critic aligned");
  using opt = new AdamW(model);
  const data = sequences(new Rng("critic aligned"), model.config.vocab_size, LENS);
  const values = sequenceValues(model, data.map((d) => d.tokens), { maxTokens: 1000 });
  // returns = the values themselves (on the response): the loss and its gradient are 0 only
  // if the trainer reads the head's outputs where sequenceValues puts them
  const samples: CriticSample[] = data.map((d, i) => ({
    ...d,
    returns: Float32Array.from(values[i]!, (v, t) => (d.responseMask[t] ? v : 0)),
    oldValues: values[i]!,
  }));
  const before = model.params.toArray();
  const trainer = new CriticTrainer(model, opt, settings({ plan: { maxTokens: 10 } }));
  const m = trainer.train(samples, 0, identity);
  assert.ok(m["critic/loss"]! < 1e-10, `loss ${m["critic/loss"]}`);
  assert.ok(m["critic/error"]! < 1e-10, `error ${m["critic/error"]}`);
  assert.deepEqual(model.params.toArray(), before); // lr 0

  // shifted by one token the other way, the targets are off and the loss is not 0
  const shifted = samples.map((s) => ({
    ...s,
    returns: Float32Array.from(s.returns, (_, t) => s.returns[t + 1] ?? 0),
  }));
  const off = trainer.train(shifted, 0, identity);
  assert.ok(off["critic/loss"]! > 1e-3, `shifted loss ${off["critic/loss"]}`);
  // (not exactly 0: the packing differs from sequenceValues' and moves the float rounding)
  const [g, gOff] = [m["critic/grad_norm"]!, off["critic/grad_norm"]!];
  assert.ok(g < 1e-4 && g < 1e-3 * gOff, `grad_norm ${g} (shifted: ${gOff})`);
});

Deno.test("critic updates fit the returns: the value loss falls on a fixed batch", () => {
  using k = Kernels.open({ threads: 2 });
  using model = criticModel(k, "critic fit");
  using opt = new AdamW(model);
  const rng = new Rng("critic fit");
  const data = sequences(rng, model.config.vocab_size, LENS);
  const seqs = data.map((d) => d.tokens);
  const initial = sequenceValues(model, seqs, { maxTokens: 1000 });
  // targets: a reward at the end, discounted back over the response (gae's returns)
  const samples: CriticSample[] = data.map((d, i) => {
    const rewards = new Float32Array(d.tokens.length);
    rewards[d.tokens.length - 1] = rng.range(-2, 2);
    const { returns } = gae(rewards, initial[i]!, d.responseMask, 0.9, 0.95);
    return { ...d, returns, oldValues: initial[i]! };
  });
  const start = rollLoss(initial, samples).loss;
  assert.ok(start > 0.05, `initial loss ${start}`);
  const trainer = new CriticTrainer(
    model,
    opt,
    settings({ miniBatchSize: 4, plan: { maxTokens: 12 }, maxGradNorm: 1, ppoEpochs: 2 }),
  );
  const shuffleRng = new Rng("critic shuffle");
  const shuffle = (n: number) => {
    const p = identity(n);
    for (let i = n - 1; i > 0; i--) {
      const j = shuffleRng.int(0, i);
      [p[i], p[j]] = [p[j]!, p[i]!];
    }
    return p;
  };
  const losses: number[] = [];
  let first: Record<string, number> | null = null;
  for (let step = 0; step < 15; step++) {
    const m = trainer.train(samples, 3e-3, shuffle);
    first ??= m;
    assert.equal(m["critic/num_updates"], 4); // 2 epochs x ceil(7 / 4)
    assert.equal(m["critic/lr"], 3e-3);
    assert.equal(m["critic/vf_loss"], m["critic/loss"]);
    assert.ok(Number.isFinite(m["critic/grad_norm"]!) && m["critic/grad_norm"]! > 0);
    losses.push(rollLoss(sequenceValues(model, seqs, { batchSize: 3 }), samples).loss);
  }
  // without valueClip nothing is reported clipped
  assert.ok(first!["critic/loss"]! > 0 && first!["critic/clipfrac"] === 0);
  const end = losses[losses.length - 1]!;
  assert.ok(end < 0.05 * start, `loss ${start} -> ${losses.map((l) => l.toFixed(4)).join(", ")}`);
  assert.ok(losses[4]! < start, "the loss falls within a few steps");
});

Deno.test("value clipping: clipped tokens are reported and get no gradient", () => {
  using k = Kernels.open({ threads: 2 });
  using model = criticModel(k, "critic clip");
  using opt = new AdamW(model);
  const rng = new Rng("critic clip");
  const data = sequences(rng, model.config.vocab_size, LENS);
  const values = sequenceValues(model, data.map((d) => d.tokens), { maxTokens: 1000 });
  const train = (samples: CriticSample[], valueClip: number | null) =>
    new CriticTrainer(model, opt, settings({ valueClip, plan: { batchSize: 2 } }))
      .train(samples, 0, identity);

  // old = V - 1, returns = V + 2: with a clip of 0.1 every token's clipped loss (2.9^2) is the
  // larger one and the clipped value is constant in V, so no gradient flows
  const far = data.map((d, i) => ({
    ...d,
    oldValues: Float32Array.from(values[i]!, (v) => v - 1),
    returns: Float32Array.from(values[i]!, (v) => v + 2),
  }));
  const clipped = train(far, 0.1);
  assert.ok(Math.abs(clipped["critic/clipfrac"]! - 1) < 1e-12);
  assert.equal(clipped["critic/vf_clipfrac"], clipped["critic/clipfrac"]);
  assert.ok(Math.abs(clipped["critic/loss"]! - 0.5 * 2.9 ** 2) < 1e-4, `${clipped["critic/loss"]}`);
  assert.ok(clipped["critic/grad_norm"]! < 1e-6);
  assert.ok(Math.abs(clipped["critic/error"]! - 4) < 1e-4);
  assert.ok(Math.abs(clipped["critic/vpred"]! - clipped["critic/value"]! - 1) < 1e-4);
  for (const clip of [null, 10]) {
    const m = train(far, clip);
    assert.equal(m["critic/clipfrac"], 0);
    assert.ok(Math.abs(m["critic/loss"]! - 2) < 1e-4);
    assert.ok(m["critic/grad_norm"]! > 1e-3);
  }

  // random old values and returns: some tokens clipped, loss and clip fraction as ROLL's
  const mixed = data.map((d, i) => ({
    ...d,
    oldValues: Float32Array.from(values[i]!, (v) => v + rng.normal() * 0.5),
    returns: Float32Array.from(values[i]!, (v) => v + rng.normal()),
  }));
  const m = train(mixed, 0.2);
  const want = rollLoss(values, mixed, 0.2);
  assert.ok(want.clipfrac > 0.1 && want.clipfrac < 0.9, `clipfrac ${want.clipfrac}`);
  assert.ok(Math.abs(m["critic/clipfrac"]! - want.clipfrac) < 1e-9);
  assert.ok(Math.abs(m["critic/loss"]! - want.loss) < 1e-5 * want.loss, `${m["critic/loss"]}`);
});

Deno.test("micro-batch splits accumulate the one-batch gradient, in every loss_agg_mode", () => {
  using k = Kernels.open({ threads: 2 });
  using model = criticModel(k, "critic accumulation");
  using opt = new AdamW(model);
  const rng = new Rng("critic accumulation");
  const data = sequences(rng, model.config.vocab_size, [...LENS, 1, 2]);
  data[data.length - 1]!.responseMask.fill(0); // a sample with no response token
  const values = sequenceValues(model, data.map((d) => d.tokens), { maxTokens: 1000 });
  const samples: CriticSample[] = data.map((d, i) => ({
    ...d,
    oldValues: Float32Array.from(values[i]!, (v) => v + rng.normal() * 0.3),
    returns: Float32Array.from(values[i]!, (v) => v + rng.normal()),
  }));
  const plans: MicroBatchPlan[] = [{ maxTokens: 10 }, { maxTokens: 7 }, { batchSize: 3 }, {
    batchSize: 1,
  }];
  for (const aggMode of LOSS_AGG_MODES) {
    for (const valueClip of [null, 0.2]) {
      const run = (plan: MicroBatchPlan) => {
        const trainer = new CriticTrainer(model, opt, settings({ aggMode, valueClip, plan }));
        const m = trainer.train(samples, 0, identity); // lr 0: the gradient stays in model.grads
        return { m, grads: model.grads.toArray() };
      };
      const one = run({ maxTokens: 1000 });
      assert.equal(one.m["critic/micro_batches"], 1);
      assert.ok(maxAbs(one.grads) > 0);
      for (const plan of plans) {
        const split = run(plan);
        const what = `${aggMode} clip ${valueClip} ${JSON.stringify(plan)}`;
        assert.ok(split.m["critic/micro_batches"]! >= 3, what);
        let diff = 0;
        for (let i = 0; i < one.grads.length; i++) {
          diff = Math.max(diff, Math.abs(split.grads[i]! - one.grads[i]!));
        }
        // float32 rounding only (sums in another order); a wrong weighting is off by ~1e-1
        assert.ok(
          diff <= 1e-5 * maxAbs(one.grads),
          `${what}: gradients differ by ${diff} of ${maxAbs(one.grads)}`,
        );
        for (const key of ["critic/loss", "critic/grad_norm", "critic/clipfrac", "critic/error"]) {
          const a = split.m[key]!, b = one.m[key]!;
          assert.ok(
            Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(b)),
            `${what} ${key}: ${a} vs ${b}`,
          );
        }
      }
    }
  }
});

Deno.test("valueMetrics and the trainer's argument checks", () => {
  const m = valueMetrics([Float32Array.of(0, 1, 3), Float32Array.of(5, -2)], [[0, 1, 1], [0, 1]]);
  assert.deepEqual(m, {
    "critic/values/mean": 2 / 3,
    "critic/values/max": 3,
    "critic/values/min": -2,
  });
  assert.deepEqual(valueMetrics([Float32Array.of(1)], [[0]])["critic/values/mean"], 0);

  using k = Kernels.open({ threads: 1 });
  using actor = new Qwen2Model(k, tinyConfig());
  using critic = criticModel(k, "critic checks");
  using opt = new AdamW(critic);
  assert.throws(() => new CriticTrainer(actor, opt, settings()), /valueHead/);
  assert.throws(() => new CriticTrainer(critic, opt, settings({ valueClip: 0 })), /valueClip/);
  assert.throws(() => new CriticTrainer(critic, opt, settings({ ppoEpochs: 0 })), /ppoEpochs/);
  const trainer = new CriticTrainer(critic, opt, settings());
  const tokens = Int32Array.of(1, 2, 3);
  const ok = { tokens, responseMask: [0, 1, 1], returns: new Float32Array(3) };
  assert.throws(
    () => trainer.train([{ ...ok, oldValues: new Float32Array(2) }], 0, identity),
    /oldValues has 2 entries for 3 tokens/,
  );
  assert.throws(
    () => trainer.train([{ ...ok, oldValues: Float32Array.of(0, NaN, 0) }], 0, identity),
    /non-finite/,
  );
});
