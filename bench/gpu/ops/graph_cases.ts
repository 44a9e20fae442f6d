/**
 * Graph replays: a recorded pair of calls, and decoding with recorded layer calls.
 *
 * @module
 */
import { add, KernelGraph, Kernels, linearForward, sampleStart } from "../../../ffi/mod.ts";
import type { Qwen2Config } from "../../../lib/model/config.ts";
import { Qwen2Model } from "../../../lib/model/qwen2.ts";
import { type Case, EXACT, Rand, type Scope, TOL_FP32, TOL_GEMM } from "./harness.ts";

/**
 * A random Qwen2 small enough to compare on both devices (biases set too); a Qwen3 (no biases,
 * per-head q/k norms with weights away from one) with `modelType: "qwen3"`, a Llama with
 * Llama 3.1's RoPE scaling with `"llama3"`.
 */
function graphModel(
  k: Kernels,
  precision: "f32" | "bf16" = "f32",
  headDim = 16,
  modelType: "qwen2" | "qwen3" | "llama3" = "qwen2",
): Qwen2Model {
  const config: Qwen2Config = {
    vocab_size: 96,
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: headDim,
    max_position_embeddings: 64,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    attention_bias: modelType === "qwen2",
    bos_token_id: null,
    eos_token_id: null,
    model_type: modelType === "llama3" ? "llama" : modelType,
    // Llama 3.1's scaling on a 64-token original context: at head dim 64 each band of the table
    // holds frequencies (kept 4, blended 5, divided 23)
    rope_scaling: modelType === "llama3"
      ? {
        rope_type: "llama3",
        factor: 8,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 64,
      }
      : null,
  };
  const model = new Qwen2Model(k, config, { seed: 3, precision }); // compared with the CPU
  const all = model.params.read() as Float32Array;
  const r = new Rand("graph model biases", 0);
  for (const g of model.layout.regions) {
    if (g.name.endsWith(".bias")) all.set(r.randn(g.size, 0.05), g.offset);
    if (/[qk]_norm/.test(g.name)) all.set(r.randn(g.size, 0.2).map((x) => 1 + x), g.offset);
  }
  model.params.write(all);
  model.markParamsChanged();
  return model;
}

/** A 4-token prefill and 6 decode steps of a Qwen3 or a scaled-RoPE Llama, in bf16 at batch 1
 * and f32 at batch 2: every step's logits. */
function cachedDecode(s: Scope, type: "qwen3" | "llama3", tokens: Int32Array): Float32Array {
  const out: number[] = [];
  // (3 rows: a prefill of 12 tokens, more than the fused few-row kernels take)
  for (const [precision, rows] of [["bf16", 1], ["f32", 2], ["f32", 3]] as const) {
    using model = graphModel(s.k, precision, 64, type);
    using cache = model.createKvCache(rows, 16);
    const prompt = Int32Array.from(tokens.subarray(0, 4));
    const slots = Int32Array.from({ length: 4 * rows }, (_, i) => Math.floor(i / 4));
    const at = Int32Array.from({ length: 4 * rows }, (_, i) => i % 4);
    const last = Int32Array.from({ length: rows }, (_, i) => 4 * i + 3);
    const ids = Int32Array.from({ length: 4 * rows }, (_, i) => prompt[i % 4]!);
    out.push(...model.forwardCached(cache, ids, at, slots, last)!.read());
    for (let step = 0; step < 6; step++) {
      const t = Int32Array.from({ length: rows }, (_, i) => (tokens[4 + step]! + i) % 96);
      const pos = new Int32Array(rows).fill(4 + step);
      const which = Int32Array.from({ length: rows }, (_, i) => i);
      out.push(...model.forwardCached(cache, t, pos, which, which)!.read());
    }
  }
  return Float32Array.from(out);
}

/**
 * Graph replays (CUDA; the CPU runs the same calls directly): a recorded pair of
 * calls replayed twice on new input data, and a KV-cache decode whose layer calls
 * are recorded at the second step and replayed after (lib/model/_decode_graphs.ts).
 */
