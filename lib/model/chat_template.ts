/**
 * Chat templates: rendering a conversation to the text a chat model was
 * trained on (`tokenizer_config.json`'s Jinja `chat_template`, run by
 * `npm:@huggingface/jinja`), the Qwen2.5 template for folders that have none,
 * and {@linkcode ChatEncoder}, which turns conversations into token ids and
 * extends a multi-turn conversation token by token without re-tokenizing what
 * the model already generated.
 *
 * @module
 */
import { Template } from "npm:@huggingface/jinja@0.5.11";
import { type Tokenizer, TokenizerLoadError } from "./tokenizer.ts";

/** One chat message. */
export interface ChatMessage {
  /** `system`, `user` or `assistant` (other roles only where a template knows them). */
  role: string;
  content: string;
}

/**
 * Template variables the renderer sets itself (the conversation, the generation prompt's switch,
 * the named special tokens) and the names the template language defines (`range`, `namespace`,
 * `raise_exception`, ...: setting one makes every rendering fail).
 * {@linkcode ChatTemplate.withVariables} refuses them.
 */
export const RESERVED_TEMPLATE_VARIABLES: readonly string[] = [
  "messages",
  "add_generation_prompt",
  "bos_token",
  "eos_token",
  "pad_token",
  "unk_token",
  "namespace",
  "raise_exception",
  "range",
  "strftime_now",
  "true",
  "false",
  "none",
  "True",
  "False",
  "None",
];

/** Options of {@linkcode ChatTemplate.render}. */
export interface RenderOptions {
  /** End with the assistant's turn header (`<|im_start|>assistant\n`), default false. */
  addGenerationPrompt?: boolean;
  /** More template variables (e.g. `enable_thinking` for Qwen3). */
  variables?: Record<string, unknown>;
}

/** The default system prompt of Qwen2.5's template, used when a conversation has none. */
export const QWEN2_5_DEFAULT_SYSTEM =
  "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

/** Which chat template to use: the tokenizer folder's own, or Qwen2.5's. */
export type ChatTemplateChoice = "native" | "qwen2_5";

/**
 * ChatML's turn markers (`<|im_start|>`, `<|im_end|>`) that `tok` lacks as tokens: the
 * Qwen2.5 template needs both.
 *
 * @example
 * ```ts
 * import { missingChatMlTokens } from "./chat_template.ts";
 * console.log(missingChatMlTokens({ tokenToId: () => undefined })); // ["<|im_start|>", "<|im_end|>"]
 * ```
 */
export function missingChatMlTokens(
  tok: { tokenToId(token: string): number | undefined },
): string[] {
  return ["<|im_start|>", "<|im_end|>"].filter((t) => tok.tokenToId(t) === undefined);
}

/**
 * Qwen2.5's chat format without tools: `<|im_start|>{role}\n{content}<|im_end|>\n`
 * per message, the default system prompt ({@linkcode QWEN2_5_DEFAULT_SYSTEM})
 * when the first message is not a system message, and `<|im_start|>assistant\n`
 * as the generation prompt. Roles other than system, user and assistant raise
 * an error (tool calls are not supported). Used for model folders without a
 * `chat_template`, and written into the tiny model's `tokenizer_config.json`.
 *
 * @example
 * ```ts
 * import { ChatTemplate, QWEN2_5_CHAT_TEMPLATE } from "./chat_template.ts";
 * const t = new ChatTemplate(QWEN2_5_CHAT_TEMPLATE);
 * console.log(t.render([{ role: "user", content: "Hi" }], { addGenerationPrompt: true }));
 * // <|im_start|>system\nYou are Qwen, ...<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n
 * ```
 */
export const QWEN2_5_CHAT_TEMPLATE: string = [
  "{%- if messages | length > 0 and messages[0]['role'] == 'system' %}",
  "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}",
  "{%- else %}",
  `{{- '<|im_start|>system\\n${QWEN2_5_DEFAULT_SYSTEM}<|im_end|>\\n' }}`,
  "{%- endif %}",
  "{%- for message in messages %}",
  "{%- if message['role'] not in ['system', 'user', 'assistant'] %}",
  "{{- raise_exception('Unsupported chat role ' + message['role'] + ': expected system, user or assistant') }}",
  "{%- elif not (loop.first and message['role'] == 'system') %}",
  "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}",
  "{%- endif %}",
  "{%- endfor %}",
  "{%- if add_generation_prompt %}",
  "{{- '<|im_start|>assistant\\n' }}",
  "{%- endif %}",
].join("\n");

