// AdamW (hand-computed steps and a float64 reference), sum of squares, scale,
// fill, copy and bf16 conversion (round to nearest even, ties, NaN, overflow).
import assert from "node:assert/strict";
import { adamw, fill, fromBf16, scale, sumSquares, Tensor, toBf16 } from "../../ffi/mod.ts";
import { assertClose, f32, maxAbs, openKernels, Rng } from "./_helpers.ts";
import { adamwRef, bf16Ref, bf16Value } from "./_reference.ts";

Deno.test("AdamW: the first steps with a constant gradient move each parameter by lr * sign(g) (+ decoupled decay)", () => {
  using k = openKernels();
  // Step 1: m = (1 - b1) g, v = (1 - b2) g^2; bias correction gives m^ = g, v^ = g^2,
  // so the update is lr g / (|g| + eps) ~ lr sign(g). With a constant g the same holds
  // at every step (m^ = g, v^ = g^2 again). A zero gradient leaves the parameter alone.
  const p0 = [1, -2, 0.5, 3, -0.25];
  const g = [0.5, -3, 1e-3, 0, -40];
  const lr = 0.1;
  using params = f32(k, p0);
  using m = new Tensor(k, [5], "f32");
  using v = new Tensor(k, [5], "f32");
  using grads = f32(k, g);
  for (let step = 1; step <= 3; step++) {
    adamw(k, params, m, v, grads, { lr, step });
    const expected = p0.map((p, i) =>
      p -
      step * lr * (g[i]! === 0 ? 0 : Math.sign(g[i]!) * Math.abs(g[i]!) / (Math.abs(g[i]!) + 1e-8))
    );
    assertClose(params.view(), expected, `AdamW step ${step}`, { rtol: 2e-6 });
  }
  // With weight decay 0.1: p1 = p0 - lr sign(g) - lr wd p0, e.g. 1 - 0.1 - 0.01 = 0.89 and -2 + 0.1 + 0.02 = -1.88.
  using p2 = f32(k, p0);
  using m2 = new Tensor(k, [5], "f32");
  using v2 = new Tensor(k, [5], "f32");
  adamw(k, p2, m2, v2, grads, { lr, step: 1, weightDecay: 0.1 });
  assertClose(p2.view().subarray(0, 2), [0.89, -1.88], "AdamW decay", { rtol: 1e-6 });
  assertClose(p2.view().subarray(3, 4), [3 - 0.1 * 0.1 * 3], "AdamW decay with g = 0", {
    rtol: 1e-6,
  });
  // grad_scale scales g before the moments: m = (1 - b1) g s, v = (1 - b2) (g s)^2.
  using p3 = f32(k, p0);
  using m3 = new Tensor(k, [5], "f32");
  using v3 = new Tensor(k, [5], "f32");
  adamw(k, p3, m3, v3, grads, { lr, step: 1, beta1: 0.8, beta2: 0.9, gradScale: 0.5 });
  assertClose(m3.view(), g.map((x) => 0.2 * 0.5 * x), "AdamW m with grad_scale", {
    rtol: 1e-6,
    atol: 1e-12,
  });
  assertClose(v3.view(), g.map((x) => 0.1 * (0.5 * x) ** 2), "AdamW v with grad_scale", {
    rtol: 1e-6,
    atol: 1e-12,
  });
});

