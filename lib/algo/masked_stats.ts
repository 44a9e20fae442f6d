/**
 * Masked statistics over a ragged batch (one row per sample): ROLL's
 * `masked_mean`, `masked_var` (unbiased by default) and `masked_whiten`, which
 * pool every masked token of the batch. Sums run in float64.
 *
 * @module
 */
import { checkRows } from "./_check.ts";
import type { TokenValues } from "./types.ts";

/** ROLL's guard in whitening: (v - mean) / sqrt(var + 1e-8). */
const WHITEN_EPS = 1e-8;

/**
 * Number of masked (1) tokens over all rows.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { countMasked } from "./masked_stats.ts";
 * assert.equal(countMasked([[0, 1, 1], [1]]), 3);
 * ```
 */
export function countMasked(masks: readonly TokenValues[]): number {
  let n = 0;
  for (const m of masks) for (let i = 0; i < m.length; i++) n += m[i]!;
  return n;
}

/**
 * Mean of the masked tokens of all rows, 0 when nothing is masked. (ROLL divides by
 * sum(m) + 1e-8; in its float32 arithmetic the 1e-8 only matters at sum(m) = 0.)
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { maskedMean } from "./masked_stats.ts";
 * const m = maskedMean([[9, 1, 3], [5]], [[0, 1, 1], [1]]);
 * assert.ok(Math.abs(m - 3) < 1e-6);
 * ```
 */
export function maskedMean(rows: readonly TokenValues[], masks: readonly TokenValues[]): number {
  checkRows(rows, masks, "values", "mask");
  const n = countMasked(masks);
  return n === 0 ? 0 : sumsOf(rows, masks).sum / n;
}

/**
 * Variance of the masked tokens of all rows; unbiased (n - 1) by default like
 * ROLL's `masked_var`. Throws when no token is masked, or only one when unbiased.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { maskedVar } from "./masked_stats.ts";
 * // tokens 1, 3, 5: mean 3, squared deviations 4 + 0 + 4 = 8, / (3 - 1) = 4
 * assert.ok(Math.abs(maskedVar([[9, 1, 3], [5]], [[0, 1, 1], [1]]) - 4) < 1e-6);
 * ```
 */
export function maskedVar(
  rows: readonly TokenValues[],
  masks: readonly TokenValues[],
  unbiased = true,
): number {
  checkRows(rows, masks, "values", "mask");
  return varOf(rows, masks, unbiased).variance;
}

/**
 * ROLL's `masked_whiten`: (v - mean) / sqrt(var + 1e-8) with the masked mean and
 * unbiased masked variance of the whole batch, applied to every position (masked
 * or not; callers zero the unmasked ones). `shiftMean: false` adds the mean back.
 * Throws when fewer than two tokens are masked.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { maskedWhiten } from "./masked_stats.ts";
 * // masked tokens 1, 3, 5: mean 3, unbiased variance 4 -> (v - 3) / 2
 * const [a, b] = maskedWhiten([[9, 1, 3], [5]], [[0, 1, 1], [1]]);
 * assert.deepEqual(Array.from(a!, (x) => Math.round(x * 1e4) / 1e4), [3, -1, 0]);
 * assert.ok(Math.abs(b![0]! - 1) < 1e-6);
 * ```
 */
export function maskedWhiten(
  rows: readonly TokenValues[],
  masks: readonly TokenValues[],
  options: { shiftMean?: boolean } = {},
): Float32Array[] {
  checkRows(rows, masks, "values", "mask");
  const { mean, variance } = varOf(rows, masks, true);
  const scale = 1 / Math.sqrt(variance + WHITEN_EPS);
  const back = options.shiftMean === false ? mean : 0;
  return rows.map((row) => {
    const out = new Float32Array(row.length);
    for (let i = 0; i < row.length; i++) out[i] = (row[i]! - mean) * scale + back;
    return out;
  });
}

function sumsOf(rows: readonly TokenValues[], masks: readonly TokenValues[]) {
  let sum = 0;
  for (let b = 0; b < rows.length; b++) {
    const r = rows[b]!, m = masks[b]!;
    for (let i = 0; i < r.length; i++) if (m[i]) sum += r[i]!;
  }
  return { sum };
}

function varOf(rows: readonly TokenValues[], masks: readonly TokenValues[], unbiased: boolean) {
  const n = countMasked(masks);
  if (n === 0) throw new RangeError("Masked variance needs at least one masked token, got 0");
  if (unbiased && n === 1) {
    throw new RangeError(
      "Unbiased masked variance needs at least two masked tokens, got 1 (n - 1 = 0)",
    );
  }
  const mean = sumsOf(rows, masks).sum / n;
  let sq = 0;
  for (let b = 0; b < rows.length; b++) {
    const r = rows[b]!, m = masks[b]!;
    for (let i = 0; i < r.length; i++) if (m[i]) sq += (r[i]! - mean) ** 2;
  }
  let variance = sq / n;
  if (unbiased) variance *= n / (n - 1);
  return { mean, variance };
}
