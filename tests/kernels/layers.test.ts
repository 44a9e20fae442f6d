// Embedding, RMSNorm, RoPE, SwiGLU, add and the value head against the float64
// reference; their backward passes against finite differences.
//
// Tolerances: elementwise ops 1e-6 relative (+ 1e-7 of the array's scale); row
// reductions (rmsnorm, value head) 1e-5 of the scale; finite differences 2e-4.
import assert from "node:assert/strict";
import {
  add,
  embeddingBackward,
  embeddingForward,
  rmsnormBackward,
  rmsnormForward,
  rope,
  ropeFreqs,
  swigluBackward,
  swigluForward,
  Tensor,
  valueHeadBackward,
  valueHeadForward,
} from "../../ffi/mod.ts";
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
import {
  addRef,
  embeddingBackwardRef,
  embeddingRef,
  rmsnormBackwardRef,
  rmsnormRef,
  ropeRef,
  swigluBackwardRef,
  swigluRef,
  valueHeadBackwardRef,
  valueHeadRef,
} from "./_reference.ts";

Deno.test("embedding forward gathers rows and backward scatter-adds repeated tokens", () => {
  using k = openKernels();
  const rng = new Rng("embedding");
  // (T, V, C): tiny, primes with repeats, and T * C above the threads' threshold
  // with only 3 distinct ids (so threads would race on a row if they split by row).
  for (const [t, v, c] of [[1, 1, 1], [7, 5, 13], [13, 97, 8], [600, 3, 64]] as const) {
    const tokens = rng.ints(t, 0, v - 1);
    if (t > 1) tokens[t - 1] = tokens[0]!; // at least one repeat
    const wte = rng.randn(v * c), dout = rng.randn(t * c), dwte0 = rng.randn(v * c);
    using tt = i32(k, tokens);
    using tw = f32(k, wte, [v, c]);
    using out = nans(k, [t, c]);
    embeddingForward(k, out, tt, tw);
    assert.deepEqual(
      out.view(),
      Float32Array.from(embeddingRef(tokens, wte, c)),
      `embedding T=${t} V=${v} C=${c}`,
    );
    using tdout = f32(k, dout, [t, c]);
    using dwte = f32(k, dwte0, [v, c]);
    embeddingBackward(k, dwte, tdout, tt);
    const exp = embeddingBackwardRef(dwte0, dout, tokens, c);
    assertClose(dwte.view(), exp, `embedding backward T=${t} V=${v} C=${c}`, {
      rtol: 1e-6,
      atol: 1e-6 * maxAbs(exp),
    });
  }
});

Deno.test("embedding backward matches finite differences of the forward", () => {
  using k = openKernels();
  const rng = new Rng("embedding-fd");
  const [t, v, c] = [6, 4, 3];
  const tokens = Int32Array.from([2, 0, 2, 3, 2, 0]);
  const wte = rng.randn(v * c), g = rng.randn(t * c);
  using tt = i32(k, tokens);
  using tg = f32(k, g, [t, c]);
  using dwte = new Tensor(k, [v, c], "f32");
  embeddingBackward(k, dwte, tg, tt);
  const fd = fdGrad((w) => dot(g, embeddingRef(tokens, w, c)), wte);
  assertGrad(dwte.view(), fd, "embedding dwte");
  // Row 1 is never used: its gradient stays exactly zero.
  assert.deepEqual([...dwte.view().subarray(c, 2 * c)], [0, 0, 0]);
});

