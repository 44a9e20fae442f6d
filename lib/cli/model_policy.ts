/**
 * The `model:PATH` policy of `agentrl rollout`: a Hugging Face model folder
 * loaded onto the kernels, prompted with its chat template, answering through
 * the generation engine.
 *
 * @module
 */
import { Kernels } from "../../ffi/mod.ts";
import { GenerationEngine } from "../infer/engine.ts";
import type { ChatEncoder, ChatMessage, ChatTemplateChoice } from "../model/chat_template.ts";
import { chatEncoderWith, type TemplateSetup } from "../rollout/chat_setup.ts";
import { loadPretrained, type Pretrained } from "../model/pretrained.ts";
import { endOfTurnIds } from "../rollout/engine_policy.ts";

/** Sampling settings of the policy (the config's validation generating_args). */
export interface ModelPolicySampling {
  temperature: number;
  top_p: number;
  top_k: number;
  /** false: greedy. */
  do_sample?: boolean;
  /** A reply ends once its text holds one (kept in the reply, as in training). */
  stop_strings?: readonly string[];
  include_stop_str_in_output?: boolean;
}

/** A loaded model that answers chat turns. Close it when done. */
export class ModelPolicy implements AsyncDisposable {
  readonly #kernels: Kernels;
  readonly #pretrained: Pretrained;
  readonly #engine: GenerationEngine;
  readonly #encoder: ChatEncoder;
  readonly #sampling: ModelPolicySampling;
  readonly maxModelLen: number;
  #requests = 0;

  private constructor(
    kernels: Kernels,
    pretrained: Pretrained,
    sampling: ModelPolicySampling,
    maxModelLen: number,
    seed: number,
    template: ChatTemplateChoice | TemplateSetup,
    note?: (line: string) => void,
  ) {
    this.#kernels = kernels;
    this.#pretrained = pretrained;
    this.#sampling = sampling;
    this.maxModelLen = maxModelLen;
    this.#encoder = chatEncoderWith(pretrained.tokenizer, template, note);
    const tok = pretrained.tokenizer;
    this.#engine = new GenerationEngine(pretrained.model, {
      maxRunningRequests: 1,
      maxModelLen,
      decode: (ids) => tok.decode(ids, { skipSpecialTokens: true }),
      // the end of a turn as in training: the tokenizer's EOS ids, <|im_end|>, the template's
      eosTokenIds: endOfTurnIds(tok, this.#encoder.template),
      seed,
    });
  }

  /** Loads the model folder at `path` (config.json, safetensors, tokenizer). */
  static async load(
    path: string,
    sampling: ModelPolicySampling,
    maxModelLen: number,
    seed: number,
    template: ChatTemplateChoice | TemplateSetup = "native",
    note?: (line: string) => void,
  ): Promise<ModelPolicy> {
    const kernels = Kernels.open();
    try {
      const pretrained = await loadPretrained(kernels, path);
      const len = Math.min(maxModelLen, pretrained.config.max_position_embeddings);
      return new ModelPolicy(kernels, pretrained, sampling, len, seed, template, note);
    } catch (e) {
      kernels.close();
      throw e;
    }
  }

  /** The exact prompt text the model sees for these messages. */
  render(messages: readonly ChatMessage[]): string {
    return this.#encoder.template.render(messages, { addGenerationPrompt: true });
  }

  /** The model's reply to the conversation, at most `maxNewTokens` tokens. */
  async reply(
    messages: readonly ChatMessage[],
    maxNewTokens: number,
  ): Promise<{ text: string; promptTokens: number; completionTokens: number }> {
    const prompt = this.#encoder.encode(messages, { addGenerationPrompt: true });
    const room = this.maxModelLen - prompt.length;
    if (room < 1) {
      throw new Error(
        `the conversation is ${prompt.length} tokens, the model's limit is ${this.maxModelLen}`,
      );
    }
    const result = await this.#engine.generate({
      request_id: `rollout-${this.#requests++}`,
      prompt_token_ids: prompt,
      max_new_tokens: Math.min(maxNewTokens, room),
      ...this.#sampling,
    });
    return {
      text: result.text,
      promptTokens: result.prompt_tokens,
      completionTokens: result.completion_tokens,
    };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#engine.close();
    this.#pretrained[Symbol.dispose]();
    this.#kernels.close();
  }
}
