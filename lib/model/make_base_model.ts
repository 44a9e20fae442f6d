/**
 * The tiny *base* model of the embedded default job (FrozenLake, see
 * `configs/agent_val_frozen_lake.yaml`): the tiny Qwen2 model of
 * {@linkcode buildTinyModelFiles}, fine-tuned from its seeded random
 * initialisation on multi-turn FrozenLake conversations whose assistant turns
 * are uniformly random legal actions. It knows the chat format, the
 * `<answer>ACTION</answer>` format and when to stop (`<|im_end|>`), but not
 * the task: its success is the random policy's, and GRPO has all to learn.
 *
 * The conversations are exactly what the trajectory-wise rollout builds: the
 * turn prompts of {@linkcode entryTurnMessages} with the default config's
 * FrozenLake entry, the first prompt tokenized with {@linkcode ChatEncoder.encode},
 * each response as `tokenizer.encode(action) + <|im_end|>`, and every later
 * turn appended with {@linkcode ChatEncoder.nextTurnIds}. Only the response
 * tokens are trained. With a step-wise entry (the step-wise base model,
 * {@linkcode FROZEN_LAKE_STEP_BASE_DIR}), each turn is also trained as that
 * env manager prompts it (a fresh one-decision prompt, {@linkcode stepTurnMessages}).
 *
 * Validation samples at temperature 0.2, which turns any systematic gap
 * between the actions' logits into a five times larger one. So the model must
 * be uniform to within a few thousandths of a nat, and two things see to it:
 * the actions are drawn stratified (every turn index sees the four equally
 * often), and each batch weighs its choice tokens so that the four actions
 * weigh the same ({@linkcode balancedBatch}); without the latter, Adam follows
 * each batch's sampling imbalance at full step size and leaves a random bias
 * of about 0.1 nat (a 40/13 % split between actions at temperature 0.2).
 *
 * Deterministic: the same checkout writes the same weights (1 and 2 threads
 * give the same bytes). {@linkcode ensureFrozenLakeBaseModel} rebuilds only
 * when the folder's manifest names another recipe.
 *
 * ```sh
 * # build (when missing or stale), then evaluate on the validation seeds
 * npx -y deno@2.9.6 run -A lib/model/make_base_model.ts \
 *   [--force] [--out DIR] [--episodes 128] [--seed 42] [--temperature 0.2]
 * ```
 *
 * @module
 */
import { Kernels } from "../../ffi/mod.ts";
import { createFrozenLakeEnv } from "../../envs/frozen_lake/mod.ts";
import { Rng } from "../../envs/random.ts";
import type { AgenticConfig } from "../config/agentic_config.ts";
import { loadConfig } from "../config/load_config.ts";
import { GenerationEngine } from "../infer/engine.ts";
import { entryTurnMessages, stepHistoryLine, stepTurnMessages } from "../rollout/prompt.ts";
import { type SftExample, SftTrainer } from "../train/sft.ts";
import { ChatEncoder, type ChatMessage } from "./chat_template.ts";
import { parseQwen2Config } from "./hf_config.ts";
import { buildTinyModelFiles, type TinyModelFiles } from "./make_tiny_tokenizer.ts";
import { loadPretrained, savePretrained } from "./pretrained.ts";
import { Qwen2Model } from "./qwen2.ts";
import { Tokenizer } from "./tokenizer.ts";

/** The default output folder, relative to the working directory. */
export const FROZEN_LAKE_BASE_DIR = "build/models/frozen_lake_base";

/** The step-wise config's base model: the same recipe, plus its one-decision prompts. */
export const FROZEN_LAKE_STEP_BASE_DIR = "build/models/frozen_lake_step_base";

/** The manifest written next to the weights (recipe, its hash, training metrics). */
export const FROZEN_LAKE_BASE_MANIFEST = "agentrl_base_manifest.json";

/** Bump when the recipe changes in a way its options do not show. */
export const FROZEN_LAKE_BASE_VERSION = 3;

/** A `custom_envs` entry of the config (FrozenLake's, here). */
export type CustomEnvEntry = AgenticConfig["custom_envs"][string];

