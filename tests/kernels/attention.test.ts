// Packed causal GQA attention, its backward pass, the KV cache and decode
// attention against a naive float64 reference (full softmax per sequence).
//
// Tolerances: out 1e-5 of max|v| (+1e-5 relative), lse 1e-5 (1 + |lse|); gradients
// 2e-5 of the largest gradient + 1e-4 relative; finite differences 2e-4.
import assert from "node:assert/strict";
import {
  attentionBackward,
  attentionDecode,
  attentionForward,
  kvCacheWrite,
  Tensor,
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
  attentionBackwardRef,
  attentionDecodeRef,
  attentionRef,
  type AttnShape,
} from "./_reference.ts";
import { Kernels } from "../../ffi/mod.ts";

interface Case {
  lens: number[];
  hq: number;
  hkv: number;
  d: number;
  scale?: number;
}

function cuOf(lens: number[]): Int32Array {
  const cu = new Int32Array(lens.length + 1);
  lens.forEach((l, i) => (cu[i + 1] = cu[i]! + l));
  return cu;
}

// Sequences of different lengths with 1 and 0 (a repeated cu_seqlens entry), at the
// start, middle and end; GQA groups 2, 1 (hq = hkv) and 4 (hkv = 1); odd D; a
// sequence past the 64-row block size, large enough for the threaded path.
const CASES: Case[] = [
  { lens: [3, 1, 0, 7, 5], hq: 4, hkv: 2, d: 8 },
  { lens: [3, 1, 0, 7, 5], hq: 3, hkv: 3, d: 5 },
  { lens: [0, 6, 1, 2], hq: 4, hkv: 1, d: 8, scale: 0.7 },
  { lens: [1], hq: 1, hkv: 1, d: 1 },
  { lens: [2, 3, 0], hq: 2, hkv: 1, d: 16 },
  { lens: [0, 130], hq: 4, hkv: 2, d: 32 },
  { lens: [9, 4], hq: 2, hkv: 1, d: 8, scale: 6 }, // large scores: a stable softmax is needed
];

function runForward(k: Kernels, q: Float32Array, kk: Float32Array, v: Float32Array, c: Case) {
  const cu = cuOf(c.lens);
  const t = cu[cu.length - 1]!;
  using tq = f32(k, q, [t, c.hq, c.d]);
  using tk = f32(k, kk, [t, c.hkv, c.d]);
  using tv = f32(k, v, [t, c.hkv, c.d]);
  using tcu = i32(k, cu);
  using out = nans(k, [t, c.hq, c.d]);
  using lse = nans(k, [c.hq, t]);
  attentionForward(k, out, lse, tq, tk, tv, tcu, c.scale);
  return { out: out.toArray(), lse: lse.toArray() };
}

function shapeOf(c: Case): AttnShape {
  const cu = cuOf(c.lens);
  return {
    t: cu[cu.length - 1]!,
    hq: c.hq,
    hkv: c.hkv,
    d: c.d,
    scale: c.scale ?? 1 / Math.sqrt(c.d),
    cu,
  };
}

Deno.test("attention forward matches the naive reference (out and saved lse) on packed GQA batches", () => {
  using k = openKernels();
  const rng = new Rng("attention-forward");
  for (const c of CASES) {
    const sh = shapeOf(c);
    const q = rng.randn(sh.t * c.hq * c.d),
      kk = rng.randn(sh.t * c.hkv * c.d),
      v = rng.randn(sh.t * c.hkv * c.d);
    const { out, lse } = runForward(k, q, kk, v, c);
    const ref = attentionRef(q, kk, v, sh);
    const what = `attention lens=[${c.lens}] hq=${c.hq} hkv=${c.hkv} d=${c.d}`;
    assertClose(out, ref.out, `${what} out`, { rtol: 1e-5, atol: 1e-5 * maxAbs(v) });
    assertClose(lse, ref.lse, `${what} lse`, { rtol: 1e-5, atol: 1e-5 });
  }
});

