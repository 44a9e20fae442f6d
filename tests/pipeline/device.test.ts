import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config/load_config.ts";
import { pipelineDevice } from "../../lib/pipeline/device.ts";

Deno.test("device_mapping: the shipped workers run on the CPU, workers=cuda on GPU 0", async () => {
  const cpu = (await loadConfig({})).config;
  assert.deepEqual(pipelineDevice(cpu, false, false), { kind: "cpu", index: 0, notice: null });
  const cuda = (await loadConfig({ overrides: ["workers=cuda"] })).config;
  assert.deepEqual(pipelineDevice(cuda, true, true), { kind: "cuda", index: 0, notice: null });
});

Deno.test("device_mapping: several GPUs run on the first, with a notice", async () => {
  const { config } = await loadConfig({
    overrides: [
      "workers=cuda",
      "actor_train.device_mapping=[3,4]",
      "actor_infer.device_mapping=[3]",
    ],
  });
  const d = pipelineDevice(config, false, false);
  assert.equal(d.kind, "cuda");
  assert.equal(d.index, 3);
  assert.match(d.notice ?? "", /2 GPUs \(3, 4\); this runs every role on GPU 3/);
});

Deno.test("device_mapping: running roles split between GPU and CPU is a clear error", async () => {
  const { config } = await loadConfig({
    overrides: ["workers=cuda", "critic.device_mapping=null"],
  });
  // the critic only counts when it runs (gae)
  assert.equal(pipelineDevice(config, false, true).kind, "cuda");
  assert.throws(
    () => pipelineDevice(config, true, true),
    /actor_train, actor_infer, reference map to GPUs but critic to the CPU/,
  );
});
