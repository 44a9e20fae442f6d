/**
 * GiGPO's two-level credit (verl-agent; REFERENCE.md) on trajectory-wise
 * samples: every turn of a multi-turn conversation gets its own advantage,
 *
 *   A(turn t of episode i) = w_E * A_E(i) + w_S * A_S(i, t),
 *
 * where A_E is the episode score normalized within its group (ROLL's
 * `reward_normalization`, e.g. mean over the episodes that share a seed) and
 * A_S compares the discounted return from turn t, R_t = sum_k gamma^(k-t) r_k,
 * with the returns of every turn in the same episode group that acted from the
 * same state (an "anchor state": an identical observation):
 * A_S = R_t - mean(anchor group), or divided by its std with `stepMethod:
 * "mean_std"`; a state seen once gets 0. The advantage lands on that turn's
 * generated tokens (the turn's run of 1s in the response mask).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { computeTurnGigpoAdvantages } from "./turn_gigpo.ts";
 * // two episodes of one group, both starting in state "s0"
 * const ep = (score: number, rewards: number[], states: string[]) => ({
 *   responseMask: [0, 1, 0, 1], score, trajGroupId: "g", tag: "T",
 *   stepRewards: rewards, stepStates: states,
 * });
 * const out = computeTurnGigpoAdvantages([ep(1, [0, 1], ["s0", "s1"]), ep(0, [0, 0], ["s0", "s2"])], {
 *   episodeNormalization: { grouping: "traj_group_id", method: "mean" },
 *   stepGamma: 0.5, episodeWeight: 1, stepWeight: 1,
 * });
 * // episode advantages +-0.5; from "s0": returns 0.5 and 0, so +-0.25; s1, s2 are singletons
 * assert.deepEqual(Array.from(out.advantages[0]!), [0, 0.75, 0, 0.5]);
 * assert.deepEqual(Array.from(out.advantages[1]!), [0, -0.75, 0, -0.5]);
 * ```
 *
 * @module
 */
import type { BatchAdvantages } from "./batch_advantages.ts";
import { clipSymmetric } from "./clip.ts";
import { maskedWhiten } from "./masked_stats.ts";
import { normalizeSampleScores, type RewardNormalizationOptions } from "./reward_normalization.ts";
import type { AlgoSample } from "./types.ts";

/** A trajectory-wise sample with its turns' rewards and states. */
export interface TurnSample extends AlgoSample {
  /** Reward of each turn (env reward plus format penalty), one per run of 1s in responseMask. */
  stepRewards: readonly number[];
  /** The observation each turn acted from (the anchor-state key). */
  stepStates: readonly string[];
}

/** Settings of {@linkcode computeTurnGigpoAdvantages} (ROLL's fields in camelCase). */
export interface TurnGigpoSettings {
  /** Normalization of the episode scores (`reward_normalization`). */
  episodeNormalization: RewardNormalizationOptions;
  /** `step_reward_gamma` (default 0.95 in ROLL). */
  stepGamma: number;
  /** `episode_reward_weight`. */
  episodeWeight: number;
  /** `step_reward_weight`. */
  stepWeight: number;
  /** Anchor-group normalization: "mean" (verl-agent's default, no std) or "mean_std". */
  stepMethod?: "mean" | "mean_std";
  whitenAdvantages?: boolean;
  advantageClip?: number | null;
}

/** The [start, end) token ranges of a mask's runs of 1s (one per turn). */
export function turnSpans(mask: ArrayLike<number>): [number, number][] {
  const spans: [number, number][] = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] && (i === 0 || !mask[i - 1])) spans.push([i, i]);
    if (mask[i]) spans[spans.length - 1]![1] = i + 1;
  }
  return spans;
}

/** Advantages and metrics in {@linkcode BatchAdvantages}' shape (returns = advantages: no critic). */
export function computeTurnGigpoAdvantages(
  samples: readonly TurnSample[],
  settings: TurnGigpoSettings,
): BatchAdvantages {
  const gamma = settings.stepGamma;
  if (!(gamma >= 0 && gamma <= 1)) {
    throw new RangeError(`step_reward_gamma must be in [0, 1], got ${gamma}`);
  }
  const spans = samples.map((s, i) => {
    const sp = turnSpans(s.responseMask);
    if (sp.length !== s.stepRewards.length || sp.length !== s.stepStates.length) {
      throw new RangeError(
        `sample ${i} has ${sp.length} generated turns but ${s.stepRewards.length} step rewards ` +
          `and ${s.stepStates.length} step states: expected one of each per turn`,
      );
    }
    return sp;
  });
  const episode = normalizeSampleScores(samples, settings.episodeNormalization);

  // discounted returns from each turn, and the anchor groups (episode group + state)
  const returns = samples.map((s) => {
    const r = new Float64Array(s.stepRewards.length);
    let acc = 0;
    for (let t = r.length - 1; t >= 0; t--) r[t] = acc = s.stepRewards[t]! + gamma * acc;
    return r;
  });
  const anchors = new Map<string, [number, number][]>();
  samples.forEach((s, i) =>
    s.stepStates.forEach((state, t) => {
      const key = `${s.trajGroupId}\u0000${state}`;
      const list = anchors.get(key);
      if (list) list.push([i, t]);
      else anchors.set(key, [[i, t]]);
    })
  );
  const stepAdv = samples.map((s) => new Float64Array(s.stepRewards.length));
  let grouped = 0, turns = 0;
  for (const members of anchors.values()) {
    turns += members.length;
    if (members.length < 2) continue;
    grouped += members.length;
    const values = members.map(([i, t]) => returns[i]![t]!);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    let scale = 1;
    if (settings.stepMethod === "mean_std") {
      const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1));
      scale = sd > 1e-6 ? 1 / (sd + 1e-6) : 0;
    }
    members.forEach(([i, t], j) => (stepAdv[i]![t] = (values[j]! - mean) * scale));
  }

  let advantages: Float32Array[] = samples.map((s, i) => {
    const a = new Float32Array(s.responseMask.length);
    spans[i]!.forEach(([b, e], t) =>
      a.fill(settings.episodeWeight * episode[i]! + settings.stepWeight * stepAdv[i]![t]!, b, e)
    );
    return a;
  });
  const metrics: Record<string, number> = {
    "critic/anchor_state_frac": turns ? grouped / turns : 0,
  };
  const masks = samples.map((s) => s.responseMask);
  if (settings.whitenAdvantages) {
    advantages = maskedWhiten(advantages, masks).map((a, i) =>
      a.map((v, j) => masks[i]![j] ? v : 0)
    );
  }
  const clip = settings.advantageClip ?? null;
  if (clip !== null) {
    let clipped = 0, counted = 0;
    advantages = advantages.map((a, i) => {
      const c = clipSymmetric(a, clip, masks[i]);
      clipped += c.clipped;
      counted += c.counted;
      return c.values;
    });
    metrics["critic/advantage_clip_frac"] = counted ? clipped / counted : 0;
  }
  return {
    responseRewards: Float32Array.from(episode),
    tokenRewards: advantages.map((a) => new Float32Array(a.length)),
    advantages,
    returns: advantages,
    kl: null,
    metrics,
  };
}