Deno.test("packed attention equals attention run on each sequence alone", () => {
  using k = openKernels();
  const rng = new Rng("attention-packed");
  for (const c of CASES) {
    const sh = shapeOf(c);
    const cu = sh.cu;
    const q = rng.randn(sh.t * c.hq * c.d),
      kk = rng.randn(sh.t * c.hkv * c.d),
      v = rng.randn(sh.t * c.hkv * c.d);
    const packed = runForward(k, q, kk, v, c);
    for (let s = 0; s < c.lens.length; s++) {
      const [r0, r1] = [cu[s]!, cu[s + 1]!];
      if (r0 === r1) continue;
      const one = { ...c, lens: [r1 - r0] };
      const alone = runForward(
        k,
        q.slice(r0 * c.hq * c.d, r1 * c.hq * c.d),
        kk.slice(r0 * c.hkv * c.d, r1 * c.hkv * c.d),
        v.slice(r0 * c.hkv * c.d, r1 * c.hkv * c.d),
        one,
      );
      const what = `lens=[${c.lens}] sequence ${s}`;
      assertClose(alone.out, packed.out.slice(r0 * c.hq * c.d, r1 * c.hq * c.d), `${what} out`, {
        rtol: 1e-6,
        atol: 1e-6 * maxAbs(v),
      });
      const lseRows = new Float32Array(c.hq * (r1 - r0));
      for (let h = 0; h < c.hq; h++) {
        lseRows.set(packed.lse.subarray(h * sh.t + r0, h * sh.t + r1), h * (r1 - r0));
      }
      assertClose(alone.lse, lseRows, `${what} lse`, { rtol: 1e-6, atol: 1e-6 });
    }
  }
});

Deno.test("attention backward (dq, dk, dv written) matches the reference gradient", () => {
  using k = openKernels();
  const rng = new Rng("attention-backward");
  for (const c of CASES) {
    const sh = shapeOf(c);
    const t = sh.t;
    const q = rng.randn(t * c.hq * c.d),
      kk = rng.randn(t * c.hkv * c.d),
      v = rng.randn(t * c.hkv * c.d);
    const dout = rng.randn(t * c.hq * c.d);
    using tq = f32(k, q, [t, c.hq, c.d]);
    using tk = f32(k, kk, [t, c.hkv, c.d]);
    using tv = f32(k, v, [t, c.hkv, c.d]);
    using tcu = i32(k, sh.cu);
    using out = new Tensor(k, [t, c.hq, c.d], "f32");
    using lse = new Tensor(k, [c.hq, t], "f32");
    attentionForward(k, out, lse, tq, tk, tv, tcu, c.scale);
    using tdout = f32(k, dout, [t, c.hq, c.d]);
    using dq = nans(k, [t, c.hq, c.d]);
    using dk = nans(k, [t, c.hkv, c.d]);
    using dv = nans(k, [t, c.hkv, c.d]);
    attentionBackward(k, { dq, dk, dv }, tdout, tq, tk, tv, out, lse, tcu, c.scale);
    const ref = attentionBackwardRef(dout, q, kk, v, sh);
    const what = `attention backward lens=[${c.lens}] hq=${c.hq} hkv=${c.hkv} d=${c.d}`;
    for (
      const [name, got, exp] of [["dq", dq, ref.dq], ["dk", dk, ref.dk], [
        "dv",
        dv,
        ref.dv,
      ]] as const
    ) {
      // A single row (T = 1) has dq = dk = 0 exactly (softmax over one key): allowed, NaN prefill still checked.
      assertClose(got.view(), exp, `${what} ${name}`, {
        rtol: 1e-4,
        atol: 2e-5 * maxAbs(exp),
        allowZero: t === 1,
      });
    }
  }
});

