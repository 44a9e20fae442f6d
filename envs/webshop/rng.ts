/**
 * A Mersenne Twister (MT19937) that reproduces CPython's `random` module for the calls
 * WebShop makes: `seed(int)`, `random()`, `uniform`, `getrandbits`, `randbelow`,
 * `shuffle` and `sample`. With seed 233 its `shuffle` permutes a list exactly as
 * WebShop's `random.seed(233); random.shuffle(goals)` does.
 *
 * @module
 */

const N = 624;
const M = 397;

/**
 * CPython-compatible MT19937.
 *
 * @example
 * ```ts
 * import { PyRandom } from "./rng.ts";
 * const rng = new PyRandom(0);
 * console.log(rng.random()); // 0.8444218515250481, as Python's random.seed(0); random.random()
 * ```
 */
export class PyRandom {
  #mt = new Uint32Array(N);
  #index = N + 1;

  /** Seeds like Python's `random.seed(seed)` for an integer seed (its absolute value). */
  constructor(seed: number) {
    this.seed(seed);
  }

  /** Re-seeds like `random.seed(int)`: init_by_array over the 32-bit words of |seed|. */
  seed(seed: number): void {
    if (!Number.isSafeInteger(seed)) {
      throw new RangeError(`PyRandom seed ${seed} is not a safe integer`);
    }
    let value = Math.abs(seed);
    const key: number[] = [];
    do {
      key.push(value % 0x100000000);
      value = Math.floor(value / 0x100000000);
    } while (value > 0);
    this.#initByArray(key);
  }

  #initGenrand(s: number): void {
    const mt = this.#mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
    this.#index = N;
  }

  #initByArray(key: number[]): void {
    const mt = this.#mt;
    this.#initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(N, key.length); k > 0; k--) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = ((mt[i]! ^ Math.imul(prev, 1664525)) + key[j]! + j) >>> 0;
      i++;
      j++;
      if (i >= N) {
        mt[0] = mt[N - 1]!;
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = N - 1; k > 0; k--) {
      const prev = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
      mt[i] = ((mt[i]! ^ Math.imul(prev, 1566083941)) - i) >>> 0;
      i++;
      if (i >= N) {
        mt[0] = mt[N - 1]!;
        i = 1;
      }
    }
    mt[0] = 0x80000000;
  }

  #twist(): void {
    const mt = this.#mt;
    for (let k = 0; k < N; k++) {
      const y = (mt[k]! & 0x80000000) | (mt[(k + 1) % N]! & 0x7fffffff);
      mt[k] = mt[(k + M) % N]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
    }
    this.#index = 0;
  }

  /** The next 32-bit output (genrand_uint32). */
  uint32(): number {
    if (this.#index >= N) this.#twist();
    let y = this.#mt[this.#index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** A float in [0, 1) with 53 random bits, as `random.random()`. */
  random(): number {
    const a = this.uint32() >>> 5;
    const b = this.uint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** `random.uniform(a, b)`: a + (b - a) * random(). */
  uniform(a: number, b: number): number {
    return a + (b - a) * this.random();
  }

  /** `random.getrandbits(k)` for 0 < k <= 32. */
  getrandbits(k: number): number {
    if (!Number.isInteger(k) || k < 1 || k > 32) {
      throw new RangeError(`getrandbits: k = ${k}, expected an integer in 1..32`);
    }
    return this.uint32() >>> (32 - k);
  }

  /** An integer in [0, n), as CPython's `_randbelow_with_getrandbits` (n < 2^32). */
  randbelow(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > 0xffffffff) {
      throw new RangeError(`randbelow: n = ${n}, expected an integer in 1..2^32-1`);
    }
    const k = 32 - Math.clz32(n);
    let r = this.getrandbits(k);
    while (r >= n) r = this.getrandbits(k);
    return r;
  }

  /** Shuffles in place as `random.shuffle`. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.randbelow(i + 1);
      const t = items[i]!;
      items[i] = items[j]!;
      items[j] = t;
    }
    return items;
  }

  /** `random.sample(population, k)` for small populations (CPython's pool method, n <= 21). */
  sample<T>(population: readonly T[], k: number): T[] {
    const n = population.length;
    if (k < 0 || k > n) throw new RangeError(`sample: k = ${k}, expected 0..${n}`);
    if (n > 21 + (k > 5 ? 4 ** Math.ceil(Math.log(3 * k) / Math.log(4)) : 0)) {
      throw new RangeError(`sample: populations of ${n} use CPython's set method, not supported`);
    }
    const pool = [...population];
    const out: T[] = [];
    for (let i = 0; i < k; i++) {
      const j = this.randbelow(n - i);
      out.push(pool[j]!);
      pool[j] = pool[n - i - 1]!;
    }
    return out;
  }

  /** An element chosen uniformly (`random.choice`). */
  choice<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("choice: the list is empty");
    return items[this.randbelow(items.length)]!;
  }

  /** An integer in [a, b] inclusive (`random.randint`). */
  randint(a: number, b: number): number {
    return a + this.randbelow(b - a + 1);
  }

  /** A standard normal draw (Box-Muller; not CPython's gauss). */
  normal(): number {
    const u = 1 - this.random();
    const v = this.random();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}
