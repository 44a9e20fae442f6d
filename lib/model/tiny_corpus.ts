/**
 * The fixed training corpus of the tiny default model's tokenizer: the chat
 * template, the shipped agent templates (`configs/envs/traj.yaml` and
 * `step.yaml`) and seeded FrozenLake and Sokoban episodes rendered as the
 * trajectory-wise and step-wise env managers prompt a model (observations,
 * `<answer>Left</answer>` responses, think variants, histories). Everything is
 * seeded, so the corpus, and the tokenizer trained on it, is the same on every
 * run of the same checkout.
 *
 * @module
 */
import { parse as parseYaml } from "npm:yaml@2.9.1";
import { createEnv } from "../../envs/registry.ts";
import { Rng } from "../../envs/random.ts";
import type { Env } from "../../envs/types.ts";
import { type ChatMessage, ChatTemplate, QWEN2_5_CHAT_TEMPLATE } from "./chat_template.ts";
import { fillTemplate } from "../rollout/prompt.ts";

/** The agent template files read, relative to the repository's `configs/`. */
export const TINY_CORPUS_TEMPLATE_FILES: readonly string[] = ["envs/traj.yaml", "envs/step.yaml"];

/** One environment of the corpus (mirrors `configs/library/env_definitions.yaml`). */
interface CorpusEnv {
  type: string;
  config: Record<string, unknown>;
  episodes: number;
  think?: boolean;
}

const ANSWER = "<answer>(.*?)</answer>";
const THINK = "<think>(.*?)</think>\\s*<answer>(.*?)</answer>";

const CORPUS_ENVS: readonly CorpusEnv[] = [
  { type: "frozen_lake", config: { size: 4, p: 0.8, is_slippery: false }, episodes: 48 },
  { type: "frozen_lake", config: { size: 4, p: 0.8, is_slippery: true }, episodes: 8 },
  {
    type: "frozen_lake",
    config: { size: 4, p: 0.8, is_slippery: false, action_pattern: THINK },
    episodes: 16,
    think: true,
  },
  { type: "sokoban", config: { dim_room: [6, 6], num_boxes: 1 }, episodes: 32 },
  { type: "sokoban", config: { dim_room: [8, 8], num_boxes: 2, search_depth: 10 }, episodes: 8 },
  {
    type: "sokoban",
    config: {
      dim_room: [6, 6],
      num_boxes: 1,
      search_depth: 30,
      grid_lookup: { 0: "W", 1: ".", 2: "G", 3: "C", 4: "B", 5: "A", 6: "@" },
      grid_vocab: {
        W: "wall",
        ".": "empty",
        G: "target",
        C: "box on target",
        B: "box",
        A: "player",
        "@": "player on target",
      },
    },
    episodes: 8,
  },
  // WebShop's pages: words enough for the vocabulary once grid cells stay single tokens
  { type: "webshop", config: {}, episodes: 6 },
];

/** Short reasoning for think-style responses; `{a}` is the action. */
const REASONS: readonly string[] = [
  "I choose the next move.",
  "The goal is closer if I move {a}.",
  "Moving {a} avoids the hole.",
  "I should move {a} to get nearer to the goal.",
  "The box must go to the target, so I move {a}.",
  "Going {a} is safe.",
];

/** Agent templates as the shipped configs write them. */
interface AgentTemplates {
  system: string;
  template: string;
  stepWise: boolean;
}

const MAX_STEPS = 10;
const MAX_TOKENS_PER_STEP = 128;
const HISTORY_LENGTH = 5;

/**
 * The corpus texts (chat-rendered conversations, special tokens included), in
 * a fixed order. `configDir` is the `configs/` folder (default: this
 * checkout's).
 *
 * @example
 * ```ts
 * import { tinyTokenizerCorpus } from "./tiny_corpus.ts";
 * const texts = await tinyTokenizerCorpus();
 * console.log(texts.some((t) => t.includes("<answer>Left</answer>"))); // true
 * ```
 */