/** The recipe: what is trained, on what, how long. */
export interface FrozenLakeBaseRecipe {
  /** Conversations (one FrozenLake episode each). */
  episodes: number;
  /** Reset seeds are `seedStart + i` (far from validation seeds such as 42 + i). */
  seedStart: number;
  /** AdamW steps. */
  steps: number;
  /** Conversations per step (drawn in a seeded shuffled order, epoch after epoch). */
  batchEpisodes: number;
  /** Peak learning rate (linear warmup, then cosine decay to `minLr`). */
  lr: number;
  minLr: number;
  warmupSteps: number;
  weightDecay: number;
  maxGradNorm: number;
  /** Seed of the model's random initialisation. */
  modelSeed: number;
  /** Seed of the actions and of the batch order. */
  dataSeed: number;
  /**
   * Loss weight of the later turns' prompt tokens (the next state after each
   * random move): the base model learns the game's dynamics, i.e. to read the
   * grid, while its own moves stay uniformly random (it still does not know
   * the task). 0 trains the responses only.
   */
  observationWeight: number;
}

/**
 * The default recipe (about two minutes on 2 cores; three with step-wise
 * prompts). The next states weigh as much as the moves, for 192 steps: with
 * 0.2 and 96 steps the model learned to play uniformly but barely to read the
 * grid, and supervised moves from it
 * stayed at the majority action for 150 steps (see
 * `examples/diagnostics/supervised_moves.ts`); from this recipe they reach 0.80.
 */
export const FROZEN_LAKE_BASE_RECIPE: Readonly<FrozenLakeBaseRecipe> = Object.freeze({
  episodes: 1024,
  seedStart: 10_000_000,
  steps: 192,
  batchEpisodes: 16,
  lr: 3e-3,
  minLr: 0,
  warmupSteps: 10,
  weightDecay: 0,
  maxGradNorm: 1,
  modelSeed: 0,
  dataSeed: 0,
  observationWeight: 1.0,
});

/** One FrozenLake episode as training data. */
export interface FrozenLakeConversation {
  /** Reset seed of the episode. */
  seed: number;
  /** The conversation's messages (system, user, assistant, user, assistant, ...). */
  messages: ChatMessage[];
  /** Token ids, as the rollout builds them (ends with the last response's `<|im_end|>`). */
  tokens: number[];
  /** 1 on response tokens (trained), 0 on prompt tokens. */
  lossMask: Uint8Array;
  /** 1 on the prompt tokens of turns after the first (the next state), 0 elsewhere. */
  observationMask: Uint8Array;
  /** The responses (action texts such as `<answer>Left</answer>`), in order. */
  actions: string[];
  /**
   * Per response: the index in `tokens` of its first token that tells the
   * actions apart (`>Left` after `<answer`, with the tiny tokenizer).
   */
  decisions: number[];
  /** Whether the episode reached the goal. */
  success: boolean;
  /**
   * With a step-wise entry: each turn again as the step-wise env manager
   * prompts it (a fresh [system, user] prompt and the same response), one
   * single-turn example per turn.
   */
  steps?: FrozenLakeConversation[];
}

/** The config (the embedded default) whose prompts {@linkcode FROZEN_LAKE_BASE_DIR} learns. */
export const FROZEN_LAKE_TRAJ_CONFIG = "agent_val_frozen_lake";

/**
 * The `custom_envs.FrozenLake` entry of a built-in config (default:
 * {@linkcode FROZEN_LAKE_TRAJ_CONFIG}'s, whose prompts this recipe learns).
 */
export async function defaultFrozenLakeEntry(
  configName: string = FROZEN_LAKE_TRAJ_CONFIG,
): Promise<CustomEnvEntry> {
  const { config } = await loadConfig({ configName });
  const entry = config.custom_envs.FrozenLake;
  if (!entry) {
    throw new Error(`${configName} has no custom_envs.FrozenLake entry`);
  }
  return entry;
}

/** The config whose FrozenLake entry gives the step-wise prompts the base model also learns. */
export const FROZEN_LAKE_STEP_CONFIG = "agent_val_frozen_lake_step";

