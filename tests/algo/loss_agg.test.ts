// Loss aggregation (ROLL's agg_loss), hand-computed, and against the loss kernels'
// float64 reference on random batches.
//
// Batch used below: loss [[1, 2, 3, 4], [5, 6], [7, 8, 9]], mask [[1, 1, 0, 1], [0, 0], [1, 0, 1]]
// row sums S = 7 (3 tokens), 0 (none: not a valid row), 16 (2 tokens); 5 tokens, 2 valid rows.
//   token-mean              23 / 5 = 4.6
//   seq-mean-token-sum      (7 + 16) / 2 = 11.5
//   seq-mean-token-mean     (7/3 + 8) / 2 = 5.1666667
//   seq-mean-token-sum-norm 23 / 4 (longest row) = 5.75
// With weights [2, 1, 0.5]: 22 / 5 = 4.4; 22 / 2 = 11; (14/3 + 4) / 2 = 4.3333333; 22 / 4 = 5.5
import assert from "node:assert/strict";
import { aggLoss, aggLossPacked, LOSS_AGG_MODES } from "../../lib/algo/mod.ts";
import type { LossAggMode } from "../../lib/algo/mod.ts";
import { aggregate } from "../kernels/_reference.ts";
import { assertNear, assertThrowsMsg } from "./_helpers.ts";

const LOSS = [[1, 2, 3, 4], [5, 6], [7, 8, 9]];
const MASK = [[1, 1, 0, 1], [0, 0], [1, 0, 1]];
const FLAT = LOSS.flat(), FLAT_MASK = MASK.flat(), CU = [0, 4, 6, 9];

const EXPECTED: Record<LossAggMode, number> = {
  "token-mean": 4.6,
  "seq-mean-token-sum": 11.5,
  "seq-mean-token-mean": 31 / 6,
  "seq-mean-token-sum-norm": 5.75,
};
const WEIGHTED: Record<LossAggMode, number> = {
  "token-mean": 4.4,
  "seq-mean-token-sum": 11,
  "seq-mean-token-mean": 13 / 3,
  "seq-mean-token-sum-norm": 5.5,
};

Deno.test("the four modes, ragged and packed", () => {
  for (const mode of LOSS_AGG_MODES) {
    assertNear(aggLoss(LOSS, MASK, mode), EXPECTED[mode], 1e-12, mode);
    assertNear(aggLossPacked(FLAT, FLAT_MASK, CU, mode), EXPECTED[mode], 1e-12, mode);
  }
});

Deno.test("row weights", () => {
  for (const mode of LOSS_AGG_MODES) {
    assertNear(aggLoss(LOSS, MASK, mode, { weights: [2, 1, 0.5] }), WEIGHTED[mode], 1e-12, mode);
  }
});

Deno.test("explicit divisors (a micro-batch against the global batch)", () => {
  assertNear(aggLoss(LOSS, MASK, "token-mean", { batchNumTokens: 10 }), 2.3, 1e-12);
  assertNear(aggLoss(LOSS, MASK, "seq-mean-token-sum", { globalValidSamples: 4 }), 5.75, 1e-12);
  assertNear(aggLoss(LOSS, MASK, "seq-mean-token-mean", { globalValidSamples: 4 }), 31 / 12, 1e-12);
  assertNear(aggLoss(LOSS, MASK, "seq-mean-token-sum-norm", { normLength: 8 }), 23 / 8, 1e-12);
});

Deno.test("edge cases: nothing masked, non-finite values off the mask, empty batch", () => {
  for (const mode of LOSS_AGG_MODES) {
    assert.equal(aggLoss([[1, 2], [3]], [[0, 0], [0]], mode), 0, mode);
    assert.equal(aggLoss([], [], mode), 0, mode);
    assertNear(aggLoss([[NaN, 2]], [[0, 1]], mode), mode === "seq-mean-token-sum-norm" ? 1 : 2);
  }
});

Deno.test("agrees with the loss kernels' reference on random batches", () => {
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let trial = 0; trial < 20; trial++) {
    const rows = 1 + Math.floor(rand() * 6);
    const cu = [0];
    const loss: number[] = [], mask: number[] = [];
    for (let b = 0; b < rows; b++) {
      const n = Math.floor(rand() * 9);
      for (let i = 0; i < n; i++) {
        loss.push(rand() * 4 - 2);
        mask.push(rand() < 0.6 ? 1 : 0);
      }
      cu.push(loss.length);
    }
    let width = 0;
    for (let b = 0; b < rows; b++) width = Math.max(width, cu[b + 1]! - cu[b]!);
    for (const mode of LOSS_AGG_MODES) {
      const ref = aggregate(loss, mask, cu, mode, Math.max(1, width));
      assertNear(aggLossPacked(loss, mask, cu, mode), ref, 1e-9, `${mode} trial ${trial}`);
    }
  }
});

Deno.test("bad input is named", () => {
  assertThrowsMsg(
    () => aggLoss(LOSS, MASK, "seq-mean" as LossAggMode),
    /loss_agg_mode "seq-mean"/,
    /expected one of token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm/,
  );
  assertThrowsMsg(
    () => aggLoss(LOSS, MASK.slice(1), "token-mean"),
    /lossMat has 3 rows but mask has 2/,
  );
  assertThrowsMsg(
    () => aggLoss([[1, 2]], [[1]], "token-mean"),
    /lossMat\[0\] has 2 elements, expected 1/,
  );
  assertThrowsMsg(
    () => aggLoss(LOSS, MASK, "token-mean", { weights: [1] }),
    /weights has 1 elements, expected 3/,
  );
  assertThrowsMsg(
    () => aggLoss(LOSS, MASK, "token-mean", { batchNumTokens: 0 }),
    /batchNumTokens must be > 0/,
  );
  assertThrowsMsg(
    () => aggLossPacked(FLAT, FLAT_MASK, [0, 4, 8], "token-mean"),
    /cuSeqlens must start at 0 and end at 9/,
  );
  assertThrowsMsg(
    () => aggLossPacked(FLAT, FLAT_MASK, [0, 6, 4, 9], "token-mean"),
    /non-decreasing/,
  );
  assertThrowsMsg(
    () => aggLoss([[1, Infinity]], [[1, 1]], "token-mean"),
    /loss of row 0 at 1 must be a finite number/,
  );
});
