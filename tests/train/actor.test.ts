// The actor_train role on the real model: token-aligned log-probs and PPO
// updates whose micro-batch accumulation gives the one-batch gradient.
import assert from "node:assert/strict";
import { Kernels, LOSS_AGG_MODES } from "../../ffi/mod.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import {
  type ActorSample,
  ActorTrainer,
  type PpoSettings,
  sequenceLogprobs,
} from "../../lib/train/actor.ts";
import type { MicroBatchPlan } from "../../lib/train/micro_batches.ts";
import { AdamW } from "../../lib/train/optimizer.ts";
import { maxAbs, Rng } from "../kernels/_helpers.ts";
import { randomizeParams, tinyConfig } from "../model/_qwen2_reference.ts";

const LENS = [5, 3, 9, 2, 6, 4, 7, 1, 2];
const identity = (n: number) => Array.from({ length: n }, (_, i) => i);

function actorModel(k: Kernels, seed: string): Qwen2Model {
  const model = new Qwen2Model(k, tinyConfig());
  randomizeParams(model, seed);
  return model;
}

function settings(over: Partial<PpoSettings> = {}): PpoSettings {
  return {
    clipLow: 0.2,
    clipHigh: 0.2,
    dualClip: 0,
    klLossCoef: 0,
    entropyCoef: 0,
    aggMode: "seq-mean-token-mean",
    ppoEpochs: 1,
    miniBatchSize: 64,
    plan: { maxTokens: 1000 },
    maxGradNorm: 1e9,
    ...over,
  };
}

/** Samples whose first 2 tokens are the prompt; the last one has no response token. */
function samples(model: Qwen2Model, rng: Rng, offPolicy = 0.1): ActorSample[] {
  const seqs = LENS.map((n) => rng.ints(n, 0, model.config.vocab_size - 1));
  const old = sequenceLogprobs(model, seqs, { maxTokens: 1000 });
  return seqs.map((tokens, i) => {
    const n = tokens.length;
    const responseMask = Uint8Array.from(
      { length: n },
      (_, t) => (t >= Math.min(2, n - 1) ? 1 : 0),
    );
    if (i === seqs.length - 1) responseMask.fill(0);
    return {
      tokens,
      responseMask,
      advantages: Float32Array.from({ length: n }, (_, t) => (responseMask[t] ? rng.normal() : 0)),
      // off-policy by a little, so the ratio and the clip take part
      oldLogprobs: Float32Array.from(old[i]!, (v) => v + rng.normal() * offPolicy),
    };
  });
}

Deno.test("sequenceLogprobs: entry t is log p(token t | tokens < t), whatever the micro-batching", () => {
  using k = Kernels.open({ threads: 2 });
  using model = actorModel(k, "actor logprobs");
  const rng = new Rng("actor logprobs");
  const seqs = LENS.map((n) => rng.ints(n, 0, model.config.vocab_size - 1));
  const all = sequenceLogprobs(model, seqs, { maxTokens: 1000 });
  const split = sequenceLogprobs(model, seqs, { batchSize: 1 });
  seqs.forEach((s, i) => {
    assert.equal(all[i]![0], 0);
    const targets = Int32Array.from(s, (_, t) => s[t + 1] ?? 0);
    const { logp } = model.forward({
      tokens: s,
      positions: Int32Array.from(s, (_, t) => t),
      cuSeqlens: Int32Array.of(0, s.length),
      targets,
    });
    const ref = logp.toArray();
    for (let t = 1; t < s.length; t++) {
      assert.ok(Math.abs(all[i]![t]! - ref[t - 1]!) < 1e-5, `seq ${i} token ${t}`);
      assert.ok(Math.abs(split[i]![t]! - ref[t - 1]!) < 1e-5, `seq ${i} token ${t} (split)`);
    }
  });
});

Deno.test("actor: micro-batch splits accumulate the one-batch gradient, in every loss_agg_mode", () => {
  using k = Kernels.open({ threads: 2 });
  using model = actorModel(k, "actor accumulation");
  using opt = new AdamW(model);
  // far enough off-policy that some ratios leave the clip range, and some the dual clip's
  const data = samples(model, new Rng("actor accumulation"), 0.6);
  const plans: MicroBatchPlan[] = [{ maxTokens: 10 }, { maxTokens: 7 }, { batchSize: 3 }, {
    batchSize: 1,
  }];
  const ratios = ["actor/clipfrac", "actor/dual_clipfrac", "actor/approxkl", "actor/ratio_mean"];
  for (const aggMode of LOSS_AGG_MODES) {
    const run = (plan: MicroBatchPlan) => {
      const trainer = new ActorTrainer(model, opt, settings({ aggMode, plan, dualClip: 1.5 }));
      const m = trainer.train(data, 0, identity); // lr 0: the gradient stays in model.grads
      return { m, grads: model.grads.toArray() };
    };
    const one = run({ maxTokens: 1000 });
    assert.equal(one.m["actor/micro_batches"], 1);
    assert.ok(maxAbs(one.grads) > 0);
    for (const key of ratios) assert.ok(one.m[key]! > 0, `${aggMode} ${key} is ${one.m[key]}`);
    assert.ok(one.m["actor/clipfrac"]! < 1);
    for (const plan of plans) {
      const split = run(plan);
      const what = `${aggMode} ${JSON.stringify(plan)}`;
      assert.ok(split.m["actor/micro_batches"]! >= 3, what);
      let diff = 0;
      for (let i = 0; i < one.grads.length; i++) {
        diff = Math.max(diff, Math.abs(split.grads[i]! - one.grads[i]!));
      }
      // float32 rounding only; a wrong weighting is off by far more
      assert.ok(
        diff <= 1e-5 * maxAbs(one.grads),
        `${what}: gradients differ by ${diff} of ${maxAbs(one.grads)}`,
      );
      // the token ratios are the mini-batch's token means, not sums or sequence-weighted means
      for (const key of ["actor/pg_loss", "actor/total_loss", "actor/grad_norm", ...ratios]) {
        const a = split.m[key]!, b = one.m[key]!;
        assert.ok(
          Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(b)),
          `${what} ${key}: ${a} vs ${b}`,
        );
      }
    }
  }
});