/** The step-wise config's `custom_envs.FrozenLake` entry. */
export function defaultFrozenLakeStepEntry(): Promise<CustomEnvEntry> {
  return defaultFrozenLakeEntry(FROZEN_LAKE_STEP_CONFIG);
}

/** Conversations followed by their step-wise pieces: every example that is trained. */
function trainingUnits(
  conversations: readonly FrozenLakeConversation[],
): FrozenLakeConversation[] {
  return conversations.flatMap((c) => [c, ...(c.steps ?? [])]);
}

/** The tiny tokenizer of these files. */
export function tinyTokenizer(files: TinyModelFiles): Tokenizer {
  return Tokenizer.fromJSON({
    tokenizerJson: JSON.parse(files["tokenizer.json"]),
    tokenizerConfig: JSON.parse(files["tokenizer_config.json"]),
    generationConfig: JSON.parse(files["generation_config.json"]),
  });
}

/** The end-of-turn token: it closes every response and must stop generation. */
export function endOfTurnId(tokenizer: Tokenizer): number {
  const id = tokenizer.requireTokenId("<|im_end|>");
  if (!tokenizer.eosTokenIds.includes(id)) {
    throw new Error(
      `<|im_end|> (${id}) is not a stop token of the tokenizer (${tokenizer.eosTokenIds})`,
    );
  }
  return id;
}

/**
 * Where the four action texts' token ids first differ: the index of the
 * token that carries the choice (the texts' common token prefix length).
 */
export function actionDecisionOffset(tokenizer: Tokenizer, entry: CustomEnvEntry): number {
  const env = createFrozenLakeEnv(entry.env_config ?? {});
  const encoded = [0, 1, 2, 3].map((a) =>
    tokenizer.encode(env.sampleAction(() => (a + 0.5) / 4), { addSpecialTokens: false })
  );
  let d = 0;
  while (encoded.every((ids) => d < ids.length && ids[d] === encoded[0]![d])) d++;
  return d;
}

/**
 * The examples of one training batch: the response tokens are trained, and
 * the choice tokens are weighted so that each action weighs the same in the
 * batch (weights N / (4 c_a), N choices of which c_a chose action a; 1 when an
 * action is missing). Without it, a batch's sampling imbalance is a gradient
 * that Adam follows at full step size even when the model is at the uniform
 * optimum, leaving a random global bias between the actions.
 */
export function balancedBatch(
  conversations: readonly FrozenLakeConversation[],
  observationWeight = 0,
): SftExample[] {
  const batch = trainingUnits(conversations);
  const counts = new Map<string, number>();
  let n = 0;
  for (const c of batch) {
    for (const a of c.actions) {
      counts.set(a, (counts.get(a) ?? 0) + 1);
      n++;
    }
  }
  const balanced = counts.size === 4;
  return batch.map((c) => {
    const lossMask = Float32Array.from(c.lossMask);
    if (observationWeight > 0) {
      c.observationMask.forEach((m, t) => {
        if (m) lossMask[t] = observationWeight;
      });
    }
    if (balanced) {
      c.decisions.forEach((t, j) => {
        lossMask[t] = n / (4 * counts.get(c.actions[j]!)!);
      });
    }
    return { tokens: c.tokens, lossMask };
  });
}

/**
 * One conversation per seed `seedStart + i` (i < episodes): FrozenLake reset
 * with that seed, played with uniformly random actions until it ends or the
 * entry's `max_steps` actions. The actions are the env's `sampleAction`, drawn
 * stratified: at each turn index the episodes still playing (in order) take
 * their actions from a deck of shuffled blocks of the four actions (seeded by
 * `dataSeed` and the turn), so each action is uniform, episodes are
 * independent of one another, and every turn index sees the four actions
 * equally often (to within 3): no sampling imbalance for the model to learn.
 */
