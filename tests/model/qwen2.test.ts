// The Qwen2 model: parameter layout and initialisation, named loading and
// export, the packed forward pass against a float64 reference (log-probs,
// entropies, values, logits), packed against per-sequence runs, workspace
// reuse across batch shapes, one flat AdamW step over params and grads, and
// argument errors.
//
// Forward tolerances: the float32 kernels against the float64 reference,
// through two layers of O(1) activations: log-probs and logits 2e-5 (1 + |x|),
// entropies 2e-5 (1 + |x|), values 2e-5 (1 + |x|).
import assert from "node:assert/strict";
import { adamw, Kernels, Tensor } from "../../ffi/mod.ts";
import { qwen2ParamLayout } from "../../lib/model/param_layout.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { assertClose, maxAbs, Rng } from "../kernels/_helpers.ts";
import {
  type Batch,
  LLAMA3_SMALL,
  randomBatch,
  randomizeParams,
  refLogits,
  refLogprobs,
  refParams,
  refValues,
  tinyConfig,
  YARN_SMALL,
} from "./_qwen2_reference.ts";

function open(): Kernels {
  return Kernels.open({ threads: 2 });
}

/** Tolerance 2e-5 (1 + |expected|) per element. */
function close(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  assertClose(actual, expected, what, { atol: 2e-5, rtol: 2e-5 });
}

Deno.test("qwen2 layout: HF names and [out, in] shapes in state_dict order, tied and untied, Qwen3's q/k norms", () => {
  const untied = qwen2ParamLayout(tinyConfig());
  const names = untied.regions.map((r) => r.name);
  assert.deepEqual(names.slice(0, 13), [
    "model.embed_tokens.weight",
    "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.q_proj.bias",
    "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.self_attn.k_proj.bias",
    "model.layers.0.self_attn.v_proj.weight",
    "model.layers.0.self_attn.v_proj.bias",
    "model.layers.0.self_attn.o_proj.weight",
    "model.layers.0.mlp.gate_proj.weight",
    "model.layers.0.mlp.up_proj.weight",
    "model.layers.0.mlp.down_proj.weight",
    "model.layers.0.input_layernorm.weight",
    "model.layers.0.post_attention_layernorm.weight",
  ]);
  assert.deepEqual(names.slice(-2), ["model.norm.weight", "lm_head.weight"]);
  assert.equal(names.length, 1 + 2 * 12 + 2);
  const shape = (n: string) => untied.get(n).shape;
  assert.deepEqual(shape("model.embed_tokens.weight"), [48, 32]);
  assert.deepEqual(shape("model.layers.1.self_attn.q_proj.weight"), [32, 32]);
  assert.deepEqual(shape("model.layers.1.self_attn.k_proj.weight"), [16, 32]);
  assert.deepEqual(shape("model.layers.1.self_attn.v_proj.bias"), [16]);
  assert.deepEqual(shape("model.layers.1.self_attn.o_proj.weight"), [32, 32]);
  assert.deepEqual(shape("model.layers.1.mlp.gate_proj.weight"), [48, 32]);
  assert.deepEqual(shape("model.layers.1.mlp.down_proj.weight"), [32, 48]);
  assert.deepEqual(shape("lm_head.weight"), [48, 32]);
  // regions are 64-byte aligned and do not overlap
  let end = 0;
  for (const r of untied.regions) {
    assert.equal(r.offset % 16, 0, `${r.name} is not 64-byte aligned`);
    assert.ok(r.offset >= end, `${r.name} overlaps the region before it`);
    end = r.offset + r.size;
  }

  const tied = qwen2ParamLayout(tinyConfig({ tie_word_embeddings: true, attention_bias: false }), {
    valueHead: true,
  });
  const tnames = tied.regions.map((r) => r.name);
  assert.ok(!tnames.includes("lm_head.weight"));
  assert.ok(!tnames.some((n) => n.endsWith("_proj.bias")));
  assert.deepEqual(tnames.slice(-3), ["model.norm.weight", "value_head.weight", "value_head.bias"]);
  assert.deepEqual(tied.get("value_head.weight").shape, [32]);
  assert.deepEqual(tied.get("value_head.bias").shape, [1]);

  // Qwen2.5-0.5B's parameter count (tied): 494,032,768.
  const qwen05 = qwen2ParamLayout(tinyConfig({
    vocab_size: 151936,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    head_dim: 64,
    tie_word_embeddings: true,
  }));
  assert.equal(qwen05.elements, 494_032_768);

  // Qwen3: per-head q/k norm weights after o_proj, as Qwen3Attention registers them.
  const qwen3 = qwen2ParamLayout(tinyConfig({ model_type: "qwen3", attention_bias: false }));
  assert.deepEqual(qwen3.regions.map((r) => r.name).slice(1, 8), [
    "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.self_attn.v_proj.weight",
    "model.layers.0.self_attn.o_proj.weight",
    "model.layers.0.self_attn.q_norm.weight",
    "model.layers.0.self_attn.k_norm.weight",
    "model.layers.0.mlp.gate_proj.weight",
  ]);
  assert.deepEqual(qwen3.get("model.layers.1.self_attn.k_norm.weight").shape, [8]);
  // Qwen3-0.6B's parameter count (tied, head_dim 128 with hidden 1024): 596,049,920.
  const qwen3_06 = qwen2ParamLayout(tinyConfig({
    model_type: "qwen3",
    attention_bias: false,
    vocab_size: 151936,
    hidden_size: 1024,
    intermediate_size: 3072,
    num_hidden_layers: 28,
    num_attention_heads: 16,
    num_key_value_heads: 8,
    head_dim: 128,
    tie_word_embeddings: true,
  }));
  assert.equal(qwen3_06.elements, 596_049_920);
});

