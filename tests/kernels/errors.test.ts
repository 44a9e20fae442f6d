// Bad arguments: caught in TS with clear errors (shape, dtype, freed tensors),
// or, when they reach native code, answered with an error status and a message
// that KernelError carries; and a seeded fuzz of the entry points that must
// never crash and must return 0 exactly when the arguments are valid.
import assert from "node:assert/strict";
import {
  adamw,
  add,
  attentionDecode,
  attentionForward,
  embeddingForward,
  KernelError,
  Kernels,
  kvCacheWrite,
  linearForward,
  logprobBackward,
  logprobForward,
  ppoLoss,
  rmsnormForward,
  rope,
  sample,
  sgemm,
  swigluForward,
  Tensor,
  valueLoss,
} from "../../ffi/mod.ts";
import { f32, i32, openKernels, Rng } from "./_helpers.ts";
import { ABI_VERSION } from "../../ffi/symbols.ts";

const ARL_ERR_NULL = 1, ARL_ERR_SIZE = 2, ARL_ERR_VALUE = 3;
const p = (a: ArrayBufferView): Deno.PointerValue => Deno.UnsafePointer.of(a as BufferSource);

function lastError(k: Kernels): string {
  const m = k.sym.arl_last_error(k.ctx);
  return m === null ? "" : Deno.UnsafePointerView.getCString(m);
}

/** The status is `code`, the context's message matches, and KernelError carries both. */
function expectNative(
  k: Kernels,
  status: number,
  code: number,
  pattern: RegExp,
  what = pattern.source,
): void {
  assert.equal(status, code, `${what}: status ${status}, message "${lastError(k)}"`);
  assert.match(lastError(k), pattern, what);
  assert.throws(
    () => k.check("op", status),
    (e: unknown) => e instanceof KernelError && e.status === code && pattern.test(e.message),
    what,
  );
}

