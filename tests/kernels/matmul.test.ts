// SGEMM and the linear layer against the float64 reference, and the linear
// backward pass against finite differences.
//
// Tolerance of a GEMM entry: (K + 4) * 2^-23 * mag, where mag is the same sum
// over absolute values (|alpha| sum_p |a_ip b_pj| + |beta c_ij|): twice the
// classical worst-case bound of float32 summation, so it never flakes, yet a
// single missing or wrong term (error ~ mag / K) is far above it.
import assert from "node:assert/strict";
import { linearBackward, linearForward, sgemm, Tensor } from "../../ffi/mod.ts";
import { assertClose, assertGrad, dot, f32, fdGrad, nans, openKernels, Rng } from "./_helpers.ts";
import { linearBackwardRef, linearForwardRef, sgemmRef } from "./_reference.ts";

function gemmTol(mag: ArrayLike<number>, k: number): Float64Array {
  return Float64Array.from(mag, (x) => (k + 4) * 2 ** -23 * x + 1e-30);
}

// (m, n, k): tiny, primes, the MR = 6 / NR = 16 tile edges, both sides of the blocking
// edges of sgemm.cpp (MC = 120, KC = 256 and the retuned MC = 48, KC = 512), N beyond
// NC = 3072, K over several KC blocks; both sides of the dot-product path for
// transposed B (m <= 16).
const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [7, 13, 5],
  [6, 16, 8],
  [120, 16, 256],
  [121, 17, 257],
  [48, 16, 512],
  [49, 33, 513],
  [5, 3100, 9],
  [2, 17, 1025],
  [1, 3300, 64], // one row (decoding): the columns are split over the threads
  [16, 70, 131], // the dot-product path's largest m (four rows per read of B, then the rest)
  [11, 600, 200], // m not a multiple of four, parallel over the columns
  [17, 40, 96], // one past it: the packed path
];

Deno.test("sgemm matches the reference over shapes, transposes, alpha and beta (NaN in C ignored when beta = 0)", () => {
  using k = openKernels();
  const rng = new Rng("sgemm");
  for (const [m, n, kk] of SHAPES) {
    for (const transA of [false, true]) {
      for (const transB of [false, true]) {
        for (const [alpha, beta] of [[1, 0], [-0.75, 0.5], [2, -1]] as const) {
          const aData = rng.randn(m * kk), bData = rng.randn(kk * n);
          const cData = beta === 0 ? new Float32Array(m * n).fill(NaN) : rng.randn(m * n);
          using a = f32(k, aData, transA ? [kk, m] : [m, kk]);
          using b = f32(k, bData, transB ? [n, kk] : [kk, n]);
          using c = f32(k, cData, [m, n]);
          sgemm(k, c, a, b, { transA, transB, alpha, beta });
          const ref = sgemmRef({
            transA,
            transB,
            m,
            n,
            k: kk,
            alpha,
            beta,
            a: aData,
            lda: transA ? m : kk,
            b: bData,
            ldb: transB ? kk : n,
            c: cData,
            ldc: n,
          });
          const what =
            `sgemm m=${m} n=${n} k=${kk} transA=${transA} transB=${transB} alpha=${alpha} beta=${beta}`;
          assertClose(c.view(), ref.c, what, { tol: gemmTol(ref.mag, kk) });
        }
      }
    }
  }
});

Deno.test("sgemm with alpha = 0 scales C by beta, and clears NaN when beta = 0 too", () => {
  using k = openKernels();
  const rng = new Rng("sgemm-alpha0");
  const [m, n, kk] = [9, 21, 7];
  using a = f32(k, rng.randn(m * kk), [m, kk]);
  using b = f32(k, rng.randn(kk * n), [kk, n]);
  const cData = rng.randn(m * n);
  using c = f32(k, cData, [m, n]);
  sgemm(k, c, a, b, { alpha: 0, beta: 0.5 });
  assertClose(c.view(), Float64Array.from(cData, (x) => 0.5 * x), "alpha=0 beta=0.5", {
    rtol: 1e-7,
  });
  c.view().fill(NaN);
  sgemm(k, c, a, b, { alpha: 0, beta: 0 });
  assert.ok(c.view().every((x) => x === 0), "alpha = 0, beta = 0 must write zeros over NaN");
});

