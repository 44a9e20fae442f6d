// Shared pieces of the rollout tests: the tiny tokenizer's chat encoder, a
// small config, and scripted policies that answer without a model.
import { loadConfig } from "../../lib/config/load_config.ts";
import type { AgenticConfig } from "../../lib/config/agentic_config.ts";
import { ChatEncoder } from "../../lib/model/chat_template.ts";
import { buildTinyModelFiles } from "../../lib/model/make_tiny_tokenizer.ts";
import { Tokenizer } from "../../lib/model/tokenizer.ts";
import { RolloutScheduler } from "../../lib/rollout/scheduler.ts";
import type { PolicyRequest, PolicyResponse, RolloutPolicy } from "../../lib/rollout/types.ts";

const files = await buildTinyModelFiles();
/** The tiny default tokenizer. */
export const tokenizer = Tokenizer.fromJSON({
  tokenizerJson: JSON.parse(files["tokenizer.json"]),
  tokenizerConfig: JSON.parse(files["tokenizer_config.json"]),
});
/** Its chat encoder (the shipped Qwen2.5 template). */
export const encoder = new ChatEncoder(tokenizer);
/** `<|im_end|>`: the end of an assistant turn. */
export const IM_END = tokenizer.tokenToId("<|im_end|>")!;
/** What the env receives: ROLL keeps special tokens. */
export const decodeForEnv = (ids: readonly number[]) => tokenizer.decode(ids);

/** The default config with a small train/val layout and `overrides` on top. */
export async function smallConfig(overrides: string[] = []): Promise<AgenticConfig> {
  const { config } = await loadConfig({
    overrides: [
      "rollout_batch_size=8",
      "train_env_manager.num_env_groups=2",
      "train_env_manager.group_size=4",
      "train_env_manager.num_groups_partition=[2]",
      "val_batch_size=4",
      "val_env_manager.num_env_groups=4",
      "val_env_manager.num_groups_partition=[4]",
      ...overrides,
    ],
  });
  return config;
}

/** A train-mode scheduler over `config` with the tiny encoder (dispose it: `await using`). */
export function trainScheduler(config: AgenticConfig, policy: RolloutPolicy): RolloutScheduler {
  return new RolloutScheduler({ config, mode: "train", policy, encoder, decodeForEnv });
}

/** A policy that answers every turn with `answer(request)` + `<|im_end|>`. */
export class TextPolicy implements RolloutPolicy {
  readonly requests: PolicyRequest[] = [];
  readonly #answer: (r: PolicyRequest) => string | Promise<string>;
  constructor(answer: (r: PolicyRequest) => string | Promise<string>) {
    this.#answer = answer;
  }
  async generate(request: PolicyRequest): Promise<PolicyResponse> {
    this.requests.push(request);
    const text = await this.#answer(request);
    const ids = [...tokenizer.encode(text, { addSpecialTokens: false }), IM_END]
      .slice(0, request.maxNewTokens);
    return {
      tokenIds: ids,
      logprobs: ids.map((_, i) => -0.5 - i / 100),
      finishReason: ids.length < request.maxNewTokens || ids.at(-1) === IM_END ? "stop" : "length",
    };
  }
}

/** A seeded uniformly random FrozenLake move. */
export function randomMove(seed: number): string {
  const moves = ["Left", "Down", "Right", "Up"];
  return `<answer>${moves[(seed >>> 3) % 4]}</answer>`;
}