export function graphCases(seed: number): Case[] {
  const r = new Rand("graph", seed);
  const [m, n, kk] = [2, 24, 32];
  const [x1, x2, w, b, z0] = [
    r.randn(m * kk),
    r.randn(m * kk),
    r.randn(n * kk, 0.1),
    r.randn(n),
    r.randn(m * n),
  ];
  const tokens = r.ints(12, 0, 95);
  return [{
    op: "graph replay (linear + add, new input, twice)",
    tol: TOL_FP32,
    run: (s) => {
      const [x, y, z] = [s.f32(x1, [m, kk]), s.nan([m, n]), s.f32(z0, [m, n])];
      const [wt, bt] = [s.f32(w, [n, kk]), s.f32(b)];
      const body = () => {
        linearForward(s.k, y, x, wt, bt);
        add(s.k, z, z, y);
      };
      if (KernelGraph.supported(s.k)) {
        using g = KernelGraph.record(s.k, body);
        x.write(x2); // the replay reads the memory as it is at launch
        g.launch();
        g.launch();
      } else {
        x.write(x2);
        body();
        body();
      }
      return { z: z.read() };
    },
  }, {
    op: "decode with graphs (8 steps after a 4-token prefill)",
    tol: TOL_GEMM,
    run: (s) => {
      using model = graphModel(s.k);
      using cache = model.createKvCache(2, 16);
      const out: number[] = [];
      const prompt = Int32Array.from(tokens.subarray(0, 4));
      const logits = model.forwardCached(
        cache,
        Int32Array.from([...prompt, ...prompt]),
        Int32Array.from([0, 1, 2, 3, 0, 1, 2, 3]),
        Int32Array.from([0, 0, 0, 0, 1, 1, 1, 1]),
        Int32Array.from([3, 7]),
      )!;
      out.push(...logits.read());
      for (let step = 0; step < 8; step++) {
        const t = tokens[4 + step]!;
        const l = model.forwardCached(
          cache,
          Int32Array.from([t, (t + 1) % 96]),
          Int32Array.from([4 + step, 4 + step]),
          Int32Array.from([0, 1]),
          Int32Array.from([0, 1]),
        )!;
        out.push(...l.read());
      }
      return { logits: Float32Array.from(out) };
    },
  }, {
    // one sequence, bf16 weights: the stacked q|k|v path, fused with RoPE and the cache on CUDA
    // head dim 64: each layer one arl_decode_layer_bf16 call, four chained kernels on CUDA
    op: "decode with graphs, bf16 weights, batch 1 (8 steps after a 4-token prefill)",
    tol: TOL_GEMM,
    run: (s) => {
      using model = graphModel(s.k, "bf16", 64);
      using cache = model.createKvCache(1, 16);
      const out: number[] = [];
      const prompt = Int32Array.from(tokens.subarray(0, 4));
      const logits = model.forwardCached(
        cache,
        prompt,
        Int32Array.from([0, 1, 2, 3]),
        new Int32Array(4),
        Int32Array.from([3]),
      )!;
      out.push(...logits.read());
      for (let step = 0; step < 8; step++) {
        const [pos, zero] = [Int32Array.from([4 + step]), new Int32Array(1)];
        const l = model.forwardCached(cache, tokens.subarray(4 + step, 5 + step), pos, zero, zero)!;
        out.push(...l.read());
      }
      return { logits: Float32Array.from(out) };
    },
  }, {
    // Token ids from the device: each step's id is sampled (greedy, from one-hot logits) into
    // one of two id tensors, which the next forwardCached reads (a graph for each).
    op: "decode with graphs, bf16 weights, batch 1, token ids sampled on the device",
    tol: { logits: TOL_GEMM, tokens: EXACT },
    run: (s) => deviceIdsDecode(s, tokens, false),
  }, {
    // The same with each step's placement written into one of two buffers in turn, copied beside
    // the step before (AGENTRL_DECODE_ALTERNATE_PLACEMENT=1; on the CPU library a plain write)
    op:
      "decode with graphs, bf16 weights, batch 1, ids on the device, placements alternating (AGENTRL_DECODE_ALTERNATE_PLACEMENT=1)",
    tol: { logits: TOL_GEMM, tokens: EXACT },
    run: (s) => deviceIdsDecode(s, tokens, true),
  }, {
    // Qwen3: each head's query and key normed between the projections and RoPE, so no fused
    // layer call; bf16 weights, batch 1 (the stacked q|k|v GEMV), then two sequences (f32)
    op: "Qwen3 cached decode, graphs recorded (q/k norms), bf16 batch 1 and f32 batch 2 and 3",
    tol: TOL_GEMM,
    run: (s) => ({ logits: cachedDecode(s, "qwen3", tokens) }),
  }, {
    // Llama 3.1's RoPE scaling: arl_rope_freqs, then the cache write, in place of the fused calls
    op: "Llama 3.1 RoPE cached decode, graphs recorded (a frequency table), bf16 1, f32 2 and 3",
    tol: TOL_GEMM,
    needs: "arl_rope_freqs",
    run: (s) => ({ logits: cachedDecode(s, "llama3", tokens) }),
  }, {
    op: "Qwen3 training pass (q/k norms): log-probs and every gradient",
    tol: TOL_GEMM,
    run: (s) => {
      using model = graphModel(s.k, "f32", 16, "qwen3");
      const batch = {
        tokens: Int32Array.from(tokens.subarray(0, 9)),
        positions: Int32Array.of(0, 1, 2, 3, 4, 0, 1, 2, 3),
        cuSeqlens: Int32Array.of(0, 5, 9),
        targets: Int32Array.from(tokens.subarray(1, 10)),
      };
      const logp = model.forward(batch).logp.read();
      model.zeroGrad();
      model.backward({ dlogp: new Float32Array(9).fill(-1 / 9) });
      const normGrads = model.layout.regions.filter((g) => /[qk]_norm/.test(g.name))
        .flatMap((g) => [...model.grad(g.name).read()]);
      return { logp, grads: model.grads.read(), normGrads: Float32Array.from(normGrads) };
    },
  }, {
    // AGENTRL_DECODE_LAYER=0 (head dim 64): each layer the separate fused calls, not one
    // arl_decode_layer_bf16 call (the default, which the case above takes), recorded in the graph
    op:
      "decode with graphs, bf16 weights, batch 1, separate calls a layer (AGENTRL_DECODE_LAYER=0)",
    tol: TOL_GEMM,
    run: (s) => {
      using model = withEnv("AGENTRL_DECODE_LAYER", "0", () => graphModel(s.k, "bf16", 64));
      using cache = model.createKvCache(1, 40);
      const out: number[] = [];
      // a 30-token prefill, then positions 30..37: split decode attention's key splits (32 keys
      // each) go from one to two
      const prompt = Int32Array.from({ length: 30 }, (_, i) => tokens[i % 12]!);
      const at = Int32Array.from({ length: 30 }, (_, i) => i);
      out.push(
        ...model.forwardCached(cache, prompt, at, new Int32Array(30), Int32Array.of(29))!.read(),
      );
      for (let step = 0; step < 8; step++) {
        const [pos, zero] = [Int32Array.from([30 + step]), new Int32Array(1)];
        const t = tokens.subarray(4 + step, 5 + step);
        out.push(...model.forwardCached(cache, t, pos, zero, zero)!.read());
      }
      return { logits: Float32Array.from(out) };
    },
  }];
}

