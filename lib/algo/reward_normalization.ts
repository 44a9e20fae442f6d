/**
 * Episode-score normalization, ROLL's `reward_normalization` (agentic_reward_norm):
 * scores are grouped (by traj_group_id, by tag, or the whole batch), then each is
 * shifted by a mean and optionally divided by a standard deviation, each statistic
 * taken over the batch or over the sample's group.
 *
 * `method` picks the statistics (as ROLL derives norm_mean_type / norm_std_type
 * from it): identity none; mean the mean only; mean_std and asym_clip both, over
 * the group unless the grouping is the whole batch. Explicit `normMeanType` /
 * `normStdType` win over the method. mean_std: (x - mu) / (sigma + 1e-6), and 0
 * when the group has one member or |sigma| <= 1e-6. asym_clip: mean_std, then
 * clamped to [-1, 3]. sigma is the unbiased (n - 1) standard deviation, like
 * torch's `Tensor.std()`.
 *
 * @module
 */
import { checkFinite, checkOneOf } from "./_check.ts";
import {
  type AlgoSample,
  NORM_METHODS,
  NORM_STAT_TYPES,
  type NormMethod,
  type NormStatType,
  type TokenValues,
} from "./types.ts";

/** The groupings {@linkcode groupKeysOf} knows (ROLL's non-tensor batch keys). */
export const REWARD_GROUPINGS = ["traj_group_id", "tags", "batch"] as const;

/** ROLL's `reward_normalization` section, in camelCase. */
export interface RewardNormalizationOptions {
  /** `traj_group_id`, `tags` or `batch` (default `batch`). */
  grouping?: string;
  /** Default `identity`. */
  method?: NormMethod;
  /** Overrides the mean statistic the method implies (null: from the method). */
  normMeanType?: NormStatType | null;
  /** Overrides the std statistic the method implies (null: from the method). */
  normStdType?: NormStatType | null;
}

/** The statistics a normalization uses, and the clamp asym_clip adds. */
export interface ResolvedNormalization {
  /** Where the mean comes from; null: no shift. */
  meanType: NormStatType | null;
  /** Where the std comes from; null: no division. */
  stdType: NormStatType | null;
  /** [low, high] clamp after normalizing; null: none. */
  clamp: readonly [number, number] | null;
}

/** Bounds of asym_clip. */
const ASYM_CLIP: readonly [number, number] = [-1, 3];
/** A std at or below this counts as zero; it is also added to the divisor. */
const STD_EPS = 1e-6;

/**
 * Which statistics a method and grouping imply (ROLL's `_resolve_reward_norm_defaults`),
 * with explicit `normMeanType` / `normStdType` taking precedence.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveNormalization } from "./reward_normalization.ts";
 * assert.deepEqual(resolveNormalization({ grouping: "traj_group_id", method: "mean_std" }), {
 *   meanType: "group", stdType: "group", clamp: null,
 * });
 * ```
 */
export function resolveNormalization(options: RewardNormalizationOptions): ResolvedNormalization {
  const method = checkOneOf(
    options.method ?? "identity",
    NORM_METHODS,
    "reward normalization method",
  );
  const grouping = options.grouping ?? "batch";
  if (typeof grouping !== "string" || grouping === "") {
    throw new RangeError(
      `Reward normalization grouping must be a non-empty string, got ${grouping}`,
    );
  }
  const scope: NormStatType = grouping === "batch" ? "batch" : "group";
  const meanDefault = method === "identity" ? null : scope;
  const stdDefault = method === "mean_std" || method === "asym_clip" ? scope : null;
  const meanType = options.normMeanType ?? meanDefault;
  const stdType = options.normStdType ?? stdDefault;
  if (meanType !== null) checkOneOf(meanType, NORM_STAT_TYPES, "norm_mean_type");
  if (stdType !== null) checkOneOf(stdType, NORM_STAT_TYPES, "norm_std_type");
  return { meanType, stdType, clamp: method === "asym_clip" ? ASYM_CLIP : null };
}

/**
 * The group key of every sample for a grouping: `traj_group_id` → `trajGroupId`,
 * `tags` → `tag`, `batch` → null (one group). Other groupings (e.g. a state hash)
 * need the caller to build the keys.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { groupKeysOf } from "./reward_normalization.ts";
 * const samples = [{ trajGroupId: "a", tag: "x" }, { trajGroupId: "b", tag: "x" }];
 * assert.deepEqual(groupKeysOf(samples, "tags"), ["x", "x"]);
 * assert.equal(groupKeysOf(samples, "batch"), null);
 * ```
 */
