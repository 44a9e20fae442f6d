/**
 * The generation engine (ROLL's actor_infer role, vLLM's place): requests
 * arrive one per environment turn, and a single scheduler loop serves them
 * all with continuous batching over a Qwen2 model's KV cache.
 *
 * One scheduler step is one `forwardCached` call and one sampling:
 * - every running sequence feeds its newest token (one decode token each);
 * - waiting requests are admitted while KV-cache slots are free (FIFO, at most
 *   `maxBatchedTokens` tokens a step) and their whole prompts are prefilled in
 *   the same call;
 * - one token is sampled for every sequence in the step (the logits of each
 *   decode token and of each admitted prompt's last token);
 * - a sequence that finishes frees its slot at once, so a waiting request takes
 *   it in the next step.
 *
 * With `lookahead` (on by default on CUDA) the next step is queued before this
 * one's tokens are read, its token ids taken from the device (see the option).
 *
 * Between steps the loop yields to the event loop (`setImmediate`, ~10 µs;
 * `setTimeout(0)` costs milliseconds), so that environments running in the
 * same thread make progress; with nothing to do it waits on a promise (no
 * busy-wait, and an idle engine does not keep the process alive). Steps are
 * synchronous native work: weights change, requests abort and new requests
 * queue only between steps.
 *
 * Sampling is reproducible per request: the n-th generated token is drawn
 * with the request's seed and counter n, so a request gives the same tokens
 * alone or among any others (up to float rounding of batched matmuls).
 *
 * @example
 * ```ts
 * import { Kernels } from "../../ffi/mod.ts";
 * import { Qwen2Model } from "../model/qwen2.ts";
 * import { GenerationEngine } from "./engine.ts";
 * using k = Kernels.open({ threads: 2 });
 * using model = new Qwen2Model(k, {
 *   vocab_size: 64, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
 *   num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8,
 *   max_position_embeddings: 256, rope_theta: 10000, rms_norm_eps: 1e-6,
 *   tie_word_embeddings: true, attention_bias: true, bos_token_id: null, eos_token_id: null,
 * }, { seed: 1 });
 * const engine = new GenerationEngine(model, { maxRunningRequests: 4, maxModelLen: 64 });
 * const [a, b] = await Promise.all([
 *   engine.generate({ prompt_token_ids: [1, 2, 3], max_new_tokens: 5, temperature: 0 }),
 *   engine.generate({ prompt_token_ids: [4, 5], max_new_tokens: 8, seed: 7 }),
 * ]);
 * console.log(a.token_ids.length, a.finish_reason); // 5 "length"
 * console.log(b.completion_tokens, b.logprobs.length); // 8 8
 * await engine.close();
 * ```
 *
 * @module
 */
import { setImmediate } from "node:timers";
import {
  KernelError,
  type PendingSample,
  type Sampled,
  type SampleRow,
  sampleStart,
  Tensor,
} from "../../ffi/mod.ts";
import { Qwen2Model } from "../model/qwen2.ts";
import { contextLength, contextLengthName } from "../model/config.ts";
import type { Qwen2KvCache } from "../model/qwen2_kv_cache.ts";
import { type NormalizedRequest, normalizeRequest } from "./_request.ts";
import { loadWeights } from "./_weights.ts";
import { kvCacheBytes, KvCacheSizeError } from "./kv_cache_size.ts";
import { type DecodeFn, StopStringMatcher, tokensThrough } from "./_stop.ts";

import type {
  GenerateOptions,
  GenerationEngineOptions,
  NamedWeights,
  UpdateWeightsOptions,
} from "./engine_options.ts";
import type {
  EngineStats,
  FinishedSequence,
  FinishReason,
  GenerationRequest,
  GenerationResult,
  StepInfo,
} from "./types.ts";

/** `arl_status` out of memory (kernels/include/agentrl.h). */
const ARL_ERR_ALLOC = 4;