Deno.test("sgemm honours leading dimensions larger than the row and leaves the padding alone", () => {
  using k = openKernels();
  const rng = new Rng("sgemm-ld");
  for (const [m, n, kk] of [[7, 13, 5], [121, 19, 258], [3, 3077, 4]] as const) {
    for (const transA of [false, true]) {
      for (const transB of [false, true]) {
        const lda = (transA ? m : kk) + 3, ldb = (transB ? kk : n) + 5, ldc = n + 2;
        const aData = rng.randn((transA ? kk : m) * lda);
        const bData = rng.randn((transB ? n : kk) * ldb);
        const cData = rng.randn(m * ldc);
        using a = f32(k, aData);
        using b = f32(k, bData);
        using c = f32(k, cData);
        k.check(
          "arl_sgemm",
          k.sym.arl_sgemm(
            k.ctx,
            c.ptr,
            a.ptr,
            b.ptr,
            transA ? 1 : 0,
            transB ? 1 : 0,
            m,
            n,
            kk,
            1.5,
            0.25,
            lda,
            ldb,
            ldc,
          ),
        );
        const ref = sgemmRef({
          transA,
          transB,
          m,
          n,
          k: kk,
          alpha: 1.5,
          beta: 0.25,
          a: aData,
          lda,
          b: bData,
          ldb,
          c: cData,
          ldc,
        });
        const what =
          `sgemm lda=${lda} ldb=${ldb} ldc=${ldc} m=${m} n=${n} k=${kk} tA=${transA} tB=${transB}`;
        // The padding columns of C keep their old values exactly (ref.c copies them).
        const tol = gemmTol(ref.mag, kk);
        assertClose(c.view(), ref.c, what, { tol });
        for (let i = 0; i < m; i++) {
          for (let j = n; j < ldc; j++) {
            assert.equal(
              c.view()[i * ldc + j],
              cData[i * ldc + j],
              `${what}: padding C[${i}, ${j}] changed`,
            );
          }
        }
      }
    }
  }
});

Deno.test("linear forward: y = x w^T + bias, accumulate flag, NaN in y ignored without accumulate", () => {
  using k = openKernels();
  const rng = new Rng("linear-forward");
  for (
    const [m, n, kk] of [[1, 1, 1], [7, 13, 5], [120, 16, 256], [121, 17, 257], [49, 16, 513], [
      4,
      3075,
      6,
    ]] as const
  ) {
    for (const withBias of [false, true]) {
      for (const accumulate of [false, true]) {
        const x = rng.randn(m * kk), w = rng.randn(n * kk), bias = rng.randn(n);
        const prev = accumulate ? rng.randn(m * n) : new Float32Array(m * n).fill(NaN);
        using tx = f32(k, x, [m, kk]);
        using tw = f32(k, w, [n, kk]);
        using tb = f32(k, bias, [n]);
        using ty = f32(k, prev, [m, n]);
        linearForward(k, ty, tx, tw, withBias ? tb : null, accumulate);
        const ref = linearForwardRef(
          x,
          w,
          withBias ? bias : null,
          m,
          n,
          kk,
          accumulate ? prev : null,
        );
        assertClose(
          ty.view(),
          ref.y,
          `linear m=${m} n=${n} k=${kk} bias=${withBias} acc=${accumulate}`,
          {
            tol: gemmTol(ref.mag, kk),
          },
        );
      }
    }
  }
});