Deno.test("rmsnorm forward (out, rstd) and backward (dx written, dweight +=) match the reference", () => {
  using k = openKernels();
  const rng = new Rng("rmsnorm");
  for (const [t, c] of [[1, 1], [7, 13], [33, 257], [300, 128]] as const) {
    for (const eps of [1e-6, 0.5]) {
      const x = rng.randn(t * c, 2), w = rng.randn(c), dout = rng.randn(t * c), dw0 = rng.randn(c);
      using tx = f32(k, x, [t, c]);
      using tw = f32(k, w, [c]);
      using out = nans(k, [t, c]);
      using rstd = nans(k, [t]);
      rmsnormForward(k, out, rstd, tx, tw, eps);
      const ref = rmsnormRef(x, w, t, c, eps);
      const what = `rmsnorm T=${t} C=${c} eps=${eps}`;
      assertClose(out.view(), ref.out, what, { rtol: 1e-5, atol: 1e-6 * maxAbs(ref.out) });
      assertClose(rstd.view(), ref.rstd, `${what} rstd`, { rtol: 1e-6 });
      using tdout = f32(k, dout, [t, c]);
      using dx = nans(k, [t, c]);
      using dweight = f32(k, dw0, [c]);
      rmsnormBackward(k, dx, dweight, tdout, tx, rstd, tw);
      const g = rmsnormBackwardRef(dout, x, w, t, c, eps);
      // dx is a difference of two terms of size ~ rstd |dout| |w|: the error scales with those.
      const dxScale = maxAbs(ref.rstd) * maxAbs(dout) * maxAbs(w);
      assertClose(dx.view(), g.dx, `${what} dx`, { rtol: 1e-4, atol: 1e-5 * dxScale });
      const expDw = Float64Array.from(g.dweight, (d, j) => d + dw0[j]!);
      assertClose(dweight.view(), expDw, `${what} dweight +=`, {
        rtol: 1e-5,
        atol: 1e-5 * maxAbs(expDw),
      });
      using dx2 = nans(k, [t, c]);
      rmsnormBackward(k, dx2, null, tdout, tx, rstd, tw);
      assertClose(dx2.view(), g.dx, `${what} dx without dweight`, {
        rtol: 1e-4,
        atol: 1e-5 * dxScale,
      });
    }
  }
});

Deno.test("rmsnorm backward matches finite differences (x and weight)", () => {
  using k = openKernels();
  const rng = new Rng("rmsnorm-fd");
  for (const [t, c, eps] of [[1, 1, 1e-5], [3, 7, 1e-5], [2, 16, 0.3]] as const) {
    const x = rng.randn(t * c), w = rng.randn(c), g = rng.randn(t * c);
    using tx = f32(k, x, [t, c]);
    using tw = f32(k, w, [c]);
    using out = new Tensor(k, [t, c], "f32");
    using rstd = new Tensor(k, [t], "f32");
    rmsnormForward(k, out, rstd, tx, tw, eps);
    using tg = f32(k, g, [t, c]);
    using dx = nans(k, [t, c]);
    using dweight = new Tensor(k, [c], "f32");
    rmsnormBackward(k, dx, dweight, tg, tx, rstd, tw);
    const f = (xx: ArrayLike<number>, ww: ArrayLike<number>) =>
      dot(g, rmsnormRef(xx, ww, t, c, eps).out);
    // T=1, C=1 with tiny eps: y = sign(x) w, so dx ~ 0 and only the absolute part of the tolerance matters.
    if (c > 1) assertGrad(dx.view(), fdGrad((xx) => f(xx, w), x), `rmsnorm T=${t} C=${c} dx`);
    assertGrad(dweight.view(), fdGrad((ww) => f(x, ww), w), `rmsnorm T=${t} C=${c} dweight`);
  }
});

Deno.test("rope matches the HF rotate_half reference at explicit positions and several thetas", () => {
  using k = openKernels();
  const rng = new Rng("rope");
  for (const [t, h, d] of [[1, 1, 2], [7, 3, 10], [13, 2, 64], [70, 4, 64]] as const) {
    for (const theta of [10000, 1e6, 3.5]) {
      const x = rng.randn(t * h * d);
      const positions = rng.ints(t, 0, 4096);
      positions[0] = 0; // position 0 is the identity
      using tx = f32(k, x, [t, h, d]);
      using tp = i32(k, positions);
      using out = nans(k, [t, h, d]);
      rope(k, out, tx, tp, theta);
      const ref = ropeRef(x, positions, t, h, d, theta);
      const what = `rope T=${t} H=${h} D=${d} theta=${theta}`;
      assertClose(out.view(), ref, what, { rtol: 1e-5, atol: 2e-6 * maxAbs(ref) });
      assert.deepEqual(
        out.view().subarray(0, h * d),
        x.subarray(0, h * d),
        `${what}: position 0 changed x`,
      );
      // inverse = true rotates back.
      using back = nans(k, [t, h, d]);
      rope(k, back, out, tp, theta, true);
      assertClose(back.view(), x, `${what} inverse(forward(x))`, {
        rtol: 1e-5,
        atol: 4e-6 * maxAbs(x),
      });
      assertClose(
        back.view(),
        ropeRef(out.view(), positions, t, h, d, theta, true),
        `${what} inverse vs reference`,
        {
          rtol: 1e-5,
          atol: 2e-6 * maxAbs(x),
        },
      );
      // In place: out == x.
      using inplace = f32(k, x, [t, h, d]);
      rope(k, inplace, inplace, tp, theta);
      assertClose(inplace.view(), ref, `${what} in place`, {
        rtol: 1e-5,
        atol: 2e-6 * maxAbs(ref),
      });
    }
  }
});

