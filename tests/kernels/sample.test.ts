// Sampling: greedy is the argmax; with temperature / top-k / top-p the
// empirical distribution over many counters matches the target distribution
// (Pearson chi-square, fixed seeds so the test is deterministic, rejecting at
// p < 1e-6), draws never leave the top-k set or the nucleus, log-probs are the
// full-vocabulary log-softmax, and results depend only on (seed, counter, row):
// not on the thread count nor on the rest of the batch. Samplings queued with sampleStart
// give the same results, whatever order they are read in.
import assert from "node:assert/strict";
import { sample, type SampleRow, sampleStart, Tensor } from "../../ffi/mod.ts";
import type { Kernels } from "../../ffi/mod.ts";
import { assertClose, f32, openKernels, Rng } from "./_helpers.ts";
import { argmaxRef, chiSquareTest, logSoftmaxRef, sampleDistRef } from "./_reference.ts";

const P_REJECT = 1e-6;

function draw(k: Kernels, row: Float32Array, n: number, settings: Omit<SampleRow, "counter">) {
  const v = row.length;
  const logits = new Float32Array(n * v);
  for (let i = 0; i < n; i++) logits.set(row, i * v);
  using t = f32(k, logits, [n, v]);
  const rows = Array.from({ length: n }, (_, i) => ({ ...settings, counter: i }));
  return sample(k, t, rows);
}

Deno.test("greedy (temperature 0) returns the first argmax and the log-softmax of the raw logits", () => {
  using k = openKernels();
  const rng = new Rng("greedy");
  const [n, v] = [50, 37];
  const logits = rng.randn(n * v, 2);
  logits[3 * v + 5] = 9; // a tie at the maximum: the lower id wins
  logits[3 * v + 20] = 9;
  using t = f32(k, logits, [n, v]);
  const rows = Array.from(
    { length: n },
    (_, i) => ({
      temperature: 0,
      topK: i % 3 === 1 ? 3 : 0,
      topP: i % 3 === 2 ? 0.5 : 1,
      seed: i,
      counter: 7,
    }),
  );
  const { tokens, logprobs } = sample(k, t, rows);
  for (let i = 0; i < n; i++) {
    const row = logits.subarray(i * v, (i + 1) * v);
    assert.equal(tokens[i], argmaxRef(row), `row ${i}`);
    assert.ok(
      Math.abs(logprobs[i]! - logSoftmaxRef(row, tokens[i]!, 0)) < 1e-5,
      `row ${i} logprob`,
    );
  }
  assert.equal(tokens[3], 5);
  // Sampling with top-k = 1 is the argmax too, whatever the counter.
  const topOne = sample(
    k,
    t,
    rows.map((r, i) => ({ ...r, temperature: 1.5, topK: 1, topP: 1, counter: i * 7919 })),
  );
  for (let i = 0; i < n; i++) {
    assert.equal(
      topOne.tokens[i],
      argmaxRef(logits.subarray(i * v, (i + 1) * v)),
      `top-k 1 row ${i}`,
    );
  }
});

interface DistCase {
  name: string;
  v: number;
  temperature: number;
  topK?: number;
  topP?: number;
  /** A wrong distribution the same draws must reject (shows the test can fail). */
  wrong: { temperature: number; topK?: number; topP?: number };
  /** Fixed logits (else random) and the candidate set worked out by hand. */
  row?: number[];
  support?: number[];
}

// p = [0.4, 0.2, 0.1, 0.09, 0.08, 0.07, 0.04, 0.02] as logits ln p.
// top-p 0.65 alone: cumulative 0.4, 0.6, 0.7 >= 0.65, so the nucleus is {0, 1, 2}.
// top-k 3 then top-p 0.75: the top 3 renormalized are 4/7, 2/7, 1/7 with cumulative
// 0.571, 0.857 >= 0.75, so {0, 1} (without renormalizing, 0.4, 0.6, 0.7 < 0.75 would keep 3).
const HAND = [0.4, 0.2, 0.1, 0.09, 0.08, 0.07, 0.04, 0.02].map(Math.log);

