/**
 * `deno task bench model`: the model's rates against the machine's, and the
 * generation engine's scheduling against its static baseline, all measured
 * in the same run.
 *
 * For the tiny default model (`lib/model/make_tiny_tokenizer.ts`) and a
 * Qwen2.5-0.5B-shaped model (896 hidden, 24 layers, 14/2 heads, 4864
 * intermediate, 151936 vocabulary, tied; zero weights: timings do not depend
 * on values), each against the FMA peak (`fmaPeak`) as tokens/s at peak:
 * - prefill tokens/s (one engine step prefilling several prompts);
 * - decode tokens/s through the engine at 1, 8 and 64 concurrent sequences
 *   (decode-only steps, event-loop yields included);
 * - training tokens/s: zeroGrad + forward + backward + AdamW over the flat
 *   parameter and gradient buffers.
 * FLOPs: 2 × matmul parameters per token forward (LM head included, the
 * embedding lookup not; attention scores, < 1% at these lengths, left out),
 * 6 × for training. Decode of one sequence is bound by reading the weights,
 * so the 0.5B model's is also compared with a weight-read rate measured by
 * `sumSquares` over the parameters.
 *
 * Then continuous batching against static batching on the tiny model: 256
 * requests, prompts of 8..32 tokens, 16 at a time, the same seeded sampling
 * in both (so the same tokens), for two length mixes: max_new_tokens uniform
 * in 4..64, and an agent-like heavy tail (7 in 8 turns stop after 4..16
 * tokens, 1 in 8 runs to 96..128). Two baselines wait for a whole batch
 * before admitting the next: the classic padded one (every row decodes until
 * the batch's longest request ends, as a batch `generate` does) and a
 * stronger one whose finished rows leave the compute.
 *
 * @module
 */
import { adamw, fmaPeak, Kernels, sumSquares, Tensor } from "../ffi/mod.ts";
import {
  generateStatic,
  generateStaticPadded,
  GenerationEngine,
  type GenerationRequest,
  type StepInfo,
} from "../lib/infer/mod.ts";
import { parseQwen2Config } from "../lib/model/hf_config.ts";
import { buildTinyModelFiles } from "../lib/model/make_tiny_tokenizer.ts";
import { qwen2ParamKind } from "../lib/model/param_layout.ts";
import { Qwen2Model } from "../lib/model/qwen2.ts";
import { type BenchRow, benchRow } from "./_report.ts";
import { QWEN2_5_0_5B_CONFIG } from "./qwen2_5_0_5b.ts";

export { QWEN2_5_0_5B_CONFIG };

/** Options of {@linkcode benchModel}. */
export interface ModelBenchOptions {
  /** Kernel threads (default: all cores). */
  threads?: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Include the Qwen2.5-0.5B-shaped model (default true; ~8 GB of memory). */
  large?: boolean;
  /** Smaller sizes and fewer repetitions, for a smoke test (default false). */
  smoke?: boolean;
}

/** Sizes of one model's measurements. */
interface Plan {
  label: string;
  /** Prompts × tokens of the prefill step. */
  prefill: [number, number];
  /** Prompt tokens and decode steps of the decode runs. */
  decodePrompt: number;
  decodeSteps: number;
  /** Sequences × tokens of the training step. */
  train: [number, number];
  reps: number;
}

/** Parameters that multiply activations: every matrix but an untied embedding. */
export function matmulParams(model: Qwen2Model): number {
  let n = 0;
  for (const r of model.layout.regions) {
    if (qwen2ParamKind(r.name) !== "matrix") continue;
    if (r.name === "model.embed_tokens.weight" && !model.config.tie_word_embeddings) continue;
    n += r.size;
  }
  return n;
}

function best(times: number[]): number {
  return Math.min(...times);
}

/** Prompts of `len` tokens, deterministic. */
function prompts(n: number, len: number, vocab: number, salt = 0): number[][] {
  return Array.from(
    { length: n },
    (_, i) => Array.from({ length: len }, (_, j) => (i * 7919 + j * 104729 + salt) % vocab),
  );
}

