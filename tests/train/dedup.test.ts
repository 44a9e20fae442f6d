// Merging duplicate training samples: a weighted sample trains exactly like its copies.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import {
  type ActorSample,
  ActorTrainer,
  type PpoSettings,
  sequenceLogprobs,
} from "../../lib/train/actor.ts";
import { distinctSequences, mergeDuplicateSamples, mergesExactly } from "../../lib/train/dedup.ts";
import { splitMiniBatches } from "../../lib/train/micro_batches.ts";
import { AdamW } from "../../lib/train/optimizer.ts";
import { maxAbs, Rng } from "../kernels/_helpers.ts";
import { randomizeParams, tinyConfig } from "../model/_qwen2_reference.ts";

const sample = (tokens: number[], a: number, weight?: number): ActorSample => ({
  tokens: Int32Array.from(tokens),
  responseMask: Uint8Array.from(tokens, (_, i) => (i >= 2 ? 1 : 0)),
  advantages: Float32Array.from(tokens, (_, i) => (i >= 2 ? a : 0)),
  oldLogprobs: new Float32Array(tokens.length),
  ...(weight !== undefined && { weight }),
});

Deno.test("mergeDuplicateSamples: same tokens and advantage signs merge, weighted mean advantage", () => {
  const { samples, groups } = mergeDuplicateSamples([
    sample([1, 2, 3], 1),
    sample([1, 2, 4], 1),
    sample([1, 2, 3], 0.5, 2),
    sample([1, 2, 3], -1),
    sample([1, 2, 3], -3),
  ]);
  assert.deepEqual(groups, [[0, 2], [1], [3, 4]]);
  assert.equal(samples[0]!.weight, 3);
  assert.ok(Math.abs(samples[0]!.advantages[2]! - 2 / 3) < 1e-6); // (1 + 2 * 0.5) / 3
  assert.equal(samples[0]!.advantages[0], 0);
  assert.equal(samples[1]!.weight, undefined); // a singleton is passed through
  assert.equal(samples[2]!.weight, 2);
  assert.equal(samples[2]!.advantages[2], -2);
  // with the distinct-sequence index at hand, the same groups
  const again = mergeDuplicateSamples(
    [sample([1, 2, 3], 1), sample([1, 2, 4], 1), sample([1, 2, 3], 0.5, 2)],
    [0, 1, 0],
  );
  assert.deepEqual(again.groups, [[0, 2], [1]]);
  assert.ok(mergesExactly("token-mean") && mergesExactly("seq-mean-token-sum-norm"));
  assert.ok(!mergesExactly("seq-mean-token-mean") && !mergesExactly("seq-mean-token-sum"));
});

Deno.test("distinctSequences: one entry per distinct sequence, and each input's index", () => {
  const a = Int32Array.of(1, 2), b = Int32Array.of(1, 3);
  const { distinct, index } = distinctSequences([a, b, Int32Array.of(1, 2), b]);
  assert.deepEqual(distinct, [a, b]);
  assert.deepEqual(index, [0, 1, 0, 1]);
});

Deno.test("splitMiniBatches: mini-batches are cut by sample weight", () => {
  const samples = [2, 1, 1, 3, 1].map((weight) => ({ tokens: Int32Array.of(1, 2), weight }));
  const minis = splitMiniBatches(samples, 2, { batchSize: 8 });
  assert.deepEqual(minis.map((m) => m.indices), [[0], [1, 2], [3], [4]]);
  assert.throws(
    () => splitMiniBatches([{ tokens: Int32Array.of(1), weight: 0 }], 2, { batchSize: 8 }),
    /weight must be a positive number/,
  );
});

Deno.test("actor: merged duplicates give the copies' loss and gradient (clip, KL, entropy on)", () => {
  using k = Kernels.open({ threads: 2 });
  using model = new Qwen2Model(k, tinyConfig());
  randomizeParams(model, "dedup");
  using opt = new AdamW(model);
  const rng = new Rng("dedup");
  const seqs = [7, 5, 9].map((n) => rng.ints(n, 0, model.config.vocab_size - 1));
  const old = sequenceLogprobs(model, seqs, { maxTokens: 1000 });
  // off-policy by a little, so the ratio and the clip take part; one set per sequence
  const oldOf = old.map((o) => Float32Array.from(o, (v) => v + rng.normal() * 0.2));
  const copies: ActorSample[] = [];
  for (const [j, adv] of [[0, 1.5], [1, -0.7], [0, 0.3], [2, 2], [0, -1], [1, -0.1], [0, 0.8]]) {
    const tokens = seqs[j as number]!;
    const responseMask = Uint8Array.from(tokens, (_, t) => (t >= 3 ? 1 : 0));
    copies.push({
      tokens,
      responseMask,
      advantages: Float32Array.from(tokens, (_, t) => (responseMask[t] ? (adv as number) : 0)),
      oldLogprobs: oldOf[j as number]!,
      refLogprobs: old[j as number]!,
    });
  }
  const merged = mergeDuplicateSamples(copies).samples;
  assert.equal(merged.length, 4); // seq 0 by sign into two (3 and 1 copies), seq 1 (2), seq 2 (1)
  for (const aggMode of ["token-mean", "seq-mean-token-sum-norm"] as const) {
    const settings: PpoSettings = {
      clipLow: 0.1,
      clipHigh: 0.1,
      dualClip: 3,
      klLossCoef: 0.3,
      entropyCoef: 0.01,
      aggMode,
      ppoEpochs: 1,
      miniBatchSize: 64,
      plan: { maxTokens: 1000 },
      maxGradNorm: 1e9,
    };
    const run = (data: ActorSample[]) => {
      const m = new ActorTrainer(model, opt, settings).train(data, 0, (n) => [...Array(n).keys()]);
      return { m, grads: model.grads.toArray() };
    };
    const a = run(copies), b = run(merged);
    assert.ok(a.m["actor/clipfrac"]! > 0, "the clip must take part");
    let diff = 0;
    for (let i = 0; i < a.grads.length; i++) {
      diff = Math.max(diff, Math.abs(a.grads[i]! - b.grads[i]!));
    }
    assert.ok(diff <= 1e-5 * maxAbs(a.grads), `${aggMode}: gradients differ by ${diff}`);
    for (const key of ["actor/pg_loss", "actor/kl_loss", "actor/entropy_loss", "actor/clipfrac"]) {
      assert.ok(
        Math.abs(a.m[key]! - b.m[key]!) <= 1e-5,
        `${aggMode} ${key}: ${a.m[key]} vs ${b.m[key]}`,
      );
    }
  }
  // in a sequence mean a weighted sample would count once: refused, not trained wrong
  for (const aggMode of ["seq-mean-token-mean", "seq-mean-token-sum"] as const) {
    const trainer = new ActorTrainer(model, opt, {
      clipLow: 0.2,
      clipHigh: 0.2,
      dualClip: 0,
      klLossCoef: 0,
      entropyCoef: 0,
      aggMode,
      ppoEpochs: 1,
      miniBatchSize: 64,
      plan: { maxTokens: 1000 },
      maxGradNorm: 1e9,
    });
    assert.throws(
      () => trainer.train(merged, 0, (n) => [...Array(n).keys()]),
      new RegExp(`samples\\[0\\]\\.weight is 3: .* not ${aggMode} \\(pass each copy`),
    );
  }
});
