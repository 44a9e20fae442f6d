// lib/algo's option lists and config readers stay in step with the config schema.
import assert from "node:assert/strict";
import { AgenticConfigSchema } from "../../lib/config/agentic_config.ts";
import {
  ADV_ESTIMATORS as CONFIG_ESTIMATORS,
  agenticShape,
  LOSS_AGG_MODES as CONFIG_MODES,
} from "../../lib/config/schema/agentic.ts";
import {
  ADV_ESTIMATORS,
  advantageSettingsFromConfig,
  type AlgoConfigFields,
  clipSettingsFromConfig,
  KL_PENALTY_KINDS,
  klControllerFromConfig,
  LOSS_AGG_MODES,
  NORM_METHODS,
  NORM_STAT_TYPES,
} from "../../lib/algo/mod.ts";

Deno.test("the option lists match the config schema", () => {
  assert.deepEqual([...ADV_ESTIMATORS], [...CONFIG_ESTIMATORS]);
  assert.deepEqual([...LOSS_AGG_MODES], [...CONFIG_MODES]);
  assert.deepEqual([...KL_PENALTY_KINDS], [...agenticShape.kl_penalty.unwrap().options]);
  const rn = agenticShape.reward_normalization.unwrap().shape;
  assert.deepEqual([...NORM_METHODS], [...rn.method.unwrap().options]);
  assert.deepEqual([...NORM_STAT_TYPES], [...rn.norm_mean_type.unwrap().unwrap().options]);
});

Deno.test("a validated config is read as it is", () => {
  const cfg = AgenticConfigSchema.parse({
    adv_estimator: "grpo",
    whiten_advantages: true,
    advantage_clip: 0.2,
    reward_normalization: { grouping: "traj_group_id", method: "mean_std" },
    init_kl_coef: 0.1,
    target_kl: 0.05,
    kl_horizon: 500,
  });
  const fields: AlgoConfigFields = cfg; // type-level: the config fits as it is
  const s = advantageSettingsFromConfig(fields);
  assert.deepEqual(s, {
    advEstimator: "grpo",
    gamma: 1,
    lambd: 0.95,
    rewardNormalization: {
      grouping: "traj_group_id",
      method: "mean_std",
      normMeanType: null,
      normStdType: null,
    },
    rewardClip: null,
    whitenRewards: false,
    whitenAdvantages: true,
    advantageClip: 0.2,
    addTokenLevelKl: false,
    klPenalty: "kl",
    positions: "response",
  });
  // recursion_positions: all is ROLL's reading
  const all = AgenticConfigSchema.parse({ recursion_positions: "all" });
  assert.equal(advantageSettingsFromConfig(all).positions, "all");
  assert.deepEqual(klControllerFromConfig(cfg).toJSON(), {
    kind: "adaptive",
    value: 0.1,
    target: 0.05,
    horizon: 500,
  });
  const defaults = AgenticConfigSchema.parse({});
  assert.deepEqual(klControllerFromConfig(defaults).toJSON(), { kind: "fixed", value: 0.2 });
});

Deno.test("the clip settings: pg_clip or the low/high range, and the dual clip at ROLL's 1 + 2 pg_clip unless dual_clip_c", () => {
  const read = (o: Record<string, unknown>) => clipSettingsFromConfig(AgenticConfigSchema.parse(o));
  assert.deepEqual(read({}), { clipLow: 0.2, clipHigh: 0.2, dualClip: 0 });
  assert.deepEqual(read({ dual_clip_loss: true, pg_clip: 0.1 }), {
    clipLow: 0.1,
    clipHigh: 0.1,
    dualClip: 1.2,
  });
  assert.deepEqual(read({ dual_clip_loss: true, dual_clip_c: 3 }).dualClip, 3);
  assert.deepEqual(
    read({ use_pg_clip_range: true, pg_clip_low: 0.1, pg_clip_high: 0.28 }),
    { clipLow: 0.1, clipHigh: 0.28, dualClip: 0 },
  );
});