export async function tinyTokenizerCorpus(
  configDir: URL = new URL("../../configs/", import.meta.url),
): Promise<string[]> {
  const chat = new ChatTemplate(QWEN2_5_CHAT_TEMPLATE);
  const texts: string[] = [
    chat.render([{ role: "user", content: "Hello" }], { addGenerationPrompt: true }),
  ];
  const templates: AgentTemplates[] = [];
  for (const file of TINY_CORPUS_TEMPLATE_FILES) {
    const url = new URL(file, configDir);
    const doc = parseYaml(await readText(url)) as Record<string, unknown> | null;
    const system = doc?.agent_system_template;
    const template = doc?.agent_template;
    if (typeof system !== "string" || typeof template !== "string") {
      throw new Error(
        `Config ${url.href} has no agent_system_template and agent_template strings: ` +
          "expected the shipped agent templates",
      );
    }
    templates.push({ system, template, stepWise: doc?.env_manager_cls === "step" });
  }
  for (const [index, spec] of CORPUS_ENVS.entries()) {
    const pattern = spec.think ? THINK : ANSWER;
    const env = await createEnv(spec.type, {
      ...spec.config,
      max_steps: MAX_STEPS,
      action_pattern: pattern,
    });
    const rng = new Rng(index, 0x70c);
    for (let episode = 0; episode < spec.episodes; episode++) {
      for (const t of templates) {
        texts.push(...await playEpisode(env, t, chat, rng, episode, spec.think ?? false));
      }
    }
    env.close();
  }
  return texts;
}

/** One episode, rendered as the trajectory-wise (one text) or step-wise (one per turn) manager. */
async function playEpisode(
  env: Env,
  t: AgentTemplates,
  chat: ChatTemplate,
  rng: Rng,
  seed: number,
  think: boolean,
): Promise<string[]> {
  let observation = (await env.reset(seed)).observation;
  const messages: ChatMessage[] = [{ role: "system", content: t.system }];
  const prompts: string[] = [];
  const history: string[] = [];
  for (let turn = 1; turn <= MAX_STEPS; turn++) {
    const recent = history.slice(Math.max(0, history.length - HISTORY_LENGTH));
    const user = fillTemplate(t.template, {
      turn_idx: turn,
      observation,
      actions_left: MAX_STEPS - turn + 1,
      max_response_length: MAX_TOKENS_PER_STEP,
      env_instruction: env.instruction,
      step_count: turn - 1,
      history_length: recent.length,
      history: recent.join(", "),
      current_step: turn,
      current_observation: observation,
    });
    if (t.stepWise) {
      prompts.push(chat.render([{ role: "system", content: t.system }, {
        role: "user",
        content: user,
      }], { addGenerationPrompt: true }));
    } else {
      messages.push({ role: "user", content: turn === 1 ? `${env.instruction}\n${user}` : user });
    }
    const response = respond(env, rng, think);
    const step = await env.step(response);
    if (!t.stepWise) messages.push({ role: "assistant", content: response });
    const said = typeof step.info.action_content === "string" ? step.info.action_content : response;
    const valid = step.info.metrics.action_is_valid;
    history.push(
      `(step: ${turn}, observation: ${observation}, action: ${said}` +
        `${valid ? "" : " (not a valid action)"}, reward: ${fmt(step.reward)})`,
    );
    observation = step.observation;
    if (step.terminated || step.truncated) break;
  }
  if (!t.stepWise) prompts.push(chat.render(messages));
  return prompts;
}

/** Mostly the oracle's action, sometimes a random one, rarely a malformed reply. */
function respond(env: Env, rng: Rng, think: boolean): string {
  const u = rng.float();
  let response = u < 0.75 ? env.oracleAction?.() : undefined;
  response ??= env.sampleAction!(() => rng.float());
  if (u > 0.95) {
    const name = /<answer>(.*?)<\/answer>/.exec(response)?.[1] ?? "Left";
    return rng.float() < 0.5 ? name : `I move ${name}.`;
  }
  if (think) {
    const name = /<answer>(.*?)<\/answer>/.exec(response)?.[1] ?? "Left";
    const reason = REASONS[Math.floor(rng.float() * REASONS.length)]!.replaceAll("{a}", name);
    return `<think>${reason}</think>\n<answer>${name}</answer>`;
  }
  return response;
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(4).replace(/0+$/, "");
}

async function readText(url: URL): Promise<string> {
  if (url.protocol === "file:") return await Deno.readTextFile(url);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`Cannot fetch ${url.href}: HTTP ${response.status}`);
  return await response.text();
}