export type { DecodeFn } from "./_stop.ts";
export type {
  GenerateOptions,
  GenerationEngineOptions,
  NamedWeights,
  UpdateWeightsOptions,
} from "./engine_options.ts";

interface Sequence {
  req: NormalizedRequest;
  /** KV-cache slot, -1 while waiting. */
  slot: number;
  tokens: number[];
  logprobs: number[];
  /** Positions of this sequence held in the cache. */
  cached: number;
  versionFirst: number;
  versionLast: number;
  matcher: StopStringMatcher | null;
  resolve: (r: GenerationResult) => void;
  reject: (e: unknown) => void;
  detach: (() => void) | null;
  done: boolean;
}

/** A step's model inputs, as `forwardCached` takes them, and its sequences' sampling counters. */
interface StepPlan {
  decoding: Sequence[];
  admitted: Sequence[];
  /** Host ids, or (a step queued ahead) the ids the step before sampled on the device. */
  tokens: Int32Array | Tensor<"i32">;
  positions: Int32Array;
  slots: Int32Array;
  rows: Int32Array;
  /** Each sequence's tokens before this step (decoding, then admitted): the sampling counter. */
  counters: number[];
}

/** A step whose model call and sampling are queued. */
interface LaunchedStep {
  plan: StepPlan;
  inStep: Sequence[];
  /** Tokens in its model call. */
  n: number;
  /** Where its sampled tokens also go on the device (lookahead on), else null. */
  ids: Tensor<"i32"> | null;
  pending: PendingSample | null;
  /** What its model call or sampling threw (then pending is null). */
  failure: unknown;
  /** The weight version it ran with. */
  version: number;
}

/** One step of the event loop: lets timers, I/O and other tasks run (~10 µs). */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function positiveInt(v: unknown, name: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 2 ** 31 - 1) {
    throw new RangeError(`${name} must be a positive integer, got ${String(v)}`);
  }
  return v;
}

/**
 * Serves generation requests with continuous batching (see the module doc).
 * The model is the caller's (it must outlive the engine); the engine owns the
 * KV cache, freed by {@linkcode close}.
 *
 * Weight updates ({@linkcode updateWeights}) land between two steps and,
 * vLLM-style, running requests continue with the new weights: tokens sampled
 * after the update come from the new weights (over the keys and values the old
 * weights cached), and each result's `weight_versions` tells which versions
 * sampled its first and last token.
 *
 * @example
 * ```ts
 * // one request per environment turn, with the tiny model's tokenizer
 * import { Kernels } from "../../ffi/mod.ts";
 * import { buildTinyModelFiles } from "../model/make_tiny_tokenizer.ts";
 * import { parseQwen2Config } from "../model/hf_config.ts";
 * import { Qwen2Model } from "../model/qwen2.ts";
 * import { Tokenizer } from "../model/tokenizer.ts";
 * import { GenerationEngine } from "./engine.ts";
 * const files = await buildTinyModelFiles();
 * const tokenizer = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
 * const config = parseQwen2Config(JSON.parse(files["config.json"]), "tiny/config.json");
 * using k = Kernels.open({ threads: 2 });
 * using model = new Qwen2Model(k, config, { seed: 1 });
 * using trained = new Qwen2Model(k, config, { seed: 2 });
 * const engine = new GenerationEngine(model, {
 *   maxRunningRequests: 16, maxModelLen: 256,
 *   decode: (ids) => tokenizer.decode(ids), eosTokenIds: [tokenizer.requireTokenId("<|im_end|>")],
 * });
 * const out = await engine.generate({
 *   prompt_token_ids: tokenizer.encode("Answer with <answer>Left</answer>:"), max_new_tokens: 16,
 *   temperature: 0.95, top_p: 0.7, top_k: 50, seed: 1234, stop_strings: ["</answer>"],
 * });
 * console.log(out.completion_tokens <= 16, typeof out.text); // true "string"
 * await engine.updateWeights(trained); // model_update after a training step
 * console.log(engine.weightVersion); // 1
 * await engine.close();
 * ```
 */
