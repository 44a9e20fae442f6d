/**
 * The chat template a run renders prompts with: the tokenizer folder's own, or the one
 * `actor_train.data_args.template` names.
 *
 * ROLL's agentic pipeline renders with the tokenizer's template whatever `data_args.template`
 * says; agentrl honors `qwen2_5`, so that a model whose own template re-renders earlier turns
 * (Qwen3 moves its `<think>` blocks) can play trajectory-wise episodes in ChatML.
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";
import {
  ChatEncoder,
  type ChatMessage,
  ChatTemplate,
  type ChatTemplateChoice,
  missingChatMlTokens,
  QWEN2_5_CHAT_TEMPLATE,
} from "../model/chat_template.ts";
import type { Tokenizer } from "../model/tokenizer.ts";
import { RolloutConfigError } from "./errors.ts";

/**
 * A chat encoder for `tok` with the template `config.actor_train.data_args.template` names
 * (`native`, the default: the tokenizer's; `qwen2_5`: Qwen2.5's ChatML template, which only
 * appends turns; any other name, such as ROLL's `qwen3`: the tokenizer's, with a note), rendering
 * with `actor_train.data_args.chat_template_kwargs` (a name the template never mentions is told
 * to `note`). `qwen2_5` needs a tokenizer with `<|im_start|>` and `<|im_end|>` (else a
 * {@linkcode RolloutConfigError}); where it replaces a template of the folder's own that renders
 * otherwise, `note` is told.
 *
 * @example
 * ```ts
 * import { loadConfig } from "../config/load_config.ts";
 * import { buildTinyModelFiles } from "../model/make_tiny_tokenizer.ts";
 * import { Tokenizer } from "../model/tokenizer.ts";
 * import { chatEncoderFor } from "./chat_setup.ts";
 * const files = await buildTinyModelFiles();
 * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
 * const { config } = await loadConfig({
 *   configName: "agent_val_frozen_lake",
 *   overrides: ["actor_train.data_args.template=qwen2_5"],
 * });
 * console.log(chatEncoderFor(tok, config).template.origin); // "the qwen2_5 template (chosen)"
 * ```
 */
export function chatEncoderFor(
  tok: Tokenizer,
  config: AgenticConfig,
  note?: (line: string) => void,
): ChatEncoder {
  return chatEncoderWith(tok, templateSetupOf(config, note), note);
}

/** A chat template's choice and the variables every rendering gets. */
export interface TemplateSetup {
  /** The tokenizer folder's template (`native`) or Qwen2.5's. */
  choice: ChatTemplateChoice;
  /** `actor_train.data_args.chat_template_kwargs` (e.g. `{ enable_thinking: false }`). */
  variables: Readonly<Record<string, unknown>>;
}

/**
 * {@linkcode templateChoiceOf} with `actor_train.data_args.chat_template_kwargs`, the variables
 * every rendering gets (as `apply_chat_template`'s keyword arguments).
 *
 * @example
 * ```ts
 * import { loadConfig } from "../config/load_config.ts";
 * import { templateSetupOf } from "./chat_setup.ts";
 * const { config } = await loadConfig({
 *   overrides: ["actor_train.data_args.chat_template_kwargs={enable_thinking: false}"],
 * });
 * console.log(templateSetupOf(config).variables); // { enable_thinking: false }
 * ```
 */
export function templateSetupOf(
  config: AgenticConfig,
  note?: (line: string) => void,
): TemplateSetup {
  const variables = config.actor_train.data_args?.chat_template_kwargs ?? {};
  return { choice: templateChoiceOf(config, note), variables };
}

/**
 * The template `config.actor_train.data_args.template` names: `qwen2_5`, else the tokenizer's
 * own (`native`; another name, such as ROLL's `qwen3`, is told to `note`).
 *
 * @example
 * ```ts
 * import { loadConfig } from "../config/load_config.ts";
 * import { templateChoiceOf } from "./chat_setup.ts";
 * const { config } = await loadConfig({ overrides: ["actor_train.data_args.template=qwen3"] });
 * console.log(templateChoiceOf(config, console.log)); // "native" (after the note)
 * ```
 */
