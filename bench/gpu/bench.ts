/**
 * Our side of the GPU benchmark against PyTorch eager (bench/gpu/torch_bench.py,
 * same shapes, same machine): a Qwen2.5-0.5B-shaped model with random
 * weights;
 * - training tokens/s: zeroGrad + forward + backward of a packed log-prob
 *   batch (8 x 512 tokens);
 * - log-prob forward tokens/s (no backward, same batch);
 * - decode tokens/s with the KV cache at batch 32 (prompt 128, 64 greedy
 *   tokens: createKvCache, a prefill by forwardCached, then one
 *   forwardCached + sample per token; the decode steps timed);
 * - the same at batch 1, and as a fraction of the memory-bandwidth bound:
 *   copy bandwidth (bytes read + written, PyTorch's measurement when given,
 *   else ours) / (bytes per weight x parameters read per token: 2 with bf16
 *   weights, the CUDA default, 4 with `AGENTRL_PRECISION=f32`; a tied LM head
 *   counts once, an untied embedding table not at all).
 * With bf16 weights a training step includes refreshing the bf16 copy of the
 * weights (as one after an optimizer step does; PyTorch's autocast casts them
 * every step too).
 * Warm-up, then the median of the repetitions. Each part is measured on its
 * own: one that fails is reported (null in the JSON) and the others go on.
 * Prints ours / PyTorch for every rate (target >= 1) and the bandwidth
 * fraction (target >= 0.6).
 *
 * Usage: `deno run -A bench/gpu/bench.ts [--torch TORCH_JSON] [--json OUT]
 * [--device cuda|cpu] [--model NAME] [--small] [--train-only | --decode-only]` (`--model`:
 * qwen2_5_0_5b, the default, qwen3_0_6b, llama3_2_1b, qwen2_5_1_5b or qwen2_5_3b, from
 * bench/model_shapes.ts; the others
 * only without `--torch`; `--small`: a tiny model of that kind,
 * for a CPU smoke test; `--train-only`: two training steps and nothing else, for a
 * profiler; `--decode-only`: batch-1 greedy decode and nothing else, likewise).
 *
 * @module
 */
import { Kernels, type PendingSample, sample, sampleStart, Tensor } from "../../ffi/mod.ts";
import type { Qwen2Config } from "../../lib/model/config.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import { GenerationEngine } from "../../lib/infer/engine.ts";
import { resolvePrecision } from "../../lib/model/_mixed_precision.ts";
import { QWEN2_5_0_5B_CONFIG } from "../qwen2_5_0_5b.ts";
import { benchModel } from "../model_shapes.ts";

/** Rates measured on our side (null: the part failed). */
export interface OurRates {
  backend: string;
  /** Training batch [sequences, length] and decode [batch, prompt, new tokens]. */
  shapes: { train: [number, number]; decode: [number, number, number] };
  params: number;
  /** Parameters read per decoded token (the bandwidth bound's bytes / bytesPerWeight). */
  paramsReadPerToken: number;
  /** Bytes per weight the matrix kernels read: 2 (bf16 copy) or 4 (fp32). */
  bytesPerWeight: number;
  copyBwGbs: number | null;
  trainTokensS: number | null;
  logprobTokensS: number | null;
  decodeTokensS: number | null;
  decode1TokensS: number | null;
  /** The copy bandwidth the fraction was computed with, and whose it is. */
  boundBwGbs: number | null;
  boundBwSource: string;
  decode1BwFraction: number | null;
  /** Seconds each part took (warm-up included). */
  seconds: Record<string, number>;
  errors: Record<string, string>;
}

/** Sizes of a benchmark run. */
export interface BenchShape {
  config: Qwen2Config;
  train: [number, number];
  decode: [number, number, number];
  reps: number;
  decodeReps: number;
  copyElements: number;
}

/**
 * The shapes torch_bench.py uses (and its --small ones), for `model` (Qwen2.5-0.5B's unless
 * given: torch_bench.py times only that one).
 */
