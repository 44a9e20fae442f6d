// Shared helpers of the kernel tests: a seeded random stream, tensors from
// arrays, tolerance checks and central finite differences.
import assert from "node:assert/strict";
import { Kernels, Tensor } from "../../ffi/mod.ts";

/** The base seed: AGENTRL_TEST_SEED overrides it (for soak runs); fixed by default. */
export const BASE_SEED: number = (() => {
  const env = Deno.permissions.querySync({ name: "env", variable: "AGENTRL_TEST_SEED" });
  const text = env.state === "granted" ? Deno.env.get("AGENTRL_TEST_SEED") : undefined;
  const n = text === undefined ? NaN : Number(text);
  return Number.isInteger(n) ? n : 20240611;
})();

/** A small seeded generator (xoshiro128**), independent of the kernels' own stream. */
export class Rng {
  #s: Uint32Array;
  /** A stream for `name`, derived from {@linkcode BASE_SEED}. */
  constructor(name: string, seed = BASE_SEED) {
    let h = (seed ^ 0x9e3779b9) >>> 0;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
    this.#s = new Uint32Array(4);
    for (let i = 0; i < 4; i++) {
      // splitmix32 to spread the seed over the state.
      h = (h + 0x9e3779b9) >>> 0;
      let z = h;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      this.#s[i] = (z ^ (z >>> 16)) >>> 0;
    }
    if (this.#s.every((x) => x === 0)) this.#s[0] = 1;
  }
  #next(): number {
    const s = this.#s;
    const result = Math.imul(rotl(Math.imul(s[1]!, 5), 7), 9) >>> 0;
    const t = s[1]! << 9;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return result;
  }
  /** Uniform in [0, 1). */
  uniform(): number {
    return (this.#next() * 2 ** 21 + (this.#next() >>> 11)) / 2 ** 53;
  }
  /** Uniform in [lo, hi). */
  range(lo: number, hi: number): number {
    return lo + (hi - lo) * this.uniform();
  }
  /** Integer in lo..hi (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.uniform() * (hi - lo + 1));
  }
  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.uniform();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.uniform());
  }
  /** True with probability p. */
  chance(p: number): boolean {
    return this.uniform() < p;
  }
  /** Normal float32 values times `scale`. */
  randn(n: number, scale = 1): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.normal() * scale;
    return out;
  }
  /** Uniform float32 values in [lo, hi). */
  uniformArray(n: number, lo: number, hi: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.range(lo, hi);
    return out;
  }
  /** Integers in lo..hi. */
  ints(n: number, lo: number, hi: number): Int32Array {
    const out = new Int32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(lo, hi);
    return out;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** Opens the context every kernel test uses. */
export function openKernels(): Kernels {
  return Kernels.open({ threads: 2 });
}

/** A native f32 tensor holding a copy of `data`. */
export function f32(k: Kernels, data: ArrayLike<number>, shape?: readonly number[]): Tensor<"f32"> {
  const a = data instanceof Float32Array ? data : Float32Array.from(data);
  return Tensor.from(k, a, shape ?? [a.length]);
}

/** A native i32 tensor holding a copy of `data`. */
export function i32(k: Kernels, data: ArrayLike<number>, shape?: readonly number[]): Tensor<"i32"> {
  const a = data instanceof Int32Array ? data : Int32Array.from(data);
  return Tensor.from(k, a, shape ?? [a.length]);
}

/** A native f32 tensor filled with NaN (to prove that an output is written, not accumulated). */
export function nans(k: Kernels, shape: readonly number[]): Tensor<"f32"> {
  const t = new Tensor(k, shape, "f32");
  t.view().fill(NaN);
  return t;
}

/** The largest |x|. */
export function maxAbs(x: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]!));
  return m;
}

/** Options of {@linkcode assertClose}: |actual - expected| <= atol + rtol |expected| per element. */
export interface CloseOptions {
  rtol?: number;
  atol?: number;
  /** Per-element absolute tolerances (added to atol). */
  tol?: ArrayLike<number>;
  /** Allow an all-zero expectation (otherwise the check is rejected as one that cannot fail). */
  allowZero?: boolean;
}

/**
 * Asserts elementwise closeness. NaN is only accepted where NaN is expected.
 * Unless allowZero, an all-zero expected array is an error: such a check could
 * pass for a kernel that writes nothing.
 */
export function assertClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  what: string,
  o: CloseOptions = {},
): void {
  assert.equal(
    actual.length,
    expected.length,
    `${what}: length ${actual.length} != ${expected.length}`,
  );
  if (!o.allowZero) {
    assert.ok(
      maxAbs(expected) > 0,
      `${what}: the expectation is all zero, so the check could not fail`,
    );
  }
  const rtol = o.rtol ?? 0;
  const atol = o.atol ?? 0;
  const bad: string[] = [];
  let count = 0;
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i]!;
    const a = actual[i]!;
    if (Number.isNaN(e)) {
      if (!Number.isNaN(a)) {
        count++;
        if (bad.length < 5) bad.push(`[${i}] got ${a}, expected NaN`);
      }
      continue;
    }
    const tol = atol + rtol * Math.abs(e) + (o.tol ? o.tol[i]! : 0);
    const err = Math.abs(a - e);
    if (!(err <= tol)) {
      count++;
      if (bad.length < 5) {
        bad.push(
          `[${i}] got ${a}, expected ${e} (error ${err.toExponential(2)} > ${
            tol.toExponential(2)
          })`,
        );
      }
    }
  }
  if (count > 0) {
    assert.fail(
      `${what}: ${count} of ${expected.length} values differ (seed ${BASE_SEED}):\n  ${
        bad.join("\n  ")
      }`,
    );
  }
}

/** A scalar close to a value: |a - e| <= atol + rtol |e|. */
export function assertNear(
  actual: number,
  expected: number,
  what: string,
  rtol = 1e-6,
  atol = 1e-7,
): void {
  const err = Math.abs(actual - expected);
  assert.ok(
    err <= atol + rtol * Math.abs(expected),
    `${what}: got ${actual}, expected ${expected} (error ${err.toExponential(2)})`,
  );
}

/**
 * Central finite differences of a float64 scalar function at x0: the gradient
 * d f / d x0[i] for every i (step h scaled by max(1, |x0[i]|)).
 */
export function fdGrad(
  f: (x: Float64Array) => number,
  x0: ArrayLike<number>,
  h = 1e-6,
): Float64Array {
  const x = Float64Array.from(x0);
  const g = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const xi = x[i]!;
    const step = h * Math.max(1, Math.abs(xi));
    x[i] = xi + step;
    const fp = f(x);
    x[i] = xi - step;
    const fm = f(x);
    x[i] = xi;
    g[i] = (fp - fm) / (2 * step);
  }
  return g;
}

/** sum_i g[i] * y[i] (the scalar a backward pass is checked through). */
export function dot(g: ArrayLike<number>, y: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < y.length; i++) s += g[i]! * y[i]!;
  return s;
}

/** Checks a kernel gradient against finite differences: error <= rtol * max|fd| + rtol |fd_i|. */
export function assertGrad(
  kernel: ArrayLike<number>,
  fd: ArrayLike<number>,
  what: string,
  rtol = 2e-4,
): void {
  assertClose(kernel, fd, `${what} vs finite differences`, { rtol, atol: rtol * maxAbs(fd) });
}

/** A copy as float64 (the reference's working precision). */
export function f64(x: ArrayLike<number>): Float64Array {
  return Float64Array.from(x);
}
