// arl_decode_layer_bf16 on the CPU: the five calls it stands for, in sequence, bit for bit (the
// CPU library runs exactly those calls), with and without the q|k|v bias; bad arguments get
// clear errors naming it. The CUDA library's one-kernel version is compared with these results
// by bench/gpu/ops_compare.ts (emulated in emu.test.ts).
import assert from "node:assert/strict";
import {
  attentionDecode,
  decodeLayer,
  decodeLayers,
  type DecodeLayerWeights,
  KernelError,
  linearForward,
  normRopeKvCacheWrite,
  rmsnormLinearForward,
  rmsnormLinearSwigluForward,
  rmsnormQkvRopeForward,
  Tensor,
  toBf16,
} from "../../ffi/mod.ts";
import type { Kernels } from "../../ffi/kernels.ts";
import { f32, i32, nans, openKernels, Rng } from "./_helpers.ts";

const [C, F, HQ, HKV, D, S, L] = [24, 40, 4, 2, 8, 2, 12];
const NQ = (HQ + 2 * HKV) * D;

function bf16(k: Kernels, data: Float32Array, shape: number[]): Tensor {
  using w = f32(k, data, shape);
  const t = new Tensor(k, shape, "bf16");
  toBf16(k, t, w);
  return t;
}

/** Random layer weights (bf16 matrices), with or without the q|k|v bias. */
function layerWeights(k: Kernels, rng: Rng, bias: boolean): DecodeLayerWeights {
  return {
    ln1: f32(k, rng.uniformArray(C, 0.5, 1.5), [C]),
    qkv: bf16(k, rng.randn(NQ * C, 0.3), [NQ, C]),
    bqkv: bias ? f32(k, rng.randn(NQ, 0.1), [NQ]) : null,
    o: bf16(k, rng.randn(C * HQ * D, 0.3), [C, HQ * D]),
    ln2: f32(k, rng.uniformArray(C, 0.5, 1.5), [C]),
    gateUp: bf16(k, rng.randn(2 * F * C, 0.3), [2 * F, C]),
    down: bf16(k, rng.randn(C * F, 0.3), [C, F]),
  };
}

Deno.test("decodeLayer equals its five calls in sequence, with and without the q|k|v bias", () => {
  using k = openKernels();
  const rng = new Rng("decode layer");
  const x0 = rng.randn(C, 1);
  const kc0 = rng.randn(S * HKV * L * D), vc0 = rng.randn(S * HKV * L * D);
  const cache = [S, HKV, L, D];
  for (const bias of [true, false]) {
    const w = layerWeights(k, rng, bias);
    for (const [slot, pos] of [[1, 0], [0, 7], [1, 11]] as const) {
      using ts = i32(k, Int32Array.of(slot));
      using tp = i32(k, Int32Array.of(pos));
      using tl = i32(k, Int32Array.of(pos + 1));
      // the calls
      using x1 = f32(k, x0, [1, C]);
      using kc1 = f32(k, kc0, cache);
      using vc1 = f32(k, vc0, cache);
      using qkv1 = nans(k, [1, NQ]);
      using attn1 = nans(k, [1, HQ, D]);
      using act1 = nans(k, [1, F]);
      rmsnormQkvRopeForward(k, qkv1, x1, w.ln1, w.qkv, w.bqkv, 1e-6, {
        hq: HQ,
        kCache: kc1,
        vCache: vc1,
        slots: ts,
        positions: tp,
        theta: 1e4,
      });
      using q = Tensor.viewOf(qkv1, 0, [1, HQ, D]);
      attentionDecode(k, attn1, q, kc1, vc1, ts, tl, 1 / Math.sqrt(D));
      using attnRow = Tensor.viewOf(attn1, 0, [1, HQ * D]);
      linearForward(k, x1, attnRow, w.o, null, true);
      rmsnormLinearSwigluForward(k, act1, x1, w.ln2, w.gateUp, null, 1e-6);
      linearForward(k, x1, act1, w.down, null, true);
      // the layer
      using x2 = f32(k, x0, [C]);
      using kc2 = f32(k, kc0, cache);
      using vc2 = f32(k, vc0, cache);
      const rows = { qkv: nans(k, [NQ]), attn: nans(k, [HQ * D]), act: nans(k, [F]) };
      const step = {
        kCache: kc2,
        vCache: vc2,
        slot: ts,
        position: tp,
        len: tl,
        hq: HQ,
        eps: 1e-6,
        theta: 1e4,
        scale: 1 / Math.sqrt(D),
      };
      decodeLayer(k, x2, w, step, rows);
      const what = `${bias ? "bias" : "no bias"}, slot ${slot}, position ${pos}`;
      const same = (a: Tensor, b: Tensor, name: string) =>
        assert.deepEqual(Array.from(a.view()), Array.from(b.view()), `${what}: ${name}`);
      same(x2, x1, "x");
      same(rows.qkv, qkv1, "qkv");
      same(rows.attn, attn1, "attn");
      same(rows.act, act1, "act");
      same(kc2, kc1, "kCache");
      same(vc2, vc1, "vCache");
      assert.notDeepEqual(Array.from(x2.view()), Array.from(x0), `${what}: x changed`);
      for (const t of Object.values(rows)) t.free();
    }
    for (const t of Object.values(w)) t?.free();
  }
});

