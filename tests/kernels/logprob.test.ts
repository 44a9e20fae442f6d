// The fused LM head + log-softmax + gather + entropy (chunked over the
// vocabulary) against full float64 logits, its backward pass against the
// reference gradient and finite differences, and the plain LM head.
//
// The kernel's vocabulary chunk is 2^21 / T columns clamped to 256..4096 (rounded
// up to 16): T = 8, V = 5000 gives chunks 4096 + 904; T = 1100, V = 3000 gives
// 1920 + 1080; T = 600, V = 3000 fits one chunk of 3000.
//
// Tolerances: logp, lse, entropy 1e-5 (1 + max|logit|); gradients 3e-5 of the
// sum of |terms| per element; finite differences 2e-4.
import { lmHead, logprobBackward, logprobForward, Tensor } from "../../ffi/mod.ts";
import type { Kernels } from "../../ffi/mod.ts";
import {
  assertClose,
  assertGrad,
  dot,
  f32,
  fdGrad,
  i32,
  maxAbs,
  nans,
  openKernels,
  Rng,
} from "./_helpers.ts";
import { logitsRef, logprobBackwardRef, logprobRef } from "./_reference.ts";

interface Case {
  t: number;
  v: number;
  c: number;
  temp: number;
  /** Targets placed first (chunk edges); the rest are random. */
  edges?: number[];
}

const CASES: Case[] = [
  { t: 1, v: 1, c: 1, temp: 1 },
  { t: 7, v: 13, c: 5, temp: 1 },
  { t: 3, v: 257, c: 33, temp: 0.5 },
  { t: 8, v: 5000, c: 16, temp: 0.7, edges: [0, 4095, 4096, 4999, 4097, 4094] },
  { t: 1100, v: 3000, c: 8, temp: 1.3, edges: [1919, 1920, 0, 2999, 1921, 1918] },
  { t: 600, v: 3000, c: 4, temp: 1, edges: [2999, 0] },
  { t: 5, v: 300, c: 16, temp: 0.05, edges: [299] }, // peaked: logits up to ~80
];

function inputs(rng: Rng, c: Case) {
  const h = rng.randn(c.t * c.c);
  const w = rng.randn(c.v * c.c, 1 / Math.sqrt(c.c));
  const targets = rng.ints(c.t, 0, c.v - 1);
  (c.edges ?? []).forEach((e, i) => (targets[i] = e));
  return { h, w, targets };
}

function forward(k: Kernels, h: Float32Array, targets: Int32Array, w: Float32Array, c: Case) {
  using th = f32(k, h, [c.t, c.c]);
  using tt = i32(k, targets);
  using tw = f32(k, w, [c.v, c.c]);
  using logp = nans(k, [c.t]);
  using entropy = nans(k, [c.t]);
  using lse = nans(k, [c.t]);
  logprobForward(k, { logp, entropy, lse }, th, tt, tw, c.temp);
  return { logp: logp.toArray(), entropy: entropy.toArray(), lse: lse.toArray() };
}

Deno.test("logprob forward (logp, entropy, lse) matches full float64 logits across vocabulary chunks", () => {
  using k = openKernels();
  const rng = new Rng("logprob-forward");
  for (const c of CASES) {
    const { h, w, targets } = inputs(rng, c);
    const got = forward(k, h, targets, w, c);
    const ref = logprobRef(h, targets, w, c.t, c.v, c.c, c.temp);
    const scale = 1 + maxAbs(ref.logits);
    const what = `logprob T=${c.t} V=${c.v} C=${c.c} temperature=${c.temp}`;
    const single = c.v === 1; // one token: logp = entropy = 0 exactly
    assertClose(got.logp, ref.logp, `${what} logp`, { atol: 1e-5 * scale, allowZero: single });
    assertClose(got.entropy, ref.entropy, `${what} entropy`, {
      atol: 1e-5 * scale,
      allowZero: single,
    });
    assertClose(got.lse, ref.lse, `${what} lse`, { rtol: 1e-6, atol: 1e-5 * scale });
    // Without entropy (NULL): logp and lse unchanged.
    using th = f32(k, h, [c.t, c.c]);
    using tt = i32(k, targets);
    using tw = f32(k, w, [c.v, c.c]);
    using logp = nans(k, [c.t]);
    using lse = nans(k, [c.t]);
    logprobForward(k, { logp, lse }, th, tt, tw, c.temp);
    assertClose(logp.view(), ref.logp, `${what} logp without entropy`, {
      atol: 1e-5 * scale,
      allowZero: single,
    });
  }
});

