/** The GPU's L2 cache: regions of weights kept across kernels. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";

/** The most regions {@linkcode l2Persist} takes (`ARL_L2_MAX_REGIONS`). */
export const L2_MAX_REGIONS = 64;

/**
 * Asks the GPU's L2 cache to keep `regions` (weights that every decode step reads once, such as
 * the LM head) across kernels, as persisting lines that the stream of other weights does not
 * evict. The L2 set-aside is filled with the regions in their order; the kernels that read a
 * kept region mark their reads of it persisting. Each call replaces the last call's regions (an
 * empty list clears them); regions must not overlap. A graph keeps the regions of its recording.
 * Returns each region's bytes kept: 0 on the CPU, and on CUDA unless `AGENTRL_CUDA_L2_PERSIST`
 * asks for a set-aside (`max`, or a MiB count; see kernels/README.md).
 */
export function l2Persist(k: Kernels, regions: readonly Tensor[]): number[] {
  const n = regions.length;
  if (n > L2_MAX_REGIONS) {
    throw new RangeError(`l2Persist takes at most ${L2_MAX_REGIONS} regions, got ${n}`);
  }
  const bases = new BigUint64Array(n), bytes = new BigInt64Array(n), kept = new BigInt64Array(n);
  regions.forEach((t, i) => { // (ptrIn throws for a freed tensor or another context's)
    bases[i] = BigInt(Deno.UnsafePointer.value(t.ptrIn(k)));
    bytes[i] = BigInt(t.byteSize);
  });
  k.check("arl_l2_persist", k.sym.arl_l2_persist(k.ctx, bases, bytes, n, kept));
  held.set(k, [...regions]);
  return Array.from(kept, Number);
}

/** The regions of the context's last successful {@linkcode l2Persist} call (none: empty). */
export function l2Regions(k: Kernels): readonly Tensor[] {
  return held.get(k) ?? [];
}

// Each context's regions (what its last l2Persist call asked for)
const held = new WeakMap<Kernels, readonly Tensor[]>();