Deno.test("decodeLayer with q/k norms or a frequency table (arl_decode_layer_norms_bf16) equals its calls in sequence", () => {
  using k = openKernels();
  const rng = new Rng("decode layer norms");
  const x0 = rng.randn(C, 1);
  const kc0 = rng.randn(S * HKV * L * D), vc0 = rng.randn(S * HKV * L * D);
  const cache = [S, HKV, L, D];
  const w = layerWeights(k, rng, false);
  using qn = f32(k, rng.uniformArray(D, 0.5, 1.5), [D]);
  using kn = f32(k, rng.uniformArray(D, 0.5, 1.5), [D]);
  using table = f32(k, Float32Array.from({ length: D / 2 }, (_, j) => 0.6 ** j / 3), [D / 2]);
  using ts = i32(k, Int32Array.of(1));
  using tp = i32(k, Int32Array.of(7));
  using tl = i32(k, Int32Array.of(8));
  for (const [norms, freqs] of [[true, false], [false, true], [true, true]]) {
    const what = `norms ${norms}, table ${freqs}`;
    const options = {
      qNorm: norms ? qn : null,
      kNorm: norms ? kn : null,
      invFreq: freqs ? table : null,
      eps: 1e-6,
      theta: 1e4,
    };
    // the calls
    using x1 = f32(k, x0, [1, C]);
    using kc1 = f32(k, kc0, cache);
    using vc1 = f32(k, vc0, cache);
    using qkv1 = nans(k, [1, NQ]);
    using attn1 = nans(k, [1, HQ, D]);
    using act1 = nans(k, [1, F]);
    rmsnormLinearForward(k, qkv1, x1, w.ln1, w.qkv, null, 1e-6);
    using q = Tensor.viewOf(qkv1, 0, [1, HQ, D]);
    using kk = Tensor.viewOf(qkv1, 4 * HQ * D, [1, HKV, D]);
    using v = Tensor.viewOf(qkv1, 4 * (HQ + HKV) * D, [1, HKV, D]);
    normRopeKvCacheWrite(k, q, kk, kc1, vc1, v, ts, tp, options);
    attentionDecode(k, attn1, q, kc1, vc1, ts, tl, 1 / Math.sqrt(D));
    using attnRow = Tensor.viewOf(attn1, 0, [1, HQ * D]);
    linearForward(k, x1, attnRow, w.o, null, true);
    rmsnormLinearSwigluForward(k, act1, x1, w.ln2, w.gateUp, null, 1e-6);
    linearForward(k, x1, act1, w.down, null, true);
    // the layer
    using x2 = f32(k, x0, [C]);
    using kc2 = f32(k, kc0, cache);
    using vc2 = f32(k, vc0, cache);
    using qkv2 = nans(k, [NQ]);
    using attn2 = nans(k, [HQ * D]);
    using act2 = nans(k, [F]);
    const step = {
      kCache: kc2,
      vCache: vc2,
      slot: ts,
      position: tp,
      len: tl,
      hq: HQ,
      eps: 1e-6,
      theta: 1e4,
      scale: 1 / Math.sqrt(D),
      invFreq: options.invFreq,
    };
    decodeLayer(k, x2, { ...w, qNorm: options.qNorm, kNorm: options.kNorm }, step, {
      qkv: qkv2,
      attn: attn2,
      act: act2,
    });
    const same = (a: Tensor, b: Tensor, name: string) =>
      assert.deepEqual(Array.from(a.view()), Array.from(b.view()), `${what}: ${name}`);
    same(x2, x1, "x");
    same(qkv2, qkv1, "qkv");
    same(attn2, attn1, "attn");
    same(act2, act1, "act");
    same(kc2, kc1, "kCache");
    same(vc2, vc1, "vCache");
    // and not the plain layer's result
    using x3 = f32(k, x0, [C]);
    using kc3 = f32(k, kc0, cache);
    decodeLayer(k, x3, w, { ...step, kCache: kc3, vCache: f32(k, vc0, cache), invFreq: null }, {
      qkv: qkv2,
      attn: attn2,
      act: act2,
    });
    assert.notDeepEqual(Array.from(x3.view()), Array.from(x2.view()), `${what}: plain differs`);
  }
  // a bad table or slot: a clear error before anything is written
  using badTable = f32(k, Float32Array.of(1, NaN, 0.5, 0.1), [D / 2]);
  using x4 = f32(k, x0, [C]);
  using kc4 = f32(k, kc0, cache);
  const rows = { qkv: nans(k, [NQ]), attn: nans(k, [HQ * D]), act: nans(k, [F]) };
  const step = {
    kCache: kc4,
    vCache: f32(k, vc0, cache),
    slot: ts,
    position: tp,
    len: tl,
    hq: HQ,
    eps: 1e-6,
    theta: 1e4,
    scale: 1 / Math.sqrt(D),
  };
  assert.throws(
    () => decodeLayer(k, x4, w, { ...step, invFreq: badTable }, rows),
    /arl_decode_layer_norms_bf16: inv_freq\[1\] is not finite/,
  );
  using badSlot = i32(k, Int32Array.of(2));
  assert.throws(
    () => decodeLayer(k, x4, { ...w, qNorm: qn }, { ...step, slot: badSlot }, rows),
    /arl_decode_layer_norms_bf16: slot 2 of token 0 is outside \[0, 2\)/,
  );
  assert.deepEqual(Array.from(x4.view()), Array.from(x0));
  assert.deepEqual(Array.from(kc4.view()), Array.from(kc0));
  using shortNorm = f32(k, qn.read().subarray(0, 4), [4]);
  assert.throws(
    () => decodeLayer(k, x4, { ...w, kNorm: shortNorm }, step, rows),
    /kNorm must have shape \[8\], got \[4\]/,
  );
  assert.throws(
    () => decodeLayers(k, x4, [{ ...w, qNorm: qn, kCache: kc4, vCache: kc4 }], step, rows),
    /layers\[0\] has q\/k norms, which decodeLayers does not take: call decodeLayer a layer/,
  );
  const withTable = { ...step, invFreq: table }; // (a DecodeLayerStep passed as the constants)
  assert.throws(
    () => decodeLayers(k, x4, [{ ...w, kCache: kc4, vCache: kc4 }], withTable, rows),
    /decodeLayers takes no RoPE frequency table \(invFreq\): call decodeLayer a layer/,
  );
  for (const t of [...Object.values(w), ...Object.values(rows)]) t?.free();
});

