// The decode fusions on the CPU: rmsnormLinearForward is rmsnormForward then linearForward,
// rmsnormLinearSwigluForward rmsnormForward, linearForward on the gate rows and on the up rows,
// then swigluForward (bit for bit: the CPU library runs exactly those calls), for fp32 and
// bf16 weights, and both match the float64 reference; bad arguments get clear errors. The
// CUDA kernels that fuse them are compared with these results by bench/gpu/ops_compare.ts
// (emulated in emu.test.ts).
import assert from "node:assert/strict";
import {
  KernelError,
  kvCacheWrite,
  linearForward,
  normRopeKvCacheWrite,
  type NormRopeOptions,
  rmsnormForward,
  rmsnormLinearForward,
  rmsnormLinearSwigluForward,
  rmsnormQkvRopeForward,
  rope,
  ropeFreqs,
  ropeKvCacheWrite,
  swigluForward,
  Tensor,
  toBf16,
} from "../../ffi/mod.ts";
import { assertClose, f32, i32, maxAbs, nans, openKernels, Rng } from "./_helpers.ts";
import { linearForwardRef, rmsnormRef, swigluRef } from "./_reference.ts";

Deno.test("rmsnormLinearForward equals rmsnormForward then linearForward, fp32 and bf16 weights", () => {
  using k = openKernels();
  const rng = new Rng("rmsnorm linear");
  for (const [m, n, kk] of [[1, 33, 40], [3, 17, 64], [12, 9, 96]] as const) {
    const x = rng.randn(m * kk, 2), nw = rng.uniformArray(kk, 0.5, 1.5);
    const w = rng.randn(n * kk, 0.3), bias = rng.randn(n);
    using tx = f32(k, x, [m, kk]);
    using tnw = f32(k, nw, [kk]);
    using tw = f32(k, w, [n, kk]);
    using w16 = new Tensor(k, [n, kk], "bf16");
    toBf16(k, w16, tw);
    using tb = f32(k, bias, [n]);
    for (const weights of [tw, w16]) {
      for (const b of [tb, null]) {
        using h = nans(k, [m, kk]);
        using rstd = nans(k, [m]);
        using expected = nans(k, [m, n]);
        rmsnormForward(k, h, rstd, tx, tnw, 1e-6);
        linearForward(k, expected, h, weights, b);
        using y = nans(k, [m, n]);
        rmsnormLinearForward(k, y, tx, tnw, weights, b, 1e-6);
        const what = `${m}x${kk} -> ${n}, ${weights.dtype} weights${b ? ", bias" : ""}`;
        assert.deepEqual(Array.from(y.view()), Array.from(expected.view()), what);
      }
    }
    const ref = linearForwardRef(rmsnormRef(x, nw, m, kk, 1e-6).out, w, bias, m, n, kk);
    using y = nans(k, [m, n]);
    rmsnormLinearForward(k, y, tx, tnw, tw, tb, 1e-6);
    assertClose(y.view(), ref.y, `${m}x${kk} against the reference`, {
      rtol: 1e-5,
      atol: 1e-5 * maxAbs(ref.y),
    });
  }
});

Deno.test("rmsnormLinearForward: mismatched shapes, a bad eps and null pointers are clear errors", () => {
  using k = openKernels();
  using x = f32(k, new Float32Array(6), [2, 3]);
  using nw = f32(k, new Float32Array(3).fill(1), [3]);
  using w = f32(k, new Float32Array(12), [4, 3]);
  using y = nans(k, [2, 4]);
  using nw4 = f32(k, new Float32Array(4), [4]);
  assert.throws(
    () => rmsnormLinearForward(k, y, x, nw4, w, null, 1e-6),
    /normWeight must have shape \[3\], got \[4\]/,
  );
  using y5 = nans(k, [2, 5]);
  assert.throws(
    () => rmsnormLinearForward(k, y5, x, nw, w, null, 1e-6),
    /y must have shape \[2, 4\], got \[2, 5\]/,
  );
  assert.throws(() => rmsnormLinearForward(k, y, x, nw, w, null, -1), (e: unknown) => {
    assert.ok(e instanceof KernelError, String(e));
    assert.match(e.message, /arl_rmsnorm_linear_forward: eps must be finite and >= 0, got -1/);
    return true;
  });
  const status = k.sym.arl_rmsnorm_linear_forward(
    k.ctx,
    y.ptr,
    null,
    nw.ptr,
    w.ptr,
    null,
    2,
    4,
    3,
    0,
  );
  assert.throws(() => k.check("arl_rmsnorm_linear_forward", status), (e: unknown) => {
    assert.ok(e instanceof KernelError, String(e));
    assert.match(e.message, /arl_rmsnorm_linear_forward: x must not be null/);
    return true;
  });
});

