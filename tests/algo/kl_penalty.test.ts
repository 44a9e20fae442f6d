// Per-token KL estimators (ROLL's compute_approx_kl) against hand-computed values,
// and against the loss kernels' float64 reference so both sides agree.
//
// logp = [-1, -0.5, -2], ref = [-1.5, -0.5, -1] -> d = logp - ref = [0.5, 0, -1]
//   kl  = d                 = [0.5, 0, -1]
//   abs = |d|               = [0.5, 0, 1]
//   mse = d^2 / 2           = [0.125, 0, 0.5]
//   k3  = exp(-d) + d - 1   = [0.6065307 - 0.5, 0, 2.7182818 - 2] = [0.1065307, 0, 0.7182818]
import assert from "node:assert/strict";
import { K3_CLAMP, KL_PENALTY_KINDS, klPenalty, klTerm } from "../../lib/algo/mod.ts";
import type { KlPenaltyKind } from "../../lib/algo/mod.ts";
import { klTermRef } from "../kernels/_reference.ts";
import { assertAllClose, assertNear, assertThrowsMsg } from "./_helpers.ts";

const LOGP = [-1, -0.5, -2];
const REF = [-1.5, -0.5, -1];

Deno.test("kl, abs, mse, k3 per token", () => {
  assertAllClose(klPenalty(LOGP, REF, "kl"), [0.5, 0, -1]);
  assertAllClose(klPenalty(LOGP, REF, "abs"), [0.5, 0, 1]);
  assertAllClose(klPenalty(LOGP, REF, "mse"), [0.125, 0, 0.5]);
  assertAllClose(klPenalty(LOGP, REF, "k3"), [0.1065307, 0, 0.7182818], 1e-6);
});

Deno.test("k3 is clamped to +-10 (ROLL), the others are not", () => {
  // d = -20: exp(20) - 21 = 4.85e8 -> 10; d = 20: exp(-20) + 19 = 19.000000002 -> 10
  assert.equal(K3_CLAMP, 10);
  assert.equal(klTerm(-21, -1, "k3"), 10);
  assert.equal(klTerm(-1, -21, "k3"), 10);
  assert.equal(klTerm(-1, -21, "kl"), 20);
  assert.equal(klTerm(-1, -21, "mse"), 200);
});

Deno.test("the mask zeroes the estimate", () => {
  assertAllClose(klPenalty(LOGP, REF, "kl", { mask: [1, 0, 1] }), [0.5, 0, -1]);
  assertAllClose(klPenalty(LOGP, REF, "abs", { mask: [0, 0, 0] }), [0, 0, 0]);
});

Deno.test("full takes the precomputed per-token KL", () => {
  assertAllClose(klPenalty(null, null, "full", { fullKl: [0.3, 0.2, 0.1], mask: [1, 0, 1] }), [
    0.3,
    0,
    0.1,
  ]);
  assertThrowsMsg(() => klPenalty(LOGP, REF, "full"), /"full" needs fullKl/);
});

Deno.test("agrees with the loss kernels' reference estimator", () => {
  const ds = [-25, -3, -1, -0.25, 0, 0.1, 0.7, 2, 12, 30];
  for (const kind of ["kl", "abs", "mse", "k3"] as const) {
    for (const d of ds) {
      const clamp = kind === "k3" ? 10 : 0;
      assertNear(klTerm(d - 1, -1, kind), klTermRef(d, kind, clamp), 1e-12, `${kind}(${d})`);
    }
  }
});

Deno.test("bad input is named", () => {
  assertThrowsMsg(
    () => klPenalty(LOGP, REF, "kl2" as KlPenaltyKind),
    /KL penalty kind "kl2"/,
    new RegExp(`expected one of ${KL_PENALTY_KINDS.join(", ")}`),
  );
  assertThrowsMsg(() => klPenalty(LOGP, [0, 0], "kl"), /refLogprobs has 2 elements, expected 3/);
  assertThrowsMsg(() => klPenalty(LOGP, null, "k3"), /"k3" needs both logprobs and refLogprobs/);
  assertThrowsMsg(() => klPenalty(LOGP, REF, "kl", { mask: [1, 1] }), /mask has 2 elements/);
  assertThrowsMsg(() => klPenalty([NaN, 0, 0], REF, "kl"), /logprobs\[0\] must be a finite/);
  assertThrowsMsg(
    () => klTerm(0, 0, "full" as "kl"),
    /Unknown KL estimator kind "full"/,
  );
});
