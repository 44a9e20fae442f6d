// Learning-rate schedules against values computed by hand from transformers'
// lr_lambda formulas (peak 1e-3, 4 warmup steps, 12 steps in all).
import assert from "node:assert/strict";
import { lrAt, lrFactor, resolveWarmupSteps } from "../../lib/train/lr_schedule.ts";

const base = { learningRate: 1e-3, warmupSteps: 4, totalSteps: 12 };

function expectLrs(type: string, expected: Record<number, number>): void {
  for (const [step, lr] of Object.entries(expected)) {
    const got = lrAt(Number(step), { ...base, type });
    assert.ok(Math.abs(got - lr) <= 1e-15, `${type} at step ${step}: got ${got}, expected ${lr}`);
  }
}

Deno.test("constant ignores the warmup, as transformers does", () => {
  expectLrs("constant", { 0: 1e-3, 1: 1e-3, 11: 1e-3, 50: 1e-3 });
});

Deno.test("constant_with_warmup ramps from 0 then holds", () => {
  expectLrs("constant_with_warmup", { 0: 0, 1: 2.5e-4, 2: 5e-4, 3: 7.5e-4, 4: 1e-3, 40: 1e-3 });
});

Deno.test("linear warms up then decays to 0 at totalSteps", () => {
  // after warmup: (12 - step) / 8
  expectLrs("linear", { 0: 0, 2: 5e-4, 4: 1e-3, 6: 7.5e-4, 8: 5e-4, 11: 1.25e-4, 12: 0, 30: 0 });
});

Deno.test("cosine warms up then follows half a cosine to 0", () => {
  // after warmup: 0.5 (1 + cos(pi (step - 4) / 8))
  expectLrs("cosine", {
    1: 2.5e-4,
    4: 1e-3,
    6: 0.5 * (1 + Math.SQRT1_2) * 1e-3,
    8: 5e-4,
    10: 0.5 * (1 - Math.SQRT1_2) * 1e-3,
    12: 0,
    16: 0, // transformers' formula would rise again here; we hold 0
  });
});

Deno.test("no warmup: the first update uses the peak rate", () => {
  for (const type of ["linear", "cosine", "constant_with_warmup"]) {
    assert.equal(lrAt(0, { ...base, warmupSteps: 0, type }), 1e-3, type);
  }
  assert.equal(lrFactor(5, { warmupSteps: 0, totalSteps: 10, type: "linear" }), 0.5);
});

Deno.test("unknown schedules and bad steps are refused clearly", () => {
  assert.throws(
    () => lrAt(0, { ...base, type: "polynomial" }),
    /Unknown learning-rate schedule 'polynomial': expected one of constant, constant_with_warmup, linear, cosine/,
  );
  assert.throws(() => lrAt(-1, { ...base, type: "linear" }), /step must be an integer >= 0/);
  assert.throws(() => lrAt(1.5, { ...base, type: "linear" }), /step must be an integer/);
  assert.throws(
    () => lrAt(5, { ...base, totalSteps: 0, type: "cosine" }),
    /totalSteps must be an integer >= 1/,
  );
  assert.throws(
    () => lrAt(0, { ...base, learningRate: NaN, type: "constant" }),
    /learningRate must be a finite non-negative number/,
  );
});

Deno.test("warmup steps: explicit count, else ceil(ratio * total)", () => {
  assert.equal(resolveWarmupSteps({ warmupSteps: 10, warmupRatio: 0.5, totalSteps: 100 }), 10);
  assert.equal(resolveWarmupSteps({ warmupSteps: 0, warmupRatio: 0.03, totalSteps: 200 }), 6);
  assert.equal(resolveWarmupSteps({ warmupSteps: 0, warmupRatio: 0.01, totalSteps: 150 }), 2);
  assert.equal(resolveWarmupSteps({ warmupSteps: 0, warmupRatio: 0, totalSteps: 150 }), 0);
  assert.throws(
    () => resolveWarmupSteps({ warmupSteps: 0, warmupRatio: 2, totalSteps: 1 }),
    /warmupRatio must be in \[0, 1\]/,
  );
});