Deno.test("rmsnormLinearSwigluForward equals rmsnormForward, the gate and up linears, then swigluForward", () => {
  using k = openKernels();
  const rng = new Rng("rmsnorm linear swiglu");
  for (const [m, f, kk] of [[1, 33, 40], [5, 17, 64], [12, 9, 96]] as const) {
    const x = rng.randn(m * kk, 2), nw = rng.uniformArray(kk, 0.5, 1.5);
    const w = rng.randn(2 * f * kk, 0.3), bias = rng.randn(2 * f);
    using tx = f32(k, x, [m, kk]);
    using tnw = f32(k, nw, [kk]);
    using tw = f32(k, w, [2 * f, kk]);
    using w16 = new Tensor(k, [2 * f, kk], "bf16");
    toBf16(k, w16, tw);
    using tb = f32(k, bias, [2 * f]);
    for (const weights of [tw, w16]) {
      // the gate rows (the first f) and the up rows of w, and of the bias
      const size = weights.dtype === "bf16" ? 2 : 4;
      using wg = Tensor.viewOf(weights, 0, [f, kk]);
      using wu = Tensor.viewOf(weights, f * kk * size, [f, kk]);
      using bg = Tensor.viewOf(tb, 0, [f]);
      using bu = Tensor.viewOf(tb, 4 * f, [f]);
      for (const withBias of [true, false]) {
        using h = nans(k, [m, kk]);
        using rstd = nans(k, [m]);
        using g = nans(k, [m, f]);
        using u = nans(k, [m, f]);
        using expected = nans(k, [m, f]);
        rmsnormForward(k, h, rstd, tx, tnw, 1e-6);
        linearForward(k, g, h, wg, withBias ? bg : null);
        linearForward(k, u, h, wu, withBias ? bu : null);
        swigluForward(k, expected, g, u);
        using y = nans(k, [m, f]);
        rmsnormLinearSwigluForward(k, y, tx, tnw, weights, withBias ? tb : null, 1e-6);
        const what = `${m}x${kk} -> ${f}, ${weights.dtype} weights${withBias ? ", bias" : ""}`;
        assert.deepEqual(Array.from(y.view()), Array.from(expected.view()), what);
      }
    }
    const hRef = rmsnormRef(x, nw, m, kk, 1e-6).out;
    const gRef = linearForwardRef(hRef, w.subarray(0, f * kk), bias.subarray(0, f), m, f, kk);
    const uRef = linearForwardRef(hRef, w.subarray(f * kk), bias.subarray(f), m, f, kk);
    const ref = swigluRef(gRef.y, uRef.y);
    using y = nans(k, [m, f]);
    rmsnormLinearSwigluForward(k, y, tx, tnw, tw, tb, 1e-6);
    assertClose(y.view(), ref, `${m}x${kk} against the reference`, {
      rtol: 1e-5,
      atol: 1e-5 * maxAbs(ref),
    });
  }
});

