// Shared asserts of the lib/algo tests.
import assert from "node:assert/strict";

/** Asserts |actual[i] - expected[i]| <= tol (1e-6 default, relative above 1) for all i. */
export function assertAllClose(
  actual: ArrayLike<number>,
  expected: readonly number[],
  tol = 1e-6,
  what = "values",
): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!, e = expected[i]!;
    const ok = Math.abs(a - e) <= tol * Math.max(1, Math.abs(e));
    assert.ok(ok, `${what}[${i}] = ${a}, expected ${e} (tol ${tol})`);
  }
}

/** Asserts one number is within tol (relative above 1) of the expected one. */
export function assertNear(actual: number, expected: number, tol = 1e-6, what = "value"): void {
  assert.ok(
    Math.abs(actual - expected) <= tol * Math.max(1, Math.abs(expected)),
    `${what} = ${actual}, expected ${expected} (tol ${tol})`,
  );
}

/** Asserts `fn` throws an Error whose message matches every pattern. */
export function assertThrowsMsg(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof Error, "expected an Error");
    for (const p of patterns) assert.match(e.message, p);
    return true;
  });
}
