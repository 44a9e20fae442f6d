/**
 * sgemm, linearForward and linearBackward cases (fp32 and bf16 weights, batch and few rows).
 *
 * @module
 */
import { linearBackward, linearForward, sgemm } from "../../../ffi/mod.ts";
import {
  bf16Bits,
  type Case,
  delta,
  EXACT,
  Rand,
  Scope,
  TOL_BF16,
  TOL_FP32,
  TOL_GEMM,
} from "./harness.ts";

/** The linear cases' inputs: x [37, 96], w [53, 96] and the rest, one seeded stream. */
function linearData(seed: number) {
  const [lm, ln, lk] = [37, 53, 96];
  const r = new Rand("linear", seed);
  const [x, w, bias, y0] = [r.randn(lm * lk), r.randn(ln * lk, 0.1), r.randn(ln), r.randn(lm * ln)];
  const [dy, dx0, db0] = [r.randn(lm * ln), r.randn(lm * lk), r.randn(ln)];
  const dw0 = r.randn(ln * lk, 0.1);
  return { lm, ln, lk, x, w, w16: bf16Bits(w), bias, y0, dy, dx0, db0, dw0 };
}

/** sgemm in every transpose and with padded leading dimensions; linearForward. */
export function matmulCases(seed: number): Case[] {
  const cases: Case[] = [];
  const [m, n, kk] = [67, 45, 83];
  const combos = [[false, false], [false, true], [true, false], [true, true]] as const;
  for (const [ta, tb] of combos) {
    const tr = `${ta ? "T" : "N"}${tb ? "T" : "N"}`;
    const r = new Rand(`sgemm ${tr}`, seed);
    const [a, b, c0] = [r.randn(m * kk), r.randn(kk * n), r.randn(m * n)];
    const aShape = ta ? [kk, m] : [m, kk], bShape = tb ? [n, kk] : [kk, n];
    for (const [alpha, beta] of [[1, 0], [0.7, 0.3]] as const) {
      cases.push({
        op: `sgemm ${tr} alpha=${alpha} beta=${beta}`,
        tol: TOL_GEMM,
        run: (s) => {
          // beta 0 must ignore C's old content, NaNs included.
          const c = beta === 0 ? s.nan([m, n]) : s.f32(c0, [m, n]);
          const o = { transA: ta, transB: tb, alpha, beta };
          sgemm(s.k, c, s.f32(a, aShape), s.f32(b, bShape), o);
          return { c: c.read() };
        },
      });
    }
    // Leading dimensions past the columns: arl_sgemm itself (the wrapper passes packed rows).
    const [lda, ldb, ldc] = [aShape[1]! + 5, bShape[1]! + 3, n + 7];
    const [ap, bp, cp] = [r.randn(aShape[0]! * lda), r.randn(bShape[0]! * ldb), r.randn(m * ldc)];
    cases.push({
      op: `sgemm ${tr} lda/ldb/ldc padded`,
      tol: { c: TOL_GEMM, "c padding": EXACT },
      run: (s) => {
        const [A, B, c] = [s.f32(ap), s.f32(bp), s.f32(cp)];
        const sizes = [m, n, kk, 0.7, 0.3, lda, ldb, ldc] as const;
        s.k.check("arl_sgemm", s.k.sym.arl_sgemm(s.k.ctx, c.ptr, A.ptr, B.ptr, +ta, +tb, ...sizes));
        const all = c.read(); // the padding must keep its old values
        return {
          c: all.filter((_, i) => i % ldc < n),
          "c padding": all.filter((_, i) => i % ldc >= n),
        };
      },
    });
  }

  const { lm, ln, lk, x, w, w16, bias, y0 } = linearData(seed);
  const xw = (s: Scope) => [s.f32(x, [lm, lk]), s.f32(w, [ln, lk])] as const;
  for (const [withBias, acc] of [[true, false], [true, true], [false, false]] as const) {
    cases.push({
      op: `linearForward${withBias ? " bias" : ""}${acc ? " accumulate" : ""}`,
      tol: TOL_GEMM,
      run: (s) => {
        const y = acc ? s.f32(y0, [lm, ln]) : s.nan([lm, ln]);
        linearForward(s.k, y, ...xw(s), withBias ? s.f32(bias) : null, acc);
        return { y: y.read() };
      },
    });
  }
  // Few rows (decode): the CUDA library's fp32 GEMV path; k = 37 takes its unaligned loop.
  for (const [fm, fk] of [[1, 96], [3, 96], [8, 96], [2, 37]] as const) {
    const q = new Rand(`linear rows ${fm}x${fk}`, seed);
    const [fx, fw, fb, fy0] = [
      q.randn(fm * fk),
      q.randn(ln * fk, 0.1),
      q.randn(ln),
      q.randn(fm * ln),
    ];
    for (const acc of [false, true]) {
      cases.push({
        op: `linearForward ${fm} rows k=${fk} bias${acc ? " accumulate" : ""}`,
        tol: TOL_FP32,
        run: (s) => {
          const y = acc ? s.f32(fy0, [fm, ln]) : s.nan([fm, ln]);
          linearForward(s.k, y, s.f32(fx, [fm, fk]), s.f32(fw, [ln, fk]), s.f32(fb), acc);
          return { y: y.read() };
        },
      });
    }
  }
  // bf16 weights: batch rows (bf16 GEMM on CUDA) and few rows (the bf16 GEMV, fp32 x).
  for (const rows of [lm, 1, 8]) {
    cases.push({
      op: `linearForward bf16 weights, ${rows} rows, bias accumulate`,
      tol: rows > 8 ? TOL_BF16 : TOL_FP32,
      run: (s) => {
        const y = s.f32(y0.subarray(0, rows * ln), [rows, ln]);
        const xs = s.f32(x.subarray(0, rows * lk), [rows, lk]);
        linearForward(s.k, y, xs, s.bf16(w16, [ln, lk]), s.f32(bias), true);
        return { y: y.read() };
      },
    });
  }
  return cases;
}

