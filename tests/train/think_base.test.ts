/**
 * The think base model's recipe at a tiny scale: its prompts are the step-wise
 * env manager's, its responses describe the board then answer, every batch
 * answers each action equally often, the loss goes down, and the manifest
 * rebuilds only a changed recipe.
 */
import { deepStrictEqual, equal, match, ok, rejects, throws } from "node:assert/strict";
import { createFrozenLakeEnv, describeFrozenLakeBoard } from "../../envs/frozen_lake/mod.ts";
import { Rng } from "../../envs/random.ts";
import { ChatEncoder } from "../../lib/model/chat_template.ts";
import { FROZEN_LAKE_BASE_MANIFEST, tinyTokenizer } from "../../lib/model/make_base_model.ts";
import {
  buildThinkBaseModel,
  ensureThinkBaseModel,
  FROZEN_LAKE_THINK_BASE_RECIPE,
  SHIPPED_THINK_BASE,
  thinkAnswer,
  thinkBaseBatch,
  thinkBaseEntry,
  thinkBaseHash,
} from "../../lib/model/make_think_base_model.ts";
import { buildTinyModelFiles } from "../../lib/model/make_tiny_tokenizer.ts";
import { stepTurnMessages } from "../../lib/rollout/prompt.ts";

const tokenizer = tinyTokenizer(await buildTinyModelFiles());
const entry = await thinkBaseEntry();
const recipe = { ...FROZEN_LAKE_THINK_BASE_RECIPE, batch: 16 };

Deno.test("think base: prompts are the step manager's, responses describe then answer", () => {
  const chat = new ChatEncoder(tokenizer);
  const batch = thinkBaseBatch(tokenizer, entry, recipe, new Rng(3));
  equal(batch.length, 16);
  for (const ex of batch) {
    const { instruction } = createFrozenLakeEnv(entry.env_config ?? {});
    // history_length 0: the prompt is the system message and the current board
    const prompt = chat.encode(stepTurnMessages(entry, instruction, ex.observation, 0, []));
    deepStrictEqual(ex.tokens.slice(0, ex.responseStart), prompt);
    const response = tokenizer.decode(ex.tokens.slice(ex.responseStart), {
      skipSpecialTokens: true,
    });
    equal(response, thinkAnswer(ex.observation, ["Left", "Down", "Right", "Up"][ex.action]!));
    match(response, new RegExp(`^<think>${describeFrozenLakeBoard(ex.observation)}</think>`));
    // every response token is trained, no prompt token is
    deepStrictEqual(
      [...ex.lossMask].map((m, i) => m === (i >= ex.responseStart ? 1 : 0)).every(Boolean),
      true,
    );
    ok(ex.tokens.length - ex.responseStart <= entry.max_tokens_per_step);
  }
});

Deno.test("think base: each batch answers every action equally often", () => {
  const rng = new Rng(5);
  for (let i = 0; i < 4; i++) {
    const counts = [0, 0, 0, 0];
    for (const ex of thinkBaseBatch(tokenizer, entry, recipe, rng)) counts[ex.action]!++;
    deepStrictEqual(counts, [4, 4, 4, 4]);
  }
  throws(
    () => thinkBaseBatch(tokenizer, entry, { ...recipe, batch: 6 }, rng),
    /batch 6 is not valid: expected a multiple of 4/,
  );
  throws(
    () =>
      thinkBaseBatch(
        tokenizer,
        {
          ...entry,
          env_config: { ...entry.env_config, action_pattern: "\\[(.*?)\\]" },
        },
        recipe,
        rng,
      ),
    /neither ROLL's answer nor its think pattern/,
  );
});

Deno.test("think base: a response describes the board the player sees", () => {
  equal(
    thinkAnswer("_P__\nO__G\n__O_\n____", "Left"),
    "<think>left ice, down ice, right ice, up edge; goal down right</think><answer>Left</answer>",
  );
  throws(() => thinkAnswer("X___\n___G", "Up"), /No board to describe/);
});

Deno.test("think base: the loss goes down at a tiny scale", async () => {
  const r = await buildThinkBaseModel("unused", {
    steps: 12,
    batch: 8,
    warmupSteps: 2,
    lr: 3e-3,
    save: false,
    entry,
  });
  equal(r.losses.length, 12);
  ok(r.losses.every(Number.isFinite));
  ok(r.losses.at(-1)! < 0.5 * r.losses[0]!, `losses ${r.losses.map((l) => l.toFixed(3))}`);
  equal(r.perception, null);
});

