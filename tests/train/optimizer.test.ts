// AdamW against a float64 transcription of torch.optim.AdamW, the weight-decay
// exemptions (biases, norm weights), torch-style gradient clipping, and an
// exact save -> load -> continue.
import assert from "node:assert/strict";
import { Kernels, Tensor } from "../../ffi/mod.ts";
import { BufferLayout } from "../../lib/model/param_layout.ts";
import { CheckpointError, SafetensorsFile } from "../../lib/model/safetensors.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { AdamW, adamwOptionsOf, OPTIMIZER_FILES } from "../../lib/train/optimizer.ts";
import { loadConfig } from "../../lib/config/load_config.ts";
import { assertClose, Rng } from "../kernels/_helpers.ts";
import { randomizeParams, tinyConfig } from "../model/_qwen2_reference.ts";

/** torch.optim.AdamW, one step, in float64 (p, m, v updated in place). */
function refAdamW(
  p: Float64Array,
  m: Float64Array,
  v: Float64Array,
  g: ArrayLike<number>,
  o: { lr: number; step: number; wd: number; b1?: number; b2?: number; eps?: number },
): void {
  const b1 = o.b1 ?? 0.9, b2 = o.b2 ?? 0.999, eps = o.eps ?? 1e-8;
  const c1 = 1 - b1 ** o.step, c2 = 1 - b2 ** o.step;
  for (let i = 0; i < p.length; i++) {
    p[i]! *= 1 - o.lr * o.wd;
    m[i] = b1 * m[i]! + (1 - b1) * g[i]!;
    v[i] = b2 * v[i]! + (1 - b2) * g[i]! * g[i]!;
    p[i]! -= (o.lr / c1) * m[i]! / (Math.sqrt(v[i]!) / Math.sqrt(c2) + eps);
  }
}

Deno.test("AdamW: three steps match a float64 torch.optim.AdamW", () => {
  using k = Kernels.open({ threads: 1 });
  const rng = new Rng("adamw reference");
  const n = 9;
  const p0 = rng.randn(n, 1);
  using params = Tensor.from(k, p0);
  using grads = new Tensor(k, [n], "f32");
  using opt = new AdamW({ params, grads }, { weightDecay: 0.1, beta2: 0.99, eps: 1e-6 });
  const p = Float64Array.from(p0), m = new Float64Array(n), v = new Float64Array(n);
  const lrs = [1e-2, 5e-3, 2e-2];
  for (let s = 0; s < lrs.length; s++) {
    const g = rng.randn(n, 0.5);
    g[0] = 0; // a zero gradient: only decay moves it
    grads.view().set(g);
    opt.step(lrs[s]!);
    refAdamW(p, m, v, g, { lr: lrs[s]!, step: s + 1, wd: 0.1, b2: 0.99, eps: 1e-6 });
    assertClose(params.toArray(), p, `params after step ${s + 1}`, { rtol: 1e-6, atol: 1e-7 });
    assertClose(opt.m.toArray(), m, `m after step ${s + 1}`, { rtol: 1e-6, atol: 1e-9 });
    assertClose(opt.v.toArray(), v, `v after step ${s + 1}`, { rtol: 1e-5, atol: 1e-12 });
  }
  assert.equal(opt.stepCount, 3);
  // Adam's first step moves every parameter by about lr, whatever the gradient's size
  using q = Tensor.from(k, new Float32Array([0, 0, 0]));
  using gq = Tensor.from(k, new Float32Array([1e-3, -50, 2]));
  using o2 = new AdamW({ params: q, grads: gq });
  o2.step(0.1);
  assertClose(q.toArray(), [-0.1, 0.1, -0.1], "first step", { rtol: 1e-4 });
});

Deno.test("AdamW: weight decay skips biases and norm weights (spans over a layout)", () => {
  using k = Kernels.open({ threads: 1 });
  const layout = new BufferLayout();
  layout.add("a.weight", [5]);
  layout.add("a.bias", [3]);
  layout.add("x.norm.weight", [4]);
  layout.add("b.weight", [4, 5]);
  using params = new Tensor(k, [layout.total], "f32");
  using grads = new Tensor(k, [layout.total], "f32");
  const init = new Float32Array(layout.total);
  for (const r of layout.regions) init.fill(2, r.offset, r.offset + r.size);
  params.view().set(init);
  using opt = new AdamW({ params, grads, layout }, { weightDecay: 0.5 });
  assert.deepEqual(opt.spans, [[0, 16, true], [16, 48, false], [48, 80, true]]);
  opt.step(0.1); // zero gradients: only the decay p -= lr * wd * p acts
  const after = params.toArray();
  for (const r of layout.regions) {
    const want = r.name.endsWith(".bias") || r.name.endsWith("norm.weight") ? 2 : 2 * (1 - 0.05);
    for (let i = 0; i < r.size; i++) {
      assert.ok(Math.abs(after[r.offset + i]! - want) < 1e-6, `${r.name}[${i}] = ${after[i]}`);
    }
  }
  // padding between regions stays 0
  assert.equal(after[5], 0);
  assert.equal(after[70], 0);
  // without decay, one span covers everything
  using plain = new AdamW({ params, grads, layout });
  assert.deepEqual(plain.spans, [[0, 80, false]]);
  // a custom exemption
  using custom = new AdamW({ params, grads, layout }, {
    weightDecay: 0.1,
    noDecay: (name) => name.startsWith("b."),
  });
  assert.deepEqual(custom.spans, [[0, 48, true], [48, 80, false]]);
});