Deno.test("rmsnormLinearSwigluForward: odd or mismatched shapes, bad sizes and eps, null pointers are clear errors", () => {
  using k = openKernels();
  using x = f32(k, new Float32Array(6), [2, 3]);
  using nw = f32(k, new Float32Array(3).fill(1), [3]);
  using w = f32(k, new Float32Array(12), [4, 3]);
  using y = nans(k, [2, 2]);
  using w3 = f32(k, new Float32Array(9), [3, 3]);
  assert.throws(
    () => rmsnormLinearSwigluForward(k, y, x, nw, w3, null, 1e-6),
    /w must have an even number of rows \(gate, then up\), got \[3, 3\]/,
  );
  using y4 = nans(k, [2, 4]);
  assert.throws(
    () => rmsnormLinearSwigluForward(k, y4, x, nw, w, null, 1e-6),
    /y must have shape \[2, 2\], got \[2, 4\]/,
  );
  using b2 = f32(k, new Float32Array(2), [2]);
  assert.throws(
    () => rmsnormLinearSwigluForward(k, y, x, nw, w, b2, 1e-6),
    /bias must have shape \[4\], got \[2\]/,
  );
  const native = (message: RegExp) => (e: unknown) => {
    assert.ok(e instanceof KernelError, String(e));
    assert.match(e.message, message);
    return true;
  };
  assert.throws(
    () => rmsnormLinearSwigluForward(k, y, x, nw, w, null, -1),
    native(/arl_rmsnorm_linear_swiglu_forward: eps must be finite and >= 0, got -1/),
  );
  const name = "arl_rmsnorm_linear_swiglu_forward";
  const call = (xp: Deno.PointerValue, m: number, f: number, kk: number) =>
    k.check(name, k.sym[name](k.ctx, y.ptr, xp, nw.ptr, w.ptr, null, m, f, kk, 0));
  assert.throws(() => call(null, 2, 2, 3), native(new RegExp(`${name}: x must not be null`)));
  assert.throws(
    () => call(x.ptr, 2, 0, 3),
    native(new RegExp(`${name}: f must be positive, got 0`)),
  );
  // f x k fits the element limit (2^40), w's 2f x k does not
  assert.throws(
    () => call(x.ptr, 1, 2 ** 20, 2 ** 20),
    native(new RegExp(`${name}: w \\(2f x k\\) = 2199023255552 elements is too large`)),
  );
});

Deno.test("ropeKvCacheWrite equals rope on q and k, then kvCacheWrite; bad positions and slots are errors", () => {
  using k = openKernels();
  const rng = new Rng("rope kv");
  const [n, hq, hkv, d, s, l] = [3, 4, 2, 8, 2, 6];
  const q = rng.randn(n * hq * d), kk = rng.randn(n * hkv * d), v = rng.randn(n * hkv * d);
  const kc0 = rng.randn(s * hkv * l * d), vc0 = rng.randn(s * hkv * l * d);
  const [slots, positions] = [Int32Array.of(1, 0, 1), Int32Array.of(5, 2, 0)];
  const cache = [s, hkv, l, d];
  using ts = i32(k, slots);
  using tp = i32(k, positions);
  using tv = f32(k, v, [n, hkv, d]);
  // unfused
  using q1 = f32(k, q, [n, hq, d]);
  using k1 = f32(k, kk, [n, hkv, d]);
  using kc1 = f32(k, kc0, cache);
  using vc1 = f32(k, vc0, cache);
  rope(k, q1, q1, tp, 1e4);
  rope(k, k1, k1, tp, 1e4);
  kvCacheWrite(k, kc1, vc1, k1, tv, ts, tp);
  // fused
  using q2 = f32(k, q, [n, hq, d]);
  using k2 = f32(k, kk, [n, hkv, d]);
  using kc2 = f32(k, kc0, cache);
  using vc2 = f32(k, vc0, cache);
  ropeKvCacheWrite(k, q2, k2, kc2, vc2, tv, ts, tp, 1e4);
  for (const [a, b, what] of [[q1, q2, "q"], [k1, k2, "k"], [kc1, kc2, "kCache"]] as const) {
    assert.deepEqual(Array.from(b.view()), Array.from(a.view()), what);
  }
  assert.deepEqual(Array.from(vc2.view()), Array.from(vc1.view()), "vCache");
  assert.notDeepEqual(Array.from(kc2.view()), Array.from(kc0), "the cache was written");
  using badSlot = i32(k, Int32Array.of(1, 2, 0));
  const before = [q2, k2, kc2].map((t) => Array.from(t.view()));
  assert.throws(
    () => ropeKvCacheWrite(k, q2, k2, kc2, vc2, tv, badSlot, tp, 1e4),
    /arl_kv_cache_write: slot 2 of token 1 is outside \[0, 2\)/,
  );
  // nothing was written: q and k were once rotated before the slot was checked
  [q2, k2, kc2].forEach((t, i) => assert.deepEqual(Array.from(t.view()), before[i]));
  using badPos = i32(k, Int32Array.of(1, -1, 0));
  assert.throws(
    () => ropeKvCacheWrite(k, q2, k2, kc2, vc2, tv, ts, badPos, 1e4),
    /arl_rope: position -1 at row 1 is negative/,
  );
  using q4 = f32(k, new Float32Array(n * hq * 4), [n, hq, 4]);
  assert.throws(
    () => ropeKvCacheWrite(k, q4, k2, kc2, vc2, tv, ts, tp, 1e4),
    /q must have shape \[\*, \*, 8\], got \[3, 4, 4\]/,
  );
});

