/**
 * The base model of `configs/agent_val_frozen_lake_think.yaml`:
 * the tiny Qwen2 model of {@linkcode buildTinyModelFiles}, trained from its
 * seeded random initialisation to *look* at a FrozenLake board and then answer
 * at random. Each example is one decision as the step-wise env manager prompts
 * it (a fresh prompt holding the current board), on a board a uniformly random
 * policy reaches (a reset, then 0 to `maxRandomMoves - 1` random moves), and
 * the response
 *
 * ```text
 * <think>left ice, down hole, right ice, up edge; goal down right</think><answer>Up</answer>
 * ```
 *
 * The think is {@linkcode describeFrozenLakeBoard}: where the goal lies and what
 * is on each side, which is perception, not a plan. The answer is uniformly
 * random: every batch holds each of the four actions equally often (a deck of
 * shuffled blocks of four), so no sampling imbalance becomes a bias. The model
 * thus plays like the random policy while writing down what a policy needs,
 * and reinforcement learning has the whole task to learn: which move the
 * description calls for.
 *
 * Deterministic: the same checkout writes the same weights.
 * {@linkcode ensureThinkBaseModel} rebuilds only when the folder's manifest
 * names another recipe (recipe, version, the config's prompts, the tokenizer).
 *
 * ```sh
 * # build (when missing or stale) and print its perception accuracy
 * npx -y deno@2.9.6 run -A lib/model/make_think_base_model.ts [--force] [--out DIR]
 * ```
 *
 * @module
 */
import { Kernels } from "../../ffi/mod.ts";
import { createFrozenLakeEnv, describeFrozenLakeBoard } from "../../envs/frozen_lake/mod.ts";
import { DEFAULT_ACTION_PATTERN, THINK_ACTION_PATTERN } from "../../envs/action_parser.ts";
import { Rng } from "../../envs/random.ts";
import { GenerationEngine } from "../infer/engine.ts";
import { stepHistoryLine, stepTurnMessages } from "../rollout/prompt.ts";
import { type SftExample, SftTrainer } from "../train/sft.ts";
import { ChatEncoder } from "./chat_template.ts";
import { parseQwen2Config } from "./hf_config.ts";
import {
  builtModelHash,
  type CustomEnvEntry,
  defaultFrozenLakeEntry,
  endOfTurnId,
  FROZEN_LAKE_BASE_MANIFEST,
  lrAt,
  sha256,
  shuffled,
  tinyTokenizer,
  withRecipeDefaults,
} from "./make_base_model.ts";
import { buildTinyModelFiles, type TinyModelFiles } from "./make_tiny_tokenizer.ts";
import { loadPretrained, savePretrained } from "./pretrained.ts";
import { Qwen2Model } from "./qwen2.ts";
import type { Tokenizer } from "./tokenizer.ts";

/** The default output folder, relative to the working directory. */
export const FROZEN_LAKE_THINK_BASE_DIR = "build/models/frozen_lake_think_base";

/** Bump when the recipe changes in a way its options do not show. */
export const FROZEN_LAKE_THINK_BASE_VERSION = 1;

/** The recipe: what is trained, on what, how long. */
export interface ThinkBaseRecipe {
  /** AdamW steps. */
  steps: number;
  /** Decisions per step (a multiple of 4: each action answers a quarter of them). */
  batch: number;
  /** Peak learning rate (linear warmup, then cosine decay to `minLr`). */
  lr: number;
  minLr: number;
  warmupSteps: number;
  maxGradNorm: number;
  /** Seed of the model's random initialisation. */
  modelSeed: number;
  /** Seed of the boards, the random moves and the answers. */
  dataSeed: number;
  /** Reset seeds are `seedStart + u`, u uniform below 2^30 (far from validation seeds). */
  seedStart: number;
  /** A board is a reset followed by 0 .. maxRandomMoves - 1 uniformly random moves. */
  maxRandomMoves: number;
}

/** The default recipe (about eight minutes on 2 cores). */
export const FROZEN_LAKE_THINK_BASE_RECIPE: Readonly<ThinkBaseRecipe> = Object.freeze({
  steps: 1200,
  batch: 64,
  lr: 2e-3,
  minLr: 2e-4,
  warmupSteps: 20,
  maxGradNorm: 1,
  modelSeed: 0,
  dataSeed: 0,
  seedStart: 100_000_000,
  maxRandomMoves: 4,
});

/** The config whose FrozenLake entry gives the prompts. */
export const THINK_BASE_CONFIG = "agent_val_frozen_lake_think";

const ACTIONS = ["Left", "Down", "Right", "Up"] as const;

