/**
 * Per-token KL estimators between the policy and the reference (ROLL's
 * `compute_approx_kl`, `kl_penalty`), with d = logp - ref_logp:
 * kl = d; abs = |d|; mse = d^2 / 2; k3 = exp(-d) + d - 1 clamped to [-10, 10]
 * (Schulman's unbiased, non-negative estimator); full = the exact KL(p || p_ref)
 * over the vocabulary, which needs whole distributions, so it is taken precomputed.
 *
 * @module
 */
import { checkFinite, checkLength, checkMask, checkOneOf } from "./_check.ts";
import { KL_PENALTY_KINDS, type KlPenaltyKind, type TokenValues } from "./types.ts";

/** ROLL clamps the k3 estimate to [-K3_CLAMP, K3_CLAMP]. */
export const K3_CLAMP = 10;

/**
 * The KL estimate of one token from its two log-probs (kinds kl, abs, mse, k3;
 * "full" needs distributions, see {@linkcode klPenalty}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { klTerm } from "./kl_penalty.ts";
 * assert.equal(klTerm(-1, -3, "kl"), 2);
 * assert.equal(klTerm(-1, -3, "mse"), 2);
 * assert.ok(Math.abs(klTerm(-1, -3, "k3") - (Math.exp(-2) + 1)) < 1e-12);
 * ```
 */
export function klTerm(
  logp: number,
  refLogp: number,
  kind: Exclude<KlPenaltyKind, "full">,
): number {
  const d = logp - refLogp;
  switch (kind) {
    case "kl":
      return d;
    case "abs":
      return Math.abs(d);
    case "mse":
      return 0.5 * d * d;
    case "k3": {
      // r = p_ref / p = exp(-d); k3 = r - log r - 1
      const k3 = Math.exp(-d) + d - 1;
      return Math.min(K3_CLAMP, Math.max(-K3_CLAMP, k3));
    }
    default:
      throw new RangeError(
        `Unknown KL estimator kind ${JSON.stringify(kind)}: expected one of kl, abs, mse, k3` +
          ' ("full" needs distributions: use klPenalty with fullKl)',
      );
  }
}

/** Inputs of {@linkcode klPenalty} beyond the log-probs. */
export interface KlPenaltyOptions {
  /** Zero the estimate where the mask is 0 (ROLL's action_mask). */
  mask?: TokenValues;
  /** Precomputed per-token KL(p || p_ref) over the vocabulary: required by "full". */
  fullKl?: TokenValues;
}

/**
 * The per-token KL estimate of a sample, zeroed where `mask` is 0. For "full" the
 * log-probs are not used (pass null) and `fullKl` supplies the values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { klPenalty } from "./kl_penalty.ts";
 * const kl = klPenalty([-1, -2, -0.5], [-1.5, -1, -0.5], "abs", { mask: [0, 1, 1] });
 * assert.deepEqual(Array.from(kl), [0, 1, 0]);
 * ```
 */
export function klPenalty(
  logprobs: TokenValues | null,
  refLogprobs: TokenValues | null,
  kind: KlPenaltyKind,
  options: KlPenaltyOptions = {},
): Float32Array {
  checkOneOf(kind, KL_PENALTY_KINDS, "KL penalty kind");
  let n: number;
  if (kind === "full") {
    if (!options.fullKl) {
      throw new TypeError(
        'KL penalty "full" needs fullKl (per-token KL over the vocabulary, computed from both distributions)',
      );
    }
    n = options.fullKl.length;
  } else {
    if (!logprobs || !refLogprobs) {
      throw new TypeError(`KL penalty "${kind}" needs both logprobs and refLogprobs`);
    }
    n = logprobs.length;
    checkLength(refLogprobs, n, "refLogprobs");
  }
  const mask = options.mask;
  if (mask) {
    checkLength(mask, n, "mask");
    checkMask(mask, "mask");
  }
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    if (mask && !mask[i]) continue;
    if (kind === "full") out[i] = checkFinite(options.fullKl![i], `fullKl[${i}]`);
    else {
      const lp = checkFinite(logprobs![i], `logprobs[${i}]`);
      const ref = checkFinite(refLogprobs![i], `refLogprobs[${i}]`);
      out[i] = klTerm(lp, ref, kind);
    }
  }
  return out;
}