Deno.test("decodeLayer: mismatched shapes, bad slots and sizes, null pointers are clear errors", () => {
  using k = openKernels();
  const rng = new Rng("decode layer errors");
  const w = layerWeights(k, rng, true);
  using x = f32(k, rng.randn(C, 1), [C]);
  using kc = f32(k, new Float32Array(S * HKV * L * D), [S, HKV, L, D]);
  using vc = f32(k, new Float32Array(S * HKV * L * D), [S, HKV, L, D]);
  using ts = i32(k, Int32Array.of(0));
  using tp = i32(k, Int32Array.of(3));
  using tl = i32(k, Int32Array.of(4));
  using badSlot = i32(k, Int32Array.of(2));
  const rows = { qkv: nans(k, [NQ]), attn: nans(k, [HQ * D]), act: nans(k, [F]) };
  const step = {
    kCache: kc,
    vCache: vc,
    slot: ts,
    position: tp,
    len: tl,
    hq: HQ,
    eps: 1e-6,
    theta: 1e4,
    scale: 0.3,
  };
  assert.throws(
    () => decodeLayer(k, x, w, { ...step, slot: badSlot }, rows),
    /slot 2 of token 0 is outside \[0, 2\)/,
  );
  assert.throws(
    () => decodeLayer(k, x, w, { ...step, hq: 3 }, rows),
    /hq \(3\) must be a multiple/,
  );
  assert.throws(
    () => decodeLayer(k, x, { ...w, down: w.o }, step, rows),
    /down weight must have shape \[24, 40\], got \[24, 32\]/,
  );
  assert.throws(
    () => decodeLayer(k, x, { ...w, qkv: w.bqkv! }, step, rows),
    /qkv weight must be bf16/,
  );
  using act5 = nans(k, [F + 1]);
  assert.throws(
    () => decodeLayer(k, x, w, step, { ...rows, act: act5 }),
    /act rows must have shape \[40\], got \[41\]/,
  );
  // Outputs that share memory (with each other or with an input) are refused, nothing written.
  x.view().fill(5);
  const shared = (what: () => void, pattern: RegExp) =>
    assert.throws(what, (e: unknown) => e instanceof RangeError && pattern.test(e.message));
  shared(
    () => decodeLayer(k, x, w, { ...step, vCache: kc }, rows),
    /kCache and vCache share memory/,
  );
  shared(() => decodeLayer(k, w.ln1, w, step, rows), /x and ln1 share memory/);
  shared(
    () => decodeLayers(k, x, [{ ...w, kCache: kc, vCache: vc, ln2: x }], step, rows),
    /x and layers\[0\]\.ln2 share memory/,
  );
  shared(
    () =>
      decodeLayers(
        k,
        x,
        [{ ...w, kCache: kc, vCache: vc }, { ...w, kCache: vc, vCache: kc }],
        step,
        rows,
      ),
    /layers\[0\]\.kCache and layers\[1\]\.vCache share memory/,
  );
  assert.ok(x.view().every((v) => v === 5), "a refused call changed x");
  const call = (eps: number, xPtr: Deno.PointerValue, hkv = HKV, theta = 1e4, hq = HQ, f = F) =>
    k.sym.arl_decode_layer_bf16(
      k.ctx,
      xPtr,
      rows.qkv.ptr,
      rows.attn.ptr,
      rows.act.ptr,
      w.ln1.ptr,
      w.qkv.ptr,
      null,
      w.o.ptr,
      w.ln2.ptr,
      w.gateUp.ptr,
      w.down.ptr,
      kc.ptr,
      vc.ptr,
      ts.ptr,
      tp.ptr,
      tl.ptr,
      C,
      f,
      hq,
      hkv,
      D,
      S,
      L,
      eps,
      theta,
      0.3,
    );
  const fails = (status: number, pattern: RegExp) =>
    assert.throws(() => k.check("arl_decode_layer_bf16", status), (e: unknown) => {
      assert.ok(e instanceof KernelError, String(e));
      assert.match(e.message, pattern);
      return true;
    });
  fails(call(1e-6, null), /arl_decode_layer_bf16: x must not be null/);
  fails(call(-1, x.ptr), /arl_decode_layer_bf16: eps must be finite and >= 0, got -1/);
  fails(call(1e-6, x.ptr, 3), /arl_decode_layer_bf16: hq \(4\) must be a multiple of hkv \(3\)/);
  // Non-finite scalars and a q|k|v width past an int32 are refused before any row is written.
  rows.qkv.view().fill(-3);
  fails(call(Infinity, x.ptr), /arl_decode_layer_bf16: eps must be finite and >= 0, got inf/);
  fails(
    call(1e-6, x.ptr, HKV, Infinity),
    /arl_decode_layer_bf16: theta must be finite and > 0, got inf/,
  );
  fails(
    call(1e-6, x.ptr, 1, 1e4, 2 ** 28),
    /arl_decode_layer_bf16: \(hq \+ 2 hkv\) x d = \d+ columns is too many/,
  );
  fails(
    call(1e-6, x.ptr, HKV, 1e4, HQ, 2 ** 30),
    /arl_decode_layer_bf16: 2 x f = 2147483648 gate\|up rows is too many/,
  );
  assert.ok(rows.qkv.view().every((v) => v === -3), "a refused call wrote q|k|v rows");
  for (const t of [...Object.values(w), ...Object.values(rows)]) t?.free();
});

