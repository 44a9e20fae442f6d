/**
 * AdamW, the reductions and fills, and the bf16 conversions.
 *
 * @module
 */
import { adamw, fill, fromBf16, scale, sumSquares, Tensor, toBf16 } from "../../../ffi/mod.ts";
import { bf16Values, type Case, delta, EXACT, Rand, TOL_FP32 } from "./harness.ts";

/** sumSquares, scale, AdamW, fill and the bf16 conversions. */
export function optimCases(seed: number): Case[] {
  const r = new Rand("optim", seed);
  const [x, p0, g] = [r.randn(100_003), r.randn(5000), r.randn(5000, 0.01)];
  const [m0, v0] = [r.randn(5000, 0.01), r.uniforms(5000, 1e-6, 1e-4)];
  // bf16 rounding: random values plus exact ties (round to even, both directions) and a carry.
  const f = r.randn(1000, 10);
  new Uint32Array(f.buffer).set([0x3f808000, 0x3f818000, 0xbf808000, 0x3f7fffff, 0xc0ff8000], 0);
  const bits = new Uint16Array(r.randn(1000, 100).buffer).filter((_, i) => i % 2 === 1);
  return [
    {
      op: "sumSquares",
      tol: TOL_FP32,
      run: (s) => ({ sum: [sumSquares(s.k, s.f32(x))] }),
    },
    {
      op: "scale",
      tol: EXACT,
      run: (s) => {
        const t = s.f32(x);
        scale(s.k, t, -0.37);
        return { x: t.read() };
      },
    },
    {
      op: "adamw step=3 wd=0.1 gradScale=0.5",
      tol: TOL_FP32,
      run: (s) => {
        const [params, m, v] = [s.f32(p0), s.f32(m0), s.f32(v0)];
        adamw(s.k, params, m, v, s.f32(g), { lr: 1e-3, weightDecay: 0.1, step: 3, gradScale: 0.5 });
        // The update is ~1e-3 of the parameters: compare it, not the parameters.
        return { "params (update)": delta(params.read(), p0), m: m.read(), v: v.read() };
      },
    },
    {
      op: "fill",
      tol: EXACT,
      run: (s) => {
        const t = s.nan([777]);
        fill(s.k, t, 0.625);
        return { x: t.read() };
      },
    },
    {
      op: "toBf16 / fromBf16",
      tol: EXACT,
      run: (s) => {
        const out = s.bf16(new Uint16Array(1000).fill(0x7fc1)); // NaN until written
        toBf16(s.k, out, s.f32(f));
        const back = s.nan([1000]);
        fromBf16(s.k, back, s.bf16(bits));
        return { "toBf16 out": bf16Values(out.read()), "fromBf16 out": back.read() };
      },
    },
    {
      op: "toBf16 of 998 values (4 a step, then 2), and of 997 from an offset of 1 (1 a step)",
      tol: EXACT,
      run: (s) => {
        const [tail, unaligned] = [s.bf16(new Uint16Array(998)), s.bf16(new Uint16Array(998))];
        const x = s.f32(f.subarray(0, 998));
        toBf16(s.k, tail, x);
        toBf16(s.k, Tensor.viewOf(unaligned, 2, [997]), Tensor.viewOf(x, 4, [997]));
        return {
          "998 values": bf16Values(tail.read()),
          "997 unaligned": bf16Values(unaligned.read()).subarray(1),
        };
      },
    },
  ];
}
