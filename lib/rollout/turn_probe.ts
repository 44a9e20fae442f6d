/**
 * Whether the chat template can extend a conversation token by token, asked before a rollout:
 * trajectory-wise episodes keep the sampled ids and append each next turn, which a template
 * that rewrites earlier turns (one that strips an earlier answer's `<think>` block, Qwen3's)
 * cannot do. Asked with a plain and a `<think>` response, so that a run does not stop at the
 * first sampled `</think>` hundreds of steps in.
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";
import {
  type ChatEncoder,
  ChatTemplateIncrementError,
  ChatTemplateRenderError,
  missingChatMlTokens,
} from "../model/chat_template.ts";
import { RolloutConfigError } from "./errors.ts";

/**
 * The config error for a template that cannot extend a conversation; `chatml`: whether the
 * tokenizer has ChatML's markers, so that `data_args.template=qwen2_5` is a way out.
 */
export function incrementConfigError(
  e: ChatTemplateIncrementError,
  chatml = true,
): RolloutConfigError {
  const choose = chatml
    ? "choose one with actor_train.data_args.template=qwen2_5 (ChatML, which Qwen models " +
      "read), or play step-wise episodes (envs=step)"
    : "play step-wise episodes (envs=step)";
  return new RolloutConfigError(
    `${e.message}. Trajectory-wise episodes need a chat template that renders earlier turns ` +
      `unchanged: ${choose}, which start each turn afresh`,
    { cause: e },
  );
}

/**
 * Throws a {@linkcode RolloutConfigError} when one of `tags` plays trajectory-wise episodes and
 * `encoder`'s template cannot extend a two-turn conversation.
 *
 * @example
 * ```ts
 * import { loadConfig } from "../config/load_config.ts";
 * import { ChatEncoder } from "../model/chat_template.ts";
 * import { buildTinyModelFiles } from "../model/make_tiny_tokenizer.ts";
 * import { Tokenizer } from "../model/tokenizer.ts";
 * import { probeTurnIncrements } from "./turn_probe.ts";
 * const files = await buildTinyModelFiles();
 * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
 * const { config } = await loadConfig({ configName: "agent_val_frozen_lake" });
 * probeTurnIncrements(new ChatEncoder(tok), config, config.train_env_manager.tags); // passes
 * ```
 */
export function probeTurnIncrements(
  encoder: ChatEncoder,
  config: AgenticConfig,
  tags: Iterable<string>,
): void {
  const custom = config.custom_envs as Record<string, { env_manager_cls?: string | null }>;
  const trajectoryWise = [...new Set(tags)].some((t) => custom[t]?.env_manager_cls !== "step");
  if (!trajectoryWise) return;
  const problem = turnIncrementProblem(encoder);
  if (problem) throw problem;
}

/**
 * Why `encoder`'s template cannot extend a two-turn conversation token by token (a
 * {@linkcode RolloutConfigError} that names the ways out), or null when it can: asked with a
 * plain answer, one with whitespace around it and a `<think>` one.
 *
 * @example
 * ```ts
 * import { ChatEncoder } from "../model/chat_template.ts";
 * import { buildTinyModelFiles } from "../model/make_tiny_tokenizer.ts";
 * import { Tokenizer } from "../model/tokenizer.ts";
 * import { turnIncrementProblem } from "./turn_probe.ts";
 * const files = await buildTinyModelFiles();
 * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
 * console.log(turnIncrementProblem(new ChatEncoder(tok))); // null
 * ```
 */
export function turnIncrementProblem(encoder: ChatEncoder): RolloutConfigError | null {
  const tok = encoder.tokenizer;
  const end = encoder.turnEndTokenId() ?? tok.tokenToId("<|im_end|>");
  const first = [
    { role: "system" as const, content: "Play." },
    { role: "user" as const, content: "Turn 1" },
  ];
  // a plain answer, one with whitespace around it (Llama 3's template trims it), a <think> one
  const answers = [
    "<answer>Up</answer>",
    "\n<answer>Up</answer>\n",
    "<think>up is safe</think><answer>Up</answer>",
  ];
  for (const text of answers) {
    try {
      const ids = encoder.encode(first, { addGenerationPrompt: true });
      const response = [...tok.encode(text, { addSpecialTokens: false }), ...(end ? [end] : [])];
      encoder.nextTurnIds(
        [...first, encoder.assistantMessage(response)],
        [...ids, ...response],
        { role: "user", content: "Turn 2" },
      );
    } catch (e) {
      if (e instanceof ChatTemplateIncrementError) {
        return incrementConfigError(e, missingChatMlTokens(tok).length === 0);
      }
      if (e instanceof ChatTemplateRenderError) return new RolloutConfigError(e.message);
      throw e;
    }
  }
  return null;
}