export function benchShape(small: boolean, model: Qwen2Config = QWEN2_5_0_5B_CONFIG): BenchShape {
  return small
    ? {
      config: {
        ...model,
        vocab_size: 1000,
        hidden_size: 128,
        intermediate_size: 256,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 32,
      },
      train: [2, 64],
      decode: [4, 16, 8],
      reps: 3,
      decodeReps: 3,
      copyElements: 1 << 20,
    }
    : {
      config: model,
      train: [8, 512],
      decode: [32, 128, 64],
      reps: 5,
      decodeReps: 3,
      copyElements: 1 << 28,
    };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Seconds of `fn` (which must end with a synchronizing read): warm-up, then the median. */
function timed(fn: () => void, reps: number): number {
  fn(); // warm-up (and workspace allocation)
  const times: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    fn();
    times.push((performance.now() - t0) / 1000);
  }
  return median(times);
}

function randomTokens(n: number, vocab: number, salt: number): Int32Array {
  return Int32Array.from({ length: n }, (_, i) => (i * 7919 + salt * 104729 + 13) % vocab);
}

/** A packed batch of `b` sequences of `len` tokens; targets the next token (0 after the last). */
function packedBatch(b: number, len: number, vocab: number) {
  const t = b * len;
  const tokens = randomTokens(t, vocab, 2);
  return {
    tokens,
    positions: Int32Array.from({ length: t }, (_, i) => i % len),
    cuSeqlens: Int32Array.from({ length: b + 1 }, (_, s) => s * len),
    targets: Int32Array.from({ length: t }, (_, i) => (i + 1) % len === 0 ? 0 : tokens[i + 1]!),
  };
}

/** Parameters read per decoded token: all of them once, an untied embedding table not at all. */
export function paramsReadPerToken(model: Qwen2Model): number {
  let n = model.numParams;
  if (!model.config.tie_word_embeddings) n -= model.param("model.embed_tokens.weight").size;
  if (model.hasValueHead) {
    n -= model.param("value_head.weight").size + model.param("value_head.bias").size;
  }
  return n;
}

/**
 * Greedy decode of `b` sequences: tokens/s over the decode steps (the prefill not timed).
 * Pipelined (the default), each step reads its token ids from the device, where the last
 * step's sampling wrote them (`sampleStart`), so that step t + 1 is queued before the host
 * reads step t's tokens; otherwise each step waits for its tokens and uploads them.
 */
function decodeRate(
  model: Qwen2Model,
  b: number,
  prompt: number,
  steps: number,
  reps: number,
  pipelined = true,
  sampling = true,
) {
  const vocab = model.config.vocab_size;
  const k = model.kernels;
  const run = (): number => {
    using cache = model.createKvCache(b, prompt + steps + 1);
    const tokens = randomTokens(b * prompt, vocab, 3);
    const positions = Int32Array.from({ length: b * prompt }, (_, i) => i % prompt);
    const slots = Int32Array.from({ length: b * prompt }, (_, i) => Math.floor(i / prompt));
    const lastRows = Int32Array.from({ length: b }, (_, s) => s * prompt + prompt - 1);
    const greedy = Array.from({ length: b }, (_, s) => ({ temperature: 0, seed: s, counter: 0 }));
    // one id buffer: each step's embedding reads it before its sampling writes it (stream order)
    using ids = new Tensor(k, [b], "i32");
    const prefill = model.forwardCached(cache, tokens, positions, slots, lastRows)!;
    let next = sampleStart(k, prefill, greedy, ids).wait().tokens;
    const slotIds = Int32Array.from({ length: b }, (_, s) => s);
    const rows = Int32Array.from({ length: b }, (_, s) => s);
    const t0 = performance.now();
    let pending: PendingSample | null = null;
    for (let step = 0; step < steps; step++) {
      const pos = new Int32Array(b).fill(prompt + step);
      if (!pipelined) {
        const logits = model.forwardCached(cache, next, pos, slotIds, rows)!;
        next = sample(k, logits, greedy).tokens; // reads the tokens back: a wait
        continue;
      }
      const logits = model.forwardCached(cache, ids, pos, slotIds, rows)!;
      if (!sampling) { // (the steps' parts: the ids stay the first step's; one sampling at the end)
        if (step === steps - 1) pending = sampleStart(k, logits, greedy, ids);
        continue;
      }
      const queued = sampleStart(k, logits, greedy, ids);
      if (pending !== null) next = pending.wait().tokens; // step - 1's, while this step runs
      pending = queued;
    }
    if (pending !== null) next = pending.wait().tokens;
    return (performance.now() - t0) / 1000 / steps;
  };
  run(); // warm-up
  return b / median(Array.from({ length: reps }, run));
}