Deno.test("qwen2 init: seeded normal(0, 0.02) matrices, ones for norms, zeros for biases", () => {
  using k = open();
  const cfg = tinyConfig({ vocab_size: 256, hidden_size: 64, head_dim: 16 });
  using a = new Qwen2Model(k, cfg, { seed: 7 });
  using b = new Qwen2Model(k, cfg, { seed: 7 });
  using c = new Qwen2Model(k, cfg, { seed: 8 });
  assert.deepEqual(a.params.toArray(), b.params.toArray());
  assert.notDeepEqual(a.params.toArray(), c.params.toArray());
  for (const p of a.exportNamed()) {
    if (p.name.endsWith("norm.weight")) assert.ok(p.data.every((x) => x === 1), p.name);
    else if (p.name.endsWith(".bias")) assert.ok(p.data.every((x) => x === 0), p.name);
    else {
      let s = 0, s2 = 0;
      for (const x of p.data) (s += x), (s2 += x * x);
      const mean = s / p.data.length, std = Math.sqrt(s2 / p.data.length - mean * mean);
      const se = 0.02 / Math.sqrt(p.data.length);
      assert.ok(Math.abs(mean) < 5 * se, `${p.name}: mean ${mean}`);
      assert.ok(
        Math.abs(std - 0.02) < 0.02 * 6 / Math.sqrt(2 * p.data.length),
        `${p.name}: std ${std}`,
      );
    }
  }
  // padding between regions stays zero; gradients start at zero
  const all = a.params.view();
  let prevEnd = 0;
  for (const r of a.layout.regions) {
    for (let i = prevEnd; i < r.offset; i++) assert.equal(all[i], 0);
    prevEnd = r.offset + r.size;
  }
  assert.equal(maxAbs(a.grads.view()), 0);
  using none = new Qwen2Model(k, cfg, { init: "none" });
  assert.equal(maxAbs(none.params.view()), 0);
});