/** A board a random policy reaches: the env there, its text, and the moves made. */
interface Board {
  observation: string;
  turn: number;
  history: string[];
  instruction: string;
}

function randomBoard(entry: CustomEnvEntry, recipe: ThinkBaseRecipe, rng: Rng): Board {
  const env = createFrozenLakeEnv(entry.env_config ?? {});
  for (;;) {
    let observation = env.reset(recipe.seedStart + rng.int(2 ** 30)).observation;
    const moves = rng.int(recipe.maxRandomMoves);
    const history: string[] = [];
    let ended = false;
    for (let t = 0; t < moves && !ended; t++) {
      const action = `<answer>${ACTIONS[rng.int(4)]}</answer>`;
      const step = env.step(action);
      history.push(
        stepHistoryLine(t + 1, observation, action, step.info.metrics.action_is_valid, step.reward),
      );
      observation = step.observation;
      ended = step.terminated || step.truncated;
    }
    if (!ended) return { observation, turn: moves, history, instruction: env.instruction };
  }
}

/** The response text for a board and an action: `<think>...</think><answer>Left</answer>`. */
export function thinkAnswer(observation: string, action: string): string {
  const look = describeFrozenLakeBoard(observation);
  if (look === null) {
    throw new Error(`No board to describe in the observation ${JSON.stringify(observation)}`);
  }
  return `<think>${look}</think><answer>${action}</answer>`;
}

/** One training decision. */
export interface ThinkBaseExample extends SftExample {
  tokens: number[];
  lossMask: Float32Array;
  /** The board described. */
  observation: string;
  /** The answer's action id (0 Left, 1 Down, 2 Right, 3 Up). */
  action: number;
  /** Where the response starts in `tokens`. */
  responseStart: number;
}

function checkEntry(entry: CustomEnvEntry): void {
  const pattern = (entry.env_config?.action_pattern as string | undefined) ??
    DEFAULT_ACTION_PATTERN;
  if (pattern !== DEFAULT_ACTION_PATTERN && pattern !== THINK_ACTION_PATTERN) {
    throw new Error(
      `The think base model answers as <think>...</think><answer>ACTION</answer>: the entry's ` +
        `action_pattern ${JSON.stringify(pattern)} is neither ROLL's answer nor its think pattern`,
    );
  }
}

/**
 * One batch of `recipe.batch` decisions drawn from `rng`: each a random board
 * prompted as the step-wise env manager does (with `entry`'s templates and the
 * random moves as its history), and the think response, every response token
 * trained. The actions come from shuffled blocks of four.
 */
export function thinkBaseBatch(
  tokenizer: Tokenizer,
  entry: CustomEnvEntry,
  recipe: ThinkBaseRecipe,
  rng: Rng,
): ThinkBaseExample[] {
  checkEntry(entry);
  if (!Number.isInteger(recipe.batch) || recipe.batch < 4 || recipe.batch % 4 !== 0) {
    throw new RangeError(`batch ${recipe.batch} is not valid: expected a multiple of 4`);
  }
  const chat = new ChatEncoder(tokenizer);
  const imEnd = endOfTurnId(tokenizer);
  const deck: number[] = [];
  for (let i = 0; i < recipe.batch / 4; i++) deck.push(...shuffled(4, rng));
  return deck.map((action) => {
    const board = randomBoard(entry, recipe, rng);
    const messages = stepTurnMessages(
      entry,
      board.instruction,
      board.observation,
      board.turn,
      board.history,
    );
    const prompt = chat.turnIds([], [], messages);
    const response = [
      ...tokenizer.encode(thinkAnswer(board.observation, ACTIONS[action]!), {
        addSpecialTokens: false,
      }),
      imEnd,
    ];
    if (response.length > entry.max_tokens_per_step) {
      throw new Error(
        `The think response is ${response.length} tokens: more than max_tokens_per_step ` +
          `(${entry.max_tokens_per_step})`,
      );
    }
    const tokens = [...prompt, ...response];
    const lossMask = new Float32Array(tokens.length);
    lossMask.fill(1, prompt.length);
    return {
      tokens,
      lossMask,
      observation: board.observation,
      action,
      responseStart: prompt.length,
    };
  });
}

/** How well a model describes held-out boards (greedy decoding). */
export interface ThinkPerception {
  boards: number;
  /** Share of the descriptions equal to {@linkcode describeFrozenLakeBoard}'s. */
  exact: number;
  /** Share right per part: the goal's direction and each side. */
  goal: number;
  left: number;
  down: number;
  right: number;
  up: number;
  /** Share of the responses whose answer names one of the four actions. */
  validAnswer: number;
}

