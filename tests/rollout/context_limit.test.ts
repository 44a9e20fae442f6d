// Token budgets above the model's context are cut to it, with a notice, so that episodes end
// there ("sequence_length") instead of being lost when the engine refuses the prompt.
import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config/load_config.ts";
import { capSequenceLengths } from "../../lib/rollout/context_limit.ts";

Deno.test("capSequenceLengths cuts sequence_length and val_sequence_length to the model's context", async () => {
  const { config } = await loadConfig({
    overrides: ["sequence_length=8192", "val_sequence_length=6000", "val_prompt_length=100"],
  });
  const capped = capSequenceLengths(config, 4096);
  assert.equal(capped.config.sequence_length, 4096);
  assert.equal(capped.config.val_sequence_length, 4096);
  assert.deepEqual(capped.notices, [
    "sequence_length 8192 is above the model's max_position_embeddings (4096): " +
    "episodes end at 4096 tokens",
    "val_sequence_length 6000 is above the model's max_position_embeddings (4096): " +
    "episodes end at 4096 tokens",
  ]);
  assert.equal(config.sequence_length, 8192); // the input is left as it was
  // within the context: the same config, no notice
  const fits = capSequenceLengths(config, 8192);
  assert.equal(fits.config.sequence_length, 8192);
  assert.equal(fits.config.val_sequence_length, 6000);
  assert.deepEqual(fits.notices, []);
  assert.equal(capSequenceLengths(config, 1 << 20).config, config);
  // only the budgets the caller's rollouts use are noticed (eval: validation's)
  const { config: mixed } = await loadConfig({
    overrides: ["sequence_length=8192", "val_sequence_length=2048", "val_prompt_length=100"],
  });
  const evalOnly = capSequenceLengths(mixed, 4096, ["val_sequence_length"]);
  assert.deepEqual(evalOnly.notices, []);
  assert.equal(evalOnly.config.sequence_length, 4096); // still cut, silently
  assert.equal(evalOnly.config.val_sequence_length, 2048);
});