/** Two training steps of the benchmark's shape, nothing else (for a profiler). */
export function profileTrain(
  device: "cuda" | "cpu",
  small: boolean,
  config: Qwen2Config = QWEN2_5_0_5B_CONFIG,
): void {
  using k = Kernels.open({ device });
  const shape = benchShape(small, config);
  using model = new Qwen2Model(k, shape.config, { init: "none" });
  k.check(
    "arl_fill_f32",
    k.sym.arl_fill_f32(k.ctx, model.params.ptr, 0.01, BigInt(model.params.size)),
  );
  model.markParamsChanged();
  const [b, len] = shape.train;
  const batch = packedBatch(b, len, shape.config.vocab_size);
  const t = b * len;
  for (let step = 0; step < 2; step++) {
    model.zeroGrad();
    model.forward(batch, { entropy: false });
    model.backward({ dlogp: new Float32Array(t).fill(-1 / t) });
    model.grad("model.norm.weight").read();
  }
}

/** Batch-1 greedy decode and nothing else (for a profiler); prints tokens/s. */
export async function profileDecode(
  device: "cuda" | "cpu",
  small: boolean,
  config: Qwen2Config = QWEN2_5_0_5B_CONFIG,
  steps = 64,
): Promise<void> {
  using k = Kernels.open({ device });
  const shape = benchShape(small, config);
  const copyBwGbs = copyBandwidth(k, shape.copyElements);
  using model = new Qwen2Model(k, shape.config, { init: "none" });
  k.check(
    "arl_fill_f32",
    k.sym.arl_fill_f32(k.ctx, model.params.ptr, 0.01, BigInt(model.params.size)),
  );
  model.markParamsChanged();
  // pipelined and waiting in turn, each first in turn, four times each (the median of each)
  const rates: [number[], number[]] = [[], []];
  for (let rep = 0; rep < 8; rep++) {
    const pipelined = (rep & 1) === (rep >> 1 & 1);
    rates[pipelined ? 0 : 1].push(decodeRate(model, 1, shape.decode[1], steps, 1, pipelined));
  }
  const [rate, waiting] = rates.map(median) as [number, number];
  const graphs = model.decodeGraphs;
  console.log(
    `decode graphs: ${graphs.enabled ? `on, ${graphs.recorded} recorded` : "off"}` +
      (Deno.env.get("AGENTRL_DECODE_LAYER") === "0" ? " (separate calls a layer)" : ""),
  );
  console.log(`decode tokens/s, batch 1: ${rate.toFixed(1)}`);
  const bytes = resolvePrecision(k) === "bf16" ? 2 : 4;
  const read = paramsReadPerToken(model);
  console.log(
    `decode batch 1, fraction of bandwidth bound: ${
      (rate * bytes * read / (copyBwGbs * 1e9)).toFixed(3)
    } (${bytes} B x ${(read / 1e6).toFixed(1)}M params a token at ${
      copyBwGbs.toFixed(0)
    } GB/s, our copy)`,
  );
  console.log(
    `decode tokens/s, batch 1, each step waiting for its tokens: ${waiting.toFixed(1)} ` +
      `(pipelined: ${(rate / waiting).toFixed(3)}x)`,
  );
  // What the step's parts between the LM head and the next step's layers cost: the same loop
  // without the sampling (one at the end), alternating with the whole step, medians of four.
  // AGENTRL_DECODE_KEEP_PLACEMENT=1 (decode_ab.ts) also leaves out the placement's upload.
  const parts: [number[], number[]] = [[], []];
  for (let rep = 0; rep < 8; rep++) {
    const whole = (rep & 1) === (rep >> 1 & 1);
    parts[whole ? 0 : 1].push(decodeRate(model, 1, shape.decode[1], steps, 1, true, whole));
  }
  const [whole, unsampled] = parts.map(median) as [number, number];
  console.log(
    `decode batch 1 without the sampling: ${unsampled.toFixed(1)} tokens/s against ` +
      `${whole.toFixed(1)} (${(1e6 / whole - 1e6 / unsampled).toFixed(1)} us a token)`,
  );
  const [ahead, plain] = [
    await engineDecodeRate(model, shape.decode[1], steps, true),
    await engineDecodeRate(model, shape.decode[1], steps, false),
  ];
  console.log(
    `generation engine, batch 1: ${ahead.toFixed(1)} tokens/s with lookahead, ` +
      `${plain.toFixed(1)} without (${(ahead / plain).toFixed(3)}x)`,
  );
}