Deno.test("attention backward matches finite differences (and so does the reference backward)", () => {
  using k = openKernels();
  const rng = new Rng("attention-fd");
  for (
    const c of [{ lens: [2, 0, 1, 3], hq: 4, hkv: 2, d: 4, scale: 0.6 }, {
      lens: [4],
      hq: 2,
      hkv: 2,
      d: 3,
    }]
  ) {
    const sh = shapeOf(c);
    const t = sh.t;
    const q = rng.randn(t * c.hq * c.d),
      kk = rng.randn(t * c.hkv * c.d),
      v = rng.randn(t * c.hkv * c.d);
    const g = rng.randn(t * c.hq * c.d);
    using tq = f32(k, q, [t, c.hq, c.d]);
    using tk = f32(k, kk, [t, c.hkv, c.d]);
    using tv = f32(k, v, [t, c.hkv, c.d]);
    using tcu = i32(k, sh.cu);
    using out = new Tensor(k, [t, c.hq, c.d], "f32");
    using lse = new Tensor(k, [c.hq, t], "f32");
    attentionForward(k, out, lse, tq, tk, tv, tcu, c.scale);
    using tg = f32(k, g, [t, c.hq, c.d]);
    using dq = nans(k, [t, c.hq, c.d]);
    using dk = nans(k, [t, c.hkv, c.d]);
    using dv = nans(k, [t, c.hkv, c.d]);
    attentionBackward(k, { dq, dk, dv }, tg, tq, tk, tv, out, lse, tcu, c.scale);
    const fdq = fdGrad((x) => dot(g, attentionRef(x, kk, v, sh).out), q);
    const fdk = fdGrad((x) => dot(g, attentionRef(q, x, v, sh).out), kk);
    const fdv = fdGrad((x) => dot(g, attentionRef(q, kk, x, sh).out), v);
    const what = `attention lens=[${c.lens}] hq=${c.hq} hkv=${c.hkv}`;
    assertGrad(dq.view(), fdq, `${what} dq`);
    assertGrad(dk.view(), fdk, `${what} dk`);
    assertGrad(dv.view(), fdv, `${what} dv`);
    const ref = attentionBackwardRef(g, q, kk, v, sh);
    assertGrad(ref.dq, fdq, `${what} reference dq`, 1e-7);
    assertGrad(ref.dk, fdk, `${what} reference dk`, 1e-7);
    assertGrad(ref.dv, fdv, `${what} reference dv`, 1e-7);
  }
});