Deno.test("logprob backward (dh written, dw +=) matches the reference gradient, with and without dentropy", () => {
  using k = openKernels();
  const rng = new Rng("logprob-backward");
  for (const c of CASES) {
    const { h, w, targets } = inputs(rng, c);
    using th = f32(k, h, [c.t, c.c]);
    using tt = i32(k, targets);
    using tw = f32(k, w, [c.v, c.c]);
    using logp = new Tensor(k, [c.t], "f32");
    using entropy = new Tensor(k, [c.t], "f32");
    using lse = new Tensor(k, [c.t], "f32");
    logprobForward(k, { logp, entropy, lse }, th, tt, tw, c.temp);
    const gl = rng.randn(c.t), ge = rng.randn(c.t);
    using dlogp = f32(k, gl);
    using dentropy = f32(k, ge);
    for (const withEntropy of [false, true]) {
      const ref = logprobBackwardRef(
        gl,
        withEntropy ? ge : null,
        h,
        targets,
        w,
        c.t,
        c.v,
        c.c,
        c.temp,
      );
      const dw0 = rng.randn(c.v * c.c, 0.1);
      using dh = nans(k, [c.t, c.c]);
      using dw = f32(k, dw0, [c.v, c.c]);
      logprobBackward(
        k,
        { dh, dw },
        { dlogp, dentropy: withEntropy ? dentropy : null },
        th,
        tt,
        tw,
        { lse, entropy: withEntropy ? entropy : null },
        c.temp,
      );
      const what =
        `logprob backward T=${c.t} V=${c.v} C=${c.c} temperature=${c.temp} dentropy=${withEntropy}`;
      const single = c.v === 1; // one token: all gradients vanish
      assertClose(dh.view(), ref.dh, `${what} dh`, {
        tol: Float64Array.from(ref.dhMag, (m) => 3e-5 * m + 1e-12),
        allowZero: single,
      });
      const expDw = Float64Array.from(ref.dw, (g, i) => g + dw0[i]!);
      assertClose(dw.view(), expDw, `${what} dw +=`, {
        tol: Float64Array.from(ref.dwMag, (m, i) => 3e-5 * m + 2e-7 * Math.abs(dw0[i]!)),
      });
      // dw = NULL (a frozen head): dh unchanged.
      using dh2 = nans(k, [c.t, c.c]);
      logprobBackward(
        k,
        { dh: dh2 },
        { dlogp, dentropy: withEntropy ? dentropy : null },
        th,
        tt,
        tw,
        { lse, entropy: withEntropy ? entropy : null },
        c.temp,
      );
      assertClose(dh2.view(), ref.dh, `${what} dh without dw`, {
        tol: Float64Array.from(ref.dhMag, (m) => 3e-5 * m + 1e-12),
        allowZero: single,
      });
    }
  }
});

Deno.test("logprob backward matches finite differences through logp and through entropy", () => {
  using k = openKernels();
  const rng = new Rng("logprob-fd");
  for (const c of [{ t: 3, v: 37, c: 6, temp: 0.8 }, { t: 2, v: 5, c: 3, temp: 1 }] as Case[]) {
    const { h, w, targets } = inputs(rng, c);
    using th = f32(k, h, [c.t, c.c]);
    using tt = i32(k, targets);
    using tw = f32(k, w, [c.v, c.c]);
    using logp = new Tensor(k, [c.t], "f32");
    using entropy = new Tensor(k, [c.t], "f32");
    using lse = new Tensor(k, [c.t], "f32");
    logprobForward(k, { logp, entropy, lse }, th, tt, tw, c.temp);
    const gl = rng.randn(c.t), ge = rng.randn(c.t);
    using dentropy = f32(k, ge);
    for (const path of ["logp", "entropy", "both"] as const) {
      const a = path === "entropy" ? new Float32Array(c.t) : gl;
      using tdl = f32(k, a);
      const useEnt = path !== "logp";
      const f = (hh: ArrayLike<number>, ww: ArrayLike<number>) => {
        const r = logprobRef(hh, targets, ww, c.t, c.v, c.c, c.temp);
        return dot(a, r.logp) + (useEnt ? dot(ge, r.entropy) : 0);
      };
      using dh = nans(k, [c.t, c.c]);
      using dw = new Tensor(k, [c.v, c.c], "f32");
      logprobBackward(
        k,
        { dh, dw },
        { dlogp: tdl, dentropy: useEnt ? dentropy : null },
        th,
        tt,
        tw,
        {
          lse,
          entropy: useEnt ? entropy : null,
        },
        c.temp,
      );
      const what = `logprob T=${c.t} V=${c.v} temperature=${c.temp} through ${path}`;
      const fdh = fdGrad((x) => f(x, w), h), fdw = fdGrad((x) => f(h, x), w);
      assertGrad(dh.view(), fdh, `${what} dh`);
      assertGrad(dw.view(), fdw, `${what} dw`);
      const ref = logprobBackwardRef(a, useEnt ? ge : null, h, targets, w, c.t, c.v, c.c, c.temp);
      assertGrad(ref.dh, fdh, `${what} reference dh`, 1e-7);
      assertGrad(ref.dw, fdw, `${what} reference dw`, 1e-7);
    }
  }
});

Deno.test("lm_head writes the full logits h w^T", () => {
  using k = openKernels();
  const rng = new Rng("lm-head");
  for (const [t, v, c] of [[1, 1, 1], [7, 3100, 9], [13, 17, 257]] as const) {
    const h = rng.randn(t * c), w = rng.randn(v * c);
    using th = f32(k, h, [t, c]);
    using tw = f32(k, w, [v, c]);
    using logits = nans(k, [t, v]);
    lmHead(k, logits, th, tw);
    const ref = logitsRef(h, w, t, v, c);
    // |error| <= (C + 4) 2^-23 sum |h w|; sum |h w| <= |h| |w| (Cauchy-Schwarz) per row pair.
    const tol = new Float64Array(t * v);
    for (let i = 0; i < t; i++) {
      for (let j = 0; j < v; j++) {
        let s = 0;
        for (let e = 0; e < c; e++) s += Math.abs(h[i * c + e]! * w[j * c + e]!);
        tol[i * v + j] = (c + 4) * 2 ** -23 * s;
      }
    }
    assertClose(logits.view(), ref, `lm_head T=${t} V=${v} C=${c}`, { tol });
  }
});
