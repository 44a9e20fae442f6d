/**
 * The Qwen2 decoder (Qwen2.5's architecture) on the native kernels, llm.c
 * style: every parameter in one f32 buffer with named views (Hugging Face
 * weight names, [out, in] layout), gradients in a second buffer of the same
 * layout (so AdamW is one flat call), activations sized once per batch shape,
 * and a forward/backward pair for every layer.
 *
 * A forward pass runs over a packed batch of variable-length sequences
 * (tokens, positions and cu_seqlens; no padding) and ends in one of:
 * - per-token log-probs and entropies of given target ids through the fused
 *   LM-head kernel ({@linkcode Qwen2Model.forward}: actor training, reference);
 * - values through the value head ({@linkcode Qwen2Model.forwardValues}: critic);
 * - full logits of chosen rows ({@linkcode Qwen2Model.forwardLogits}).
 * {@linkcode Qwen2Model.backward} accumulates (+=) every parameter gradient.
 * Generation uses a KV cache: {@linkcode Qwen2Model.createKvCache} and
 * {@linkcode Qwen2Model.forwardCached} (no backward pass through that path).
 *
 * Shape legend: T tokens, B sequences, C hidden, HQ / HKV query / key-value
 * heads, D head dim, QD = HQ * D, KVD = HKV * D, F intermediate, V vocabulary.
 *
 * @example
 * ```ts
 * import { Kernels } from "../../ffi/mod.ts";
 * import type { Qwen2Config } from "./config.ts";
 * import { Qwen2Model } from "./qwen2.ts";
 * const config: Qwen2Config = {
 *   vocab_size: 32, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 2,
 *   num_attention_heads: 4, num_key_value_heads: 2, head_dim: 4,
 *   max_position_embeddings: 64, rope_theta: 10000, rms_norm_eps: 1e-6,
 *   tie_word_embeddings: true, attention_bias: true, bos_token_id: null, eos_token_id: null,
 * };
 * using k = Kernels.open();
 * using model = new Qwen2Model(k, config, { seed: 1 });
 * // two sequences, [5 6 7] and [8 9], packed without padding
 * const batch = {
 *   tokens: new Int32Array([5, 6, 7, 8, 9]),
 *   positions: new Int32Array([0, 1, 2, 0, 1]),
 *   cuSeqlens: new Int32Array([0, 3, 5]),
 *   targets: new Int32Array([6, 7, 1, 9, 2]),
 * };
 * const { logp } = model.forward(batch);
 * console.log(logp.toArray().length); // 5
 * model.zeroGrad();
 * model.backward({ dlogp: new Float32Array(5).fill(-1) }); // gradient of -sum(logp)
 * ```
 *
 * @module
 */
import {
  add,
  attentionBackward,
  attentionForward,
  DECODE_FUSION_MAX_ROWS,
  embeddingBackward,
  embeddingForward,
  expectTensor,
  fill,
  isNormalF32,
  KernelLibraryError,
  type Kernels,
  l2Persist,
  l2Regions,
  libraryPath,
  linearBackward,
  linearForward,
  lmHead,
  logprobBackward,
  logprobForward,
  rmsnormBackward,
  rmsnormForward,
  rmsnormLinearForward,
  rope,
  ropeFreqs,
  swigluBackward,
  swigluForward,
  Tensor,
} from "../../ffi/mod.ts";
import type { Qwen2Config } from "./config.ts";
import { BufferLayout, qwen2ParamKind, qwen2ParamLayout, type Region } from "./param_layout.ts";
import { Qwen2KvCache } from "./qwen2_kv_cache.ts";
import { type CachedLayersSetup, runCachedLayers } from "./_qwen2_cached_layers.ts";
import { checkPacked, expectInt32Array, expectTokenIds, validateConfig } from "./_qwen2_checks.ts";
import { DecodeGraphs } from "./_decode_graphs.ts";
import { envSwitchOff, envSwitchOn } from "./_env_switch.ts";
import { l2OfferFromEnv, l2OfferRegions } from "./_l2_offer.ts";
import { InitRng } from "./_random.ts";
import { ropeAttentionFactor, ropeInvFreq } from "./rope_scaling.ts";
import { Bf16Weights, type Precision, resolvePrecision } from "./_mixed_precision.ts";
import {
  Arena,
  bindDecodeActs,
  bindHeadActs,
  bindTrainActs,
  type DecodeActs,
  type HeadActs,
  type LayerActs,
  type TrainActs,
} from "./_qwen2_workspace.ts";

/** Options of the {@linkcode Qwen2Model} constructor. */
export interface Qwen2ModelOptions {
  /** Adds the critic's value head (`value_head.weight` [C], `value_head.bias` [1]). */
  valueHead?: boolean;
  /**
   * `"random"` (default): seeded normal(0, 0.02) matrices, ones for norms,
   * zeros for biases. `"none"`: all zeros (to be filled by
   * {@linkcode Qwen2Model.loadNamed}; saves ~8 s of init for a 0.5B model).
   */
  init?: "random" | "none";
  /** Seed of the random initialisation (default 0). */
  seed?: number;
  /**
   * Storage of the weights the matrix kernels read: `"f32"`, or `"bf16"` (mixed
   * precision: a bf16 copy of the fp32 master weights, fp32 accumulation).
   * Default: `AGENTRL_PRECISION`, else bf16 on CUDA and f32 on the CPU.
   */
  precision?: Precision;
}

/** A packed batch: B sequences of T tokens in all, no padding. */
export interface PackedBatch {
  /** Token ids (T). */
  tokens: Int32Array;
  /** Position of each token in its sequence (T), for RoPE. */
  positions: Int32Array;
  /** Sequence boundaries (B + 1): sequence s is rows cu[s] .. cu[s+1]-1; cu[0] = 0, cu[B] = T. */
  cuSeqlens: Int32Array;
}

