// GAE, discounted returns and segment returns of one sample, hand-computed.
//
// GAE case: mask [0, 1, 1, 0, 1], rewards [0, 0, 0, 0, 1], values [5, 0.5, 0.6, 9, 0.8],
// gamma 0.9, lambda 0.8 (gamma * lambda = 0.72).
// Over the generated tokens 1, 2, 4 (default):
//   t=4: delta = 1 + 0 - 0.8 = 0.2                A = 0.2                      R = 1
//   t=2: delta = 0 + 0.9 * 0.8 - 0.6 = 0.12       A = 0.12 + 0.72 * 0.2 = 0.264    R = 0.864
//   t=1: delta = 0 + 0.9 * 0.6 - 0.5 = 0.04       A = 0.04 + 0.72 * 0.264 = 0.23008 R = 0.73008
// Over every position (ROLL's tensors; position 3 is an env token with V = 9):
//   t=4: A = 0.2
//   t=3: delta = 0.9 * 0.8 - 9 = -8.28            A = -8.28 + 0.72 * 0.2 = -8.136
//   t=2: delta = 0.9 * 9 - 0.6 = 7.5              A = 7.5 - 0.72 * 8.136 = 1.64208  R = 2.24208
//   t=1: delta = 0.04                             A = 0.04 + 0.72 * 1.64208 = 1.2222976 R = 1.7222976
import assert from "node:assert/strict";
import { discountedReturns, gae, segmentReturns } from "../../lib/algo/mod.ts";
import type { RecursionPositions } from "../../lib/algo/mod.ts";
import { assertAllClose, assertThrowsMsg } from "./_helpers.ts";

const MASK = [0, 1, 1, 0, 1];
const REWARDS = [0, 0, 0, 0, 1];
const VALUES = [5, 0.5, 0.6, 9, 0.8];

Deno.test("gae over the generated tokens", () => {
  const { advantages, returns } = gae(REWARDS, VALUES, MASK, 0.9, 0.8);
  assertAllClose(advantages, [0, 0.23008, 0.264, 0, 0.2]);
  assertAllClose(returns, [0, 0.73008, 0.864, 0, 1]);
});

Deno.test("gae over every position (ROLL's layout)", () => {
  const { advantages, returns } = gae(REWARDS, VALUES, MASK, 0.9, 0.8, "all");
  assertAllClose(advantages, [0, 1.2222976, 1.64208, 0, 0.2]);
  assertAllClose(returns, [0, 1.7222976, 2.24208, 0, 1]);
});

Deno.test("gae limits: lambda 1, gamma 1 is R - V; lambda 0 is the one-step TD error", () => {
  // gamma = lambda = 1: A_t = (sum of later rewards) - V_t = 1 - V_t; returns 1
  const mc = gae(REWARDS, VALUES, MASK, 1, 1);
  assertAllClose(mc.advantages, [0, 0.5, 0.4, 0, 0.2]);
  assertAllClose(mc.returns, [0, 1, 1, 0, 1]);
  // lambda = 0: A_t = delta_t = [0.04, 0.12, 0.2]
  assertAllClose(gae(REWARDS, VALUES, MASK, 0.9, 0).advantages, [0, 0.04, 0.12, 0, 0.2]);
});

Deno.test("rewards off the mask are ignored", () => {
  const noisy = [7, 0, 0, 3, 1];
  assertAllClose(gae(noisy, VALUES, MASK, 0.9, 0.8).advantages, [0, 0.23008, 0.264, 0, 0.2]);
  assertAllClose(discountedReturns(noisy, MASK, 0.5, "all"), [0, 0.125, 0.25, 0, 1]);
});

Deno.test("discounted returns: generated tokens only, or every position", () => {
  // rewards [0, 1, 0, 0, 2], gamma 0.5
  // generated tokens 1, 2, 4: G4 = 2, G2 = 0 + 0.5 * 2 = 1, G1 = 1 + 0.5 * 1 = 1.5
  // every position: G4 = 2, G3 = 1, G2 = 0.5, G1 = 1 + 0.25 = 1.25
  const r = [0, 1, 0, 0, 2];
  assertAllClose(discountedReturns(r, MASK, 0.5), [0, 1.5, 1, 0, 2]);
  assertAllClose(discountedReturns(r, MASK, 0.5, "all"), [0, 1.25, 0.5, 0, 2]);
  // gamma 1 with one final reward: every generated token gets it
  assertAllClose(discountedReturns([0, 0, 0, 0, 0.7], MASK, 1), [0, 0.7, 0.7, 0, 0.7]);
});

Deno.test("segment returns: one step per turn, reward at the turn's last token", () => {
  // turns [1, 2] and [4, 5]; in-turn rewards -0.1, -0.2 are ignored;
  // gamma 0.9: G(turn 2) = 2, G(turn 1) = 1 + 0.9 * 2 = 2.8
  const r = [0, -0.1, 1, 0, -0.2, 2, 0];
  const m = [0, 1, 1, 0, 1, 1, 0];
  assertAllClose(segmentReturns(r, m, 0.9), [0, 2.8, 2.8, 0, 2, 2, 0]);
  // one turn reaching the end of the sample
  assertAllClose(segmentReturns([0, 0, 3], [0, 1, 1], 0.9), [0, 3, 3]);
});

Deno.test("empty masks give zeros", () => {
  assertAllClose(gae([1, 2], [3, 4], [0, 0], 1, 0.95).advantages, [0, 0]);
  assertAllClose(discountedReturns([1, 2], [0, 0], 1), [0, 0]);
  assertAllClose(segmentReturns([1, 2], [0, 0], 1), [0, 0]);
  assert.equal(gae([], [], [], 1, 1).advantages.length, 0);
});

Deno.test("bad input is named", () => {
  assertThrowsMsg(() => gae(REWARDS, [1, 2], MASK, 1, 1), /values has 2 elements, expected 5/);
  assertThrowsMsg(() => discountedReturns(REWARDS, [1], 1), /mask has 1 elements, expected 5/);
  assertThrowsMsg(
    () => discountedReturns(REWARDS, MASK, 1.5),
    /gamma must be in \[0, 1\], got 1.5/,
  );
  assertThrowsMsg(() => gae(REWARDS, VALUES, MASK, 1, -0.1), /lambd must be in \[0, 1\]/);
  assertThrowsMsg(
    () => discountedReturns(REWARDS, MASK, 1, "some" as RecursionPositions),
    /Unknown recursion positions "some": expected response, all/,
  );
  assertThrowsMsg(
    () => gae(REWARDS, [5, NaN, 0.6, 9, 0.8], MASK, 1, 1),
    /values\[1\] must be a finite number/,
  );
});
