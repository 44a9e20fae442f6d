/**
 * `deno task bench [NAME]`: runs one benchmark, or every quick one (a few
 * minutes in all) when no name is given. Each prints a table and writes
 * `bench/results/NAME.json` through `./_report.ts`. To add a benchmark, add an
 * entry to {@linkcode BENCHMARKS} whose `run` returns rows built with `benchRow`.
 *
 * @module
 */
import { type BenchRow, writeReport } from "./_report.ts";

/** A benchmark: what it measures, whether it is quick, and how to run it. */
export interface Benchmark {
  description: string;
  /** Part of `deno task bench` with no name (fits in a few minutes). */
  quick: boolean;
  run(): Promise<BenchRow[]>;
}

/** Every benchmark, by the name `deno task bench NAME` takes. */
export const BENCHMARKS: Record<string, Benchmark> = {
  kernels: {
    description:
      "SGEMM (vs OpenBLAS and the FMA peak), packed attention, fused log-prob vs its matmul",
    quick: true,
    run: async () =>
      (await import("./kernels.ts")).benchKernels({ log: (l) => console.log(`  ${l}`) }),
  },
  model: {
    description:
      "prefill / decode (1, 8, 64 sequences) / training tokens/s of the tiny and a 0.5B-shaped " +
      "model vs the FMA peak; continuous vs static batching (~40 s, 8 GB on 2 cores)",
    quick: true,
    run: async () => (await import("./model.ts")).benchModel({ log: (l) => console.log(`  ${l}`) }),
  },
  rollout: {
    description:
      "async env-granular rollout vs lockstep (env steps/s, generated tokens/s): WebShop with " +
      "heavy-tailed step delays, and FrozenLake (~1 min)",
    quick: true,
    run: async () =>
      (await import("./rollout.ts")).benchRollout({ log: (l) => console.log(`  ${l}`) }),
  },
  workspace: {
    description:
      "training workspace reallocations over growing micro-batches: growth by 1.1x vs exact",
    quick: true,
    run: async () =>
      (await import("./workspace.ts")).benchWorkspace({ log: (l) => console.log(`  ${l}`) }),
  },
  envs: {
    description: "environment steps/s (resets included, random valid actions) vs a no-op env",
    quick: true,
    run: async () => (await import("./envs.ts")).runEnvsBenchmark(),
  },
};

/** Runs the benchmarks `args` names (all quick ones when empty); returns the exit status. */
export async function main(args: readonly string[]): Promise<number> {
  const names = Object.keys(BENCHMARKS).sort();
  const unknown = args.filter((a) => !(a in BENCHMARKS));
  if (unknown.length > 0 || args.some((a) => a.startsWith("-"))) {
    console.error(
      `Unknown benchmark '${unknown[0] ?? args[0]}': expected one of ${names.join(", ")}\n` +
        names.map((n) => `  ${n.padEnd(10)} ${BENCHMARKS[n]!.description}`).join("\n"),
    );
    return 2;
  }
  const chosen = args.length > 0 ? [...args] : names.filter((n) => BENCHMARKS[n]!.quick);
  for (const name of chosen) {
    console.log(`running ${name}: ${BENCHMARKS[name]!.description}`);
    await writeReport(name, await BENCHMARKS[name]!.run());
  }
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