export function frozenLakeConversations(
  tokenizer: Tokenizer,
  entry: CustomEnvEntry,
  options: { episodes: number; seedStart: number; dataSeed: number },
  stepEntry: CustomEnvEntry | null = null,
): FrozenLakeConversation[] {
  const chat = new ChatEncoder(tokenizer);
  const imEnd = endOfTurnId(tokenizer);
  const decisionOffset = actionDecisionOffset(tokenizer, entry);
  const games = Array.from({ length: options.episodes }, (_, i) => {
    const env = createFrozenLakeEnv(entry.env_config ?? {});
    const seed = options.seedStart + i;
    return {
      env,
      observation: env.reset(seed).observation,
      done: false,
      conv: {
        seed,
        messages: [] as ChatMessage[],
        tokens: [] as number[],
        lossMask: new Uint8Array(0),
        observationMask: new Uint8Array(0),
        actions: [] as string[],
        decisions: [] as number[],
        success: false,
      },
      mask: [] as number[],
      obs: [] as number[],
      history: [] as string[],
      steps: [] as FrozenLakeConversation[],
    };
  });
  for (let turn = 0; turn < entry.max_steps; turn++) {
    const deckRng = new Rng(options.dataSeed, 1 + turn);
    let deck: number[] = [];
    for (const g of games) {
      if (g.done) continue;
      const { env, conv } = g;
      const next = entryTurnMessages(entry, env.instruction, g.observation, turn);
      const prompt = chat.turnIds(conv.messages, conv.tokens, next);
      conv.messages.push(...next);
      conv.tokens.push(...prompt);
      for (let j = 0; j < prompt.length; j++) {
        g.mask.push(0);
        g.obs.push(turn > 0 ? 1 : 0);
      }
      if (deck.length === 0) deck = shuffled(4, deckRng);
      const card = deck.pop()!;
      const action = env.sampleAction(() => (card + 0.5) / 4);
      const response = [...tokenizer.encode(action, { addSpecialTokens: false }), imEnd];
      if (response.length > entry.max_tokens_per_step) {
        throw new Error(
          `The response ${JSON.stringify(action)} is ${response.length} tokens: more than ` +
            `max_tokens_per_step (${entry.max_tokens_per_step})`,
        );
      }
      conv.decisions.push(conv.tokens.length + decisionOffset);
      conv.tokens.push(...response);
      for (let j = 0; j < response.length; j++) {
        g.mask.push(1);
        g.obs.push(0);
      }
      conv.messages.push(chat.assistantMessage(response));
      conv.actions.push(action);
      if (stepEntry) {
        const messages = stepTurnMessages(
          stepEntry,
          env.instruction,
          g.observation,
          turn,
          g.history,
        );
        g.steps.push(stepPiece(chat, messages, g.conv.seed, action, response, decisionOffset));
      }
      const actedFrom = g.observation;
      const step = env.step(action);
      if (stepEntry) {
        const valid = step.info.metrics.action_is_valid;
        g.history.push(stepHistoryLine(turn + 1, actedFrom, action, valid, step.reward));
      }
      g.observation = step.observation;
      if (step.terminated || step.truncated) {
        conv.success = step.info.metrics.success;
        g.done = true;
      }
    }
  }
  return games.map((g) => ({
    ...g.conv,
    lossMask: Uint8Array.from(g.mask),
    observationMask: Uint8Array.from(g.obs),
    ...(stepEntry ? { steps: g.steps } : {}),
  }));
}

/** One turn as the step-wise env manager prompts it, with the same response. */
function stepPiece(
  chat: ChatEncoder,
  messages: ChatMessage[],
  seed: number,
  action: string,
  response: number[],
  decisionOffset: number,
): FrozenLakeConversation {
  const prompt = chat.turnIds([], [], messages);
  const tokens = [...prompt, ...response];
  const lossMask = new Uint8Array(tokens.length);
  lossMask.fill(1, prompt.length);
  return {
    seed,
    messages: [...messages, chat.assistantMessage(response)],
    tokens,
    lossMask,
    observationMask: new Uint8Array(tokens.length),
    actions: [action],
    decisions: [prompt.length + decisionOffset],
    success: false,
  };
}