Deno.test("qwen2 loadNamed / exportNamed round trip; views are kernel arguments over the flat buffers", () => {
  using k = open();
  const cfg = tinyConfig();
  using a = new Qwen2Model(k, cfg, { seed: 1 });
  randomizeParams(a, "round trip");
  using b = new Qwen2Model(k, cfg, { init: "none" });
  const byName = new Map(a.exportNamed().map((p) => [p.name, p]));
  const seen: string[] = [];
  const missing = b.loadNamed((name, shape) => {
    seen.push(name);
    assert.deepEqual(shape, byName.get(name)!.shape);
    return byName.get(name)!.data.slice();
  });
  assert.deepEqual(missing, []);
  assert.deepEqual(seen, a.names);
  assert.deepEqual(b.params.toArray(), a.params.toArray());

  // a view shares the flat buffer's memory at its region's offset
  const name = "model.layers.1.self_attn.v_proj.bias";
  const view = b.param(name);
  assert.ok(view.isView);
  assert.deepEqual(view.shape, [16]);
  view.view()[3] = 42;
  assert.equal(b.params.view()[b.layout.get(name).offset + 3], 42);
  b.grad(name).view()[3] = -1;
  assert.equal(b.grads.view()[b.layout.get(name).offset + 3], -1);
  assert.equal(b.exportNamed().find((p) => p.name === name)!.data[3], 42);

  // strict loading names what is missing; non-strict keeps the old values and reports them
  assert.throws(
    () => b.loadNamed((n) => (n === "lm_head.weight" ? undefined : byName.get(n)!.data)),
    /No data for parameters: lm_head\.weight/,
  );
  using critic = new Qwen2Model(k, cfg, { valueHead: true, seed: 3 });
  const vh = critic.param("value_head.weight").toArray();
  const left = critic.loadNamed((n) => byName.get(n)?.data, { strict: false });
  assert.deepEqual(left, ["value_head.weight", "value_head.bias"]);
  assert.deepEqual(critic.param("value_head.weight").toArray(), vh);
  assert.deepEqual(
    critic.param("model.norm.weight").toArray(),
    a.param("model.norm.weight").toArray(),
  );
  assert.throws(() => b.loadNamed(() => new Float32Array(3)), /needs 1536 float32 values, got 3/);
  assert.throws(() => b.param("lm_head.bias"), /no parameter named 'lm_head.bias'/);
});

