/**
 * Random and adversarial responses against every built-in environment: a step
 * never throws, and anything that does not name a legal action is an invalid
 * action with the documented effect (state unchanged, reward = format_penalty,
 * not terminated).
 */
import { equal, ok } from "node:assert/strict";
import { createEnv } from "../../envs/registry.ts";
import { Rng } from "../../envs/random.ts";
import type { Env } from "../../envs/types.ts";

const PENALTY = -0.125;

const ENVS: Array<[string, Record<string, unknown>]> = [
  ["frozen_lake", { format_penalty: PENALTY, max_steps: 1_000_000 }],
  ["sokoban", { dim_room: [6, 6], num_boxes: 1, format_penalty: PENALTY, max_steps: 1_000_000 }],
  ["countdown", { format_penalty: PENALTY, max_steps: 1_000_000 }],
];

/** Responses that are not valid actions for any of the environments. */
const ADVERSARIAL = [
  "",
  "Left",
  "<answer>",
  "</answer>",
  "<answer>North</answer>",
  "<answer><answer>Left</answer></answer>",
  "<answer>Left</answer >".replace("</answer >", "</ answer>"),
  "<ANSWER>Left</ANSWER>",
  "<answer>.*</answer>",
  "<answer>(Left|Up)</answer>",
  "<answer>^Left$</answer>",
  "<answer>[Left]</answer>",
  "<answer>\\d+</answer>",
  "<answer>Le\u0000ft</answer>",
  "<answer>Left\u200b</answer>",
  "<answer>Ｌｅｆｔ</answer>",
  "<answer>Left Right</answer>",
  "<answer>1</answer> <answer>Left</answer>".replace("1", "1 +"),
  "<answer>" + "(".repeat(10_000) + "</answer>",
  "<answer>" + "9".repeat(400) + "</answer>",
  "<answer>" + "Left".repeat(100_000) + "</answer>",
  "<answer>".repeat(100_000),
  "\ud800<answer>\udfff</answer>",
  "<|im_end|>".repeat(1000),
  "$$(){}[]*+?.^|\\",
];

function randomUnicode(rng: Rng, length: number): string {
  let s = "";
  for (let i = 0; i < length; i++) {
    const kind = rng.int(4);
    const code = kind === 0
      ? rng.int(0x80)
      : kind === 1
      ? 0x80 + rng.int(0x800)
      : kind === 2
      ? 0xd800 + rng.int(0x800) // lone surrogates
      : 0x1f300 + rng.int(0x300);
    s += String.fromCodePoint(code);
  }
  return s;
}

async function assertInvalid(env: Env, response: string, label: string) {
  const before = env.render("text");
  const r = await env.step(response);
  const m = r.info.metrics;
  equal(m.action_is_valid, false, `${label}: valid for ${JSON.stringify(response.slice(0, 80))}`);
  equal(m.action_is_effective, false, label);
  equal(r.reward, PENALTY, label);
  equal(m.format_penalty, PENALTY, label);
  equal(r.terminated, false, label);
  equal(r.observation, before, `${label}: the state changed`);
}

for (const [type, config] of ENVS) {
  Deno.test(`${type}: adversarial responses are invalid actions and never throw`, async () => {
    const env = await createEnv(type, config);
    await env.reset(11);
    for (const text of ADVERSARIAL) await assertInvalid(env, text, type);
    // Wrapped in the think pattern's tags (a bare "Left" would become a valid answer).
    for (const text of ADVERSARIAL.filter((t) => t !== "Left")) {
      await assertInvalid(env, `<think>${text}</think><answer>${text}</answer>`, type);
    }
  });

  Deno.test(`${type}: 3,000 random unicode responses are invalid and never throw`, async () => {
    const env = await createEnv(type, config);
    await env.reset(5);
    const rng = new Rng(99);
    for (let i = 0; i < 3000; i++) {
      let body = randomUnicode(rng, 1 + rng.int(40));
      // Rarely a random body spells an action (a digit is a Countdown expression): spoil it.
      if (/^[\d\s+\-*/()]*$/.test(body) || /^\s*(left|down|right|up)\s*$/i.test(body)) {
        body += "?";
      }
      const text = rng.int(2) ? body : `<answer>${body}</answer>`;
      await assertInvalid(env, text, type);
    }
  });

  Deno.test(`${type}: random valid actions and junk interleaved keep the rules`, async () => {
    const env = await createEnv(type, { ...config, max_steps: 20 });
    const rng = new Rng(7);
    const random = () => rng.float();
    for (let episode = 0; episode < 200; episode++) {
      await env.reset(episode);
      for (let t = 0; t < 20; t++) {
        const valid = rng.int(2) === 0;
        const r = await env.step(valid ? env.sampleAction!(random) : randomUnicode(rng, 8));
        equal(r.info.metrics.action_is_valid, valid);
        ok(Number.isFinite(r.reward));
        if (r.terminated || r.truncated) break;
      }
    }
  });
}