/** Runs `requests` on a fresh engine; returns the steps it took. */
async function runEngine(
  model: Qwen2Model,
  requests: GenerationRequest[],
  maxRunning: number,
  maxModelLen: number,
): Promise<StepInfo[]> {
  const steps: StepInfo[] = [];
  const engine = new GenerationEngine(model, {
    maxRunningRequests: maxRunning,
    maxModelLen,
    maxBatchedTokens: Math.max(2048, requests.reduce((a, r) => a + r.prompt_token_ids.length, 0)),
    onStep: (s) => steps.push(s),
  });
  try {
    await Promise.all(requests.map((r) => engine.generate(r)));
  } finally {
    await engine.close();
  }
  return steps;
}

function benchOneModel(
  k: Kernels,
  model: Qwen2Model,
  plan: Plan,
  peak: number,
  log: (line: string) => void,
): Promise<BenchRow[]> {
  return (async () => {
    const rows: BenchRow[] = [];
    const flopsPerToken = 2 * matmulParams(model);
    const peakTokens = (factor: number) => (peak * 1e9) / (factor * flopsPerToken);
    const vocab = model.config.vocab_size;
    const { label } = plan;

    // prefill: one engine step over several prompts (max_new_tokens 1)
    {
      const [n, len] = plan.prefill;
      const reqs = prompts(n, len, vocab).map((p): GenerationRequest => ({
        prompt_token_ids: p,
        max_new_tokens: 1,
        temperature: 0,
      }));
      const times: number[] = [];
      for (let r = 0; r < plan.reps + 1; r++) {
        const [s] = await runEngine(model, reqs, n, len + 1);
        if (r > 0) times.push(s!.end - s!.start);
      }
      const rate = (n * len) / (best(times) / 1000);
      rows.push(
        benchRow(`${label} prefill ${n}x${len} tokens`, "tokens/s", rate, "peak", peakTokens(1)),
      );
      log(`${label} prefill: ${rate.toFixed(0)} tokens/s`);
    }

    // decode through the engine
    for (const n of [1, 8, 64]) {
      const reqs = prompts(n, plan.decodePrompt, vocab, 1).map((p): GenerationRequest => ({
        prompt_token_ids: p,
        max_new_tokens: plan.decodeSteps + 1,
        temperature: 0,
      }));
      const steps = await runEngine(model, reqs, n, plan.decodePrompt + plan.decodeSteps + 1);
      const decodeOnly = steps.filter((s) => s.admitted.length === 0);
      const tokens = decodeOnly.reduce((a, s) => a + s.decoded, 0);
      const ms = decodeOnly.at(-1)!.end - decodeOnly[0]!.start;
      const rate = tokens / (ms / 1000);
      rows.push(
        benchRow(`${label} decode, ${n} concurrent`, "tokens/s", rate, "peak", peakTokens(1)),
      );
      log(`${label} decode x${n}: ${rate.toFixed(1)} tokens/s (${decodeOnly.length} steps)`);
      if (n === 1 && plan.label !== "tiny") {
        // one sequence reads every weight once per token: compare with a weight read
        const readMs = best([0, 1, 2].map(() => {
          const t0 = performance.now();
          sumSquares(k, model.params);
          return performance.now() - t0;
        }));
        rows.push(benchRow(
          `${label} decode, 1 concurrent`,
          "tokens/s",
          rate,
          "weight read (sum of squares at memory bandwidth)",
          1000 / readMs,
        ));
        log(`${label} weight read: ${(model.params.byteSize / readMs / 1e6).toFixed(1)} GB/s`);
      }
    }

    // training: forward + backward + AdamW
    {
      const [b, len] = plan.train;
      const t = b * len;
      const tokens = Int32Array.from(prompts(b, len, vocab, 2).flat());
      const batch = {
        tokens,
        positions: Int32Array.from({ length: t }, (_, i) => i % len),
        cuSeqlens: Int32Array.from({ length: b + 1 }, (_, s) => s * len),
        targets: Int32Array.from({ length: t }, (_, i) => tokens[(i + 1) % t]!),
      };
      const dlogp = new Float32Array(t).fill(-1 / t);
      using m = new Tensor(k, model.params.shape, "f32");
      using v = new Tensor(k, model.params.shape, "f32");
      const times: number[] = [];
      for (let step = 1; step <= plan.reps + 1; step++) {
        const t0 = performance.now();
        model.zeroGrad();
        model.forward(batch, { entropy: false });
        model.backward({ dlogp });
        adamw(k, model.params, m, v, model.grads, { lr: 1e-6, step, weightDecay: 0.01 });
        model.markParamsChanged();
        if (step > 1) times.push(performance.now() - t0);
      }
      model.releaseWorkspaces();
      const rate = t / (best(times) / 1000);
      rows.push(
        benchRow(
          `${label} train step ${b}x${len} tokens (fwd+bwd+AdamW)`,
          "tokens/s",
          rate,
          "peak",
          peakTokens(3),
        ),
      );
      log(`${label} train: ${rate.toFixed(1)} tokens/s (${best(times).toFixed(0)} ms a step)`);
    }
    return rows;
  })();
}