/** The named special tokens a template may use (`{{ eos_token }}`). */
export interface TemplateTokens {
  bos_token?: string | undefined;
  eos_token?: string | undefined;
  pad_token?: string | undefined;
  unk_token?: string | undefined;
}

/**
 * A parsed chat template. Rendering passes the same variables as Hugging
 * Face's `apply_chat_template` without tools: `messages`,
 * `add_generation_prompt` and the named special tokens.
 *
 * @example
 * ```ts
 * import { ChatTemplate } from "./chat_template.ts";
 * const t = new ChatTemplate(
 *   "{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}",
 *   { eos_token: "</s>" },
 * );
 * console.log(t.render([{ role: "user", content: "hi" }])); // "[user] hi</s>"
 * ```
 */
export class ChatTemplate {
  /** The Jinja source. */
  readonly source: string;
  /** Where the template came from, for error messages. */
  readonly origin: string;
  readonly #template: Template;
  readonly #tokens: TemplateTokens;
  /**
   * `date_string` for templates that would print today's date through `strftime_now` when it is
   * unset (Llama 3.2's "Today Date"): the day this template was made, so that a conversation
   * renders the same on both sides of midnight (a later day would rewrite its first turn, and
   * extending it would fail). Templates without `strftime_now` are not given one, so that their
   * own default stays (Llama 3.1's "26 Jul 2024"), as transformers renders them.
   */
  #dateString: string | undefined;
  /** Variables every rendering gets (see {@linkcode ChatTemplate.withVariables}). */
  #variables: Readonly<Record<string, unknown>> = {};

  /** Parses `source`; a syntax error names `origin`. */
  constructor(source: string, tokens: TemplateTokens = {}, origin = "the chat template") {
    if (typeof source !== "string") {
      throw new TypeError(`Chat template from ${origin} is a ${typeof source}: expected a string`);
    }
    this.source = source;
    this.origin = origin;
    this.#tokens = { ...tokens };
    this.#dateString = source.includes("strftime_now") ? formatDay(new Date()) : undefined;
    try {
      this.#template = new Template(source);
    } catch (e) {
      throw new SyntaxError(
        `Chat template from ${origin} does not parse: ${e instanceof Error ? e.message : e}`,
        { cause: e },
      );
    }
  }

  /**
   * The template of a tokenizer's folder (`chat_template` of
   * `tokenizer_config.json` or `chat_template.jinja`), else
   * {@linkcode QWEN2_5_CHAT_TEMPLATE}; the named special tokens come from the
   * tokenizer. `choice` `"qwen2_5"` takes {@linkcode QWEN2_5_CHAT_TEMPLATE} whatever the
   * folder holds (ROLL's `data_args.template`).
   *
   * @example
   * ```ts
   * import { ChatTemplate, QWEN2_5_CHAT_TEMPLATE } from "./chat_template.ts";
   * import { Tokenizer } from "./tokenizer.ts";
   * const tok = Tokenizer.fromJSON({
   *   tokenizerJson: { model: { type: "BPE", vocab: { a: 0 }, merges: [] } },
   * });
   * console.log(ChatTemplate.forTokenizer(tok).source === QWEN2_5_CHAT_TEMPLATE); // true
   * ```
   */
  static forTokenizer(tokenizer: Tokenizer, choice: ChatTemplateChoice = "native"): ChatTemplate {
    const tokens: TemplateTokens = {
      bos_token: tokenizer.bosToken,
      eos_token: tokenizer.eosToken,
      pad_token: tokenizer.padToken,
      unk_token: tokenizer.unkToken,
    };
    if (choice === "native" && tokenizer.chatTemplateProblem !== undefined) {
      throw new TokenizerLoadError(
        `${tokenizer.source}/tokenizer_config.json`,
        `${tokenizer.chatTemplateProblem} (data_args.template: qwen2_5 uses ours instead)`,
      );
    }
    if (tokenizer.chatTemplate !== undefined && choice === "native") {
      return new ChatTemplate(
        tokenizer.chatTemplate,
        tokens,
        tokenizer.chatTemplateFile ?? tokenizer.source,
      );
    }
    const origin = choice === "native" ? "QWEN2_5_CHAT_TEMPLATE" : "the qwen2_5 template (chosen)";
    return new ChatTemplate(QWEN2_5_CHAT_TEMPLATE, tokens, origin);
  }