export class GenerationEngine implements AsyncDisposable {
  /** The model the engine runs (the caller's). */
  readonly model: Qwen2Model;
  readonly maxRunningRequests: number;
  readonly maxModelLen: number;
  readonly maxBatchedTokens: number;
  readonly batching: "continuous" | "static";
  readonly #cache: Qwen2KvCache;
  readonly #decode: DecodeFn | null;
  readonly #eos: readonly number[];
  readonly #seed: bigint;
  readonly #onStep: ((info: StepInfo) => void) | null;
  readonly #waiting: Sequence[] = [];
  /** Running sequences in admission order. */
  readonly #running = new Set<Sequence>();
  readonly #byId = new Map<string, Sequence>();
  /** Free slots; the most recently freed is taken first. */
  readonly #freeSlots: number[];
  readonly #stats: EngineStats = {
    steps: 0,
    prefillTokens: 0,
    decodeTokens: 0,
    sampledTokens: 0,
    discardedTokens: 0,
    maxRunning: 0,
    finished: { stop: 0, length: 0, abort: 0 },
  };
  readonly #lookahead: boolean;
  /** The step queued ahead (lookahead), collected by the next #step. */
  #ahead: LaunchedStep | null = null;
  /**
   * The device buffer of sampled token ids (lookahead). One is enough: each step reads its ids
   * (the embedding, its first kernel) before its own sampling overwrites them, in stream order.
   */
  #idsBuffer: Tensor<"i32"> | null = null;
  #submitted = 0;
  #version = 0;
  #stepping = false;
  /** Aborts asked for from inside a step, done when it ends. */
  #pendingAborts: Sequence[] = [];
  /** Sequences that finished in the current step (for StepInfo). */
  #finishedInStep: FinishedSequence[] = [];
  #wake: (() => void) | null = null;
  #closed = false;
  #closing: Promise<void> | null = null;
  readonly #loop: Promise<void>;

  constructor(model: Qwen2Model, options: GenerationEngineOptions) {
    if (!(model instanceof Qwen2Model) || model.disposed) {
      throw new TypeError("model must be a live Qwen2Model");
    }
    if (typeof options !== "object" || options === null) {
      throw new TypeError("GenerationEngine needs options { maxRunningRequests, maxModelLen }");
    }
    this.model = model;
    this.maxRunningRequests = positiveInt(options.maxRunningRequests, "maxRunningRequests");
    this.maxModelLen = positiveInt(options.maxModelLen, "maxModelLen");
    const maxPos = contextLength(model.config);
    if (this.maxModelLen > maxPos) {
      throw new RangeError(
        `maxModelLen ${this.maxModelLen} exceeds the model's ${
          contextLengthName(model.config)
        } ${maxPos}: expected at most ${maxPos}`,
      );
    }
    if (this.maxModelLen < 2) {
      throw new RangeError(`maxModelLen must be at least 2 (a prompt token and a new one), got 1`);
    }
    this.maxBatchedTokens = options.maxBatchedTokens === undefined
      ? Math.max(2048, this.maxRunningRequests)
      : positiveInt(options.maxBatchedTokens, "maxBatchedTokens");
    const batching = options.batching ?? "continuous";
    if (batching !== "continuous" && batching !== "static") {
      throw new RangeError(`batching must be "continuous" or "static", got ${String(batching)}`);
    }
    this.batching = batching;
    if (options.decode !== undefined && typeof options.decode !== "function") {
      throw new TypeError("decode must be a function from token ids to text");
    }
    this.#decode = options.decode ?? null;
    const vocab = model.config.vocab_size;
    this.#eos = Object.freeze([...(options.eosTokenIds ?? [])]);
    this.#eos.forEach((t, i) => {
      if (!Number.isInteger(t) || t < 0 || t >= vocab) {
        throw new RangeError(
          `eosTokenIds[${i}] must be a token id in 0..${vocab - 1}, got ${String(t)}`,
        );
      }
    });
    const seed = options.seed ?? 0;
    if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
    this.#seed = BigInt.asUintN(64, BigInt(seed));
    this.#onStep = options.onStep ?? null;
    const lookahead = options.lookahead ?? model.kernels.device === "cuda";
    if (typeof lookahead !== "boolean") {
      throw new TypeError(`lookahead must be true or false, got ${String(lookahead)}`);
    }
    this.#lookahead = lookahead;
    // the cache first: one too large for memory is refused with its size, before any array
    // (too large for a tensor, or for the device's memory: status ARL_ERR_ALLOC)
    try {
      this.#cache = model.createKvCache(this.maxRunningRequests, this.maxModelLen);
    } catch (e) {
      const outOfMemory = e instanceof KernelError && e.status === ARL_ERR_ALLOC;
      if (!(e instanceof RangeError) && !outOfMemory) throw e;
      const bytes = kvCacheBytes(model.config, this.maxRunningRequests, this.maxModelLen);
      throw new KvCacheSizeError(
        this.maxRunningRequests,
        this.maxModelLen,
        bytes,
        model.kernels.device,
        e,
      );
    }
    this.#freeSlots = Array.from({ length: this.maxRunningRequests }, (_, i) => i).reverse();
    this.#loop = this.#run();
  }

  // ---- public API -----------------------------------------------------------

  /**
   * Queues a request and resolves with its result when it finishes (also
   * when aborted: finish_reason "abort" with the tokens so far). Rejects with
   * a RangeError / TypeError naming the field for a bad request, and with an
   * Error once the engine is closed.
   */
  generate(request: GenerationRequest, options: GenerateOptions = {}): Promise<GenerationResult> {
    try {
      if (this.#closed) {
        throw new Error("The generation engine is closed: generate() needs an open engine");
      }
      const index = this.#submitted;
      let defaultId = `req-${index}`;
      for (let k = 1; this.#byId.has(defaultId); k++) defaultId = `req-${index}-${k}`;
      const req = normalizeRequest(request, {
        vocabSize: this.model.config.vocab_size,
        maxModelLen: this.maxModelLen,
        eosTokenIds: this.#eos,
        canDecode: this.#decode !== null,
        defaultId,
        defaultSeed: BigInt.asUintN(64, this.#seed * 0x9e3779b97f4a7c15n + BigInt(index)),
      });
      if (this.#byId.has(req.id)) {
        throw new Error(
          `request_id ${JSON.stringify(req.id)} is already in flight: expected a unique id`,
        );
      }
      const signal = options.signal;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new TypeError("signal must be an AbortSignal");
      }
      this.#submitted++;
      return new Promise<GenerationResult>((resolve, reject) => {
        const seq: Sequence = {
          req,
          slot: -1,
          tokens: [],
          logprobs: [],
          cached: 0,
          versionFirst: this.#version,
          versionLast: this.#version,
          matcher: req.stopStrings.length > 0
            ? new StopStringMatcher(this.#decode!, req.stopStrings)
            : null,
          resolve,
          reject,
          detach: null,
          done: false,
        };
        this.#byId.set(req.id, seq);
        this.#waiting.push(seq);
        if (signal !== undefined) {
          if (signal.aborted) {
            this.#abortSeq(seq);
            return;
          }
          const onAbort = () => this.#abortSeq(seq);
          signal.addEventListener("abort", onAbort, { once: true });
          seq.detach = () => signal.removeEventListener("abort", onAbort);
        }
        this.#wakeLoop();
      });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Aborts a waiting or running request: it resolves with finish_reason
   * "abort" and the tokens generated so far, and its slot is free for the
   * next step. Returns false when no request of that id is in flight.
   */
  abort(requestId: string): boolean {
    const seq = this.#byId.get(requestId);
    if (seq === undefined) return false;
    this.#abortSeq(seq);
    return true;
  }

  /**
   * model_update (ROLL's actor_train → actor_infer weight sync): copies the
   * trainer's weights into the engine's model and bumps
   * {@linkcode weightVersion}. The source is a model (a flat copy when its
   * parameter layout matches) or named weights (Hugging Face names).
   *
   * The copy happens between two scheduler steps (steps are synchronous, so
   * none is ever half done when this runs). Running requests are not paused:
   * vLLM-style, they continue with the new weights from their next token on
   * (the keys and values cached under the old weights stay). Requests that
   * must be fully on-policy should be awaited before updating. Resolves with
   * the new weight version.
   */
  // deno-lint-ignore require-await
  async updateWeights(
    source: Qwen2Model | NamedWeights,
    options: UpdateWeightsOptions = {},
  ): Promise<number> {
    if (this.#closed) throw new Error("The generation engine is closed: cannot update weights");
    if (this.#stepping) {
      throw new Error(
        "updateWeights was called inside a step (from the decode function): call it between steps",
      );
    }
    // A step queued ahead ran with the old weights: dropped now (before a copy that waits, and
    // would report that step's deferred errors), so that the next step is planned afresh.
    if (this.#ahead !== null) this.#ahead = this.#failOnDrop(this.#ahead);
    loadWeights(this.model, source, options.strict ?? true);
    return ++this.#version;
  }

  /** Stops the engine: aborts every request (they resolve with "abort") and frees the KV cache. */
  close(): Promise<void> {
    if (this.#closing !== null) return this.#closing;
    this.#closed = true;
    for (const seq of [...this.#byId.values()]) this.#abortSeq(seq);
    this.#wakeLoop();
    this.#closing = this.#loop.then(() => this.#release());
    return this.#closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Whether {@linkcode close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Starts at 0; each {@linkcode updateWeights} adds 1. */
  get weightVersion(): number {
    return this.#version;
  }

  /** Sequences holding a KV-cache slot now. */
  get numRunning(): number {
    return this.#running.size;
  }

  /** Requests waiting for a slot now. */
  get numWaiting(): number {
    return this.#waiting.length;
  }

  /** Counters since the engine started (a copy). */
  get stats(): EngineStats {
    return { ...this.#stats, finished: { ...this.#stats.finished } };
  }

  /** Bytes of the KV cache (0 once closed). */
  get cacheBytes(): number {
    return this.#cache.alive ? this.#cache.byteSize : 0;
  }

  // ---- the scheduler --------------------------------------------------------

  /** Frees the KV cache and the id buffer, after dropping a step queued ahead. */
  #release(): void {
    const ahead = this.#ahead;
    this.#ahead = null;
    if (ahead !== null) this.#drop(ahead); // (every request has ended: an error has no owner)
    this.#cache.free();
    this.#idsBuffer?.free();
    this.#idsBuffer = null;
  }

  #wakeLoop(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      if (this.#waiting.length === 0 && this.#running.size === 0) {
        const ahead = this.#ahead; // (its sequences have all finished: an error has no owner)
        this.#ahead = null;
        if (ahead !== null) this.#drop(ahead);
        await new Promise<void>((resolve) => (this.#wake = resolve));
        continue;
      }
      try {
        this.#step();
      } catch (e) {
        this.#fatal(e);
        return;
      }
      await yieldToEventLoop();
    }
  }

  /** An error outside the model calls (a throwing onStep): fails everything and closes. */
  #fatal(e: unknown): void {
    this.#stepping = false;
    this.#closed = true;
    const message = e instanceof Error ? e.message : String(e);
    const error = new Error(`The generation engine stopped after an error in a step: ${message}`, {
      cause: e,
    });
    for (const seq of [...this.#byId.values()]) this.#finish(seq, { error });
    this.#closing = Promise.resolve().then(() => this.#release());
  }

  #step(): void {
    const start = performance.now();
    this.#stepping = true;
    const launched = this.#takeAhead() ?? this.#launch(this.#plan(), this.#version);
    if (launched === null) {
      this.#stepping = false;
      return;
    }
    this.#ahead = this.#lookahead ? this.#launchNext(launched) : null;
    this.#collect(launched, start);
  }

  /** The next step from the host's view: running sequences' newest tokens, then admissions. */
  #plan(): StepPlan {
    const decoding = [...this.#running];
    const admitted: Sequence[] = [];
    if (this.batching === "continuous" || decoding.length === 0) {
      let budget = this.maxBatchedTokens - decoding.length;
      while (this.#waiting.length > 0 && this.#freeSlots.length > 0) {
        const seq = this.#waiting[0]!;
        const n = seq.req.prompt.length;
        if (n > budget && admitted.length > 0) break;
        this.#waiting.shift();
        seq.slot = this.#freeSlots.pop()!;
        this.#running.add(seq);
        budget -= n;
        admitted.push(seq);
      }
    }
    this.#stats.maxRunning = Math.max(this.#stats.maxRunning, this.#running.size);

    const nd = decoding.length;
    let n = nd;
    for (const seq of admitted) n += seq.req.prompt.length;
    const tokens = new Int32Array(n);
    const positions = new Int32Array(n);
    const slots = new Int32Array(n);
    const rows = new Int32Array(nd + admitted.length);
    decoding.forEach((seq, i) => {
      tokens[i] = seq.tokens[seq.tokens.length - 1]!;
      positions[i] = seq.cached;
      slots[i] = seq.slot;
      rows[i] = i;
    });
    let at = nd;
    admitted.forEach((seq, j) => {
      const p = seq.req.prompt;
      tokens.set(p, at);
      for (let i = 0; i < p.length; i++) positions[at + i] = i;
      slots.fill(seq.slot, at, at + p.length);
      at += p.length;
      rows[nd + j] = at - 1;
    });
    const counters = [...decoding, ...admitted].map((seq) => seq.tokens.length);
    return { decoding, admitted, tokens, positions, slots, rows, counters };
  }

  /**
   * Queues a step's model call and sampling (null when it has no tokens). With lookahead on,
   * the sampled tokens also go to the device id buffer, for the step after it.
   */
  #launch(plan: StepPlan, version: number): LaunchedStep | null {
    const n = plan.positions.length;
    if (n === 0) return null;
    const inStep = [...plan.decoding, ...plan.admitted];
    let ids: Tensor<"i32"> | null = null;
    let pending: PendingSample | null = null;
    let failure: unknown = null;
    try {
      ids = this.#lookahead ? this.#idsView(inStep.length) : null;
      const logits = this.model.forwardCached(
        this.#cache,
        plan.tokens,
        plan.positions,
        plan.slots,
        plan.rows,
      );
      if (logits === null) throw new Error("forwardCached returned no logits");
      pending = sampleStart(
        this.model.kernels,
        logits,
        inStep.map((seq, i): SampleRow => ({
          temperature: seq.req.temperature,
          topK: seq.req.topK,
          topP: seq.req.topP,
          seed: seq.req.seed,
          counter: plan.counters[i]!,
        })),
        ids,
      );
    } catch (e) {
      failure = e;
    }
    return { plan, inStep, n, ids, pending, failure, version };
  }

  /**
   * Lookahead: queues the step after `step` before its tokens are read, its token ids being
   * the ones `step` samples on the device. Only when that step would run the same sequences
   * (none of them sure to finish now, nobody to admit) and `step` raised nothing.
   */
  #launchNext(step: LaunchedStep): LaunchedStep | null {
    if (step.failure !== null || step.ids === null || this.#closed) return null;
    if (this.batching === "continuous" && this.#waiting.length > 0 && this.#freeSlots.length > 0) {
      return null; // the next step admits: its prompts need the host
    }
    const nd = step.plan.decoding.length;
    const seqs = step.inStep;
    if (seqs.some((seq, i) => seq.done || step.plan.counters[i]! + 1 >= seq.req.maxNewTokens)) {
      return null; // a sequence finishes with this step's token
    }
    const rows = Int32Array.from(seqs, (_, i) => i);
    const plan: StepPlan = {
      decoding: seqs,
      admitted: [],
      tokens: step.ids,
      // where each sequence's cache ends once this step is in
      positions: Int32Array.from(seqs, (seq, i) => i < nd ? seq.cached + 1 : seq.req.prompt.length),
      slots: Int32Array.from(seqs, (seq) => seq.slot),
      rows,
      counters: step.plan.counters.map((c) => c + 1),
    };
    const ahead = this.#launch(plan, this.#version);
    // A failed launch queued nothing (no sampling): the next step, planned from the host, meets
    // a real error again.
    return ahead?.failure === null ? ahead : null;
  }

  /**
   * The step queued ahead during the last one, if it still holds: the weights have not changed
   * since, and some of its sequences still run. Otherwise it is dropped (null).
   */
  #takeAhead(): LaunchedStep | null {
    const ahead = this.#ahead;
    this.#ahead = null;
    if (ahead === null) return null;
    const failed = ahead.pending === null && ahead.failure !== null; // (see #failOnDrop)
    if (failed) return ahead;
    if (ahead.version === this.#version && ahead.inStep.some((seq) => !seq.done)) return ahead;
    return this.#failOnDrop(ahead);
  }

  /**
   * Drops a queued step. If reading its sampling reports an error (a deferred one, of a kernel
   * queued before it), the step is kept as a failed one, which fails its running sequences when
   * collected, as any failed step does; otherwise null.
   */
  #failOnDrop(step: LaunchedStep): LaunchedStep | null {
    const error = this.#drop(step);
    return error === null ? null : { ...step, pending: null, failure: error };
  }

  /** Reads a queued step's sampling and drops it (its rows count as discarded); what it threw. */
  #drop(step: LaunchedStep): unknown {
    this.#stats.discardedTokens += step.n;
    try {
      step.pending?.discard();
      return null;
    } catch (e) {
      return e;
    }
  }

  /** The first `rows` ids of the device id buffer (made on first use). */
  #idsView(rows: number): Tensor<"i32"> {
    this.#idsBuffer ??= new Tensor(this.model.kernels, [this.maxRunningRequests], "i32");
    return Tensor.viewOf(this.#idsBuffer, 0, [rows]) as Tensor<"i32">;
  }

  /** Waits for a step's tokens and applies them: stats, appended tokens, finishes, onStep. */
  #collect(step: LaunchedStep, start: number): void {
    const { plan, inStep, n } = step;
    let sampled: Sampled | null = null;
    let failure = step.failure;
    if (failure === null) {
      try {
        sampled = step.pending!.wait();
      } catch (e) {
        failure = e;
      }
    }
    const nd = plan.decoding.length;
    const live = inStep.filter((seq) => !seq.done).length;
    this.#stats.steps++;
    this.#stats.decodeTokens += nd - (inStep.length - live);
    this.#stats.prefillTokens += n - nd;
    this.#stats.discardedTokens += inStep.length - live;
    for (const seq of plan.decoding) seq.cached++;
    for (const seq of plan.admitted) seq.cached = seq.req.prompt.length;

    inStep.forEach((seq, i) => {
      if (seq.done) return;
      if (failure !== null) {
        this.#finish(seq, { error: failure });
        return;
      }
      try {
        this.#advance(seq, sampled!.tokens[i]!, sampled!.logprobs[i]!, step.version);
      } catch (e) {
        this.#finish(seq, { error: e });
      }
    });
    this.#stepping = false;
    const aborts = this.#pendingAborts;
    this.#pendingAborts = [];
    for (const seq of aborts) this.#abortSeq(seq);

    if (this.#onStep !== null) {
      this.#onStep({
        step: this.#stats.steps - 1,
        admitted: plan.admitted.map((s) => ({
          request_id: s.req.id,
          slot: s.slot,
          prompt_tokens: s.req.prompt.length,
        })),
        decoded: nd - (inStep.length - live),
        tokens: n,
        finished: this.#finishedInStep,
        running: this.#running.size,
        waiting: this.#waiting.length,
        start,
        end: performance.now(),
      });
    }
    // reported (or nobody asked): aborts made before the next step are that step's
    this.#finishedInStep = [];
  }

  /** Appends a sampled token and finishes the sequence when a stop condition holds. */
  #advance(seq: Sequence, token: number, logprob: number, version: number): void {
    const req = seq.req;
    if (seq.tokens.length === 0) seq.versionFirst = version;
    seq.versionLast = version;
    seq.tokens.push(token);
    seq.logprobs.push(logprob);
    this.#stats.sampledTokens++;
    if (req.stopTokenIds.has(token)) {
      this.#finish(seq, { reason: "stop", stopToken: token });
      return;
    }
    if (seq.matcher !== null) {
      const m = seq.matcher.update(seq.tokens);
      if (m !== null) {
        this.#finish(seq, { reason: "stop", stopString: m.stop, stopIndex: m.index });
        return;
      }
    }
    if (seq.tokens.length >= req.maxNewTokens) this.#finish(seq, { reason: "length" });
  }

  #abortSeq(seq: Sequence): void {
    if (seq.done) return;
    if (this.#stepping) {
      this.#pendingAborts.push(seq);
      return;
    }
    this.#finish(seq, { reason: "abort" });
  }

  /** Resolves (or rejects) a sequence and frees its slot at once. */
  #finish(
    seq: Sequence,
    how:
      | { reason: FinishReason; stopToken?: number; stopString?: string; stopIndex?: number }
      | { error: unknown },
  ): void {
    if (seq.done) return;
    seq.done = true;
    seq.detach?.();
    this.#byId.delete(seq.req.id);
    if (seq.slot >= 0) {
      this.#running.delete(seq);
      this.#freeSlots.push(seq.slot);
    } else {
      const i = this.#waiting.indexOf(seq);
      if (i >= 0) this.#waiting.splice(i, 1);
    }
    if ("error" in how) {
      seq.reject(how.error);
      return;
    }
    this.#stats.finished[how.reason]++;
    if (seq.slot >= 0) {
      this.#finishedInStep.push({
        request_id: seq.req.id,
        slot: seq.slot,
        finish_reason: how.reason,
      });
    }
    let result: GenerationResult;
    try {
      result = this.#result(seq, how);
    } catch (e) {
      seq.reject(e);
      return;
    }
    seq.resolve(result);
  }

  #result(
    seq: Sequence,
    how: { reason: FinishReason; stopToken?: number; stopString?: string; stopIndex?: number },
  ): GenerationResult {
    const req = seq.req;
    let tokens = seq.tokens;
    let logprobs = seq.logprobs;
    let text = "";
    const decode = this.#decode;
    if (how.stopString !== undefined && decode !== null && seq.matcher !== null) {
      const full = seq.matcher.text;
      const end = how.stopIndex! + how.stopString.length;
      const keep = tokensThrough(decode, tokens, full, end);
      tokens = tokens.slice(0, keep);
      logprobs = logprobs.slice(0, keep);
      text = full.slice(0, req.includeStopStr ? end : how.stopIndex!);
    } else if (decode !== null && tokens.length > 0) {
      const textIds = how.stopToken !== undefined && !req.includeStopStr
        ? tokens.slice(0, -1)
        : tokens;
      text = textIds.length > 0 ? decode(textIds) : "";
    }
    return {
      request_id: req.id,
      token_ids: tokens,
      text,
      logprobs,
      finish_reason: how.reason,
      stop_reason: how.stopToken ?? how.stopString ?? null,
      prompt_tokens: req.prompt.length,
      completion_tokens: tokens.length,
      // no token yet (aborted while waiting): the version at the abort, as documented
      weight_versions: seq.tokens.length === 0
        ? [this.#version, this.#version]
        : [seq.versionFirst, seq.versionLast],
    };
  }
}
