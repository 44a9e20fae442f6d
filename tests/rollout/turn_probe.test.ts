// The chat template is asked before a rollout whether it can extend a conversation, with a plain
// and a <think> answer: a run must not stop at the first sampled </think>, steps in.
import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config/load_config.ts";
import { ChatEncoder, ChatTemplate } from "../../lib/model/chat_template.ts";
import { probeTurnIncrements } from "../../lib/rollout/turn_probe.ts";
import { encoder, tokenizer } from "./_setup.ts";

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
    assert.match(e.message, /step-wise episodes \(envs=step\) start each turn afresh$/);
    return true;
  });
  // step-wise episodes start every turn afresh: nothing to ask
  const step = await loadConfig({ configName: "agent_val_frozen_lake", overrides: ["envs=step"] });
  probeTurnIncrements(stripping, step.config, step.config.train_env_manager.tags);
});
