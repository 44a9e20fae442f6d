/**
 * The fused few-row GEMVs of decoding, against the CPU library's unfused math.
 *
 * @module
 */
import {
  linearForward,
  rmsnormLinearForward,
  rmsnormLinearSwigluForward,
  rmsnormQkvRopeForward,
} from "../../../ffi/mod.ts";
import { bf16Bits, type Case, Rand, TOL_BF16, TOL_FP32, TOL_GEMM } from "./harness.ts";

/**
 * The decode fusions on few rows: RMSNorm inside the GEMV, with the stacked gate|up and SwiGLU,
 * one-row GEMVs wider than the grid, and RMSNorm with q|k|v, RoPE and the cache write.
 */
export function decodeGemvCases(seed: number): Case[] {
  const cases: Case[] = [];
  const ln = 53; // the output columns of the linear cases
  // Decode fusion: RMSNorm inside the GEMV (up to 8 rows; k = 37 the unaligned loop), and the
  // unfused path past 8 rows; fp32 and bf16 weights.
  for (const [fm, fk] of [[1, 96], [3, 96], [8, 96], [2, 37], [12, 96]] as const) {
    const q = new Rand(`rmsnorm linear ${fm}x${fk}`, seed);
    const [fx, nw, fw, fb] = [
      q.randn(fm * fk, 2),
      q.uniforms(fk, 0.5, 1.5),
      q.randn(ln * fk, 0.1),
      q.randn(ln),
    ];
    const fw16 = bf16Bits(fw);
    for (const [weights, bias] of [["fp32", true], ["bf16", true], ["bf16", false]] as const) {
      cases.push({
        op: `rmsnormLinearForward ${weights} weights, ${fm} rows k=${fk}${bias ? " bias" : ""}`,
        tol: fm > 8 && weights === "bf16" ? TOL_BF16 : fm > 8 ? TOL_GEMM : TOL_FP32,
        run: (s) => {
          const y = s.nan([fm, ln]);
          const ws = weights === "bf16" ? s.bf16(fw16, [ln, fk]) : s.f32(fw, [ln, fk]);
          const b = bias ? s.f32(fb) : null;
          rmsnormLinearForward(s.k, y, s.f32(fx, [fm, fk]), s.f32(nw), ws, b, 1e-6);
          return { y: y.read() };
        },
      });
    }
  }
  // Decode fusion: RMSNorm, the stacked gate|up GEMV and SwiGLU of its outputs (up to 8 rows;
  // k = 37 the unaligned loop, k = 1024 several warps per column), unfused past 8 rows.
  const rowsK: [number, number][] = [
    [1, 96],
    [1, 1024],
    [2, 37],
    [3, 96],
    [5, 1024],
    [8, 96],
    [8, 37],
    [12, 96],
    [12, 37],
  ];
  for (const [fm, fk] of rowsK) {
    const q = new Rand(`rmsnorm linear swiglu ${fm}x${fk}`, seed);
    const [fx, nw, fw, fb] = [
      q.randn(fm * fk, 2),
      q.uniforms(fk, 0.5, 1.5),
      q.randn(2 * ln * fk, 0.1),
      q.randn(2 * ln),
    ];
    const fw16 = bf16Bits(fw);
    const combos = [["fp32", true], ["bf16", true], ["bf16", false], ["fp32", false]] as const;
    for (const [weights, bias] of combos) {
      cases.push({
        op: `rmsnormLinearSwigluForward ${weights} weights, ${fm} rows k=${fk}${
          bias ? " bias" : ""
        }`,
        tol: fm > 8 && weights === "bf16" ? TOL_BF16 : fm > 8 ? TOL_GEMM : TOL_FP32,
        run: (s) => {
          const y = s.nan([fm, ln]);
          const ws = weights === "bf16" ? s.bf16(fw16, [2 * ln, fk]) : s.f32(fw, [2 * ln, fk]);
          const b = bias ? s.f32(fb) : null;
          rmsnormLinearSwigluForward(s.k, y, s.f32(fx, [fm, fk]), s.f32(nw), ws, b, 1e-6);
          return { y: y.read() };
        },
      });
    }
  }
  // One-row GEMVs with more column groups than two blocks per SM hold (so that the streaming
  // GEMV, AGENTRL_CUDA_GEMV_STREAM=1, takes from one to four groups a block on 132 SMs), bf16
  // weights: plain (k = 4864: 4 warps a column, 5 loads a lane), with the norm, and with the norm
  // and SwiGLU (4864 x 96: Qwen2.5-0.5B's gate|up grouping, 608 groups).
  const wide: [string, number, number][] = [
    ["linear", 4500, 96],
    ["linear", 700, 4864],
    ["rmsnormLinear", 2400, 96],
    ["rmsnormLinear", 7000, 96],
    ["rmsnormLinearSwiglu", 2300, 448],
    ["rmsnormLinearSwiglu", 4864, 96],
  ];
  for (const [fused, wn, wk] of wide) {
    const q = new Rand(`wide gemv ${fused} ${wn}x${wk}`, seed);
    const stacked = fused === "rmsnormLinearSwiglu" ? 2 : 1;
    const [fx, nw, fb, fy0] = [
      q.randn(wk, 2),
      q.uniforms(wk, 0.5, 1.5),
      q.randn(stacked * wn),
      q.randn(wn),
    ];
    const fw16 = bf16Bits(q.randn(stacked * wn * wk, 0.1));
    for (const acc of fused === "linear" ? [false, true] : [false]) {
      cases.push({
        op: `${fused}Forward bf16 weights, 1 row, ${wn} columns k=${wk} bias${
          acc ? " accumulate" : ""
        }`,
        tol: TOL_FP32,
        run: (s) => {
          const y = acc ? s.f32(fy0, [1, wn]) : s.nan([1, wn]);
          const x = s.f32(fx, [1, wk]);
          const w = s.bf16(fw16, [stacked * wn, wk]);
          if (fused === "linear") linearForward(s.k, y, x, w, s.f32(fb), acc);
          else if (fused === "rmsnormLinear") {
            rmsnormLinearForward(s.k, y, x, s.f32(nw), w, s.f32(fb), 1e-6);
          } else rmsnormLinearSwigluForward(s.k, y, x, s.f32(nw), w, s.f32(fb), 1e-6);
          return { y: y.read() };
        },
      });
    }
  }
  // Decode fusion: RMSNorm, the stacked q|k|v GEMV, RoPE of q and k and the cache write (up to 8
  // rows, GQA 4:2, d 16; k = 37 the unaligned loop), unfused past 8 rows.
  for (const [fm, fk] of [[1, 96], [2, 37], [3, 1024], [8, 96], [9, 96]] as const) {
    const [hq, hkv, hd, S, L] = [4, 2, 16, 3, 12];
    const qn = (hq + 2 * hkv) * hd;
    const q = new Rand(`rmsnorm qkv rope ${fm}x${fk}`, seed);
    const [fx, nw, fw, fb] = [
      q.randn(fm * fk, 2),
      q.uniforms(fk, 0.5, 1.5),
      q.randn(qn * fk, 0.1),
      q.randn(qn),
    ];
    const [kc0, vc0] = [q.randn(S * hkv * L * hd), q.randn(S * hkv * L * hd)];
    const slots = Int32Array.from({ length: fm }, (_, i) => i % S);
    const positions = Int32Array.from({ length: fm }, (_, i) => (5 * i + 3) % L);
    const fw16 = bf16Bits(fw);
    for (const weights of ["fp32", "bf16"] as const) {
      cases.push({
        op: `rmsnormQkvRopeForward ${weights} weights, ${fm} rows k=${fk}`,
        tol: fm > 8 && weights === "bf16" ? TOL_BF16 : fm > 8 ? TOL_GEMM : TOL_FP32,
        run: (s) => {
          const y = s.nan([fm, qn]);
          const ws = weights === "bf16" ? s.bf16(fw16, [qn, fk]) : s.f32(fw, [qn, fk]);
          const cache = [S, hkv, L, hd];
          const [kCache, vCache] = [s.f32(kc0, cache), s.f32(vc0, cache)];
          rmsnormQkvRopeForward(s.k, y, s.f32(fx, [fm, fk]), s.f32(nw), ws, s.f32(fb), 1e-6, {
            hq,
            kCache,
            vCache,
            slots: s.i32(slots),
            positions: s.i32(positions),
            theta: 10000,
          });
          return { y: y.read(), kCache: kCache.read(), vCache: vCache.read() };
        },
      });
    }
  }
  return cases;
}