/** A TS wrapper call throws a KernelError with the native status and explanation. */
function expectKernelError(fn: () => unknown, code: number, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof KernelError, `expected a KernelError, got ${e}`);
    assert.equal(e.status, code, e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

// ---- TS-side checks ----------------------------------------------------------------

Deno.test("TS: wrong shapes, wrong dtypes, freed tensors and mismatched shapes throw clear errors", () => {
  using k = openKernels();
  using x = f32(k, new Float32Array(6), [2, 3]);
  using w = f32(k, new Float32Array(12), [4, 3]);
  using yBad = new Tensor(k, [4, 2], "f32");
  assert.throws(() => linearForward(k, yBad, x, w), {
    name: "RangeError",
    message: "y must have shape [2, 4], got [4, 2]",
  });
  using wBad = f32(k, new Float32Array(8), [4, 2]);
  using y = new Tensor(k, [2, 4], "f32");
  assert.throws(() => linearForward(k, y, x, wBad), {
    name: "RangeError",
    message: "w must have shape [*, 3], got [4, 2]",
  });
  using bias = new Tensor(k, [3], "f32");
  assert.throws(() => linearForward(k, y, x, w, bias), /bias must have shape \[4\], got \[3\]/);
  // dtype
  using tokF = f32(k, [0, 1]);
  using wte = new Tensor(k, [5, 3], "f32");
  using emb = new Tensor(k, [2, 3], "f32");
  assert.throws(() => embeddingForward(k, emb, tokF, wte), {
    name: "TypeError",
    message: "tokens must be i32, got f32",
  });
  using tokI = i32(k, [0, 1]);
  using wteI = i32(k, new Int32Array(15), [5, 3]);
  assert.throws(() => embeddingForward(k, emb, tokI, wteI), {
    name: "TypeError",
    message: "wte must be f32, got i32",
  });
  // freed
  const gone = f32(k, [1, 2, 3, 4, 5, 6], [2, 3]);
  gone.free();
  gone.free(); // idempotent
  assert.equal(gone.alive, false);
  assert.throws(() => linearForward(k, y, gone, w), { message: "x was freed" });
  assert.throws(() => gone.ptr, /This f32 tensor \[2, 3\] was freed/);
  assert.throws(() => gone.view(), /was freed/);
  // another shape: elementwise ops need equal shapes
  using g = new Tensor(k, [2, 3], "f32");
  using u = new Tensor(k, [3, 2], "f32");
  using o = new Tensor(k, [2, 3], "f32");
  assert.throws(() => swigluForward(k, o, g, u), {
    name: "RangeError",
    message: "up must have shape [2, 3], got [3, 2]",
  });
  assert.throws(() => add(k, o, g, u), /b must have shape \[2, 3\], got \[3, 2\]/);
  using m = new Tensor(k, [6], "f32");
  assert.throws(
    () => adamw(k, g, m, o, o, { lr: 1, step: 1 }),
    /m must have shape \[2, 3\], got \[6\]/,
  );
  // sgemm inner dimensions
  using a = new Tensor(k, [2, 3], "f32");
  using b = new Tensor(k, [2, 4], "f32");
  using c = new Tensor(k, [2, 4], "f32");
  assert.throws(() => sgemm(k, c, a, b), /sgemm: op\(a\) is \(2, 3\) but op\(b\) is \(2, 4\)/);
  // attention heads and cu_seqlens
  using q = new Tensor(k, [4, 3, 2], "f32");
  using kk = new Tensor(k, [4, 2, 2], "f32");
  using lse = new Tensor(k, [3, 4], "f32");
  using cu = i32(k, [0, 4]);
  assert.throws(
    () => attentionForward(k, q, lse, q, kk, kk, cu),
    /query heads 3 must be a multiple of kv heads 2/,
  );
  using cu1 = i32(k, [0]);
  using k3 = new Tensor(k, [4, 3, 2], "f32");
  assert.throws(
    () => attentionForward(k, q, lse, q, k3, k3, cu1),
    /cuSeqlens needs at least 2 entries/,
  );
});

Deno.test("TS: bad scalars, missing optional inputs, bad tensors and contexts throw clear errors", () => {
  using k = openKernels();
  using x = new Tensor(k, [2, 4], "f32");
  using wt = new Tensor(k, [4], "f32");
  using rstd = new Tensor(k, [2], "f32");
  assert.throws(
    () => rmsnormForward(k, x, rstd, x, wt, NaN),
    /eps must be a finite number, got NaN/,
  );
  using pos = i32(k, [0, 1]);
  using xr = new Tensor(k, [2, 1, 4], "f32");
  assert.throws(() => rope(k, xr, xr, pos, 0), /theta must be a positive number, got 0/);
  using h = new Tensor(k, [2, 4], "f32");
  using tg = i32(k, [0, 1]);
  using w = new Tensor(k, [5, 4], "f32");
  using t2 = new Tensor(k, [2], "f32");
  assert.throws(
    () => logprobForward(k, { logp: t2, lse: t2 }, h, tg, w, -1),
    /temperature must be a positive number in 1\.2e-38\.\.3\.4e38, got -1/,
  );
  assert.throws(
    () => logprobBackward(k, { dh: h }, { dlogp: t2, dentropy: t2 }, h, tg, w, { lse: t2 }),
    /dentropy needs the forward pass's entropy/,
  );
  using cu = i32(k, [0, 2]);
  const base = { logp: t2, oldLogp: t2, advantages: t2, mask: t2, cuSeqlens: cu };
  assert.throws(
    () => ppoLoss(k, { dlogp: t2 }, base, { clipLow: 0.2, clipHigh: 0.2, klCoef: 0.1 }),
    /klCoef != 0 needs refLogp/,
  );
  assert.throws(
    () => ppoLoss(k, { dlogp: t2 }, base, { clipLow: 0.2, clipHigh: 0.2, entropyCoef: 0.1 }),
    /entropyCoef != 0 needs entropy and dentropy/,
  );
  assert.throws(
    () =>
      ppoLoss(k, { dlogp: t2 }, base, {
        clipLow: 0.2,
        clipHigh: 0.2,
        aggMode: "mean" as "token-mean",
      }),
    /aggMode must be one of token-mean, seq-mean-token-sum/,
  );
  assert.throws(
    () => ppoLoss(k, { dlogp: t2 }, base, { clipLow: 0.2, clipHigh: 0.2, klKind: "js" as "kl" }),
    /klKind must be one of kl, abs, mse, k3/,
  );
  assert.throws(
    () =>
      valueLoss(k, t2, { values: t2, returns: t2, mask: t2, cuSeqlens: cu }, { valueClip: 0.2 }),
    /valueClip > 0 needs oldValues/,
  );
  using params = new Tensor(k, [3], "f32");
  assert.throws(
    () => adamw(k, params, params, params, params, { lr: 0.1, step: 0 }),
    /step must be an integer in 1\.\./,
  );
  using logits = new Tensor(k, [2, 5], "f32");
  assert.throws(
    () => sample(k, logits, [{ temperature: 1, seed: 1, counter: 0 }]),
    /logits must have shape \[1, \*\], got \[2, 5\]/,
  );
  assert.throws(
    () =>
      sample(k, logits, [{ temperature: 1, seed: 1, counter: 0 }, {
        temperature: -0.5,
        seed: 1,
        counter: 0,
      }]),
    /row 1: temperature must be a number in \[0, 3\.4e38\], got -0\.5/,
  );
  // tensors
  assert.throws(
    () => new Tensor(k, [2, 0], "f32"),
    /Tensor dimensions must be positive integers, got \[2, 0\]/,
  );
  assert.throws(() => new Tensor(k, [1.5], "f32"), /positive integers/);
  assert.throws(
    () => new Tensor(k, [2], "f64" as "f32"),
    /Unknown dtype 'f64': expected f32, i32 or bf16/,
  );
  assert.throws(
    () => Tensor.from(k, new Float32Array(5), [2, 3]),
    /5 values do not fill shape \[2, 3\]/,
  );
  // contexts
  assert.throws(() => Kernels.open({ threads: -1 }), /threads must be an integer in 0\.\.1024/);
  const closed = openKernels();
  closed.close();
  closed.close(); // idempotent
  assert.throws(() => closed.ctx, /This kernel context is closed/);
  assert.throws(() => new Tensor(closed, [2], "f32"), /This kernel context is closed/);
  assert.throws(() => (k.threads = -3), /threads must be an integer >= 0/);
});

Deno.test("TS: outputs over inputs, another context's tensors, float32 range, views", () => {
  using k = openKernels();
  using x = f32(k, [1, 2, 3, 4], [2, 2]);
  using w = f32(k, [1, 0, 0, 1], [2, 2]);
  // an output that shares an input's memory (the op would read what it overwrote)
  assert.throws(() => linearForward(k, x, x, w), /y and x share memory/);
  using g = f32(k, [1, 1], [2]);
  using p1 = f32(k, [1, 2], [2]);
  using m1 = f32(k, [0, 0], [2]);
  assert.throws(
    () => adamw(k, p1, m1, m1, g, { lr: 0.1, step: 1 }),
    /m and v share memory/,
  );
  assert.throws(() => adamw(k, p1, m1, g, g, { lr: 0.1, step: 1, gradScale: NaN }), /gradScale/);
  // add checks its first input too (it once read a bf16 tensor as f32, past its end)
  using b16 = new Tensor(k, [2], "bf16");
  using out2 = new Tensor(k, [2], "f32");
  assert.throws(() => add(k, out2, b16, g), /a must be f32, got bf16/);
  // a tensor of another context
  using other = openKernels();
  using y = new Tensor(k, [2, 2], "f32");
  using xo = f32(other, [1, 2, 3, 4], [2, 2]);
  assert.throws(() => linearForward(k, y, xo, w), /belongs to another Kernels context/);
  // numbers that are Infinity or 0 as float32
  using xr = new Tensor(k, [1, 1, 2], "f32");
  using pos = i32(k, [0]);
  assert.throws(
    () => rope(k, xr, xr, pos, 1e39),
    /theta must be a positive number, got 1e\+39 \(the kernels take it as a float32/,
  );
  assert.throws(
    () => sgemm(k, y, x, w, { alpha: 1e-50 }),
    /alpha must be a finite number, got 1e-50 \(.*float32/,
  );
  // sampling's topK is an integer >= -1
  using logits = f32(k, [0, 1, 2], [1, 3]);
  const row = { temperature: 1, seed: 1, counter: 0 };
  assert.throws(() => sample(k, logits, [{ ...row, topK: 1.5 }]), /topK must be an integer/);
  // a view whose start is not aligned for its dtype
  using bytes = new Tensor(k, [4], "bf16");
  using odd = Tensor.viewOf(bytes, 2, [3], "bf16");
  assert.throws(() => Tensor.viewOf(odd, 0, [1], "f32"), /not 4-byte aligned/);
});

Deno.test("a typed-array view keeps its memory alive, and is detached when the tensor is freed", () => {
  using k = openKernels();
  const t = new Tensor(k, [8], "f32");
  const whole = t.view();
  const part = Tensor.viewOf(t, 16, [2], "f32").view();
  whole[5] = 7;
  assert.equal(part[1], 7);
  t.free();
  assert.equal(whole.length, 0); // detached: reads give undefined, writes are dropped
  assert.equal(part.length, 0);
  whole[5] = 1;
  assert.equal(whole[5], undefined);
});

// ---- native checks, through the TS wrappers --------------------------------------

Deno.test("native errors reach TS as KernelError with the library's explanation", () => {
  using k = openKernels();
  using wte = new Tensor(k, [5, 3], "f32");
  using out = new Tensor(k, [3, 3], "f32");
  using badTok = i32(k, [0, 9, 1]);
  expectKernelError(
    () => embeddingForward(k, out, badTok, wte),
    ARL_ERR_VALUE,
    /^arl_embedding_forward failed \(status 3\): arl_embedding_forward: token id 9 at row 1 is outside \[0, 5\)$/,
  );
  using h = new Tensor(k, [2, 4], "f32");
  using w = new Tensor(k, [7, 4], "f32");
  using t2 = new Tensor(k, [2], "f32");
  using lse2 = new Tensor(k, [2], "f32");
  using badTarget = i32(k, [7, 0]);
  expectKernelError(
    () => logprobForward(k, { logp: t2, lse: lse2 }, h, badTarget, w),
    ARL_ERR_VALUE,
    /target id 7 at row 0 is outside \[0, 7\)/,
  );
  using q = new Tensor(k, [4, 2, 2], "f32");
  using attnOut = new Tensor(k, [4, 2, 2], "f32");
  using lse = new Tensor(k, [2, 4], "f32");
  using cuBad = i32(k, [0, 3, 2, 4]);
  expectKernelError(
    () => attentionForward(k, attnOut, lse, q, q, q, cuBad),
    ARL_ERR_VALUE,
    /cu_seqlens must not decrease/,
  );
  using kc = new Tensor(k, [2, 1, 4, 2], "f32");
  using vc = new Tensor(k, [2, 1, 4, 2], "f32");
  using kv = new Tensor(k, [1, 1, 2], "f32");
  using slot = i32(k, [2]);
  using posOk = i32(k, [0]);
  expectKernelError(
    () => kvCacheWrite(k, kc, vc, kv, kv, slot, posOk),
    ARL_ERR_VALUE,
    /slot 2 of token 0 is outside \[0, 2\)/,
  );
  using qd = new Tensor(k, [1, 1, 2], "f32");
  using od = new Tensor(k, [1, 1, 2], "f32");
  using slot0 = i32(k, [0]);
  using len5 = i32(k, [5]);
  expectKernelError(
    () => attentionDecode(k, od, qd, kc, vc, slot0, len5),
    ARL_ERR_VALUE,
    /length 5 of query 0 is outside \[1, 4\]/,
  );
  using xOdd = new Tensor(k, [2, 1, 5], "f32");
  using pos2 = i32(k, [0, 1]);
  expectKernelError(
    () => rope(k, xOdd, xOdd, pos2, 10000),
    ARL_ERR_SIZE,
    /arl_rope: head dim 5 must be even/,
  );
  using cu = i32(k, [0, 2]);
  expectKernelError(
    () =>
      ppoLoss(
        k,
        { dlogp: t2 },
        { logp: t2, oldLogp: t2, advantages: t2, mask: t2, cuSeqlens: cu },
        { clipLow: 1.5, clipHigh: 0.2 },
      ),
    ARL_ERR_VALUE,
    /clip_low must be in \[0, 1\) and clip_high >= 0/,
  );
  expectKernelError(
    () =>
      valueLoss(k, t2, { values: t2, returns: t2, mask: t2, cuSeqlens: cu }, {
        aggMode: "seq-mean-token-sum-norm",
      }),
    ARL_ERR_VALUE,
    /seq-mean-token-sum-norm needs norm_len > 0/,
  );
  // a mask is a finite weight >= 0 per token; the native check runs before any output is written
  for (const [bad, shown] of [[-1, "-1"], [NaN, "nan"], [Infinity, "inf"]] as const) {
    using mask = f32(k, [1, bad]);
    using dlogp = f32(k, [7, 7]);
    expectKernelError(
      () =>
        ppoLoss(k, { dlogp }, { logp: t2, oldLogp: t2, advantages: t2, mask, cuSeqlens: cu }, {
          clipLow: 0.2,
          clipHigh: 0.2,
        }),
      ARL_ERR_VALUE,
      new RegExp(`arl_ppo_loss: mask\\[1\\] is ${shown} \\(expected a finite weight >= 0\\)`),
    );
    assert.deepEqual([...dlogp.read()], [7, 7]);
    expectKernelError(
      () => valueLoss(k, dlogp, { values: t2, returns: t2, mask, cuSeqlens: cu }),
      ARL_ERR_VALUE,
      /arl_value_loss: mask\[1\]/,
    );
  }
  using logits = new Tensor(k, [1, 4], "f32");
  expectKernelError(
    () => sample(k, logits, [{ temperature: 1, topP: 0, seed: 1, counter: 0 }]),
    ARL_ERR_VALUE,
    /top_p of row 0 must be > 0, got 0/,
  );
  using prm = new Tensor(k, [3], "f32");
  using mom = new Tensor(k, [3], "f32");
  using vel = new Tensor(k, [3], "f32");
  using grd = new Tensor(k, [3], "f32");
  expectKernelError(
    () => adamw(k, prm, mom, vel, grd, { lr: 0.1, step: 1, beta1: 1 }),
    ARL_ERR_VALUE,
    /betas must be in \[0, 1\), got 1 and 0.999/,
  );
  expectKernelError(() => (k.threads = 5000), ARL_ERR_VALUE, /5000 threads is too many/);
});

// ---- native checks, called directly ----------------------------------------------

Deno.test("native: null pointers, non-positive and too large sizes, small leading dimensions, null context", () => {
  using k = openKernels();
  const { sym: s, ctx } = k;
  const a = new Float32Array(256), b = new Float32Array(256), c = new Float32Array(256);
  expectNative(
    k,
    s.arl_sgemm(ctx, null, p(a), p(b), 0, 0, 2, 2, 2, 1, 0, 2, 2, 2),
    ARL_ERR_NULL,
    /arl_sgemm: c must not be null/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), null, p(b), 0, 0, 2, 2, 2, 1, 0, 2, 2, 2),
    ARL_ERR_NULL,
    /arl_sgemm: a must not be null/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), null, 0, 0, 2, 2, 2, 1, 0, 2, 2, 2),
    ARL_ERR_NULL,
    /arl_sgemm: b must not be null/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 0, 0, 0, 2, 2, 1, 0, 2, 2, 2),
    ARL_ERR_SIZE,
    /arl_sgemm: m must be positive, got 0/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 0, 0, 2, -3, 2, 1, 0, 2, 2, 2),
    ARL_ERR_SIZE,
    /n must be positive, got -3/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 0, 0, 2, 2, -1, 1, 0, 2, 2, 2),
    ARL_ERR_SIZE,
    /k must be positive, got -1/,
  );
  // leading dimensions: A (m, k) needs lda >= k, A^T (k, m) lda >= m; B (k, n) ldb >= n, B^T ldb >= k; ldc >= n
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 0, 0, 2, 3, 5, 1, 0, 4, 3, 3),
    ARL_ERR_SIZE,
    /lda = 4 is smaller than its row length 5/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 1, 0, 6, 3, 2, 1, 0, 5, 3, 3),
    ARL_ERR_SIZE,
    /lda = 5 is smaller than its row length 6/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 0, 0, 2, 3, 5, 1, 0, 5, 2, 3),
    ARL_ERR_SIZE,
    /ldb = 2 is smaller than its row length 3/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 0, 1, 2, 3, 5, 1, 0, 5, 4, 3),
    ARL_ERR_SIZE,
    /ldb = 4 is smaller than its row length 5/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 0, 0, 2, 3, 5, 1, 0, 5, 3, 2),
    ARL_ERR_SIZE,
    /ldc = 2 is smaller than its row length 3/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(c), p(a), p(b), 0, 0, 2, 3, 5, 1, 0, 5, 3, 0),
    ARL_ERR_SIZE,
    /ldc = 0 is smaller/,
  );
  expectNative(
    k,
    s.arl_linear_forward(ctx, p(c), p(a), null, null, 2, 2, 2, 0),
    ARL_ERR_NULL,
    /w must not be null/,
  );
  expectNative(
    k,
    s.arl_linear_forward(ctx, p(c), p(a), p(b), null, 2, 2, -2, 0),
    ARL_ERR_SIZE,
    /k must be positive, got -2/,
  );
  expectNative(
    k,
    s.arl_linear_backward(ctx, p(c), null, null, null, p(a), p(b), 2, 2, 2, 0),
    ARL_ERR_NULL,
    /dy must not be null/,
  );
  expectNative(
    k,
    s.arl_linear_backward(ctx, p(c), null, null, p(a), p(a), null, 2, 2, 2, 0),
    ARL_ERR_NULL,
    /w must not be null/,
  );
  expectNative(
    k,
    s.arl_linear_backward(ctx, null, p(c), null, p(a), null, p(b), 2, 2, 2, 0),
    ARL_ERR_NULL,
    /x must not be null/,
  );
  // int64 counts: 0 and beyond 2^40 elements
  expectNative(
    k,
    s.arl_swiglu_forward(ctx, p(c), p(a), p(b), 0n),
    ARL_ERR_SIZE,
    /n must be in 1\.\.2\^40, got 0/,
  );
  expectNative(
    k,
    s.arl_swiglu_forward(ctx, p(c), p(a), p(b), 2n ** 41n),
    ARL_ERR_SIZE,
    /n must be in 1\.\.2\^40, got 2199023255552/,
  );
  expectNative(
    k,
    s.arl_add(ctx, p(c), p(a), null, 4n),
    ARL_ERR_NULL,
    /arl_add: b must not be null/,
  );
  expectNative(
    k,
    s.arl_swiglu_backward(ctx, p(c), p(c), p(a), p(a), p(a), -5n),
    ARL_ERR_SIZE,
    /got -5/,
  );
  // products of sizes beyond 2^40 elements
  expectNative(
    k,
    s.arl_linear_forward(ctx, p(c), p(a), p(b), null, 2 ** 30, 2 ** 30, 2, 0),
    ARL_ERR_SIZE,
    /is too large/,
  );
  expectNative(
    k,
    s.arl_rmsnorm_forward(ctx, p(c), p(c), p(a), p(b), 2, 2, -1),
    ARL_ERR_VALUE,
    /eps must be finite and >= 0/,
  );
  expectNative(
    k,
    s.arl_rmsnorm_backward(ctx, p(c), null, p(a), p(a), null, p(b), 2, 2),
    ARL_ERR_NULL,
    /rstd must not be null/,
  );
  expectNative(
    k,
    s.arl_value_head_forward(ctx, p(c), p(a), p(b), 0, 0, 4),
    ARL_ERR_SIZE,
    /t must be positive, got 0/,
  );
  expectNative(
    k,
    s.arl_kl_full(ctx, p(c), p(c), p(a), p(b), null, 2, 2),
    ARL_ERR_NULL,
    /dkl must not be null/,
  );
  expectNative(k, s.arl_fill_f32(ctx, null, 1, 4n), ARL_ERR_NULL, /dst must not be null/);
  expectNative(k, s.arl_f32_to_bf16(ctx, p(c), p(a), -1n), ARL_ERR_SIZE, /got -1/);
  expectNative(k, s.arl_copy(ctx, p(c), null, 4n), ARL_ERR_NULL, /src must not be null/);
  // the L2 regions: count in 0..64, the arrays given, each base set and its bytes positive, no
  // two overlapping; kept written (0 on the CPU)
  const at = (...xs: bigint[]) => BigUint64Array.from(xs);
  const sizes = (...xs: bigint[]) => BigInt64Array.from(xs);
  const base = BigInt(Deno.UnsafePointer.value(p(c)));
  const kept = new BigInt64Array([7n, 7n]);
  expectNative(
    k,
    s.arl_l2_persist(ctx, at(base), sizes(16n), 65, kept),
    ARL_ERR_SIZE,
    /0\.\.64, got 65/,
  );
  expectNative(k, s.arl_l2_persist(ctx, at(base), sizes(16n), 1, null), ARL_ERR_NULL, /kept must/);
  expectNative(k, s.arl_l2_persist(ctx, at(0n), sizes(16n), 1, kept), ARL_ERR_NULL, /bases\[0\]/);
  expectNative(
    k,
    s.arl_l2_persist(ctx, at(base), sizes(0n), 1, kept),
    ARL_ERR_SIZE,
    /bytes\[0\] must be in 1\.\.2\^42, got 0/,
  );
  expectNative(
    k,
    s.arl_l2_persist(ctx, at(base, base + 8n), sizes(16n, 16n), 2, kept),
    ARL_ERR_VALUE,
    /regions 0 and 1 overlap/,
  );
  assert.equal(s.arl_l2_persist(ctx, at(base, base + 16n), sizes(16n, 16n), 2, kept), 0);
  assert.deepEqual(Array.from(kept), [0n, 0n], "the CPU library keeps nothing in a cache");
  assert.equal(s.arl_l2_persist(ctx, null, null, 0, null), 0, "count 0 clears the regions");
  // allocation and threads
  assert.equal(s.arl_alloc(ctx, 0n), null);
  assert.match(lastError(k), /arl_alloc: bytes must be in 1\.\.2\^42, got 0/);
  assert.equal(s.arl_alloc(ctx, -8n), null);
  expectNative(k, s.arl_set_num_threads(ctx, 2000), ARL_ERR_VALUE, /2000 threads is too many/);
  // A successful call clears the message.
  assert.equal(s.arl_add(ctx, p(c), p(a), p(b), 4n), 0);
  assert.equal(lastError(k), "");
  // A null context: ARL_ERR_NULL, and arl_last_error(NULL) explains.
  assert.equal(s.arl_add(null, p(c), p(a), p(b), 4n), ARL_ERR_NULL);
  assert.equal(s.arl_sgemm(null, p(c), p(a), p(b), 0, 0, 2, 2, 2, 1, 0, 2, 2, 2), ARL_ERR_NULL);
  assert.equal(Deno.UnsafePointerView.getCString(s.arl_last_error(null)!), "the context is null");
  assert.equal(s.arl_set_num_threads(null, 2), ARL_ERR_NULL);
  assert.equal(s.arl_num_threads(null), 0);
  assert.equal(s.arl_alloc(null, 64n), null);
  assert.equal(s.arl_abi_version(), ABI_VERSION);
  // the header, the FFI table and the built library agree on the ABI version
  const header = Deno.readTextFileSync(new URL("../../kernels/include/agentrl.h", import.meta.url));
  assert.equal(Number(/#define ARL_ABI_VERSION (\d+)/.exec(header)?.[1]), ABI_VERSION);
});