Deno.test("kv_cache_write places (slot, position) rows and decode equals the last rows of full causal attention", () => {
  using k = openKernels();
  const rng = new Rng("decode");
  // The third case is large enough (N HQ L D > 2^15) for the threaded path.
  for (
    const [hq, hkv, d, l] of [[4, 2, 8, 16], [2, 2, 5, 16], [4, 1, 16, 40], [2, 1, 20, 9], [
      4,
      2,
      40,
      13,
    ]] as const
  ) {
    const s = 3;
    const lens = [5, 1, l]; // slot lengths: one token, and a full slot
    const cu = cuOf(lens);
    const t = cu[s]!;
    const q = rng.randn(t * hq * d), kk = rng.randn(t * hkv * d), v = rng.randn(t * hkv * d);
    // Write every token of every slot, in a shuffled order mixing the slots.
    const order = Array.from({ length: t }, (_, i) => i);
    for (let i = t - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const slotOf = (row: number) => cu.findIndex((_, si) => row >= cu[si]! && row < cu[si + 1]!);
    const slots = Int32Array.from(order, slotOf);
    const positions = Int32Array.from(order, (row) => row - cu[slotOf(row)]!);
    const rowsK = new Float32Array(t * hkv * d), rowsV = new Float32Array(t * hkv * d);
    order.forEach((row, i) => {
      rowsK.set(kk.subarray(row * hkv * d, (row + 1) * hkv * d), i * hkv * d);
      rowsV.set(v.subarray(row * hkv * d, (row + 1) * hkv * d), i * hkv * d);
    });
    using kCache = new Tensor(k, [s, hkv, l, d], "f32");
    using vCache = new Tensor(k, [s, hkv, l, d], "f32");
    kCache.view().fill(7); // never-written positions keep this
    {
      using tk = f32(k, rowsK, [t, hkv, d]);
      using tv = f32(k, rowsV, [t, hkv, d]);
      using ts = i32(k, slots);
      using tp = i32(k, positions);
      kvCacheWrite(k, kCache, vCache, tk, tv, ts, tp);
    }
    const kc = kCache.view(), vc = vCache.view();
    for (let slot = 0; slot < s; slot++) {
      for (let h = 0; h < hkv; h++) {
        for (let pos = 0; pos < l; pos++) {
          const at = ((slot * hkv + h) * l + pos) * d;
          const row = cu[slot]! + pos;
          for (let e = 0; e < d; e++) {
            const expK = pos < lens[slot]! ? kk[(row * hkv + h) * d + e]! : 7;
            const expV = pos < lens[slot]! ? v[(row * hkv + h) * d + e]! : 0;
            assert.equal(kc[at + e], expK, `k_cache[${slot}, ${h}, ${pos}, ${e}]`);
            assert.equal(vc[at + e], expV, `v_cache[${slot}, ${h}, ${pos}, ${e}]`);
          }
        }
      }
    }
    // One query per token: the query of row p of slot s with lens = p + 1 must
    // equal row p of full causal attention over the slot's tokens.
    const qSlots = Int32Array.from({ length: t }, (_, row) => slotOf(row));
    const qLens = Int32Array.from({ length: t }, (_, row) => row - cu[slotOf(row)]! + 1);
    using tq = f32(k, q, [t, hq, d]);
    using ts = i32(k, qSlots);
    using tl = i32(k, qLens);
    using out = nans(k, [t, hq, d]);
    attentionDecode(k, out, tq, kCache, vCache, ts, tl);
    const what = `decode hq=${hq} hkv=${hkv} d=${d}`;
    const full = attentionRef(q, kk, v, { t, hq, hkv, d, scale: 1 / Math.sqrt(d), cu });
    assertClose(out.view(), full.out, `${what} vs full attention reference`, {
      rtol: 1e-5,
      atol: 1e-5 * maxAbs(v),
    });
    const direct = attentionDecodeRef(q, kc, vc, qSlots, qLens, {
      hq,
      hkv,
      l,
      d,
      scale: 1 / Math.sqrt(d),
    });
    assertClose(out.view(), direct, `${what} vs decode reference`, {
      rtol: 1e-5,
      atol: 1e-5 * maxAbs(v),
    });
    const kernelFull = runForward(k, q, kk, v, { lens, hq, hkv, d });
    assertClose(out.view(), kernelFull.out, `${what} vs the kernel's own packed attention`, {
      rtol: 1e-5,
      atol: 1e-5 * maxAbs(v),
    });
    // A batch of the last token of each slot only (the usual decode step), in another order.
    const lastRows = [cu[3]! - 1, cu[1]! - 1, cu[2]! - 1];
    using q2 = f32(
      k,
      Float32Array.from(lastRows.flatMap((r) => [...q.subarray(r * hq * d, (r + 1) * hq * d)])),
      [3, hq, d],
    );
    using s2 = i32(k, [2, 0, 1]);
    using l2 = i32(k, [l, 5, 1]);
    using out2 = nans(k, [3, hq, d]);
    attentionDecode(k, out2, q2, kCache, vCache, s2, l2);
    const exp2 = Float64Array.from(
      lastRows.flatMap((r) => [...full.out.subarray(r * hq * d, (r + 1) * hq * d)]),
    );
    assertClose(out2.view(), exp2, `${what} last tokens`, { rtol: 1e-5, atol: 1e-5 * maxAbs(v) });
  }
});

Deno.test("bf16 attention calls on the CPU library equal the fp32 calls bit for bit and name themselves in errors", () => {
  using k = openKernels();
  const rng = new Rng("attention-bf16-cpu");
  const c: Case = { lens: [5, 0, 9], hq: 4, hkv: 2, d: 8 };
  const sh = shapeOf(c);
  const t = sh.t;
  using tq = f32(k, rng.randn(t * c.hq * c.d), [t, c.hq, c.d]);
  using tk = f32(k, rng.randn(t * c.hkv * c.d), [t, c.hkv, c.d]);
  using tv = f32(k, rng.randn(t * c.hkv * c.d), [t, c.hkv, c.d]);
  using tdout = f32(k, rng.randn(t * c.hq * c.d), [t, c.hq, c.d]);
  using tcu = i32(k, sh.cu);
  const run = (precision: "f32" | "bf16") => {
    using out = nans(k, [t, c.hq, c.d]);
    using lse = nans(k, [c.hq, t]);
    attentionForward(k, out, lse, tq, tk, tv, tcu, undefined, precision);
    using dq = nans(k, [t, c.hq, c.d]);
    using dk = nans(k, [t, c.hkv, c.d]);
    using dv = nans(k, [t, c.hkv, c.d]);
    attentionBackward(k, { dq, dk, dv }, tdout, tq, tk, tv, out, lse, tcu, undefined, precision);
    return [out, lse, dq, dk, dv].map((x) => x.toArray());
  };
  const [f32Run, bf16Run] = [run("f32"), run("bf16")];
  f32Run.forEach((x, i) => assert.deepEqual(bf16Run[i], x, `output ${i}`));
  // A bad cu_seqlens is reported under the bf16 call's own name.
  using badCu = i32(k, Int32Array.of(0, 5, 3, t));
  using out = nans(k, [t, c.hq, c.d]);
  using lse = nans(k, [c.hq, t]);
  assert.throws(
    () => attentionForward(k, out, lse, tq, tk, tv, badCu, undefined, "bf16"),
    /arl_attention_forward_bf16: cu_seqlens must not decrease \(index 2: 3 < 5\)/,
  );
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => attentionForward(k, out, lse, tq, tk, tv, tcu, undefined, "fp16" as any),
    /precision must be f32 or bf16, got 'fp16'/,
  );
});

