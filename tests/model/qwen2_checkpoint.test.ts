// The model and the Hugging Face checkpoint code agree: the parameter layout
// has exactly the weights (names, shapes, order) the checkpoint code expects,
// and a model saved through exportNamed / saveHfCheckpoint and loaded through
// loadHfCheckpoint / loadNamed computes the same log-probs.
import assert from "node:assert/strict";
import { Kernels } from "../../ffi/mod.ts";
import {
  expectedQwen2Weights,
  loadHfCheckpoint,
  saveHfCheckpoint,
} from "../../lib/model/checkpoint.ts";
import { qwen2ParamLayout } from "../../lib/model/param_layout.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { Rng } from "../kernels/_helpers.ts";
import { randomBatch, randomizeParams, tinyConfig } from "./_qwen2_reference.ts";

Deno.test("qwen2 layout lists exactly the weights the checkpoint code expects", () => {
  for (const tie of [false, true]) {
    for (const bias of [true, false, "qwen3"] as const) {
      const cfg = tinyConfig({ tie_word_embeddings: tie, attention_bias: bias === true });
      if (bias === "qwen3") cfg.model_type = "qwen3";
      const ours = qwen2ParamLayout(cfg).regions.map((r) => ({
        name: r.name,
        shape: [...r.shape],
      }));
      assert.deepEqual(ours, expectedQwen2Weights(cfg), `tied=${tie} bias=${bias}`);
    }
  }
});

for (const modelType of ["qwen2", "qwen3"] as const) {
  Deno.test(`${modelType} save (exportNamed) and load (loadNamed) through an HF folder round-trip`, async () => {
    using k = Kernels.open({ threads: 2 });
    const cfg = tinyConfig(
      modelType === "qwen3" ? { model_type: "qwen3", attention_bias: false } : {},
    );
    using a = new Qwen2Model(k, cfg);
    randomizeParams(a, "checkpoint");
    const dir = `${await Deno.makeTempDir({ prefix: "agentrl_qwen2_" })}/model`;
    try {
      await saveHfCheckpoint(
        dir,
        cfg,
        a.exportNamed().map((p) => [p.name, p.shape, p.data] as const),
      );
      using ckpt = loadHfCheckpoint(dir);
      assert.equal(ckpt.config.model_type, modelType, "config.json names the architecture");
      using b = new Qwen2Model(k, ckpt.config, { init: "none" });
      b.loadNamed((name) => (ckpt.weights.has(name) ? ckpt.weights.readF32(name) : undefined));
      assert.deepEqual(b.params.toArray(), a.params.toArray());
      const batch = randomBatch(new Rng("checkpoint"), cfg.vocab_size, [4, 6]);
      assert.deepEqual(b.forward(batch).logp.toArray(), a.forward(batch).logp.toArray());
    } finally {
      await Deno.remove(dir.slice(0, dir.lastIndexOf("/")), { recursive: true });
    }
  });
}
