/**
 * The fused log-prob and entropy, forward and backward, and the LM head (fp32 and bf16).
 *
 * @module
 */
import { Kernels, lmHead, logprobBackward, logprobForward } from "../../../ffi/mod.ts";
import {
  bf16Bits,
  type Case,
  delta,
  Rand,
  Scope,
  TOL_BF16,
  TOL_FP32,
  TOL_GEMM,
} from "./harness.ts";

/** The fused log-prob and entropy over the LM head, both directions, and the LM head alone. */
export function logprobCases(seed: number, cpu: Kernels): Case[] {
  // V ~ 5000, C 256; weights scaled so that logits / temperature have a spread of ~3.
  const [t, v, c, temp] = [24, 5000, 256, 0.7];
  const r = new Rand("logprob", seed);
  const [h, w, targets] = [r.randn(t * c), r.randn(v * c, 0.1), r.ints(t, 0, v - 1)];
  const [dlogp, dent, dw0] = [r.randn(t), r.randn(t), r.randn(v * c, 0.1)];
  const htw = (s: Scope) => [s.f32(h, [t, c]), s.i32(targets), s.f32(w, [v, c])] as const;
  const forward = (s: Scope) => {
    const [logp, entropy, lse] = [s.nan([t]), s.nan([t]), s.nan([t])];
    logprobForward(s.k, { logp, entropy, lse }, ...htw(s), temp);
    return { logp: logp.read(), entropy: entropy.read(), lse: lse.read() };
  };
  using s0 = new Scope(cpu);
  const saved = forward(s0); // the backward pass of both devices reads the CPU's lse and entropy
  const hl = r.randn(7 * c);
  const w16 = bf16Bits(w);
  return [
    { op: `logprobForward T=${t} V=${v} C=${c} temp=${temp}`, tol: TOL_GEMM, run: forward },
    {
      op: "logprobBackward (dlogp, dentropy)",
      tol: TOL_GEMM,
      run: (s) => {
        const [dh, dw] = [s.nan([t, c]), s.f32(dw0, [v, c])];
        const up = { dlogp: s.f32(dlogp), dentropy: s.f32(dent) };
        const lse = s.f32(saved.lse as Float32Array);
        const entropy = s.f32(saved.entropy as Float32Array);
        logprobBackward(s.k, { dh, dw }, up, ...htw(s), { lse, entropy }, temp);
        return { dh: dh.read(), "dw (+=)": delta(dw.read(), dw0) };
      },
    },
    {
      op: "lmHead",
      tol: TOL_GEMM,
      run: (s) => {
        const logits = s.nan([7, v]);
        lmHead(s.k, logits, s.f32(hl, [7, c]), s.f32(w, [v, c]));
        return { logits: logits.read() };
      },
    },
    // bf16 weights
    {
      op: `logprobForward bf16 weights`,
      tol: TOL_BF16,
      run: (s) => {
        const [logp, entropy, lse] = [s.nan([t]), s.nan([t]), s.nan([t])];
        const [hs, ts] = [s.f32(h, [t, c]), s.i32(targets)];
        logprobForward(s.k, { logp, entropy, lse }, hs, ts, s.bf16(w16, [v, c]), temp);
        return { logp: logp.read(), entropy: entropy.read(), lse: lse.read() };
      },
    },
    {
      op: "logprobBackward bf16 weights (dlogp, dentropy)",
      tol: TOL_BF16,
      run: (s) => {
        const [dh, dw] = [s.nan([t, c]), s.f32(dw0, [v, c])];
        const up = { dlogp: s.f32(dlogp), dentropy: s.f32(dent) };
        const lse = s.f32(saved.lse as Float32Array);
        const entropy = s.f32(saved.entropy as Float32Array);
        const [hs, ts] = [s.f32(h, [t, c]), s.i32(targets)];
        logprobBackward(s.k, { dh, dw }, up, hs, ts, s.bf16(w16, [v, c]), { lse, entropy }, temp);
        return { dh: dh.read(), "dw (+=)": delta(dw.read(), dw0) };
      },
    },
    ...[1, 7, t].map((rows) => ({
      op: `lmHead bf16 weights, ${rows} rows`,
      tol: rows > 8 ? TOL_BF16 : TOL_FP32,
      run: (s: Scope) => {
        const logits = s.nan([rows, v]);
        lmHead(s.k, logits, s.f32(h.subarray(0, rows * c), [rows, c]), s.bf16(w16, [v, c]));
        return { logits: logits.read() };
      },
    })),
  ];
}
