/**
 * Sampling: greedy, temperature, top-k and top-p, and sampling started on the device.
 *
 * @module
 */
import { sample, type SampleRow, sampleStart } from "../../../ffi/mod.ts";
import { type Case, EXACT, Rand, TOL_FP32 } from "./harness.ts";

/** Sampling settings on the same logits and seeds, greedy on wide rows, and sampleStart. */
export function sampleCases(seed: number): Case[] {
  const kinds: Omit<SampleRow, "seed" | "counter">[] = [
    { temperature: 0 },
    { temperature: 0.8 },
    { temperature: 1.2, topK: 50 },
    { temperature: 1, topP: 0.9 },
    { temperature: 0.7, topK: 20, topP: 0.8 },
    { temperature: 0, topK: 5, topP: 0.5 },
  ];
  const rows = kinds.flatMap((kind, i) =>
    [0, 1].map((j) => ({ ...kind, seed: 100 + 2 * i + j, counter: 7 * i + j }))
  );
  const [n, v] = [rows.length, 2000];
  const logits = new Rand("sample", seed).randn(n * v, 2);
  // Greedy rows only, few of them, a large vocabulary: CUDA splits each row across blocks.
  // Row 0 ties its max across two blocks (the lower id wins), row 1 starts with a stretch of
  // -inf, row 2 is plain.
  const [gn, gv] = [3, 151_936];
  const big = new Rand("sample greedy", seed).randn(gn * gv, 2);
  big[5] = big[100_000] = 50;
  big.fill(-Infinity, gv, gv + 20_000);
  const greedyRows = Array.from(
    { length: gn },
    (_, i) => ({ temperature: 0, seed: i, counter: 0 }),
  );
  return [{
    op: "sample (greedy, temperature, top-k, top-p)",
    tol: { tokens: EXACT, logprobs: TOL_FP32 },
    run: (s) => sample(s.k, s.f32(logits, [n, v]), rows),
  }, {
    op: `sample (greedy only, ${gn} rows of ${gv})`,
    tol: { tokens: EXACT, logprobs: TOL_FP32 },
    run: (s) => sample(s.k, s.f32(big, [gn, gv]), greedyRows),
  }, {
    // Both kinds queued before either is read, read in the other order; the tokens also on the
    // device.
    op: "sampleStart (two pending, finished out of order, ids on the device)",
    tol: { tokens: EXACT, logprobs: TOL_FP32, ids: EXACT, greedy: EXACT, greedyIds: EXACT },
    run: (s) => {
      const ids = s.i32(new Int32Array(n).fill(-1));
      const greedyIds = s.i32(new Int32Array(gn).fill(-1));
      const first = sampleStart(s.k, s.f32(big, [gn, gv]), greedyRows, greedyIds);
      const second = sampleStart(s.k, s.f32(logits, [n, v]), rows, ids);
      const mixed = second.wait();
      return {
        ...mixed,
        ids: ids.read(),
        greedy: first.wait().tokens,
        greedyIds: greedyIds.read(),
      };
    },
  }];
}
