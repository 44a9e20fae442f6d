/**
 * The weights a model offers the GPU's L2 cache to keep between decode steps (`l2Persist`), in
 * priority order: `AGENTRL_L2_OFFER`, a comma-separated list of `head` (the LM head, which every
 * step reads last), `qkv` (each layer's stacked q|k|v rows, which the chain's first kernel waits
 * for) and `attn` (each layer's q|k|v and o rows); default `head`. The layers' parts need bf16
 * weights (the decode chain's). How much is kept is the CUDA library's `AGENTRL_CUDA_L2_PERSIST`.
 *
 * @module
 */
import { L2_MAX_REGIONS, type Tensor } from "../../ffi/mod.ts";
import type { Bf16Layer } from "./_mixed_precision.ts";

/** What a model can offer the L2 cache. */
export type L2Part = "head" | "qkv" | "attn";

const PARTS: readonly L2Part[] = ["head", "qkv", "attn"];

/**
 * The parts `text` names, in its order (`undefined` or empty: the head); a RangeError saying what
 * is wrong for an unknown or repeated part, or for qkv with attn (they overlap).
 */
export function parseL2Offer(text: string | undefined, from = "AGENTRL_L2_OFFER"): L2Part[] {
  if (text === undefined || text.trim() === "") return ["head"];
  const parts = text.split(",").map((p) => p.trim());
  for (const p of parts) {
    if (!(PARTS as readonly string[]).includes(p)) {
      throw new RangeError(
        `${from}=${text}: '${p}' is not a part; expected a comma-separated list of head, qkv, attn`,
      );
    }
  }
  if (new Set(parts).size !== parts.length) {
    throw new RangeError(`${from}=${text}: a part is named twice`);
  }
  if (parts.includes("qkv") && parts.includes("attn")) {
    throw new RangeError(`${from}=${text}: qkv and attn overlap (attn holds q|k|v); name one`);
  }
  return parts as L2Part[];
}

/** The regions of `parts` (in order; at most L2_MAX_REGIONS: later layers are left out). */
export function l2OfferRegions(
  parts: readonly L2Part[],
  head: Tensor,
  layers: readonly Bf16Layer[] | null,
): Tensor[] {
  const regions: Tensor[] = [];
  for (const p of parts) {
    if (p === "head") regions.push(head);
    else for (const l of layers ?? []) regions.push(p === "qkv" ? l.qkv : l.attn);
  }
  return regions.slice(0, L2_MAX_REGIONS);
}

/** The offer the environment asks for (the default without permission to read it). */
export function l2OfferFromEnv(): L2Part[] {
  let text: string | undefined;
  try {
    text = Deno.env.get("AGENTRL_L2_OFFER");
  } catch {
    text = undefined;
  }
  return parseL2Offer(text);
}
