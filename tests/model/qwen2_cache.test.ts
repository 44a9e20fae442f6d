// Generation through the KV cache: greedy decoding with forwardCached (several
// sequences in one cached batch, chunked prefill mixed with decode steps,
// slots reused) gives the same tokens, and the same logits within float32
// rounding, as recomputing the full forward pass of the growing sequence at
// every step. Token ids already on the device (a sampling's) run as host ids do.
import assert from "node:assert/strict";
import { Kernels, type PendingSample, sample, sampleStart, Tensor } from "../../ffi/mod.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { Qwen2KvCache } from "../../lib/model/qwen2_kv_cache.ts";
import { assertClose, Rng } from "../kernels/_helpers.ts";
import { LLAMA3_SMALL, randomizeParams, tinyConfig, YARN_SMALL } from "./_qwen2_reference.ts";

/**
 * Greedy choice over x[from..to): the argmax, skipping `banned` (the previous
 * token: a random model otherwise locks onto repeating one token, and the
 * cache would only ever hold copies of it).
 */
function argmax(x: ArrayLike<number>, from: number, to: number, banned = -1): number {
  let best = -1;
  for (let i = from; i < to; i++) {
    if (i - from === banned) continue;
    if (best < 0 || x[i]! > x[best]!) best = i;
  }
  return best - from;
}

/** Logits of the last token of `seq`, recomputed by the full (uncached) forward pass. */
function fullLogits(model: Qwen2Model, seq: number[]): Float32Array {
  const n = seq.length;
  return model.forwardLogits(
    Int32Array.from(seq),
    Int32Array.from({ length: n }, (_, i) => i),
    new Int32Array([0, n]),
    new Int32Array([n - 1]),
  ).toArray();
}

/** One cached call: entries (sequence, position) in call order; logits of the rows asked. */
interface Entry {
  seq: number;
  pos: number;
  logits: boolean;
}

