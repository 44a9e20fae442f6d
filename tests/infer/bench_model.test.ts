// A short run of `deno task bench model` (tiny model only, smoke sizes): the
// rows it reports, each against a baseline measured in the same run.
import assert from "node:assert/strict";
import { benchModel, matmulParams, QWEN2_5_0_5B_CONFIG } from "../../bench/model.ts";
import { Kernels } from "../../ffi/mod.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";

Deno.test("bench model: smoke run of the tiny model's rows", async () => {
  const rows = await benchModel({ threads: 2, large: false, smoke: true });
  const names = rows.map((r) => r.name);
  for (
    const pattern of [
      /^fma peak/,
      /^tiny prefill 2x16 tokens$/,
      /^tiny decode, 1 concurrent$/,
      /^tiny decode, 8 concurrent$/,
      /^tiny decode, 64 concurrent$/,
      /^tiny train step 1x16 tokens/,
      /^tiny continuous batching, 16 requests .*4 concurrent$/,
      /^tiny continuous batching, .*: scheduler steps$/,
    ]
  ) assert.ok(names.some((n) => pattern.test(n)), `no row matches ${pattern}: ${names}`);
  for (const r of rows) {
    assert.ok(Number.isFinite(r.ratio) && r.ratio > 0, `${r.name}: ratio ${r.ratio}`);
    if (r.baseline === "peak" && r.unit === "tokens/s") assert.ok(r.ratio < 1, r.name);
  }
  // continuous batching never needs more steps than static batching
  const steps = rows.find((r) => r.unit === "steps")!;
  assert.ok(steps.value <= steps.baseline_value, `${steps.value} vs ${steps.baseline_value}`);
});

Deno.test("bench model: the 0.5B shape has Qwen2.5-0.5B's 494M parameters (tied embedding counted once)", () => {
  using k = Kernels.open({ threads: 1 });
  const cfg = { ...QWEN2_5_0_5B_CONFIG, num_hidden_layers: 1 };
  using one = new Qwen2Model(k, cfg, { init: "none" });
  // embedding/head 151936 x 896, per layer q,o 896x896, k,v 128x896, gate,up,down 4864x896
  const perLayer = 2 * 896 * 896 + 2 * 128 * 896 + 3 * 4864 * 896;
  assert.equal(matmulParams(one), 151936 * 896 + perLayer);
  // with biases (q, k, v) and norms: Qwen2.5-0.5B's published 494,032,768 parameters
  const biasesAndNorms = 24 * (896 + 2 * 128) + 24 * 2 * 896 + 896;
  assert.equal(151936 * 896 + 24 * perLayer + biasesAndNorms, 494_032_768);
});