Deno.test("AdamW on a Qwen2 model: matrices decay, biases and norms do not", () => {
  using k = Kernels.open({ threads: 1 });
  using model = new Qwen2Model(k, tinyConfig({ tie_word_embeddings: true }));
  randomizeParams(model, "adamw decay");
  const before = new Map(model.exportNamed().map((p) => [p.name, p.data.slice()]));
  model.zeroGrad();
  using opt = new AdamW(model, { weightDecay: 0.25 });
  opt.step(0.2);
  for (const { name, data } of model.exportNamed()) {
    const exempt = name.endsWith(".bias") || name.endsWith("norm.weight");
    const want = Float32Array.from(before.get(name)!, (x) => exempt ? x : x * (1 - 0.05));
    assertClose(data, want, name, { rtol: 1e-6 });
  }
  assert.ok(opt.spans.some(([, , decay]) => !decay) && opt.spans.some(([, , decay]) => decay));
});

Deno.test("clipGradNorm: returns the pre-clip norm and scales as torch does", () => {
  using k = Kernels.open({ threads: 1 });
  using params = new Tensor(k, [4], "f32");
  using grads = Tensor.from(k, new Float32Array([3, 0, -4, 0]));
  using opt = new AdamW({ params, grads });
  assert.equal(opt.gradNorm(), 5);
  assert.equal(opt.clipGradNorm(10), 5);
  assert.deepEqual([...grads.toArray()], [3, 0, -4, 0], "below the limit: unchanged");
  assert.equal(opt.clipGradNorm(1), 5);
  const f = 1 / (5 + 1e-6);
  assertClose(grads.toArray(), [3 * f, 0, -4 * f, 0], "clipped", { rtol: 1e-6 });
  assert.ok(Math.abs(opt.gradNorm() - 1) < 1e-6);
  grads.view()[1] = NaN;
  assert.ok(Number.isNaN(opt.clipGradNorm(1)), "a NaN norm is reported");
  assert.ok(Math.abs(grads.view()[0]! - 3 * f) < 1e-6, "and the gradients are left alone");
  assert.throws(() => opt.clipGradNorm(0), /maxNorm must be a finite positive number/);
});

/** Random values in the layout's regions, zero in the alignment padding (as a model keeps it). */
function regionsRandn(layout: BufferLayout, seed: string, scale: number): Float32Array {
  const rng = new Rng(seed);
  const out = new Float32Array(layout.total);
  for (const r of layout.regions) out.set(rng.randn(r.size, scale), r.offset);
  return out;
}

/** Gradients of step s (the same stream for both runs). */
function gradAt(s: number, layout: BufferLayout): Float32Array {
  return regionsRandn(layout, `adamw state grads ${s}`, 0.3);
}

