/**
 * Packed attention forward and backward, the KV cache's writes and decode attention.
 *
 * @module
 */
import {
  attentionBackward,
  attentionDecode,
  attentionForward,
  type AttentionPrecision,
  Kernels,
  kvCacheWrite,
  normRopeKvCacheWrite,
  ropeKvCacheWrite,
} from "../../../ffi/mod.ts";
import { type Case, cuOf, EXACT, Rand, Scope, sumTo, TOL_BF16, TOL_FP32 } from "./harness.ts";

// Forward and backward of the packed attention over sequences of the given lengths. The
// backward pass of both devices reads the CPU's out and lse.
function packedAttentionCases(
  seed: number,
  cpu: Kernels,
  lens: number[],
  [hq, hkv, d]: [number, number, number],
  precision: AttentionPrecision,
): Case[] {
  const t = sumTo(lens, lens.length);
  const cu = cuOf(lens);
  const r = new Rand(`attention ${hq}:${hkv} d${d} ${precision}`, seed);
  const [q, dout] = [r.randn(t * hq * d), r.randn(t * hq * d)];
  const [kk, v] = [r.randn(t * hkv * d), r.randn(t * hkv * d)];
  const qkv = (s: Scope) =>
    [s.f32(q, [t, hq, d]), s.f32(kk, [t, hkv, d]), s.f32(v, [t, hkv, d])] as const;
  const scale = 1 / Math.sqrt(d);
  const forward = (s: Scope) => {
    const [out, lse] = [s.nan([t, hq, d]), s.nan([hq, t])];
    attentionForward(s.k, out, lse, ...qkv(s), s.i32(cu), scale, precision);
    return { out: out.read(), lse: lse.read() };
  };
  using s0 = new Scope(cpu);
  const saved = forward(s0);
  const tol = precision === "bf16" ? TOL_BF16 : TOL_FP32;
  const what = precision === "bf16"
    ? ` bf16 ${hq}:${hkv} heads, d ${d}, ${t} rows (CPU: fp32)`
    : "";
  return [
    { op: `attentionForward${what}`, tol, run: forward },
    {
      op: `attentionBackward${what}`,
      tol,
      run: (s) => {
        const [dq, dk, dv] = [s.nan([t, hq, d]), s.nan([t, hkv, d]), s.nan([t, hkv, d])];
        const out = s.f32(saved.out as Float32Array, [t, hq, d]);
        const lse = s.f32(saved.lse as Float32Array, [hq, t]);
        attentionBackward(
          s.k,
          { dq, dk, dv },
          s.f32(dout, [t, hq, d]),
          ...qkv(s),
          out,
          lse,
          s.i32(cu),
          scale,
          precision,
        );
        return { dq: dq.read(), dk: dk.read(), dv: dv.read() };
      },
    },
  ];
}