Deno.test("native: out-of-range token ids, targets, slots, positions and lengths", () => {
  using k = openKernels();
  const { sym: s, ctx } = k;
  const f = new Float32Array(4096), o = new Float32Array(4096);
  const ints = (...x: number[]) => Int32Array.from(x);
  expectNative(
    k,
    s.arl_embedding_forward(ctx, p(o), p(ints(0, 5, 1)), p(f), 3, 5, 4),
    ARL_ERR_VALUE,
    /token id 5 at row 1 is outside \[0, 5\)/,
  );
  expectNative(
    k,
    s.arl_embedding_forward(ctx, p(o), p(ints(-1)), p(f), 1, 5, 4),
    ARL_ERR_VALUE,
    /token id -1 at row 0 is outside \[0, 5\)/,
  );
  expectNative(
    k,
    s.arl_embedding_backward(ctx, p(o), p(f), p(ints(1, 2, 3, 6)), 4, 6, 2),
    ARL_ERR_VALUE,
    /token id 6 at row 3 is outside \[0, 6\)/,
  );
  expectNative(
    k,
    s.arl_logprob_forward(ctx, p(o), null, p(o), p(f), p(ints(3, 7)), p(f), 2, 7, 4, 1),
    ARL_ERR_VALUE,
    /target id 7 at row 1 is outside \[0, 7\)/,
  );
  expectNative(
    k,
    s.arl_logprob_backward(
      ctx,
      p(o),
      null,
      p(f),
      null,
      p(f),
      p(ints(-2)),
      p(f),
      p(f),
      null,
      1,
      7,
      4,
      1,
    ),
    ARL_ERR_VALUE,
    /target id -2 at row 0 is outside \[0, 7\)/,
  );
  // kv cache: S = 2 slots of L = 4 positions
  const kc = new Float32Array(2 * 1 * 4 * 2);
  expectNative(
    k,
    s.arl_kv_cache_write(
      ctx,
      p(kc),
      p(kc),
      p(f),
      p(f),
      p(ints(0, -1)),
      p(ints(0, 0)),
      2,
      2,
      1,
      4,
      2,
    ),
    ARL_ERR_VALUE,
    /slot -1 of token 1 is outside \[0, 2\)/,
  );
  expectNative(
    k,
    s.arl_kv_cache_write(
      ctx,
      p(kc),
      p(kc),
      p(f),
      p(f),
      p(ints(1, 1)),
      p(ints(3, 4)),
      2,
      2,
      1,
      4,
      2,
    ),
    ARL_ERR_VALUE,
    /position 4 of token 1 is outside \[0, 4\)/,
  );
  expectNative(
    k,
    s.arl_kv_cache_write(ctx, p(kc), p(kc), p(f), p(f), p(ints(1)), p(ints(-1)), 1, 2, 1, 4, 2),
    ARL_ERR_VALUE,
    /position -1 of token 0 is outside/,
  );
  const normRope = s.arl_norm_rope_kv_cache_write!;
  const [nq, nk] = [new Float32Array(4), new Float32Array(2)];
  expectNative(
    k,
    normRope(
      ctx,
      p(nq),
      p(nk),
      p(kc),
      p(kc),
      p(f),
      null,
      null,
      null,
      p(ints(1)),
      p(ints(-1)),
      1,
      2,
      2,
      1,
      4,
      2,
      1e-6,
      1e4,
    ),
    ARL_ERR_VALUE,
    /arl_norm_rope_kv_cache_write: position -1 of token 0 is outside \[0, 4\)/,
  );
  expectNative(
    k,
    normRope(
      ctx,
      p(nq),
      null,
      p(kc),
      p(kc),
      p(f),
      p(f),
      p(f),
      null,
      p(ints(1)),
      p(ints(0)),
      1,
      2,
      2,
      1,
      4,
      2,
      1e-6,
      1e4,
    ),
    ARL_ERR_NULL,
    /arl_norm_rope_kv_cache_write: k must not be null/,
  );
  expectNative(
    k,
    normRope(
      ctx,
      p(nq),
      p(nk),
      p(kc),
      p(kc),
      p(f),
      p(f),
      null,
      null,
      p(ints(1)),
      p(ints(0)),
      1,
      2,
      2,
      1,
      4,
      2,
      -1,
      1e4,
    ),
    ARL_ERR_VALUE,
    /arl_norm_rope_kv_cache_write: eps must be finite and >= 0, got -1/,
  );
  expectNative(
    k,
    normRope(
      ctx,
      p(nq),
      p(nk),
      p(kc),
      p(kc),
      p(f),
      null,
      null,
      p(Float32Array.of(Infinity)),
      p(ints(1)),
      p(ints(0)),
      1,
      2,
      2,
      1,
      4,
      2,
      1e-6,
      1e4,
    ),
    ARL_ERR_VALUE,
    /arl_norm_rope_kv_cache_write: inv_freq\[0\] is not finite/,
  );
  // an infinite theta: refused before q changes (the norm would have run first)
  const q0 = Float32Array.of(1, 2, 3, 4);
  const args = [p(nk), p(kc), p(kc), p(f), p(f), null, null, p(ints(1)), p(ints(0))] as const;
  expectNative(
    k,
    normRope(ctx, p(q0), ...args, 1, 2, 2, 1, 4, 2, 1e-6, Infinity),
    ARL_ERR_VALUE,
    /arl_norm_rope_kv_cache_write: theta must be finite and > 0, got inf/,
  );
  assert.deepEqual(Array.from(q0), [1, 2, 3, 4], "q unchanged");

  expectNative(
    k,
    s.arl_attention_decode(
      ctx,
      p(o),
      p(f),
      p(kc),
      p(kc),
      p(ints(2)),
      p(ints(1)),
      1,
      2,
      1,
      1,
      4,
      2,
      1,
    ),
    ARL_ERR_VALUE,
    /slot 2 of query 0 is outside \[0, 2\)/,
  );
  expectNative(
    k,
    s.arl_attention_decode(
      ctx,
      p(o),
      p(f),
      p(kc),
      p(kc),
      p(ints(0)),
      p(ints(0)),
      1,
      2,
      1,
      1,
      4,
      2,
      1,
    ),
    ARL_ERR_VALUE,
    /length 0 of query 0 is outside \[1, 4\]/,
  );
  expectNative(
    k,
    s.arl_attention_decode(
      ctx,
      p(o),
      p(f),
      p(kc),
      p(kc),
      p(ints(0)),
      p(ints(5)),
      1,
      2,
      1,
      1,
      4,
      2,
      1,
    ),
    ARL_ERR_VALUE,
    /length 5 of query 0 is outside \[1, 4\]/,
  );
  expectNative(
    k,
    s.arl_attention_decode(
      ctx,
      p(o),
      p(f),
      p(kc),
      p(kc),
      p(ints(0)),
      p(ints(1)),
      1,
      2,
      3,
      2,
      4,
      2,
      1,
    ),
    ARL_ERR_SIZE,
    /query heads 3 must be a multiple of kv heads 2/,
  );
  expectNative(
    k,
    s.arl_rope(ctx, p(o), p(f), p(ints(0, 1, -1)), 3, 1, 4, 10000, 0),
    ARL_ERR_VALUE,
    /position -1 at row 2 is negative/,
  );
  expectNative(
    k,
    s.arl_rope(ctx, p(o), p(f), p(ints(0)), 1, 2, 7, 10000, 0),
    ARL_ERR_SIZE,
    /head dim 7 must be even/,
  );
  expectNative(
    k,
    s.arl_rope(ctx, p(o), p(f), p(ints(0)), 1, 2, 8, 0, 0),
    ARL_ERR_VALUE,
    /theta must be finite and > 0/,
  );
  const ropeFreqs = s.arl_rope_freqs!;
  expectNative(
    k,
    ropeFreqs(ctx, p(o), p(f), p(ints(0, 1, -1)), p(f), 3, 1, 4, 0),
    ARL_ERR_VALUE,
    /arl_rope_freqs: position -1 at row 2 is negative/,
  );
  expectNative(
    k,
    ropeFreqs(ctx, p(o), p(f), p(ints(0)), p(f), 1, 2, 7, 0),
    ARL_ERR_SIZE,
    /arl_rope_freqs: head dim 7 must be even/,
  );
  expectNative(
    k,
    ropeFreqs(ctx, p(o), p(f), p(ints(0)), p(Float32Array.of(1, Infinity)), 1, 1, 4, 1),
    ARL_ERR_VALUE,
    /arl_rope_freqs: inv_freq\[1\] is not finite/,
  );
  expectNative(
    k,
    ropeFreqs(ctx, p(o), p(f), p(ints(0)), null, 1, 1, 4, 0),
    ARL_ERR_NULL,
    /inv_freq/,
  );
});