/** A packed batch with the target id of every token (usually the next token). */
export interface LogprobBatch extends PackedBatch {
  /** Target ids (T) whose log-probs are computed. */
  targets: Int32Array;
}

/** Options of {@linkcode Qwen2Model.forward}. */
export interface LogprobOptions {
  /** Logits are divided by this (default 1). */
  temperature?: number;
  /** Compute entropies too (default true); needed for a dentropy in backward. */
  entropy?: boolean;
}

/**
 * Outputs of {@linkcode Qwen2Model.forward}: views of the model's workspace,
 * valid until the next forward pass (copy with `toArray()` to keep them).
 */
export interface LogprobResult {
  /** log softmax(logits / temperature)[target] per token (T). */
  logp: Tensor<"f32">;
  /** Entropy of softmax(logits / temperature) per token (T), or null when not asked for. */
  entropy: Tensor<"f32"> | null;
}

/** An upstream gradient (T): a native tensor, or an array copied into the workspace. */
export type Upstream = Tensor<"f32"> | Float32Array;

/**
 * What {@linkcode Qwen2Model.backward} takes: gradients of the loss w.r.t. the
 * last forward pass's outputs.
 */
export type BackwardInput =
  | { dlogp: Upstream; dentropy?: Upstream | null }
  | { dvalues: Upstream };

/** A named parameter as {@linkcode Qwen2Model.exportNamed} yields it. */
export interface NamedParam {
  name: string;
  shape: readonly number[];
  /** A zero-copy view of the model's memory (valid while the model lives). */
  data: Float32Array;
}

/** Options of {@linkcode Qwen2Model.loadNamed}. */
export interface LoadOptions {
  /**
   * When false, parameters `get` has no data for keep their values and their
   * names are returned. Default true: they are an error.
   */
  strict?: boolean;
}

/** One layer's weights as the kernels read them (views of the parameters or their bf16 copy). */
export interface LayerWeights {
  ln1: Tensor;
  wq: Tensor;
  bq: Tensor | null;
  wk: Tensor;
  bk: Tensor | null;
  wv: Tensor;
  bv: Tensor | null;
  wo: Tensor;
  /** Qwen3's per-head norm weights of queries and keys (D each), else null. */
  qn: Tensor | null;
  kn: Tensor | null;
  ln2: Tensor;
  wg: Tensor;
  wu: Tensor;
  wd: Tensor;
  /** With bf16 weights: q, k, v stacked (QD + 2 KVD, C), their biases, gate and up stacked. */
  qkv?: Tensor;
  bqkv?: Tensor | null;
  gu?: Tensor;
  /** fp32 gate and up stacked (2F, C): the parameters' own rows, back to back in the layout
   * (when the padding allows), for the fused decode MLP. */
  gu32?: Tensor;
}

interface Weights {
  embed: Tensor;
  layers: LayerWeights[];
  norm: Tensor;
  /** lm_head.weight, or the embedding when tied (the same memory). */
  head: Tensor;
  /** value_head.weight as (1, C) and value_head.bias (1). */
  valueW: Tensor | null;
  valueB: Tensor | null;
}

type Saved =
  | { kind: "logprob"; temperature: number; entropy: boolean }
  | { kind: "values" };

/** Whether `rows` is 0, 1, ..., t - 1 (every row, in order). */
function allRowsInOrder(rows: Int32Array, t: number): boolean {
  return rows.length === t && rows.every((r, i) => r === i);
}

/** Copies host data into a native tensor of the same length (any device). */
function upload(dst: Tensor, src: Int32Array | Float32Array): void {
  (dst as Tensor<"i32" | "f32">).write(src);
}

/**
 * A Qwen2 decoder-only model with its parameters, gradients and workspaces.
 * Free it with `dispose()` or `using`; the {@linkcode Kernels} context is the
 * caller's and must outlive the model.
 *
 * @example
 * ```ts ignore
 * // one training step: parameters and gradients are two flat buffers of one layout
 * import { adamw, Kernels, Tensor } from "../../ffi/mod.ts";
 * import { Qwen2Model } from "./qwen2.ts";
 * using k = Kernels.open();
 * using model = new Qwen2Model(k, config); // config, batch and dlogp as in the module example
 * using m = new Tensor(k, model.params.shape, "f32");
 * using v = new Tensor(k, model.params.shape, "f32");
 * model.zeroGrad();
 * model.forward(batch);
 * model.backward({ dlogp });
 * adamw(k, model.params, m, v, model.grads, { lr: 1e-5, step: 1 });
 * ```
 */
