/** bench/model_shapes.ts: the benchmark's model shapes against their published sizes. */
import { deepStrictEqual, equal } from "node:assert/strict";
import { BENCH_MODELS, benchModel } from "../../bench/model_shapes.ts";
import { parseQwen2Config } from "../../lib/model/hf_config.ts";
import { qwen2ParamLayout } from "../../lib/model/param_layout.ts";

// Each shape's parameter count as its model card gives it (tied embeddings: counted once).
const PARAMS: Record<string, number> = {
  qwen2_5_0_5b: 494_032_768,
  qwen3_0_6b: 596_049_920,
  llama3_2_1b: 1_235_814_400,
  qwen2_5_1_5b: 1_543_714_304,
  qwen2_5_3b: 3_085_938_688,
};

Deno.test("bench model shapes: valid configs with their published parameter counts", () => {
  deepStrictEqual(Object.keys(BENCH_MODELS).sort(), Object.keys(PARAMS).sort());
  for (const [name, params] of Object.entries(PARAMS)) {
    // (as a config.json would give it, Qwen2 by default: the parser's checks pass)
    const json = JSON.parse(JSON.stringify({ model_type: "qwen2", ...benchModel(name) }));
    const config = parseQwen2Config(json, name);
    equal(qwen2ParamLayout(config).elements, params, name);
  }
});