/** Options of {@linkcode buildFrozenLakeBaseModel}. */
export interface BuildFrozenLakeBaseOptions extends Partial<FrozenLakeBaseRecipe> {
  /** The FrozenLake entry whose prompts are used (default: the default config's). */
  entry?: CustomEnvEntry;
  /**
   * A step-wise entry whose one-decision prompts are learnt too (default: none;
   * {@linkcode FROZEN_LAKE_STEP_BASE_DIR} is built with that of
   * {@linkcode FROZEN_LAKE_STEP_CONFIG}).
   */
  stepEntry?: CustomEnvEntry | null;
  /** Kernel threads (default: all cores). */
  threads?: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  /** Write the folder (default true; false only trains, e.g. in tests). */
  save?: boolean;
}

/** What {@linkcode buildFrozenLakeBaseModel} did. */
export interface BuildFrozenLakeBaseResult {
  dir: string;
  recipe: FrozenLakeBaseRecipe;
  /** Hash of the recipe, the version, the prompts' entry and the tokenizer. */
  hash: string;
  /** Loss of each step (before its update). */
  losses: number[];
  /** Mean loss of the last 10 % of the steps. */
  finalLoss: number;
  /** The lowest possible loss: ln 4 spread over the response tokens. */
  entropyFloor: number;
  /** Trained response tokens and all tokens of the data. */
  trainedTokens: number;
  totalTokens: number;
  seconds: number;
}

function resolveRecipe(options: Partial<FrozenLakeBaseRecipe>): FrozenLakeBaseRecipe {
  return withRecipeDefaults(FROZEN_LAKE_BASE_RECIPE, options);
}

/** `defaults` with the fields `options` sets (undefined leaves a default). */
export function withRecipeDefaults<R extends object>(defaults: R, options: Partial<R>): R {
  const r = { ...defaults };
  for (const key of Object.keys(r) as (keyof R)[]) {
    const v = options[key];
    if (v !== undefined) r[key] = v as R[keyof R];
  }
  return r;
}

/** The recipe hash of the model folder at `dir`, or null when it has no complete model. */
export async function builtModelHash(dir: string | URL): Promise<string | null> {
  const at = (name: string) => typeof dir === "string" ? `${dir}/${name}` : new URL(name, dir);
  try {
    const manifest = JSON.parse(await Deno.readTextFile(at(FROZEN_LAKE_BASE_MANIFEST)));
    await Deno.stat(at("model.safetensors"));
    await Deno.stat(at("config.json"));
    return typeof manifest?.hash === "string" ? manifest.hash : null;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof SyntaxError) return null;
    throw e;
  }
}

/** Hex SHA-256 of a text (the manifests' recipe hashes). */
export async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The hash a manifest stores: recipe, version, the entry's prompts and the tokenizer files. */
export async function frozenLakeBaseHash(
  recipe: FrozenLakeBaseRecipe,
  entry: CustomEnvEntry,
  files: TinyModelFiles,
  stepEntry: CustomEnvEntry | null = null,
): Promise<string> {
  const keys = Object.keys(recipe).sort() as (keyof FrozenLakeBaseRecipe)[];
  const prompts = (e: CustomEnvEntry) => ({
    env_config: e.env_config,
    max_steps: e.max_steps,
    max_tokens_per_step: e.max_tokens_per_step,
    agent_system_template: e.agent_system_template ?? null,
    agent_template: e.agent_template ?? null,
  });
  return await sha256(JSON.stringify({
    version: FROZEN_LAKE_BASE_VERSION,
    recipe: keys.map((k) => [k, recipe[k]]),
    entry: prompts(entry),
    ...(stepEntry
      ? { step_entry: { ...prompts(stepEntry), history_length: stepEntry.history_length ?? null } }
      : {}),
    files,
  }));
}

/** Learning rate of step s (0-based): linear warmup, then cosine to minLr. */
export function lrAt(
  r: Pick<FrozenLakeBaseRecipe, "lr" | "minLr" | "warmupSteps" | "steps">,
  s: number,
): number {
  if (s < r.warmupSteps) return (r.lr * (s + 1)) / r.warmupSteps;
  const span = Math.max(1, r.steps - r.warmupSteps);
  const t = Math.min(1, (s - r.warmupSteps) / span);
  return r.minLr + 0.5 * (r.lr - r.minLr) * (1 + Math.cos(Math.PI * t));
}