export function groupKeysOf(
  samples: readonly Pick<AlgoSample, "trajGroupId" | "tag">[],
  grouping: string,
): string[] | null {
  switch (checkOneOf(grouping, REWARD_GROUPINGS, "reward normalization grouping")) {
    case "batch":
      return null;
    case "traj_group_id":
      return samples.map((s) => s.trajGroupId);
    case "tags":
      return samples.map((s) => s.tag);
  }
}

/**
 * Normalizes scores within groups. `groups` holds one key per score (samples with
 * equal keys form a group) or is null for one group of the whole batch; the default
 * statistics follow from it (batch when null, group otherwise) unless
 * `normMeanType` / `normStdType` say otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalizeScores } from "./reward_normalization.ts";
 * // group "a": 1 and 3 (mean 2, unbiased std sqrt(2)); group "b": one member -> 0
 * const out = normalizeScores([1, 3, 7], ["a", "a", "b"], { method: "mean_std" });
 * assert.ok(Math.abs(out[0]! + 1 / (Math.SQRT2 + 1e-6)) < 1e-6);
 * assert.equal(out[2], 0);
 * ```
 */
export function normalizeScores(
  scores: TokenValues,
  groups: readonly string[] | null,
  options: Omit<RewardNormalizationOptions, "grouping"> = {},
): Float32Array {
  const n = scores.length;
  for (let i = 0; i < n; i++) checkFinite(scores[i], `scores[${i}]`);
  if (groups !== null && groups.length !== n) {
    throw new RangeError(`groups has ${groups.length} keys, expected ${n} (one per score)`);
  }
  const norm = resolveNormalization({ ...options, grouping: groups === null ? "batch" : "group" });
  const out = new Float32Array(n);
  if (n === 0) return out;

  const all = Array.from({ length: n }, (_, i) => i);
  const batch = statsOf(scores, all);
  const members = new Map<string, number[]>();
  if (groups === null) members.set("", all);
  else {
    for (let i = 0; i < n; i++) {
      const list = members.get(groups[i]!);
      if (list) list.push(i);
      else members.set(groups[i]!, [i]);
    }
  }
  for (const idx of members.values()) {
    const group = statsOf(scores, idx);
    const mean = norm.meanType === null ? 0 : norm.meanType === "batch" ? batch.mean : group.mean;
    const std = norm.stdType === null ? null : norm.stdType === "batch" ? batch.std : group.std;
    // A one-member group or a (near) zero std gives 0: the samples carry no signal.
    const flat = std !== null && !(idx.length > 1 && Math.abs(std) > STD_EPS);
    for (const i of idx) {
      let v = flat ? 0 : scores[i]! - mean;
      if (std !== null && !flat) v /= std + STD_EPS;
      if (norm.clamp) v = Math.min(norm.clamp[1], Math.max(norm.clamp[0], v));
      out[i] = v;
    }
  }
  return out;
}

/**
 * Normalizes `samples[i].score` with a `reward_normalization` section: the grouping
 * picks the keys ({@linkcode groupKeysOf}), the rest goes to {@linkcode normalizeScores}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { normalizeSampleScores } from "./reward_normalization.ts";
 * const s = (score: number, g: string) => ({ score, trajGroupId: g, tag: "t" });
 * const out = normalizeSampleScores([s(1, "a"), s(3, "a")], { grouping: "traj_group_id", method: "mean" });
 * assert.deepEqual(Array.from(out), [-1, 1]);
 * ```
 */
export function normalizeSampleScores(
  samples: readonly Pick<AlgoSample, "score" | "trajGroupId" | "tag">[],
  options: RewardNormalizationOptions,
): Float32Array {
  const groups = groupKeysOf(samples, options.grouping ?? "batch");
  return normalizeScores(samples.map((s) => s.score), groups, {
    ...(options.method !== undefined && { method: options.method }),
    ...(options.normMeanType !== undefined && { normMeanType: options.normMeanType }),
    ...(options.normStdType !== undefined && { normStdType: options.normStdType }),
  });
}

/** Mean and unbiased std of scores[idx] (std NaN for one member, like torch). */
function statsOf(scores: TokenValues, idx: readonly number[]) {
  let sum = 0;
  for (const i of idx) sum += scores[i]!;
  const mean = sum / idx.length;
  let sq = 0;
  for (const i of idx) sq += (scores[i]! - mean) ** 2;
  return { mean, std: Math.sqrt(sq / (idx.length - 1)) };
}
