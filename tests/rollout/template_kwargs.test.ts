// actor_train.data_args.chat_template_kwargs: variables every rendering of a run's chat template
// gets (Qwen3's enable_thinking), checked in the config and told when the template never reads
// them.
import assert from "node:assert/strict";
import { ConfigError } from "../../lib/config/errors.ts";
import { loadConfig } from "../../lib/config/load_config.ts";
import { Tokenizer } from "../../lib/model/tokenizer.ts";
import { chatEncoderFor, templateSetupOf } from "../../lib/rollout/chat_setup.ts";
import { probeTurnIncrements } from "../../lib/rollout/turn_probe.ts";
import { QWEN_TOKENIZER_CONFIG, QWEN_TOKENIZER_JSON } from "../model/_qwen_fixture.ts";

const qwen3 = Tokenizer.fromJSON({
  tokenizerJson: QWEN_TOKENIZER_JSON,
  tokenizerConfig: QWEN_TOKENIZER_CONFIG,
  source: "qwen3",
});
const KW = "actor_train.data_args.chat_template_kwargs";
const chat = [{ role: "system", content: "Play." }, { role: "user", content: "Turn 1" }];

Deno.test("chat_template_kwargs: enable_thinking=false reaches Qwen3's template in every prompt", async () => {
  const plain = await loadConfig({ configName: "agent_val_frozen_lake", overrides: ["envs=step"] });
  assert.equal(plain.config.actor_train.data_args?.chat_template_kwargs, null);
  assert.deepEqual(templateSetupOf(plain.config).variables, {});
  const thinking = qwen3.decode(chatEncoderFor(qwen3, plain.config).encode(chat));
  assert.ok(thinking.endsWith("<|im_start|>assistant\n"), thinking);

  const off = await loadConfig({
    configName: "agent_val_frozen_lake",
    overrides: ["envs=step", `${KW}={enable_thinking: false}`],
  });
  assert.deepEqual(templateSetupOf(off.config), {
    choice: "native",
    variables: { enable_thinking: false },
  });
  const notes: string[] = [];
  const enc = chatEncoderFor(qwen3, off.config, (n) => notes.push(n));
  assert.deepEqual(notes, []);
  assert.deepEqual(enc.template.variables, { enable_thinking: false });
  const prompt = qwen3.decode(enc.encode(chat));
  assert.ok(prompt.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n"), prompt);
  // step-wise episodes start each turn afresh: the probe has nothing to ask
  probeTurnIncrements(enc, off.config, off.config.train_env_manager.tags);
});

Deno.test("chat_template_kwargs: a name the template never reads is a note; Qwen2.5's ChatML ignores them", async () => {
  const { config } = await loadConfig({
    configName: "agent_val_frozen_lake",
    overrides: [`${KW}={enable_thinkng: false, enable_thinking: true}`],
  });
  const notes: string[] = [];
  chatEncoderFor(qwen3, config, (n) => notes.push(n));
  assert.deepEqual(notes, [
    `${KW}: enable_thinkng is not read by the template of qwen3/tokenizer_config.json`,
  ]);
  // a part of a name the template reads is not the name
  const part = await loadConfig({
    configName: "agent_val_frozen_lake",
    overrides: [`${KW}={thinking: false}`],
  });
  const partNotes: string[] = [];
  chatEncoderFor(qwen3, part.config, (n) => partNotes.push(n));
  assert.deepEqual(partNotes, [
    `${KW}: thinking is not read by the template of qwen3/tokenizer_config.json`,
  ]);
  const chatml = await loadConfig({
    configName: "agent_val_frozen_lake",
    overrides: ["actor_train.data_args.template=qwen2_5", `${KW}={enable_thinking: false}`],
  });
  const chatmlNotes: string[] = [];
  const enc = chatEncoderFor(qwen3, chatml.config, (n) => chatmlNotes.push(n));
  assert.match(
    chatmlNotes.join("\n"),
    /enable_thinking is not read by the template of the qwen2_5/,
  );
  assert.ok(qwen3.decode(enc.encode(chat)).endsWith("<|im_start|>assistant\n"));
});

Deno.test("chat_template_kwargs: the renderer's own names and a value that is no mapping are config errors", async () => {
  const failure = async (value: string) => {
    try {
      await loadConfig({ configName: "agent_val_frozen_lake", overrides: [`${KW}=${value}`] });
    } catch (e) {
      assert.ok(e instanceof ConfigError, String(e));
      return e.format();
    }
    assert.fail(`${KW}=${value} loaded`);
  };
  const reserved = await failure("{messages: [], eos_token: x, namespace: 1}");
  assert.match(
    reserved,
    /messages is defined by the renderer or the template language: expected another variable name/,
  );
  assert.match(reserved, new RegExp(`key: +${KW.replaceAll(".", "\\.")}\\.messages`));
  assert.match(reserved, /eos_token is defined by the renderer/);
  assert.match(reserved, /namespace is defined by the renderer or the template language/);
  const scalar = await failure("3");
  assert.match(scalar, /found: +3 \(number\)\n +expected: a mapping/);
});

Deno.test("chat_template_kwargs: values the template fails on stop the run before it starts", async () => {
  const strict = Tokenizer.fromJSON({
    tokenizerJson: QWEN_TOKENIZER_JSON,
    tokenizerConfig: {
      ...QWEN_TOKENIZER_CONFIG,
      chat_template: "{% if strict %}{{ raise_exception('strict mode has no chat') }}{% endif %}" +
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    },
    source: "strict",
  });
  const { config } = await loadConfig({
    configName: "agent_val_frozen_lake",
    overrides: [`${KW}={strict: true}`],
  });
  assert.throws(() => chatEncoderFor(strict, config), (e: Error) => {
    assert.equal(e.name, "RolloutConfigError");
    assert.match(
      e.message,
      /^actor_train\.data_args\.chat_template_kwargs: the template of strict\/tokenizer_config\.json fails with them \(.*strict mode has no chat.*\): expected values it can render$/,
    );
    return true;
  });
  // the same template without the variable renders
  const plain = await loadConfig({ configName: "agent_val_frozen_lake" });
  assert.ok(
    strict.decode(chatEncoderFor(strict, plain.config).encode(chat)).endsWith("assistant\n"),
  );
});
