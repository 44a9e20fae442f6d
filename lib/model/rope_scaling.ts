/**
 * RoPE scalings as tables of rotation frequencies: Llama 3.1's (`rope_scaling.rope_type:
 * "llama3"`: the low frequencies of `theta` divided by `factor` and the middle band blended, as
 * transformers computes them for Llama 3.1 / 3.2 checkpoints) and the `linear` type (every
 * frequency divided by `factor`).
 *
 * @module
 */
import type { Llama3RopeScaling, RopeScaling } from "./config.ts";

/**
 * The inverse frequencies (head_dim / 2) of RoPE with `scaling`: {@linkcode llama3InvFreq}'s, or
 * for `linear` theta^(-2j/d) / factor (float64, rounded to float32).
 *
 * @example
 * ```ts
 * import { ropeInvFreq } from "./rope_scaling.ts";
 * console.log(ropeInvFreq(10000, 4, { rope_type: "linear", factor: 2 })); // Float32Array [ 0.5, 0.005 ]
 * ```
 */
export function ropeInvFreq(theta: number, headDim: number, scaling: RopeScaling): Float32Array {
  if (scaling.rope_type === "llama3") return llama3InvFreq(theta, headDim, scaling);
  return Float32Array.from(
    { length: headDim / 2 },
    (_, j) => 1 / Math.pow(theta, (2 * j) / headDim) / scaling.factor,
  );
}

/**
 * The inverse frequencies (head_dim / 2) of RoPE with Llama 3.1's scaling: for each default
 * frequency f = theta^(-2j/d) of wavelength w = 2π / f, f stays where w is below
 * original_max_position_embeddings / high_freq_factor, becomes f / factor where w is above
 * original_max_position_embeddings / low_freq_factor, and in between blends the two with
 * s = (original / w - low_freq_factor) / (high_freq_factor - low_freq_factor):
 * (1 - s) f / factor + s f. Computed in float64, rounded to float32 (transformers computes the
 * table in float32).
 *
 * @example
 * ```ts
 * import { llama3InvFreq } from "./rope_scaling.ts";
 * const f = llama3InvFreq(500000, 64, {
 *   rope_type: "llama3", factor: 32, low_freq_factor: 1, high_freq_factor: 4,
 *   original_max_position_embeddings: 8192,
 * });
 * console.log(f.length, f[0]); // 32 1 (the highest frequency is kept)
 * ```
 */
export function llama3InvFreq(
  theta: number,
  headDim: number,
  scaling: Llama3RopeScaling,
): Float32Array {
  const { factor, low_freq_factor: low, high_freq_factor: high } = scaling;
  const original = scaling.original_max_position_embeddings;
  const lowWavelen = original / low;
  const highWavelen = original / high;
  const out = new Float32Array(headDim / 2);
  for (let j = 0; j < out.length; j++) {
    const f = 1 / Math.pow(theta, (2 * j) / headDim);
    const wavelen = (2 * Math.PI) / f;
    let scaled: number;
    if (wavelen < highWavelen) scaled = f;
    else if (wavelen > lowWavelen) scaled = f / factor;
    else {
      const s = (original / wavelen - low) / (high - low);
      scaled = (1 - s) * (f / factor) + s * f;
    }
    out[j] = scaled;
  }
  return out;
}

const show = (v: unknown): string => v === undefined ? "nothing" : JSON.stringify(v);
const positive = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x) && x > 0;

/**
 * What is wrong with a RoPE scaling's fields for its `rope_type`, as `name ...; expected ...`,
 * or null when nothing is. `linear`: `factor` positive. `llama3`: `factor`, `low_freq_factor`
 * and `high_freq_factor` positive, the high one above the low one;
 * `original_max_position_embeddings` a positive integer.
 *
 * @example
 * ```ts
 * import { ropeScalingProblem } from "./rope_scaling.ts";
 * console.log(ropeScalingProblem({ rope_type: "linear", factor: 2 })); // null
 * ```
 */
export function ropeScalingProblem(v: Record<string, unknown>): string | null {
  if (v.rope_type === "linear") {
    return positive(v.factor) ? null : `factor is ${show(v.factor)}; expected a positive number`;
  }
  for (const name of ["factor", "low_freq_factor", "high_freq_factor"]) {
    if (!positive(v[name])) return `${name} is ${show(v[name])}; expected a positive number`;
  }
  const original = v.original_max_position_embeddings;
  if (!(typeof original === "number" && Number.isSafeInteger(original) && original > 0)) {
    return `original_max_position_embeddings is ${show(original)}; expected a positive integer`;
  }
  const [low, high] = [v.low_freq_factor as number, v.high_freq_factor as number];
  if (!(high > low)) return `high_freq_factor (${high}) must exceed low_freq_factor (${low})`;
  return null;
}