  /** The variables every rendering of this template gets (empty unless set). */
  get variables(): Readonly<Record<string, unknown>> {
    return this.#variables;
  }

  /**
   * This template with `variables` passed to every rendering (as `apply_chat_template`'s extra
   * keyword arguments: `enable_thinking` for Qwen3); a rendering's own
   * {@linkcode RenderOptions.variables} win over them. The names the renderer sets itself
   * ({@linkcode RESERVED_TEMPLATE_VARIABLES}) are a TypeError.
   *
   * @example
   * ```ts
   * import { ChatTemplate } from "./chat_template.ts";
   * const t = new ChatTemplate("{% if enable_thinking %}think{% else %}answer{% endif %}")
   *   .withVariables({ enable_thinking: false });
   * console.log(t.render([])); // "answer"
   * ```
   */
  withVariables(variables: Readonly<Record<string, unknown>>): ChatTemplate {
    const reserved = Object.keys(variables).filter((k) => RESERVED_TEMPLATE_VARIABLES.includes(k));
    if (reserved.length > 0) {
      throw new TypeError(
        `Chat template variables ${reserved.join(", ")}: the renderer or the template language ` +
          `defines ${reserved.length > 1 ? "them" : "it"} (expected other names)`,
      );
    }
    const copy = new ChatTemplate(this.source, this.#tokens, this.origin);
    copy.#dateString = this.#dateString;
    copy.#variables = { ...this.#variables, ...variables };
    return copy;
  }

  /**
   * Renders a conversation. A message that is not `{ role: string, content:
   * string }` is a TypeError; an error the template raises names its origin.
   *
   * @example
   * ```ts
   * import { ChatTemplate, QWEN2_5_CHAT_TEMPLATE } from "./chat_template.ts";
   * const t = new ChatTemplate(QWEN2_5_CHAT_TEMPLATE);
   * const text = t.render([
   *   { role: "system", content: "Play." },
   *   { role: "user", content: "Turn 1" },
   * ], { addGenerationPrompt: true });
   * console.log(JSON.stringify(text));
   * // "<|im_start|>system\nPlay.<|im_end|>\n<|im_start|>user\nTurn 1<|im_end|>\n<|im_start|>assistant\n"
   * ```
   */
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): string {
    if (!Array.isArray(messages)) {
      throw new TypeError(`Chat messages are ${typeof messages}: expected an array`);
    }
    const plain = messages.map((m, i) => {
      if (typeof m !== "object" || m === null || typeof m.role !== "string") {
        throw new TypeError(`Chat message ${i} has no string role: expected { role, content }`);
      }
      if (typeof m.content !== "string") {
        throw new TypeError(
          `Chat message ${i} (${m.role}) has content of type ${typeof m
            .content}: expected a string`,
        );
      }
      return { role: m.role, content: m.content };
    });
    const context: Record<string, unknown> = {
      ...(this.#dateString === undefined ? {} : { date_string: this.#dateString }),
      ...this.#variables,
      ...(options.variables ?? {}),
      messages: plain,
      add_generation_prompt: options.addGenerationPrompt ?? false,
    };
    for (const [key, value] of Object.entries(this.#tokens)) {
      if (value !== undefined) context[key] = value;
    }
    try {
      return this.#template.render(context);
    } catch (e) {
      throw new ChatTemplateRenderError(
        `Chat template from ${this.origin} failed to render: ${e instanceof Error ? e.message : e}`,
        { cause: e },
      );
    }
  }
}

/** Options of {@linkcode ChatEncoder.encode}. */
export interface ChatEncodeOptions {
  /** End with the generation prompt (default true: a prompt for the model). */
  addGenerationPrompt?: boolean;
}

/**
 * The chat template raised an error (or hit an unsupported construct) while rendering a
 * conversation: it names the template's file.
 *
 * @example
 * ```ts
 * import { ChatTemplateRenderError } from "./chat_template.ts";
 * console.log(new ChatTemplateRenderError("x").name); // "ChatTemplateRenderError"
 * ```
 */
export class ChatTemplateRenderError extends Error {
  /** An error with a sentence-case message. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ChatTemplateRenderError";
  }
}

/**
 * A multi-turn conversation cannot be extended token by token with this
 * template: it rewrites earlier turns, or a turn boundary does not fall on an
 * added token (so tokenizing the new turn alone could differ from tokenizing
 * the whole conversation).
 *
 * @example
 * ```ts
 * import { ChatTemplateIncrementError } from "./chat_template.ts";
 * console.log(new ChatTemplateIncrementError("x").name); // "ChatTemplateIncrementError"
 * ```
 */
export class ChatTemplateIncrementError extends Error {
  /** An error with a sentence-case message. */
  constructor(message: string) {
    super(message);
    this.name = "ChatTemplateIncrementError";
  }
}

/**
 * Token ids of chat conversations for one tokenizer and template: the first
 * prompt ({@linkcode ChatEncoder.encode}, as Hugging Face's
 * `apply_chat_template(..., tokenize=True)`), and the ids to append after the
 * model's response for the next turn ({@linkcode ChatEncoder.nextTurnIds}).
 *
 * @example
 * ```ts
 * import { ChatEncoder } from "./chat_template.ts";
 * import { Tokenizer } from "./tokenizer.ts";
 * import { buildTinyModelFiles } from "./make_tiny_tokenizer.ts";
 * const files = await buildTinyModelFiles();
 * const tok = Tokenizer.fromJSON({
 *   tokenizerJson: JSON.parse(files["tokenizer.json"]),
 *   tokenizerConfig: JSON.parse(files["tokenizer_config.json"]),
 * });
 * const chat = new ChatEncoder(tok);
 * const messages = [
 *   { role: "system", content: "Play FrozenLake." },
 *   { role: "user", content: "State:\n_P_G" },
 * ];
 * const ids = chat.encode(messages); // ends with <|im_start|>assistant\n
 * // The model answers; its tokens (ending with <|im_end|>) are kept as sampled.
 * const response = [...tok.encode("<answer>Right</answer>"), tok.requireTokenId("<|im_end|>")];
 * ids.push(...response);
 * messages.push(chat.assistantMessage(response));
 * ids.push(...chat.nextTurnIds(messages, ids, { role: "user", content: "State:\n__PG" }));
 * messages.push({ role: "user", content: "State:\n__PG" });
 * console.log(ids.join() === chat.encode(messages).join()); // true
 * ```
 */
export class ChatEncoder {
  readonly tokenizer: Tokenizer;
  readonly template: ChatTemplate;

  /** Uses `template`, or the tokenizer's own (see {@linkcode ChatTemplate.forTokenizer}). */
  constructor(tokenizer: Tokenizer, template: ChatTemplate = ChatTemplate.forTokenizer(tokenizer)) {
    this.tokenizer = tokenizer;
    this.template = template;
  }

  /**
   * The ids of a whole rendered conversation (no post-processor tokens, as
   * `apply_chat_template` tokenizes).
   *
   * @example
   * ```ts
   * import { ChatEncoder } from "./chat_template.ts";
   * import { Tokenizer } from "./tokenizer.ts";
   * import { buildTinyModelFiles } from "./make_tiny_tokenizer.ts";
   * const files = await buildTinyModelFiles();
   * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
   * const ids = new ChatEncoder(tok).encode([{ role: "user", content: "Hi" }]);
   * console.log(tok.decode(ids.slice(-3))); // "<|im_start|>assistant\n"
   * ```
   */
  encode(messages: readonly ChatMessage[], options: ChatEncodeOptions = {}): number[] {
    const text = this.template.render(messages, {
      addGenerationPrompt: options.addGenerationPrompt ?? true,
    });
    return this.tokenizer.encode(text, { addSpecialTokens: false });
  }

  /**
   * The added token the template closes an assistant turn with (`<|im_end|>`, Llama 3's
   * `<|eot_id|>`), or undefined when the text after a reply does not start with one (or the
   * template cannot render a plain user/assistant exchange).
   *
   * @example
   * ```ts
   * import { ChatEncoder } from "./chat_template.ts";
   * import { Tokenizer } from "./tokenizer.ts";
   * import { buildTinyModelFiles } from "./make_tiny_tokenizer.ts";
   * const files = await buildTinyModelFiles();
   * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
   * const id = new ChatEncoder(tok).turnEndTokenId();
   * console.log(id === tok.tokenToId("<|im_end|>")); // true
   * ```
   */
  turnEndTokenId(): number | undefined {
    const user: ChatMessage[] = [{ role: "user", content: "Hi" }];
    const reply = "Hello";
    try {
      const opened = this.template.render(user, { addGenerationPrompt: true });
      const closed = this.template.render([...user, { role: "assistant", content: reply }]);
      if (!closed.startsWith(opened + reply)) return undefined;
      return this.tokenizer.addedTokenAt(closed.slice(opened.length + reply.length))?.id;
    } catch {
      return undefined; // (a template that needs more than a plain exchange)
    }
  }

  /**
   * The assistant message of a response's ids: the decoded text without
   * special tokens (so without the closing `<|im_end|>`).
   *
   * @example
   * ```ts
   * import { ChatEncoder } from "./chat_template.ts";
   * import { Tokenizer } from "./tokenizer.ts";
   * import { buildTinyModelFiles } from "./make_tiny_tokenizer.ts";
   * const files = await buildTinyModelFiles();
   * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
   * const ids = [...tok.encode("<answer>Up</answer>"), tok.requireTokenId("<|im_end|>")];
   * console.log(new ChatEncoder(tok).assistantMessage(ids)); // { role: "assistant", content: "<answer>Up</answer>" }
   * ```
   */
  assistantMessage(responseIds: ArrayLike<number>): ChatMessage {
    return {
      role: "assistant",
      content: this.tokenizer.decode(responseIds, { skipSpecialTokens: true }),
    };
  }

  /**
   * The ids to append to a conversation that ends with the model's response,
   * so that it continues with `next` (a user turn, usually) and, by default, a
   * new generation prompt.
   *
   * `messages` is the conversation so far, its last message the assistant's
   * response (see {@linkcode ChatEncoder.assistantMessage}); `idsSoFar` its
   * ids: the prompt ids, then the response ids exactly as sampled. Those ids are
   * never re-tokenized. When the response ends with the token that closes an
   * assistant turn (`<|im_end|>`), the rest of the template's closing (`\n`)
   * follows; when it was cut short (token budget), the whole closing is
   * appended. When `idsSoFar` is the tokenization of the rendered conversation,
   * `idsSoFar + nextTurnIds(...)` equals {@linkcode ChatEncoder.encode} of the
   * extended conversation.
   *
   * A template that trims the reply (Llama 3's `| trim`) is followed: the
   * sampled whitespace stays in the ids. A template that re-renders earlier
   * turns when one is added (Qwen3 moves its `<think>` block), closes an earlier
   * turn with another token than the last one, or whose turn boundary is not an
   * added token, is a {@linkcode ChatTemplateIncrementError}.
   *
   * @example
   * ```ts
   * import { ChatEncoder } from "./chat_template.ts";
   * import { Tokenizer } from "./tokenizer.ts";
   * import { buildTinyModelFiles } from "./make_tiny_tokenizer.ts";
   * const files = await buildTinyModelFiles();
   * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
   * const chat = new ChatEncoder(tok);
   * const messages = [{ role: "user", content: "Turn 1" }];
   * const ids = chat.encode(messages);
   * const response = [...tok.encode("<answer>Left</answer>"), tok.requireTokenId("<|im_end|>")];
   * ids.push(...response);
   * messages.push(chat.assistantMessage(response));
   * const more = chat.nextTurnIds(messages, ids, { role: "user", content: "Turn 2" });
   * console.log(JSON.stringify(tok.decode(more)));
   * // "\n<|im_start|>user\nTurn 2<|im_end|>\n<|im_start|>assistant\n"
   * ```
   */
  nextTurnIds(
    messages: readonly ChatMessage[],
    idsSoFar: ArrayLike<number>,
    next: ChatMessage | readonly ChatMessage[],
    options: ChatEncodeOptions = {},
  ): number[] {
    const last = messages[messages.length - 1];
    if (!last || last.role !== "assistant") {
      throw new TypeError(
        `The conversation ends with ${
          last ? `a ${last.role} message` : "no message"
        }: expected the assistant's response last (use encode() for a first prompt)`,
      );
    }
    const added = Array.isArray(next) ? next as readonly ChatMessage[] : [next as ChatMessage];
    if (added.length === 0) {
      throw new TypeError("No message to add: expected at least one");
    }
    const opened = this.template.render(messages.slice(0, -1), { addGenerationPrompt: true });
    const closed = this.template.render(messages);
    const full = this.template.render([...messages, ...added], {
      addGenerationPrompt: options.addGenerationPrompt ?? true,
    });
    const origin = this.template.origin;
    // The response as the template shows it: verbatim, or trimmed (Llama 3's `| trim`); the
    // sampled ids stay as they were either way.
    const shown = [last.content, last.content.trim()].find((c) => closed.startsWith(opened + c));
    if (shown === undefined) {
      throw new ChatTemplateIncrementError(
        `Chat template from ${origin} does not render the assistant's response verbatim after ` +
          "the generation prompt, so the sampled tokens cannot be kept as they are: expected a " +
          "template that only appends to the conversation (Qwen2.5-style)",
      );
    }
    // What matters is that the extended conversation starts with the prompt and the response;
    // the closed conversation may differ after the response (Llama 3's first template adds a
    // generation prompt whether asked or not).
    const kept = opened.length + shown.length;
    const rewritten = () =>
      new ChatTemplateIncrementError(
        `Chat template from ${origin} renders earlier turns differently once a turn is added, ` +
          "so the conversation cannot be extended token by token: expected a template that " +
          "only appends to the conversation (Qwen2.5-style)",
      );
    if (!full.startsWith(opened + shown)) throw rewritten();
    let text = full.slice(kept);
    const n = idsSoFar.length;
    const lastToken = n > 0 ? this.tokenizer.addedToken(idsSoFar[n - 1]!) : undefined;
    // A response that ended with the token the template closes the turn with keeps it; the
    // extended conversation must close that turn with the same token.
    if (lastToken && closed.startsWith(lastToken.content, kept)) {
      if (!text.startsWith(lastToken.content)) throw rewritten();
      text = text.slice(lastToken.content.length);
    }
    if (text === "") return [];
    // Tokenizers split the text at added tokens first, so text after an added token
    // tokenizes the same alone as in the whole conversation (unless the token eats spaces).
    const first = this.tokenizer.addedTokenAt(text);
    const safe = (lastToken !== undefined && !lastToken.rstrip) ||
      (first !== undefined && !first.lstrip);
    if (!safe) {
      throw new ChatTemplateIncrementError(
        `Chat template from ${origin} continues the conversation with ${
          JSON.stringify(text.slice(0, 20))
        }, which neither follows nor starts with an added token: tokenizing it alone could ` +
          "differ from tokenizing the whole conversation",
      );
    }
    return this.tokenizer.encode(text, { addSpecialTokens: false });
  }

  /**
   * The ids a turn adds to a conversation: {@linkcode ChatEncoder.encode} of
   * `next` when `messages` is empty (the first prompt), else
   * {@linkcode ChatEncoder.nextTurnIds}.
   *
   * @example
   * ```ts
   * import { ChatEncoder } from "./chat_template.ts";
   * import { Tokenizer } from "./tokenizer.ts";
   * import { buildTinyModelFiles } from "./make_tiny_tokenizer.ts";
   * const files = await buildTinyModelFiles();
   * const tok = Tokenizer.fromJSON({ tokenizerJson: JSON.parse(files["tokenizer.json"]) });
   * const chat = new ChatEncoder(tok);
   * const next = [{ role: "user" as const, content: "Turn 1" }];
   * console.log(chat.turnIds([], [], next).length === chat.encode(next).length); // true
   * ```
   */
  turnIds(
    messages: readonly ChatMessage[],
    idsSoFar: ArrayLike<number>,
    next: readonly ChatMessage[],
  ): number[] {
    return messages.length === 0 ? this.encode(next) : this.nextTurnIds(messages, idsSoFar, next);
  }
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** A date as strftime's "%d %b %Y" (what Llama 3.1's template asks strftime_now for). */
function formatDay(d: Date): string {
  return `${String(d.getDate()).padStart(2, "0")} ${MONTHS[d.getMonth()]} ${d.getFullYear()}`;
}
