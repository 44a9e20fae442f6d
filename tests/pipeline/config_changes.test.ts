import assert from "node:assert/strict";
import { configChanges } from "../../lib/pipeline/config_changes.ts";

Deno.test("configChanges names each changed, added or removed leaf, but not where output goes", () => {
  const saved = {
    seed: 1,
    output_dir: "a",
    actor_train: { training_args: { learning_rate: 1e-6, lr_scheduler_type: "constant" } },
    tags: ["A", "B"],
    tracker_kwargs: { log_dir: "x" },
    gone: true,
  };
  const now = {
    seed: 1,
    output_dir: "b",
    actor_train: { training_args: { learning_rate: 2e-6, lr_scheduler_type: "constant" } },
    tags: ["A"],
    tracker_kwargs: { log_dir: "y" },
    added: null,
  };
  assert.deepEqual(configChanges(saved, now), [
    "actor_train.training_args.learning_rate: 0.000001 -> 0.000002",
    "added: (absent) -> null",
    "gone: true -> (absent)",
    'tags: ["A","B"] -> ["A"]',
  ]);
  assert.deepEqual(configChanges(now, structuredClone(now)), []);
});
