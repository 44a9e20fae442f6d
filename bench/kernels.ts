/**
 * `deno task bench kernels`: SGEMM on model shapes, packed attention and the
 * fused log-prob kernel, each against the FMA peak measured in the same run,
 * and SGEMM against OpenBLAS's `cblas_sgemm` in the same process where
 * OpenBLAS is installed (Debian: `apt-get install libopenblas0`).
 *
 * @module
 */
import {
  attentionBackward,
  attentionForward,
  fmaPeak,
  Kernels,
  lmHead,
  logprobForward,
  sgemm,
  Tensor,
} from "../ffi/mod.ts";
import { type BenchRow, benchRow } from "./_report.ts";

const OPENBLAS_PATHS = [
  Deno.env.get("AGENTRL_OPENBLAS"),
  "libopenblas.so.0",
  "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
  "/usr/lib/x86_64-linux-gnu/libopenblas.so.0",
].filter((p): p is string => !!p);

const CBLAS = {
  cblas_sgemm: {
    parameters: [
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "i32",
      "f32",
      "pointer",
      "i32",
      "pointer",
      "i32",
      "f32",
      "pointer",
      "i32",
    ],
    result: "void",
  },
  openblas_set_num_threads: { parameters: ["i32"], result: "void" },
} as const;

function openBlas(): Deno.DynamicLibrary<typeof CBLAS> | null {
  for (const path of OPENBLAS_PATHS) {
    try {
      return Deno.dlopen(path, CBLAS);
    } catch { /* try the next path */ }
  }
  return null;
}

/** Best of `reps` timed runs after one warm-up, in milliseconds. */
function best(fn: () => void, reps = 3): number {
  fn();
  let min = Infinity;
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    fn();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
}

function random(k: Kernels, shape: number[], scale = 1): Tensor<"f32"> {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = (Math.random() - 0.5) * scale;
  return Tensor.from(k, data, shape);
}

/** SGEMM shapes (M tokens; N, K from the tiny default and Qwen2.5-0.5B's layers). */
export const SGEMM_SHAPES: [number, number, number][] = [
  [512, 128, 256],
  [512, 896, 896],
  [2048, 128, 896],
  [2048, 896, 896],
  [2048, 4864, 896],
  [2048, 896, 4864],
  [4096, 896, 896],
  [4096, 4864, 896],
];

/** Runs the kernel benchmarks and returns their rows. */
export function benchKernels(
  options: { threads?: number; log?: (line: string) => void } = {},
): BenchRow[] {
  const threads = options.threads ?? navigator.hardwareConcurrency ?? 2;
  const log = options.log ?? (() => {});
  using k = Kernels.open({ threads });
  const rows: BenchRow[] = [];
  const add = (
    name: string,
    unit: string,
    value: number,
    baseline: string,
    baselineValue: number,
  ) => rows.push(benchRow(name, unit, value, baseline, baselineValue));
  const peak = Math.max(fmaPeak(k, 100_000_000), fmaPeak(k, 100_000_000));
  add(`fma peak (${k.backend}, ${threads} threads)`, "GFLOP/s", peak, "peak", peak);
  log(`peak ${peak.toFixed(1)} GFLOP/s`);

  const blas = openBlas();
  if (blas) blas.symbols.openblas_set_num_threads(threads);
  else {log(
      "OpenBLAS not found: SGEMM is compared with the peak only (apt-get install libopenblas0)",
    );}
  for (const [m, n, kk] of SGEMM_SHAPES) {
    using x = random(k, [m, kk]);
    using w = random(k, [n, kk]);
    using y = new Tensor(k, [m, n], "f32");
    const flops = 2 * m * n * kk;
    const ours = flops / best(() => sgemm(k, y, x, w, { transB: true })) / 1e6;
    const name = `sgemm y=x.w^T M=${m} N=${n} K=${kk}`;
    add(name, "GFLOP/s", ours, "peak", peak);
    if (blas) {
      const ref = flops /
        best(() =>
          blas.symbols.cblas_sgemm(101, 111, 112, m, n, kk, 1, x.ptr, kk, w.ptr, kk, 0, y.ptr, n)
        ) / 1e6;
      add(name, "GFLOP/s", ours, "openblas", ref);
    }
    log(`${name}: ${ours.toFixed(1)} GFLOP/s`);
  }
  blas?.close();

  // Packed causal attention, Qwen2.5-0.5B heads: 4 sequences of 512 tokens.
  {
    const [b, len, hq, hkv, d] = [4, 512, 14, 2, 64];
    const t = b * len;
    using q = random(k, [t, hq, d]);
    using kk = random(k, [t, hkv, d]);
    using v = random(k, [t, hkv, d]);
    using out = new Tensor(k, [t, hq, d], "f32");
    using lse = new Tensor(k, [hq, t], "f32");
    using cu = Tensor.from(k, Int32Array.from({ length: b + 1 }, (_, i) => i * len));
    // Two matmuls over the causal half: 2 * 2 * len^2/2 * d flops per head and sequence.
    const flops = b * hq * 2 * len * len * d;
    const fwd = flops / best(() => attentionForward(k, out, lse, q, kk, v, cu)) / 1e6;
    add(
      `attention forward T=${t} (${b}x${len}) HQ=${hq} HKV=${hkv} D=${d}`,
      "GFLOP/s",
      fwd,
      "peak",
      peak,
    );
    using dout = random(k, [t, hq, d]);
    using dq = new Tensor(k, [t, hq, d], "f32");
    using dk = new Tensor(k, [t, hkv, d], "f32");
    using dv = new Tensor(k, [t, hkv, d], "f32");
    const bwd = (2.5 * flops) /
      best(() => attentionBackward(k, { dq, dk, dv }, dout, q, kk, v, out, lse, cu), 1) /
      1e6;
    add(
      `attention backward T=${t} (${b}x${len}) HQ=${hq} HKV=${hkv} D=${d}`,
      "GFLOP/s",
      bwd,
      "peak",
      peak,
    );
    log(`attention: forward ${fwd.toFixed(1)}, backward ${bwd.toFixed(1)} GFLOP/s`);
  }

  // Fused log-prob against the LM-head matmul alone (Qwen2.5-0.5B's vocabulary).
  {
    const [t, v, c] = [512, 151936, 896];
    using h = random(k, [t, c]);
    using w = random(k, [v, c], 0.1);
    using targets = Tensor.from(
      k,
      Int32Array.from({ length: t }, () => Math.floor(Math.random() * v)),
    );
    using logp = new Tensor(k, [t], "f32");
    using lse = new Tensor(k, [t], "f32");
    using entropy = new Tensor(k, [t], "f32");
    const flops = 2 * t * v * c;
    let matmul: number;
    {
      using logits = new Tensor(k, [t, v], "f32");
      matmul = flops / best(() => lmHead(k, logits, h, w)) / 1e6;
    }
    const fused = flops / best(() => logprobForward(k, { logp, lse, entropy }, h, targets, w)) /
      1e6;
    const name = `fused log-prob + entropy T=${t} V=${v} C=${c}`;
    add(`lm-head matmul T=${t} V=${v} C=${c}`, "GFLOP/s", matmul, "peak", peak);
    add(name, "GFLOP/s (matmul flops)", fused, "lm-head matmul", matmul);
    log(`${name}: ${fused.toFixed(1)} vs matmul ${matmul.toFixed(1)} GFLOP/s`);
  }
  return rows;
}