Deno.test("normRopeKvCacheWrite equals rmsnormForward of each head, rope or ropeFreqs, then kvCacheWrite", () => {
  using k = openKernels();
  const rng = new Rng("norm rope kv");
  const [n, hq, hkv, d, s, l] = [3, 4, 2, 8, 2, 6];
  const q = rng.randn(n * hq * d), kk = rng.randn(n * hkv * d), v = rng.randn(n * hkv * d);
  const kc0 = rng.randn(s * hkv * l * d), vc0 = rng.randn(s * hkv * l * d);
  const qw = rng.randn(d).map((x) => 1 + 0.5 * x), kw = rng.randn(d).map((x) => 1 + 0.5 * x);
  const table = Float32Array.from({ length: d / 2 }, (_, j) => 0.7 ** j);
  const cache = [s, hkv, l, d];
  using ts = i32(k, Int32Array.of(1, 0, 1));
  using tp = i32(k, Int32Array.of(5, 2, 0));
  using tv = f32(k, v, [n, hkv, d]);
  using tqw = f32(k, qw, [d]);
  using tkw = f32(k, kw, [d]);
  using tf = f32(k, table, [d / 2]);
  using rq = f32(k, new Float32Array(n * hq), [n * hq]);
  using rk = f32(k, new Float32Array(n * hkv), [n * hkv]);
  for (const [norms, freqs] of [[true, false], [false, true], [true, true], [false, false]]) {
    const what = `norms ${norms}, table ${freqs}`;
    // the separate calls
    using q1 = f32(k, q, [n, hq, d]);
    using k1 = f32(k, kk, [n, hkv, d]);
    using kc1 = f32(k, kc0, cache);
    using vc1 = f32(k, vc0, cache);
    if (norms) {
      using qx = f32(k, q, [n * hq, d]);
      using kx = f32(k, kk, [n * hkv, d]);
      rmsnormForward(k, Tensor.viewOf(q1, 0, [n * hq, d]), rq, qx, tqw, 1e-6);
      rmsnormForward(k, Tensor.viewOf(k1, 0, [n * hkv, d]), rk, kx, tkw, 1e-6);
    }
    for (const [x, h] of [[q1, hq], [k1, hkv]] as const) {
      if (freqs) ropeFreqs(k, x, x, tp, tf);
      else rope(k, x, x, tp, 1e4);
      assert.equal(x.shape[1], h);
    }
    kvCacheWrite(k, kc1, vc1, k1, tv, ts, tp);
    // one call
    using q2 = f32(k, q, [n, hq, d]);
    using k2 = f32(k, kk, [n, hkv, d]);
    using kc2 = f32(k, kc0, cache);
    using vc2 = f32(k, vc0, cache);
    normRopeKvCacheWrite(k, q2, k2, kc2, vc2, tv, ts, tp, {
      qNorm: norms ? tqw : null,
      kNorm: norms ? tkw : null,
      invFreq: freqs ? tf : null,
      eps: 1e-6,
      theta: 1e4,
    });
    for (const [a, b, name] of [[q1, q2, "q"], [k1, k2, "k"], [kc1, kc2, "kCache"]] as const) {
      assert.deepEqual(Array.from(b.view()), Array.from(a.view()), `${what}: ${name}`);
    }
    assert.deepEqual(Array.from(vc2.view()), Array.from(vc1.view()), `${what}: vCache`);
    assert.notDeepEqual(Array.from(kc2.view()), Array.from(kc0), `${what}: the cache was written`);
  }
  // bad values: a clear error, and nothing written
  using q3 = f32(k, q, [n, hq, d]);
  using k3 = f32(k, kk, [n, hkv, d]);
  using kc3 = f32(k, kc0, cache);
  const options: NormRopeOptions = { qNorm: tqw, kNorm: tkw, invFreq: null, eps: 1e-6, theta: 1e4 };
  const call = (slots: Tensor, positions: Tensor, o = options) =>
    normRopeKvCacheWrite(k, q3, k3, kc3, f32(k, kc0, cache), tv, slots, positions, o);
  const unchanged = () =>
    [[q3, q], [k3, kk], [kc3, kc0]].forEach(([t, x], i) =>
      assert.deepEqual(Array.from((t as Tensor).view()), Array.from(x as Float32Array), `${i}`)
    );
  using badSlot = i32(k, Int32Array.of(1, 2, 0));
  assert.throws(
    () => call(badSlot, tp),
    /arl_norm_rope_kv_cache_write: slot 2 of token 1 is outside \[0, 2\)/,
  );
  using badPos = i32(k, Int32Array.of(1, -1, 0));
  assert.throws(
    () => call(ts, badPos),
    /arl_norm_rope_kv_cache_write: position -1 of token 1 is outside \[0, 6\)/,
  );
  using badTable = f32(k, Float32Array.of(1, 0.5, NaN, 0.1), [d / 2]);
  assert.throws(
    () => call(ts, tp, { ...options, invFreq: badTable }),
    /arl_norm_rope_kv_cache_write: inv_freq\[2\] is not finite/,
  );
  unchanged();
  assert.throws(() => call(ts, tp, { ...options, eps: -1 }), /eps must be finite and >= 0, got -1/);
  using shortNorm = f32(k, qw.subarray(0, 4), [4]);
  assert.throws(
    () => call(ts, tp, { ...options, kNorm: shortNorm }),
    /kNorm must have shape \[8\], got \[4\]/,
  );
  unchanged();
});

