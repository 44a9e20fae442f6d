/**
 * Loss aggregation, ROLL's `agg_loss` (`loss_agg_mode`), as a float64 reference
 * for metrics and for checking the loss kernels. With S_b the masked sum of row b,
 * n_b its masked count, w_b its weight (default 1) and "valid" rows those with a
 * masked token:
 *
 * - token-mean: sum_b w_b S_b / batchNumTokens
 * - seq-mean-token-sum: sum_valid w_b S_b / globalValidSamples
 * - seq-mean-token-mean: sum_valid w_b (S_b / n_b) / globalValidSamples
 * - seq-mean-token-sum-norm (Dr. GRPO): sum_valid w_b S_b / normLength
 *
 * The divisors default to what ROLL's strategies pass in: the batch's masked token
 * count and its number of valid rows (each at least 1), and for the last mode the
 * padded row width (the longest row). Give them explicitly when a micro-batch is
 * aggregated against the global batch. Unmasked positions never enter a sum.
 *
 * @module
 */
import {
  checkFinite,
  checkLength,
  checkMask,
  checkOneOf,
  checkPositive,
  checkRows,
} from "./_check.ts";
import { LOSS_AGG_MODES, type LossAggMode, type TokenValues } from "./types.ts";

/** Divisors and weights of {@linkcode aggLoss}. */
export interface AggLossOptions {
  /** token-mean divisor (default: masked tokens in this batch, at least 1). */
  batchNumTokens?: number;
  /** seq-mean-* divisor (default: rows with a masked token, at least 1). */
  globalValidSamples?: number;
  /** seq-mean-token-sum-norm divisor (default: the longest row, ROLL's padded width). */
  normLength?: number;
  /** One weight per row (default 1). */
  weights?: TokenValues;
}

/**
 * Aggregates a ragged per-token loss (one row per sample) into a scalar.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { aggLoss } from "./loss_agg.ts";
 * const loss = [[1, 2, 3], [4, 5]];
 * const mask = [[1, 1, 0], [0, 1]];
 * assert.equal(aggLoss(loss, mask, "token-mean"), (1 + 2 + 5) / 3);
 * assert.equal(aggLoss(loss, mask, "seq-mean-token-mean"), (1.5 + 5) / 2);
 * ```
 */
export function aggLoss(
  lossMat: readonly TokenValues[],
  mask: readonly TokenValues[],
  mode: LossAggMode,
  options: AggLossOptions = {},
): number {
  checkRows(lossMat, mask, "lossMat", "mask");
  const rows = lossMat.map((row, b) => rowSums(row, mask[b]!, 0, row.length, b));
  const width = lossMat.reduce((w, r) => Math.max(w, r.length), 0);
  return combine(rows, mode, options, width);
}

/**
 * {@linkcode aggLoss} over packed sequences: `loss` and `mask` hold all tokens (T),
 * `cuSeqlens` (B + 1) the row boundaries, as the loss kernels take them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { aggLossPacked } from "./loss_agg.ts";
 * const v = aggLossPacked([1, 2, 3, 4, 5], [1, 1, 0, 0, 1], [0, 3, 5], "seq-mean-token-sum");
 * assert.equal(v, (3 + 5) / 2);
 * ```
 */
export function aggLossPacked(
  loss: TokenValues,
  mask: TokenValues,
  cuSeqlens: TokenValues,
  mode: LossAggMode,
  options: AggLossOptions = {},
): number {
  checkLength(mask, loss.length, "mask");
  checkMask(mask, "mask");
  const nb = cuSeqlens.length - 1;
  if (nb < 0 || cuSeqlens[0] !== 0 || cuSeqlens[nb] !== loss.length) {
    throw new RangeError(
      `cuSeqlens must start at 0 and end at ${loss.length} (the token count), got [${
        Array.from(cuSeqlens).join(", ")
      }]`,
    );
  }
  const rows = [];
  let width = 0;
  for (let b = 0; b < nb; b++) {
    const start = cuSeqlens[b]!, end = cuSeqlens[b + 1]!;
    if (!Number.isInteger(start) || !(end >= start)) {
      throw new RangeError(`cuSeqlens must be non-decreasing integers, got ${start} then ${end}`);
    }
    rows.push(rowSums(loss, mask, start, end, b));
    width = Math.max(width, end - start);
  }
  return combine(rows, mode, options, width);
}

interface RowSums {
  sum: number;
  count: number;
}

function rowSums(loss: TokenValues, mask: TokenValues, start: number, end: number, b: number) {
  let sum = 0, count = 0;
  for (let i = start; i < end; i++) {
    if (!mask[i]) continue;
    sum += checkFinite(loss[i], `loss of row ${b} at ${i - start}`);
    count++;
  }
  return { sum, count };
}

function combine(rows: RowSums[], mode: LossAggMode, o: AggLossOptions, width: number): number {
  checkOneOf(mode, LOSS_AGG_MODES, "loss_agg_mode");
  const w = o.weights;
  if (w) {
    checkLength(w, rows.length, "weights");
    for (let b = 0; b < w.length; b++) checkFinite(w[b], `weights[${b}]`);
  }
  const weight = (b: number) => (w ? w[b]! : 1);
  let tokens = 0, valid = 0;
  for (const r of rows) {
    tokens += r.count;
    if (r.count > 0) valid++;
  }
  let total = 0;
  switch (mode) {
    case "token-mean": {
      rows.forEach((r, b) => (total += weight(b) * r.sum));
      return total / divisor(o.batchNumTokens, Math.max(1, tokens), "batchNumTokens");
    }
    case "seq-mean-token-sum":
    case "seq-mean-token-sum-norm":
      rows.forEach((r, b) => (total += r.count > 0 ? weight(b) * r.sum : 0));
      return mode === "seq-mean-token-sum"
        ? total / divisor(o.globalValidSamples, Math.max(1, valid), "globalValidSamples")
        : total / divisor(o.normLength, Math.max(1, width), "normLength");
    case "seq-mean-token-mean":
      rows.forEach((r, b) => (total += r.count > 0 ? weight(b) * r.sum / r.count : 0));
      return total / divisor(o.globalValidSamples, Math.max(1, valid), "globalValidSamples");
  }
}

function divisor(given: number | undefined, fallback: number, name: string): number {
  return given === undefined ? fallback : checkPositive(given, name);
}
