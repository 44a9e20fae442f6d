/**
 * Kernel graphs: a sequence of calls recorded once and replayed with one
 * launch (CUDA graphs). The CPU library has none; {@linkcode KernelGraph.supported}
 * says so without throwing.
 *
 * @module
 */
import { KernelError, type Kernels } from "./kernels.ts";

/** `ARL_ERR_UNSUPPORTED` of kernels/include/agentrl.h. */
const UNSUPPORTED = 7;

const support = new WeakMap<Kernels, boolean>();

/**
 * A recorded sequence of kernel calls. A replay runs the same kernels on the
 * same memory and sizes as the recording, reading whatever the memory holds at
 * launch time; so only record calls whose pointers and sizes stay valid.
 *
 * @example
 * ```ts ignore
 * import { Kernels, KernelGraph, add, Tensor } from "./mod.ts";
 * using k = Kernels.open({ device: "cuda" });
 * using x = Tensor.from(k, new Float32Array([1, 2]), [2]);
 * using g = KernelGraph.record(k, () => add(k, x, x, x));
 * g.launch(); // x = [2, 4]
 * g.launch(); // x = [4, 8]
 * ```
 */
export class KernelGraph implements Disposable {
  readonly #kernels: Kernels;
  #graph: Deno.PointerObject | null;

  private constructor(kernels: Kernels, graph: Deno.PointerObject) {
    this.#kernels = kernels;
    this.#graph = graph;
  }

  /** Whether `kernels` can record graphs (the CUDA library can; the CPU one cannot). */
  static supported(kernels: Kernels): boolean {
    let ok = support.get(kernels);
    if (ok === undefined) {
      const status = kernels.sym.arl_graph_begin(kernels.ctx);
      if (status === 0) kernels.sym.arl_graph_end(kernels.ctx, null); // discard the empty recording
      ok = status === 0;
      support.set(kernels, ok);
    }
    return ok;
  }

  /**
   * Records the kernel calls `body` makes on `kernels` (none of them runs).
   * If `body` throws, the recording is dropped and the error rethrown; calls
   * that wait for the GPU fail while recording (a KernelError).
   */
  static record(kernels: Kernels, body: () => void): KernelGraph {
    kernels.check("arl_graph_begin", kernels.sym.arl_graph_begin(kernels.ctx));
    try {
      body();
    } catch (e) {
      kernels.sym.arl_graph_end(kernels.ctx, null);
      throw e;
    }
    const out = new BigUint64Array(1);
    kernels.check(
      "arl_graph_end",
      kernels.sym.arl_graph_end(kernels.ctx, Deno.UnsafePointer.of(out)),
    );
    const graph = Deno.UnsafePointer.create(out[0]!);
    if (graph === null) {
      throw new KernelError("arl_graph_end", UNSUPPORTED, "the library returned no graph");
    }
    return new KernelGraph(kernels, graph);
  }

  /** Queues one replay on the context's stream. */
  launch(): void {
    if (this.#graph === null) throw new Error("This KernelGraph was disposed");
    const k = this.#kernels;
    k.check("arl_graph_launch", k.sym.arl_graph_launch(k.ctx, this.#graph));
  }

  /** Frees the graph (idempotent). */
  dispose(): void {
    if (this.#graph !== null) this.#kernels.sym.arl_graph_destroy(this.#graph);
    this.#graph = null;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