Deno.test("qwen2 forwardCached: greedy generation equals full recomputation (3 sequences, chunked prefill, mixed steps; Qwen3, scaled RoPE and YaRN too)", () => {
  using k = Kernels.open({ threads: 2 });
  for (const tie of [false, true, "qwen3", "llama3 rope", "yarn"] as const) {
    const cfg = tinyConfig({ tie_word_embeddings: tie !== false, vocab_size: 64 });
    if (tie === "qwen3") Object.assign(cfg, { model_type: "qwen3", attention_bias: false });
    if (tie === "llama3 rope") {
      Object.assign(cfg, {
        model_type: "llama",
        attention_bias: false,
        rope_scaling: LLAMA3_SMALL,
      });
    }
    if (tie === "yarn") Object.assign(cfg, { rope_scaling: YARN_SMALL });
    using model = new Qwen2Model(k, cfg);
    randomizeParams(model, `cache ${tie}`);
    const rng = new Rng(`cache ${tie}`);
    const promptLens = [5, 2, 7];
    const seqs = promptLens.map((n) => Array.from(rng.ints(n, 0, cfg.vocab_size - 1)));
    const slotOf = [2, 0, 3]; // not the identity, one slot unused
    const newTokens = 6;
    using cache = model.createKvCache(4, 24);
    assert.deepEqual(cache.k[1]!.shape, [4, 2, 24, 8]);
    const generated: number[][] = [[], [], []];
    // cached positions per sequence (the next position to run)
    const done = [0, 0, 0];

    const run = (entries: Entry[]) => {
      const tokens = new Int32Array(entries.length);
      const positions = new Int32Array(entries.length);
      const slots = new Int32Array(entries.length);
      const rows: number[] = [];
      entries.forEach((e, i) => {
        tokens[i] = seqs[e.seq]![e.pos]!;
        positions[i] = e.pos;
        slots[i] = slotOf[e.seq]!;
        if (e.logits) rows.push(i);
        done[e.seq] = e.pos + 1;
      });
      const logits = model.forwardCached(cache, tokens, positions, slots, Int32Array.from(rows));
      if (logits === null) {
        assert.equal(rows.length, 0);
        return;
      }
      const z = logits.toArray();
      const v = cfg.vocab_size;
      rows.forEach((row, r) => {
        const e = entries[row]!;
        assert.equal(e.pos, seqs[e.seq]!.length - 1, "logits are asked for the last token only");
        const ref = fullLogits(model, seqs[e.seq]!);
        assertClose(z.subarray(r * v, (r + 1) * v), ref, `tied=${tie} seq ${e.seq} at ${e.pos}`, {
          atol: 1e-4,
          rtol: 1e-4,
        });
        const last = seqs[e.seq]![e.pos]!;
        const next = argmax(z, r * v, (r + 1) * v, last);
        assert.equal(
          next,
          argmax(ref, 0, v, last),
          `tied=${tie} seq ${e.seq}: greedy token differs`,
        );
        generated[e.seq]!.push(next);
        seqs[e.seq]!.push(next);
      });
    };

    // 1. prefill: sequences 0 and 1 whole, sequence 2's first 4 tokens (no logits for it yet),
    //    interleaved in one call
    run([
      ...[0, 1, 2, 3].map((pos) => ({ seq: 2, pos, logits: false })),
      ...[0, 1, 2, 3, 4].map((pos) => ({ seq: 0, pos, logits: pos === 4 })),
      ...[0, 1].map((pos) => ({ seq: 1, pos, logits: pos === 1 })),
    ]);
    // 2. sequence 2's last 3 prompt tokens together with decode steps of 0 and 1
    run([
      { seq: 0, pos: 5, logits: true },
      ...[4, 5, 6].map((pos) => ({ seq: 2, pos, logits: pos === 6 })),
      { seq: 1, pos: 2, logits: true },
    ]);
    // 3. plain decode steps: one token per sequence until each has newTokens
    while (generated.some((g) => g.length < newTokens)) {
      const entries: Entry[] = [];
      for (const s of [1, 2, 0]) {
        if (generated[s]!.length < newTokens) entries.push({ seq: s, pos: done[s]!, logits: true });
      }
      run(entries);
    }
    assert.deepEqual(generated.map((g) => g.length), [newTokens, newTokens, newTokens]);
    // the runs are not degenerate: the sequences did not all produce one repeated token
    assert.ok(new Set(generated.flat()).size >= 6, `generated ${JSON.stringify(generated)}`);

    // 4. a slot reused by a new sequence: its old positions beyond the new length are ignored
    const fresh = Array.from(rng.ints(3, 0, cfg.vocab_size - 1));
    const z = model.forwardCached(
      cache,
      Int32Array.from(fresh),
      new Int32Array([0, 1, 2]),
      new Int32Array([3, 3, 3]),
      new Int32Array([0, 1, 2]),
    )!.toArray();
    for (let i = 0; i < 3; i++) {
      const ref = fullLogits(model, fresh.slice(0, i + 1));
      assertClose(
        z.subarray(i * cfg.vocab_size, (i + 1) * cfg.vocab_size),
        ref,
        `reused slot row ${i}`,
        {
          atol: 1e-4,
          rtol: 1e-4,
        },
      );
    }
  }
});

Deno.test("qwen2 forwardCached rejects bad slots, positions and caches", () => {
  using k = Kernels.open({ threads: 2 });
  const cfg = tinyConfig();
  using model = new Qwen2Model(k, cfg);
  using cache = model.createKvCache(2, 8);
  const one = (x: number) => new Int32Array([x]);
  assert.equal(model.forwardCached(cache, one(1), one(0), one(0), new Int32Array(0)), null);
  assert.throws(
    () => model.forwardCached(cache, one(1), one(8), one(0), one(0)),
    /positions\[0\] = 8 is outside the cache's 0..7/,
  );
  assert.throws(
    () => model.forwardCached(cache, one(1), one(0), one(2), one(0)),
    /slots\[0\] = 2 is outside the cache's 0..1/,
  );
  assert.throws(
    () => model.forwardCached(cache, one(1), one(0), one(0), one(1)),
    /rows\[0\] = 1 is outside 0..0/,
  );
  assert.throws(
    () => model.forwardCached(cache, one(1), new Int32Array(2), one(0), one(0)),
    /positions must have 1 entries/,
  );
  assert.throws(
    () => model.forwardCached(cache, one(99), one(0), one(0), one(0)),
    /tokens\[0\] = 99 is outside the vocabulary 0\.\.47/,
  );
  assert.throws(
    () =>
      model.forwardCached(cache, new Int32Array(2), new Int32Array(2), new Int32Array(2), one(0)),
    /slot 0 position 0 appears twice among the new tokens/,
  );
  using other = new Qwen2KvCache(k, {
    numLayers: 3,
    numKvHeads: 2,
    headDim: 8,
    numSlots: 2,
    maxLen: 8,
  });
  assert.throws(() => model.forwardCached(other, one(1), one(0), one(0), one(0)), /another shape/);
  cache.free();
  assert.ok(!cache.k[0]!.alive);
  assert.throws(
    () => model.forwardCached(cache, one(1), one(0), one(0), one(0)),
    /live Qwen2KvCache/,
  );
  assert.throws(() => model.createKvCache(0, 8), /numSlots must be a positive integer/);
});

