/**
 * The data records of the generation engine (the actor_infer role): what a
 * request asks for, what comes back, and what the engine reports per step.
 *
 * Request and result fields use snake_case, as ROLL's `GeneratingArguments`
 * and vLLM's `SamplingParams` / `RequestOutput` spell them, so that a worker's
 * `generating_args` can be spread into a request.
 *
 * @example
 * ```ts
 * import type { GenerationRequest } from "./types.ts";
 * const generatingArgs = { max_new_tokens: 32, temperature: 0.95, top_p: 0.7, top_k: 50 };
 * const request: GenerationRequest = { prompt_token_ids: [1, 2, 3], seed: 7, ...generatingArgs };
 * console.log(request.max_new_tokens); // 32
 * ```
 *
 * @module
 */

/**
 * Why a generation ended: `"stop"` (a stop token or stop string), `"length"`
 * (`max_new_tokens` reached) or `"abort"` ({@linkcode GenerationEngine.abort},
 * an abort signal, or the engine closing).
 *
 * @example
 * ```ts
 * import type { FinishReason } from "./types.ts";
 * const truncated = (r: FinishReason) => r === "length";
 * console.log(truncated("stop")); // false
 * ```
 */
export type FinishReason = "stop" | "length" | "abort";

/**
 * One generation request (one environment turn): a tokenized prompt and its
 * sampling settings. Absent and `null` fields take the defaults given.
 *
 * @example
 * ```ts
 * import type { GenerationRequest } from "./types.ts";
 * const greedy: GenerationRequest = { prompt_token_ids: [5, 6, 7], max_new_tokens: 8, temperature: 0 };
 * console.log(greedy.temperature); // 0
 * ```
 */
export interface GenerationRequest {
  /**
   * The caller's name for the request, for {@linkcode GenerationEngine.abort};
   * unique among the requests in flight. Default: `"req-<n>"` (n counts
   * submissions).
   */
  request_id?: string | null;
  /** The prompt's token ids: at least one, each in 0 .. vocab_size - 1. */
  prompt_token_ids: ArrayLike<number>;
  /**
   * Tokens to generate at most: a positive integer with prompt + max_new_tokens
   * <= the engine's `maxModelLen` (a request that cannot fit is rejected).
   * Default: whatever room `maxModelLen` leaves after the prompt.
   */
  max_new_tokens?: number | null;
  /** Softmax temperature, >= 0; 0 is greedy (argmax). Default 1. */
  temperature?: number | null;
  /** Nucleus sampling mass in (0, 1]; 1 is off. Default 1. */
  top_p?: number | null;
  /** Keep the k most likely tokens; 0 or -1 is off. Default off. */
  top_k?: number | null;
  /** `false` makes the request greedy whatever its temperature (ROLL's `do_sample`). */
  do_sample?: boolean | null;
  /**
   * Seed of the request's random stream (an integer, number or bigint). The
   * n-th generated token draws with counter n, so the same seed gives the same
   * tokens whatever else the engine runs. Default: derived from the engine's
   * seed and the request's submission index.
   */
  seed?: number | bigint | null;
  /** Token ids that end the generation (besides the engine's `eosTokenIds`). */
  stop_token_ids?: readonly number[] | null;
  /**
   * Strings that end the generation, searched in the decoded text of the
   * generated tokens (needs the engine's `decode`). The result's text is cut
   * before the stop string, its tokens end at the token that completed it.
   */
  stop_strings?: readonly string[] | null;
  /**
   * Keep the matched stop string (or the stop token's text) at the end of the
   * result's text. Default false.
   */
  include_stop_str_in_output?: boolean | null;
  /** Do not stop at the engine's `eosTokenIds` (`stop_token_ids` still apply). Default false. */
  ignore_eos?: boolean | null;
}

/**
 * What a request returns once it finishes.
 *
 * Tokens: the generated ids in order; a stop token that ended the generation
 * is the last id (its log-prob included, so a trainer learns to stop); a stop
 * string ends the ids at the token that completed it. Text: the decoded
 * generated ids (`""` when the engine has no `decode`), without the stop
 * token's text and cut before a matched stop string, unless
 * `include_stop_str_in_output`.
 *
 * @example
 * ```ts
 * import type { GenerationResult } from "./types.ts";
 * const r: GenerationResult = {
 *   request_id: "req-0", token_ids: [4, 2], text: "hi", logprobs: [-0.1, -0.5],
 *   finish_reason: "stop", stop_reason: 2, prompt_tokens: 3, completion_tokens: 2,
 *   weight_versions: [0, 0],
 * };
 * console.log(r.completion_tokens === r.token_ids.length); // true
 * ```
 */
