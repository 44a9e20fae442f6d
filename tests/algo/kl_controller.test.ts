// KL controllers: fixed, and adaptive coef *= 1 + clip(KL / target - 1, -0.2, 0.2) * n / horizon.
//
// Adaptive sequence (init 0.2, target 0.1, horizon 100, 10 samples per update):
//   KL 0.15: error 0.5 -> 0.2:   0.2 * 1.02 = 0.204
//   KL 0.05: error -0.5 -> -0.2: 0.204 * 0.98 = 0.19992
//   KL 0.11: error 0.1:          0.19992 * 1.01 = 0.2019192
//   KL 0.1:  error 0:            unchanged
import assert from "node:assert/strict";
import {
  AdaptiveKlController,
  createKlController,
  FixedKlController,
  klControllerFromJSON,
} from "../../lib/algo/mod.ts";
import { assertNear, assertThrowsMsg } from "./_helpers.ts";

Deno.test("fixed controller never moves", () => {
  const c = new FixedKlController(0.05);
  c.update(10, 128);
  c.update(0, 128);
  assert.equal(c.value, 0.05);
  assert.deepEqual(c.toJSON(), { kind: "fixed", value: 0.05 });
});

Deno.test("adaptive controller follows the clipped proportional rule", () => {
  const c = new AdaptiveKlController(0.2, 0.1, 100);
  c.update(0.15, 10);
  assertNear(c.value, 0.204, 1e-12);
  c.update(0.05, 10);
  assertNear(c.value, 0.19992, 1e-12);
  c.update(0.11, 10);
  assertNear(c.value, 0.2019192, 1e-12);
  c.update(0.1, 50);
  assertNear(c.value, 0.2019192, 1e-12);
  // a batch as large as the horizon moves at most 20%
  const big = new AdaptiveKlController(1, 0.1, 64);
  big.update(100, 64);
  assertNear(big.value, 1.2, 1e-12);
});

Deno.test("state round-trips through JSON and resumes identically", () => {
  const a = new AdaptiveKlController(0.2, 0.1, 100);
  a.update(0.15, 10);
  const saved = JSON.parse(JSON.stringify(a));
  assert.deepEqual(saved, { kind: "adaptive", value: a.value, target: 0.1, horizon: 100 });
  const b = klControllerFromJSON(saved);
  a.update(0.05, 10);
  b.update(0.05, 10);
  assert.equal(b.value, a.value);
  const f = klControllerFromJSON(JSON.parse(JSON.stringify(new FixedKlController(0.3))));
  assert.ok(f instanceof FixedKlController);
  assert.equal(f.value, 0.3);
});

Deno.test("createKlController: adaptive exactly when a target KL is set", () => {
  assert.ok(createKlController({ initKlCoef: 0.2 }) instanceof FixedKlController);
  assert.ok(createKlController({ initKlCoef: 0.2, targetKl: null }) instanceof FixedKlController);
  const a = createKlController({ initKlCoef: 0.2, targetKl: 0.1, klHorizon: 10000 });
  assert.ok(a instanceof AdaptiveKlController);
  assert.equal(a.target, 0.1);
  assert.equal(a.horizon, 10000);
});

Deno.test("bad settings and states are named", () => {
  assertThrowsMsg(() => new FixedKlController(-0.1), /KL coefficient must be >= 0, got -0.1/);
  assertThrowsMsg(() => new AdaptiveKlController(0.1, 0, 10), /target KL must be > 0, got 0/);
  assertThrowsMsg(() => new AdaptiveKlController(0.1, 0.1, 0), /KL horizon must be > 0/);
  assertThrowsMsg(
    () => createKlController({ initKlCoef: 0.1, targetKl: 0.1 }),
    /needs klHorizon/,
  );
  assertThrowsMsg(
    () => klControllerFromJSON({ kind: "linear", value: 1 }),
    /Unknown KL controller kind "linear": expected "fixed" or "adaptive"/,
  );
  assertThrowsMsg(() => klControllerFromJSON(null), /state must be an object/);
  assertThrowsMsg(
    () => klControllerFromJSON({ kind: "adaptive", value: 0.1, target: 0.1 }),
    /KL horizon must be a finite number, got undefined/,
  );
  assertThrowsMsg(
    () => new AdaptiveKlController(0.1, 0.1, 10).update(NaN, 1),
    /current KL must be a finite number/,
  );
});
