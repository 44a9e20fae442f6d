/**
 * `deno task bench rollout`: the asynchronous, environment-granular rollout
 * scheduler against a lockstep baseline, in the same run, on the same envs,
 * model, prompts and sampling seeds.
 *
 * - async: `RolloutScheduler` — every env asks the engine for its next turn
 *   as soon as its step is done.
 * - lockstep: all envs step together; each turn is one batched generate of
 *   every active env (all requests submitted at once, all awaited), then every
 *   env steps (all awaited) — the slowest step of a turn holds up everyone.
 *
 * Two envs: WebShop with a heavy-tailed per-step delay (lognormal, median
 * 100 ms, sigma 1.5, capped at 5 s: most steps are quick, a few take seconds, like a remote
 * service), and FrozenLake (no delay: steps cost microseconds, so the two
 * should be close). The policy is the tiny default architecture with random
 * weights, so every turn runs to its token budget. Reported: env steps/s and
 * generated tokens/s, async vs lockstep.
 *
 * @module
 */
import { Kernels } from "../ffi/mod.ts";
import type { AgenticConfig } from "../lib/config/agentic_config.ts";
import { loadConfig } from "../lib/config/load_config.ts";
import { GenerationEngine } from "../lib/infer/engine.ts";
import { ChatEncoder, type ChatMessage } from "../lib/model/chat_template.ts";
import type { Tokenizer } from "../lib/model/tokenizer.ts";
import { endOfTurnIds, EnginePolicy } from "../lib/rollout/engine_policy.ts";
import { type EnvHandle, MainThreadEnvHost } from "../lib/rollout/env_host.ts";
import { layoutEnvs } from "../lib/rollout/env_layout.ts";
import { loadPolicyModel } from "../lib/rollout/policy_model.ts";
import { entryTurnMessages } from "../lib/rollout/prompt.ts";
import { RolloutScheduler } from "../lib/rollout/scheduler.ts";
import { episodeSeed, groupSeed, turnSeed } from "../lib/rollout/seeding.ts";
import { type BenchRow, benchRow } from "./_report.ts";

/** Options of {@linkcode benchRollout}. */
export interface RolloutBenchOptions {
  /** A few envs and turns (for tests). */
  smoke?: boolean;
  log?: (line: string) => void;
}

interface Throughput {
  seconds: number;
  steps: number;
  tokens: number;
}

/** One case: an env tag and its overrides. */
interface Case {
  label: string;
  overrides: string[];
}

function cases(smoke: boolean): Case[] {
  const envs = smoke ? 4 : 32;
  const common = [
    `rollout_batch_size=${envs}`,
    `train_env_manager.num_env_groups=${envs}`,
    "train_env_manager.group_size=1",
    `train_env_manager.num_groups_partition=[${envs}]`,
    `max_tokens_per_step=${smoke ? 4 : 8}`,
    "sequence_length=4096",
  ];
  return [
    {
      label: "WebShop, heavy-tailed step delay (lognormal median 100 ms, sigma 1.5, cap 5 s)",
      overrides: [
        ...common,
        "+custom_envs.WebShop=${custom_env.WebShop}",
        "train_env_manager.tags=[WebShop]",
        `max_actions_per_traj=${smoke ? 2 : 5}`,
        "+env_configs.WebShop.env_config.step_delay={distribution: lognormal, median_ms: 100, " +
        "sigma: 1.5, cap_ms: 5000, seed: 7}",
      ],
    },
    {
      label: "FrozenLake (no delay)",
      overrides: [
        ...common,
        "train_env_manager.tags=[FrozenLake]",
        `max_actions_per_traj=${smoke ? 2 : 5}`,
      ],
    },
  ];
}

/** The async scheduler's throughput on one batch. */
async function runAsync(
  config: AgenticConfig,
  engine: GenerationEngine,
  tokenizer: Tokenizer,
): Promise<Throughput> {
  const policy = new EnginePolicy(
    engine,
    { temperature: 1, topP: 1, topK: -1 },
    endOfTurnIds(tokenizer),
  );
  await using scheduler = new RolloutScheduler({
    config,
    mode: "train",
    policy,
    encoder: new ChatEncoder(tokenizer),
    decodeForEnv: (ids) => tokenizer.decode(ids),
  });
  const t0 = performance.now();
  const batch = await scheduler.getBatch(config.rollout_batch_size, 0);
  const seconds = (performance.now() - t0) / 1000;
  if (batch.lost.length > 0) {
    throw new Error(`async rollout lost ${batch.lost.length} trajectories`);
  }
  const steps = batch.samples.reduce((a, s) => a + s.stepRewards.length, 0);
  return { seconds, steps, tokens: policy.generatedTokens };
}