Deno.test("actor: ratio_type segment reaches the loss (another gradient), and micro-batching stays exact", () => {
  using k = Kernels.open({ threads: 2 });
  using model = actorModel(k, "actor segment");
  using opt = new AdamW(model);
  const data = samples(model, new Rng("actor segment"));
  const run = (ratioType: "token" | "segment", plan: MicroBatchPlan) => {
    const trainer = new ActorTrainer(model, opt, settings({ ratioType, plan }));
    trainer.train(data, 0, identity);
    return model.grads.toArray();
  };
  const token = run("token", { maxTokens: 1000 });
  const one = run("segment", { maxTokens: 1000 });
  let apart = 0;
  for (let i = 0; i < one.length; i++) apart = Math.max(apart, Math.abs(one[i]! - token[i]!));
  assert.ok(apart > 1e-3 * maxAbs(token), `segment vs token ratios: ${apart}`);
  for (const plan of [{ maxTokens: 7 }, { batchSize: 1 }]) {
    const split = run("segment", plan);
    let diff = 0;
    for (let i = 0; i < one.length; i++) diff = Math.max(diff, Math.abs(split[i]! - one[i]!));
    assert.ok(diff <= 1e-5 * maxAbs(one), `${JSON.stringify(plan)}: ${diff}`);
  }
});

Deno.test("actor: a mini-batch whose gradient norm is not finite skips its step and says so", () => {
  using k = Kernels.open({ threads: 2 });
  using model = actorModel(k, "actor skipped");
  using opt = new AdamW(model);
  const rng = new Rng("actor skipped");
  const data = samples(model, rng);
  const bad = data.map((s, i) => i === 0 ? { ...s, advantages: s.advantages.map(() => NaN) } : s);
  // two mini-batches: the first holds the NaN advantages, the second is finite
  const trainer = new ActorTrainer(model, opt, settings({ miniBatchSize: 5 }));
  const before = model.params.toArray();
  const m = trainer.train(bad, 1e-3, identity);
  assert.equal(m["actor/num_updates"], 2);
  assert.equal(m["actor/skipped_updates"], 1);
  assert.ok(model.params.toArray().some((v, i) => v !== before[i]), "the finite step was taken");
  assert.ok(model.params.toArray().every(Number.isFinite));
  const clean = new ActorTrainer(model, opt, settings({ miniBatchSize: 5 })).train(
    data,
    0,
    identity,
  );
  assert.equal(clean["actor/skipped_updates"], 0);
});

Deno.test("actor: seq-mean-token-sum-norm divides by sumNormLength (ROLL's sequence_length - 1) where given, else the longest row", () => {
  using k = Kernels.open({ threads: 2 });
  using model = actorModel(k, "actor sum norm");
  using opt = new AdamW(model);
  const data = samples(model, new Rng("actor sum norm"));
  const run = (over: Partial<PpoSettings>) => {
    const trainer = new ActorTrainer(
      model,
      opt,
      settings({ aggMode: "seq-mean-token-sum-norm", plan: { maxTokens: 10 }, ...over }),
    );
    const m = trainer.train(data, 0, identity);
    return { loss: m["actor/pg_loss"]!, grads: model.grads.toArray() };
  };
  const longest = Math.max(...LENS); // the default divisor: the mini-batch's longest row
  const plain = run({});
  const padded = run({ sumNormLength: 1023 });
  const factor = longest / 1023;
  assert.ok(Math.abs(padded.loss - plain.loss * factor) <= 1e-6 * Math.abs(plain.loss));
  let diff = 0;
  for (let i = 0; i < plain.grads.length; i++) {
    diff = Math.max(diff, Math.abs(padded.grads[i]! - plain.grads[i]! * factor));
  }
  assert.ok(maxAbs(padded.grads) > 0 && diff <= 1e-5 * maxAbs(padded.grads), `${diff}`);
  // the other modes do not read it
  const mean = run({ aggMode: "token-mean" }).grads;
  const meanPadded = run({ aggMode: "token-mean", sumNormLength: 1023 }).grads;
  assert.deepEqual(meanPadded, mean);
});