const DIST_CASES: DistCase[] = [
  { name: "temperature 1", v: 12, temperature: 1, wrong: { temperature: 1.3 } },
  { name: "temperature 0.6", v: 12, temperature: 0.6, wrong: { temperature: 1 } },
  {
    name: "temperature 1.5 top-k 5",
    v: 16,
    temperature: 1.5,
    topK: 5,
    wrong: { temperature: 1.5 },
  },
  { name: "top-p 0.8", v: 16, temperature: 1, topP: 0.8, wrong: { temperature: 1 } },
  {
    // v > 32 k: the library's heap selection (the cases above take its select-and-sort)
    name: "temperature 1.2 top-k 4 of 200",
    v: 200,
    temperature: 1.2,
    topK: 4,
    wrong: { temperature: 1.2, topK: 5 },
  },
  {
    name: "temperature 0.8 top-k 6 top-p 0.7",
    v: 20,
    temperature: 0.8,
    topK: 6,
    topP: 0.7,
    wrong: { temperature: 0.8, topK: 6 },
  },
  {
    name: "temperature 2 top-k >= V (off)",
    v: 9,
    temperature: 2,
    topK: 100,
    wrong: { temperature: 2, topK: 4 },
  },
  {
    name: "hand row top-p 0.65",
    v: 8,
    temperature: 1,
    topP: 0.65,
    wrong: { temperature: 1, topP: 0.5 },
    row: HAND,
    support: [0, 1, 2],
  },
  {
    name: "hand row top-k 3 top-p 0.75",
    v: 8,
    temperature: 1,
    topK: 3,
    topP: 0.75,
    wrong: { temperature: 1, topK: 3 },
    row: HAND,
    support: [0, 1],
  },
];

/** Logits whose top-p cut is unambiguous (no cumulative mass within 1e-3 of top_p). */
function logitsFor(rng: Rng, c: DistCase): Float32Array {
  if (c.row) return Float32Array.from(c.row);
  for (;;) {
    const row = rng.randn(c.v, 1.2);
    if (c.topP === undefined) return row;
    const p = sampleDistRef(row, c.temperature, c.topK ?? 0, 1);
    const sorted = [...p].filter((x) => x > 0).sort((a, b) => b - a);
    let acc = 0, ok = true;
    for (const x of sorted) {
      acc += x;
      if (Math.abs(acc - c.topP) < 1e-3) ok = false;
    }
    // at least 3 tokens in the nucleus, so there is a distribution to test
    if (
      ok && sampleDistRef(row, c.temperature, c.topK ?? 0, c.topP).filter((x) => x > 0).length >= 3
    ) return row;
  }
}

Deno.test("sampling matches the target distribution (chi-square), stays in the top-k / nucleus, logprobs are full log-softmax", () => {
  using k = openKernels();
  const rng = new Rng("sample-dist");
  const n = 20000;
  DIST_CASES.forEach((c, ci) => {
    const row = logitsFor(rng, c);
    const settings = {
      temperature: c.temperature,
      topK: c.topK ?? 0,
      topP: c.topP ?? 1,
      seed: 1000 + ci,
    };
    const { tokens, logprobs } = draw(k, row, n, settings);
    const probs = sampleDistRef(row, c.temperature, c.topK ?? 0, c.topP ?? 1);
    const counts = new Float64Array(c.v);
    for (const tok of tokens) {
      assert.ok(tok >= 0 && tok < c.v, `${c.name}: token ${tok} out of range`);
      counts[tok]!++;
    }
    // Never outside the candidate set (top-k, nucleus).
    const support = new Set([...probs].flatMap((p, j) => (p > 0 ? [j] : [])));
    for (let j = 0; j < c.v; j++) {
      if (!support.has(j)) {
        assert.equal(
          counts[j],
          0,
          `${c.name}: token ${j} is outside the candidates but was drawn ${counts[j]} times`,
        );
      }
    }
    if (c.topK !== undefined && c.topK < c.v) assert.ok(support.size <= c.topK);
    if (c.support) {
      assert.deepEqual([...support], c.support, `${c.name}: the reference's candidates`);
      assert.deepEqual([...new Set(tokens)].sort(), c.support, `${c.name}: the drawn tokens`);
    }
    const test = chiSquareTest(counts, probs);
    assert.ok(
      test.p > P_REJECT,
      `${c.name}: chi-square ${test.stat.toFixed(1)} on ${test.df} df, p = ${
        test.p.toExponential(2)
      }`,
    );
    // The same draws against a wrong distribution are rejected: the test has power.
    const wrong = sampleDistRef(row, c.wrong.temperature, c.wrong.topK ?? 0, c.wrong.topP ?? 1);
    const bad = chiSquareTest(counts, wrong);
    assert.ok(
      bad.p < P_REJECT,
      `${c.name}: the wrong distribution was not rejected (p = ${bad.p})`,
    );
    // logprobs: log softmax(logits / T) of the chosen token over the full vocabulary.
    const expLp = Array.from(tokens, (tok) => logSoftmaxRef(row, tok, c.temperature));
    assertClose(logprobs, expLp, `${c.name} logprobs`, { atol: 2e-6, rtol: 1e-6 });
  });
});