/**
 * The generation engine's batch-1 greedy decode rate: one request of `steps + 1` new tokens
 * against one of 1 (the prefill and the first token), the difference over `steps`; the median of
 * three after a warm-up.
 */
async function engineDecodeRate(
  model: Qwen2Model,
  prompt: number,
  steps: number,
  lookahead: boolean,
): Promise<number> {
  const engine = new GenerationEngine(model, {
    maxRunningRequests: 1,
    maxModelLen: prompt + steps + 2,
    lookahead,
  });
  const ids = Array.from(randomTokens(prompt, model.config.vocab_size, 5));
  const timedRequest = async (n: number) => {
    const t0 = performance.now();
    await engine.generate({
      prompt_token_ids: ids,
      max_new_tokens: n,
      temperature: 0,
      ignore_eos: true,
    });
    return performance.now() - t0;
  };
  try {
    const run = async () => (await timedRequest(steps + 1)) - (await timedRequest(1));
    await run(); // warm-up (graphs recorded)
    const ms = median([await run(), await run(), await run()]);
    return steps / (ms / 1000);
  } finally {
    await engine.close();
  }
}

/** Device-to-device copy bandwidth of `n` floats, GB/s (bytes read + written). */
function copyBandwidth(k: Kernels, n: number): number {
  using x = new Tensor(k, [n], "f32");
  using y = new Tensor(k, [n], "f32");
  k.check("arl_fill_f32", k.sym.arl_fill_f32(k.ctx, x.ptr, 0.5, BigInt(n)));
  // arl_copy returns when the copy is done (a stream synchronize)
  return (2 * n * 4) / timed(() => y.copyFrom(x), 10) / 1e9;
}

/**
 * Measures our rates on `device` for `shapeOf`'s shape; `torchBwGbs`: PyTorch's copy bandwidth
 * for the bound.
 */
