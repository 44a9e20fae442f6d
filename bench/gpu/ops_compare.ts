/**
 * Compares every op of the kernel ABI between two kernel contexts (the CPU
 * library and the CUDA one) on the same seeded random inputs. Per output it
 * reports the relative L2 error ||cuda - cpu|| / ||cpu||, the largest absolute
 * error and pass/fail against a tolerance (NaN or infinity never passes).
 * Outputs the op writes are poisoned with NaN first; outputs it accumulates
 * into (+=) start from the same random values on both sides and are compared
 * by their increment (after - before), so a kernel that overwrites fails.
 *
 * Usage: `deno run --allow-read --allow-env --allow-ffi bench/gpu/ops_compare.ts [--self-check]`
 * prints a table and exits 1 if any output is out of tolerance; without a CUDA
 * device it says "skipped: no CUDA device" and exits 0. `--self-check`
 * compares two CPU contexts (1 thread against all cores) instead: a check of
 * this harness that needs no GPU. `AGENTRL_OPS_ONLY=a|b` runs only the ops whose name
 * contains `a` or `b`; `AGENTRL_OPS_SKIP=a|b` leaves out those whose name contains `a` or `b`
 * (`|` separates, as names hold commas).
 *
 * @module
 */
import { fmaPeak, Kernels } from "../../ffi/mod.ts";
import { attentionCases } from "./ops/attention_cases.ts";
import { errorRow, type OpRow, runCase } from "./ops/compare.ts";
import { decodeGemvCases } from "./ops/decode_gemv_cases.ts";
import { decodeLayerCases } from "./ops/decode_layer_cases.ts";
import { graphCases } from "./ops/graph_cases.ts";
import { type Case, EXACT, type Scope } from "./ops/harness.ts";
import { layerCases } from "./ops/layer_cases.ts";
import { logprobCases } from "./ops/logprob_cases.ts";
import { lossCases } from "./ops/loss_cases.ts";
import { linearBackwardCases, matmulCases } from "./ops/matmul_cases.ts";
import { optimCases } from "./ops/optim_cases.ts";
import { sampleCases } from "./ops/sample_cases.ts";

export { type OpRow } from "./ops/compare.ts";
export { EXACT, TOL_BF16, TOL_FP32, TOL_GEMM } from "./ops/harness.ts";

/**
 * Runs every op of the ABI on both contexts with the same inputs and compares
 * the second (`cuda`) against the first (`cpu`). Never throws for a failing
 * op: its row says why.
 */
export function compareOps(cpu: Kernels, cuda: Kernels, seed = 20240611): OpRow[] {
  const cases: Case[] = [
    ...matmulCases(seed),
    ...decodeGemvCases(seed),
    ...decodeLayerCases(seed),
    ...linearBackwardCases(seed),
    ...layerCases(seed, cpu),
    ...attentionCases(seed, cpu),
    ...logprobCases(seed, cpu),
    ...lossCases(seed),
    ...optimCases(seed),
    ...sampleCases(seed),
    ...graphCases(seed),
    {
      op: "abiVersion",
      tol: EXACT,
      run: (s: Scope) => ({ version: [s.k.sym.arl_abi_version()] }),
    },
  ];
  // AGENTRL_OPS_ONLY=a|b: only the ops whose name contains a or b (a quick check of a kernel);
  // AGENTRL_OPS_SKIP=a|b: not those whose name contains a or b.
  const texts = (name: string) => (Deno.env.get(name) ?? "").split("|").filter((t) => t !== "");
  const [only, skip] = [texts("AGENTRL_OPS_ONLY"), texts("AGENTRL_OPS_SKIP")];
  const rows = cases
    .filter((c) =>
      (only.length === 0 || only.some((t) => c.op.includes(t))) &&
      !skip.some((t) => c.op.includes(t))
    )
    .flatMap((c): OpRow[] => {
      const needs = c.needs;
      const missing = needs && [cpu, cuda].find((k) => k.sym[needs] === null);
      if (!missing) return runCase(c, cpu, cuda);
      const note = `skipped: the ${missing.device} library was built before ${c.needs}`;
      return [{ op: c.op, output: "-", relErr: 0, maxAbs: 0, tol: NaN, ok: true, note }];
    });
  // fmaPeak: only that it runs and reports a positive rate on both.
  try {
    // The CPU emulator (backend "cuda-emulated") runs each GPU thread's loop on one core.
    const iterations = cuda.backend === "cuda-emulated" ? 10 : 100_000;
    const [g0, g1] = [fmaPeak(cpu, 100_000), fmaPeak(cuda, iterations)];
    const ok = g0 > 0 && g1 > 0 && Number.isFinite(g0) && Number.isFinite(g1);
    const note = `runs: cpu ${g0.toFixed(0)} GFLOP/s, ${cuda.device} ${g1.toFixed(0)} GFLOP/s`;
    rows.push({ op: "fmaPeak", output: "gflops", relErr: 0, maxAbs: 0, tol: NaN, ok, note });
  } catch (e) {
    rows.push(errorRow("fmaPeak", e));
  }
  return rows;
}

/** The rows as a fixed-width table (op, output, rel err, max abs, tol, ok, note). */
export function formatTable(rows: readonly OpRow[]): string {
  const w = [
    Math.max(2, ...rows.map((r) => r.op.length)),
    Math.max(6, ...rows.map((r) => r.output.length)),
  ];
  const num = (x: number) => (Number.isNaN(x) ? "NaN" : x === 0 ? "0" : x.toExponential(2));
  const line = (c: string[]) =>
    [
      c[0]!.padEnd(w[0]!),
      c[1]!.padEnd(w[1]!),
      c[2]!.padStart(9),
      c[3]!.padStart(9),
      c[4]!.padStart(8),
      c[5]!.padEnd(4),
      c[6] ?? "",
    ]
      .join("  ").trimEnd();
  const tolText = (t: number) => (Number.isNaN(t) ? "-" : t === EXACT ? "exact" : num(t));
  return [
    line(["op", "output", "rel err", "max abs", "tol", "ok", "note"]),
    ...rows.map((r) =>
      line([
        r.op,
        r.output,
        num(r.relErr),
        num(r.maxAbs),
        tolText(r.tol),
        r.ok ? "ok" : "FAIL",
        r.note ?? "",
      ])
    ),
  ].join("\n");
}

if (import.meta.main) {
  const selfCheck = Deno.args.includes("--self-check");
  if (!selfCheck && !Kernels.available("cuda")) {
    let why = "";
    try {
      Kernels.open({ device: "cuda" }).close();
    } catch (e) {
      why = e instanceof Error ? ` (${e.message})` : "";
    }
    console.log(`ops_compare: skipped: no CUDA device${why}`);
    Deno.exit(0);
  }
  using cpu = Kernels.open();
  using other = selfCheck ? Kernels.open({ threads: 1 }) : Kernels.open({ device: "cuda" });
  const rows = compareOps(cpu, other);
  console.log(formatTable(rows));
  const failed = rows.filter((r) => !r.ok).length;
  console.log(
    `\n${
      rows.length - failed
    } of ${rows.length} outputs within tolerance (${cpu.backend} vs ${other.backend})`,
  );
  if (failed > 0) Deno.exit(1);
}