Deno.test("linear backward: dx written or accumulated, dw and dbias accumulate, null gradients skipped", () => {
  using k = openKernels();
  const rng = new Rng("linear-backward");
  for (
    const [m, n, kk] of [[1, 1, 1], [7, 13, 5], [121, 17, 257], [47, 18, 511], [
      130,
      3074,
      3,
    ]] as const
  ) {
    const x = rng.randn(m * kk), w = rng.randn(n * kk), dy = rng.randn(m * n);
    const ref = linearBackwardRef(dy, x, w, m, n, kk);
    using tx = f32(k, x, [m, kk]);
    using tw = f32(k, w, [n, kk]);
    using tdy = f32(k, dy, [m, n]);
    for (const accumulateDx of [false, true]) {
      const dx0 = accumulateDx ? rng.randn(m * kk) : new Float32Array(m * kk).fill(NaN);
      const dw0 = rng.randn(n * kk), db0 = rng.randn(n);
      using dx = f32(k, dx0, [m, kk]);
      using dw = f32(k, dw0, [n, kk]);
      using dbias = f32(k, db0, [n]);
      linearBackward(k, { dx, dw, dbias }, tdy, tx, tw, accumulateDx);
      const what = `linear backward m=${m} n=${n} k=${kk} accumulateDx=${accumulateDx}`;
      const expDx = Float64Array.from(ref.dx, (g, i) => g + (accumulateDx ? dx0[i]! : 0));
      const dxTol = Float64Array.from(
        ref.dxMag,
        (g, i) => (n + 4) * 2 ** -23 * (g + (accumulateDx ? Math.abs(dx0[i]!) : 0)),
      );
      assertClose(dx.view(), expDx, `${what}: dx`, { tol: dxTol });
      const expDw = Float64Array.from(ref.dw, (g, i) => g + dw0[i]!);
      const dwTol = Float64Array.from(
        ref.dwMag,
        (g, i) => (m + 4) * 2 ** -23 * (g + Math.abs(dw0[i]!)),
      );
      assertClose(dw.view(), expDw, `${what}: dw +=`, { tol: dwTol });
      const expDb = Float64Array.from(ref.dbias, (g, i) => g + db0[i]!);
      const dbTol = Float64Array.from(
        ref.dbiasMag,
        (g, i) => 4 * 2 ** -23 * (g + Math.abs(db0[i]!)),
      );
      assertClose(dbias.view(), expDb, `${what}: dbias +=`, { tol: dbTol });
    }
    // Only one gradient at a time: the others are null and nothing else is touched.
    {
      using dw = f32(k, new Float32Array(n * kk), [n, kk]);
      linearBackward(k, { dw }, tdy, tx, tw);
      assertClose(dw.view(), ref.dw, `m=${m} n=${n} k=${kk} dw only`, {
        tol: gemmTol(ref.dwMag, m),
      });
      using dbias = f32(k, new Float32Array(n), [n]);
      linearBackward(k, { dbias }, tdy, tx, tw);
      assertClose(dbias.view(), ref.dbias, `m=${m} n=${n} k=${kk} dbias only`, {
        tol: gemmTol(ref.dbiasMag, 1),
      });
      using dx = nans(k, [m, kk]);
      linearBackward(k, { dx }, tdy, tx, tw);
      assertClose(dx.view(), ref.dx, `m=${m} n=${n} k=${kk} dx only`, {
        tol: gemmTol(ref.dxMag, n),
      });
    }
  }
});

Deno.test("linear backward matches finite differences of the reference forward", () => {
  using k = openKernels();
  const rng = new Rng("linear-fd");
  for (const [m, n, kk] of [[1, 1, 1], [3, 4, 5], [5, 2, 7]] as const) {
    const x = rng.randn(m * kk), w = rng.randn(n * kk), bias = rng.randn(n), g = rng.randn(m * n);
    const loss = (xx: ArrayLike<number>, ww: ArrayLike<number>, bb: ArrayLike<number>) =>
      dot(g, linearForwardRef(xx, ww, bb, m, n, kk).y);
    using tx = f32(k, x, [m, kk]);
    using tw = f32(k, w, [n, kk]);
    using tg = f32(k, g, [m, n]);
    using dx = nans(k, [m, kk]);
    using dw = new Tensor(k, [n, kk], "f32");
    using dbias = new Tensor(k, [n], "f32");
    linearBackward(k, { dx, dw, dbias }, tg, tx, tw);
    const what = `linear m=${m} n=${n} k=${kk}`;
    assertGrad(dx.view(), fdGrad((xx) => loss(xx, w, bias), x), `${what} dx`);
    assertGrad(dw.view(), fdGrad((ww) => loss(x, ww, bias), w), `${what} dw`);
    assertGrad(dbias.view(), fdGrad((bb) => loss(x, w, bb), bias), `${what} dbias`);
  }
});