/**
 * Token ids from the device: each step's id is sampled (greedy, from one-hot logits) into one of
 * two id tensors, which the next forwardCached reads (a graph for each); `alternate`: the model
 * writes its placements into two buffers in turn (AGENTRL_DECODE_ALTERNATE_PLACEMENT=1).
 */
function deviceIdsDecode(
  s: Scope,
  tokens: Int32Array,
  alternate: boolean,
): Record<string, Float32Array | Int32Array> {
  using model = withEnv(
    "AGENTRL_DECODE_ALTERNATE_PLACEMENT",
    alternate ? "1" : "0",
    () => graphModel(s.k, "bf16", 64),
  );
  using cache = model.createKvCache(1, 16);
  const ids = [s.i32(new Int32Array(1)), s.i32(new Int32Array(1))];
  const greedy = [{ temperature: 0, seed: 0, counter: 0 }];
  const out: number[] = [];
  const sampled: number[] = [];
  const prompt = Int32Array.from(tokens.subarray(0, 4));
  out.push(
    ...model.forwardCached(
      cache,
      prompt,
      Int32Array.of(0, 1, 2, 3),
      new Int32Array(4),
      Int32Array.of(3),
    )!
      .read(),
  );
  for (let step = 0; step < 8; step++) {
    const oneHot = new Float32Array(96);
    oneHot[tokens[4 + step]!] = 10;
    const pending = sampleStart(s.k, s.f32(oneHot, [1, 96]), greedy, ids[step % 2]!);
    const zero = new Int32Array(1);
    const l = model.forwardCached(cache, ids[step % 2]!, Int32Array.of(4 + step), zero, zero)!;
    sampled.push(...pending.wait().tokens);
    out.push(...l.read());
  }
  return { logits: Float32Array.from(out), tokens: Int32Array.from(sampled) };
}

/** `make()` with the environment variable `name` set to `value` (a model reads its switches once). */
function withEnv<T>(name: string, value: string, make: () => T): T {
  const before = Deno.env.get(name);
  Deno.env.set(name, value);
  try {
    return make();
  } finally {
    if (before === undefined) Deno.env.delete(name);
    else Deno.env.set(name, before);
  }
}