Deno.test("qwen2 forward: log-probs, entropies and logits match the float64 reference (tied, untied, GQA, MQA, no bias, Qwen3, Llama)", () => {
  using k = open();
  const variants = [
    { what: "untied GQA", cfg: tinyConfig(), lens: [5, 3, 6], starts: [0, 3, 0], temp: 1 },
    {
      what: "tied, temperature 0.7",
      cfg: tinyConfig({ tie_word_embeddings: true, vocab_size: 64, hidden_size: 16, head_dim: 4 }),
      lens: [9, 1, 4],
      temp: 0.7,
    },
    {
      what: "MQA, no attention bias, theta 1e6",
      cfg: tinyConfig({
        num_key_value_heads: 1,
        attention_bias: false,
        rope_theta: 1e6,
        rms_norm_eps: 1e-5,
      }),
      lens: [0, 7, 2, 0],
      temp: 1.3,
    },
    {
      what: "MHA (kv heads = heads), head_dim != hidden / heads",
      cfg: tinyConfig({ num_key_value_heads: 4, head_dim: 6, intermediate_size: 40 }),
      lens: [4, 4],
      temp: 1,
    },
    {
      what: "Qwen3 (per-head q/k norms), GQA, head_dim 16 (q wider than hidden)",
      cfg: tinyConfig({ model_type: "qwen3", attention_bias: false, head_dim: 16 }),
      lens: [6, 1, 5],
      starts: [0, 2, 7],
      temp: 0.9,
    },
    {
      what: "Llama with Llama 3.1's RoPE scaling (original context 64: every band is hit)",
      cfg: tinyConfig({
        model_type: "llama",
        attention_bias: false,
        rope_scaling: LLAMA3_SMALL,
      }),
      lens: [30, 3],
      starts: [0, 20],
      temp: 1,
    },
    {
      what: "Llama with linear RoPE scaling (factor 4)",
      cfg: tinyConfig({
        model_type: "llama",
        attention_bias: false,
        rope_scaling: { rope_type: "linear", factor: 4 },
      }),
      lens: [12, 3],
      starts: [0, 20],
      temp: 1,
    },
    {
      what: "Qwen2 with YaRN (original context 64: every band is hit; attention factor 1.139)",
      cfg: tinyConfig({ rope_scaling: YARN_SMALL }),
      lens: [30, 3],
      starts: [0, 20],
      temp: 1,
    },
    {
      what: "Qwen3 with YaRN (q/k norms, then the scaled rotation)",
      cfg: tinyConfig({
        model_type: "qwen3",
        attention_bias: false,
        head_dim: 16,
        rope_scaling: { ...YARN_SMALL, attention_factor: 1.3, beta_fast: 16, truncate: false },
      }),
      lens: [9, 4],
      starts: [0, 40],
      temp: 0.8,
    },
    {
      what: "Llama (no q/k/v bias), tied",
      cfg: tinyConfig({ model_type: "llama", attention_bias: false, tie_word_embeddings: true }),
      lens: [3, 5],
      temp: 1,
    },
  ];
  for (const v of variants) {
    using model = new Qwen2Model(k, v.cfg, { seed: 2 });
    randomizeParams(model, `forward ${v.what}`);
    const batch = randomBatch(new Rng(`forward ${v.what}`), v.cfg.vocab_size, v.lens, v.starts);
    const out = model.forward(batch, { temperature: v.temp });
    const ref = refLogprobs(v.cfg, refParams(model), batch, v.temp);
    close(out.logp.toArray(), ref.logp, `${v.what}: log-probs`);
    close(out.entropy!.toArray(), ref.entropy, `${v.what}: entropies`);
    // without entropies: same log-probs, no entropy output
    const lpOnly = model.forward(batch, { temperature: v.temp, entropy: false });
    assert.equal(lpOnly.entropy, null);
    close(lpOnly.logp.toArray(), ref.logp, `${v.what}: log-probs without entropy`);

    // full logits of chosen rows of one sequence (temperature does not apply)
    const s = v.lens.findIndex((n) => n > 1);
    const a = batch.cuSeqlens[s]!, b = batch.cuSeqlens[s + 1]!;
    const tokens = batch.tokens.slice(a, b), positions = batch.positions.slice(a, b);
    const rows = new Int32Array([b - a - 1, 0, b - a - 1]);
    const logits = model.forwardLogits(tokens, positions, new Int32Array([0, b - a]), rows);
    assert.deepEqual(logits.shape, [3, v.cfg.vocab_size]);
    const z = refLogits(v.cfg, refParams(model), tokens, positions);
    const vocab = v.cfg.vocab_size;
    const expected = new Float64Array(3 * vocab);
    rows.forEach((r, i) => expected.set(z.subarray(r * vocab, (r + 1) * vocab), i * vocab));
    close(logits.toArray(), expected, `${v.what}: logits`);
  }
});

Deno.test("Llama 3.1's RoPE scaling changes the outputs (the scaled test above is not the plain one)", () => {
  using k = open();
  const cfg = tinyConfig({
    model_type: "llama",
    attention_bias: false,
    rope_scaling: LLAMA3_SMALL,
  });
  using model = new Qwen2Model(k, cfg, { seed: 2 });
  randomizeParams(model, "scaling matters");
  const batch = randomBatch(new Rng("scaling matters"), cfg.vocab_size, [30]);
  const scaled = refLogprobs(cfg, refParams(model), batch, 1).logp;
  const plain = refLogprobs({ ...cfg, rope_scaling: null }, refParams(model), batch, 1).logp;
  const diff = Math.max(...scaled.map((x, i) => Math.abs(x - plain[i]!)));
  assert.ok(diff > 0.05, `the scaling moves log-probs by ${diff} only`);
  close(model.forward(batch).logp.toArray(), scaled, "scaled log-probs");
});

