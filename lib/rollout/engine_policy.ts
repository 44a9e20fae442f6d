/**
 * The generation engine as a rollout policy (ROLL's actor_infer behind the
 * env managers): each turn is one engine request with the env manager's
 * sampling settings, stopping at the tokenizer's end-of-turn tokens.
 *
 * @module
 */
import type { GenerationEngine } from "../infer/engine.ts";
import type { PolicyRequest, PolicyResponse, RolloutPolicy } from "./types.ts";
import { ChatEncoder, type ChatTemplate } from "../model/chat_template.ts";
import type { Tokenizer } from "../model/tokenizer.ts";

/** Sampling settings (generating_args). */
export interface PolicySampling {
  temperature: number;
  topP: number;
  topK: number;
  /** `do_sample`: false is greedy whatever the temperature (default true). */
  doSample?: boolean;
  /** `stop_strings`: a response ends once its text holds one (kept in the response). */
  stopStrings?: readonly string[];
}

/**
 * The sampling settings of a config's `generating_args` (temperature 1, no top-p/k, sampling
 * on and no stop strings if unset).
 */
export function samplingOf(
  g: {
    temperature: number | null;
    top_p: number | null;
    top_k: number | null;
    do_sample?: boolean | null;
    stop_strings?: readonly string[] | null;
  } | null,
): PolicySampling {
  return {
    temperature: g?.temperature ?? 1,
    topP: g?.top_p ?? 1,
    topK: g?.top_k ?? -1,
    doSample: g?.do_sample ?? true,
    stopStrings: g?.stop_strings ?? [],
  };
}

/**
 * The end-of-turn ids a policy stops at: the tokenizer's eos, `<|im_end|>`, and the token its
 * chat template closes an assistant turn with (Llama 3's `<|eot_id|>`, which a base model's
 * tokenizer files do not name as eos); `template` is the one the prompts are rendered with (default
 * the tokenizer's).
 */
export function endOfTurnIds(tok: Tokenizer, template?: ChatTemplate): number[] {
  const ids = new Set(tok.eosTokenIds);
  const imEnd = tok.tokenToId("<|im_end|>");
  if (imEnd !== undefined) ids.add(imEnd);
  const turnEnd = new ChatEncoder(tok, template).turnEndTokenId();
  if (turnEnd !== undefined) ids.add(turnEnd);
  return [...ids];
}

/** Answers turns with a {@linkcode GenerationEngine}. */
export class EnginePolicy implements RolloutPolicy {
  readonly engine: GenerationEngine;
  readonly sampling: PolicySampling;
  readonly stopTokenIds: readonly number[];
  /** Generated tokens so far (for throughput). */
  generatedTokens = 0;

  /** `stopTokenIds`: the end-of-turn ids (e.g. `<|im_end|>`, `<|endoftext|>`). */
  constructor(engine: GenerationEngine, sampling: PolicySampling, stopTokenIds: readonly number[]) {
    this.engine = engine;
    this.sampling = sampling;
    this.stopTokenIds = stopTokenIds;
  }

  /** Frees the engine slot of a turn nobody waits for any more. */
  abort(requestId: string): void {
    this.engine.abort(requestId);
  }

  async generate(request: PolicyRequest): Promise<PolicyResponse> {
    const r = await this.engine.generate({
      request_id: request.requestId,
      prompt_token_ids: request.promptIds,
      max_new_tokens: request.maxNewTokens,
      temperature: this.sampling.temperature,
      top_p: this.sampling.topP,
      top_k: this.sampling.topK,
      do_sample: this.sampling.doSample ?? true,
      seed: request.seed,
      stop_token_ids: this.stopTokenIds,
      // the stop string stays in the response's tokens, so the env sees it (e.g. `</answer>`)
      ...(this.sampling.stopStrings?.length ? { stop_strings: this.sampling.stopStrings } : {}),
    });
    this.generatedTokens += r.token_ids.length;
    return {
      tokenIds: r.token_ids,
      logprobs: r.logprobs,
      finishReason: r.finish_reason,
      weightVersions: r.weight_versions,
    };
  }
}