/** linearBackward on the linear cases' inputs, fp32 and bf16 weights. */
export function linearBackwardCases(seed: number): Case[] {
  const cases: Case[] = [];
  const { lm, ln, lk, x, w, w16, dy, dx0, db0, dw0 } = linearData(seed);
  const xw = (s: Scope) => [s.f32(x, [lm, lk]), s.f32(w, [ln, lk])] as const;
  cases.push({
    op: "linearBackward bf16 weights",
    tol: { dx: TOL_BF16, "dw (+=)": TOL_BF16, "dbias (+=)": TOL_FP32 },
    run: (s) => {
      const dx = s.nan([lm, lk]);
      const dw = s.f32(dw0, [ln, lk]), dbias = s.f32(db0);
      const [xs, ws] = [s.f32(x, [lm, lk]), s.bf16(w16, [ln, lk])];
      linearBackward(s.k, { dx, dw, dbias }, s.f32(dy, [lm, ln]), xs, ws);
      return {
        dx: dx.read(),
        "dw (+=)": delta(dw.read(), dw0),
        "dbias (+=)": delta(dbias.read(), db0),
      };
    },
  });
  for (const acc of [false, true]) {
    cases.push({
      op: `linearBackward${acc ? " accumulateDx" : ""}`,
      tol: { dx: TOL_GEMM, "dw (+=)": TOL_GEMM, "dbias (+=)": TOL_FP32 },
      run: (s) => {
        const dx = acc ? s.f32(dx0, [lm, lk]) : s.nan([lm, lk]);
        const dw = s.f32(dw0, [ln, lk]), dbias = s.f32(db0);
        linearBackward(s.k, { dx, dw, dbias }, s.f32(dy, [lm, ln]), ...xw(s), acc);
        return {
          dx: acc ? delta(dx.read(), dx0) : dx.read(),
          "dw (+=)": delta(dw.read(), dw0),
          "dbias (+=)": delta(dbias.read(), db0),
        };
      },
    });
  }
  return cases;
}
