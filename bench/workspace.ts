/**
 * The training workspace as packed micro-batches grow: how long its reallocations take with
 * the model's growth factor (1.1) against growing to exactly the size asked (1), over the same
 * sequence of lengths (mostly below the longest so far, now and then a little above, as a run's
 * micro-batches are). Each reallocation frees the buffer and zero-fills a new one.
 *
 * @module
 */
import { Kernels } from "../ffi/mod.ts";
import { Arena } from "../lib/model/_qwen2_workspace.ts";
import { BufferLayout } from "../lib/model/param_layout.ts";
import { type BenchRow, benchRow } from "./_report.ts";

/** Binds 200 growing layouts (up to ~180 MiB) with each slack; the faster of two rounds. */
export function benchWorkspace(options: { log?: (line: string) => void } = {}): BenchRow[] {
  using k = Kernels.open({ threads: 2 });
  const run = (slack: number) => {
    using arena = new Arena(k, slack);
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) {
      const layout = new BufferLayout();
      layout.add("x", [3000 + ((i * 7919) % 97) * 20 + i * 4, 8000]);
      arena.bind(layout);
    }
    return { ms: performance.now() - t0, reallocations: arena.generation };
  };
  const best = (slack: number) => {
    const [a, b] = [run(slack), run(slack)];
    return a.ms < b.ms ? a : b;
  };
  const exact = best(1);
  const grown = best(1.1);
  options.log?.(
    `reallocations: ${exact.reallocations} growing to the size asked, ${grown.reallocations} ` +
      "growing by a tenth at least",
  );
  return [
    benchRow(
      "training workspace over 200 growing micro-batches (slack 1.1)",
      "ms",
      grown.ms,
      "slack 1 (exact size)",
      exact.ms,
      { lowerIsBetter: true },
    ),
  ];
}
