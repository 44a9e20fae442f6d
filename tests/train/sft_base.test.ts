/**
 * The FrozenLake base model's recipe at a tiny scale: the conversations are
 * token for token what the rollout builds (no re-tokenization drift), the loss
 * mask covers exactly the responses (and the observation mask the later
 * prompts), batches weigh the actions equally, the
 * SFT loss goes down, and the manifest rebuilds only a changed recipe.
 */
import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import {
  actionDecisionOffset,
  balancedBatch,
  buildFrozenLakeBaseModel,
  defaultFrozenLakeEntry,
  defaultFrozenLakeStepEntry,
  ensureFrozenLakeBaseModel,
  FROZEN_LAKE_BASE_MANIFEST,
  frozenLakeConversations,
  tinyTokenizer,
} from "../../lib/model/make_base_model.ts";
import { buildTinyModelFiles } from "../../lib/model/make_tiny_tokenizer.ts";
import { ChatEncoder } from "../../lib/model/chat_template.ts";
import { packSftBatch } from "../../lib/train/sft.ts";
import { stepHistoryLine, stepTurnMessages } from "../../lib/rollout/prompt.ts";
import { createFrozenLakeEnv } from "../../envs/frozen_lake/mod.ts";

const files = await buildTinyModelFiles();
const tokenizer = tinyTokenizer(files);
const entry = await defaultFrozenLakeEntry();
const stepEntry = await defaultFrozenLakeStepEntry();
const conversations = frozenLakeConversations(tokenizer, entry, {
  episodes: 24,
  seedStart: 10_000_000,
  dataSeed: 0,
});

/** The runs of consecutive masked token positions, as [start, end). */
function spans(mask: Uint8Array): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] && (i === 0 || !mask[i - 1])) out.push([i, i]);
    if (mask[i]) out[out.length - 1]![1] = i + 1;
  }
  return out;
}

Deno.test("conversation ids are the rollout's: each turn's prompt is encode() of the messages so far", () => {
  const chat = new ChatEncoder(tokenizer);
  for (const c of conversations) {
    const responses = spans(c.lossMask);
    let turn = 0;
    for (const [start] of responses) {
      // The messages before this response: system + user, then (assistant, user) per turn.
      const before = c.messages.slice(0, 2 + 2 * turn);
      equal(before.at(-1)!.role, "user");
      deepStrictEqual(c.tokens.slice(0, start), chat.encode(before));
      turn++;
    }
    // The whole conversation: encode() of all messages, up to the template's final "\n".
    const whole = chat.encode(c.messages, { addGenerationPrompt: false });
    deepStrictEqual(whole.slice(0, c.tokens.length), c.tokens);
    equal(tokenizer.decode(whole.slice(c.tokens.length)), "\n");
  }
});

Deno.test("step-wise pieces are the step manager's prompts with the conversation's responses", () => {
  const chat = new ChatEncoder(tokenizer);
  const pieces = frozenLakeConversations(tokenizer, entry, {
    episodes: 8,
    seedStart: 10_000_000,
    dataSeed: 0,
  }, stepEntry);
  const offset = actionDecisionOffset(tokenizer, entry);
  for (const [i, c] of pieces.entries()) {
    // the same episode as without the step-wise entry
    deepStrictEqual(c.tokens, conversations[i]!.tokens);
    equal(c.steps!.length, c.actions.length);
    const history: string[] = [];
    const env = createFrozenLakeEnv(stepEntry.env_config ?? {});
    let observation = env.reset(c.seed).observation;
    c.steps!.forEach((p, turn) => {
      const messages = stepTurnMessages(stepEntry, env.instruction, observation, turn, history);
      const prompt = chat.encode(messages);
      deepStrictEqual(p.tokens.slice(0, prompt.length), prompt);
      deepStrictEqual(p.actions, [c.actions[turn]]);
      equal(p.decisions[0], prompt.length + offset);
      deepStrictEqual(spans(p.lossMask), [[prompt.length, p.tokens.length]]);
      const r = env.step(c.actions[turn]!);
      history.push(
        stepHistoryLine(turn + 1, observation, c.actions[turn]!, true, r.reward),
      );
      observation = r.observation;
    });
  }
  // the batch weighs every action equally over conversations and pieces together
  const batch = balancedBatch(pieces);
  equal(batch.length, pieces.length + pieces.reduce((a, c) => a + c.steps!.length, 0));
});

Deno.test("the loss mask covers exactly the responses: action text + <|im_end|>", () => {
  const imEnd = tokenizer.requireTokenId("<|im_end|>");
  ok(tokenizer.eosTokenIds.includes(imEnd), "<|im_end|> must stop generation");
  const offset = actionDecisionOffset(tokenizer, entry);
  let turns = 0, successes = 0;
  for (const c of conversations) {
    equal(c.lossMask.length, c.tokens.length);
    const responses = spans(c.lossMask);
    equal(responses.length, c.actions.length);
    ok(c.actions.length >= 1 && c.actions.length <= entry.max_steps);
    const assistant = c.messages.filter((m) => m.role === "assistant").map((m) => m.content);
    deepStrictEqual(assistant, c.actions);
    responses.forEach(([start, end], j) => {
      const ids = c.tokens.slice(start, end);
      equal(tokenizer.decode(ids), `${c.actions[j]}<|im_end|>`);
      deepStrictEqual(ids, [...tokenizer.encode(c.actions[j]!), imEnd]);
      ok(/^<answer>(Left|Down|Right|Up)<\/answer>$/.test(c.actions[j]!));
      equal(c.decisions[j], start + offset);
    });
    turns += c.actions.length;
    if (c.success) successes++;
  }
  // The choice token names the action: ">Left" with the tiny tokenizer.
  const c0 = conversations[0]!;
  ok(tokenizer.decode([c0.tokens[c0.decisions[0]!]!]).endsWith(c0.actions[0]!.slice(8, -9)));
  ok(turns > conversations.length && successes < conversations.length);
});