Deno.test("rope on rows that repeat positions (a table a position) equals rope row by row, bit for bit", () => {
  using k = openKernels();
  const rng = new Rng("rope repeats");
  const cases = [
    { t: 70, h: 4, d: 32, pos: (i: number) => i % 9 }, // packed sequences
    { t: 40, h: 3, d: 10, pos: (i: number) => 100 + (i % 6) }, // decode rows at few lengths
    { t: 300, h: 14, d: 64, pos: (i: number) => (i * 7) % 128 }, // threaded
  ];
  for (const { t, h, d, pos } of cases) {
    for (const inverse of [false, true]) {
      const x = rng.randn(t * h * d);
      const positions = Int32Array.from({ length: t }, (_, i) => pos(i));
      using tx = f32(k, x, [t, h, d]);
      using tp = i32(k, positions);
      using out = nans(k, [t, h, d]);
      rope(k, out, tx, tp, 1e4, inverse);
      const what = `rope T=${t} H=${h} D=${d} inverse=${inverse}`;
      assertClose(out.view(), ropeRef(x, positions, t, h, d, 1e4, inverse), what, {
        rtol: 1e-5,
        atol: 2e-6 * maxAbs(x),
      });
      for (let i = 0; i < t; i++) {
        using rx = f32(k, x.subarray(i * h * d, (i + 1) * h * d), [1, h, d]);
        using rp = i32(k, [positions[i]!]);
        using row = nans(k, [1, h, d]);
        rope(k, row, rx, rp, 1e4, inverse);
        assert.deepEqual(
          row.view(),
          out.view().subarray(i * h * d, (i + 1) * h * d),
          `${what} row ${i}`,
        );
      }
    }
  }
});

Deno.test("ropeFreqs rotates by the given frequencies: theta's table equals rope, any table its reference, in place and inverse", () => {
  using k = openKernels();
  const rng = new Rng("rope freqs");
  for (const [t, h, d] of [[1, 1, 2], [9, 3, 10], [17, 2, 64]] as const) {
    const x = rng.randn(t * h * d);
    const positions = rng.ints(t, 0, 4096);
    using tx = f32(k, x, [t, h, d]);
    using tp = i32(k, positions);
    // theta's own frequencies, as a float32 table: rope's results within float32 rounding
    const theta = 1e6;
    const table = Float32Array.from({ length: d / 2 }, (_, j) => Math.pow(theta, -2 * j / d));
    using tf = f32(k, table, [d / 2]);
    using out = nans(k, [t, h, d]);
    ropeFreqs(k, out, tx, tp, tf);
    const ref = ropeRef(x, positions, t, h, d, theta);
    const what = `ropeFreqs T=${t} H=${h} D=${d}`;
    // (a float32 frequency is off by up to 6e-8 relative: at position 4096, 2.4e-4 rad)
    assertClose(out.view(), ref, what, { rtol: 1e-3, atol: 5e-4 * maxAbs(ref) });
    // any table: each pair j by positions[i] * table[j], exactly as the reference computes it
    const odd = Float32Array.from({ length: d / 2 }, (_, j) => 0.37 / (j + 1));
    using to = f32(k, odd, [d / 2]);
    using inplace = f32(k, x, [t, h, d]);
    ropeFreqs(k, inplace, inplace, tp, to);
    const expected = new Float64Array(t * h * d);
    for (let i = 0; i < t; i++) {
      for (let hh = 0; hh < h; hh++) {
        const b = (i * h + hh) * d;
        for (let j = 0; j < d / 2; j++) {
          const a = positions[i]! * odd[j]!, [p, q] = [x[b + j]!, x[b + j + d / 2]!];
          expected[b + j] = p * Math.cos(a) - q * Math.sin(a);
          expected[b + j + d / 2] = q * Math.cos(a) + p * Math.sin(a);
        }
      }
    }
    assertClose(inplace.view(), expected, `${what} any table, in place`, {
      rtol: 1e-5,
      atol: 2e-6 * maxAbs(expected),
    });
    using back = nans(k, [t, h, d]);
    ropeFreqs(k, back, inplace, tp, to, true);
    assertClose(back.view(), x, `${what} inverse(forward(x))`, {
      rtol: 1e-5,
      atol: 4e-6 * maxAbs(x),
    });
  }
  // the table's length is checked, and a non-finite entry is an error naming it
  using tx = f32(k, new Float32Array(8), [1, 2, 4]);
  using tp = i32(k, new Int32Array(1));
  using short = f32(k, new Float32Array(3), [3]);
  assert.throws(() => ropeFreqs(k, tx, tx, tp, short), /invFreq/);
  using nan = f32(k, Float32Array.of(1, NaN), [2]);
  assert.throws(() => ropeFreqs(k, tx, tx, tp, nan), /inv_freq\[1\] is not finite/);
});

