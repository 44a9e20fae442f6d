/**
 * Batch-1 decode of several variants of the environment, compared in alternating processes.
 * Switches that the CUDA library reads once per process (`AGENTRL_CUDA_DECODE_QKV_IN_ATTN`,
 * `AGENTRL_CUDA_PDL`, ...) can only be compared this way. Each round runs
 * `bench/gpu/bench.ts --decode-only` once a variant, the variants' order rotated each round. The
 * table gives each variant's median rate (pipelined decode, the loop that waits for each step's
 * tokens, the generation engine with lookahead) and its ratio to the first variant's.
 *
 * Usage: `deno run -A bench/gpu/decode_ab.ts [--runs N] [--device cuda|cpu] [--model NAME] [--small]
 * [--variant NAME:ENV=VALUE,ENV=VALUE]...` (default: 3 runs, cuda, the variants `default`,
 * `attn_wait` = `AGENTRL_CUDA_DECODE_ATTN_TRIGGER=wait`, `down_rows` =
 * `AGENTRL_CUDA_DECODE_DOWN_TRIGGER=rows`, `wait_rows` = both, `mlp_pieces2` =
 * `AGENTRL_CUDA_DECODE_MLP_PIECES=2` and `dot_rows4` = `AGENTRL_CUDA_DECODE_MLP_DOT_ROWS=4`).
 * Exits 1 if a run fails (its output's end is printed), 2 on a bad argument.
 *
 * @module
 */

/** A variant: a name and the environment it adds. */
export interface Variant {
  name: string;
  env: Record<string, string>;
}

/** What one `bench.ts --decode-only` run printed (tokens/s). */
export interface DecodeRates {
  pipelined: number;
  waiting: number;
  engine: number;
}

/** The variants compared when none is given. */
export const DEFAULT_VARIANTS: Variant[] = [
  { name: "default", env: {} },
  { name: "attn_wait", env: { AGENTRL_CUDA_DECODE_ATTN_TRIGGER: "wait" } },
  { name: "down_rows", env: { AGENTRL_CUDA_DECODE_DOWN_TRIGGER: "rows" } },
  {
    name: "wait_rows",
    env: { AGENTRL_CUDA_DECODE_ATTN_TRIGGER: "wait", AGENTRL_CUDA_DECODE_DOWN_TRIGGER: "rows" },
  },
  { name: "mlp_pieces2", env: { AGENTRL_CUDA_DECODE_MLP_PIECES: "2" } },
  { name: "dot_rows4", env: { AGENTRL_CUDA_DECODE_MLP_DOT_ROWS: "4" } },
];

/** Parses `NAME:ENV=VALUE,ENV=VALUE` (`NAME:` alone: no change); throws saying what is wrong. */
export function parseVariant(text: string): Variant {
  const colon = text.indexOf(":");
  const name = colon < 0 ? "" : text.slice(0, colon);
  if (!/^[\w.-]+$/.test(name)) {
    throw new Error(
      `--variant ${JSON.stringify(text)}: expected NAME:ENV=VALUE,... with a name of letters, ` +
        "digits, '_', '.' or '-'",
    );
  }
  const env: Record<string, string> = {};
  const rest = text.slice(colon + 1);
  for (const pair of rest === "" ? [] : rest.split(",")) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(pair);
    if (!m) {
      throw new Error(
        `--variant ${JSON.stringify(text)}: ${JSON.stringify(pair)} is not ENV=VALUE`,
      );
    }
    env[m[1]!] = m[2]!;
  }
  return { name, env };
}