/**
 * Describes `boards` held-out random boards (reset seeds from 2^40 on) with the
 * model at `dir`, greedily, prompted as `entry` prompts, and scores each part.
 */
export async function evaluateThinkPerception(dir: string, options: {
  entry: CustomEnvEntry;
  boards?: number;
  threads?: number;
}): Promise<ThinkPerception> {
  using kernels = Kernels.open(options.threads !== undefined ? { threads: options.threads } : {});
  using pretrained = await loadPretrained(kernels, dir);
  const tok = pretrained.tokenizer;
  const chat = new ChatEncoder(tok);
  const n = options.boards ?? 256;
  await using engine = new GenerationEngine(pretrained.model, {
    maxRunningRequests: Math.min(n, 128),
    maxModelLen: Math.min(1024, pretrained.config.max_position_embeddings),
    decode: (ids) => tok.decode(ids, { skipSpecialTokens: true }),
    eosTokenIds: [...tok.eosTokenIds],
  });
  const recipe = { ...FROZEN_LAKE_THINK_BASE_RECIPE, seedStart: 2 ** 40 };
  const rng = new Rng(7, 0x1ee);
  const boards = Array.from({ length: n }, () => randomBoard(options.entry, recipe, rng));
  const parts = ["left", "down", "right", "up", "goal"] as const;
  const right = { goal: 0, left: 0, down: 0, right: 0, up: 0 };
  let exact = 0, valid = 0;
  await Promise.all(boards.map(async (b, i) => {
    const messages = stepTurnMessages(
      options.entry,
      b.instruction,
      b.observation,
      b.turn,
      b.history,
    );
    const r = await engine.generate({
      prompt_token_ids: chat.turnIds([], [], messages),
      max_new_tokens: options.entry.max_tokens_per_step,
      temperature: 0,
      seed: i,
    });
    const want = describeFrozenLakeBoard(b.observation)!;
    const got = /<think>(.*?)<\/think>/s.exec(r.text)?.[1]?.trim() ?? "";
    if (got === want) exact++;
    const wantParts = want.split(/[;,] /), gotParts = got.split(/[;,] /);
    parts.forEach((p, k) => {
      if (wantParts[k] === gotParts[k]) right[p]++;
    });
    const answer = /<answer>(.*?)<\/answer>/s.exec(r.text)?.[1]?.trim() ?? "";
    if ((ACTIONS as readonly string[]).includes(answer)) valid++;
  }));
  return {
    boards: n,
    exact: exact / n,
    goal: right.goal / n,
    left: right.left / n,
    down: right.down / n,
    right: right.right / n,
    up: right.up / n,
    validAnswer: valid / n,
  };
}

/** Options of {@linkcode buildThinkBaseModel}. */
export interface BuildThinkBaseOptions extends Partial<ThinkBaseRecipe> {
  /** The FrozenLake entry whose prompts are used (default: {@linkcode THINK_BASE_CONFIG}'s). */
  entry?: CustomEnvEntry;
  /** Kernel threads (default: all cores). */
  threads?: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  /** Write the folder (default true; false only trains, e.g. in tests). */
  save?: boolean;
  /** Held-out boards described after training, for the manifest (default 256; 0: none). */
  evalBoards?: number;
}

/** What {@linkcode buildThinkBaseModel} did. */
export interface BuildThinkBaseResult {
  dir: string;
  recipe: ThinkBaseRecipe;
  hash: string;
  /** Loss of each step (before its update). */
  losses: number[];
  /** Mean loss of the last 10 % of the steps. */
  finalLoss: number;
  /** Perception on held-out boards (null when not saved or `evalBoards` is 0). */
  perception: ThinkPerception | null;
  seconds: number;
}

function resolveRecipe(options: Partial<ThinkBaseRecipe>): ThinkBaseRecipe {
  return withRecipeDefaults(FROZEN_LAKE_THINK_BASE_RECIPE, options);
}

/** The hash a manifest stores: recipe, version, the entry's prompts and the tokenizer files. */
export async function thinkBaseHash(
  recipe: ThinkBaseRecipe,
  entry: CustomEnvEntry,
  files: TinyModelFiles,
): Promise<string> {
  const keys = Object.keys(recipe).sort() as (keyof ThinkBaseRecipe)[];
  return await sha256(JSON.stringify({
    name: "frozen_lake_think_base",
    version: FROZEN_LAKE_THINK_BASE_VERSION,
    recipe: keys.map((k) => [k, recipe[k]]),
    entry: {
      env_config: entry.env_config,
      max_steps: entry.max_steps,
      max_tokens_per_step: entry.max_tokens_per_step,
      agent_system_template: entry.agent_system_template ?? null,
      agent_template: entry.agent_template ?? null,
      history_length: entry.history_length ?? null,
    },
    files,
  }));
}

