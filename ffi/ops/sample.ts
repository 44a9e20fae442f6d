/** Sampling tokens from logits with a counter-based seeded stream. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";
import { dim, expectTensor } from "./_args.ts";

/** Per-row sampling settings. */
export interface SampleRow {
  /** 0 = greedy. */
  temperature: number;
  /** <= 0: off. */
  topK?: number;
  /** >= 1: off. */
  topP?: number;
  seed: bigint | number;
  /** Which draw of the seed's stream (e.g. the token's position). */
  counter: bigint | number;
}

/** Samples one token per row of logits (N, V); returns tokens and their log-probs. */
export function sample(
  k: Kernels,
  logits: Tensor,
  rows: readonly SampleRow[],
): { tokens: Int32Array; logprobs: Float32Array } {
  expectTensor(logits, "logits", "f32", [rows.length, -1]);
  const [n, v] = [dim(logits, 0), dim(logits, 1)];
  const temperature = new Float32Array(n);
  const topK = new Int32Array(n);
  const topP = new Float32Array(n);
  const seeds = new BigUint64Array(n);
  const counters = new BigUint64Array(n);
  rows.forEach((r, i) => {
    if (!(r.temperature >= 0) || !Number.isFinite(r.temperature)) {
      throw new RangeError(`row ${i}: temperature must be >= 0, got ${r.temperature}`);
    }
    temperature[i] = r.temperature;
    const kept = r.topK ?? 0;
    if (!Number.isInteger(kept) || kept < -1 || kept > 2 ** 31 - 1) {
      throw new RangeError(
        `row ${i}: topK must be an integer >= -1 (0 and -1 are off), got ${kept}`,
      );
    }
    topK[i] = kept;
    topP[i] = r.topP ?? 1;
    seeds[i] = BigInt.asUintN(64, BigInt(r.seed));
    counters[i] = BigInt.asUintN(64, BigInt(r.counter));
  });
  const tokens = new Int32Array(n);
  const logprobs = new Float32Array(n);
  const p = Deno.UnsafePointer.of;
  k.check(
    "arl_sample",
    k.sym.arl_sample(
      k.ctx,
      p(tokens),
      p(logprobs),
      logits.ptrIn(k),
      p(temperature),
      p(topK),
      p(topP),
      p(seeds),
      p(counters),
      n,
      v,
    ),
  );
  return { tokens, logprobs };
}
