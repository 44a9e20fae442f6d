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

/** Tokens and their log-probs, one a row (a type alias: usable where records are expected). */
export type Sampled = {
  tokens: Int32Array;
  logprobs: Float32Array;
};

/** A seed or counter as the kernels' 64-bit word (negative integers wrap, as in C). */
function streamWord(x: bigint | number, name: string): bigint {
  if (typeof x === "bigint") return BigInt.asUintN(64, x);
  if (typeof x !== "number" || !Number.isSafeInteger(x)) {
    throw new RangeError(`${name} must be an integer (a safe integer or a bigint), got ${x}`);
  }
  return BigInt.asUintN(64, BigInt(x));
}

/** The rows' settings as arl_sample takes them, checked. */
function packRows(rows: readonly SampleRow[]) {
  const n = rows.length;
  const temperature = new Float32Array(n);
  const topK = new Int32Array(n);
  const topP = new Float32Array(n);
  const seeds = new BigUint64Array(n);
  const counters = new BigUint64Array(n);
  rows.forEach((r, i) => {
    if (typeof r !== "object" || r === null) {
      throw new TypeError(
        `row ${i} must be an object with temperature, seed and counter, got ${r}`,
      );
    }
    // (a float32 in the kernels: 0 is greedy, and so is one too small for its reciprocal)
    const t = r.temperature;
    if (typeof t !== "number" || !(t >= 0 && Math.fround(t) < Infinity)) {
      throw new RangeError(`row ${i}: temperature must be a number in [0, 3.4e38], got ${t}`);
    }
    temperature[i] = t;
    const kept = r.topK ?? 0;
    if (!Number.isInteger(kept) || kept < -1 || kept > 2 ** 31 - 1) {
      throw new RangeError(
        `row ${i}: topK must be an integer >= -1 (0 and -1 are off), got ${kept}`,
      );
    }
    topK[i] = kept;
    const p = r.topP ?? 1;
    if (typeof p !== "number" || Number.isNaN(p)) {
      throw new RangeError(`row ${i}: topP must be a number (>= 1 is off), got ${p}`);
    }
    topP[i] = p;
    seeds[i] = streamWord(r.seed, `row ${i}: seed`);
    counters[i] = streamWord(r.counter, `row ${i}: counter`);
  });
  return [temperature, topK, topP, seeds, counters] as const;
}

/** Samples one token per row of logits (N, V); returns tokens and their log-probs. */
export function sample(k: Kernels, logits: Tensor, rows: readonly SampleRow[]): Sampled {
  expectTensor(logits, "logits", "f32", [rows.length, -1]);
  const [n, v] = [dim(logits, 0), dim(logits, 1)];
  const [temperature, topK, topP, seeds, counters] = packRows(rows);
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

// A PendingSample dropped unread gives its slot back when collected (its results, and any
// error it would report, are lost: read or discard it instead).
const unread = new FinalizationRegistry<{ k: Kernels; ticket: bigint; n: number }>((h) => {
  if (!h.k.closed) h.k.sym.arl_sample_finish(h.k.ctx, null, null, h.ticket, h.n);
});

/**
 * A sampling queued by {@linkcode sampleStart}: {@linkcode PendingSample.wait} reads its
 * results (once), {@linkcode PendingSample.discard} drops them.
 */
export class PendingSample implements Disposable {
  readonly #k: Kernels;
  readonly #ticket: bigint;
  readonly #n: number;
  #done = false;

  constructor(k: Kernels, ticket: bigint, n: number) {
    this.#k = k;
    this.#ticket = ticket;
    this.#n = n;
    unread.register(this, { k, ticket, n }, this);
  }

  /** Waits for this sampling (not for calls queued after it) and returns its results. */
  wait(): Sampled {
    if (this.#done) throw new Error("This sampling's results were read or dropped already");
    this.#done = true;
    unread.unregister(this);
    const tokens = new Int32Array(this.#n);
    const logprobs = new Float32Array(this.#n);
    const k = this.#k;
    k.check(
      "arl_sample_finish",
      k.sym.arl_sample_finish(k.ctx, tokens, logprobs, this.#ticket, this.#n),
    );
    return { tokens, logprobs };
  }

  /** Drops the results (waiting for the sampling, whose errors it reports); a no-op once done. */
  discard(): void {
    if (this.#done) return;
    this.#done = true;
    unread.unregister(this);
    const k = this.#k;
    k.check("arl_sample_finish", k.sym.arl_sample_finish(k.ctx, null, null, this.#ticket, this.#n));
  }

  /** Whether the results are still to be read. */
  get pending(): boolean {
    return !this.#done;
  }

  /** Drops unread results (a closed context has nothing pending). */
  [Symbol.dispose](): void {
    if (this.#k.closed) {
      this.#done = true;
      unread.unregister(this);
    }
    this.discard();
  }
}

/**
 * Queues the sampling of one token per row of logits (N, V) without waiting for it, as
 * {@linkcode sample} draws them; the tokens also go to `ids` (an int32 tensor of N, e.g. the
 * next decode step's token ids), so that the host can queue that step before it reads these.
 * At most 4 samplings may be pending on a context.
 *
 * @example
 * ```ts
 * import { Kernels, sampleStart, Tensor } from "../mod.ts";
 * using k = Kernels.open({ threads: 1 });
 * using logits = Tensor.from(k, Float32Array.of(0.1, 2, 0.3), [1, 3]);
 * using ids = new Tensor(k, [1], "i32");
 * const pending = sampleStart(k, logits, [{ temperature: 0, seed: 1, counter: 0 }], ids);
 * // ... queue the next step, reading its token ids from `ids`, before waiting here ...
 * console.log(pending.wait().tokens, ids.read()); // Int32Array(1) [ 1 ] Int32Array(1) [ 1 ]
 * ```
 */
export function sampleStart(
  k: Kernels,
  logits: Tensor,
  rows: readonly SampleRow[],
  ids: Tensor<"i32"> | null = null,
): PendingSample {
  expectTensor(logits, "logits", "f32", [rows.length, -1]);
  const [n, v] = [dim(logits, 0), dim(logits, 1)];
  if (ids !== null) expectTensor(ids, "ids", "i32", [n]);
  const settings = packRows(rows);
  const ticket = new BigInt64Array(1);
  k.check(
    "arl_sample_start",
    k.sym.arl_sample_start(
      k.ctx,
      ticket,
      ids === null ? null : ids.ptrIn(k),
      logits.ptrIn(k),
      ...settings,
      n,
      v,
    ),
  );
  return new PendingSample(k, ticket[0]!, n);
}
