/**
 * A small seeded pseudo-random generator (xoshiro128**, seeded through
 * SplitMix64), so that every environment is reproducible from its reset seed
 * on any platform, without `Math.random`.
 *
 * @module
 */

const MASK64 = (1n << 64n) - 1n;

/** One SplitMix64 step: returns the next state and its mixed output. */
function splitMix64(state: bigint): [bigint, bigint] {
  const next = (state + 0x9e3779b97f4a7c15n) & MASK64;
  let z = next;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return [next, z ^ (z >> 31n)];
}

/**
 * A seeded generator of uniform numbers. Two generators built from the same
 * `(seed, stream)` produce the same sequence; different streams of one seed are
 * independent (an environment uses one stream for its map, another for its
 * dynamics).
 *
 * @example
 * ```ts
 * import { Rng } from "./random.ts";
 * const a = new Rng(42), b = new Rng(42);
 * console.log(a.int(6) === b.int(6)); // true
 * console.log(new Rng(42, 1).float() !== new Rng(42, 0).float()); // true
 * ```
 */
export class Rng {
  #s0 = 0;
  #s1 = 0;
  #s2 = 0;
  #s3 = 0;

  /**
   * A generator for `seed` (any safe integer, negative ones included) and
   * `stream` (a small non-negative integer naming an independent sequence).
   */
  constructor(seed: number, stream = 0) {
    if (!Number.isSafeInteger(seed)) {
      throw new RangeError(`Seed ${seed} is not a safe integer: expected an integer seed`);
    }
    if (!Number.isSafeInteger(stream) || stream < 0) {
      throw new RangeError(`Stream ${stream} is not valid: expected a non-negative integer`);
    }
    let state = BigInt.asUintN(64, BigInt(seed)) ^
      ((BigInt(stream) * 0xd1b54a32d192ed03n + 0x632be59bd9b4e019n) & MASK64);
    const words: number[] = [];
    for (let i = 0; i < 2; i++) {
      const [next, out] = splitMix64(state);
      state = next;
      words.push(Number(out & 0xffffffffn), Number(out >> 32n));
    }
    [this.#s0, this.#s1, this.#s2, this.#s3] = words as [number, number, number, number];
    if ((this.#s0 | this.#s1 | this.#s2 | this.#s3) === 0) this.#s0 = 1;
  }

  /**
   * A generator with the given xoshiro128** state (not all zero), e.g. to check
   * the algorithm against published outputs.
   */
  static fromState(s0: number, s1: number, s2: number, s3: number): Rng {
    if (((s0 | s1 | s2 | s3) >>> 0) === 0) {
      throw new RangeError("The xoshiro128** state must not be all zero");
    }
    const rng = new Rng(0);
    rng.#s0 = s0 | 0;
    rng.#s1 = s1 | 0;
    rng.#s2 = s2 | 0;
    rng.#s3 = s3 | 0;
    return rng;
  }

  /** The next uniform 32-bit unsigned integer. */
  nextU32(): number {
    const s0 = this.#s0, s1 = this.#s1, s2 = this.#s2, s3 = this.#s3;
    const m = Math.imul(s1, 5);
    const result = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
    const t = s1 << 9;
    let n2 = s2 ^ s0;
    let n3 = s3 ^ s1;
    const n1 = s1 ^ n2;
    const n0 = s0 ^ n3;
    n2 ^= t;
    n3 = (n3 << 11) | (n3 >>> 21);
    this.#s0 = n0 | 0;
    this.#s1 = n1 | 0;
    this.#s2 = n2 | 0;
    this.#s3 = n3 | 0;
    return result;
  }

  /** A uniform float in [0, 1) with 53 random bits. */
  float(): number {
    const hi = this.nextU32() >>> 5; // 27 bits
    const lo = this.nextU32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** A uniform integer in [0, n), without modulo bias. */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0 || n > 0x100000000) {
      throw new RangeError(`Range ${n} is not valid: expected an integer in [1, 2^32]`);
    }
    if (n === 0x100000000) return this.nextU32();
    // Reject the top partial block so every residue is equally likely.
    const limit = 0x100000000 - (0x100000000 % n);
    for (;;) {
      const x = this.nextU32();
      if (x < limit) return x % n;
    }
  }

  /** A uniform element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("Cannot pick from an empty array");
    return items[this.int(items.length)]!;
  }
}
