// A small seeded generator for parameter initialisation (sfc32 seeded by
// splitmix32, normals by Marsaglia's polar method): the same seed gives the
// same parameters on every machine. Fast enough for the 494M parameters of
// Qwen2.5-0.5B (~17 ns a value).

/** A seeded stream of uniform and normal numbers. */
export class InitRng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    let h = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0;
    const next = () => {
      h = (h + 0x9e3779b9) >>> 0;
      let z = h;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = next();
    this.#b = next();
    this.#c = next();
    this.#d = next() | 1;
    for (let i = 0; i < 12; i++) this.uniform();
  }

  /** Uniform in (0, 1). */
  uniform(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((((this.#c << 21) | (this.#c >>> 11)) >>> 0) + t) >>> 0;
    return (t + 0.5) / 4294967296;
  }

  /**
   * Fills `out` with normal(0, std) values (polar method: pairs of uniforms in
   * (-1, 1) inside the unit circle), the generator's state held in locals.
   */
  fillNormal(out: Float32Array, std: number): void {
    let a = this.#a, b = this.#b, c = this.#c, d = this.#d;
    const n = out.length;
    let i = 0;
    while (i < n) {
      let t = (((a + b) >>> 0) + d) >>> 0;
      d = (d + 1) >>> 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) >>> 0;
      c = ((((c << 21) | (c >>> 11)) >>> 0) + t) >>> 0;
      const u = ((t | 0) + 0.5) / 2147483648;
      t = (((a + b) >>> 0) + d) >>> 0;
      d = (d + 1) >>> 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) >>> 0;
      c = ((((c << 21) | (c >>> 11)) >>> 0) + t) >>> 0;
      const v = ((t | 0) + 0.5) / 2147483648;
      const s = u * u + v * v;
      if (s >= 1) continue;
      const f = Math.sqrt((-2 * Math.log(s)) / s) * std;
      out[i++] = u * f;
      if (i < n) out[i++] = v * f;
    }
    this.#a = a;
    this.#b = b;
    this.#c = c;
    this.#d = d;
  }
}