Deno.test("rope's backward (inverse rotation of dout) matches finite differences", () => {
  using k = openKernels();
  const rng = new Rng("rope-fd");
  const [t, h, d, theta] = [3, 2, 6, 100];
  const x = rng.randn(t * h * d), g = rng.randn(t * h * d);
  const positions = Int32Array.from([5, 0, 17]);
  using tg = f32(k, g, [t, h, d]);
  using tp = i32(k, positions);
  using dx = nans(k, [t, h, d]);
  rope(k, dx, tg, tp, theta, true);
  assertGrad(
    dx.view(),
    fdGrad((xx) => dot(g, ropeRef(xx, positions, t, h, d, theta)), x),
    "rope dx",
  );
});

Deno.test("swiglu forward and backward match the reference, large |gate| included", () => {
  using k = openKernels();
  const rng = new Rng("swiglu");
  for (const n of [1, 7, 100003]) {
    const gate = rng.randn(n, 3), up = rng.randn(n), dout = rng.randn(n);
    if (n > 4) [gate[0], gate[1], gate[2], gate[3]] = [-30, 30, -80, 0];
    using tg = f32(k, gate);
    using tu = f32(k, up);
    using out = nans(k, [n]);
    swigluForward(k, out, tg, tu);
    const ref = swigluRef(gate, up);
    assertClose(out.view(), ref, `swiglu n=${n}`, { rtol: 2e-6, atol: 1e-7 * maxAbs(ref) });
    using td = f32(k, dout);
    using dgate = nans(k, [n]);
    using dup = nans(k, [n]);
    swigluBackward(k, dgate, dup, td, tg, tu);
    const g = swigluBackwardRef(dout, gate, up);
    assertClose(dgate.view(), g.dgate, `swiglu n=${n} dgate`, {
      rtol: 4e-6,
      atol: 1e-7 * maxAbs(g.dgate),
    });
    assertClose(dup.view(), g.dup, `swiglu n=${n} dup`, { rtol: 2e-6, atol: 1e-7 * maxAbs(g.dup) });
  }
});

Deno.test("swiglu backward matches finite differences", () => {
  using k = openKernels();
  const rng = new Rng("swiglu-fd");
  const n = 9;
  const gate = rng.randn(n, 2), up = rng.randn(n), g = rng.randn(n);
  using tg = f32(k, gate);
  using tu = f32(k, up);
  using td = f32(k, g);
  using dgate = nans(k, [n]);
  using dup = nans(k, [n]);
  swigluBackward(k, dgate, dup, td, tg, tu);
  assertGrad(dgate.view(), fdGrad((gg) => dot(g, swigluRef(gg, up)), gate), "swiglu dgate");
  assertGrad(dup.view(), fdGrad((uu) => dot(g, swigluRef(gate, uu)), up), "swiglu dup");
});

