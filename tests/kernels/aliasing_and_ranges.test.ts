// Arguments that used to pass every check and then compute garbage or fail far from their cause:
// outputs over inputs (shifted views included), numbers a float32 cannot hold, bad sampling
// rows, and sizes and devices no allocation or library can take.
import assert from "node:assert/strict";
import {
  add,
  attentionDecode,
  embeddingBackward,
  embeddingForward,
  fill,
  Kernels,
  kvCacheWrite,
  lmHead,
  logprobForward,
  rmsnormForward,
  rmsnormLinearForward,
  rope,
  sample,
  scale,
  sumSquares,
  swigluForward,
  Tensor,
  toBf16,
  valueHeadForward,
  valueLoss,
} from "../../ffi/mod.ts";
import { parseQwen2Config } from "../../lib/model/hf_config.ts";
import { f32, i32, openKernels } from "./_helpers.ts";

Deno.test("outputs that overlap inputs are errors; in-place elementwise ops still run", () => {
  using k = openKernels();
  // lmHead into its own input: logits [2, 2] over h [2, 2]
  using h = f32(k, [1, 2, 3, 4], [2, 2]);
  using w = f32(k, [0, 1, 1, 0], [2, 2]);
  assert.throws(() => lmHead(k, h, h, w), /logits and h share memory/);
  using logits = new Tensor(k, [2, 2], "f32");
  lmHead(k, logits, h, w);
  assert.deepEqual([...logits.read()], [2, 1, 4, 3]);
  // embeddingForward into a view of the table it gathers from
  using wte = f32(k, [1, 2, 3, 4, 5, 6], [3, 2]);
  using tokens = i32(k, [2, 1]);
  const inTable = Tensor.viewOf(wte, 8, [2, 2]);
  assert.throws(() => embeddingForward(k, inTable, tokens, wte), /out and wte share memory/);
  assert.throws(() => embeddingBackward(k, wte, inTable, tokens), /dwte and dout share memory/);
  // the row-reading ops
  using rstd = new Tensor(k, [2], "f32");
  using nw = f32(k, [1, 1], [2]);
  assert.throws(() => rmsnormForward(k, h, rstd, h, nw, 1e-6), /out and x share memory/);
  using t = f32(k, [0.5, 0.5], [2]);
  using targets = i32(k, [0, 1]);
  assert.throws(
    () => logprobForward(k, { logp: t, lse: t }, h, targets, w),
    /logp and lse share memory/,
  );
  assert.throws(() => rmsnormLinearForward(k, h, h, nw, w, null, 1e-6), /y and x share memory/);
  using values = Tensor.viewOf(h, 8, [2]);
  assert.throws(() => valueHeadForward(k, values, h, nw, 0), /values and h share memory/);
  assert.throws(() => toBf16(k, Tensor.viewOf(h, 0, [2, 2], "bf16"), h), /out and x share/);
  // the KV cache and decode attention
  using cache = new Tensor(k, [1, 1, 4, 2], "f32");
  using vCache = new Tensor(k, [1, 1, 4, 2], "f32");
  const row0 = Tensor.viewOf(cache, 0, [1, 1, 2]);
  using slot = i32(k, [0]);
  assert.throws(
    () => kvCacheWrite(k, cache, vCache, row0, row0, slot, slot),
    /kCache and k share memory/,
  );
  assert.throws(
    () => attentionDecode(k, row0, Tensor.viewOf(vCache, 0, [1, 1, 2]), cache, vCache, slot, slot),
    /out and kCache share memory/,
  );
  // elementwise ops: the same tensor is fine (in place), a shifted view is not
  using a = f32(k, [1, 2, 3, 4]);
  using b = f32(k, [10, 20, 30, 40]);
  add(k, a, a, b);
  assert.deepEqual([...a.read()], [11, 22, 33, 44]);
  using long = f32(k, [1, 2, 3, 4, 5]);
  const [head, tail] = [Tensor.viewOf(long, 0, [4]), Tensor.viewOf(long, 4, [4])];
  assert.throws(() => add(k, tail, head, b), /out and a partly share memory/);
  assert.throws(() => swigluForward(k, tail, head, b), /out and gate partly share memory/);
  using q = f32(k, [1, 0, 0, 1], [1, 2, 2]);
  using pos = i32(k, [1]);
  rope(k, q, q, pos, 10000); // in place, as the model runs it
  using q5 = f32(k, [1, 0, 0, 1, 0]);
  const [q0, q1] = [Tensor.viewOf(q5, 0, [1, 2, 2]), Tensor.viewOf(q5, 4, [1, 2, 2])];
  assert.throws(() => rope(k, q1, q0, pos, 10000), /out and x partly share memory/);
});

