// The settings the pipeline gives its actor and critic trainers: seq-mean-token-sum-norm's
// divisor is sequence_length - 1 for both, and the critic makes one pass whatever ppo_epochs.
import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config/load_config.ts";
import { actorSettingsOf, criticSettingsOf } from "../../lib/pipeline/trainer_settings.ts";

Deno.test("trainer settings: sum-norm's divisor is sequence_length - 1; the critic makes one pass; the actor ppo_epochs", async () => {
  const { config } = await loadConfig({
    overrides: ["loss_agg_mode=seq-mean-token-sum-norm", "sequence_length=513", "ppo_epochs=3"],
  });
  const actor = actorSettingsOf(config);
  const critic = criticSettingsOf(config);
  assert.equal(actor.sumNormLength, 512);
  assert.equal(critic.sumNormLength, 512);
  assert.equal(actor.aggMode, "seq-mean-token-sum-norm");
  assert.equal(actor.ppoEpochs, 3);
  assert.equal(critic.ppoEpochs, 1);
  const ta = config.actor_train.training_args;
  assert.equal(
    actor.miniBatchSize,
    ta.per_device_train_batch_size * ta.gradient_accumulation_steps,
  );
  // the clip in use and the loss terms
  assert.equal(actor.clipLow, config.pg_clip);
  assert.equal(actor.klLossCoef, config.use_kl_loss ? config.kl_loss_coef : 0);
});