/** A length mix for the scheduling benchmark: a label and a max_new_tokens draw. */
interface LengthMix {
  label: string;
  maxNewTokens: (draw: (lo: number, hi: number) => number) => number;
  maxLen: number;
}

/** max_new_tokens uniform in 4..64. */
const UNIFORM_MIX: LengthMix = {
  label: "max_new_tokens 4..64",
  maxNewTokens: (draw) => draw(4, 64),
  maxLen: 64,
};

/**
 * Agent turns: most answer in a few tokens and stop, about one in eight runs
 * on to the turn budget (the heavy tail of response lengths in agentic rollouts).
 */
const AGENT_MIX: LengthMix = {
  label: "agent-like: 7/8 stop at 4..16, 1/8 run to 96..128",
  maxNewTokens: (draw) => draw(1, 8) === 1 ? draw(96, 128) : draw(4, 16),
  maxLen: 128,
};

/**
 * Agent turns on the 0.5B-shaped model (shorter, to bound the run): 7/8 stop
 * after 4..16 tokens, 1/8 run to 40..48.
 */
const AGENT_MIX_SHORT: LengthMix = {
  label: "agent-like: 7/8 stop at 4..16, 1/8 run to 40..48",
  maxNewTokens: (draw) => draw(1, 8) === 1 ? draw(40, 48) : draw(4, 16),
  maxLen: 48,
};

/** How many requests, how many at a time, and the model's label. */
interface SchedulingShape {
  label: string;
  requests: number;
  concurrency: number;
  /** Timed repetitions, the best kept (default 2). */
  reps?: number;
}

/** Continuous batching vs the static baseline on the same requests. */
async function benchScheduling(
  model: Qwen2Model,
  mix: LengthMix,
  shape: SchedulingShape,
  log: (line: string) => void,
): Promise<BenchRow[]> {
  const n = shape.requests;
  const concurrency = shape.concurrency;
  // a fixed draw of lengths; prompts 8..32
  let state = 12345;
  const draw = (lo: number, hi: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return lo + (state >>> 8) % (hi - lo + 1);
  };
  const vocab = model.config.vocab_size;
  const requests: GenerationRequest[] = Array.from({ length: n }, (_, i) => ({
    prompt_token_ids: Array.from({ length: draw(8, 32) }, (_, j) => (i * 31 + j * 17) % vocab),
    max_new_tokens: mix.maxNewTokens(draw),
    temperature: 1,
    seed: i,
  }));
  const total = requests.reduce((a, r) => a + r.max_new_tokens!, 0);
  const opts = { maxRunningRequests: concurrency, maxModelLen: 32 + mix.maxLen };
  const timeOf = async (f: () => Promise<unknown>) => {
    const t0 = performance.now();
    await f();
    return performance.now() - t0;
  };
  const staticMs: number[] = [];
  const paddedMs: number[] = [];
  const continuousMs: number[] = [];
  let staticSteps = 0;
  let continuousSteps = 0;
  for (let r = 0; r < (shape.reps ?? 2); r++) {
    staticSteps = 0;
    staticMs.push(
      await timeOf(() => generateStatic(model, requests, { ...opts, onStep: () => staticSteps++ })),
    );
    paddedMs.push(await timeOf(() => Promise.resolve(generateStaticPadded(model, requests, opts))));
    continuousSteps = 0;
    continuousMs.push(
      await timeOf(async () => {
        await using engine = new GenerationEngine(model, {
          ...opts,
          onStep: () => continuousSteps++,
        });
        await Promise.all(requests.map((q) => engine.generate(q)));
      }),
    );
  }
  const rate = (ms: number[]) => total / (best(ms) / 1000);
  log(
    `${shape.label} scheduling (${mix.label}): continuous ${
      rate(continuousMs).toFixed(0)
    } vs static ${rate(staticMs).toFixed(0)} (padded ${
      rate(paddedMs).toFixed(0)
    }) tokens/s; ${continuousSteps} vs ${staticSteps} steps`,
  );
  const what = `${n} requests (${mix.label}), ${concurrency} concurrent`;
  return [
    // the classic baseline: a padded batch decodes every row until its longest request ends
    benchRow(
      `${shape.label} continuous batching, ${what}`,
      "tokens/s",
      rate(continuousMs),
      "static batching (padded, as a batch generate)",
      rate(paddedMs),
    ),
    // a stronger baseline: finished rows leave the batch's compute, their slots stay empty
    benchRow(
      `${shape.label} continuous batching, ${what}`,
      "tokens/s",
      rate(continuousMs),
      "static batching (finished rows dropped)",
      rate(staticMs),
    ),
    // the scheduling alone: the ratio tokens/s would reach if a step cost the same
    // whatever its number of sequences
    benchRow(
      `${shape.label} continuous batching, ${what}: scheduler steps`,
      "steps",
      continuousSteps,
      "static batching",
      staticSteps,
      { lowerIsBetter: true },
    ),
  ];
}