/** Packed attention (fp32, bf16 and mixed precision), the KV cache writes and decode attention. */
export function attentionCases(seed: number, cpu: Kernels): Case[] {
  // Packed varlen batch (an empty sequence, a single token, one past 64 rows), GQA 8:2, D = 64;
  // with bf16 products (tensor cores) also D = 128 without GQA, and a batch of long sequences.
  const lens = [37, 0, 1, 64, 90, 5];
  const [hq, hkv, d] = [8, 2, 64];
  const packed = [
    ...packedAttentionCases(seed, cpu, lens, [hq, hkv, d], "f32"),
    ...packedAttentionCases(seed, cpu, lens, [hq, hkv, d], "bf16"),
    ...packedAttentionCases(seed, cpu, [70, 3, 129], [2, 2, 128], "bf16"),
    ...packedAttentionCases(seed, cpu, [200, 131], [4, 1, 64], "bf16"),
  ];
  // KV cache: S slots of L positions; decode queries attend to the first lens[i] of their slot.
  const [S, L, n] = [3, 40, 4];
  const rc = new Rand("kv cache", seed);
  const [kc0, vc0] = [rc.randn(S * hkv * L * d), rc.randn(S * hkv * L * d)];
  const [kn, vn, qd] = [rc.randn(n * hkv * d), rc.randn(n * hkv * d), rc.randn(5 * hq * d)];
  const [slots, positions] = [Int32Array.of(0, 1, 2, 1), Int32Array.of(5, 17, 39, 0)];
  const [qSlots, qLens] = [Int32Array.of(0, 1, 2, 1, 2), Int32Array.of(6, 18, 40, 1, 23)];
  const cacheShape = [S, hkv, L, d];
  return [
    ...packed,
    {
      op: "kvCacheWrite + attentionDecode",
      tol: { kCache: EXACT, vCache: EXACT, out: TOL_FP32 },
      run: (s) => {
        const [kc, vc] = [s.f32(kc0, cacheShape), s.f32(vc0, cacheShape)];
        const [K, V] = [s.f32(kn, [n, hkv, d]), s.f32(vn, [n, hkv, d])];
        kvCacheWrite(s.k, kc, vc, K, V, s.i32(slots), s.i32(positions));
        const out = s.nan([5, hq, d]);
        attentionDecode(s.k, out, s.f32(qd, [5, hq, d]), kc, vc, s.i32(qSlots), s.i32(qLens));
        return { kCache: kc.read(), vCache: vc.read(), out: out.read() };
      },
    },
    {
      op: "ropeKvCacheWrite (decode fusion)",
      tol: { q: TOL_FP32, k: TOL_FP32, kCache: TOL_FP32, vCache: EXACT },
      run: (s) => {
        const [kc, vc] = [s.f32(kc0, cacheShape), s.f32(vc0, cacheShape)];
        const [Q, K] = [s.f32(qd.subarray(0, n * hq * d), [n, hq, d]), s.f32(kn, [n, hkv, d])];
        const Vs = s.f32(vn, [n, hkv, d]);
        ropeKvCacheWrite(s.k, Q, K, kc, vc, Vs, s.i32(slots), s.i32(positions), 10000);
        return { q: Q.read(), k: K.read(), kCache: kc.read(), vCache: vc.read() };
      },
    },
    // ... with Qwen3's q/k norms, a scaled RoPE's table, and both (arl_norm_rope_kv_cache_write)
    ...([["norms", true, false], ["table", false, true], ["norms and table", true, true]] as const)
      .map(([what, norms, table]): Case => ({
        op: `normRopeKvCacheWrite (decode fusion), ${what}`,
        tol: { q: TOL_FP32, k: TOL_FP32, kCache: TOL_FP32, vCache: EXACT },
        needs: "arl_norm_rope_kv_cache_write",
        run: (s) => {
          const rn = new Rand(`norm rope ${what}`, seed);
          const [kc, vc] = [s.f32(kc0, cacheShape), s.f32(vc0, cacheShape)];
          const [Q, K] = [s.f32(qd.subarray(0, n * hq * d), [n, hq, d]), s.f32(kn, [n, hkv, d])];
          const freqs = Float32Array.from({ length: d / 2 }, (_, j) => {
            const f = Math.pow(5e5, -2 * j / d);
            return 2 * Math.PI / f > 64 ? f / 8 : f;
          });
          normRopeKvCacheWrite(
            s.k,
            Q,
            K,
            kc,
            vc,
            s.f32(vn, [n, hkv, d]),
            s.i32(slots),
            s.i32(positions),
            {
              qNorm: norms ? s.f32(rn.randn(d).map((x) => 1 + 0.3 * x), [d]) : null,
              kNorm: norms ? s.f32(rn.randn(d).map((x) => 1 + 0.3 * x), [d]) : null,
              invFreq: table ? s.f32(freqs, [d / 2]) : null,
              eps: 1e-6,
              theta: 10000,
            },
          );
          return { q: Q.read(), k: K.read(), kCache: kc.read(), vCache: vc.read() };
        },
      })),
    // ... at Qwen3's head dim 128 (4 pairs a lane) with a large eps (it must count)
    {
      op: "normRopeKvCacheWrite (decode fusion), head dim 128, eps 0.5, norms and table",
      tol: { q: TOL_FP32, k: TOL_FP32, kCache: TOL_FP32, vCache: EXACT },
      needs: "arl_norm_rope_kv_cache_write",
      run: (s) => {
        const [n2, hq2, hkv2, d2, s2, l2] = [3, 4, 2, 128, 2, 9];
        const rn = new Rand("norm rope 128", seed);
        const shape = [s2, hkv2, l2, d2];
        const [kc, vc] = [
          s.f32(rn.randn(s2 * hkv2 * l2 * d2), shape),
          s.f32(rn.randn(s2 * hkv2 * l2 * d2), shape),
        ];
        const Q = s.f32(rn.randn(n2 * hq2 * d2).map((x) => 0.3 * x), [n2, hq2, d2]);
        const K = s.f32(rn.randn(n2 * hkv2 * d2).map((x) => 0.3 * x), [n2, hkv2, d2]);
        const freqs = Float32Array.from(
          { length: d2 / 2 },
          (_, j) => Math.pow(1e6, -2 * j / d2) / 4,
        );
        normRopeKvCacheWrite(
          s.k,
          Q,
          K,
          kc,
          vc,
          s.f32(rn.randn(n2 * hkv2 * d2), [n2, hkv2, d2]),
          s.i32(Int32Array.of(1, 0, 1)),
          s.i32(Int32Array.of(8, 3, 0)),
          {
            qNorm: s.f32(rn.randn(d2).map((x) => 1 + 0.3 * x), [d2]),
            kNorm: s.f32(rn.randn(d2).map((x) => 1 + 0.3 * x), [d2]),
            invFreq: s.f32(freqs, [d2 / 2]),
            eps: 0.5,
            theta: 1e6,
          },
        );
        return { q: Q.read(), k: K.read(), kCache: kc.read(), vCache: vc.read() };
      },
    },
    // One query over a long cache (split across blocks on CUDA) and 20 queries (one block each).
    ...[[1, 600], [20, 600]].map(([nq, L2]) => {
      const rl = new Rand(`decode ${nq}x${L2}`, seed);
      const shape = [2, hkv, L2!, d];
      const [kc2, vc2] = [rl.randn(2 * hkv * L2! * d), rl.randn(2 * hkv * L2! * d)];
      const q2 = rl.randn(nq! * hq * d);
      const slots2 = Int32Array.from({ length: nq! }, (_, i) => i % 2);
      const lens2 = Int32Array.from({ length: nq! }, (_, i) => i === 0 ? L2! : 1 + (i * 37) % L2!);
      return {
        op: `attentionDecode ${nq} queries, cache of ${L2}`,
        tol: TOL_FP32,
        run: (s: Scope) => {
          const out = s.nan([nq!, hq, d]);
          const [kc, vc] = [s.f32(kc2, shape), s.f32(vc2, shape)];
          attentionDecode(s.k, out, s.f32(q2, [nq!, hq, d]), kc, vc, s.i32(slots2), s.i32(lens2));
          return { out: out.read() };
        },
      };
    }),
  ];
}
