/**
 * RoPE scalings as tables of rotation frequencies: Llama 3.1's (`rope_scaling.rope_type:
 * "llama3"`: the low frequencies of `theta` divided by `factor` and the middle band blended, as
 * transformers computes them for Llama 3.1 / 3.2 checkpoints), the `linear` type (every
 * frequency divided by `factor`) and YaRN's (`yarn`: a ramp between the kept and the divided
 * frequencies, and an attention factor).
 *
 * @module
 */
import type { Llama3RopeScaling, RopeScaling, YarnRopeScaling } from "./config.ts";

/**
 * The inverse frequencies (head_dim / 2) of RoPE with `scaling`: {@linkcode llama3InvFreq}'s,
 * {@linkcode yarnInvFreq}'s, or for `linear` theta^(-2j/d) / factor (float64, rounded to float32).
 *
 * @example
 * ```ts
 * import { ropeInvFreq } from "./rope_scaling.ts";
 * console.log(ropeInvFreq(10000, 4, { rope_type: "linear", factor: 2 })); // Float32Array [ 0.5, 0.005 ]
 * ```
 */
export function ropeInvFreq(theta: number, headDim: number, scaling: RopeScaling): Float32Array {
  if (scaling.rope_type === "llama3") return llama3InvFreq(theta, headDim, scaling);
  if (scaling.rope_type === "yarn") return yarnInvFreq(theta, headDim, scaling);
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

/** YaRN's optional fields where a config leaves them out (transformers' and vLLM's defaults). */
export const YARN_DEFAULTS = { beta_fast: 32, beta_slow: 1, truncate: true } as const;

/**
 * YaRN's inverse frequencies (head_dim / 2). Dimension j of d turns r(j) = L f_j / 2π times over
 * the original context L, f_j = theta^(-2j/d). Solving r = beta gives the dimension
 * d ln(L / (2π beta)) / (2 ln theta); at beta_fast (32) that is the ramp's low end, at beta_slow
 * (1) its high end (rounded out to whole dimensions unless `truncate` is false, clamped to
 * 0..d-1). With ramp(j) = clamp((j - low) / (high - low), 0, 1) the frequency is
 * ramp f_j / factor + (1 - ramp) f_j: kept below the ramp, divided above it. Computed in float64,
 * rounded to float32; `theta` must exceed 1.
 *
 * @example
 * ```ts
 * import { yarnInvFreq } from "./rope_scaling.ts";
 * const f = yarnInvFreq(1e6, 128, {
 *   rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768,
 * });
 * console.log(f[0], f[63] === Math.fround(1e6 ** (-126 / 128) / 4)); // 1 true
 * ```
 */
export function yarnInvFreq(
  theta: number,
  headDim: number,
  scaling: YarnRopeScaling,
): Float32Array {
  if (!(theta > 1)) throw new RangeError(`YaRN needs rope_theta above 1, got ${theta}`);
  const original = scaling.original_max_position_embeddings;
  const dimOf = (turns: number) =>
    headDim * Math.log(original / (turns * 2 * Math.PI)) / (2 * Math.log(theta));
  const truncate = scaling.truncate ?? YARN_DEFAULTS.truncate;
  let low = dimOf(scaling.beta_fast ?? YARN_DEFAULTS.beta_fast);
  let high = dimOf(scaling.beta_slow ?? YARN_DEFAULTS.beta_slow);
  if (truncate) [low, high] = [Math.floor(low), Math.ceil(high)];
  low = Math.max(low, 0);
  high = Math.min(high, headDim - 1);
  if (low === high) high += 0.001; // (a step, not a division by zero)
  const out = new Float32Array(headDim / 2);
  for (let j = 0; j < out.length; j++) {
    const f = 1 / Math.pow(theta, (2 * j) / headDim);
    const ramp = Math.min(Math.max((j - low) / (high - low), 0), 1);
    out[j] = ramp * (f / scaling.factor) + (1 - ramp) * f;
  }
  return out;
}

/**
 * The factor a RoPE scaling multiplies the rotated queries and keys by (so attention's scores by
 * its square): YaRN's `attention_factor` if given, else mscale(factor, mscale) /
 * mscale(factor, mscale_all_dim) where both are set (DeepSeek), else mscale(factor), with
 * mscale(s, m) = 0.1 m ln(s) + 1 for s > 1 and 1 otherwise. 1 for the other scalings and none.
 *
 * @example
 * ```ts
 * import { ropeAttentionFactor } from "./rope_scaling.ts";
 * const yarn = { rope_type: "yarn", factor: 4, original_max_position_embeddings: 32768 } as const;
 * console.log(ropeAttentionFactor(yarn).toFixed(4), ropeAttentionFactor(null)); // 1.1386 1
 * ```
 */
export function ropeAttentionFactor(scaling: RopeScaling | null | undefined): number {
  if (!scaling || scaling.rope_type !== "yarn") return 1;
  if (scaling.attention_factor != null) return scaling.attention_factor;
  const mscale = (s: number, m = 1) => s <= 1 ? 1 : 0.1 * m * Math.log(s) + 1;
  const { factor, mscale: m, mscale_all_dim: all } = scaling;
  return m && all ? mscale(factor, m) / mscale(factor, all) : mscale(factor);
}

const show = (v: unknown): string => v === undefined ? "nothing" : JSON.stringify(v);
const positive = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x) && x > 0;

/**
 * What is wrong with a RoPE scaling's fields for its `rope_type`, as `name ...; expected ...`,
 * or null when nothing is. `linear`: `factor` positive. `llama3`: `factor`, `low_freq_factor`
 * and `high_freq_factor` positive, the high one above the low one;
 * `original_max_position_embeddings` a positive integer. `yarn`: `factor` positive,
 * `original_max_position_embeddings` a positive integer; `beta_fast` above `beta_slow`,
 * `attention_factor`, `mscale` and `mscale_all_dim` positive, `truncate` a boolean where given
 * (null is absent).
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
  const yarn = v.rope_type === "yarn";
  for (const name of yarn ? ["factor"] : ["factor", "low_freq_factor", "high_freq_factor"]) {
    if (!positive(v[name])) return `${name} is ${show(v[name])}; expected a positive number`;
  }
  const original = v.original_max_position_embeddings;
  if (!(typeof original === "number" && Number.isSafeInteger(original) && original > 0)) {
    return `original_max_position_embeddings is ${show(original)}; expected a positive integer`;
  }
  if (yarn) return yarnProblem(v);
  const [low, high] = [v.low_freq_factor as number, v.high_freq_factor as number];
  if (!(high > low)) return `high_freq_factor (${high}) must exceed low_freq_factor (${low})`;
  return null;
}

/** What is wrong with YaRN's optional fields, or null (after `ropeScalingProblem`'s checks). */
function yarnProblem(v: Record<string, unknown>): string | null {
  for (const name of ["beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim"]) {
    if (v[name] != null && !positive(v[name])) {
      return `${name} is ${show(v[name])}; expected a positive number or none`;
    }
  }
  const fast = (v.beta_fast as number | null) ?? YARN_DEFAULTS.beta_fast;
  const slow = (v.beta_slow as number | null) ?? YARN_DEFAULTS.beta_slow;
  if (!(fast > slow)) return `beta_fast (${fast}) must exceed beta_slow (${slow})`;
  if (v.truncate != null && typeof v.truncate !== "boolean") {
    return `truncate is ${show(v.truncate)}; expected true, false or none`;
  }
  return null;
}