/** Runs the model benchmark and returns its rows. */
export async function benchModel(options: ModelBenchOptions = {}): Promise<BenchRow[]> {
  const threads = options.threads ?? navigator.hardwareConcurrency ?? 2;
  const log = options.log ?? (() => {});
  const smoke = options.smoke ?? false;
  using k = Kernels.open({ threads });
  const peak = Math.max(fmaPeak(k, 100_000_000), fmaPeak(k, 100_000_000));
  log(`peak ${peak.toFixed(1)} GFLOP/s (${k.backend}, ${threads} threads)`);
  const rows: BenchRow[] = [
    benchRow(`fma peak (${k.backend}, ${threads} threads)`, "GFLOP/s", peak, "peak", peak),
  ];

  const files = await buildTinyModelFiles();
  const tinyConfig = parseQwen2Config(JSON.parse(files["config.json"]), "tiny/config.json");
  {
    using tiny = new Qwen2Model(k, tinyConfig, { seed: 0 });
    rows.push(
      ...await benchOneModel(
        k,
        tiny,
        {
          label: "tiny",
          prefill: smoke ? [2, 16] : [8, 128],
          decodePrompt: 16,
          decodeSteps: smoke ? 4 : 64,
          train: smoke ? [1, 16] : [4, 128],
          reps: smoke ? 1 : 3,
        },
        peak,
        log,
      ),
    );
    const shape = { label: "tiny", requests: smoke ? 16 : 256, concurrency: smoke ? 4 : 16 };
    rows.push(...await benchScheduling(tiny, UNIFORM_MIX, shape, log));
    rows.push(...await benchScheduling(tiny, AGENT_MIX, shape, log));
  }
  if (options.large ?? true) {
    const t0 = performance.now();
    using big = new Qwen2Model(k, QWEN2_5_0_5B_CONFIG, { init: "none" });
    log(
      `qwen2.5-0.5b: ${(matmulParams(big) / 1e6).toFixed(0)}M matmul parameters, ${
        ((performance.now() - t0) / 1000).toFixed(1)
      } s to allocate`,
    );
    rows.push(
      ...await benchOneModel(
        k,
        big,
        {
          label: "qwen2.5-0.5b",
          prefill: [4, 32],
          decodePrompt: 4,
          decodeSteps: 3,
          train: [2, 64],
          reps: 1,
        },
        peak,
        log,
      ),
    );
    // weight-read bound decoding, as on a GPU: the step costs little more with more sequences
    rows.push(
      ...await benchScheduling(big, AGENT_MIX_SHORT, {
        label: "qwen2.5-0.5b",
        requests: 32,
        concurrency: 8,
        reps: 1,
      }, log),
    );
  }
  return rows;
}

if (import.meta.main) {
  const { writeReport } = await import("./_report.ts");
  await writeReport("model", await benchModel({ log: (l) => console.log(`  ${l}`) }));
}
