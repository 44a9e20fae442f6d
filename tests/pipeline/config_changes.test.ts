import assert from "node:assert/strict";
import { configChanges, resumeChangeNotes } from "../../lib/pipeline/config_changes.ts";

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

Deno.test("resumeChangeNotes: a changed model path is not what a resumed actor loads; max_steps reshapes the schedule", () => {
  const changes = configChanges(
    { pretrain: "a", actor_train: { model_args: { model_name_or_path: "a" } }, max_steps: 3 },
    { pretrain: "b", actor_train: { model_args: { model_name_or_path: "b" } }, max_steps: 5 },
  );
  const notes = resumeChangeNotes(changes, "out/checkpoints/checkpoint-2", true);
  assert.equal(notes.length, 2);
  assert.match(
    notes[0]!,
    /^actor_train\.model_args\.model_name_or_path, pretrain changed, but a resumed run's actor \(and critic\) load the weights saved in out\/checkpoints\/checkpoint-2; the reference/,
  );
  assert.match(notes[1]!, /^max_steps changed: a decaying learning-rate schedule/);
  assert.doesNotMatch(resumeChangeNotes(changes, "c", false)[0]!, /reference/);
  assert.deepEqual(resumeChangeNotes(configChanges({ seed: 1 }, { seed: 2 }), "c"), []);
});