Deno.test("AdamW: several steps with random gradients match the float64 reference", () => {
  using k = openKernels();
  const rng = new Rng("adamw");
  for (const n of [1, 7, 70001]) {
    const hp = { lr: 3e-3, beta1: 0.9, beta2: 0.95, eps: 1e-6, weightDecay: 0.05, gradScale: 0.7 };
    const p0 = rng.randn(n);
    using params = f32(k, p0);
    using m = new Tensor(k, [n], "f32");
    using v = new Tensor(k, [n], "f32");
    const rp = Float64Array.from(p0), rm = new Float64Array(n), rv = new Float64Array(n);
    for (let step = 1; step <= 5; step++) {
      const g = rng.randn(n, step === 3 ? 10 : 1);
      using grads = f32(k, g);
      adamw(k, params, m, v, grads, { ...hp, step });
      adamwRef(rp, rm, rv, g, { ...hp, step });
    }
    // Each step moves a parameter by <= ~lr, computed to float32 precision: compare the displacement.
    const moved = Float64Array.from(rp, (x, i) => x - p0[i]!);
    const got = Float64Array.from(params.view(), (x, i) => x - p0[i]!);
    assertClose(got, moved, `AdamW n=${n} displacement after 5 steps`, {
      rtol: 1e-3,
      atol: 1e-4 * maxAbs(moved),
    });
    assertClose(m.view(), rm, `AdamW n=${n} m`, { rtol: 1e-5, atol: 1e-6 * maxAbs(rm) });
    assertClose(v.view(), rv, `AdamW n=${n} v`, { rtol: 1e-5, atol: 1e-6 * maxAbs(rv) });
  }
});

Deno.test("sum of squares (double accumulation), scale and fill", () => {
  using k = openKernels();
  const rng = new Rng("norms");
  for (const n of [1, 7, 100003]) {
    const x = rng.randn(n, 3);
    using t = f32(k, x);
    let s = 0;
    for (const e of x) s += e * e;
    const got = sumSquares(k, t);
    assert.ok(Math.abs(got - s) <= 1e-12 * s, `sum_squares n=${n}: got ${got}, expected ${s}`);
    scale(k, t, -0.375);
    assert.deepEqual(t.view(), Float32Array.from(x, (e) => e * -0.375), `scale n=${n}`);
    fill(k, t, 2.5);
    assert.ok(t.view().every((e) => e === 2.5), `fill n=${n}`);
  }
  // 4096^2 + 1000 ones = 2^24 + 1000: a float32 accumulator adding the ones one at a
  // time would stay at 2^24 (2^24 + 1 is not a float32).
  const big = new Float32Array(1001).fill(1);
  big[0] = 4096;
  using tb = f32(k, big);
  assert.equal(sumSquares(k, tb), 2 ** 24 + 1000);
});

Deno.test("arl_copy copies bytes (overlapping too)", () => {
  using k = openKernels();
  using a = f32(k, [1, 2, 3, 4, 5]);
  using b = new Tensor(k, [5], "f32");
  k.check("arl_copy", k.sym.arl_copy(k.ctx, b.ptr, a.ptr, 20n));
  assert.deepEqual([...b.view()], [1, 2, 3, 4, 5]);
  // memmove semantics: shift by one element inside the same buffer.
  const p = Deno.UnsafePointer.offset(a.ptr, 4)!;
  k.check("arl_copy", k.sym.arl_copy(k.ctx, p, a.ptr, 16n));
  assert.deepEqual([...a.view()], [1, 1, 2, 3, 4]);
});

function bitsToF32(bits: number[]): Float32Array {
  return new Float32Array(Uint32Array.from(bits).buffer);
}