/** The rates in `bench.ts --decode-only`'s output, or null when a line is missing. */
export function parseDecodeRates(output: string): DecodeRates | null {
  const num = (re: RegExp) => {
    const m = re.exec(output);
    return m ? Number(m[1]) : NaN;
  };
  const rates = {
    pipelined: num(/^decode tokens\/s, batch 1: ([0-9.]+)$/m),
    waiting: num(/^decode tokens\/s, batch 1, each step waiting for its tokens: ([0-9.]+)/m),
    engine: num(/^generation engine, batch 1: ([0-9.]+) tokens\/s with lookahead/m),
  };
  return Object.values(rates).every(Number.isFinite) ? rates : null;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * The comparison table: a row a variant (its median of each rate, the pipelined rates of every
 * run, and each median's ratio to the first variant's). Variants without a successful run show
 * "-".
 */
export function formatComparison(variants: Variant[], runs: DecodeRates[][]): string {
  const medians = runs.map((r) =>
    r.length === 0 ? null : {
      pipelined: median(r.map((x) => x.pipelined)),
      waiting: median(r.map((x) => x.waiting)),
      engine: median(r.map((x) => x.engine)),
    }
  );
  const base = medians[0];
  const ratio = (m: number | undefined, b: number | undefined) =>
    m === undefined || b === undefined ? "-" : `${(m / b).toFixed(3)}x`;
  const header = [
    "variant",
    "pipelined",
    "ratio",
    "waiting",
    "ratio",
    "engine",
    "ratio",
    "runs (pipelined)",
  ];
  const rows = variants.map((v, i) => {
    const m = medians[i];
    const cell = (x: number | undefined) => x === undefined ? "-" : x.toFixed(1);
    return [
      v.name,
      cell(m?.pipelined),
      ratio(m?.pipelined, base?.pipelined),
      cell(m?.waiting),
      ratio(m?.waiting, base?.waiting),
      cell(m?.engine),
      ratio(m?.engine, base?.engine),
      runs[i]!.map((r) => r.pipelined.toFixed(0)).join(" ") || "-",
    ];
  });
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]) => cells.map((x, c) => x.padEnd(widths[c]!)).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** Runs the comparison; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const rest = [...args];
  const take = (flag: string): string | undefined => {
    const i = rest.indexOf(flag);
    if (i < 0) return undefined;
    const value = rest[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    rest.splice(i, 2);
    return value;
  };
  let runs: number, device: string, variants: Variant[];
  let small = false;
  let model: string | undefined;
  try {
    const runsText = take("--runs") ?? "3";
    runs = Number(runsText);
    if (!Number.isInteger(runs) || runs < 1) {
      throw new Error(`--runs ${runsText}: expected a whole number >= 1`);
    }
    device = take("--device") ?? "cuda";
    model = take("--model");
    if (device !== "cuda" && device !== "cpu") {
      throw new Error(`--device ${device}: expected cuda or cpu`);
    }
    variants = [];
    for (let v = take("--variant"); v !== undefined; v = take("--variant")) {
      variants.push(parseVariant(v));
    }
    if (variants.length === 0) variants = DEFAULT_VARIANTS;
    const i = rest.indexOf("--small");
    if (i >= 0) {
      small = true;
      rest.splice(i, 1);
    }
    if (rest.length > 0) throw new Error(`unexpected argument ${JSON.stringify(rest[0])}`);
  } catch (e) {
    console.error(`decode_ab: ${(e as Error).message}`);
    return 2;
  }
  const bench = new URL("bench.ts", import.meta.url).pathname;
  const benchArgs = ["run", "-A", bench, "--decode-only", "--device", device];
  if (small) benchArgs.push("--small");
  if (model !== undefined) benchArgs.push("--model", model);
  const results: DecodeRates[][] = variants.map(() => []);
  let failed = 0;
  for (let round = 0; round < runs; round++) {
    for (let j = 0; j < variants.length; j++) {
      const i = (round + j) % variants.length;
      const variant = variants[i]!;
      const out = await new Deno.Command(Deno.execPath(), {
        args: benchArgs,
        env: { NO_COLOR: "1", ...variant.env },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      const rates = out.code === 0 ? parseDecodeRates(text) : null;
      if (rates === null) {
        failed++;
        console.error(
          `decode_ab: ${variant.name}, round ${round + 1}: exit ${out.code}, no rates; the end ` +
            `of its output:\n${text.split("\n").slice(-12).join("\n")}`,
        );
      } else {
        results[i]!.push(rates);
      }
      // (what an L2 set-aside kept, as the library said it, after the rate)
      const l2 = /^arl_l2_persist: (.*)$/m.exec(text)?.[1];
      console.log(
        `round ${round + 1}, ${variant.name}: ` +
          (rates ? `${rates.pipelined.toFixed(1)} tokens/s` : "failed") + (l2 ? ` (${l2})` : ""),
      );
    }
  }
  console.log(formatComparison(variants, results));
  return failed > 0 ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
