/**
 * The layer ops of training: embedding, RMSNorm, RoPE, SwiGLU, add and the value head.
 *
 * @module
 */
import {
  add,
  embeddingBackward,
  embeddingForward,
  Kernels,
  rmsnormBackward,
  rmsnormForward,
  rope,
  ropeFreqs,
  swigluBackward,
  swigluForward,
  Tensor,
  valueHeadBackward,
  valueHeadForward,
} from "../../../ffi/mod.ts";
import { type Case, delta, EXACT, Rand, Scope, size, TOL_FP32 } from "./harness.ts";

/** Embedding, RMSNorm, RoPE, SwiGLU, add and the value head, forward and backward. */
export function layerCases(seed: number, cpu: Kernels): Case[] {
  const cases: Case[] = [];
  {
    const [t, v, c] = [40, 97, 48];
    const r = new Rand("embedding", seed);
    const tokens = r.ints(t, 0, v - 1);
    tokens.set([tokens[0]!, tokens[0]!, tokens[1]!], 5); // repeated ids: scatter-adds collide
    const [wte, dout, dwte0] = [r.randn(v * c), r.randn(t * c), r.randn(v * c, 0.1)];
    cases.push({
      op: "embeddingForward",
      tol: EXACT,
      run: (s) => {
        const out = s.nan([t, c]);
        embeddingForward(s.k, out, s.i32(tokens), s.f32(wte, [v, c]));
        return { out: out.read() };
      },
    }, {
      op: "embeddingBackward",
      tol: TOL_FP32,
      run: (s) => {
        const dwte = s.f32(dwte0, [v, c]);
        embeddingBackward(s.k, dwte, s.f32(dout, [t, c]), s.i32(tokens));
        return { "dwte (+=)": delta(dwte.read(), dwte0) };
      },
    });
  }
  {
    const [t, c, eps] = [23, 200, 1e-6];
    const r = new Rand("rmsnorm", seed);
    const [x, weight, dout, dw0] = [
      r.randn(t * c, 2),
      r.uniforms(c, 0.5, 1.5),
      r.randn(t * c),
      r.randn(c),
    ];
    // The backward pass of both devices reads the CPU's saved rstd.
    using s0 = new Scope(cpu);
    const rstd = s0.nan([t]);
    rmsnormForward(cpu, s0.nan([t, c]), rstd, s0.f32(x, [t, c]), s0.f32(weight), eps);
    const rstdCpu = rstd.read();
    cases.push({
      op: "rmsnormForward",
      tol: TOL_FP32,
      run: (s) => {
        const [out, rs] = [s.nan([t, c]), s.nan([t])];
        rmsnormForward(s.k, out, rs, s.f32(x, [t, c]), s.f32(weight), eps);
        return { out: out.read(), rstd: rs.read() };
      },
    }, {
      op: "rmsnormBackward",
      tol: TOL_FP32,
      run: (s) => {
        const [dx, dweight] = [s.nan([t, c]), s.f32(dw0)];
        const [dO, X, W] = [s.f32(dout, [t, c]), s.f32(x, [t, c]), s.f32(weight)];
        rmsnormBackward(s.k, dx, dweight, dO, X, s.f32(rstdCpu), W);
        return { dx: dx.read(), "dweight (+=)": delta(dweight.read(), dw0) };
      },
    });
  }
  {
    // Positions up to 4095 with Qwen2's theta: angles of thousands of radians (the CPU
    // computes them in double; an fp32 pos * inv_freq is off by up to ~pos * 6e-8 rad).
    const [t, h, d, theta] = [19, 3, 64, 1e6];
    const r = new Rand("rope", seed);
    const [x, pos] = [r.randn(t * h * d), r.ints(t, 0, 4095)];
    cases.push({
      op: "rope",
      tol: TOL_FP32,
      run: (s) => {
        const [xs, ps] = [s.f32(x, [t, h, d]), s.i32(pos)];
        const [out, inv, inPlace] = [s.nan([t, h, d]), s.nan([t, h, d]), s.f32(x, [t, h, d])];
        rope(s.k, out, xs, ps, theta);
        rope(s.k, inv, xs, ps, theta, true);
        rope(s.k, inPlace, inPlace, ps, theta);
        return { out: out.read(), "out (inverse)": inv.read(), "out (in place)": inPlace.read() };
      },
    });
  }
  {
    // The same with a frequency table (Llama 3.1's scaled RoPE: theta 5e5, factor 32)
    const [t, h, d] = [19, 3, 64];
    const r = new Rand("rope freqs", seed);
    const [x, pos] = [r.randn(t * h * d), r.ints(t, 0, 4095)];
    const table = Float32Array.from({ length: d / 2 }, (_, j) => {
      const f = Math.pow(5e5, -2 * j / d);
      return 2 * Math.PI / f > 8192 ? f / 32 : f;
    });
    cases.push({
      op: "ropeFreqs",
      tol: TOL_FP32,
      needs: "arl_rope_freqs",
      run: (s) => {
        const [xs, ps, fs] = [s.f32(x, [t, h, d]), s.i32(pos), s.f32(table, [d / 2])];
        const [out, inv] = [s.nan([t, h, d]), s.nan([t, h, d])];
        ropeFreqs(s.k, out, xs, ps, fs);
        ropeFreqs(s.k, inv, xs, ps, fs, true);
        return { out: out.read(), "out (inverse)": inv.read() };
      },
    });
  }
  {
    const shape = [10, 101], n = size(shape);
    const r = new Rand("swiglu", seed);
    const [gate, up, dout] = [r.randn(n, 3), r.randn(n), r.randn(n)];
    cases.push({
      op: "swigluForward",
      tol: TOL_FP32,
      run: (s) => {
        const out = s.nan(shape);
        swigluForward(s.k, out, s.f32(gate, shape), s.f32(up, shape));
        return { out: out.read() };
      },
    }, {
      op: "swigluBackward",
      tol: TOL_FP32,
      run: (s) => {
        const [dgate, dup] = [s.nan(shape), s.nan(shape)];
        swigluBackward(s.k, dgate, dup, s.f32(dout, shape), s.f32(gate, shape), s.f32(up, shape));
        return { dgate: dgate.read(), dup: dup.read() };
      },
    }, {
      // 1009 values from an offset of one float: the CUDA kernels' one-by-one path
      op: "swigluForward, swigluBackward, add (unaligned)",
      tol: TOL_FP32,
      run: (s) => {
        const m = n - 1;
        const at = (t: Tensor<"f32">) => Tensor.viewOf(t, 4, [m]);
        const [g, u, go] = [at(s.f32(gate)), at(s.f32(up)), at(s.f32(dout))];
        const [out, dgate, dup, sum] = [s.nan([n]), s.nan([n]), s.nan([n]), s.nan([n])];
        swigluForward(s.k, at(out), g, u);
        swigluBackward(s.k, at(dgate), at(dup), go, g, u);
        add(s.k, at(sum), g, u);
        const tail = (t: Tensor<"f32">) => t.read().subarray(1);
        return { out: tail(out), dgate: tail(dgate), dup: tail(dup), "a + b": tail(sum) };
      },
    });
  }
  {
    const r = new Rand("add", seed);
    const [a, b] = [r.randn(1003), r.randn(1003)];
    cases.push({
      op: "add",
      tol: EXACT,
      run: (s) => {
        const [ta, tb, out] = [s.f32(a), s.f32(b), s.nan([1003])];
        add(s.k, out, ta, tb);
        add(s.k, ta, ta, tb);
        return { out: out.read(), "out (aliasing a)": ta.read() };
      },
    });
  }
  {
    const [t, c, bias] = [33, 256, 0.3];
    const r = new Rand("value head", seed);
    const [h, w, dv] = [r.randn(t * c), r.randn(c, 0.05), r.randn(t)];
    const [dw0, db0] = [r.randn(c), r.randn(1)];
    cases.push({
      op: "valueHeadForward",
      tol: TOL_FP32,
      run: (s) => {
        const values = s.nan([t]);
        valueHeadForward(s.k, values, s.f32(h, [t, c]), s.f32(w), bias);
        return { values: values.read() };
      },
    }, {
      op: "valueHeadBackward",
      tol: TOL_FP32,
      run: (s) => {
        const [dh, dw, dbias] = [s.nan([t, c]), s.f32(dw0), s.f32(db0)];
        valueHeadBackward(s.k, { dh, dw, dbias }, s.f32(dv), s.f32(h, [t, c]), s.f32(w));
        return {
          dh: dh.read(),
          "dw (+=)": delta(dw.read(), dw0),
          "dbias (+=)": delta(dbias.read(), db0),
        };
      },
    });
  }
  return cases;
}