Deno.test("native: invalid cu_seqlens (not starting at 0, decreasing, not ending at T) for attention and losses", () => {
  using k = openKernels();
  const { sym: s, ctx } = k;
  const f = new Float32Array(1024),
    o = new Float32Array(1024),
    o2 = new Float32Array(1024),
    o3 = new Float32Array(1024);
  const metrics = new Float32Array(12);
  const params = ppoParams({});
  const bad: [number[], number, RegExp][] = [
    [[1, 3], 3, /cu_seqlens\[0\] must be 0/],
    [[0, 3, 2, 4], 4, /cu_seqlens must not decrease \(index 2/],
    [[0, 2, 3], 4, /cu_seqlens\[2\] = 3 must equal T = 4/],
    [[0, 2, 5], 4, /cu_seqlens\[2\] = 5 must equal T = 4/],
  ];
  for (const [cuArr, t, re] of bad) {
    const cu = Int32Array.from(cuArr), b = cuArr.length - 1;
    const what = `cu_seqlens [${cuArr}] T=${t}`;
    expectNative(
      k,
      s.arl_attention_forward(ctx, p(o), p(o2), p(f), p(f), p(f), p(cu), b, t, 2, 1, 4, 0.5),
      ARL_ERR_VALUE,
      re,
      `attention forward ${what}`,
    );
    expectNative(
      k,
      s.arl_attention_backward(
        ctx,
        p(o),
        p(o2),
        p(o3),
        p(f),
        p(f),
        p(f),
        p(f),
        p(f),
        p(f),
        p(cu),
        b,
        t,
        2,
        1,
        4,
        0.5,
      ),
      ARL_ERR_VALUE,
      re,
      `attention backward ${what}`,
    );
    expectNative(
      k,
      s.arl_ppo_loss(
        ctx,
        p(metrics),
        p(o),
        null,
        p(f),
        p(f),
        null,
        p(f),
        null,
        p(f),
        null,
        p(cu),
        b,
        t,
        p(params),
      ),
      ARL_ERR_VALUE,
      re,
      `ppo ${what}`,
    );
    expectNative(
      k,
      s.arl_value_loss(ctx, p(o), p(o2), p(o3), p(f), null, p(f), p(f), p(cu), b, t, 0, 0, 0),
      ARL_ERR_VALUE,
      re,
      `value loss ${what}`,
    );
  }
  const cu = Int32Array.from([0, 4]);
  expectNative(
    k,
    s.arl_attention_forward(ctx, p(o), p(o2), p(f), p(f), p(f), p(cu), 0, 4, 2, 1, 4, 0.5),
    ARL_ERR_SIZE,
    /b must be positive, got 0/,
  );
  expectNative(
    k,
    s.arl_attention_forward(ctx, p(o), p(o2), p(f), p(f), p(f), null, 1, 4, 2, 1, 4, 0.5),
    ARL_ERR_NULL,
    /cu_seqlens must not be null/,
  );
  expectNative(
    k,
    s.arl_attention_forward(ctx, p(o), p(o2), p(f), p(f), p(f), p(cu), 1, 4, 3, 2, 4, 0.5),
    ARL_ERR_SIZE,
    /query heads 3 must be a multiple of kv heads 2/,
  );
  expectNative(
    k,
    s.arl_attention_backward(
      ctx,
      p(o),
      p(o2),
      p(o3),
      p(f),
      p(f),
      p(f),
      p(f),
      p(f),
      null,
      p(cu),
      1,
      4,
      2,
      1,
      4,
      0.5,
    ),
    ARL_ERR_NULL,
    /lse must not be null/,
  );
});

interface RawPpoParams {
  clipLow?: number;
  clipHigh?: number;
  dualClip?: number;
  klCoef?: number;
  klKind?: number;
  klClamp?: number;
  entropyCoef?: number;
  sftCoef?: number;
  aggMode?: number;
  normLen?: number;
  ratioType?: number;
}

/** An arl_ppo_params struct (11 x 4 bytes) with raw, possibly invalid, values. */
function ppoParams(o: RawPpoParams): Uint8Array {
  const buf = new ArrayBuffer(44);
  const fl = new Float32Array(buf), in32 = new Int32Array(buf);
  fl[0] = o.clipLow ?? 0.2;
  fl[1] = o.clipHigh ?? 0.2;
  fl[2] = o.dualClip ?? 0;
  fl[3] = o.klCoef ?? 0;
  in32[4] = o.klKind ?? 0;
  fl[5] = o.klClamp ?? 0;
  fl[6] = o.entropyCoef ?? 0;
  fl[7] = o.sftCoef ?? 0;
  in32[8] = o.aggMode ?? 0;
  fl[9] = o.normLen ?? 0;
  in32[10] = o.ratioType ?? 0;
  return new Uint8Array(buf);
}

Deno.test("native: unknown agg mode and kl kind, bad clip settings, missing optional inputs, temperature <= 0, step 0", () => {
  using k = openKernels();
  const { sym: s, ctx } = k;
  const f = new Float32Array(256).fill(0.5),
    o = new Float32Array(256),
    o2 = new Float32Array(256),
    o3 = new Float32Array(256);
  const metrics = new Float32Array(12);
  const cu = Int32Array.from([0, 2, 4]);
  const ppo = (
    prm: RawPpoParams,
    opt: { ref?: boolean; ent?: boolean; dent?: boolean; sft?: boolean } = {},
  ) =>
    s.arl_ppo_loss(
      ctx,
      p(metrics),
      p(o),
      opt.dent ? p(o2) : null,
      p(f),
      p(f),
      opt.ref ? p(f) : null,
      p(f),
      opt.ent ? p(f) : null,
      p(f),
      opt.sft ? p(f) : null,
      p(cu),
      2,
      4,
      p(ppoParams(prm)),
    );
  assert.equal(ppo({}), 0, lastError(k));
  expectNative(
    k,
    ppo({ aggMode: 4 }),
    ARL_ERR_VALUE,
    /unknown loss_agg_mode 4 \(expected 0\.\.3\)/,
  );
  expectNative(k, ppo({ aggMode: -1 }), ARL_ERR_VALUE, /unknown loss_agg_mode -1/);
  expectNative(
    k,
    ppo({ aggMode: 3, normLen: 0 }),
    ARL_ERR_VALUE,
    /seq-mean-token-sum-norm needs norm_len > 0/,
  );
  expectNative(
    k,
    ppo({ klKind: 4, klCoef: 0.1 }, { ref: true }),
    ARL_ERR_VALUE,
    /unknown kl_kind 4 \(expected 0\.\.3\)/,
  );
  expectNative(
    k,
    ppo({ klKind: -2, klCoef: 0.1 }, { ref: true }),
    ARL_ERR_VALUE,
    /unknown kl_kind -2/,
  );
  expectNative(k, ppo({ clipLow: 1 }), ARL_ERR_VALUE, /clip_low must be in \[0, 1\)/);
  expectNative(k, ppo({ clipLow: -0.1 }), ARL_ERR_VALUE, /clip_low must be in \[0, 1\)/);
  expectNative(k, ppo({ clipHigh: -0.1 }), ARL_ERR_VALUE, /clip_high >= 0/);
  expectNative(k, ppo({ clipLow: NaN }), ARL_ERR_VALUE, /clip_low/);
  expectNative(
    k,
    ppo({ dualClip: 0.5 }),
    ARL_ERR_VALUE,
    /dual_clip must be > 1 \(or 0 to disable\), got 0\.5/,
  );
  expectNative(k, ppo({ dualClip: 1 }), ARL_ERR_VALUE, /dual_clip must be > 1/);
  expectNative(k, ppo({ ratioType: 2 }), ARL_ERR_VALUE, /unknown ratio_type 2 \(expected 0 or 1\)/);
  assert.equal(ppo({ ratioType: 1 }), 0, lastError(k));
  expectNative(k, ppo({ klCoef: 0.1 }), ARL_ERR_NULL, /ref_logp must not be null/);
  expectNative(
    k,
    ppo({ entropyCoef: 0.1 }, { dent: true }),
    ARL_ERR_NULL,
    /entropy must not be null/,
  );
  expectNative(
    k,
    ppo({ entropyCoef: 0.1 }, { ent: true }),
    ARL_ERR_NULL,
    /dentropy must not be null/,
  );
  expectNative(k, ppo({ sftCoef: 0.1 }), ARL_ERR_NULL, /sft_mask must not be null/);
  expectNative(
    k,
    s.arl_ppo_loss(
      ctx,
      p(metrics),
      p(o),
      null,
      p(f),
      p(f),
      null,
      p(f),
      null,
      p(f),
      null,
      p(cu),
      2,
      4,
      null,
    ),
    ARL_ERR_NULL,
    /params must not be null/,
  );
  expectNative(
    k,
    s.arl_ppo_loss(
      ctx,
      null,
      p(o),
      null,
      p(f),
      p(f),
      null,
      p(f),
      null,
      p(f),
      null,
      p(cu),
      2,
      4,
      p(ppoParams({})),
    ),
    ARL_ERR_NULL,
    /metrics must not be null/,
  );
  expectNative(
    k,
    s.arl_value_loss(ctx, p(o), p(o2), p(o3), p(f), null, p(f), p(f), p(cu), 2, 4, 0, 5, 0),
    ARL_ERR_VALUE,
    /unknown loss_agg_mode 5/,
  );
  expectNative(
    k,
    s.arl_value_loss(ctx, p(o), p(o2), p(o3), p(f), null, p(f), p(f), p(cu), 2, 4, 0.2, 0, 0),
    ARL_ERR_NULL,
    /old_values must not be null/,
  );
  expectNative(
    k,
    s.arl_value_loss(ctx, p(o), p(o2), p(o3), p(f), null, p(f), p(f), p(cu), 2, -4, 0, 0, 0),
    ARL_ERR_SIZE,
    /t must be positive, got -4/,
  );
  // temperature
  const tg = Int32Array.from([0, 1]);
  for (const temp of [0, -1, NaN, Infinity]) {
    expectNative(
      k,
      s.arl_logprob_forward(ctx, p(o), p(o2), p(o3), p(f), p(tg), p(f), 2, 3, 4, temp),
      ARL_ERR_VALUE,
      /temperature must be a positive number/,
      `logprob forward temperature ${temp}`,
    );
    expectNative(
      k,
      s.arl_logprob_backward(
        ctx,
        p(o),
        null,
        p(f),
        null,
        p(f),
        p(tg),
        p(f),
        p(f),
        null,
        2,
        3,
        4,
        temp,
      ),
      ARL_ERR_VALUE,
      /temperature must be a positive number/,
      `logprob backward temperature ${temp}`,
    );
  }
  expectNative(
    k,
    s.arl_logprob_backward(ctx, p(o), null, p(f), p(f), p(f), p(tg), p(f), p(f), null, 2, 3, 4, 1),
    ARL_ERR_NULL,
    /entropy must not be null/,
  );
  const tokens = new Int32Array(2),
    seeds = new BigUint64Array(2),
    counters = new BigUint64Array(2),
    topK = new Int32Array(2);
  const sampleWith = (temps: number[], topP: number[]) =>
    s.arl_sample(
      ctx,
      p(tokens),
      null,
      p(f),
      p(Float32Array.from(temps)),
      p(topK),
      p(Float32Array.from(topP)),
      p(seeds),
      p(counters),
      2,
      8,
    );
  assert.equal(sampleWith([0, 1], [1, 0.5]), 0, lastError(k));
  expectNative(
    k,
    sampleWith([1, -1], [1, 1]),
    ARL_ERR_VALUE,
    /temperature of row 1 must be >= 0, got -1/,
  );
  expectNative(
    k,
    sampleWith([NaN, 1], [1, 1]),
    ARL_ERR_VALUE,
    /temperature of row 0 must be >= 0, got nan/,
  );
  expectNative(k, sampleWith([Infinity, 1], [1, 1]), ARL_ERR_VALUE, /temperature of row 0/);
  expectNative(k, sampleWith([1, 1], [0.5, 0]), ARL_ERR_VALUE, /top_p of row 1 must be > 0, got 0/);
  expectNative(k, sampleWith([1, 1], [-1, 1]), ARL_ERR_VALUE, /top_p of row 0 must be > 0, got -1/);
  expectNative(
    k,
    s.arl_sample(ctx, p(tokens), null, p(f), p(f), p(topK), p(f), null, p(counters), 2, 8),
    ARL_ERR_NULL,
    /seeds must not be null/,
  );
  // AdamW
  const adam = (lr: number, b1: number, b2: number, eps: number, wd: number, step: number) =>
    s.arl_adamw(ctx, p(o), p(o2), p(o3), p(f), 16n, lr, b1, b2, eps, wd, step, 1);
  assert.equal(adam(0.1, 0.9, 0.999, 1e-8, 0, 1), 0);
  expectNative(
    k,
    adam(0.1, 0.9, 0.999, 1e-8, 0, 0),
    ARL_ERR_VALUE,
    /arl_adamw: step must be >= 1, got 0/,
  );
  expectNative(k, adam(0.1, 0.9, 0.999, 1e-8, 0, -3), ARL_ERR_VALUE, /step must be >= 1, got -3/);
  expectNative(k, adam(0.1, 1, 0.999, 1e-8, 0, 1), ARL_ERR_VALUE, /betas must be in \[0, 1\)/);
  expectNative(k, adam(0.1, 0.9, -0.1, 1e-8, 0, 1), ARL_ERR_VALUE, /betas must be in \[0, 1\)/);
  expectNative(
    k,
    adam(0.1, 0.9, 0.999, 0, 0, 1),
    ARL_ERR_VALUE,
    /need finite eps > 0, lr >= 0, weight_decay >= 0 and grad_scale/,
  );
  expectNative(k, adam(-0.1, 0.9, 0.999, 1e-8, 0, 1), ARL_ERR_VALUE, /need finite eps > 0/);
  expectNative(k, adam(0.1, 0.9, 0.999, 1e-8, -1, 1), ARL_ERR_VALUE, /need finite eps > 0/);
  expectNative(k, adam(Infinity, 0.9, 0.999, 1e-8, 0, 1), ARL_ERR_VALUE, /need finite eps/);
  expectNative(k, adam(0.1, 0.9, 0.999, 1e-8, Infinity, 1), ARL_ERR_VALUE, /need finite eps/);
  expectNative(
    k,
    s.arl_adamw(ctx, p(o), p(o2), p(o3), p(f), 16n, 0.1, 0.9, 0.999, 1e-8, 0, 1, NaN),
    ARL_ERR_VALUE,
    /grad_scale/,
  );
  // sgemm's alpha and beta, rope's theta: finite (the wrappers check too; the ABI on its own)
  expectNative(
    k,
    s.arl_sgemm(ctx, p(o), p(f), p(f), 0, 0, 2, 2, 2, Infinity, 0, 2, 2, 2),
    ARL_ERR_VALUE,
    /alpha and beta must be finite, got inf and 0/,
  );
  expectNative(
    k,
    s.arl_sgemm(ctx, p(o), p(f), p(f), 0, 0, 2, 2, 2, 1, NaN, 2, 2, 2),
    ARL_ERR_VALUE,
    /alpha and beta must be finite/,
  );
});

// ---- fuzz ---------------------------------------------------------------------------

const SMALL = 50 * 50 * 50; // the largest product of three sizes <= 50
const BIG = 50 * 50 * 50 * 50; // the KV caches (S, HKV, L, D)

/** What a fuzzed call may answer: the codes of the rules it breaks, or 0 when it breaks none. */
class Expect {
  codes = new Set<number>();
  /** Undocumented either way (e.g. an unused null input): 0 is also fine. */
  okToo = false;
  need(ptr: Deno.PointerValue): boolean {
    if (ptr === null) this.codes.add(ARL_ERR_NULL);
    return ptr !== null;
  }
  sizes(...xs: (number | bigint)[]): boolean {
    const ok = xs.every((x) => x > 0);
    if (!ok) this.codes.add(ARL_ERR_SIZE);
    return ok;
  }
  size(bad: boolean): void {
    if (bad) this.codes.add(ARL_ERR_SIZE);
  }
  value(bad: boolean): void {
    if (bad) this.codes.add(ARL_ERR_VALUE);
  }
  accepts(status: number): boolean {
    if (this.codes.size === 0) return status === 0;
    return this.codes.has(status) || (this.okToo && status === 0);
  }
}

Deno.test("fuzz: thousands of random argument combinations never crash and return 0 exactly when valid", () => {
  using k = openKernels();
  const rng = new Rng("fuzz");
  const { sym: s, ctx } = k;
  // Inputs are never written by the kernels (checked at the end); outputs are separate.
  const inputs = Array.from({ length: 6 }, () => rng.randn(SMALL));
  const outputs = Array.from({ length: 4 }, () => new Float32Array(SMALL));
  const caches = [new Float32Array(BIG), new Float32Array(BIG)];
  const inputSum = (): number =>
    inputs.reduce((acc, a) => acc + new Int32Array(a.buffer).reduce((x, y) => (x + y) | 0, 0), 0);
  const before = inputSum();
  // Sizes in -5..50, positive most of the time so that most calls get past the size checks.
  const size = () => (rng.chance(0.9) ? rng.int(1, 50) : rng.int(-5, 0));
  /** Query and kv heads: usually a valid grouping. */
  const heads = (): [number, number] => {
    const hkv = rng.chance(0.9) ? rng.int(1, 4) : rng.int(-1, 4);
    return [rng.chance(0.85) ? hkv * rng.int(1, 3) : rng.int(-1, 8), hkv];
  };
  const maybe = (a: ArrayBufferView) => (rng.chance(0.03) ? null : p(a));
  const IN = (i: number) => maybe(inputs[i]!);
  const OUT = (i: number) => maybe(outputs[i]!);
  /** n ids in [0, limit), one of them just outside 30% of the time. */
  const ids = (n: number, limit: number): Int32Array => {
    const a = Int32Array.from({ length: Math.max(n, 1) }, () => rng.int(0, Math.max(limit - 1, 0)));
    if (rng.chance(0.3)) {
      a[rng.int(0, a.length - 1)] = rng.chance(0.5) ? -1 - rng.int(0, 2) : limit + rng.int(0, 2);
    }
    return a;
  };
  const idsOk = (a: Int32Array, n: number, lo: number, hi: number) =>
    a.subarray(0, n).every((x) => x >= lo && x <= hi);
  /** cu_seqlens for (b, t): valid 85% of the time. */
  const cuFor = (b: number, t: number): Int32Array => {
    const cu = new Int32Array(Math.max(b + 1, 1) + 1);
    if (b > 0 && t > 0) {
      const cuts = Array.from({ length: b - 1 }, () => rng.int(0, t)).sort((x, y) => x - y);
      cu.set([0, ...cuts, t]);
      if (rng.chance(0.15)) {
        const which = rng.int(0, 2);
        if (which === 0) cu[0] = 1;
        else if (which === 1) cu[b] = t + rng.int(1, 3) * (rng.chance(0.5) ? 1 : -1);
        else if (b >= 2) [cu[1], cu[2]] = [cu[2]! + 1, cu[1]!];
        else cu[b] = t - 1;
      }
    }
    return cu;
  };
  const cuOk = (cu: Int32Array, b: number, t: number) => {
    if (cu[0] !== 0 || cu[b] !== t) return false;
    for (let i = 0; i < b; i++) if (cu[i + 1]! < cu[i]!) return false;
    return true;
  };

  /** A loss mask of t weights in [0, 2), one of them negative or not finite 20% of the time. */
  const lossMask = (t: number): { mask: Deno.PointerValue; bad: boolean } => {
    const a = Float32Array.from({ length: Math.max(t, 1) }, () => rng.range(0, 2));
    const bad = t > 0 && rng.chance(0.2);
    if (bad) a[rng.int(0, t - 1)] = [-0.5, NaN, Infinity, -Infinity][rng.int(0, 3)]!;
    return { mask: maybe(a), bad };
  };

  type Case = () => [string, number, Expect];
  const cases: Case[] = [
    () => {
      const e = new Expect();
      const [m, n, kk] = [size(), size(), size()];
      const [ta, tb] = [rng.int(0, 1), rng.int(0, 1)];
      // leading dimensions around the row length (sometimes too small)
      const ld = (row: number) => (rng.chance(0.9) ? row + rng.int(-1, 4) : size());
      const [lda, ldb, ldc] = [ld(ta ? m : kk), ld(tb ? kk : n), ld(n)];
      const c = OUT(0), a = IN(0), b = IN(1);
      [c, a, b].forEach((x) => e.need(x));
      if (e.sizes(m, n, kk)) {
        e.size(lda < (ta ? m : kk) || ldb < (tb ? kk : n) || ldc < n);
      } else e.size(lda <= 0 || ldb <= 0 || ldc <= 0);
      return [
        "arl_sgemm",
        s.arl_sgemm(
          ctx,
          c,
          a,
          b,
          ta,
          tb,
          m,
          n,
          kk,
          rng.range(-2, 2),
          rng.chance(0.5) ? 0 : 0.5,
          lda,
          ldb,
          ldc,
        ),
        e,
      ];
    },
    () => {
      const e = new Expect();
      const [m, n, kk] = [size(), size(), size()];
      const y = OUT(0), x = IN(0), w = IN(1), bias = rng.chance(0.5) ? null : IN(2);
      [y, x, w].forEach((q) => e.need(q));
      e.sizes(m, n, kk);
      return [
        "arl_linear_forward",
        s.arl_linear_forward(ctx, y, x, w, bias, m, n, kk, rng.int(0, 1)),
        e,
      ];
    },
    () => {
      const e = new Expect();
      const [m, n, kk] = [size(), size(), size()];
      const dx = rng.chance(0.3) ? null : OUT(0),
        dw = rng.chance(0.3) ? null : OUT(1),
        db = rng.chance(0.3) ? null : OUT(2);
      const dy = IN(0), x = IN(1), w = IN(2);
      e.need(dy);
      if (dx !== null) e.need(w);
      else if (w === null) e.okToo = true; // w unused without dx: undocumented
      if (dw !== null) e.need(x);
      else if (x === null) e.okToo = true;
      e.sizes(m, n, kk);
      return [
        "arl_linear_backward",
        s.arl_linear_backward(ctx, dx, dw, db, dy, x, w, m, n, kk, rng.int(0, 1)),
        e,
      ];
    },
    () => {
      const e = new Expect();
      const [t, v, c] = [size(), size(), size()];
      const tok = ids(t, v);
      const out = OUT(0), tp = maybe(tok), wte = IN(0);
      const backward = rng.chance(0.5);
      [out, tp, wte].forEach((q) => e.need(q));
      if (e.sizes(t, v, c) && tp) e.value(!idsOk(tok, t, 0, v - 1));
      const st = backward
        ? s.arl_embedding_backward(ctx, out, wte, tp, t, v, c)
        : s.arl_embedding_forward(ctx, out, tp, wte, t, v, c);
      return [backward ? "arl_embedding_backward" : "arl_embedding_forward", st, e];
    },
    () => {
      const e = new Expect();
      const [t, c] = [size(), size()];
      const eps = rng.chance(0.9) ? 1e-5 : -1;
      const out = OUT(0), rstd = OUT(1), x = IN(0), w = IN(1);
      [out, rstd, x, w].forEach((q) => e.need(q));
      if (e.sizes(t, c)) e.value(eps < 0);
      return ["arl_rmsnorm_forward", s.arl_rmsnorm_forward(ctx, out, rstd, x, w, t, c, eps), e];
    },
    () => {
      const e = new Expect();
      const [t, h, d] = [size(), size(), size()];
      const pos = ids(t, 100000);
      const out = OUT(0), x = IN(0), pp = maybe(pos);
      [out, x, pp].forEach((q) => e.need(q));
      if (e.sizes(t, h, d)) {
        e.size(d % 2 !== 0);
        if (pp) e.value(!idsOk(pos, t, 0, 2 ** 31));
      }
      return ["arl_rope", s.arl_rope(ctx, out, x, pp, t, h, d, 10000, rng.int(0, 1)), e];
    },
    () => {
      const e = new Expect();
      const [t, h, d] = [size(), size(), size()];
      const pos = ids(t, 100000);
      // a frequency table, one entry not finite 20% of the time
      const table = Float32Array.from({ length: Math.max(d, 1) }, () => rng.range(0, 1));
      const bad = d > 1 && rng.chance(0.2);
      if (bad) table[rng.int(0, Math.floor(d / 2) - 1)] = [NaN, Infinity][rng.int(0, 1)]!;
      const out = OUT(0), x = IN(0), pp = maybe(pos), f = maybe(table);
      [out, x, pp, f].forEach((q) => e.need(q));
      if (e.sizes(t, h, d)) {
        e.size(d % 2 !== 0);
        if (d % 2 === 0) e.value(bad);
        if (pp) e.value(!idsOk(pos, t, 0, 2 ** 31));
      }
      const fn = s.arl_rope_freqs!;
      return ["arl_rope_freqs", fn(ctx, out, x, pp, f, t, h, d, rng.int(0, 1)), e];
    },
    () => {
      const e = new Expect();
      const n = BigInt(size());
      const out = OUT(0), g = IN(0), u = IN(1);
      [out, g, u].forEach((q) => e.need(q));
      e.sizes(n);
      return ["arl_swiglu_forward", s.arl_swiglu_forward(ctx, out, g, u, n), e];
    },
    () => {
      const e = new Expect();
      const [b, t, [hq, hkv], d] = [rng.int(-2, 8), size(), heads(), size()];
      const cu = cuFor(b, t);
      const backward = rng.chance(0.4);
      const ptrs = backward
        ? [OUT(0), OUT(1), OUT(2), IN(0), IN(1), IN(2), IN(3), IN(4), IN(5)]
        : [OUT(0), OUT(1), IN(0), IN(1), IN(2)];
      const cp = maybe(cu);
      [...ptrs, cp].forEach((q) => e.need(q));
      if (e.sizes(b, t, hq, hkv, d)) {
        e.size(hq % hkv !== 0);
        if (cp) e.value(!cuOk(cu, b, t));
      }
      const st = backward
        ? s.arl_attention_backward(
          ctx,
          ptrs[0]!,
          ptrs[1]!,
          ptrs[2]!,
          ptrs[3]!,
          ptrs[4]!,
          ptrs[5]!,
          ptrs[6]!,
          ptrs[7]!,
          ptrs[8]!,
          cp,
          b,
          t,
          hq,
          hkv,
          d,
          0.3,
        )
        : s.arl_attention_forward(
          ctx,
          ptrs[0]!,
          ptrs[1]!,
          ptrs[2]!,
          ptrs[3]!,
          ptrs[4]!,
          cp,
          b,
          t,
          hq,
          hkv,
          d,
          0.3,
        );
      return [backward ? "arl_attention_backward" : "arl_attention_forward", st, e];
    },
    () => {
      const e = new Expect();
      const [n, sl, hkv, l, d] = [size(), size(), size(), size(), size()];
      const slots = ids(n, sl), pos = ids(n, l);
      const kc = maybe(caches[0]!),
        vc = maybe(caches[1]!),
        kk = IN(0),
        v = IN(1),
        sp = maybe(slots),
        pp = maybe(pos);
      [kc, vc, kk, v, sp, pp].forEach((q) => e.need(q));
      if (e.sizes(n, sl, hkv, l, d) && sp && pp) {
        e.value(!idsOk(slots, n, 0, sl - 1) || !idsOk(pos, n, 0, l - 1));
      }
      return [
        "arl_kv_cache_write",
        s.arl_kv_cache_write(ctx, kc, vc, kk, v, sp, pp, n, sl, hkv, l, d),
        e,
      ];
    },
    () => {
      const e = new Expect();
      const [n, sl, [hq, hkv], l, d] = [size(), size(), heads(), size(), size()];
      const slots = ids(n, sl), pos = ids(n, l);
      const eps = rng.chance(0.9) ? 1e-6 : -1;
      // q and k change in place (outputs); the norms and the table may be null (not used)
      const table = Float32Array.from({ length: Math.max(d, 1) }, () => rng.range(0, 1));
      const bad = d > 1 && rng.chance(0.2);
      if (bad) table[rng.int(0, Math.floor(d / 2) - 1)] = [NaN, -Infinity][rng.int(0, 1)]!;
      const tp = rng.chance(0.5) ? p(table) : null;
      const q = OUT(0), kk = OUT(1), kc = maybe(caches[0]!), vc = maybe(caches[1]!), v = IN(0);
      const sp = maybe(slots), pp = maybe(pos);
      [q, kk, kc, vc, v, sp, pp].forEach((x) => e.need(x));
      if (e.sizes(n, hq, sl, hkv, l, d)) {
        e.size(d % 2 !== 0);
        e.value(eps < 0);
        if (sp && pp) e.value(!idsOk(slots, n, 0, sl - 1) || !idsOk(pos, n, 0, l - 1));
        if (tp) e.value(bad);
      }
      const fn = s.arl_norm_rope_kv_cache_write!;
      const st = fn(
        ctx,
        q,
        kk,
        kc,
        vc,
        v,
        IN(1),
        rng.chance(0.5) ? IN(2) : null,
        tp,
        sp,
        pp,
        n,
        hq,
        sl,
        hkv,
        l,
        d,
        eps,
        10000,
      );
      return ["arl_norm_rope_kv_cache_write", st, e];
    },
    () => {
      const e = new Expect();
      const [n, sl, [hq, hkv], l, d] = [size(), size(), heads(), size(), size()];
      const slots = ids(n, sl), lens = Int32Array.from(ids(n, l), (x) => x + 1);
      const out = OUT(0),
        q = IN(0),
        kc = maybe(caches[0]!),
        vc = maybe(caches[1]!),
        sp = maybe(slots),
        lp = maybe(lens);
      [out, q, kc, vc, sp, lp].forEach((x) => e.need(x));
      if (e.sizes(n, sl, hq, hkv, l, d)) {
        e.size(hq % hkv !== 0);
        if (sp && lp) e.value(!idsOk(slots, n, 0, sl - 1) || !idsOk(lens, n, 1, l));
      }
      return [
        "arl_attention_decode",
        s.arl_attention_decode(ctx, out, q, kc, vc, sp, lp, n, sl, hq, hkv, l, d, 0.25),
        e,
      ];
    },
    () => {
      const e = new Expect();
      const [t, v, c] = [size(), size(), size()];
      const temp = rng.chance(0.9) ? rng.range(0.1, 2) : [0, -1, NaN, Infinity][rng.int(0, 3)]!;
      const tg = ids(t, v);
      const backward = rng.chance(0.4);
      const tp = maybe(tg), h = IN(0), w = IN(1);
      let st: number;
      if (!backward) {
        const logp = OUT(0), ent = rng.chance(0.3) ? null : OUT(1), lse = OUT(2);
        [logp, lse, tp, h, w].forEach((x) => e.need(x));
        if (e.sizes(t, v, c)) {
          e.value(!(temp > 0 && Number.isFinite(temp)) || (tp !== null && !idsOk(tg, t, 0, v - 1)));
        }
        st = s.arl_logprob_forward(ctx, logp, ent, lse, h, tp, w, t, v, c, temp);
      } else {
        const dh = OUT(0),
          dw = rng.chance(0.3) ? null : OUT(1),
          dlogp = IN(2),
          dent = rng.chance(0.5) ? null : IN(3);
        const lse = IN(4), ent = rng.chance(0.2) ? null : IN(5);
        [dh, dlogp, h, tp, w, lse].forEach((x) => e.need(x));
        if (dent !== null) e.need(ent);
        if (e.sizes(t, v, c)) {
          e.value(!(temp > 0 && Number.isFinite(temp)) || (tp !== null && !idsOk(tg, t, 0, v - 1)));
        }
        st = s.arl_logprob_backward(ctx, dh, dw, dlogp, dent, h, tp, w, lse, ent, t, v, c, temp);
      }
      return [backward ? "arl_logprob_backward" : "arl_logprob_forward", st, e];
    },
    () => {
      const e = new Expect();
      const [b, t] = [rng.int(-2, 8), size()];
      const cu = cuFor(b, t);
      const prm: RawPpoParams = {
        clipLow: rng.chance(0.95) ? 0.2 : [1, -0.1, NaN][rng.int(0, 2)]!,
        clipHigh: rng.chance(0.95) ? 0.28 : -0.5,
        dualClip: [0, 0, 3, 3, 0.5][rng.int(0, 4)]!,
        klCoef: rng.chance(0.5) ? 0 : 0.1,
        klKind: rng.chance(0.95) ? rng.int(0, 3) : [4, -1][rng.int(0, 1)]!,
        klClamp: rng.chance(0.5) ? 0 : 10,
        entropyCoef: rng.chance(0.5) ? 0 : 0.01,
        sftCoef: rng.chance(0.7) ? 0 : 0.1,
        aggMode: rng.chance(0.95) ? rng.int(0, 3) : [4, -1][rng.int(0, 1)]!,
        normLen: rng.chance(0.9) ? 16 : 0,
        ratioType: rng.chance(0.95) ? rng.int(0, 1) : [2, -1][rng.int(0, 1)]!,
      };
      const metrics = rng.chance(0.05) ? null : p(new Float32Array(12));
      const params = rng.chance(0.05) ? null : p(ppoParams(prm));
      const dlogp = OUT(0), dent = rng.chance(0.1) ? null : OUT(1);
      const logp = IN(0), old = IN(1), ref = rng.chance(0.1) ? null : IN(2), adv = IN(3);
      const { mask, bad: maskBad } = lossMask(t);
      const ent = rng.chance(0.1) ? null : IN(4),
        sft = rng.chance(0.1) ? null : IN(0),
        cp = maybe(cu);
      [metrics, dlogp, logp, old, adv, mask, cp, params].forEach((x) => e.need(x));
      if (params !== null) {
        if (prm.klCoef !== 0) e.need(ref);
        if (prm.entropyCoef !== 0) [ent, dent].forEach((x) => e.need(x));
        if (prm.sftCoef !== 0) e.need(sft);
      }
      if (e.sizes(b, t) && params !== null) {
        const cl = prm.clipLow!, ch = prm.clipHigh!, dc = prm.dualClip!;
        e.value(!(cl >= 0 && cl < 1) || !(ch >= 0) || (dc !== 0 && !(dc > 1)));
        e.value(prm.klKind! < 0 || prm.klKind! > 3); // rejected even when kl_coef = 0
        e.value(prm.ratioType! < 0 || prm.ratioType! > 1);
        e.value(prm.aggMode! < 0 || prm.aggMode! > 3 || (prm.aggMode === 3 && !(prm.normLen! > 0)));
        if (cp) e.value(!cuOk(cu, b, t));
        if (mask) e.value(maskBad);
      }
      if (params !== null && prm.klCoef === 0 && (prm.klKind! < 0 || prm.klKind! > 3)) {
        e.okToo = e.codes.size === 1;
      }
      const st = s.arl_ppo_loss(
        ctx,
        metrics,
        dlogp,
        dent,
        logp,
        old,
        ref,
        adv,
        ent,
        mask,
        sft,
        cp,
        b,
        t,
        params,
      );
      return ["arl_ppo_loss", st, e];
    },
    () => {
      const e = new Expect();
      const [b, t] = [rng.int(-2, 8), size()];
      const cu = cuFor(b, t);
      const clip = rng.chance(0.5) ? 0 : 0.2;
      const agg = rng.chance(0.9) ? rng.int(0, 3) : [4, -1, 99][rng.int(0, 2)]!;
      const norm = rng.chance(0.8) ? 8 : 0;
      const loss = rng.chance(0.05) ? null : p(new Float32Array(1)),
        cf = rng.chance(0.05) ? null : p(new Float32Array(1));
      const dv = OUT(0),
        v = IN(0),
        old = rng.chance(0.3) ? null : IN(1),
        ret = IN(2),
        cp = maybe(cu);
      const { mask, bad: maskBad } = lossMask(t);
      [loss, cf, dv, v, ret, mask, cp].forEach((x) => e.need(x));
      if (clip > 0) e.need(old);
      if (e.sizes(b, t)) {
        e.value(agg < 0 || agg > 3 || (agg === 3 && !(norm > 0)));
        if (cp) e.value(!cuOk(cu, b, t));
        if (mask) e.value(maskBad);
      }
      return [
        "arl_value_loss",
        s.arl_value_loss(ctx, loss, cf, dv, v, old, ret, mask, cp, b, t, clip, agg, norm),
        e,
      ];
    },
    () => {
      const e = new Expect();
      const [t, v] = [size(), size()];
      const kl = OUT(0),
        dl = rng.chance(0.5) ? null : OUT(1),
        z = IN(0),
        zr = IN(1),
        dkl = rng.chance(0.3) ? null : IN(2);
      [kl, z, zr].forEach((x) => e.need(x));
      if (dl !== null) e.need(dkl);
      e.sizes(t, v);
      return ["arl_kl_full", s.arl_kl_full(ctx, kl, dl, z, zr, dkl, t, v), e];
    },
    () => {
      const e = new Expect();
      const [n, v] = [size(), size()];
      const rows = Math.max(n, 1);
      const temps = Float32Array.from({ length: rows }, () => [0, 0.5, 1, 1.7][rng.int(0, 3)]!);
      const topP = Float32Array.from({ length: rows }, () => [1, 0.9, 0.3, 2][rng.int(0, 3)]!);
      if (rng.chance(0.15)) temps[rng.int(0, rows - 1)] = [-1, NaN, Infinity][rng.int(0, 2)]!;
      if (rng.chance(0.15)) topP[rng.int(0, rows - 1)] = [0, -0.5, NaN][rng.int(0, 2)]!;
      const topK = Int32Array.from({ length: rows }, () => rng.int(-3, 60));
      const seeds = BigUint64Array.from({ length: rows }, () => BigInt(rng.int(0, 2 ** 30)));
      const counters = BigUint64Array.from({ length: rows }, (_, i) => BigInt(i));
      const tokens = new Int32Array(rows);
      const ptrs = [
        maybe(tokens),
        maybe(inputs[0]!),
        maybe(temps),
        maybe(topK),
        maybe(topP),
        maybe(seeds),
        maybe(counters),
      ];
      ptrs.forEach((x) => e.need(x));
      if (e.sizes(n, v) && ptrs[2] && ptrs[4]) {
        const bad = Array.from(
          { length: n },
          (_, i) => !(temps[i]! >= 0 && Number.isFinite(temps[i]!)) || !(topP[i]! > 0),
        );
        e.value(bad.some((x) => x));
      }
      const lp = rng.chance(0.5) ? null : OUT(0);
      const st = s.arl_sample(
        ctx,
        ptrs[0]!,
        lp,
        ptrs[1]!,
        ptrs[2]!,
        ptrs[3]!,
        ptrs[4]!,
        ptrs[5]!,
        ptrs[6]!,
        n,
        v,
      );
      if (st === 0) {
        for (let i = 0; i < n; i++) {
          assert.ok(
            tokens[i]! >= 0 && tokens[i]! < v,
            `arl_sample returned token ${tokens[i]} for V = ${v}`,
          );
        }
      }
      return ["arl_sample", st, e];
    },
    () => {
      const e = new Expect();
      const n = BigInt(size());
      const step = rng.chance(0.9) ? rng.int(1, 100) : rng.int(-2, 0);
      const b1 = rng.chance(0.95) ? 0.9 : 1, lr = rng.chance(0.95) ? 1e-3 : -1;
      const prm = OUT(0), m = OUT(1), v = OUT(2), g = IN(0);
      [prm, m, v, g].forEach((x) => e.need(x));
      if (e.sizes(n)) e.value(step < 1 || b1 >= 1 || lr < 0);
      return [
        "arl_adamw",
        s.arl_adamw(ctx, prm, m, v, g, n, lr, b1, 0.999, 1e-8, 0.01, step, 1),
        e,
      ];
    },
  ];

  const seen = new Map<string, { ok: number; err: number }>();
  for (let iter = 0; iter < 5000; iter++) {
    const [name, status, e] = cases[rng.int(0, cases.length - 1)]!();
    const msg = lastError(k);
    assert.ok(
      e.accepts(status),
      `fuzz iteration ${iter}: ${name} returned ${status} ("${msg}"), expected ${
        e.codes.size === 0 ? "0" : [...e.codes].join(" or ")
      }`,
    );
    if (status !== 0) {
      assert.ok(msg.startsWith(`${name}: `), `${name}: status ${status} with message "${msg}"`);
    }
    const tally = seen.get(name) ?? { ok: 0, err: 0 };
    tally[status === 0 ? "ok" : "err"]++;
    seen.set(name, tally);
  }
  // Every entry point was exercised both ways.
  for (const [name, tally] of seen) {
    assert.ok(
      tally.ok > 5 && tally.err > 5,
      `${name}: ${tally.ok} successful and ${tally.err} failed calls`,
    );
  }
  assert.equal(seen.size, 21);
  assert.equal(inputSum(), before, "a kernel wrote into one of its const inputs");
});