Deno.test("qwen2 forwardCached: decode steps keep their workspace views until it is freed or grows", () => {
  using k = Kernels.open({ threads: 2 });
  const cfg = tinyConfig({ vocab_size: 64 });
  using model = new Qwen2Model(k, cfg);
  randomizeParams(model, "views");
  const seq = Array.from(new Rng("views").ints(4, 0, cfg.vocab_size - 1));
  using cache = model.createKvCache(1, 16);
  const step = (pos: number) => {
    const logits = model.forwardCached(
      cache,
      Int32Array.of(seq[pos]!),
      Int32Array.of(pos),
      Int32Array.of(0),
      Int32Array.of(0),
    )!.toArray();
    assertClose(logits, fullLogits(model, seq.slice(0, pos + 1)), `position ${pos}`, {
      rtol: 1e-4,
      atol: 1e-5,
    });
  };
  step(0);
  step(1); // the views of the step before
  model.releaseWorkspaces(); // the decode buffer freed: the views are made again
  step(2);
  model.forwardCached( // a longer call grows the buffer (nothing asked back)
    cache,
    Int32Array.from(seq.slice(0, 3)),
    Int32Array.of(0, 1, 2),
    Int32Array.of(0, 0, 0),
    new Int32Array(0),
  );
  step(3);
});

Deno.test("qwen2: token ids outside the vocabulary are errors before any kernel runs", () => {
  using k = Kernels.open({ threads: 2 });
  const cfg = tinyConfig({ vocab_size: 64 });
  using model = new Qwen2Model(k, cfg);
  using cache = model.createKvCache(1, 8);
  const one = (v: number) => Int32Array.of(v);
  assert.throws(
    () =>
      model.forwardCached(
        cache,
        Int32Array.of(3, 64),
        Int32Array.of(0, 1),
        Int32Array.of(0, 0),
        one(0),
      ),
    /tokens\[1\] = 64 is outside the vocabulary 0\.\.63/,
  );
  assert.throws(
    () => model.forwardCached(cache, one(-2), one(0), one(0), one(0)),
    /tokens\[0\] = -2 is outside the vocabulary 0\.\.63/,
  );
  assert.throws(
    () =>
      model.forwardLogits(Int32Array.of(1, 99), Int32Array.of(0, 1), Int32Array.of(0, 2), one(1)),
    /tokens\[1\] = 99 is outside the vocabulary 0\.\.63/,
  );
});

Deno.test("qwen2 forwardCached: AGENTRL_DECODE_KEEP_PLACEMENT=1 (a benchmark's diagnostic) keeps a device-ids step's placement", () => {
  using k = Kernels.open({ threads: 1 });
  const cfg = tinyConfig({ vocab_size: 64 });
  /** Layer 0's cached keys at positions 4 and 5 (slot 0) after two device-ids steps there. */
  const keysAfterTwoSteps = (keep: boolean) => {
    Deno.env.set("AGENTRL_DECODE_KEEP_PLACEMENT", keep ? "1" : "0");
    let model: Qwen2Model;
    try {
      model = new Qwen2Model(k, cfg); // (the switch is read here)
    } finally {
      Deno.env.delete("AGENTRL_DECODE_KEEP_PLACEMENT");
    }
    using _model = model;
    randomizeParams(model, "keep placement");
    using cache = model.createKvCache(1, 8);
    const one = (v: number) => Int32Array.of(v);
    const prefill = model.forwardCached(
      cache,
      Int32Array.of(1, 2, 3, 4),
      Int32Array.of(0, 1, 2, 3),
      new Int32Array(4),
      one(3),
    )!;
    using ids = new Tensor(k, [1], "i32");
    sampleStart(k, prefill, [{ temperature: 0, seed: 0, counter: 0 }], ids).wait();
    const before = cache.k[0]!.toArray().slice();
    for (const pos of [4, 5]) model.forwardCached(cache, ids, one(pos), one(0), one(0));
    const after = cache.k[0]!.toArray();
    const row = (a: Float32Array, p: number) => { // (slot 0, kv head 0: [slots, hkv, len, d])
      const d = cfg.head_dim ?? cfg.hidden_size / cfg.num_attention_heads;
      return Array.from(a.slice(p * d, (p + 1) * d));
    };
    return { at4: row(after, 4), at5: row(after, 5), was5: row(before, 5) };
  };
  const plain = keysAfterTwoSteps(false);
  assert.notDeepEqual(plain.at5, plain.was5, "the second step writes position 5");
  const kept = keysAfterTwoSteps(true);
  assert.deepEqual(kept.at5, kept.was5, "with the switch both steps write position 4");
  assert.deepEqual(kept.at4, plain.at4); // (the first step's placement is uploaded)
});