Deno.test("linear RoPE scaling by 2 at positions 2p gives the unscaled model's outputs at p", () => {
  using k = open();
  const cfg = tinyConfig({ model_type: "llama", attention_bias: false });
  using plain = new Qwen2Model(k, cfg, { seed: 5 });
  randomizeParams(plain, "linear rope");
  using scaled = new Qwen2Model(k, { ...cfg, rope_scaling: { rope_type: "linear", factor: 2 } }, {
    seed: 5,
  });
  scaled.params.write(plain.params.read());
  scaled.markParamsChanged();
  const batch = randomBatch(new Rng("linear rope"), cfg.vocab_size, [9, 4]);
  const doubled = { ...batch, positions: batch.positions.map((p) => 2 * p) };
  const a = plain.forward(batch).logp.toArray();
  const b = scaled.forward(doubled).logp.toArray();
  close(b, Float64Array.from(a), "scaled at 2p vs plain at p");
  // and at p itself the scaling moves them
  const c = scaled.forward(batch).logp.toArray();
  assert.ok(
    Math.max(...c.map((x, i) => Math.abs(x - a[i]!))) > 1e-3,
    "the scaling moves log-probs",
  );
});

Deno.test("qwen2 forwardValues: the critic's values match the float64 reference", () => {
  using k = open();
  const cfg = tinyConfig();
  using critic = new Qwen2Model(k, cfg, { valueHead: true });
  randomizeParams(critic, "values");
  const batch = randomBatch(new Rng("values"), cfg.vocab_size, [3, 8, 2]);
  const values = critic.forwardValues(batch);
  assert.deepEqual(values.shape, [13]);
  close(values.toArray(), refValues(cfg, refParams(critic), batch), "values");
  using actor = new Qwen2Model(k, cfg);
  assert.throws(
    () => actor.forwardValues(batch),
    /needs a model created with \{ valueHead: true \}/,
  );
});

Deno.test("qwen2 packed forward equals each sequence run alone; workspaces follow batch shapes", () => {
  using k = open();
  const cfg = tinyConfig();
  using model = new Qwen2Model(k, cfg);
  randomizeParams(model, "packed");
  const rng = new Rng("packed");
  const lens = [7, 1, 0, 12, 4];
  const batch = randomBatch(rng, cfg.vocab_size, lens);
  const packed = model.forward(batch);
  const lp = packed.logp.toArray(), ent = packed.entropy!.toArray();
  assert.ok(maxAbs(lp) > 0);
  const cu = batch.cuSeqlens;
  for (let s = 0; s < lens.length; s++) {
    const [a, b] = [cu[s]!, cu[s + 1]!];
    if (a === b) continue;
    const alone = model.forward({
      tokens: batch.tokens.slice(a, b),
      positions: batch.positions.slice(a, b),
      cuSeqlens: new Int32Array([0, b - a]),
      targets: batch.targets.slice(a, b),
    });
    assertClose(alone.logp.toArray(), lp.slice(a, b), `sequence ${s} log-probs`, {
      atol: 2e-6,
      rtol: 2e-6,
    });
    assertClose(alone.entropy!.toArray(), ent.slice(a, b), `sequence ${s} entropies`, {
      atol: 2e-6,
      rtol: 2e-6,
    });
  }
  // back to the first shape, then a larger one: same results as before
  const again = model.forward(batch);
  assert.deepEqual(again.logp.toArray(), lp);
  const big = randomBatch(rng, cfg.vocab_size, [40, 30]);
  const bigOut = model.forward(big).logp.toArray();
  close(bigOut, refLogprobs(cfg, refParams(model), big).logp, "larger batch log-probs");
  // the earlier result's view died with the smaller buffer the workspace outgrew
  assert.equal(packed.logp.alive, false);
  assert.throws(() => packed.logp.view(), /parent of this f32 view \[24\] was freed/);
  assert.deepEqual(model.forward(batch).logp.toArray(), lp);
});