/** A seeded Fisher-Yates permutation of 0..n-1. */
export function shuffled(n: number, rng: Rng): number[] {
  const a = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * Builds the base model: generates the conversations, trains the tiny model
 * from its seeded random initialisation, and (unless `save: false`) writes a
 * Hugging Face folder at `outDir` (config.json, model.safetensors, tokenizer
 * files, and the manifest), replacing what was there.
 */
export async function buildFrozenLakeBaseModel(
  outDir: string = FROZEN_LAKE_BASE_DIR,
  options: BuildFrozenLakeBaseOptions = {},
): Promise<BuildFrozenLakeBaseResult> {
  const t0 = performance.now();
  const recipe = resolveRecipe(options);
  const log = options.log ?? (() => {});
  const entry = options.entry ?? await defaultFrozenLakeEntry();
  const stepEntry = options.stepEntry ?? null;
  const files = await buildTinyModelFiles();
  const hash = await frozenLakeBaseHash(recipe, entry, files, stepEntry);
  const tokenizer = tinyTokenizer(files);
  const data = frozenLakeConversations(tokenizer, entry, recipe, stepEntry);
  const units = trainingUnits(data);
  const trainedTokens = units.reduce((a, c) => a + c.lossMask.reduce((x, y) => x + y, 0), 0);
  const totalTokens = units.reduce((a, c) => a + c.tokens.length, 0);
  const turns = units.reduce((a, c) => a + c.actions.length, 0);
  const entropyFloor = (turns * Math.log(4)) / trainedTokens;
  log(
    `${data.length} conversations and ${units.length - data.length} step-wise prompts, ` +
      `${turns} turns, ${totalTokens} tokens ` +
      `(${trainedTokens} trained); loss floor ${entropyFloor.toFixed(4)}`,
  );

  const config = parseQwen2Config(JSON.parse(files["config.json"]), "tiny config.json");
  using kernels = Kernels.open(options.threads !== undefined ? { threads: options.threads } : {});
  using model = new Qwen2Model(kernels, config, { seed: recipe.modelSeed });
  using sft = new SftTrainer(model, {
    lr: recipe.lr,
    weightDecay: recipe.weightDecay,
    maxGradNorm: recipe.maxGradNorm,
  });
  const orderRng = new Rng(recipe.dataSeed, 0x5f7);
  let order: number[] = [];
  const losses: number[] = [];
  for (let s = 0; s < recipe.steps; s++) {
    const batch: FrozenLakeConversation[] = [];
    while (batch.length < Math.min(recipe.batchEpisodes, data.length)) {
      if (order.length === 0) order = shuffled(data.length, orderRng);
      batch.push(data[order.pop()!]!);
    }
    const r = sft.step(balancedBatch(batch, recipe.observationWeight), { lr: lrAt(recipe, s) });
    losses.push(r.loss);
    if (s % 10 === 0 || s === recipe.steps - 1) {
      log(
        `step ${s + 1}/${recipe.steps}: loss ${r.loss.toFixed(4)}, grad norm ${
          r.gradNorm.toFixed(3)
        }, lr ${r.lr.toExponential(2)}, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    }
  }
  const tail = losses.slice(-Math.max(1, Math.floor(losses.length / 10)));
  const finalLoss = tail.reduce((a, b) => a + b, 0) / tail.length;
  const result: BuildFrozenLakeBaseResult = {
    dir: outDir,
    recipe,
    hash,
    losses,
    finalLoss,
    entropyFloor,
    trainedTokens,
    totalTokens,
    seconds: 0,
  };
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
    result.seconds = (performance.now() - t0) / 1000;
    const manifest = {
      name: "frozen_lake_base",
      version: FROZEN_LAKE_BASE_VERSION,
      hash,
      recipe,
      final_loss: finalLoss,
      entropy_floor: entropyFloor,
      trained_tokens: trainedTokens,
      total_tokens: totalTokens,
    };
    await Deno.writeTextFile(
      `${outDir}/${FROZEN_LAKE_BASE_MANIFEST}`,
      `${JSON.stringify(manifest, null, 2)}\n`,
    );
  }
  result.seconds = (performance.now() - t0) / 1000;
  log(`done in ${result.seconds.toFixed(1)} s: final loss ${finalLoss.toFixed(4)}`);
  return result;
}

/**
 * The base model folder, built when it is missing or its manifest names
 * another recipe (hash of the recipe, version, prompts and tokenizer).
 */
export async function ensureFrozenLakeBaseModel(
  outDir: string = FROZEN_LAKE_BASE_DIR,
  options: BuildFrozenLakeBaseOptions & { force?: boolean } = {},
): Promise<{ dir: string; built: boolean; hash: string }> {
  const recipe = resolveRecipe(options);
  const entry = options.entry ?? await defaultFrozenLakeEntry();
  const stepEntry = options.stepEntry ?? null;
  const hash = await frozenLakeBaseHash(recipe, entry, await buildTinyModelFiles(), stepEntry);
  if (!options.force) {
    if (await builtModelHash(outDir) === hash) return { dir: outDir, built: false, hash };
  }
  const built = await buildFrozenLakeBaseModel(outDir, { ...options, entry, stepEntry });
  return { dir: outDir, built: true, hash: built.hash };
}

/** Sampling settings (the config's validation generating_args). */
export interface EvalSampling {
  temperature: number;
  top_p: number;
  top_k: number;
}

/** What {@linkcode evaluateFrozenLake} measured. */
export interface FrozenLakeEvalResult {
  episodes: number;
  /** Share of the model's responses the env accepted as an action. */
  validRate: number;
  /** Share of the episodes that reached the goal. */
  success: number;
  /** Success of the uniformly random policy on the same seeds (mean of `randomDraws` games each). */
  randomSuccess: number;
  /** Mean actions per episode (model, random). */
  meanTurns: number;
  randomMeanTurns: number;
  /** How often the model chose each action (by name; "invalid" for the rest). */
  actionCounts: Record<string, number>;
  seconds: number;
}

/**
 * Plays `episodes` FrozenLake episodes (reset seeds `seed + i`) with the model
 * at `dir`, all at once through one {@linkcode GenerationEngine}, each turn's
 * prompt built as the trajectory-wise rollout does; and the random policy on
 * the same seeds (its expected success there, from `randomDraws` games a seed).
 */
export async function evaluateFrozenLake(dir: string, options: {
  episodes: number;
  seed: number;
  sampling: EvalSampling;
  entry?: CustomEnvEntry;
  maxModelLen?: number;
  threads?: number;
  /** Random-policy games per seed for the baseline (default 64). */
  randomDraws?: number;
}): Promise<FrozenLakeEvalResult> {
  const t0 = performance.now();
  const entry = options.entry ?? await defaultFrozenLakeEntry();
  using kernels = Kernels.open(options.threads !== undefined ? { threads: options.threads } : {});
  using pretrained = await loadPretrained(kernels, dir);
  const tok = pretrained.tokenizer;
  const chat = new ChatEncoder(tok);
  endOfTurnId(tok);
  const maxModelLen = Math.min(
    options.maxModelLen ?? 1024,
    pretrained.config.max_position_embeddings,
  );
  await using engine = new GenerationEngine(pretrained.model, {
    maxRunningRequests: options.episodes,
    maxModelLen,
    decode: (ids) => tok.decode(ids, { skipSpecialTokens: true }),
    eosTokenIds: [...tok.eosTokenIds],
    seed: options.seed,
  });
  const counts: Record<string, number> = {};
  const play = async (i: number) => {
    const env = createFrozenLakeEnv(entry.env_config ?? {});
    const seed = options.seed + i;
    let observation = env.reset(seed).observation;
    const messages: ChatMessage[] = [];
    const ids: number[] = [];
    let valid = 0, turns = 0, success = false;
    for (let turn = 0; turn < entry.max_steps; turn++) {
      const next = entryTurnMessages(entry, env.instruction, observation, turn);
      ids.push(...chat.turnIds(messages, ids, next));
      messages.push(...next);
      const room = maxModelLen - ids.length;
      if (room < 1) break;
      const r = await engine.generate({
        prompt_token_ids: ids,
        max_new_tokens: Math.min(entry.max_tokens_per_step, room),
        seed: seed * 64 + turn,
        ...options.sampling,
      });
      ids.push(...r.token_ids);
      messages.push(chat.assistantMessage(r.token_ids));
      const step = env.step(r.text);
      turns++;
      const m = step.info.metrics;
      if (m.action_is_valid) valid++;
      const name = m.action_is_valid ? String(step.info.action_content) : "invalid";
      counts[name] = (counts[name] ?? 0) + 1;
      observation = step.observation;
      if (step.terminated || step.truncated) {
        success = m.success;
        break;
      }
    }
    return { valid, turns, success };
  };
  const results = await Promise.all(Array.from({ length: options.episodes }, (_, i) => play(i)));
  // The random policy on the same seeds, averaged over `randomDraws` games per seed.
  const draws = options.randomDraws ?? 64;
  const env = createFrozenLakeEnv(entry.env_config ?? {});
  let randomWins = 0, randomTurns = 0;
  for (let i = 0; i < options.episodes; i++) {
    for (let d = 0; d < draws; d++) {
      env.reset(options.seed + i);
      const rng = new Rng(options.seed + i, 1 + d);
      for (let turn = 0; turn < entry.max_steps; turn++) {
        const step = env.step(env.sampleAction(() => rng.float()));
        randomTurns++;
        if (step.terminated || step.truncated) {
          if (step.info.metrics.success) randomWins++;
          break;
        }
      }
    }
  }
  const turns = results.reduce((a, r) => a + r.turns, 0);
  return {
    episodes: options.episodes,
    validRate: results.reduce((a, r) => a + r.valid, 0) / Math.max(1, turns),
    success: results.filter((r) => r.success).length / options.episodes,
    randomSuccess: randomWins / (options.episodes * draws),
    meanTurns: turns / options.episodes,
    randomMeanTurns: randomTurns / (options.episodes * draws),
    actionCounts: counts,
    seconds: (performance.now() - t0) / 1000,
  };
}

if (import.meta.main) {
  const args = [...Deno.args];
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const force = args.includes("--force");
  const dir = flag("--out") ?? FROZEN_LAKE_BASE_DIR;
  const { config } = await loadConfig({ configName: FROZEN_LAKE_TRAJ_CONFIG });
  const entry = config.custom_envs.FrozenLake!;
  const ensured = await ensureFrozenLakeBaseModel(dir, {
    force,
    entry,
    log: (line) => console.log(line),
  });
  console.log(`${ensured.built ? "built" : "up to date"}: ${ensured.dir} (${ensured.hash})`);
  const gen = config.val_env_manager.generating_args;
  const sampling = {
    temperature: Number(flag("--temperature") ?? gen?.temperature ?? 0.2),
    top_p: gen?.top_p ?? 0.99,
    top_k: gen?.top_k ?? 100,
  };
  const episodes = Number(flag("--episodes") ?? config.val_env_manager.num_env_groups ?? 128);
  const seed = Number(flag("--seed") ?? config.seed);
  const ev = await evaluateFrozenLake(dir, {
    episodes,
    seed,
    sampling,
    entry,
    maxModelLen: config.sequence_length ?? 1024,
  });
  console.log(
    `validation (${episodes} episodes, seeds ${seed}.., temperature ${sampling.temperature}, ` +
      `top_p ${sampling.top_p}, top_k ${sampling.top_k}): valid format ${
        ev.validRate.toFixed(3)
      }, success ${ev.success.toFixed(3)} (random policy ${ev.randomSuccess.toFixed(3)}), turns ${
        ev.meanTurns.toFixed(2)
      } (random ${ev.randomMeanTurns.toFixed(2)}), actions ${JSON.stringify(ev.actionCounts)}, ${
        ev.seconds.toFixed(1)
      } s`,
  );
}