Deno.test("qwen2 forwardCached: token ids on the device (sampleStart's) run as host ids do, pipelined", () => {
  using k = Kernels.open({ threads: 2 });
  const cfg = tinyConfig({ vocab_size: 64 });
  using model = new Qwen2Model(k, cfg);
  randomizeParams(model, "device ids");
  const b = 3, prompt = 4, steps = 5;
  const prompts = Array.from(new Rng("device ids").ints(b * prompt, 0, cfg.vocab_size - 1));
  const rows = Array.from({ length: b }, (_, s) => ({ temperature: 0.9, seed: s, counter: 0 }));
  const at = (step: number) => rows.map((r) => ({ ...r, counter: step }));
  const slots = Int32Array.from({ length: b }, (_, s) => s);
  /** Generates `steps` tokens a sequence; pipelined: ids from the device, one step ahead. */
  const generate = (pipelined: boolean) => {
    using cache = model.createKvCache(b, prompt + steps);
    const prefill = model.forwardCached(
      cache,
      Int32Array.from(prompts),
      Int32Array.from({ length: b * prompt }, (_, i) => i % prompt),
      Int32Array.from({ length: b * prompt }, (_, i) => Math.floor(i / prompt)),
      Int32Array.from({ length: b }, (_, s) => s * prompt + prompt - 1),
    )!;
    using idsA = new Tensor(k, [b], "i32");
    using idsB = new Tensor(k, [b], "i32");
    const ids = [idsA, idsB];
    const out: number[][] = Array.from({ length: b }, () => []);
    const logps: number[] = [];
    const take = (s: { tokens: Int32Array; logprobs: Float32Array }) => {
      s.tokens.forEach((t, i) => out[i]!.push(t));
      logps.push(...s.logprobs);
      return s.tokens;
    };
    let next = take(sampleStart(k, prefill, at(0), ids[0]!).wait());
    let pending: PendingSample | null = null;
    for (let step = 1; step <= steps - 1; step++) {
      const pos = new Int32Array(b).fill(prompt + step - 1);
      if (!pipelined) {
        next = take(sample(k, model.forwardCached(cache, next, pos, slots, slots)!, at(step)));
        continue;
      }
      const logits = model.forwardCached(cache, ids[(step - 1) % 2]!, pos, slots, slots)!;
      const queued = sampleStart(k, logits, at(step), ids[step % 2]!);
      if (pending !== null) take(pending.wait());
      pending = queued;
    }
    if (pending !== null) take(pending.wait());
    return { out, logps };
  };
  const waiting = generate(false);
  const pipelined = generate(true);
  assert.deepEqual(pipelined.out, waiting.out);
  assert.deepEqual(pipelined.logps, waiting.logps);
  assert.ok(new Set(waiting.out.flat()).size > 3, "the sampled tokens vary");

  using cache = model.createKvCache(1, 8);
  using wrong = new Tensor(k, [2], "i32");
  const one = (v: number) => Int32Array.of(v);
  assert.throws(
    () => model.forwardCached(cache, wrong, one(0), one(0), one(0)),
    /tokens must have shape \[1\], got \[2\]/,
  );
  using bad = Tensor.from(k, Int32Array.of(64), [1]);
  assert.throws( // the CPU library's embedding checks ids on the device
    () => model.forwardCached(cache, bad, one(0), one(0), one(0)),
    /arl_embedding_forward.*64/,
  );
});