Deno.test("bf16: round to nearest even (ties both ways), overflow to infinity, subnormals, signed zero", () => {
  using k = openKernels();
  const rng = new Rng("bf16");
  const special = [
    0x3f808000, // 1 + 2^-8: exact tie between 0x3f80 (even) and 0x3f81 -> 0x3f80
    0x3f818000, // tie between 0x3f81 (odd) and 0x3f82 -> 0x3f82
    0x3f808001, // just above the tie -> 0x3f81
    0x3f817fff, // just below the tie -> 0x3f81
    0xbf808000, // negative tie -> 0xbf80
    0xbf818000, // negative tie -> 0xbf82
    0x7f7fffff, // max float32 -> rounds past max bf16 (0x7f7f) to +inf
    0x7f7f7fff, // below the overflow tie -> 0x7f7f
    0x7f7f8000, // overflow tie: 0x7f7f is odd -> inf
    0xff7fffff, // -> -inf
    0x7f800000, // +inf
    0xff800000, // -inf
    0x00000000, // +0
    0x80000000, // -0
    0x00000001, // smallest subnormal -> +0
    0x00008000, // subnormal tie, even -> 0x0000
    0x00018000, // subnormal tie, odd -> 0x0002
    0x007fffff, // largest subnormal -> 0x0080 (smallest normal)
    0x3fffffff, // 1.999... -> 2.0 (carry into the exponent)
  ];
  const bits = [...special];
  for (let i = 0; i < 4000; i++) {
    // random patterns with every exponent, excluding NaNs
    let b = (rng.int(0, 0xffff) << 16 | rng.int(0, 0xffff)) >>> 0;
    if ((b & 0x7f800000) === 0x7f800000) b &= 0xbfffffff;
    bits.push(b);
  }
  for (let i = 0; i < 1000; i++) {
    // random exact ties (low half 0x8000)
    let b = ((rng.int(0, 0xffff) << 16) | 0x8000) >>> 0;
    if ((b & 0x7f800000) === 0x7f800000) b = (b & 0xbfffffff) >>> 0;
    bits.push(b);
  }
  const x = bitsToF32(bits);
  using tx = f32(k, x);
  using out = new Tensor(k, [x.length], "bf16");
  toBf16(k, out, tx);
  const got = out.toArray();
  const hand: Record<number, number> = {
    0x3f808000: 0x3f80,
    0x3f818000: 0x3f82,
    0x3f808001: 0x3f81,
    0x3f817fff: 0x3f81,
    0xbf808000: 0xbf80,
    0xbf818000: 0xbf82,
    0x7f7fffff: 0x7f80,
    0x7f7f7fff: 0x7f7f,
    0x7f7f8000: 0x7f80,
    0xff7fffff: 0xff80,
    0x00018000: 0x0002,
    0x007fffff: 0x0080,
    0x3fffffff: 0x4000,
  };
  for (let i = 0; i < bits.length; i++) {
    const exp = bf16Ref(x[i]!);
    const h = hand[bits[i]!];
    if (h !== undefined) assert.equal(exp, h, `the reference itself: 0x${bits[i]!.toString(16)}`);
    assert.equal(
      got[i],
      exp,
      `bf16(0x${bits[i]!.toString(16)} = ${x[i]}) = 0x${got[i]!.toString(16)}, expected 0x${
        exp.toString(16)
      }`,
    );
  }
  // Back to f32: exact (bf16 is the top half of an f32).
  using back = new Tensor(k, [x.length], "f32");
  fromBf16(k, back, out);
  const bv = back.view();
  for (let i = 0; i < bits.length; i++) {
    assert.ok(
      Object.is(bv[i], bf16Value(got[i]!)),
      `f32(bf16 0x${got[i]!.toString(16)}) = ${bv[i]}`,
    );
  }
});

Deno.test("bf16: NaN stays NaN (quiet, sign kept), including payloads that truncate to infinity", () => {
  using k = openKernels();
  const nanBits = [
    0x7fc00000,
    0xffc00000,
    0x7f800001,
    0xff800001,
    0x7fbfffff,
    0x7f80ffff,
    0x7fffffff,
  ];
  const x = bitsToF32(nanBits);
  using tx = f32(k, x);
  using out = new Tensor(k, [x.length], "bf16");
  toBf16(k, out, tx);
  const got = out.view();
  for (let i = 0; i < nanBits.length; i++) {
    const b = got[i]!;
    const what = `bf16(NaN 0x${nanBits[i]!.toString(16)}) = 0x${b.toString(16)}`;
    assert.ok(Number.isNaN(bf16Value(b)), `${what} is not NaN`);
    assert.equal(b & 0x40, 0x40, `${what} is not quiet`);
    assert.equal(b & 0x8000, nanBits[i]! >>> 16 & 0x8000, `${what} lost its sign`);
  }
  using back = new Tensor(k, [x.length], "f32");
  fromBf16(k, back, out);
  assert.ok(back.view().every(Number.isNaN));
});
