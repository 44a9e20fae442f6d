/**
 * ROLL's `llm_proxy.proxy_type: random`: every turn answers with the env's
 * uniformly random legal action (already in the action format, e.g.
 * `<answer>Left</answer>`) and the end-of-turn token: a baseline on exactly
 * the seeds and prompts a model sees, and a way to exercise a rollout with
 * no model.
 *
 * @module
 */
import type { Tokenizer } from "../model/tokenizer.ts";
import type { PolicyRequest, PolicyResponse, RolloutPolicy } from "./types.ts";

/** Answers with the env's random legal action; log-probs are 0 (no model). */
export class RandomPolicy implements RolloutPolicy {
  readonly tokenizer: Tokenizer;
  readonly endOfTurn: number | null;

  /** `endOfTurn`: the id closing a response (e.g. `<|im_end|>`), or null. */
  constructor(tokenizer: Tokenizer, endOfTurn: number | null) {
    this.tokenizer = tokenizer;
    this.endOfTurn = endOfTurn;
  }

  async generate(request: PolicyRequest): Promise<PolicyResponse> {
    const action = await request.sampleAction?.();
    if (action === null || action === undefined) {
      throw new Error(
        "the random policy needs the env's sampleAction(), which this env does not have",
      );
    }
    const ids = this.tokenizer.encode(action, { addSpecialTokens: false });
    if (this.endOfTurn !== null) ids.push(this.endOfTurn);
    const tokenIds = ids.slice(0, request.maxNewTokens);
    return {
      tokenIds,
      logprobs: tokenIds.map(() => 0),
      finishReason: tokenIds.length < ids.length ? "length" : "stop",
    };
  }
}
