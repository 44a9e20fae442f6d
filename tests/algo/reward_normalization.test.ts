// Reward normalization (ROLL's reward_normalization: grouping x method), against
// hand-computed values. sigma is the unbiased (n - 1) std, like torch's .std().
//
// Batch used below (score, traj_group_id, tag):
//   (1, a, x) (2, a, x) (3, a, y) (10, b, y) (10, b, y) (4, c, y)
// group a: mean 2, unbiased std sqrt((1 + 0 + 1) / 2) = 1 (the biased one would be 0.8165)
// group b: std 0; group c: one member
// tag x: 1, 2 (mean 1.5); tag y: 3, 10, 10, 4 (mean 27 / 4 = 6.75)
// batch: mean 30 / 6 = 5, deviations 16 + 9 + 4 + 25 + 25 + 1 = 80, std sqrt(80 / 5) = 4
import assert from "node:assert/strict";
import {
  groupKeysOf,
  normalizeSampleScores,
  normalizeScores,
  resolveNormalization,
} from "../../lib/algo/mod.ts";
import type { NormMethod } from "../../lib/algo/mod.ts";
import { assertAllClose, assertThrowsMsg } from "./_helpers.ts";

const SAMPLES = [
  { score: 1, trajGroupId: "a", tag: "x" },
  { score: 2, trajGroupId: "a", tag: "x" },
  { score: 3, trajGroupId: "a", tag: "y" },
  { score: 10, trajGroupId: "b", tag: "y" },
  { score: 10, trajGroupId: "b", tag: "y" },
  { score: 4, trajGroupId: "c", tag: "y" },
];
const EPS = 1e-6;

function norm(grouping: string, method: NormMethod) {
  return normalizeSampleScores(SAMPLES, { grouping, method });
}

Deno.test("identity leaves scores alone under every grouping", () => {
  for (const g of ["traj_group_id", "tags", "batch"]) {
    assertAllClose(norm(g, "identity"), [1, 2, 3, 10, 10, 4]);
  }
});

Deno.test("mean: x - group mean, for each grouping", () => {
  assertAllClose(norm("traj_group_id", "mean"), [-1, 0, 1, 0, 0, 0]);
  assertAllClose(norm("tags", "mean"), [-0.5, 0.5, -3.75, 3.25, 3.25, -2.75]);
  assertAllClose(norm("batch", "mean"), [-4, -3, -2, 5, 5, -1]);
});

Deno.test("mean_std: (x - mu) / (sigma + 1e-6), 0 for zero std and single members", () => {
  // a: sigma 1 -> +-1 / (1 + 1e-6); b: sigma 0 -> 0; c: one member -> 0
  const s = 1 / (1 + EPS);
  assertAllClose(norm("traj_group_id", "mean_std"), [-s, 0, s, 0, 0, 0], 1e-7);
  // batch: sigma 4
  const q = 1 / (4 + EPS);
  assertAllClose(norm("batch", "mean_std"), [-4 * q, -3 * q, -2 * q, 5 * q, 5 * q, -1 * q], 1e-7);
  // tags: x is 1, 2 -> sigma sqrt(0.5) = 0.7071068; y is 3, 10, 10, 4 -> deviations
  // 14.0625 + 10.5625 + 10.5625 + 7.5625 = 42.75, sigma sqrt(42.75 / 3) = 3.7749172
  const sx = Math.sqrt(0.5) + EPS, sy = Math.sqrt(14.25) + EPS;
  assertAllClose(
    norm("tags", "mean_std"),
    [-0.5 / sx, 0.5 / sx, -3.75 / sy, 3.25 / sy, 3.25 / sy, -2.75 / sy],
    1e-6,
  );
});

