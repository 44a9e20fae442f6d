/**
 * Replays of the decoder layers of a KV-cache step (CUDA graphs), with the
 * embedding before them and, when every row's logits are wanted in order (a
 * decode step), the final norm and the LM head after them. A decode step is
 * hundreds of small kernel calls whose pointers and sizes repeat from token to
 * token; recording them once per shape and replaying the recording
 * removes the per-call host and launch cost. A shape is recorded the second
 * time it is seen (one-off shapes, such as prefills, stay eager), and at most
 * `capacity` recordings are kept (least recently used first out): 32 by default, two for each
 * of 16 batch sizes (token ids from the host, or on the device for a step queued ahead).
 *
 * Off on the CPU library (it has no graphs) and when `AGENTRL_CUDA_GRAPHS=0`.
 *
 * @module
 */
import { KernelGraph } from "../../ffi/graph.ts";
import type { Kernels } from "../../ffi/kernels.ts";
import { envSwitchOff } from "./_env_switch.ts";

/** Recorded decode steps of one model, by shape key. */
export class DecodeGraphs implements Disposable {
  readonly #kernels: Kernels;
  readonly #capacity: number;
  readonly #graphs = new Map<string, KernelGraph>();
  readonly #seen = new Set<string>();
  #enabled: boolean;

  constructor(kernels: Kernels, capacity = 32) {
    this.#kernels = kernels;
    this.#capacity = capacity;
    this.#enabled = kernels.device === "cuda" && !envSwitchOff("AGENTRL_CUDA_GRAPHS");
  }

  /**
   * Runs `body` (the layer calls of a step whose pointers and sizes are fixed
   * by `key`): by replaying its recording, by recording it now (second sight),
   * or directly. A recording that fails turns graphs off for this model, and
   * `body` then runs directly (so a real error surfaces as it would).
   */
  run(key: string, body: () => void): void {
    if (!this.#enabled) return body();
    const known = this.#graphs.get(key);
    if (known) {
      this.#graphs.delete(key); // most recently used last
      this.#graphs.set(key, known);
      return known.launch();
    }
    if (!this.#seen.has(key)) {
      if (this.#seen.size >= 4 * this.#capacity) this.#seen.clear();
      this.#seen.add(key);
      return body();
    }
    if (!KernelGraph.supported(this.#kernels)) {
      this.#enabled = false;
      return body();
    }
    let graph: KernelGraph;
    try {
      graph = KernelGraph.record(this.#kernels, body);
    } catch {
      body(); // a real error throws here, as it would without graphs
      this.#enabled = false; // the calls ran, but cannot be recorded: stay direct
      this.clear();
      return;
    }
    if (this.#graphs.size >= this.#capacity) {
      const [oldest, g] = this.#graphs.entries().next().value!;
      g.dispose();
      this.#graphs.delete(oldest);
    }
    this.#graphs.set(key, graph);
    graph.launch();
  }

  /** Whether steps are recorded and replayed (false after a recording failed). */
  get enabled(): boolean {
    return this.#enabled;
  }

  /** Recordings kept now. */
  get size(): number {
    return this.#graphs.size;
  }

  /** Drops every recording (call when the memory they point to is freed). */
  clear(): void {
    for (const g of this.#graphs.values()) g.dispose();
    this.#graphs.clear();
    this.#seen.clear();
  }

  [Symbol.dispose](): void {
    this.clear();
  }
}