Deno.test("numbers past a float32's normal range, and bad sampling rows, are clear errors", () => {
  using k = openKernels();
  using h = f32(k, [1, 2, 3, 4], [2, 2]);
  using w = f32(k, [0, 1, 1, 0], [2, 2]);
  using logp = new Tensor(k, [2], "f32");
  using lse = new Tensor(k, [2], "f32");
  using targets = i32(k, [0, 1]);
  // 1e-45 is a float32 (a subnormal) whose reciprocal is Infinity: it gave NaN log-probs
  assert.throws(
    () => logprobForward(k, { logp, lse }, h, targets, w, 1e-45),
    /temperature must be a positive number in 1\.2e-38\.\.3\.4e38, got 1e-45 \(the kernels divide/,
  );
  logprobForward(k, { logp, lse }, h, targets, w, 1e-30);
  assert.ok(logp.read().every(Number.isFinite));
  // scalars the kernels only multiply by may be tiny: gradient clipping's factor at a huge norm
  using g = f32(k, [3e38, 1]);
  scale(k, g, 3.3e-39);
  assert.ok(g.read()[0]! > 0.9 && g.read()[0]! < 1.1, `${g.read()}`);
  // fill takes NaN and the infinities, not a finite value that would become one
  assert.throws(() => fill(k, h, 1e39), /value must be a number a float32 holds .*got 1e\+39/);
  assert.throws(() => fill(k, h, "x" as unknown as number), /value must be a number a float32/);
  fill(k, g, -Infinity);
  assert.deepEqual([...g.read()], [-Infinity, -Infinity]);
  // a missing tensor is named, not read
  const none = undefined as unknown as Tensor;
  for (
    const [what, fn] of [
      ["scale", () => scale(k, none, 2)],
      ["sumSquares", () => sumSquares(k, none)],
      ["fill", () => fill(k, none, 0)],
      ["swigluForward", () => swigluForward(k, h, none, h)],
    ] as const
  ) assert.throws(fn, /must be a Tensor/, what);
  // sampling rows
  using logits = f32(k, [0, 1, 2], [1, 3]);
  const row = { temperature: 1, seed: 1, counter: 0 };
  const bad: [unknown, RegExp][] = [
    [{ ...row, seed: 1.5 }, /row 0: seed must be an integer .*got 1\.5/],
    [{ temperature: 1, counter: 0 }, /row 0: seed must be an integer .*got undefined/],
    [{ ...row, counter: NaN }, /row 0: counter must be an integer/],
    [null, /row 0 must be an object with temperature, seed and counter/],
    [{ ...row, temperature: 1e39 }, /row 0: temperature must be a number in \[0, 3\.4e38\]/],
    [{ ...row, temperature: -1 }, /row 0: temperature must be a number in \[0, 3\.4e38\]/],
    [{ ...row, topP: NaN }, /row 0: topP must be a number/],
  ];
  for (const [r, pattern] of bad) {
    assert.throws(() => sample(k, logits, [r as typeof row]), pattern, String(pattern));
  }
  assert.equal(sample(k, logits, [{ ...row, seed: 2n ** 70n, counter: -1 }]).tokens.length, 1);
  // a temperature too small for its reciprocal samples greedily, as the engine's requests allow
  assert.deepEqual([...sample(k, logits, [{ ...row, temperature: 1e-45 }]).tokens], [2]);
  // a loss over no sequences names cuSeqlens
  using v1 = f32(k, [0.5, 0.5]);
  using dv = new Tensor(k, [2], "f32");
  using cu = i32(k, [2]);
  assert.throws(
    () => valueLoss(k, dv, { values: v1, returns: v1, mask: v1, cuSeqlens: cu }),
    /cuSeqlens must hold B \+ 1 offsets for B >= 1 sequences \(0 first\), got 1 offset/,
  );
});

Deno.test("config numbers a float32 cannot hold name their key; sizes and devices no one can take", () => {
  const base = {
    model_type: "qwen2",
    vocab_size: 32,
    hidden_size: 16,
    intermediate_size: 32,
    num_hidden_layers: 1,
    num_attention_heads: 4,
  };
  for (const [key, value] of [["rms_norm_eps", 1e-50], ["rope_theta", 1e39]] as const) {
    assert.throws(
      () => parseQwen2Config({ ...base, [key]: value }, "config.json"),
      new RegExp(
        `config.json: ${key} is ${String(value).replace("+", "\\+")}; expected a positive`,
      ),
    );
  }
  assert.equal(parseQwen2Config({ ...base, rms_norm_eps: 1e-30 }, "c").rms_norm_eps, 1e-30);
  using k = openKernels();
  // too large for any allocation: said before the library is asked, with the shape
  assert.throws(
    () => new Tensor(k, [2 ** 20, 2 ** 21], "f32"),
    /Tensor of shape \[1048576, 2097152\] \(f32\) needs 8796093022208 bytes, more than the 2\^42/,
  );
  assert.throws(
    () => Kernels.open({ device: "tpu" as "cpu" }),
    /Unknown device "tpu": expected "cpu" or "cuda"/,
  );
});