Deno.test("the observation mask covers exactly the later turns' prompts (the next states)", () => {
  for (const c of conversations) {
    equal(c.observationMask.length, c.tokens.length);
    const responses = spans(c.lossMask);
    const observations = spans(c.observationMask);
    // one prompt after each response but the last
    equal(observations.length, responses.length - 1);
    observations.forEach(([start, end], j) => {
      equal(start, responses[j]![1], "starts right after a response");
      equal(end, responses[j + 1]![0], "ends where the next response starts");
      ok(tokenizer.decode(c.tokens.slice(start, end)).includes(`Turn ${j + 2}:`));
    });
    for (let t = 0; t < c.tokens.length; t++) ok(!(c.lossMask[t] && c.observationMask[t]));
  }
  // weighted into the batch's loss mask, responses untouched
  const [ex] = balancedBatch(conversations.slice(0, 1), 0.25);
  const c = conversations[0]!;
  for (let t = 0; t < c.tokens.length; t++) {
    if (c.observationMask[t]) equal(ex!.lossMask[t], 0.25);
    else if (!c.decisions.includes(t)) equal(ex!.lossMask[t], c.lossMask[t]);
  }
});

Deno.test("actions are drawn stratified and batches weigh them equally", () => {
  const counts = new Map<string, number>();
  for (const c of conversations) for (const a of c.actions) counts.set(a, (counts.get(a) ?? 0) + 1);
  const n = [...counts.values()];
  equal(n.length, 4);
  ok(Math.max(...n) - Math.min(...n) <= 3 * entry.max_steps);
  const batch = balancedBatch(conversations);
  const weight = new Map<string, number>();
  batch.forEach((ex, i) => {
    const c = conversations[i]!;
    c.decisions.forEach((t, j) => {
      const a = c.actions[j]!;
      weight.set(a, (weight.get(a) ?? 0) + Number(ex.lossMask[t]));
    });
    // Only the choice tokens are reweighted.
    for (let t = 0; t < c.tokens.length; t++) {
      if (!c.decisions.includes(t)) equal(ex.lossMask[t], c.lossMask[t]);
    }
  });
  const total = n.reduce((a, b) => a + b, 0);
  for (const w of weight.values()) ok(Math.abs(w - total / 4) < 1e-3, `${w} vs ${total / 4}`);
});

Deno.test("packSftBatch trains a token from the row before it", () => {
  const b = packSftBatch([
    { tokens: [5, 6, 7], lossMask: [0, 1, 0.5] },
    { tokens: [8, 9], lossMask: [0, 1] },
  ]);
  deepStrictEqual([...b.targets], [6, 7, 0, 9, 0]);
  deepStrictEqual([...b.weights], [1, 0.5, 0, 1, 0]);
  deepStrictEqual([...b.positions], [0, 1, 2, 0, 1]);
  deepStrictEqual([...b.cuSeqlens], [0, 3, 5]);
  equal(b.count, 2.5);
  throws(() => packSftBatch([{ tokens: [1, 2], lossMask: [0] }]), RangeError);
});

Deno.test("the SFT loss goes down on the recipe at a tiny scale", async () => {
  const r = await buildFrozenLakeBaseModel("unused", {
    episodes: 16,
    steps: 8,
    batchEpisodes: 4,
    warmupSteps: 2,
    save: false,
    entry,
  });
  equal(r.losses.length, 8);
  ok(r.losses.every(Number.isFinite));
  ok(r.losses.at(-1)! < 0.7 * r.losses[0]!, `losses ${r.losses.map((l) => l.toFixed(3))}`);
  ok(r.entropyFloor > 0.2 && r.entropyFloor < 0.25, `floor ${r.entropyFloor}`);
});

Deno.test("ensureFrozenLakeBaseModel builds once and rebuilds a changed recipe", async () => {
  const dir = `${await Deno.makeTempDir({ prefix: "agentrl_base_" })}/model`;
  try {
    const tiny = { episodes: 4, steps: 1, batchEpisodes: 2, warmupSteps: 1, entry };
    const first = await ensureFrozenLakeBaseModel(dir, tiny);
    equal(first.built, true);
    for (
      const name of [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        FROZEN_LAKE_BASE_MANIFEST,
      ]
    ) {
      await Deno.stat(`${dir}/${name}`);
    }
    const weights = await Deno.readFile(`${dir}/model.safetensors`);
    equal((await ensureFrozenLakeBaseModel(dir, tiny)).built, false);
    const changed = await ensureFrozenLakeBaseModel(dir, { ...tiny, lr: 1e-4 });
    equal(changed.built, true);
    ok(changed.hash !== first.hash);
    // The step-wise base model is another recipe.
    const step = await ensureFrozenLakeBaseModel(dir, { ...tiny, stepEntry });
    equal(step.built, true);
    ok(step.hash !== first.hash && step.hash !== changed.hash);
    // Rebuilding the first recipe gives the same bytes.
    await ensureFrozenLakeBaseModel(dir, tiny);
    deepStrictEqual(await Deno.readFile(`${dir}/model.safetensors`), weights);
  } finally {
    await Deno.remove(dir.slice(0, dir.lastIndexOf("/")), { recursive: true });
  }
});