Deno.test("AdamW state: save -> load -> continue equals an uninterrupted run, bit for bit", async () => {
  using k = Kernels.open({ threads: 1 });
  const layout = new BufferLayout();
  layout.add("w.weight", [6, 7]);
  layout.add("w.bias", [6]);
  layout.add("n.norm.weight", [7]);
  const init = regionsRandn(layout, "adamw state init", 1);
  const opts = { weightDecay: 0.01, beta1: 0.8 };
  const lr = (s: number) => 1e-2 / (s + 1);
  const total = 6, cut = 3;

  using pa = Tensor.from(k, init);
  using ga = new Tensor(k, [layout.total], "f32");
  using a = new AdamW({ params: pa, grads: ga, layout }, opts);
  for (let s = 0; s < total; s++) {
    ga.view().set(gradAt(s, layout));
    a.step(lr(s));
  }

  using pb = Tensor.from(k, init);
  using gb = new Tensor(k, [layout.total], "f32");
  const dir = await Deno.makeTempDir({ prefix: "agentrl_adamw_" });
  try {
    {
      using b = new AdamW({ params: pb, grads: gb, layout }, opts);
      for (let s = 0; s < cut; s++) {
        gb.view().set(gradAt(s, layout));
        b.step(lr(s));
      }
      await b.save(dir);
    }
    using f = SafetensorsFile.open(`${dir}/${OPTIMIZER_FILES.tensors}`);
    assert.deepEqual(f.names().sort(), [
      "n.norm.weight.exp_avg",
      "n.norm.weight.exp_avg_sq",
      "w.bias.exp_avg",
      "w.bias.exp_avg_sq",
      "w.weight.exp_avg",
      "w.weight.exp_avg_sq",
    ]);
    const scalars = JSON.parse(await Deno.readTextFile(`${dir}/${OPTIMIZER_FILES.scalars}`));
    assert.equal(scalars.step, cut);

    using c = new AdamW({ params: pb, grads: gb, layout }, opts);
    c.load(dir);
    assert.equal(c.stepCount, cut);
    // a damaged scalars file is a CheckpointError naming it, and changes nothing
    const scalarsPath = `${dir}/${OPTIMIZER_FILES.scalars}`;
    const good = await Deno.readTextFile(scalarsPath);
    for (const [text, why] of [["{", /is not valid JSON/], ['{"step": -1}', /'step' must be/]]) {
      await Deno.writeTextFile(scalarsPath, text as string);
      using damaged = new AdamW({ params: pb, grads: gb, layout }, opts);
      assert.throws(() => damaged.load(dir), (e: Error) => {
        assert.ok(e instanceof CheckpointError, String(e));
        assert.match(e.message, why as RegExp);
        assert.match(e.message, /optimizer\.json/);
        return true;
      });
      assert.equal(damaged.stepCount, 0);
    }
    await Deno.writeTextFile(scalarsPath, good);
    for (let s = cut; s < total; s++) {
      gb.view().set(gradAt(s, layout));
      c.step(lr(s));
    }
    assert.deepEqual(pb.toArray(), pa.toArray());
    assert.deepEqual(c.m.toArray(), a.m.toArray());
    assert.deepEqual(c.v.toArray(), a.v.toArray());

    // in memory too
    using d = new AdamW({ params: pb, grads: gb, layout }, opts);
    d.loadState(a.state());
    assert.equal(d.stepCount, total);
    assert.deepEqual(d.v.toArray(), a.v.toArray());

    // a layout without those regions cannot load the file
    const other = new BufferLayout();
    other.add("w.weight", [6, 7]);
    other.add("w.bias", [5]);
    using e = new AdamW({ params: pb, grads: gb, layout: other });
    assert.throws(() => e.load(dir), /'w.bias.exp_avg' has 6 values; the parameter has 5/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AdamW refuses mismatched buffers and bad settings", () => {
  using k = Kernels.open({ threads: 1 });
  using p = new Tensor(k, [4], "f32");
  using g = new Tensor(k, [5], "f32");
  assert.throws(() => new AdamW({ params: p, grads: g }), /grads as an f32 Tensor of params' 4/);
  assert.throws(
    () => new AdamW({ params: p, grads: p }, { beta1: 1 }),
    /beta1 must be in \[0, 1\)/,
  );
  using ok = new AdamW({ params: p, grads: p });
  assert.throws(() => ok.step(-1), /lr must be a finite number >= 0/);
  assert.throws(
    () => ok.loadState({ step: 1, m: new Float32Array(3), v: new Float32Array(4) }),
    /m must be a Float32Array of 4 values/,
  );
});

Deno.test("adamwOptionsOf: a config's training_args reach the optimizer", async () => {
  const { config } = await loadConfig({
    overrides: [
      "actor_train.training_args.adam_epsilon=1.0e-6",
      "actor_train.training_args.adam_beta2=0.99",
      "actor_train.training_args.weight_decay=0.01",
    ],
  });
  assert.deepStrictEqual(adamwOptionsOf(config.actor_train.training_args), {
    weightDecay: 0.01,
    beta1: 0.9,
    beta2: 0.99,
    eps: 1e-6,
  });
  using k = Kernels.open({ threads: 1 });
  using params = Tensor.from(k, new Float32Array([1]));
  using grads = Tensor.from(k, new Float32Array([1]));
  const opt = new AdamW({ params, grads }, adamwOptionsOf(config.actor_train.training_args));
  assert.equal(opt.eps, 1e-6);
  assert.equal(opt.beta2, 0.99);
  assert.deepStrictEqual(adamwOptionsOf({}), { weightDecay: 0 });
});