/** The FrozenLake entry of {@linkcode THINK_BASE_CONFIG}. */
export function thinkBaseEntry(): Promise<CustomEnvEntry> {
  return defaultFrozenLakeEntry(THINK_BASE_CONFIG);
}

/**
 * Builds the think base model: trains the tiny model from its seeded random
 * initialisation on fresh batches of {@linkcode thinkBaseBatch}, and (unless
 * `save: false`) writes a Hugging Face folder at `outDir` with its manifest
 * (recipe, hash, final loss, perception on held-out boards), replacing what was there.
 */
export async function buildThinkBaseModel(
  outDir: string = FROZEN_LAKE_THINK_BASE_DIR,
  options: BuildThinkBaseOptions = {},
): Promise<BuildThinkBaseResult> {
  const t0 = performance.now();
  const recipe = resolveRecipe(options);
  const log = options.log ?? (() => {});
  const entry = options.entry ?? await thinkBaseEntry();
  checkEntry(entry);
  const files = await buildTinyModelFiles();
  const hash = await thinkBaseHash(recipe, entry, files);
  const tokenizer = tinyTokenizer(files);
  const config = parseQwen2Config(JSON.parse(files["config.json"]), "tiny config.json");
  const losses: number[] = [];
  {
    using kernels = Kernels.open(options.threads !== undefined ? { threads: options.threads } : {});
    using model = new Qwen2Model(kernels, config, { seed: recipe.modelSeed });
    using sft = new SftTrainer(model, { lr: recipe.lr, maxGradNorm: recipe.maxGradNorm });
    const rng = new Rng(recipe.dataSeed, 0x7b1);
    for (let s = 0; s < recipe.steps; s++) {
      const r = sft.step(thinkBaseBatch(tokenizer, entry, recipe, rng), { lr: lrAt(recipe, s) });
      losses.push(r.loss);
      if (s % 50 === 0 || s === recipe.steps - 1) {
        log(
          `step ${s + 1}/${recipe.steps}: loss ${r.loss.toFixed(4)}, lr ${r.lr.toExponential(2)}, ${
            ((performance.now() - t0) / 1000).toFixed(0)
          } s`,
        );
      }
    }
    if (options.save ?? true) {
      const tokDir = await Deno.makeTempDir({ prefix: "agentrl_tiny_tok_" });
      try {
        for (const [name, content] of Object.entries(files)) {
          await Deno.writeTextFile(`${tokDir}/${name}`, content);
        }
        await savePretrained(model, outDir, { tokenizerDir: tokDir, overwrite: true });
      } finally {
        await Deno.remove(tokDir, { recursive: true });
      }
    }
  }
  const tail = losses.slice(-Math.max(1, Math.floor(losses.length / 10)));
  const finalLoss = tail.reduce((a, b) => a + b, 0) / tail.length;
  const evalBoards = options.evalBoards ?? 256;
  const perception = (options.save ?? true) && evalBoards > 0
    ? await evaluateThinkPerception(outDir, {
      entry,
      boards: evalBoards,
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
    })
    : null;
  if (options.save ?? true) {
    const manifest = {
      name: "frozen_lake_think_base",
      version: FROZEN_LAKE_THINK_BASE_VERSION,
      hash,
      recipe,
      final_loss: finalLoss,
      perception,
    };
    await Deno.writeTextFile(
      `${outDir}/${FROZEN_LAKE_BASE_MANIFEST}`,
      `${JSON.stringify(manifest, null, 2)}\n`,
    );
  }
  const seconds = (performance.now() - t0) / 1000;
  log(
    `done in ${seconds.toFixed(0)} s: final loss ${finalLoss.toFixed(4)}` +
      (perception
        ? `; held-out boards described exactly ${perception.exact.toFixed(3)} (goal ${
          perception.goal.toFixed(2)
        }, sides ${perception.left.toFixed(2)} ${perception.down.toFixed(2)} ${
          perception.right.toFixed(2)
        } ${perception.up.toFixed(2)})`
        : ""),
  );
  return { dir: outDir, recipe, hash, losses, finalLoss, perception, seconds };
}

/**
 * The think base model folder, when it is missing or its manifest names
 * another recipe (hash of the recipe, version, prompts and tokenizer): copied
 * from {@linkcode SHIPPED_THINK_BASE} when that is the current recipe's, else
 * built.
 */