export function benchOurs(
  device: "cuda" | "cpu",
  small: boolean,
  torchBwGbs: number | null = null,
  log: (line: string) => void = () => {},
  shapeOf: Qwen2Config = QWEN2_5_0_5B_CONFIG,
): OurRates {
  const shape = benchShape(small, shapeOf);
  const config = shape.config;
  const seconds: Record<string, number> = {};
  const errors: Record<string, string> = {};
  const part = <T>(name: string, fn: () => T): T | null => {
    const t0 = performance.now();
    try {
      const v = fn();
      seconds[name] = (performance.now() - t0) / 1000;
      log(
        `${name}: ${typeof v === "number" ? v.toFixed(1) : "done"} (${seconds[name].toFixed(1)} s)`,
      );
      return v;
    } catch (e) {
      seconds[name] = (performance.now() - t0) / 1000;
      errors[name] = String((e as Error).message ?? e).slice(0, 300);
      log(`${name}: FAILED (${seconds[name].toFixed(1)} s): ${(e as Error).stack ?? e}`);
      return null;
    }
  };

  using k = Kernels.open({ device });
  const precision = resolvePrecision(k);
  const backend = `${k.backend}, ${precision} weights${
    device === "cuda" && precision === "f32"
      ? `, matmul ${Deno.env.get("AGENTRL_CUDA_MATMUL") ?? "default"}`
      : ""
  }`;
  log(`backend ${backend}`);

  const copyBwGbs = part("copy bandwidth GB/s", () => copyBandwidth(k, shape.copyElements));

  const model = part("init (random weights)", () => new Qwen2Model(k, config, { seed: 0 }));
  const result: OurRates = {
    backend,
    shapes: { train: shape.train, decode: shape.decode },
    params: model?.numParams ?? 0,
    paramsReadPerToken: model ? paramsReadPerToken(model) : 0,
    bytesPerWeight: precision === "bf16" ? 2 : 4,
    copyBwGbs,
    trainTokensS: null,
    logprobTokensS: null,
    decodeTokensS: null,
    decode1TokensS: null,
    boundBwGbs: null,
    boundBwSource: "",
    decode1BwFraction: null,
    seconds,
    errors,
  };
  if (model === null) return result;
  try {
    const [trainB, trainLen] = shape.train;
    const t = trainB * trainLen;
    const batch = packedBatch(trainB, trainLen, config.vocab_size);
    const dlogp = new Float32Array(t).fill(-1 / t);
    const probe = model.grad("model.norm.weight");
    result.trainTokensS = part("train tokens/s", () =>
      t /
      timed(() => {
        model.markParamsChanged(); // as after an optimizer step: the bf16 copy is refreshed
        model.zeroGrad();
        model.forward(batch, { entropy: false });
        model.backward({ dlogp });
        probe.read(); // a synchronize
      }, shape.reps));
    result.logprobTokensS = part("log-prob forward tokens/s", () =>
      t /
      timed(() => {
        model.forward(batch, { entropy: false }).logp.read();
      }, shape.reps));
    model.releaseWorkspaces();
    const [decodeB, prompt, steps] = shape.decode;
    result.decodeTokensS = part(
      `decode tokens/s, batch ${decodeB}`,
      () => decodeRate(model, decodeB, prompt, steps, shape.decodeReps),
    );
    result.decode1TokensS = part(
      "decode tokens/s, batch 1",
      () => decodeRate(model, 1, prompt, steps, shape.decodeReps),
    );
    result.boundBwGbs = torchBwGbs ?? copyBwGbs;
    result.boundBwSource = torchBwGbs ? "PyTorch's copy" : "our copy";
    if (result.decode1TokensS !== null && result.boundBwGbs) {
      result.decode1BwFraction =
        (result.decode1TokensS * result.bytesPerWeight * result.paramsReadPerToken) /
        (result.boundBwGbs * 1e9);
    }
  } finally {
    model.dispose();
  }
  return result;
}

function fmt(x: number | null | undefined, digits = 0): string {
  return x === null || x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits);
}