/** -mean log-prob of `batch` (the NLL a step should lower). */
function nll(model: Qwen2Model, batch: Batch): number {
  const lp = model.forward(batch, { entropy: false }).logp.view();
  return -lp.reduce((a, b) => a + b, 0) / lp.length;
}

Deno.test("qwen2 gradient layout matches parameters: one flat AdamW step lowers the loss (tied and untied)", () => {
  using k = open();
  for (const tie of [false, true]) {
    const cfg = tinyConfig({ tie_word_embeddings: tie });
    using model = new Qwen2Model(k, cfg, { seed: 5 });
    randomizeParams(model, `adamw ${tie}`);
    const batch = randomBatch(new Rng(`adamw ${tie}`), cfg.vocab_size, [6, 9]);
    const t = batch.tokens.length;
    const before = nll(model, batch);
    using m = new Tensor(k, model.params.shape, "f32");
    using v = new Tensor(k, model.params.shape, "f32");
    let loss = before;
    for (let step = 1; step <= 3; step++) {
      model.zeroGrad();
      model.forward(batch, { entropy: false });
      model.backward({ dlogp: new Float32Array(t).fill(-1 / t) });
      adamw(k, model.params, m, v, model.grads, { lr: 1e-3, step });
      const after = nll(model, batch);
      assert.ok(after < loss, `tied=${tie} step ${step}: loss ${loss} -> ${after}`);
      loss = after;
    }
    assert.ok(
      loss < before - 0.05,
      `tied=${tie}: three steps only moved the loss ${before} -> ${loss}`,
    );
    // A plain gradient step over the flat buffers, p -= h g, changes the loss by
    // -h |g|^2 to first order only if every gradient sits at its parameter's offset.
    model.zeroGrad();
    model.forward(batch, { entropy: false });
    model.backward({ dlogp: new Float32Array(t).fill(-1 / t) });
    const g = model.grads.toArray();
    const p = model.params.view();
    const base = nll(model, batch);
    let predicted = 0;
    const h = 1e-4;
    for (let i = 0; i < p.length; i++) {
      p[i]! -= h * g[i]!;
      predicted -= h * g[i]! * g[i]!;
    }
    const actual = nll(model, batch) - base;
    assert.ok(
      Math.abs(actual - predicted) < 0.05 * Math.abs(predicted),
      `tied=${tie}: a gradient step changed the loss by ${actual}, predicted ${predicted}`,
    );
  }
});

Deno.test("qwen2 backward accepts native tensors and checks what the last forward pass was", () => {
  using k = open();
  const cfg = tinyConfig();
  using model = new Qwen2Model(k, cfg, { valueHead: true });
  randomizeParams(model, "upstream");
  const batch = randomBatch(new Rng("upstream"), cfg.vocab_size, [4, 5]);
  const dl = new Rng("dl").randn(9, 1);
  assert.throws(() => model.backward({ dlogp: dl }), /needs a forward\(\) or forwardValues\(\)/);
  model.zeroGrad();
  model.forward(batch);
  model.backward({ dlogp: dl });
  const fromArray = model.grads.toArray();
  model.zeroGrad();
  model.forward(batch);
  using t = Tensor.from(k, dl);
  model.backward({ dlogp: t });
  assert.deepEqual(model.grads.toArray(), fromArray);
  assert.throws(() => model.backward({ dvalues: dl }), /dvalues needs a forwardValues\(\) pass/);
  assert.throws(() => model.backward({ dlogp: new Float32Array(3) }), /dlogp must have 9 entries/);
  model.forward(batch, { entropy: false });
  assert.throws(
    () => model.backward({ dlogp: dl, dentropy: dl }),
    /dentropy needs a forward\(\) pass with \{ entropy: true \}/,
  );
  model.forwardValues(batch);
  assert.throws(() => model.backward({ dlogp: dl }), /dlogp needs a forward\(\) pass/);
  model.forwardLogits(batch.tokens, batch.positions, batch.cuSeqlens, new Int32Array([0]));
  assert.throws(() => model.backward({ dvalues: dl }), /needs a forward\(\) or forwardValues\(\)/);
});