Deno.test("sampling depends only on (seed, counter, row): same at 1 and 2 threads and whatever the batch", () => {
  using k = openKernels();
  const rng = new Rng("sample-determinism");
  const [n, v] = [3000, 50]; // n * v above the threaded threshold
  const logits = rng.randn(n * v, 1.5);
  const rows: SampleRow[] = Array.from({ length: n }, (_, i) => ({
    temperature: [0, 0.7, 1, 1.3][i % 4]!,
    topK: [0, 5, 0, 40][(i >> 2) % 4]!,
    topP: [1, 0.9, 0.5][i % 3]!,
    seed: BigInt(rng.int(0, 2 ** 30)) * 0x100000001n,
    counter: BigInt(i) + (i % 2 === 0 ? 2n ** 60n : 0n),
  }));
  using t = f32(k, logits, [n, v]);
  k.threads = 1;
  const one = sample(k, t, rows);
  k.threads = 2;
  const two = sample(k, t, rows);
  assert.equal(k.threads, 2);
  assert.deepEqual(two.tokens, one.tokens, "tokens differ between 1 and 2 threads");
  assert.deepEqual(two.logprobs, one.logprobs, "logprobs differ between 1 and 2 threads");
  // Draws are not all the same token (the stream and the rows matter).
  assert.ok(new Set(one.tokens).size > 10);
  // Each row alone equals the same row inside the batch.
  for (const i of [0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2999]) {
    using alone = f32(k, logits.subarray(i * v, (i + 1) * v), [1, v]);
    const r = sample(k, alone, [rows[i]!]);
    assert.equal(r.tokens[0], one.tokens[i], `row ${i} alone`);
    assert.equal(r.logprobs[0], one.logprobs[i], `row ${i} alone logprob`);
  }
  // A reversed batch gives the reversed results.
  const rev = new Float32Array(n * v);
  for (let i = 0; i < n; i++) rev.set(logits.subarray(i * v, (i + 1) * v), (n - 1 - i) * v);
  using tr = f32(k, rev, [n, v]);
  const back = sample(k, tr, [...rows].reverse());
  assert.deepEqual(
    [...back.tokens].reverse(),
    [...one.tokens],
    "a reversed batch changed the draws",
  );
});

Deno.test("sampling: the counter and the seed select different draws, and the same pair repeats", () => {
  using k = openKernels();
  const row = Float32Array.from({ length: 64 }, () => 0); // uniform over 64 tokens
  const settings = { temperature: 1, topK: 0, topP: 1, seed: 42 };
  const a = draw(k, row, 256, settings).tokens;
  const again = draw(k, row, 256, settings).tokens;
  assert.deepEqual(again, a);
  const other = draw(k, row, 256, { ...settings, seed: 43 }).tokens;
  const same = a.filter((x, i) => x === other[i]).length;
  // Independent uniform draws over 64 tokens agree ~4 times in 256; identical streams would agree 256 times.
  assert.ok(same < 30, `seeds 42 and 43 agree on ${same} of 256 draws`);
  // Neighbouring counters are independent draws too (~4 agreements in 255).
  const adjacent = a.filter((x, i) => i > 0 && x === a[i - 1]).length;
  assert.ok(adjacent < 30, `counters i and i + 1 agree on ${adjacent} of 255 draws`);
  assert.ok(new Set(a).size > 40, "256 counters should cover most of 64 equally likely tokens");
});