export async function ensureThinkBaseModel(
  outDir: string = FROZEN_LAKE_THINK_BASE_DIR,
  options: BuildThinkBaseOptions & { force?: boolean; shipped?: URL | null } = {},
): Promise<{ dir: string; built: boolean; copied: boolean; hash: string }> {
  const recipe = resolveRecipe(options);
  const entry = options.entry ?? await thinkBaseEntry();
  const hash = await thinkBaseHash(recipe, entry, await buildTinyModelFiles());
  if (!options.force) {
    if (await builtModelHash(outDir) === hash) {
      return { dir: outDir, built: false, copied: false, hash };
    }
    const shipped = options.shipped === undefined ? SHIPPED_THINK_BASE : options.shipped;
    if (shipped && await copyShipped(shipped, outDir, hash, options.log ?? (() => {}))) {
      return { dir: outDir, built: false, copied: true, hash };
    }
  }
  const built = await buildThinkBaseModel(outDir, { ...options, entry });
  return { dir: outDir, built: true, copied: false, hash: built.hash };
}

/**
 * The think base as this checkout's recipe builds it, shipped in the repo
 * (2.7 MB) so a fresh clone starts training at once; used only while its
 * manifest's recipe hash is the current one (otherwise the model is rebuilt).
 */
export const SHIPPED_THINK_BASE: URL = new URL(
  "./weights/frozen_lake_think_base/",
  import.meta.url,
);

/** The files of a model folder that {@linkcode copyShipped} copies. */
const MODEL_FILES = [
  "config.json",
  "generation_config.json",
  "model.safetensors",
  "tokenizer.json",
  "tokenizer_config.json",
  FROZEN_LAKE_BASE_MANIFEST,
];

/**
 * Copies the shipped model to `outDir` when it was built from the recipe `hash` (a
 * temporary folder renamed into place); false otherwise. A module imported by URL fetches
 * it from beside the served modules (that needs `--allow-net` for the host); when it
 * cannot, `log` says why and the model is built instead.
 */
async function copyShipped(
  shipped: URL,
  outDir: string,
  hash: string,
  log: (line: string) => void,
): Promise<boolean> {
  const local = shipped.protocol === "file:";
  if (!local && shipped.protocol !== "http:" && shipped.protocol !== "https:") return false;
  const read = async (name: string): Promise<Uint8Array> => {
    const url = new URL(name, shipped);
    if (local) return await Deno.readFile(url);
    const res = await fetch(url);
    if (!res.ok) {
      await res.body?.cancel();
      throw new Error(`${res.status} ${res.statusText} for ${name}`);
    }
    return new Uint8Array(await res.arrayBuffer());
  };
  const files = new Map<string, Uint8Array>();
  try {
    // the manifest first: a copy of another recipe is not read further
    const manifest = await read(FROZEN_LAKE_BASE_MANIFEST);
    if (JSON.parse(new TextDecoder().decode(manifest))?.hash !== hash) return false;
    files.set(FROZEN_LAKE_BASE_MANIFEST, manifest);
    for (const name of MODEL_FILES) {
      if (!files.has(name)) files.set(name, await read(name));
    }
  } catch (e) {
    // a local folder without the model (or a damaged manifest) is built instead, as before
    if (local) {
      if (e instanceof Deno.errors.NotFound || e instanceof SyntaxError) return false;
      throw e;
    }
    const why = e instanceof Error ? e.message : String(e);
    log(`cannot fetch the shipped base model from ${shipped.href} (${why}): building it`);
    return false;
  }
  const tmp = `${outDir}.tmp-${Deno.pid}`;
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
  await Deno.mkdir(tmp, { recursive: true });
  for (const [name, bytes] of files) await Deno.writeFile(`${tmp}/${name}`, bytes);
  await Deno.remove(outDir, { recursive: true }).catch(() => {});
  await Deno.rename(tmp, outDir);
  return true;
}

if (import.meta.main) {
  const args = [...Deno.args];
  const i = args.indexOf("--out");
  const dir = i >= 0 && args[i + 1] ? args[i + 1]! : FROZEN_LAKE_THINK_BASE_DIR;
  const entry = await thinkBaseEntry();
  const ensured = await ensureThinkBaseModel(dir, {
    force: args.includes("--force"),
    entry,
    log: (line) => console.log(line),
  });
  console.log(`${ensured.built ? "built" : "up to date"}: ${ensured.dir} (${ensured.hash})`);
  console.log(JSON.stringify(await evaluateThinkPerception(dir, { entry })));
}