export function templateChoiceOf(
  config: AgenticConfig,
  note?: (line: string) => void,
): ChatTemplateChoice {
  const name = config.actor_train.data_args?.template ?? "native";
  if (name === "qwen2_5") return name;
  if (name !== "native") {
    note?.(
      `actor_train.data_args.template=${name}: prompts use the tokenizer's own template (agentrl ` +
        "knows native and qwen2_5; ROLL's agentic pipeline uses the tokenizer's template too)",
    );
  }
  return "native";
}

/**
 * {@linkcode chatEncoderFor} with the choice (and the template's variables) given directly.
 *
 * @example
 * ```ts
 * import { buildTinyModelFiles } from "../model/make_tiny_tokenizer.ts";
 * import { Tokenizer } from "../model/tokenizer.ts";
 * import { chatEncoderWith } from "./chat_setup.ts";
 * const files = await buildTinyModelFiles();
 * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
 * console.log(chatEncoderWith(tok, "native").template.origin); // "QWEN2_5_CHAT_TEMPLATE"
 * ```
 */
export function chatEncoderWith(
  tok: Tokenizer,
  setup: ChatTemplateChoice | TemplateSetup,
  note?: (line: string) => void,
): ChatEncoder {
  const { choice, variables } = typeof setup === "string"
    ? { choice: setup, variables: {} }
    : setup;
  if (choice === "qwen2_5") {
    const missing = missingChatMlTokens(tok);
    if (missing.length > 0) {
      throw new RolloutConfigError(
        `actor_train.data_args.template is qwen2_5, but the tokenizer of ${tok.source} has no ` +
          `${missing.join(" or ")} token: expected native (the folder's own template) for it`,
      );
    }
    if (tok.chatTemplate !== undefined && !rendersLikeQwen25(tok)) {
      note?.(
        `actor_train.data_args.template=qwen2_5: prompts use Qwen2.5's ChatML template, not ` +
          `the one of ${tok.chatTemplateFile ?? tok.source}`,
      );
    }
  }
  const template = ChatTemplate.forTokenizer(tok, choice);
  if (Object.keys(variables).length === 0) return new ChatEncoder(tok, template);
  // a name the template never mentions does nothing (a typo, or a variable of another template)
  const unread = Object.keys(variables).filter((k) => !mentions(template.source, k));
  if (unread.length > 0) {
    note?.(
      `actor_train.data_args.chat_template_kwargs: ${unread.join(", ")} ` +
        `${unread.length > 1 ? "are" : "is"} not read by the template of ${template.origin}`,
    );
  }
  const withThem = template.withVariables(variables);
  const problem = renderProblem(withThem);
  if (problem !== undefined && renderProblem(template) === undefined) {
    throw new RolloutConfigError(
      `actor_train.data_args.chat_template_kwargs: the template of ${template.origin} fails ` +
        `with them (${problem}): expected values it can render`,
    );
  }
  return new ChatEncoder(tok, withThem);
}

/** Whether `source` holds `name` as a whole identifier. */
function mentions(source: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[^A-Za-z0-9_])${escaped}($|[^A-Za-z0-9_])`).test(source);
}

/** Why `template` cannot render a plain prompt and exchange, or undefined when it can. */
function renderProblem(template: ChatTemplate): string | undefined {
  const user: ChatMessage = { role: "user", content: "Turn 1" };
  try {
    template.render([user], { addGenerationPrompt: true });
    template.render([user, { role: "assistant", content: "Up" }]);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/**
 * Whether the folder's template renders conversations as Qwen2.5's does (then no note): a
 * prompt without a system message, a closed exchange with a `<think>` answer, a longer prompt.
 */
function rendersLikeQwen25(tok: Tokenizer): boolean {
  const user = { role: "user" as const, content: "Turn 1" };
  const answer = { role: "assistant" as const, content: "<think>t</think><answer>Up</answer>" };
  const chats: [ChatMessage[], boolean][] = [
    [[user], true],
    [[{ role: "system", content: "Play." }, user, answer], false],
    [[{ role: "system", content: "Play." }, user, answer, { role: "user", content: "2" }], true],
  ];
  try {
    const own = ChatTemplate.forTokenizer(tok, "native");
    const chatml = new ChatTemplate(QWEN2_5_CHAT_TEMPLATE);
    return chats.every(([chat, addGenerationPrompt]) =>
      own.render(chat, { addGenerationPrompt }) === chatml.render(chat, { addGenerationPrompt })
    );
  } catch {
    return false;
  }
}