Deno.test("sampling a row with infinite or NaN logits keeps the argmax of its other logits (as the CUDA library does)", () => {
  using k = openKernels();
  const v = 32;
  const plusInf = new Float32Array(v).fill(0.5);
  plusInf[5] = Infinity;
  const minusInf = new Float32Array(v).fill(-Infinity);
  const nanFirst = Float32Array.of(NaN, ...new Array(v - 1).fill(0.5));
  nanFirst[9] = 2;
  const nanLater = new Float32Array(v).fill(0.5);
  nanLater[3] = 2;
  nanLater[20] = NaN;
  for (const [row, want] of [[plusInf, 5], [minusInf, 0], [nanFirst, 9], [nanLater, 3]] as const) {
    using logits = f32(k, row, [1, v]);
    for (let counter = 0; counter < 8; counter++) {
      const out = sample(k, logits, [{ temperature: 1, topP: 0.9, seed: 7, counter }]);
      assert.equal(out.tokens[0], want); // it drew the last id before
    }
  }
});

Deno.test("sampleStart: pending samplings give sample's results in any order, tokens also in ids; misuse is a clear error", () => {
  using k = openKernels();
  const rng = new Rng("start");
  const [n, v] = [6, 40];
  using t = f32(k, rng.randn(n * v, 2), [n, v]);
  const rows = Array.from({ length: n }, (_, i) => ({
    temperature: i % 2 === 0 ? 0 : 1.1,
    topK: i % 3 === 0 ? 7 : 0,
    seed: 40 + i,
    counter: i,
  }));
  const expected = sample(k, t, rows);
  using ids = Tensor.from(k, new Int32Array(n).fill(-1), [n]);
  const first = sampleStart(k, t, rows, ids);
  const second = sampleStart(k, t, rows.map((r) => ({ ...r, counter: r.counter + 1 })));
  const later = sample(k, t, rows.map((r) => ({ ...r, counter: r.counter + 1 })));
  assert.deepEqual(second.wait(), later); // the second read first
  assert.deepEqual(first.wait(), expected);
  assert.deepEqual(ids.read(), expected.tokens);
  assert.throws(() => first.wait(), /read or dropped already/);
  assert.equal(first.pending, false);

  // four at most pending; dropping one frees its place
  const four = Array.from({ length: 4 }, () => sampleStart(k, t, rows));
  assert.throws(
    () => sampleStart(k, t, rows),
    /arl_sample_start: 4 samplings are pending on this context, the most it holds/,
  );
  assert.deepEqual(sample(k, t, rows), expected); // sample itself needs none of the four
  four[0]!.discard();
  using again = sampleStart(k, t, rows);
  assert.deepEqual(again.wait(), expected);
  for (const p of four.slice(1)) p[Symbol.dispose]();

  using wrongIds = new Tensor(k, [n + 1], "i32");
  assert.throws(() => sampleStart(k, t, rows, wrongIds), /ids must have shape \[6\], got \[7\]/);
  // the C entry points name a ticket that is not pending, and a row count that differs
  const ticket = new BigInt64Array(1);
  const [temperature, topK, topP] = [new Float32Array(n), new Int32Array(n), new Float32Array(n)];
  const seeds = new BigUint64Array(n);
  topP.fill(1);
  k.check(
    "arl_sample_start",
    k.sym.arl_sample_start(k.ctx, ticket, null, t.ptr, temperature, topK, topP, seeds, seeds, n, v),
  );
  assert.throws(
    () => k.check("arl_sample_finish", k.sym.arl_sample_finish(k.ctx, null, null, ticket[0]!, 2)),
    new RegExp(`ticket ${ticket[0]} sampled 6 rows, not n = 2`),
  );
  k.check("arl_sample_finish", k.sym.arl_sample_finish(k.ctx, null, null, ticket[0]!, n));
  assert.throws(
    () => k.check("arl_sample_finish", k.sym.arl_sample_finish(k.ctx, null, null, ticket[0]!, n)),
    /ticket \d+ is not pending \(finished already/,
  );
});
