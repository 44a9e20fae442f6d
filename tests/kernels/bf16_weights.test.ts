// The bf16-weight (mixed precision) entry points on the CPU: the library widens
// the weights and runs the fp32 kernel, so each result equals the fp32 call on
// the bf16-rounded weights bit for bit; and bad weights get clear errors.
import assert from "node:assert/strict";
import {
  linearBackward,
  linearForward,
  lmHead,
  logprobBackward,
  logprobForward,
  Tensor,
  toBf16,
} from "../../ffi/mod.ts";
import type { Kernels } from "../../ffi/mod.ts";
import { f32, i32, nans, openKernels, Rng } from "./_helpers.ts";

/** w rounded to bf16: the bf16 tensor and its values widened back to an f32 tensor. */
function bf16Pair(k: Kernels, w: Float32Array, shape: number[]): [Tensor<"bf16">, Tensor<"f32">] {
  using src = f32(k, w, shape);
  const w16 = new Tensor(k, shape, "bf16");
  toBf16(k, w16, src);
  const widened = Float32Array.from(
    w16.view(),
    (b) => new Float32Array(new Uint32Array([b << 16]).buffer)[0]!,
  );
  return [w16, f32(k, widened, shape)];
}

Deno.test("linear forward and backward with bf16 weights equal the fp32 calls on the rounded weights", () => {
  using k = openKernels();
  const rng = new Rng("bf16 linear");
  for (const [m, n, kk] of [[1, 33, 40], [5, 17, 64], [37, 53, 96]]) {
    const [w16, w32] = bf16Pair(k, rng.randn(n! * kk!, 0.3), [n!, kk!]);
    using _w16 = w16;
    using _w32 = w32;
    using x = f32(k, rng.randn(m! * kk!), [m!, kk!]);
    using bias = f32(k, rng.randn(n!));
    const y0 = rng.randn(m! * n!);
    using ya = f32(k, y0, [m!, n!]);
    using yb = f32(k, y0, [m!, n!]);
    linearForward(k, ya, x, w16, bias, true);
    linearForward(k, yb, x, w32, bias, true);
    assert.deepEqual(ya.toArray(), yb.toArray(), `forward ${m}x${n}x${kk}`);

    using dy = f32(k, rng.randn(m! * n!), [m!, n!]);
    const [dxa, dxb] = [nans(k, [m!, kk!]), nans(k, [m!, kk!])];
    const dw0 = rng.randn(n! * kk!);
    using dwa = f32(k, dw0, [n!, kk!]);
    using dwb = f32(k, dw0, [n!, kk!]);
    linearBackward(k, { dx: dxa, dw: dwa }, dy, x, w16);
    linearBackward(k, { dx: dxb, dw: dwb }, dy, x, w32);
    assert.deepEqual(dxa.toArray(), dxb.toArray(), `dx ${m}x${n}x${kk}`);
    assert.deepEqual(dwa.toArray(), dwb.toArray(), `dw ${m}x${n}x${kk}`);
    dxa.free();
    dxb.free();
  }
});

Deno.test("log-probs, their backward pass and the LM head with bf16 weights equal the fp32 calls", () => {
  using k = openKernels();
  const rng = new Rng("bf16 logprob");
  const [t, v, c] = [6, 300, 32];
  const [w16, w32] = bf16Pair(k, rng.randn(v * c, 0.5), [v, c]);
  using _w16 = w16;
  using _w32 = w32;
  using h = f32(k, rng.randn(t * c), [t, c]);
  using targets = i32(k, rng.ints(t, 0, v - 1));
  const outs = [w16, w32].map((w) => {
    const o = { logp: nans(k, [t]), lse: nans(k, [t]), entropy: nans(k, [t]) };
    logprobForward(k, o, h, targets, w, 0.8);
    return o;
  });
  for (const key of ["logp", "lse", "entropy"] as const) {
    assert.deepEqual(outs[0]![key].toArray(), outs[1]![key].toArray(), key);
  }
  using dlogp = f32(k, rng.randn(t));
  using dentropy = f32(k, rng.randn(t));
  const grads = [w16, w32].map((w, i) => {
    const g = { dh: nans(k, [t, c]), dw: f32(k, new Float32Array(v * c), [v, c]) };
    logprobBackward(k, g, { dlogp, dentropy }, h, targets, w, outs[i]!, 0.8);
    return g;
  });
  assert.deepEqual(grads[0]!.dh.toArray(), grads[1]!.dh.toArray(), "dh");
  assert.deepEqual(grads[0]!.dw.toArray(), grads[1]!.dw.toArray(), "dw");
  const logits = [w16, w32].map((w) => {
    const l = nans(k, [t, v]);
    lmHead(k, l, h, w);
    return l.toArray();
  });
  assert.deepEqual(logits[0], logits[1], "lmHead");
});

Deno.test("bf16 weights: a wrong dtype or shape is a clear error, and the native side checks null weights", () => {
  using k = openKernels();
  using x = f32(k, new Float32Array(8), [2, 4]);
  using y = nans(k, [2, 3]);
  using wi = new Tensor(k, [3, 4], "i32");
  assert.throws(() => linearForward(k, y, x, wi), /w must be f32, got i32/);
  using w16 = new Tensor(k, [3, 5], "bf16");
  assert.throws(() => linearForward(k, y, x, w16), /w must have shape \[\*, 4\], got \[3, 5\]/);
  const status = k.sym.arl_linear_forward_bf16(k.ctx, y.ptr, x.ptr, null, null, 2, 3, 4, 0);
  assert.throws(
    () => k.check("arl_linear_forward_bf16", status),
    /arl_linear_forward_bf16: w must not be null/,
  );
});
