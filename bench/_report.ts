/**
 * The shared results writer of every benchmark. `deno task bench NAME` prints a
 * table and writes `bench/results/NAME.json`:
 *
 * ```json
 * { "commit": "<sha>[-dirty]",
 *   "machine": { "cpu": "...", "cores": 16, "os": "...", "deno": "2.9.6" },
 *   "rows": [{ "name": "...", "unit": "...", "value": 1, "baseline": "...",
 *              "baseline_value": 1, "ratio": 1 }] }
 * ```
 *
 * `ratio` is oriented so that higher is better: value / baseline_value for a
 * rate, baseline_value / value for a time (pass `lowerIsBetter`). A benchmark
 * builds its rows with {@linkcode benchRow} and hands them to
 * {@linkcode writeReport}; that is the whole API.
 *
 * @module
 */
import { cpus as nodeCpus } from "node:os";

/** One measurement against a baseline measured in the same run. */
export interface BenchRow {
  /** What was measured, e.g. `frozen_lake 4x4 steps/s`. */
  name: string;
  /** Unit of `value` and `baseline_value`, e.g. `steps/s`, `ms`, `GFLOP/s`. */
  unit: string;
  /** The measurement. */
  value: number;
  /** What it was measured against, e.g. `noop_env`, `openblas`, `peak`. */
  baseline: string;
  /** The baseline's measurement, in the same unit. */
  baseline_value: number;
  /** value / baseline_value (or the inverse for times): higher is better. */
  ratio: number;
}

/** The machine a report was measured on. */
export interface MachineInfo {
  /** CPU model name (`/proc/cpuinfo`), or `unknown`. */
  cpu: string;
  /** Logical cores. */
  cores: number;
  /** Operating system, architecture and kernel. */
  os: string;
  /** Deno version. */
  deno: string;
}

/** The content of `bench/results/NAME.json`. */
export interface BenchReport {
  /** `git rev-parse HEAD`, with `-dirty` when the work tree has changes; `unknown` without git. */
  commit: string;
  machine: MachineInfo;
  rows: BenchRow[];
}

/**
 * A row; `ratio` is value / baselineValue, or baselineValue / value when
 * `lowerIsBetter` (times, bytes), so that a ratio above 1 always means "better
 * than the baseline".
 *
 * @example
 * ```ts
 * import { benchRow } from "./_report.ts";
 * const r = benchRow("matmul 1024", "GFLOP/s", 50, "peak", 100);
 * console.log(r.ratio); // 0.5
 * console.log(benchRow("step", "ms", 20, "pytorch", 10, { lowerIsBetter: true }).ratio); // 0.5
 * ```
 */
export function benchRow(
  name: string,
  unit: string,
  value: number,
  baseline: string,
  baselineValue: number,
  options: { lowerIsBetter?: boolean } = {},
): BenchRow {
  for (const [label, v] of [["value", value], ["baseline value", baselineValue]] as const) {
    if (!Number.isFinite(v) || v <= 0) {
      throw new RangeError(`Benchmark '${name}': ${label} ${v} is not a positive finite number`);
    }
  }
  const ratio = options.lowerIsBetter ? baselineValue / value : value / baselineValue;
  return { name, unit, value, baseline, baseline_value: baselineValue, ratio };
}

/**
 * The CPU, core count, OS and Deno version. Needs `--allow-sys=cpus,osRelease`
 * (Deno 2.9 refuses `/proc` to a plain `--allow-read`); without it, `unknown`.
 */
export async function machineInfo(): Promise<MachineInfo> {
  const attempt = <T>(f: () => T, fallback: T): T => {
    try {
      return f();
    } catch {
      return fallback;
    }
  };
  const cpus = attempt(() => nodeCpus(), []);
  const kernel = attempt(() => Deno.osRelease(), "");
  let distro: string | undefined;
  try {
    distro = /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(await Deno.readTextFile("/etc/os-release"))?.[1];
  } catch {
    distro = undefined;
  }
  const os = [Deno.build.os, Deno.build.arch, distro, kernel].filter(Boolean).join(" ");
  return {
    cpu: cpus[0]?.model.trim() || "unknown",
    cores: navigator.hardwareConcurrency,
    os,
    deno: Deno.version.deno,
  };
}

/** The current commit, `-dirty` when the work tree has changes; `unknown` without git. */
export async function gitCommit(): Promise<string> {
  const git = async (...args: string[]) => {
    const out = await new Deno.Command("git", { args, stdout: "piped", stderr: "null" }).output();
    if (!out.success) throw new Error(`git ${args.join(" ")} failed`);
    return new TextDecoder().decode(out.stdout).trim();
  };
  try {
    const sha = await git("rev-parse", "HEAD");
    const dirty = (await git("status", "--porcelain", "--untracked-files=no")) !== "";
    return dirty ? `${sha}-dirty` : sha;
  } catch {
    return "unknown";
  }
}

/**
 * The rows as an aligned text table.
 *
 * @example
 * ```ts
 * import { benchRow, formatTable } from "./_report.ts";
 * console.log(formatTable([benchRow("a", "op/s", 5, "noop", 10)]));
 * ```
 */
export function formatTable(rows: readonly BenchRow[]): string {
  const num = (x: number) =>
    x >= 1000 ? Math.round(x).toLocaleString("en-US") : x >= 1 ? x.toFixed(2) : x.toPrecision(3);
  const table = [
    ["benchmark", "value", "unit", "baseline", "baseline value", "ratio"],
    ...rows.map((r) => [
      r.name,
      num(r.value),
      r.unit,
      r.baseline,
      num(r.baseline_value),
      r.ratio.toFixed(3),
    ]),
  ];
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const line = (row: string[]) =>
    row.map((
      cell,
      c,
    ) => (c === 0 || c >= 2 && c <= 3 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join("  ").trimEnd();
  return [line(table[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...table.slice(1).map(line)]
    .join("\n");
}

/**
 * Prints the table and writes `DIR/NAME.json` (default DIR: `bench/results/`).
 * Returns the path and the report.
 *
 * @example
 * ```ts ignore
 * import { benchRow, writeReport } from "./_report.ts";
 * await writeReport("envs", [benchRow("frozen_lake steps/s", "steps/s", 9e5, "noop_env", 3e6)]);
 * ```
 */
export async function writeReport(
  name: string,
  rows: BenchRow[],
  options: { dir?: string | URL; print?: boolean } = {},
): Promise<{ path: string; report: BenchReport }> {
  if (!/^[\w.-]+$/.test(name)) {
    throw new RangeError(`Benchmark name '${name}' is not valid: expected letters, digits, _ . -`);
  }
  const report: BenchReport = { commit: await gitCommit(), machine: await machineInfo(), rows };
  const dir = options.dir ?? new URL("./results/", import.meta.url);
  const dirUrl = typeof dir === "string" ? new URL(`file://${dir.replace(/\/?$/, "/")}`) : dir;
  await Deno.mkdir(dirUrl, { recursive: true });
  const url = new URL(`${name}.json`, dirUrl);
  await Deno.writeTextFile(url, JSON.stringify(report, null, 2) + "\n");
  const path = decodeURIComponent(url.pathname);
  if (options.print ?? true) {
    console.log(
      `\n${name} (${report.machine.cpu}, ${report.machine.cores} cores, commit ${
        report.commit.slice(0, 12)
      })`,
    );
    console.log(formatTable(rows));
    console.log(`wrote ${path}`);
  }
  return { path, report };
}