Deno.test("asym_clip: mean_std then clamp to [-1, 3]", () => {
  // 15 zeros and one 16: mean 1, deviations 15 * 1 + 225 = 240, sigma sqrt(240 / 15) = 4;
  // z(16) = 15 / 4 = 3.75 -> 3, z(0) = -1 / 4 = -0.25.
  // 15 sixteens and one 0 (another group): mean 15, sigma 4; z(0) = -3.75 -> -1, z(16) = 0.25
  const scores = [...Array(15).fill(0), 16, ...Array(15).fill(16), 0];
  const groups = [...Array(16).fill("hi"), ...Array(16).fill("lo")];
  const clipped = normalizeScores(scores, groups, { method: "asym_clip" });
  const plain = normalizeScores(scores, groups, { method: "mean_std" });
  assertAllClose(plain.subarray(14, 18), [
    -1 / (4 + EPS),
    15 / (4 + EPS),
    1 / (4 + EPS),
    1 / (4 + EPS),
  ]);
  assertAllClose(clipped.subarray(14, 18), [-1 / (4 + EPS), 3, 1 / (4 + EPS), 1 / (4 + EPS)]);
  assert.equal(clipped[31], -1);
  assertAllClose([plain[31]!], [-15 / (4 + EPS)]);
});

Deno.test("explicit norm_mean_type / norm_std_type win over the method", () => {
  // grouping a/b/c, batch mean 5, group std: a -> (x - 5) / (1 + 1e-6); b: std 0 -> 0; c -> 0
  const out = normalizeSampleScores(SAMPLES, {
    grouping: "traj_group_id",
    method: "identity",
    normMeanType: "batch",
    normStdType: "group",
  });
  const s = 1 / (1 + EPS);
  assertAllClose(out, [-4 * s, -3 * s, -2 * s, 0, 0, 0], 1e-7);
  assert.deepEqual(
    resolveNormalization({ grouping: "batch", method: "mean", normStdType: "group" }),
    { meanType: "batch", stdType: "group", clamp: null },
  );
  assert.deepEqual(resolveNormalization({ grouping: "tags", method: "asym_clip" }), {
    meanType: "group",
    stdType: "group",
    clamp: [-1, 3],
  });
  assert.deepEqual(resolveNormalization({}), { meanType: null, stdType: null, clamp: null });
});

Deno.test("edge cases: one sample, one member per group, all equal, empty batch", () => {
  assertAllClose(normalizeScores([5], null, { method: "mean_std" }), [0]);
  assertAllClose(normalizeScores([5], null, { method: "mean" }), [0]);
  assertAllClose(normalizeScores([1, 2, 3], ["p", "q", "r"], { method: "mean_std" }), [0, 0, 0]);
  assertAllClose(normalizeScores([0.3, 0.3, 0.3], null, { method: "asym_clip" }), [0, 0, 0]);
  // std below 1e-6 counts as zero
  assertAllClose(normalizeScores([1, 1 + 1e-7], null, { method: "mean_std" }), [0, 0]);
  assert.equal(normalizeScores([], null, { method: "mean_std" }).length, 0);
});

Deno.test("group keys by grouping", () => {
  assert.deepEqual(groupKeysOf(SAMPLES, "traj_group_id"), ["a", "a", "a", "b", "b", "c"]);
  assert.deepEqual(groupKeysOf(SAMPLES, "tags"), ["x", "x", "y", "y", "y", "y"]);
  assert.equal(groupKeysOf(SAMPLES, "batch"), null);
});

Deno.test("bad input names the field and what was expected", () => {
  assertThrowsMsg(
    () => normalizeScores([1], null, { method: "zscore" as NormMethod }),
    /reward normalization method "zscore"/,
    /expected one of identity, mean, mean_std, asym_clip/,
  );
  assertThrowsMsg(
    () => groupKeysOf(SAMPLES, "state"),
    /grouping "state"/,
    /expected one of traj_group_id, tags, batch/,
  );
  assertThrowsMsg(() => normalizeScores([1, 2], ["a"]), /groups has 1 keys, expected 2/);
  assertThrowsMsg(() => normalizeScores([1, NaN], null), /scores\[1\] must be a finite number/);
  assertThrowsMsg(
    () => normalizeScores([1], null, { normMeanType: "running" as "batch" }),
    /norm_mean_type "running"/,
  );
});