export class Qwen2Model implements Disposable {
  /** The context every kernel call goes through. */
  readonly kernels: Kernels;
  readonly config: Readonly<Qwen2Config>;
  /** Whether the model has the critic's value head. */
  readonly hasValueHead: boolean;
  /** Where each parameter lives in {@linkcode params} (its gradient: same place in grads). */
  readonly layout: BufferLayout;
  /** Every parameter, one flat f32 buffer (layout.total words; padding stays 0). */
  readonly params: Tensor<"f32">;
  /** Every gradient, same layout as params. Backward passes add into it. */
  readonly grads: Tensor<"f32">;
  readonly #paramViews = new Map<string, Tensor>();
  readonly #gradViews = new Map<string, Tensor>();
  /** Storage of the weights the matrix kernels read (see {@linkcode Qwen2ModelOptions}). */
  readonly precision: Precision;
  readonly #w: Weights;
  readonly #g: Weights;
  // The weights the forward and backward passes read: #w, or bf16 matrices from #low.
  readonly #wc: Weights;
  readonly #low: Bf16Weights | null;
  #lowStale = true;
  readonly #train: Arena;
  readonly #decode: Arena;
  // The last decode views (about 25 tensors): made again only for another N or buffer.
  #decodeActs: { acts: DecodeActs; generation: number } | null = null;
  readonly #graphs: DecodeGraphs;
  readonly #noDecodeFusion = envSwitchOff("AGENTRL_DECODE_FUSION");
  // Session 16's final norm inside the LM head's GEMV and session 17's head inside the decode
  // graph, off by default: on an H100 the decode step was 1.076x and 1.029x faster without each
  // (AGENTRL_DECODE_HEAD_NORM=1 and AGENTRL_DECODE_HEAD_GRAPH=1 bring them back, to compare).
  readonly #headNormFused = envSwitchOn("AGENTRL_DECODE_HEAD_NORM");
  readonly #headInGraph = envSwitchOn("AGENTRL_DECODE_HEAD_GRAPH");
  readonly #decodeLayer = !envSwitchOff("AGENTRL_DECODE_LAYER");
  readonly #decodeLayerNorms = !envSwitchOff("AGENTRL_DECODE_LAYER_NORMS");
  readonly #decodeLayers = !envSwitchOff("AGENTRL_DECODE_LAYERS");
  // A benchmark's diagnostic (bench.ts --decode-only): a step whose token ids are on the device
  // does not upload its placement, and reuses the one there (its positions do not advance, so
  // its tokens are wrong): what the upload between two steps costs.
  readonly #keepPlacement = envSwitchOn("AGENTRL_DECODE_KEEP_PLACEMENT");
  #keptPlacement: { placement: Tensor; cache: Qwen2KvCache } | null = null;
  // An experiment (session 30, not yet timed on a GPU): a step whose ids are on the device
  // writes its placement into one of two buffers in turn, copied beside the step before instead
  // of between the two (Tensor.writeAlternating). Its graphs are keyed by the buffer they read.
  readonly #alternatePlacement = envSwitchOn("AGENTRL_DECODE_ALTERNATE_PLACEMENT");
  #parity: 0 | 1 = 0;
  #alternatingViews: DecodeActs | null = null; // (other views: the buffers are new)
  readonly #head: Arena;
  /** Scaled RoPE's frequencies (head_dim / 2) on the device, or null for theta's own. */
  readonly #ropeFreqs: Tensor<"f32"> | null;
  #l2Offered: Tensor[] | null = null; // weights offered to the L2 cache (null: not yet)
  #ws: TrainActs | null = null;
  #saved: Saved | null = null;
  #disposed = false;

  constructor(kernels: Kernels, config: Qwen2Config, options: Qwen2ModelOptions = {}) {
    validateConfig(config);
    if (config.rope_scaling && kernels.sym.arl_rope_freqs === null) {
      // (before gigabytes of weights load, not at the first forward pass)
      throw new KernelLibraryError(
        `The ${kernels.device} kernel library ${libraryPath(kernels.device)} was built before ` +
          "arl_rope_freqs, which scaled RoPE (rope_scaling) needs: run `deno task build`.",
      );
    }
    this.kernels = kernels;
    this.config = Object.freeze({
      ...config,
      ...(config.rope_scaling ? { rope_scaling: Object.freeze({ ...config.rope_scaling }) } : {}),
    });
    this.hasValueHead = options.valueHead ?? false;
    this.layout = qwen2ParamLayout(config, { valueHead: this.hasValueHead });
    this.params = new Tensor(kernels, [this.layout.total], "f32");
    try {
      this.grads = new Tensor(kernels, [this.layout.total], "f32");
    } catch (e) {
      this.params.free();
      throw e;
    }
    for (const r of this.layout.regions) {
      this.#paramViews.set(r.name, BufferLayout.view(this.params, r));
      this.#gradViews.set(r.name, BufferLayout.view(this.grads, r));
    }
    this.#w = this.#bindWeights(this.params);
    this.#g = this.#bindWeights(this.grads);
    this.precision = resolvePrecision(kernels, options.precision);
    this.#low = this.precision === "bf16"
      ? new Bf16Weights(
        kernels,
        config,
        (name) => this.param(name),
        this.layout.has(
          "model.layers.0.self_attn.q_proj.bias",
        ),
      )
      : null;
    this.#wc = this.#low ? this.#bindLowWeights(this.#low) : this.#w;
    // a packed micro-batch a few tokens longer than any before would otherwise reallocate (and
    // zero-fill) the whole workspace; growing by a tenth at least makes that rare
    this.#train = new Arena(kernels, 1.1);
    this.#decode = new Arena(kernels, 1.5);
    // (with alternating placements a batch size takes three recordings: 48 for 16 sizes)
    this.#graphs = new DecodeGraphs(kernels, this.#alternatePlacement ? 48 : 32);
    this.#head = new Arena(kernels, 1.5);
    this.#ropeFreqs = this.config.rope_scaling
      ? Tensor.from(
        kernels,
        ropeInvFreq(config.rope_theta, config.head_dim, this.config.rope_scaling),
      )
      : null;
    if ((options.init ?? "random") === "random") this.initRandom(options.seed ?? 0);
  }

  /** RoPE of x (T, H, D) at positions, in place (inverse: the backward pass's rotation). */
  #rope(x: Tensor, positions: Tensor, inverse = false): void {
    if (this.#ropeFreqs) ropeFreqs(this.kernels, x, x, positions, this.#ropeFreqs, inverse);
    else rope(this.kernels, x, x, positions, this.config.rope_theta, inverse);
  }

