/**
 * Symmetric clipping with the clipped fraction ROLL reports (reward_clip,
 * advantage_clip and their `*_clip_frac` metrics).
 *
 * @module
 */
import { checkLength, checkMask, checkPositive } from "./_check.ts";
import type { TokenValues } from "./types.ts";

/** Clipped values and the share of counted values that were outside the bound. */
export interface Clipped {
  values: Float32Array;
  /** Values with |v| > bound over the values counted (0 when none are counted). */
  clipFrac: number;
  /** How many counted values were outside the bound. */
  clipped: number;
  /** How many values were counted (the mask's 1s, or all). */
  counted: number;
}

/**
 * Clamps values to [-bound, bound]. The fraction counts the positions where `mask`
 * is 1 (all positions without a mask); every position is clamped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { clipSymmetric } from "./clip.ts";
 * const { values, clipFrac } = clipSymmetric([-3, 0.5, 2, 9], 1, [1, 1, 1, 0]);
 * assert.deepEqual(Array.from(values), [-1, 0.5, 1, 1]);
 * assert.equal(clipFrac, 2 / 3);
 * ```
 */
export function clipSymmetric(values: TokenValues, bound: number, mask?: TokenValues): Clipped {
  checkPositive(bound, "clip bound");
  if (mask) {
    checkLength(mask, values.length, "mask");
    checkMask(mask, "mask");
  }
  const out = new Float32Array(values.length);
  let counted = 0, clipped = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!mask || mask[i]) {
      counted++;
      if (v > bound || v < -bound) clipped++;
    }
    out[i] = Math.min(bound, Math.max(-bound, v));
  }
  return { values: out, clipFrac: counted === 0 ? 0 : clipped / counted, clipped, counted };
}
