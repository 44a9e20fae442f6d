// Mixed precision (precision: "bf16"): the matrix kernels read a bf16 copy of
// the fp32 master weights. On the CPU the bf16 kernels widen the weights, so a
// bf16 model's log-probs, gradients and cached logits equal those of an fp32
// model holding the bf16-rounded matrices, bit for bit. The copy follows the
// master through loadNamed, markParamsChanged and an AdamW step.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import { resolvePrecision } from "../../lib/model/_mixed_precision.ts";
import { qwen2ParamKind } from "../../lib/model/param_layout.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { AdamW } from "../../lib/train/optimizer.ts";
import { Rng } from "../kernels/_helpers.ts";
import { randomBatch, randomizeParams, tinyConfig } from "./_qwen2_reference.ts";

/** x rounded to bf16 (nearest even) and widened back. */
function roundBf16(x: Float32Array): Float32Array {
  const bits = new Uint32Array(Float32Array.from(x).buffer);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i]!;
    bits[i] = ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) << 16;
  }
  return new Float32Array(bits.buffer);
}

/** An fp32 model whose matrices (not norms, biases or the embedding lookup) are rounded. */
function roundedTwin(k: Kernels, src: Qwen2Model): Qwen2Model {
  const twin = new Qwen2Model(k, src.config, { init: "none", precision: "f32" });
  const byName = new Map(src.exportNamed().map((p) => [p.name, p.data]));
  twin.loadNamed((name) => {
    const data = byName.get(name)!;
    return qwen2ParamKind(name) === "matrix" && name !== "model.embed_tokens.weight"
      ? roundBf16(data)
      : Float32Array.from(data);
  });
  return twin;
}

Deno.test("bf16 model: log-probs, gradients and cached logits equal an fp32 model with rounded matrices", () => {
  using k = Kernels.open({ threads: 2 });
  // untied: the LM head is rounded, the embedding lookup reads fp32
  using model = new Qwen2Model(k, tinyConfig({ tie_word_embeddings: false }), {
    init: "none",
    precision: "bf16",
  });
  assert.equal(model.precision, "bf16");
  randomizeParams(model, "mixed precision");
  using twin = roundedTwin(k, model);
  const rng = new Rng("mixed precision batch");
  const batch = randomBatch(rng, model.config.vocab_size, [5, 3]);
  const t = batch.tokens.length;
  const runs = [model, twin].map((m) => {
    m.zeroGrad();
    const logp = m.forward(batch).logp.toArray();
    m.backward({ dlogp: new Float32Array(t).fill(-1 / t) });
    return { logp, grads: m.grads.toArray() };
  });
  assert.deepEqual(runs[0]!.logp, runs[1]!.logp);
  assert.deepEqual(runs[0]!.grads, runs[1]!.grads);
  // a 3-token prefill, then single tokens (the stacked q|k|v and gate|up GEMVs)
  const cached = [model, twin].map((m) => {
    using cache = m.createKvCache(1, 8);
    const one = (tok: number[], pos: number[]) =>
      m.forwardCached(
        cache,
        Int32Array.from(tok),
        Int32Array.from(pos),
        new Int32Array(tok.length),
        Int32Array.of(tok.length - 1),
      )!.toArray();
    return [one([3, 7, 1], [0, 1, 2]), one([5], [3]), one([2], [4])];
  });
  assert.deepEqual(cached[0], cached[1]);
});

Deno.test("bf16 model: the copy follows loadNamed, markParamsChanged and an AdamW step", () => {
  using k = Kernels.open({ threads: 2 });
  using model = new Qwen2Model(k, tinyConfig({ tie_word_embeddings: false }), {
    seed: 1,
    precision: "bf16",
  });
  const batch = randomBatch(new Rng("follow"), model.config.vocab_size, [6]);
  const logp = () => model.forward(batch, { entropy: false }).logp.toArray();
  const before = logp();
  randomizeParams(model, "reloaded");
  const reloaded = logp();
  assert.notDeepEqual(reloaded, before, "loadNamed refreshes the copy");
  // a direct write is seen only after markParamsChanged
  const all = model.params.toArray();
  all.fill(0.01, 0, model.layout.get("model.embed_tokens.weight").size);
  model.params.write(all);
  model.markParamsChanged();
  const written = logp();
  assert.notDeepEqual(written, reloaded);
  using twin = roundedTwin(k, model);
  assert.deepEqual(written, twin.forward(batch, { entropy: false }).logp.toArray());
  // the optimizer's step marks the master as changed
  using opt = new AdamW(model);
  model.zeroGrad();
  model.forward(batch, { entropy: false });
  model.backward({ dlogp: new Float32Array(6).fill(-1) });
  opt.step(1e-2);
  assert.notDeepEqual(logp(), written, "an AdamW step refreshes the copy");
});

Deno.test("precision: the option, AGENTRL_PRECISION, the device default, and a bad value", () => {
  // (AGENTRL_PRECISION through resolvePrecision's reader: the suite runs its files in parallel in
  // one process, so a test must not change the environment that others read)
  using k = Kernels.open({ threads: 1 });
  const env = (value?: string) => () => value;
  assert.equal(resolvePrecision(k, undefined, env()), "f32"); // the CPU's default
  assert.equal(resolvePrecision(k, undefined, env("")), "f32");
  assert.equal(resolvePrecision(k, "bf16", env()), "bf16");
  assert.equal(resolvePrecision(k, undefined, env("bf16")), "bf16");
  assert.equal(resolvePrecision(k, "f32", env("bf16")), "f32");
  assert.throws(
    () => resolvePrecision(k, undefined, env("fp8")),
    /AGENTRL_PRECISION must be f32 or bf16, got 'fp8'/,
  );
  assert.throws(
    () => new Qwen2Model(k, tinyConfig(), { precision: "half" as "f32" }),
    /the precision option must be f32 or bf16, got 'half'/,
  );
});