Deno.test("decode attention gives the same bits with a kv head's query heads grouped (chunks of keys) as head by head", () => {
  // One query and one kv head: with 2 threads each head is a task of its own (a task a thread);
  // with 1 thread the kv head's query heads run together, in chunks of 16 KB of keys.
  using one = Kernels.open({ threads: 1 });
  using two = Kernels.open({ threads: 2 });
  const rng = new Rng("decode groups");
  for (const [hq, d, len] of [[4, 64, 150], [7, 20, 500], [2, 128, 77], [3, 40, 1]] as const) {
    const l = len + 3;
    const q = rng.randn(hq * d), kc = rng.randn(l * d), vc = rng.randn(l * d);
    const run = (k: Kernels) => {
      using tq = f32(k, q, [1, hq, d]);
      using tk = f32(k, kc, [1, 1, l, d]);
      using tv = f32(k, vc, [1, 1, l, d]);
      using ts = i32(k, [0]);
      using tl = i32(k, [len]);
      using out = nans(k, [1, hq, d]);
      attentionDecode(k, out, tq, tk, tv, ts, tl);
      return out.view().slice();
    };
    const [grouped, apart] = [run(one), run(two)];
    const what = `hq=${hq} d=${d} len=${len}`;
    assert.ok(grouped.every(Number.isFinite), what);
    assert.deepEqual(new Uint32Array(grouped.buffer), new Uint32Array(apart.buffer), what);
    const ref = attentionDecodeRef(q, kc, vc, Int32Array.of(0), Int32Array.of(len), {
      hq,
      hkv: 1,
      l,
      d,
      scale: 1 / Math.sqrt(d),
    });
    assertClose(grouped, ref, `${what} vs the reference`, { rtol: 1e-5, atol: 1e-5 * maxAbs(vc) });
  }
});

Deno.test("grouped decode attention over several queries, slots and kv heads equals one call a head, bit for bit", () => {
  using k = openKernels();
  const rng = new Rng("decode groups many");
  for (const [group, d] of [[3, 37], [7, 64], [2, 9]] as const) {
    const [n, s, hkv, l] = [3, 3, 2, 300];
    const hq = group * hkv;
    const kc = rng.randn(s * hkv * l * d), vc = rng.randn(s * hkv * l * d);
    const q = rng.randn(n * hq * d);
    const slots = [2, 0, 1], lens = [300, 1, 129];
    using tk = f32(k, kc, [s, hkv, l, d]);
    using tv = f32(k, vc, [s, hkv, l, d]);
    using tq = f32(k, q, [n, hq, d]);
    using ts = i32(k, slots);
    using tl = i32(k, lens);
    using out = nans(k, [n, hq, d]);
    attentionDecode(k, out, tq, tk, tv, ts, tl); // grouped: n x hkv = 6 tasks for 2 threads
    const grouped = new Uint32Array(out.view().slice().buffer);
    for (let i = 0; i < n; i++) {
      for (let h = 0; h < hq; h++) {
        const at = (slots[i]! * hkv + Math.floor(h / group)) * l * d;
        using hk = f32(k, kc.subarray(at, at + l * d), [1, 1, l, d]);
        using hv = f32(k, vc.subarray(at, at + l * d), [1, 1, l, d]);
        using hqT = f32(k, q.subarray((i * hq + h) * d, (i * hq + h + 1) * d), [1, 1, d]);
        using zero = i32(k, [0]);
        using len = i32(k, [lens[i]!]);
        using one = nans(k, [1, 1, d]);
        attentionDecode(k, one, hqT, hk, hv, zero, len);
        const row = (i * hq + h) * d;
        assert.deepEqual(
          grouped.subarray(row, row + d),
          new Uint32Array(one.view().slice().buffer),
          `group ${group} d ${d}: query ${i} head ${h}`,
        );
      }
    }
  }
});