Deno.test("think base: ensure builds once, rebuilds a changed recipe, and the same recipe gives the same bytes", async () => {
  const dir = `${await Deno.makeTempDir({ prefix: "agentrl_think_base_" })}/model`;
  try {
    const tiny = { steps: 2, batch: 4, warmupSteps: 1, entry, evalBoards: 4 };
    const first = await ensureThinkBaseModel(dir, tiny);
    equal(first.built, true);
    for (const name of ["config.json", "model.safetensors", "tokenizer.json"]) {
      await Deno.stat(`${dir}/${name}`);
    }
    const manifest = JSON.parse(await Deno.readTextFile(`${dir}/${FROZEN_LAKE_BASE_MANIFEST}`));
    equal(manifest.hash, first.hash);
    equal(manifest.perception.boards, 4);
    const weights = await Deno.readFile(`${dir}/model.safetensors`);
    equal((await ensureThinkBaseModel(dir, tiny)).built, false);
    const changed = await ensureThinkBaseModel(dir, { ...tiny, lr: 1e-4 });
    equal(changed.built, true);
    ok(changed.hash !== first.hash);
    await ensureThinkBaseModel(dir, tiny);
    deepStrictEqual(await Deno.readFile(`${dir}/model.safetensors`), weights);
  } finally {
    await Deno.remove(dir.slice(0, dir.lastIndexOf("/")), { recursive: true });
  }
});

Deno.test("think base: the shipped model is this recipe's, and ensure copies it instead of building", async () => {
  const files = await buildTinyModelFiles();
  const hash = await thinkBaseHash(FROZEN_LAKE_THINK_BASE_RECIPE, entry, files);
  const shipped = JSON.parse(
    await Deno.readTextFile(new URL(FROZEN_LAKE_BASE_MANIFEST, SHIPPED_THINK_BASE)),
  );
  // a changed recipe, prompt or tokenizer needs the shipped weights rebuilt:
  // `deno run -A lib/model/make_think_base_model.ts --force --out lib/model/weights/frozen_lake_think_base`
  equal(shipped.hash, hash, "lib/model/weights/frozen_lake_think_base is stale");
  const dir = `${await Deno.makeTempDir({ prefix: "agentrl_think_ship_" })}/model`;
  try {
    const r = await ensureThinkBaseModel(dir, { entry });
    deepStrictEqual([r.built, r.copied, r.hash], [false, true, hash]);
    deepStrictEqual(
      await Deno.readFile(`${dir}/model.safetensors`),
      await Deno.readFile(new URL("model.safetensors", SHIPPED_THINK_BASE)),
    );
    equal((await ensureThinkBaseModel(dir, { entry })).copied, false, "up to date: nothing to do");
    // a shipped folder with another recipe is not used
    const other = await ensureThinkBaseModel(`${dir}2`, {
      entry,
      steps: 1,
      batch: 4,
      evalBoards: 4,
    });
    deepStrictEqual([other.built, other.copied], [true, false]);
  } finally {
    await Deno.remove(dir.slice(0, dir.lastIndexOf("/")), { recursive: true });
  }
});

Deno.test("think base: imported by URL, ensure fetches the shipped model from beside the modules", async () => {
  const served: string[] = [];
  let broken = false;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const name = new URL(req.url).pathname.slice(1);
    served.push(name);
    if (broken) return new Response("gone", { status: 404 });
    try {
      return new Response(await Deno.readFile(new URL(name, SHIPPED_THINK_BASE)));
    } catch {
      return new Response("not found", { status: 404 });
    }
  });
  const dir = `${await Deno.makeTempDir({ prefix: "agentrl_think_url_" })}/model`;
  try {
    const shipped = new URL(`http://127.0.0.1:${server.addr.port}/`);
    const r = await ensureThinkBaseModel(dir, { entry, shipped });
    deepStrictEqual([r.built, r.copied], [false, true]);
    ok(served.includes("model.safetensors"));
    deepStrictEqual(
      await Deno.readFile(`${dir}/model.safetensors`),
      await Deno.readFile(new URL("model.safetensors", SHIPPED_THINK_BASE)),
    );
    // a server that cannot give it: a line says why, and the model is built
    broken = true;
    const lines: string[] = [];
    const built = await ensureThinkBaseModel(`${dir}2`, {
      entry,
      shipped,
      steps: 1,
      batch: 4,
      evalBoards: 4,
      log: (l) => lines.push(l),
    });
    deepStrictEqual([built.built, built.copied], [true, false]);
    ok(
      lines[0]?.startsWith(`cannot fetch the shipped base model from ${shipped.href} (404`),
      lines[0],
    );
  } finally {
    await server.shutdown();
    await Deno.remove(dir.slice(0, dir.lastIndexOf("/")), { recursive: true });
  }
});

Deno.test("think base: an unusable entry is a clear error before any training", async () => {
  await rejects(
    () =>
      buildThinkBaseModel("unused", {
        steps: 1,
        save: false,
        entry: { ...entry, env_config: { ...entry.env_config, action_pattern: "(.*)" } },
      }),
    /neither ROLL's answer nor its think pattern/,
  );
});