Deno.test("add: out = a + b, also with out aliasing a or b", () => {
  using k = openKernels();
  const rng = new Rng("add");
  for (const n of [1, 7, 70001]) {
    const a = rng.randn(n), b = rng.randn(n);
    const ref = addRef(a, b);
    using ta = f32(k, a);
    using tb = f32(k, b);
    using out = nans(k, [n]);
    add(k, out, ta, tb);
    // a + b in float32 is the correctly rounded float64 sum.
    assert.deepEqual(out.view(), Float32Array.from(ref), `add n=${n}`);
    add(k, ta, ta, tb);
    assert.deepEqual(ta.view(), Float32Array.from(ref), `add n=${n} out = a`);
    using a2 = f32(k, a);
    add(k, tb, a2, tb);
    assert.deepEqual(tb.view(), Float32Array.from(ref), `add n=${n} out = b`);
  }
});

Deno.test("value head forward and backward (dh written, dw and dbias +=) match the reference", () => {
  using k = openKernels();
  const rng = new Rng("value-head");
  for (const [t, c] of [[1, 1], [7, 13], [300, 129]] as const) {
    const h = rng.randn(t * c), w = rng.randn(c), bias = 0.375, dvalues = rng.randn(t);
    const dw0 = rng.randn(c), db0 = rng.randn(1);
    using th = f32(k, h, [t, c]);
    using tw = f32(k, w);
    using values = nans(k, [t]);
    valueHeadForward(k, values, th, tw, bias);
    const ref = valueHeadRef(h, w, bias, t, c);
    const what = `value head T=${t} C=${c}`;
    assertClose(values.view(), ref, what, { rtol: 1e-5, atol: 2e-6 * Math.sqrt(c) });
    using tdv = f32(k, dvalues);
    using dh = nans(k, [t, c]);
    using dw = f32(k, dw0);
    using dbias = f32(k, db0);
    valueHeadBackward(k, { dh, dw, dbias }, tdv, th, tw);
    const g = valueHeadBackwardRef(dvalues, h, w, t, c);
    assertClose(dh.view(), g.dh, `${what} dh`, { rtol: 1e-6 });
    const expDw = Float64Array.from(g.dw, (x, j) => x + dw0[j]!);
    assertClose(dw.view(), expDw, `${what} dw +=`, { rtol: 1e-5, atol: 1e-5 * maxAbs(expDw) });
    assertClose(dbias.view(), [g.dbias + db0[0]!], `${what} dbias +=`, {
      rtol: 1e-5,
      atol: 1e-6 * t,
    });
    // Null gradients are skipped.
    using dw2 = new Tensor(k, [c], "f32");
    valueHeadBackward(k, { dw: dw2 }, tdv, th, tw);
    assertClose(dw2.view(), g.dw, `${what} dw only`, { rtol: 1e-5, atol: 1e-5 * maxAbs(g.dw) });
  }
});

Deno.test("value head backward matches finite differences", () => {
  using k = openKernels();
  const rng = new Rng("value-head-fd");
  const [t, c] = [4, 5];
  const h = rng.randn(t * c), w = rng.randn(c), g = rng.randn(t);
  using th = f32(k, h, [t, c]);
  using tw = f32(k, w);
  using tg = f32(k, g);
  using dh = nans(k, [t, c]);
  using dw = new Tensor(k, [c], "f32");
  using dbias = new Tensor(k, [1], "f32");
  valueHeadBackward(k, { dh, dw, dbias }, tg, th, tw);
  assertGrad(dh.view(), fdGrad((hh) => dot(g, valueHeadRef(hh, w, 0.5, t, c)), h), "value head dh");
  assertGrad(dw.view(), fdGrad((ww) => dot(g, valueHeadRef(h, ww, 0.5, t, c)), w), "value head dw");
  assertGrad(
    dbias.view(),
    fdGrad((b) => dot(g, valueHeadRef(h, w, b[0]!, t, c)), [0.5]),
    "value head dbias",
  );
});