/** Lockstep: every env's turn generated in one batch, then every env stepped. */
async function runLockstep(
  config: AgenticConfig,
  engine: GenerationEngine,
  tokenizer: Tokenizer,
): Promise<Throughput> {
  const encoder = new ChatEncoder(tokenizer);
  const stops = endOfTurnIds(tokenizer);
  const host = new MainThreadEnvHost(config.train_env_manager.env_step_timeout);
  const slots = layoutEnvs(config.train_env_manager, config.custom_envs);
  const envs: EnvHandle[] = [];
  for (const s of slots) envs.push(await host.open(s.envId, s.entry.env_type, s.entry.env_config));
  interface Live {
    i: number;
    seed: number;
    observation: string;
    messages: ChatMessage[];
    tokens: number[];
  }
  const t0 = performance.now();
  let steps = 0;
  let tokens = 0;
  let live: Live[] = await Promise.all(envs.map(async (env, i) => {
    const seed = episodeSeed(groupSeed(config.seed, "train", slots[i]!.groupId), 0);
    return { i, seed, observation: (await env.reset(seed)).observation, messages: [], tokens: [] };
  }));
  for (let turn = 0; live.length > 0; turn++) {
    // one batched generate for every active env
    const responses = await Promise.all(live.map((e) => {
      const entry = slots[e.i]!.entry;
      const added = entryTurnMessages(entry, envs[e.i]!.instruction, e.observation, turn);
      const prompt = encoder.turnIds(e.messages, e.tokens, added);
      e.messages.push(...added);
      e.tokens.push(...prompt);
      return engine.generate({
        prompt_token_ids: e.tokens,
        max_new_tokens: Math.min(
          entry.max_tokens_per_step,
          config.sequence_length! - e.tokens.length,
        ),
        temperature: 1,
        seed: turnSeed(e.seed, slots[e.i]!.envId, turn),
        stop_token_ids: stops,
      });
    }));
    // then every env steps; the turn ends when the slowest step does
    const results = await Promise.all(live.map((e, j) => {
      const ids = responses[j]!.token_ids;
      tokens += ids.length;
      e.tokens.push(...ids);
      e.messages.push(encoder.assistantMessage(ids));
      return envs[e.i]!.step(tokenizer.decode(ids));
    }));
    steps += results.length;
    live = live.filter((e, j) => {
      const r = results[j]!;
      e.observation = r.observation;
      return !r.terminated && !r.truncated && turn + 1 < slots[e.i]!.entry.max_steps;
    });
  }
  const seconds = (performance.now() - t0) / 1000;
  await host.close();
  return { seconds, steps, tokens };
}

/** Runs the rollout benchmark and returns its rows. */
export async function benchRollout(options: RolloutBenchOptions = {}): Promise<BenchRow[]> {
  const smoke = options.smoke ?? false;
  const log = options.log ?? (() => {});
  using kernels = Kernels.open();
  using policyModel = await loadPolicyModel(kernels, null);
  const rows: BenchRow[] = [];
  for (const c of cases(smoke)) {
    const { config } = await loadConfig({ overrides: c.overrides });
    const engineOptions = {
      maxRunningRequests: config.rollout_batch_size,
      maxModelLen: config.sequence_length!,
      seed: 0,
    };
    // best of two runs each, alternating
    const rate = (t: Throughput) => t.steps / t.seconds;
    let a: Throughput | null = null;
    let l: Throughput | null = null;
    for (let rep = 0; rep < (smoke ? 1 : 2); rep++) {
      await using e1 = new GenerationEngine(policyModel.model, engineOptions);
      const lock = await runLockstep(config, e1, policyModel.tokenizer);
      await using e2 = new GenerationEngine(policyModel.model, engineOptions);
      const asy = await runAsync(config, e2, policyModel.tokenizer);
      log(
        `${c.label}: async ${asy.steps} steps / ${asy.seconds.toFixed(2)} s, lockstep ` +
          `${lock.steps} steps / ${lock.seconds.toFixed(2)} s`,
      );
      if (a === null || rate(asy) > rate(a)) a = asy;
      if (l === null || rate(lock) > rate(l)) l = lock;
    }
    if (a === null || l === null) throw new Error("no benchmark run");
    const n = config.rollout_batch_size;
    rows.push(
      benchRow(
        `${c.label}, ${n} envs: env steps`,
        "steps/s",
        a.steps / a.seconds,
        "lockstep",
        l.steps / l.seconds,
      ),
      benchRow(
        `${c.label}, ${n} envs: generated tokens`,
        "tokens/s",
        a.tokens / a.seconds,
        "lockstep",
        l.tokens / l.seconds,
      ),
    );
  }
  return rows;
}

if (import.meta.main) {
  const { writeReport } = await import("./_report.ts");
  await writeReport("rollout", await benchRollout({ log: (l) => console.log(`  ${l}`) }));
}