  #bindWeights(buffer: Tensor): Weights {
    const cfg = this.config;
    const view = (name: string, shape?: readonly number[]) =>
      BufferLayout.view(buffer, this.layout.get(name), shape);
    const opt = (name: string) => (this.layout.has(name) ? view(name) : null);
    // gate and up as one (2F, C) matrix, if nothing pads the layout between them
    const stacked = (gate: string, up: string): { gu32?: Tensor } => {
      const [g, u] = [this.layout.get(gate), this.layout.get(up)];
      if (u.offset !== g.offset + g.size) return {};
      return { gu32: Tensor.viewOf(buffer, g.offset * 4, [2 * g.shape[0]!, g.shape[1]!]) };
    };
    const layers: LayerWeights[] = [];
    for (let i = 0; i < cfg.num_hidden_layers; i++) {
      const p = `model.layers.${i}`;
      layers.push({
        ln1: view(`${p}.input_layernorm.weight`),
        wq: view(`${p}.self_attn.q_proj.weight`),
        bq: opt(`${p}.self_attn.q_proj.bias`),
        wk: view(`${p}.self_attn.k_proj.weight`),
        bk: opt(`${p}.self_attn.k_proj.bias`),
        wv: view(`${p}.self_attn.v_proj.weight`),
        bv: opt(`${p}.self_attn.v_proj.bias`),
        wo: view(`${p}.self_attn.o_proj.weight`),
        qn: opt(`${p}.self_attn.q_norm.weight`),
        kn: opt(`${p}.self_attn.k_norm.weight`),
        ln2: view(`${p}.post_attention_layernorm.weight`),
        wg: view(`${p}.mlp.gate_proj.weight`),
        wu: view(`${p}.mlp.up_proj.weight`),
        wd: view(`${p}.mlp.down_proj.weight`),
        ...stacked(`${p}.mlp.gate_proj.weight`, `${p}.mlp.up_proj.weight`),
      });
    }
    const embed = view("model.embed_tokens.weight");
    return {
      embed,
      layers,
      norm: view("model.norm.weight"),
      head: cfg.tie_word_embeddings ? embed : view("lm_head.weight"),
      valueW: this.hasValueHead ? view("value_head.weight", [1, cfg.hidden_size]) : null,
      valueB: this.hasValueHead ? view("value_head.bias") : null,
    };
  }

  // The f32 weights with every matrix read from the bf16 copy.
  #bindLowWeights(low: Bf16Weights): Weights {
    return {
      ...this.#w,
      layers: this.#w.layers.map((w, i) => ({ ...w, ...low.layers[i]! })),
      head: low.head,
    };
  }

  /**
   * Tells a mixed-precision model (`precision: "bf16"`) that `params` was
   * written directly (an optimizer step): the bf16 copy is refreshed before the
   * next pass. The trainers call it; loadNamed and initRandom need no call.
   */
  markParamsChanged(): void {
    this.#lowStale = true;
  }

  // Refreshes the bf16 copy if the master changed (never inside a graph recording).
  #syncLow(): void {
    if (this.#low === null || !this.#lowStale) return;
    this.#low.sync();
    this.#lowStale = false;
  }

  // ---- parameters ---------------------------------------------------------

  /** Parameter names in layout order (that of transformers' state_dict). */
  get names(): string[] {
    return this.layout.regions.map((r) => r.name);
  }

  /** Number of parameters (padding excluded; a tied embedding counts once). */
  get numParams(): number {
    return this.layout.elements;
  }

  /** The view tensor of parameter `name` (HF name and shape), usable as a kernel argument. */
  param(name: string): Tensor<"f32"> {
    const t = this.#paramViews.get(name);
    if (t === undefined) throw new Error(`The model has no parameter named '${name}'`);
    return t as Tensor<"f32">;
  }

  /** The view tensor of the gradient of parameter `name` (same shape). */
  grad(name: string): Tensor<"f32"> {
    const t = this.#gradViews.get(name);
    if (t === undefined) throw new Error(`The model has no parameter named '${name}'`);
    return t as Tensor<"f32">;
  }

  /** Sets every gradient to zero. */
  zeroGrad(): void {
    fill(this.kernels, this.grads, 0);
  }

  /**
   * Seeded initialisation: matrices (embeddings, projections, LM head, value
   * head weight) normal(0, 0.02), norm weights 1, biases 0.
   */
  initRandom(seed = 0): void {
    const rng = new InitRng(seed);
    const all = new Float32Array(this.params.size);
    for (const r of this.layout.regions) {
      const data = all.subarray(r.offset, r.offset + r.size);
      const kind = qwen2ParamKind(r.name);
      if (kind === "norm") data.fill(1);
      else if (kind === "matrix") rng.fillNormal(data, 0.02);
    }
    this.params.write(all);
    this.#lowStale = true;
  }

  /**
   * Fills every parameter by name: `get(name, shape)` returns its data
   * (row-major, `shape`'s element count) or undefined when it has none. With
   * `strict` (default) a missing name is an error; otherwise the missing names
   * keep their values and are returned (e.g. a critic's value head when
   * loading an actor checkpoint).
   */
  loadNamed(
    get: (name: string, shape: readonly number[]) => Float32Array | undefined,
    options: LoadOptions = {},
  ): string[] {
    const missing: string[] = [];
    const onCpu = this.params.device === "cpu";
    const all = onCpu ? this.params.view() : this.params.read();
    for (const r of this.layout.regions) {
      const data = get(r.name, r.shape);
      if (data === undefined) {
        missing.push(r.name);
        continue;
      }
      if (!(data instanceof Float32Array) || data.length !== r.size) {
        throw new RangeError(
          `Parameter '${r.name}' of shape [${r.shape.join(", ")}] needs ${r.size} float32 ` +
            `values, got ${data instanceof Float32Array ? data.length : typeof data}`,
        );
      }
      all.set(data, r.offset);
    }
    if ((options.strict ?? true) && missing.length > 0) {
      throw new Error(`No data for parameters: ${missing.join(", ")}`);
    }
    if (!onCpu) this.params.write(all);
    this.#lowStale = true;
    return missing;
  }

  /**
   * Every parameter by name, in layout order: zero-copy views of the model's
   * memory on the CPU, a copy on other devices.
   */
  exportNamed(): NamedParam[] {
    const all = this.params.device === "cpu" ? this.params.view() : this.params.read();
    return this.layout.regions.map((r: Region) => ({
      name: r.name,
      shape: r.shape,
      data: all.subarray(r.offset, r.offset + r.size),
    }));
  }

  // ---- training forward / backward -----------------------------------------

  /** Binds the training workspace for (T, B) and uploads tokens, positions and cu_seqlens. */
  #prepare(batch: PackedBatch): TrainActs {
    this.#alive();
    this.#syncLow();
    const { t, b } = checkPacked(batch, this.config.vocab_size);
    let ws = this.#ws;
    if (ws === null || ws.t !== t || ws.b !== b) {
      this.#ws = null;
      this.#saved = null;
      ws = bindTrainActs(this.#train, this.config, t, b);
      this.#ws = ws;
    }
    this.#saved = null;
    upload(ws.tokens, batch.tokens);
    upload(ws.positions, batch.positions);
    upload(ws.cu, batch.cuSeqlens);
    return ws;
  }

  /** Embedding and every decoder layer; leaves the last residual stream in ws.res[L]. */
  #body(ws: TrainActs): void {
    const k = this.kernels;
    const cfg = this.config;
    embeddingForward(k, ws.res[0]!, ws.tokens, this.#wc.embed);
    for (let l = 0; l < cfg.num_hidden_layers; l++) {
      const w = this.#wc.layers[l]!;
      const a = ws.layers[l]!;
      const x = ws.res[l]!;
      const y = ws.res[l + 1]!;
      rmsnormForward(k, a.h1, a.rstd1, x, w.ln1, cfg.rms_norm_eps);
      const qk = a.qkNorm;
      linearForward(k, qk?.qp ?? a.q, a.h1, w.wq, w.bq);
      linearForward(k, qk?.kp ?? a.k, a.h1, w.wk, w.bk);
      linearForward(k, a.v, a.h1, w.wv, w.bv);
      if (qk) { // Qwen3: each head's query and key normed before RoPE
        rmsnormForward(k, qk.q2, qk.rq, qk.qp2, w.qn!, cfg.rms_norm_eps);
        rmsnormForward(k, qk.k2, qk.rk, qk.kp2, w.kn!, cfg.rms_norm_eps);
      }
      this.#rope(a.q3, ws.positions);
      this.#rope(a.k3, ws.positions);
      attentionForward(k, a.a3, a.lse, a.q3, a.k3, a.v3, ws.cu, this.#scale, this.precision);
      linearForward(k, a.m, a.a, w.wo);
      add(k, a.m, a.m, x);
      rmsnormForward(k, a.h2, a.rstd2, a.m, w.ln2, cfg.rms_norm_eps);
      linearForward(k, a.g, a.h2, w.wg);
      linearForward(k, a.u, a.h2, w.wu);
      swigluForward(k, a.s, a.g, a.u);
      linearForward(k, y, a.s, w.wd);
      add(k, y, y, a.m);
    }
  }

  get #scale(): number {
    // (YaRN scales the rotated queries and keys by its attention factor: the scores by its square)
    return ropeAttentionFactor(this.config.rope_scaling) ** 2 / Math.sqrt(this.config.head_dim);
  }

  /**
   * Log-probs (and entropies) of `targets` under the model, per token, over a
   * packed batch; saves the activations for {@linkcode backward}.
   */
  forward(batch: LogprobBatch, options: LogprobOptions = {}): LogprobResult {
    const temperature = options.temperature ?? 1;
    if (!isNormalF32(temperature)) {
      throw new RangeError(
        `temperature must be a positive number in 1.2e-38..3.4e38 (a float32 in the kernels), ` +
          `got ${temperature}`,
      );
    }
    const entropy = options.entropy ?? true;
    const ws = this.#prepare(batch);
    expectInt32Array(batch.targets, "targets", ws.t);
    upload(ws.targets, batch.targets);
    this.#body(ws);
    const k = this.kernels;
    rmsnormForward(
      k,
      ws.hf,
      ws.rstdf,
      ws.res[this.config.num_hidden_layers]!,
      this.#wc.norm,
      this.config.rms_norm_eps,
    );
    logprobForward(
      k,
      { logp: ws.logp, lse: ws.lseLp, entropy: entropy ? ws.entropy : null },
      ws.hf,
      ws.targets,
      this.#wc.head,
      temperature,
    );
    this.#saved = { kind: "logprob", temperature, entropy };
    return {
      logp: ws.logp as Tensor<"f32">,
      entropy: entropy ? ws.entropy as Tensor<"f32"> : null,
    };
  }

  /**
   * Values (T) through the value head (critic models only); saves the
   * activations for {@linkcode backward}. The result is a workspace view,
   * valid until the next forward pass.
   */
  forwardValues(batch: PackedBatch): Tensor<"f32"> {
    if (!this.hasValueHead) {
      throw new Error("forwardValues needs a model created with { valueHead: true }");
    }
    const ws = this.#prepare(batch);
    this.#body(ws);
    const k = this.kernels;
    rmsnormForward(
      k,
      ws.hf,
      ws.rstdf,
      ws.res[this.config.num_hidden_layers]!,
      this.#wc.norm,
      this.config.rms_norm_eps,
    );
    linearForward(k, ws.values2, ws.hf, this.#wc.valueW!, this.#wc.valueB!);
    this.#saved = { kind: "values" };
    return ws.values as Tensor<"f32">;
  }

  /** An upstream gradient as a (T) tensor: the caller's, or `scratch` filled from an array. */
  #upstream(x: Upstream, scratch: Tensor, name: string, t: number): Tensor {
    if (x instanceof Float32Array) {
      if (x.length !== t) throw new RangeError(`${name} must have ${t} entries, got ${x.length}`);
      upload(scratch, x);
      return scratch;
    }
    if (!(x instanceof Tensor) || x.dtype !== "f32" || x.size !== t) {
      throw new TypeError(`${name} must be a Float32Array or an f32 Tensor of ${t} entries`);
    }
    return x.shape.length === 1 ? x : Tensor.viewOf(x, 0, [t]);
  }

  /**
   * Back-propagates the gradient of a loss w.r.t. the last forward pass's
   * outputs (dlogp and optional dentropy after {@linkcode forward}, dvalues
   * after {@linkcode forwardValues}) and adds (+=) every parameter's gradient
   * into {@linkcode grads}. Call {@linkcode zeroGrad} first to start afresh.
   */
  backward(upstream: BackwardInput): void {
    this.#alive();
    const ws = this.#ws;
    const saved = this.#saved;
    if (ws === null || saved === null) {
      throw new Error("backward needs a forward() or forwardValues() pass first");
    }
    const k = this.kernels;
    const cfg = this.config;
    const t = ws.t;
    if ("dvalues" in upstream) {
      if (saved.kind !== "values") {
        throw new Error("dvalues needs a forwardValues() pass; the last pass was forward()");
      }
      const dv = this.#upstream(upstream.dvalues, ws.dvalues, "dvalues", t);
      linearBackward(
        k,
        { dx: ws.dh, dw: this.#g.valueW!, dbias: this.#g.valueB! },
        Tensor.viewOf(dv, 0, [t, 1]),
        ws.hf,
        this.#wc.valueW!,
      );
    } else {
      if (saved.kind !== "logprob") {
        throw new Error("dlogp needs a forward() pass; the last pass was forwardValues()");
      }
      const dlogp = this.#upstream(upstream.dlogp, ws.dlogp, "dlogp", t);
      let dentropy: Tensor | null = null;
      if (upstream.dentropy != null) {
        if (!saved.entropy) {
          throw new Error("dentropy needs a forward() pass with { entropy: true }");
        }
        dentropy = this.#upstream(upstream.dentropy, ws.dentropy, "dentropy", t);
      }
      logprobBackward(
        k,
        { dh: ws.dh, dw: this.#g.head },
        { dlogp, dentropy },
        ws.hf,
        ws.targets,
        this.#wc.head,
        { lse: ws.lseLp, entropy: saved.entropy ? ws.entropy : null },
        saved.temperature,
      );
    }
    const L = cfg.num_hidden_layers;
    rmsnormBackward(k, ws.dres, this.#g.norm, ws.dh, ws.res[L]!, ws.rstdf, this.#wc.norm);
    for (let l = L - 1; l >= 0; l--) {
      this.#layerBackward(ws, ws.layers[l]!, this.#wc.layers[l]!, this.#g.layers[l]!, ws.res[l]!);
    }
    embeddingBackward(k, this.#g.embed, ws.dres, ws.tokens);
  }

  /** One decoder layer backward: ws.dres holds d(output) on entry and d(input x) on exit. */
  #layerBackward(ws: TrainActs, a: LayerActs, w: LayerWeights, g: LayerWeights, x: Tensor): void {
    const k = this.kernels;
    // MLP: y = m + down(silu(gate(h2)) * up(h2)), h2 = norm(m)
    linearBackward(k, { dx: ws.ds, dw: g.wd }, ws.dres, a.s, w.wd);
    swigluBackward(k, ws.dg, ws.du, ws.ds, a.g, a.u);
    linearBackward(k, { dx: ws.dh, dw: g.wg }, ws.dg, a.h2, w.wg);
    linearBackward(k, { dx: ws.dh, dw: g.wu }, ws.du, a.h2, w.wu, true);
    rmsnormBackward(k, ws.dtmp, g.ln2, ws.dh, a.m, a.rstd2, w.ln2);
    add(k, ws.dres, ws.dres, ws.dtmp); // dm
    // Attention: m = x + o_proj(attn(rope(q), rope(k), v)), q, k, v = proj(h1), h1 = norm(x)
    // (Qwen3: q and k = headnorm(proj(h1)))
    linearBackward(k, { dx: ws.da, dw: g.wo }, ws.dres, a.a, w.wo);
    attentionBackward(
      k,
      { dq: ws.dq3, dk: ws.dk3, dv: ws.dv3 },
      ws.da3,
      a.q3,
      a.k3,
      a.v3,
      a.a3,
      a.lse,
      ws.cu,
      this.#scale,
      this.precision,
    );
    this.#rope(ws.dq3, ws.positions, true);
    this.#rope(ws.dk3, ws.positions, true);
    let [dq, dk] = [ws.dq, ws.dk];
    const qk = a.qkNorm, dqk = ws.dqk;
    if (qk && dqk) { // Qwen3: through each head's norm back to the projections
      rmsnormBackward(k, dqk.dqp2, g.qn, dqk.dq2, qk.qp2, qk.rq, w.qn!);
      rmsnormBackward(k, dqk.dkp2, g.kn, dqk.dk2, qk.kp2, qk.rk, w.kn!);
      [dq, dk] = [dqk.dqp, dqk.dkp];
    }
    linearBackward(k, { dx: ws.dh, dw: g.wq, dbias: g.bq }, dq, a.h1, w.wq);
    linearBackward(k, { dx: ws.dh, dw: g.wk, dbias: g.bk }, dk, a.h1, w.wk, true);
    linearBackward(k, { dx: ws.dh, dw: g.wv, dbias: g.bv }, ws.dv, a.h1, w.wv, true);
    rmsnormBackward(k, ws.dtmp, g.ln1, ws.dh, x, a.rstd1, w.ln1);
    add(k, ws.dres, ws.dres, ws.dtmp); // dx
  }

  // ---- logits and generation ----------------------------------------------

  /** Final norm and LM head of `rows` of the residual stream `x` (T, C). */
  #headRows(x: Tensor, rows: Int32Array, t: number): Tensor<"f32"> {
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      if (!(r >= 0 && r < t)) throw new RangeError(`rows[${i}] = ${r} is outside 0..${t - 1}`);
    }
    const h: HeadActs = bindHeadActs(this.#head, this.config, rows.length);
    const k = this.kernels;
    let xr = x;
    if (!allRowsInOrder(rows, t)) { // (all rows in order: no gather)
      upload(h.rows, rows);
      embeddingForward(k, h.xr, h.rows, x); // gathers rows of x
      xr = h.xr;
    }
    this.#headKernels(h, xr);
    return h.logits as Tensor<"f32">;
  }

  /** The final norm and the LM head of h's rows of xr, into h.logits. */
  #headKernels(h: HeadActs, xr: Tensor): void {
    const k = this.kernels;
    const eps = this.config.rms_norm_eps;
    // The final norm rides in the LM head's GEMV only where asked (AGENTRL_DECODE_HEAD_NORM=1):
    // each of the head's many blocks then finds the norm itself, which costs more than a kernel.
    const fuse = !this.#noDecodeFusion && this.#headNormFused;
    if (k.device === "cuda" && h.r <= DECODE_FUSION_MAX_ROWS && fuse) {
      rmsnormLinearForward(k, h.logits, xr, this.#wc.norm, this.#wc.head, null, eps);
    } else {
      rmsnormForward(k, h.hr, h.rstd, xr, this.#wc.norm, eps);
      lmHead(k, h.logits, h.hr, this.#wc.head);
    }
  }

  /**
   * Full logits (R, V) of the chosen `rows` (indices into the T tokens) of a
   * packed batch, without temperature. The result is a workspace view, valid
   * until the next forwardLogits / forwardCached call. Replaces the saved
   * activations (a backward pass needs a new forward pass after this).
   */
  forwardLogits(
    tokens: Int32Array,
    positions: Int32Array,
    cuSeqlens: Int32Array,
    rows: Int32Array,
  ): Tensor<"f32"> {
    expectInt32Array(rows, "rows");
    if (rows.length < 1) throw new RangeError("rows must name at least one row");
    const ws = this.#prepare({ tokens, positions, cuSeqlens });
    this.#body(ws);
    return this.#headRows(ws.res[this.config.num_hidden_layers]!, rows, ws.t);
  }

  /** A KV cache for `numSlots` sequences of up to `maxLen` positions each. */
  createKvCache(numSlots: number, maxLen: number): Qwen2KvCache {
    this.#alive();
    return new Qwen2KvCache(this.kernels, {
      numLayers: this.config.num_hidden_layers,
      numKvHeads: this.config.num_key_value_heads,
      headDim: this.config.head_dim,
      numSlots,
      maxLen,
    });
  }

  /**
   * Runs N new tokens against the KV cache: token i of slot `slots[i]` at
   * `positions[i]`. Any mix of sequences; several tokens of one sequence are
   * allowed (in position order, each (slot, position) once), e.g. a prefill.
   * Each layer first writes the new tokens' keys and values into the cache,
   * then attends each token to positions 0 .. positions[i] of its slot (so the
   * cache must already hold that slot's earlier positions). Returns the
   * logits (R, V) of `logitRows` (indices into the N tokens; a workspace view
   * valid until the next forwardLogits / forwardCached call), or null when no
   * rows are asked for. No backward pass through this path.
   *
   * `tokens` may be an int32 tensor of the N ids on the model's device instead, such as the
   * `ids` that `sampleStart` writes: the next decode step then needs no token from
   * the host, and can be queued before the host reads the last step's tokens. Such ids are not
   * checked on the host: the CPU library's embedding rejects an id outside the vocabulary, the
   * CUDA library's flags it (reported by the next call that waits, such as a sampling's).
   */
  forwardCached(
    cache: Qwen2KvCache,
    tokens: Int32Array | Tensor<"i32">,
    positions: Int32Array,
    slots: Int32Array,
    logitRows: Int32Array,
  ): Tensor<"f32"> | null {
    this.#alive();
    const cfg = this.config;
    if (!(cache instanceof Qwen2KvCache) || !cache.alive) {
      throw new TypeError("cache must be a live Qwen2KvCache");
    }
    if (
      cache.numLayers !== cfg.num_hidden_layers || cache.numKvHeads !== cfg.num_key_value_heads ||
      cache.headDim !== cfg.head_dim
    ) {
      throw new RangeError("cache was made for a model of another shape");
    }
    const onDevice = tokens instanceof Tensor ? tokens : null;
    if (onDevice !== null) {
      expectTensor(onDevice, "tokens", "i32", [positions.length]);
    } else {
      expectInt32Array(tokens, "tokens");
      expectTokenIds(tokens as Int32Array, cfg.vocab_size);
    }
    const n = onDevice?.size ?? (tokens as Int32Array).length;
    if (n < 1) throw new RangeError("tokens must hold at least one token");
    expectInt32Array(positions, "positions", n);
    expectInt32Array(slots, "slots", n);
    expectInt32Array(logitRows, "logitRows");
    const written = n > 1 ? new Set<number>() : null;
    for (let i = 0; i < n; i++) {
      const p = positions[i]!, s = slots[i]!;
      if (!(p >= 0 && p < cache.maxLen)) {
        throw new RangeError(
          `positions[${i}] = ${p} is outside the cache's 0..${cache.maxLen - 1}`,
        );
      }
      if (!(s >= 0 && s < cache.numSlots)) {
        throw new RangeError(`slots[${i}] = ${s} is outside the cache's 0..${cache.numSlots - 1}`);
      }
      const key = s * cache.maxLen + p;
      if (written?.has(key)) {
        throw new RangeError(`slot ${s} position ${p} appears twice among the new tokens`);
      }
      written?.add(key);
    }
    const k = this.kernels;
    this.#syncLow(); // before the layers' graph is recorded or replayed
    if (this.#l2Offered === null && k.device === "cuda") {
      // What every step reads (the LM head by default; AGENTRL_L2_OFFER): kept in L2 where
      // AGENTRL_CUDA_L2_PERSIST asks, from before the first decode graph is recorded.
      this.#l2Offered = l2OfferRegions(l2OfferFromEnv(), this.#wc.head, this.#low?.layers ?? null);
      l2Persist(k, this.#l2Offered);
    }
    const d = this.#decodeViews(n);
    // tokens (unless on the device), positions, slots and lens (positions + 1) in one copy
    const ids = new Int32Array(4 * d.idsStride);
    if (onDevice === null) ids.set(tokens as Int32Array, 0);
    ids.set(positions, d.idsStride);
    ids.set(slots, 2 * d.idsStride);
    for (let i = 0; i < n; i++) ids[3 * d.idsStride + i] = positions[i]! + 1;
    // (no wait: the GPU may start on it at once)
    if (onDevice === null) (d.ids as Tensor<"i32">).writeAsync(ids);
    const placed = onDevice === null ? d : this.#placeOnDevice(d, ids.subarray(d.idsStride), cache);
    const tokenIds = onDevice ?? d.tokens;
    // The embedding's and the layers' pointers and sizes depend only on these: replayed as one
    // graph on CUDA.
    const at = (t: Tensor) => Deno.UnsafePointer.value(t.ptrIn(k));
    // Every row's logits in order (a decode step) and AGENTRL_DECODE_HEAD_GRAPH=1: the final
    // norm and the LM head join the graph (slower on an H100: see #headInGraph).
    const h = allRowsInOrder(logitRows, n) && this.#headInGraph
      ? bindHeadActs(this.#head, this.config, n)
      : null;
    const key = `${n} ${at(d.x)} ${at(tokenIds)} ${at(placed.positions)} ${at(cache.k[0]!)} ` +
      `${cache.numSlots} ${cache.maxLen}${h ? ` head ${at(h.logits)}` : ""}`;
    this.#graphs.run(key, () => {
      embeddingForward(k, d.x, tokenIds, this.#wc.embed);
      runCachedLayers(this.#decodeSetup, cache, placed);
      if (h) this.#headKernels(h, d.x);
    });
    if (logitRows.length === 0) return null;
    return h ? h.logits as Tensor<"f32"> : this.#headRows(d.x, logitRows, n);
  }

  /**
   * Uploads the placement (positions, slots, lens) of a step whose token ids are on the device,
   * and returns the views its layers read: `d`'s own, or under AGENTRL_DECODE_ALTERNATE_PLACEMENT
   * one of its two alternates in turn; AGENTRL_DECODE_KEEP_PLACEMENT uploads once a view and
   * cache.
   */
  #placeOnDevice(d: DecodeActs, placement: Int32Array, cache: Qwen2KvCache): DecodeActs {
    if (this.#alternatePlacement && !this.#keepPlacement) {
      const parity = this.#parity;
      this.#parity = parity === 0 ? 1 : 0;
      const p = d.alternates[parity];
      (p.placement as Tensor<"i32">).writeAlternating(
        placement,
        parity,
        this.#alternatingViews !== d,
      );
      this.#alternatingViews = d;
      return { ...d, positions: p.positions, slots: p.slots, lens: p.lens };
    }
    const kept = this.#keptPlacement;
    if (!this.#keepPlacement || kept?.placement !== d.placement || kept.cache !== cache) {
      (d.placement as Tensor<"i32">).writeAsync(placement);
      // (once a view and cache: the positions kept were checked against this cache)
      if (this.#keepPlacement) this.#keptPlacement = { placement: d.placement, cache };
    }
    return d;
  }

  /** What {@linkcode runCachedLayers} reads: the weights as bound now, and the switches. */
  get #decodeSetup(): CachedLayersSetup {
    return {
      kernels: this.kernels,
      config: this.config,
      layers: this.#wc.layers,
      scale: this.#scale,
      fusion: !this.#noDecodeFusion,
      ropeFreqs: this.#ropeFreqs,
      layerCalls: this.#decodeLayer,
      layerNormsCalls: this.#decodeLayerNorms,
      allLayersCall: this.#decodeLayers,
    };
  }

  /** The decode workspace's views for N tokens (kept while N and the buffer stay). */
  #decodeViews(n: number): DecodeActs {
    const last = this.#decodeActs;
    if (last !== null && last.acts.n === n && last.generation === this.#decode.generation) {
      return last.acts;
    }
    const acts = bindDecodeActs(this.#decode, this.config, n);
    this.#decodeActs = { acts, generation: this.#decode.generation };
    return acts;
  }

  /**
   * Whether {@linkcode forwardCached} replays its layer calls as CUDA graphs, and how many
   * recordings it keeps (false on the CPU, with `AGENTRL_CUDA_GRAPHS=0`, or after a recording
   * failed).
   */
  get decodeGraphs(): { enabled: boolean; recorded: number } {
    return { enabled: this.#graphs.enabled, recorded: this.#graphs.size };
  }

  // ---- lifetime -------------------------------------------------------------

  /** Bytes of native memory held: parameters, gradients and workspaces. */
  get byteSize(): number {
    return this.params.byteSize + this.grads.byteSize + (this.#low?.byteSize ?? 0) +
      this.#train.byteSize + this.#decode.byteSize + this.#head.byteSize;
  }

  /** Frees the activation workspaces (they are allocated again on the next call). */
  releaseWorkspaces(): void {
    this.#graphs.clear(); // they point into the decode workspace
    this.#ws = null;
    this.#saved = null;
    this.#train.free();
    this.#decode.free();
    this.#head.free();
  }

  #alive(): void {
    if (this.#disposed) throw new Error("This Qwen2Model was disposed");
  }

  /** Whether {@linkcode dispose} was called. */
  get disposed(): boolean {
    return this.#disposed;
  }

  /** Frees parameters, gradients and workspaces (idempotent). */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.releaseWorkspaces();
    if (l2Regions(this.kernels).some((t) => this.#l2Offered?.includes(t))) {
      l2Persist(this.kernels, []); // (regions of another model replaced these: left alone)
    }
    this.#low?.[Symbol.dispose]();
    this.#ropeFreqs?.free();
    this.params.free();
    this.grads.free();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