Deno.test("rmsnormQkvRopeForward equals rmsnormLinearForward, then ropeKvCacheWrite on the q, k and v parts", () => {
  using k = openKernels();
  const rng = new Rng("rmsnorm qkv rope");
  const [m, kk, hq, hkv, d, s, l] = [3, 24, 4, 2, 8, 2, 6];
  const n = (hq + 2 * hkv) * d;
  const x = rng.randn(m * kk, 2), nw = rng.uniformArray(kk, 0.5, 1.5);
  const w = rng.randn(n * kk, 0.3), bias = rng.randn(n);
  const kc0 = rng.randn(s * hkv * l * d), vc0 = rng.randn(s * hkv * l * d);
  const cache = [s, hkv, l, d];
  using tx = f32(k, x, [m, kk]);
  using tnw = f32(k, nw, [kk]);
  using tw = f32(k, w, [n, kk]);
  using w16 = new Tensor(k, [n, kk], "bf16");
  toBf16(k, w16, tw);
  using tb = f32(k, bias, [n]);
  using ts = i32(k, Int32Array.of(1, 0, 1));
  using tp = i32(k, Int32Array.of(5, 2, 0));
  for (const weights of [tw, w16]) {
    // unfused: the projection, then the parts copied out, roped and cached, copied back
    using expected = nans(k, [m, n]);
    rmsnormLinearForward(k, expected, tx, tnw, weights, tb, 1e-6);
    const rows = expected.toArray() as Float32Array;
    const part = (from: number, width: number) =>
      Float32Array.from(
        { length: m * width },
        (_, i) => rows[Math.floor(i / width) * n + from + (i % width)]!,
      );
    using q = f32(k, part(0, hq * d), [m, hq, d]);
    using kp = f32(k, part(hq * d, hkv * d), [m, hkv, d]);
    using vp = f32(k, part((hq + hkv) * d, hkv * d), [m, hkv, d]);
    using kc1 = f32(k, kc0, cache);
    using vc1 = f32(k, vc0, cache);
    ropeKvCacheWrite(k, q, kp, kc1, vc1, vp, ts, tp, 1e4);
    const [qv, kv] = [q.toArray() as Float32Array, kp.toArray() as Float32Array];
    for (let r = 0; r < m; r++) {
      rows.set(qv.subarray(r * hq * d, (r + 1) * hq * d), r * n);
      rows.set(kv.subarray(r * hkv * d, (r + 1) * hkv * d), r * n + hq * d);
    }
    // fused
    using y = nans(k, [m, n]);
    using kc2 = f32(k, kc0, cache);
    using vc2 = f32(k, vc0, cache);
    const rope = { hq, kCache: kc2, vCache: vc2, slots: ts, positions: tp, theta: 1e4 };
    rmsnormQkvRopeForward(k, y, tx, tnw, weights, tb, 1e-6, rope);
    const what = `${weights.dtype} weights`;
    assert.deepEqual(Array.from(y.view()), Array.from(rows), `${what}: y`);
    assert.deepEqual(Array.from(kc2.view()), Array.from(kc1.view()), `${what}: kCache`);
    assert.deepEqual(Array.from(vc2.view()), Array.from(vc1.view()), `${what}: vCache`);
    assert.notDeepEqual(Array.from(kc2.view()), Array.from(kc0), `${what}: the cache was written`);
  }
  // bad arguments
  using y = nans(k, [m, n]);
  using kc = f32(k, kc0, cache);
  using vc = f32(k, vc0, cache);
  const rope = { hq, kCache: kc, vCache: vc, slots: ts, positions: tp, theta: 1e4 };
  using badSlot = i32(k, Int32Array.of(1, 2, 0));
  assert.throws(
    () => rmsnormQkvRopeForward(k, y, tx, tnw, tw, tb, 1e-6, { ...rope, slots: badSlot }),
    /arl_kv_cache_write: slot 2 of token 1 is outside \[0, 2\)/,
  );
  using w5 = f32(k, new Float32Array((n - d) * kk), [n - d, kk]);
  assert.throws(
    () => rmsnormQkvRopeForward(k, y, tx, tnw, w5, null, 1e-6, rope),
    /w must have shape \[64, 24\], got \[56, 24\]/,
  );
  assert.throws(
    () => rmsnormQkvRopeForward(k, y, tx, tnw, tw, tb, 1e-6, { ...rope, hq: 0 }),
    /hq must be a positive integer, got 0/,
  );
  const status = k.sym.arl_rmsnorm_qkv_rope_forward(
    k.ctx,
    y.ptr,
    tx.ptr,
    tnw.ptr,
    tw.ptr,
    null,
    m,
    kk,
    1e-6,
    kc.ptr,
    vc.ptr,
    ts.ptr,
    tp.ptr,
    hq,
    s,
    hkv,
    l,
    7,
    1e4,
  );
  assert.throws(
    () => k.check("arl_rmsnorm_qkv_rope_forward", status),
    /arl_rmsnorm_qkv_rope_forward: head dim 7 must be even/,
  );
});