Deno.test("qwen2 rejects bad batches and configs with clear errors; dispose frees everything", () => {
  using k = open();
  const cfg = tinyConfig();
  const model = new Qwen2Model(k, cfg);
  const ok = randomBatch(new Rng("errors"), cfg.vocab_size, [3, 2]);
  const bad = (patch: Partial<Batch>) => ({ ...ok, ...patch });
  assert.throws(
    () => model.forward(bad({ cuSeqlens: new Int32Array([0, 3, 4]) })),
    /cuSeqlens\[2\] must equal the 5 tokens/,
  );
  assert.throws(
    () => model.forward(bad({ cuSeqlens: new Int32Array([0, 4, 3, 5]) })),
    /non-decreasing/,
  );
  assert.throws(
    () => model.forward(bad({ cuSeqlens: new Int32Array([1, 5]) })),
    /cuSeqlens\[0\] must be 0/,
  );
  assert.throws(
    () => model.forward(bad({ positions: new Int32Array(4) })),
    /positions must have 5 entries/,
  );
  assert.throws(
    () => model.forward(bad({ positions: new Int32Array([0, 1, -1, 0, 1]) })),
    /non-negative/,
  );
  assert.throws(
    () => model.forward(bad({ targets: new Int32Array(2) })),
    /targets must have 5 entries/,
  );
  assert.throws(
    () => model.forward(bad({ tokens: new Int32Array([0, 1, 2, 48, 3]) })),
    /tokens\[3\] = 48 is outside the vocabulary 0\.\.47/,
  );
  assert.throws(
    () => model.forward(bad({ targets: new Int32Array([0, 1, 2, -1, 3]) })),
    /arl_logprob_forward failed/,
  );
  assert.throws(
    () => model.forward(ok, { temperature: 0 }),
    /temperature must be a positive number/,
  );
  assert.throws(
    () => model.forwardLogits(ok.tokens, ok.positions, ok.cuSeqlens, new Int32Array([5])),
    /rows\[0\] = 5 is outside 0..4/,
  );
  assert.throws(
    () => new Qwen2Model(k, tinyConfig({ num_key_value_heads: 3 })),
    /multiple of num_key_value_heads/,
  );
  assert.throws(() => new Qwen2Model(k, tinyConfig({ head_dim: 5 })), /head_dim must be even/);
  assert.throws(
    () => new Qwen2Model(k, tinyConfig({ model_type: "gemma" as "llama" })),
    /model_type must be "qwen2", "qwen3", "llama" or "mistral", got "gemma"/,
  );
  assert.throws(
    () => new Qwen2Model(k, tinyConfig({ model_type: "llama", attention_bias: true })),
    /attention_bias must be false for model_type llama/,
  );
  assert.throws(
    () => new Qwen2Model(k, tinyConfig({ hidden_size: 0 })),
    /hidden_size must be a positive integer/,
  );
  assert.throws(
    () => new Qwen2Model(k, tinyConfig({ rope_theta: 0.5, rope_scaling: YARN_SMALL })),
    /rope_scaling: YaRN needs rope_theta above 1, got 0\.5/,
  );
  assert.throws(
    () => new Qwen2Model(k, tinyConfig({ rope_scaling: { ...YARN_SMALL, beta_slow: 40 } })),
    /rope_scaling: beta_fast \(32\) must exceed beta_slow \(40\)/,
  );

  model.forward(ok);
  const params = model.params, grads = model.grads, view = model.param("model.norm.weight");
  assert.ok(model.byteSize > params.byteSize + grads.byteSize);
  model.dispose();
  model.dispose();
  assert.ok(model.disposed && !params.alive && !grads.alive && !view.alive);
  assert.throws(() => view.ptr, /parent of this f32 view \[32\] was freed/);
  assert.throws(() => model.forward(ok), /This Qwen2Model was disposed/);
});
