// Masked mean / variance / whitening over a ragged batch (ROLL's masked_mean,
// masked_var, masked_whiten), against hand-computed values.
//
// Batch used below: rows [[2, 100, 4], [6, 8]] with masks [[1, 0, 1], [1, 1]]:
// masked tokens 2, 4, 6, 8 -> n = 4, mean 5, squared deviations 9 + 1 + 1 + 9 = 20,
// biased variance 20 / 4 = 5, unbiased 20 / 3 = 6.6667, std sqrt(20 / 3) = 2.5819889.
import assert from "node:assert/strict";
import { countMasked, maskedMean, maskedVar, maskedWhiten } from "../../lib/algo/mod.ts";
import { assertAllClose, assertNear, assertThrowsMsg } from "./_helpers.ts";

const ROWS = [[2, 100, 4], [6, 8]];
const MASKS = [[1, 0, 1], [1, 1]];
const STD = 2.5819889;

Deno.test("masked mean, biased and unbiased variance", () => {
  assert.equal(countMasked(MASKS), 4);
  assertNear(maskedMean(ROWS, MASKS), 5);
  assertNear(maskedVar(ROWS, MASKS), 20 / 3);
  assertNear(maskedVar(ROWS, MASKS, false), 5);
});

Deno.test("masked mean of nothing is 0", () => {
  assert.equal(maskedMean([[1, 2]], [[0, 0]]), 0);
  assert.equal(maskedMean([], []), 0);
});

Deno.test("masked whiten: (v - 5) / 2.5819889 on every position", () => {
  const [a, b] = maskedWhiten(ROWS, MASKS);
  // 2 -> -3/2.582 = -1.1618950; 100 (unmasked, still transformed) -> 95/2.582 = 36.793
  assertAllClose(a!, [-3 / STD, 95 / STD, -1 / STD], 1e-6);
  assertAllClose(b!, [1 / STD, 3 / STD], 1e-6);
  // shiftMean false adds the mean back
  const [c] = maskedWhiten(ROWS, MASKS, { shiftMean: false });
  assertAllClose(c!, [-3 / STD + 5, 95 / STD + 5, -1 / STD + 5], 1e-6);
});

Deno.test("variance and whitening need enough masked tokens", () => {
  assertThrowsMsg(() => maskedVar([[1, 2]], [[0, 0]]), /at least one masked token/);
  assertThrowsMsg(() => maskedVar([[1, 2]], [[0, 1]]), /at least two masked tokens, got 1/);
  assertThrowsMsg(() => maskedWhiten([[1, 2]], [[1, 0]]), /at least two/);
  // the biased variance of one token is 0
  assert.equal(maskedVar([[1, 2]], [[0, 1]], false), 0);
});

Deno.test("mismatched rows and bad masks are named", () => {
  assertThrowsMsg(() => maskedMean([[1, 2]], []), /values has 1 rows but mask has 0/);
  assertThrowsMsg(() => maskedMean([[1, 2]], [[1]]), /values\[0\] has 2 elements, expected 1/);
  assertThrowsMsg(() => maskedMean([[1, 2]], [[1, 2]]), /mask\[0\]\[1\] is 2, expected 0 or 1/);
});