export interface GenerationResult {
  request_id: string;
  /** The generated token ids. */
  token_ids: number[];
  /** The generated text (see above). */
  text: string;
  /**
   * Log-prob of each generated token: log softmax(logits / temperature)
   * (temperature 1 for greedy), before top-k / top-p filtering, as the sampler
   * reports it. With top-k or top-p on, the token was drawn from the
   * renormalised kept set, so this is not its sampling probability (training
   * recomputes its own old log-probs).
   */
  logprobs: number[];
  finish_reason: FinishReason;
  /** The stop token id or stop string that ended the generation, else null. */
  stop_reason: number | string | null;
  /** Tokens in the prompt. */
  prompt_tokens: number;
  /** Tokens generated (= token_ids.length). */
  completion_tokens: number;
  /**
   * The engine's weight version ({@linkcode GenerationEngine.weightVersion})
   * that sampled the first and the last token: they differ when weights were
   * updated while the request ran. [v, v] for a request aborted before its
   * first token, v being the version then.
   */
  weight_versions: [number, number];
}

/**
 * A sequence the engine admitted in a step.
 *
 * @example
 * ```ts
 * import type { AdmittedSequence } from "./types.ts";
 * const a: AdmittedSequence = { request_id: "req-3", slot: 0, prompt_tokens: 12 };
 * console.log(a.slot); // 0
 * ```
 */
export interface AdmittedSequence {
  request_id: string;
  /** The KV-cache slot it holds until it finishes. */
  slot: number;
  prompt_tokens: number;
}

/**
 * A sequence that finished in (or just after) a step.
 *
 * @example
 * ```ts
 * import type { FinishedSequence } from "./types.ts";
 * const f: FinishedSequence = { request_id: "req-3", slot: 0, finish_reason: "length" };
 * console.log(f.finish_reason); // "length"
 * ```
 */
export interface FinishedSequence {
  request_id: string;
  /** The KV-cache slot it freed. */
  slot: number;
  finish_reason: FinishReason;
}

/**
 * What one scheduler step did ({@linkcode GenerationEngineOptions.onStep}).
 * One step is one `forwardCached` call (decode tokens of every running
 * sequence, then the prompts of the newly admitted ones) and one `sample`
 * call.
 *
 * @example
 * ```ts
 * import type { StepInfo } from "./types.ts";
 * // tokens per second of decode-only steps, from the engine's onStep reports
 * const decodeRate = (steps: StepInfo[]) => {
 *   const d = steps.filter((s) => s.admitted.length === 0);
 *   return d.reduce((a, s) => a + s.decoded, 0) / ((d.at(-1)!.end - d[0]!.start) / 1000);
 * };
 * console.log(typeof decodeRate); // "function"
 * ```
 */
export interface StepInfo {
  /** 0-based step index. */
  step: number;
  /** Sequences admitted (prefilled) in this step. */
  admitted: AdmittedSequence[];
  /** Running sequences that got a decode token in this step. */
  decoded: number;
  /** Tokens in the step's forwardCached call (decoded + prompt tokens of the admitted). */
  tokens: number;
  /**
   * Sequences that finished in this step, and those aborted since the step before (their
   * slots are free for the next step).
   */
  finished: FinishedSequence[];
  /** Sequences holding a KV-cache slot after the step. */
  running: number;
  /** Requests waiting for a slot after the step. */
  waiting: number;
  /** performance.now() at the step's start and end (milliseconds). */
  start: number;
  end: number;
}

/**
 * Counters since the engine started ({@linkcode GenerationEngine.stats}).
 *
 * @example
 * ```ts
 * import type { EngineStats } from "./types.ts";
 * const meanBatch = (s: EngineStats) => s.sampledTokens / Math.max(1, s.steps);
 * console.log(meanBatch({
 *   steps: 4, prefillTokens: 20, decodeTokens: 6, sampledTokens: 8, discardedTokens: 0,
 *   maxRunning: 2,
 *   finished: { stop: 1, length: 1, abort: 0 },
 * })); // 2
 * ```
 */
export interface EngineStats {
  /** Scheduler steps run. */
  steps: number;
  /** Prompt tokens prefilled. */
  prefillTokens: number;
  /** Tokens run as decode inputs (one per running sequence per step). */
  decodeTokens: number;
  /** Tokens sampled (before trimming at stop strings). */
  sampledTokens: number;
  /**
   * Decode tokens run for sequences that had finished meanwhile, whose results were dropped:
   * rows of steps queued ahead (`lookahead`).
   */
  discardedTokens: number;
  /** The most sequences that held slots at once. */
  maxRunning: number;
  /** Requests finished, by reason. */
  finished: Record<FinishReason, number>;
}
