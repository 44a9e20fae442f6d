// SGEMM with few rows against large transposed weights (a decode step: 17-128 rows) runs as
// C^T = B A^T, with the weights' rows read in place; it must give the bits of the direct product.
// The direct product here is the same call with A given transposed (trans_a), which takes the
// ordinary packed path: every element sums the same products in the same order either way.
import assert from "node:assert/strict";
import { sgemm } from "../../ffi/mod.ts";
import { f32, openKernels, Rng } from "./_helpers.ts";

const bits = (x: Float32Array) => new Uint32Array(x.slice().buffer);

Deno.test("sgemm with 17-128 rows against large transposed weights gives the direct product's bits", () => {
  using k = openKernels();
  const rng = new Rng("sgemm few rows");
  // (m, n, k, alpha, beta): n past a 4096-row chunk and not a multiple of 16; k past one 512
  // block; beta 1 accumulates, beta 0 overwrites
  const cases: [number, number, number, number, number][] = [
    [17, 1000, 600, 1, 0],
    [64, 4100, 520, 1, 0],
    [128, 700, 600, 1, 1],
    [33, 2050, 777, 1, 1],
    [100, 4097, 1030, 1, 0],
    [5, 1000, 300, 1, 0], // the dot-product path, for comparison of the shapes' setup
    // another alpha over several K blocks takes the packed path (C^T's partial tiles would round
    // alpha x a block's sum otherwise); so do rows shallower than 512 (slower as C^T)
    [33, 4100, 600, 0.37, 0],
    [64, 8192, 128, 1, 0],
  ];
  for (const [m, n, kk, alpha, beta] of cases) {
    const a = rng.randn(m * kk), b = rng.randn(n * kk), c0 = rng.randn(m * n);
    const at = new Float32Array(kk * m);
    for (let i = 0; i < m; i++) for (let p = 0; p < kk; p++) at[p * m + i] = a[i * kk + p]!;
    using ta = f32(k, a, [m, kk]);
    using tat = f32(k, at, [kk, m]);
    using tb = f32(k, b, [n, kk]);
    using few = f32(k, c0, [m, n]);
    using direct = f32(k, c0, [m, n]);
    sgemm(k, few, ta, tb, { transB: true, alpha, beta });
    sgemm(k, direct, tat, tb, { transA: true, transB: true, alpha, beta });
    const what = `m ${m} n ${n} k ${kk} alpha ${alpha} beta ${beta}`;
    const got = few.view(), want = direct.view();
    assert.ok(got.every(Number.isFinite), what);
    if (m > 16) assert.deepEqual(bits(got), bits(want), what);
    // and both near a float64 product
    for (const [i, j] of [[0, 0], [m - 1, n - 1], [m >> 1, n >> 1]] as const) {
      let s = 0;
      for (let p = 0; p < kk; p++) s += a[i * kk + p]! * b[j * kk + p]!;
      const exp = alpha * s + beta * c0[i * n + j]!;
      assert.ok(
        Math.abs(got[i * n + j]! - exp) <= 1e-4 * (1 + Math.abs(exp)),
        `${what} (${i}, ${j})`,
      );
    }
  }
});
