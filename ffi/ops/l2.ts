/** The GPU's L2 cache: a window of weights kept across kernels. @module */
import type { Kernels } from "../kernels.ts";
import type { Tensor } from "../tensor.ts";

/**
 * Asks the GPU's L2 cache to keep lines of `t` (the weights a decode step reads last, such as
 * the LM head) across kernels, as persisting lines that the stream of other weights does not
 * evict; `null` clears the window. One window a context; a graph keeps the window of its
 * recording. Returns the bytes kept: 0 on the CPU, and on CUDA unless
 * `AGENTRL_CUDA_L2_PERSIST` asks for a set-aside (`max`, or a MiB count; see
 * kernels/README.md).
 */
export function l2Persist(k: Kernels, t: Tensor | null): number {
  const kept = new BigInt64Array(1);
  const base = t === null ? null : t.ptrIn(k); // (throws for a freed tensor)
  k.check(
    "arl_l2_persist",
    k.sym.arl_l2_persist(k.ctx, base, BigInt(t?.byteSize ?? 0), Deno.UnsafePointer.of(kept)),
  );
  if (t === null) windows.delete(k);
  else windows.set(k, t);
  return Number(kept[0]);
}

/** The tensor of the context's last {@linkcode l2Persist} call, or null (none, or cleared). */
export function l2Window(k: Kernels): Tensor | null {
  return windows.get(k) ?? null;
}

// Each context's window (what its last l2Persist call asked for)
const windows = new WeakMap<Kernels, Tensor>();