Deno.test("decodeLayers equals decodeLayer once a layer, bit for bit; its table's errors name the layer", () => {
  using k = openKernels();
  const rng = new Rng("decode layers");
  const x0 = rng.randn(C, 1);
  const cache = [S, HKV, L, D];
  const caches = [0, 1, 2].map(() => [rng.randn(S * HKV * L * D), rng.randn(S * HKV * L * D)]);
  const ws = [true, false, true].map((bias) => layerWeights(k, rng, bias));
  using ts = i32(k, Int32Array.of(1));
  using tp = i32(k, Int32Array.of(5));
  using tl = i32(k, Int32Array.of(6));
  const constants = { slot: ts, position: tp, len: tl, hq: HQ, eps: 1e-6, theta: 1e4, scale: 0.3 };
  // layer by layer
  using x1 = f32(k, x0, [C]);
  const kv1 = caches.map(([kc, vc]) => [f32(k, kc!, cache), f32(k, vc!, cache)]);
  const rows1 = { qkv: nans(k, [NQ]), attn: nans(k, [HQ * D]), act: nans(k, [F]) };
  ws.forEach((w, i) => {
    decodeLayer(k, x1, w, { ...constants, kCache: kv1[i]![0]!, vCache: kv1[i]![1]! }, rows1);
  });
  // in one call
  using x2 = f32(k, x0, [C]);
  const kv2 = caches.map(([kc, vc]) => [f32(k, kc!, cache), f32(k, vc!, cache)]);
  const rows2 = { qkv: nans(k, [NQ]), attn: nans(k, [HQ * D]), act: nans(k, [F]) };
  const entries = ws.map((w, i) => ({ ...w, kCache: kv2[i]![0]!, vCache: kv2[i]![1]! }));
  decodeLayers(k, x2, entries, constants, rows2);
  const same = (a: Tensor, b: Tensor, name: string) =>
    assert.deepEqual(Array.from(a.view()), Array.from(b.view()), name);
  same(x2, x1, "x");
  same(rows2.qkv, rows1.qkv, "the last layer's qkv");
  same(rows2.attn, rows1.attn, "attn");
  same(rows2.act, rows1.act, "act");
  kv2.forEach(([kc, vc], i) => {
    same(kc!, kv1[i]![0]!, `kCache ${i}`);
    same(vc!, kv1[i]![1]!, `vCache ${i}`);
  });
  assert.notDeepEqual(Array.from(x2.view()), Array.from(x0), "x changed");
  // errors: an empty list, a layer whose shapes differ, a null in the table
  assert.throws(() => decodeLayers(k, x2, [], constants, rows2), /at least one layer/);
  assert.throws(
    () =>
      decodeLayers(k, x2, [entries[0]!, { ...entries[1]!, down: entries[1]!.o }], constants, rows2),
    /layers\[1\]\.down weight must have shape \[24, 40\], got \[24, 32\]/,
  );
  const shortCache = f32(k, new Float32Array(S * HKV * (L - 1) * D), [S, HKV, L - 1, D]);
  const shortValues = f32(k, new Float32Array(S * HKV * (L - 1) * D), [S, HKV, L - 1, D]);
  assert.throws(
    () =>
      decodeLayers(k, x2, [entries[0]!, { ...entries[1]!, kCache: shortCache }], constants, rows2),
    /layers\[1\]\.vCache must have shape \[2, 2, 11, 8\], got \[2, 2, 12, 8\]/,
  );
  assert.throws(
    () =>
      decodeLayers(
        k,
        x2,
        [entries[0]!, { ...entries[1]!, kCache: shortCache, vCache: shortValues }],
        constants,
        rows2,
      ),
    /layers\[1\] has F 40 and caches \(2, 2, 11, 8\); layers\[0\] has F 40 and \(2, 2, 12, 8\)/,
  );
  shortCache.free();
  shortValues.free();
  // a null in layer 1's entry of the table (layer 0's complete)
  const table = new BigUint64Array(9 * 2);
  const ptrs = [
    entries[0]!.ln1,
    entries[0]!.qkv,
    null,
    entries[0]!.o,
    entries[0]!.ln2,
    entries[0]!.gateUp,
    entries[0]!.down,
    entries[0]!.kCache,
    entries[0]!.vCache,
  ];
  ptrs.forEach((t, j) => {
    table[j] = t ? BigInt(Deno.UnsafePointer.value(t.ptr)) : 0n;
    table[9 + j] = j === 6 ? 0n : table[j]!;
  });
  const err = k.sym.arl_decode_layers_bf16(
    k.ctx,
    x2.ptr,
    rows2.qkv.ptr,
    rows2.attn.ptr,
    rows2.act.ptr,
    table,
    2,
    ts.ptr,
    tp.ptr,
    tl.ptr,
    C,
    F,
    HQ,
    HKV,
    D,
    S,
    L,
    1e-6,
    1e4,
    0.3,
  );
  assert.throws(() => k.check("arl_decode_layers_bf16", err), (e: unknown) => {
    assert.ok(e instanceof KernelError, String(e));
    assert.match(e.message, /arl_decode_layers_bf16: layers\[1\]\.w_down must not be null/);
    return true;
  });
  for (
    const t of [...Object.values(rows1), ...Object.values(rows2), ...kv1.flat(), ...kv2.flat()]
  ) {
    t.free();
  }
  for (const w of ws) for (const t of Object.values(w)) t?.free();
});