if (import.meta.main) {
  const args = [...Deno.args];
  const flag = (name: string) => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const torchPath = flag("--torch");
  const jsonOut = flag("--json");
  const device = (flag("--device") ?? "cuda") as "cuda" | "cpu";
  const modelName = flag("--model") ?? "qwen2_5_0_5b";
  const small = args.includes("--small");
  let config: Qwen2Config;
  try {
    config = benchModel(modelName);
    if (torchPath && config !== QWEN2_5_0_5B_CONFIG) {
      throw new Error(`--torch with --model ${modelName}: torch_bench.py times qwen2_5_0_5b only`);
    }
  } catch (e) {
    console.error(`bench: ${(e as Error).message}`);
    Deno.exit(2);
  }
  if (args.includes("--train-only")) {
    profileTrain(device, small, config);
    Deno.exit(0);
  }
  if (args.includes("--decode-only")) {
    await profileDecode(device, small, config);
    Deno.exit(0);
  }
  // deno-lint-ignore no-explicit-any
  let torch: any = null;
  if (torchPath) {
    try {
      torch = JSON.parse(Deno.readTextFileSync(torchPath));
    } catch (e) {
      console.log(`PyTorch results ${torchPath} unreadable: ${(e as Error).message}`);
    }
  }
  const t0 = performance.now();
  let ours: OurRates | null = null;
  let error: string | undefined;
  try {
    ours = benchOurs(
      device,
      small,
      torch?.copy_bw_gbs ?? null,
      (l) => console.log(`  ${l}`),
      config,
    );
  } catch (e) {
    error = String((e as Error).stack ?? e);
    console.log(`bench failed: ${error}`);
  }
  const [b, len] = benchShape(small, config).train;
  const [db] = benchShape(small, config).decode;
  console.log(
    `ours: ${ours?.backend ?? "failed"}; copy bandwidth ${fmt(ours?.copyBwGbs)} GB/s; ${
      ((performance.now() - t0) / 1000).toFixed(1)
    } s`,
  );
  if (torch) {
    console.log(
      `PyTorch: ${torch.mode}; copy ${fmt(torch.copy_bw_gbs)} GB/s; bf16-weight decode x1 ${
        fmt(torch.decode1_bf16_tokens_s)
      } tokens/s (${fmt(torch.decode1_bf16_bw_fraction, 3)} of its 2-byte bound; fp32+autocast ${
        fmt(torch.decode1_bw_fraction_4byte, 3)
      } of the 4-byte bound)`,
    );
    if (torch.errors && Object.keys(torch.errors).length > 0) {
      console.log(`PyTorch errors: ${JSON.stringify(torch.errors)}`);
    }
  }
  const rows: [string, number | null, number | null, string][] = [
    [
      `training tokens/s (fwd+bwd, ${b}x${len})`,
      ours?.trainTokensS ?? null,
      torch?.train_tokens_s ?? null,
      ">= 1.0x",
    ],
    [
      `log-prob forward tokens/s (${b}x${len})`,
      ours?.logprobTokensS ?? null,
      torch?.logprob_tokens_s ?? null,
      ">= 1.0x",
    ],
    [
      `decode tokens/s, batch ${db}`,
      ours?.decodeTokensS ?? null,
      torch?.decode_tokens_s ?? null,
      ">= 1.0x",
    ],
    [
      "decode tokens/s, batch 1",
      ours?.decode1TokensS ?? null,
      torch?.decode1_tokens_s ?? null,
      ">= 1.0x",
    ],
  ];
  console.log(
    `${"metric".padEnd(46)} ${"ours".padStart(10)} ${"PyTorch".padStart(10)} ${
      "ratio".padStart(7)
    }  target`,
  );
  for (const [name, o, t, target] of rows) {
    const ratio = o !== null && t ? fmt(o / t, 2) : "-";
    console.log(
      `${name.padEnd(46)} ${fmt(o).padStart(10)} ${fmt(t).padStart(10)} ${
        ratio.padStart(7)
      }  ${target}`,
    );
  }
  console.log(
    `${"decode batch 1, fraction of bandwidth bound".padEnd(46)} ${
      fmt(ours?.decode1BwFraction, 3).padStart(10)
    } ${fmt(torch?.decode1_bf16_bw_fraction, 3).padStart(10)} ${"".padStart(7)}  >= 0.6 ` +
      `(ours ${ours?.bytesPerWeight ?? 4} B x ${
        fmt((ours?.paramsReadPerToken ?? 0) / 1e6, 1)
      }M params at ${
        fmt(ours?.boundBwGbs)
      } GB/s, ${ours?.boundBwSource}; PyTorch's with bf16 weights)`,
  );
  if (ours && Object.keys(ours.errors).length > 0) {
    console.log(`errors: ${JSON.stringify(ours.errors)}`);
  }
  if (jsonOut) Deno.writeTextFileSync(jsonOut, JSON.stringify({ ours, torch, error }, null, 2));
  Deno.exit(ours && Object.keys(ours.errors).length === 0 ? 0 : 1);
}
