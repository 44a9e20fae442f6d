/**
 * `agentrl rollout`: runs multi-turn episodes of one environment locally with a
 * random, human, scripted or `model:PATH` policy and prints every turn as the trajectory-wise
 * env manager would prompt a model (ROLL's `agent_system_template` and
 * `agent_template` with `{turn_idx}`, `{observation}`, `{actions_left}`,
 * `{max_response_length}` filled in), or, for a step-wise entry
 * (`env_manager_cls: step`), a fresh prompt per turn with `{env_instruction}`,
 * `{history}` (the last `history_length` steps), `{current_observation}` and the rest.
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";
import { loadConfig, type LoadConfigOptions } from "../config/load_config.ts";
import { parseOverrideValue } from "../config/override_value.ts";
import { CustomEnv } from "../config/schema/env_manager.ts";
import type { CfgObject } from "../config/types.ts";
import { didYouMean } from "../util/did_you_mean.ts";
import { ActionParser } from "../../envs/action_parser.ts";
import { checkResetResult, checkRgbFrame, checkStepResult } from "../../envs/check_results.ts";
import { EnvConfigError } from "../../envs/errors.ts";
import { writeEpisodeFrames } from "../../envs/frames/episode_writer.ts";
import { aggregateEpisodeMetrics } from "../../envs/metrics.ts";
import { Rng } from "../../envs/random.ts";
import { createEnv, isEnvModulePath, listEnvTypes } from "../../envs/registry.ts";
import type { Env, RgbFrame, StepMetrics } from "../../envs/types.ts";
import type { ChatMessage } from "../model/chat_template.ts";
import { templateSetupOf } from "../rollout/chat_setup.ts";
import { withTimeout } from "../rollout/env_host.ts";
import { CheckpointError } from "../model/safetensors.ts";
import { TokenizerLoadError } from "../model/tokenizer.ts";
import { ModelPolicy } from "./model_policy.ts";
import {
  DEFAULT_AGENT_SYSTEM_TEMPLATE as FALLBACK_SYSTEM,
  DEFAULT_AGENT_TEMPLATE as FALLBACK_TEMPLATE,
  fillTemplate,
} from "../rollout/prompt.ts";
import { writeRefusal } from "../util/write_refusal.ts";

/** Thrown to end the process with a status and a message (see `ExitRequest` in commands.ts). */
export type ExitFn = (status: number, message: string) => Error;

/** The env's RGB frame, checked; an exit (status 1) naming `when` if it cannot render. */
function renderFrame(env: Env, when: string, exit: ExitFn): RgbFrame {
  try {
    return checkRgbFrame(env.render("rgb"));
  } catch (e) {
    throw exit(1, `The environment could not render ${when}: ${errorText(e)}`);
  }
}

/** The options of `agentrl rollout` as commander parses them. */
export interface RolloutFlags {
  configPath?: string;
  configName?: string;
  env?: string;
  envConfig?: string[];
  policy?: string;
  episodes?: string;
  seed?: string;
  render?: string;
  json?: boolean;
}

/** The summary `--json` prints. */
export interface RolloutSummary {
  env: string;
  policy: string;
  seed: number;
  episodes: number;
  /** Fraction of episodes whose last step reported success. */
  success_rate: number;
  /** Mean episode return (sum of step rewards). */
  mean_reward: number;
  /** Mean actions per episode. */
  mean_actions: number;
  /** Mean over episodes of the fraction of valid actions (ROLL's env/{tag}/action_is_valid). */
  valid_action_rate: number;
}

type Policy = { kind: "random" | "human" | "scripted" } | { kind: "model"; path: string };

/** The environment entry a tag or type resolves to. */
interface ResolvedEnv {
  tag: string;
  entry: CustomEnv;
}

/** Runs the command; every user mistake is thrown as `exit(2, message)`. */
export async function runRollout(
  flags: RolloutFlags,
  overrides: string[],
  exit: ExitFn,
): Promise<void> {
  const usage = (message: string) => exit(2, message);
  if (!flags.env) {
    throw usage(
      "--env is required: a custom_envs tag (e.g. FrozenLake, SimpleSokoban) or an env_type " +
        `(${listEnvTypes().map((t) => t.type).join(", ")})`,
    );
  }
  const episodes = parseIntFlag("--episodes", flags.episodes ?? "1", 1, usage);
  const seed = parseIntFlag("--seed", flags.seed ?? "0", Number.MIN_SAFE_INTEGER, usage);
  if (seed > Number.MAX_SAFE_INTEGER - (episodes - 1)) { // (seed + episodes would round)
    throw usage(
      `--seed ${seed} with --episodes ${episodes} runs past the largest seed ` +
        `(${Number.MAX_SAFE_INTEGER}): episode N plays seed ${seed} + N - 1`,
    );
  }
  const policy = parsePolicy(flags.policy ?? "random", usage);
  const cliConfig = parseEnvConfigFlags(flags.envConfig ?? [], usage);

  const options: LoadConfigOptions = {
    ...(flags.configPath !== undefined ? { configPath: flags.configPath } : {}),
    ...(flags.configName !== undefined ? { configName: flags.configName } : {}),
    overrides,
  };
  const loaded = await loadConfig(options);
  // --env-config takes every argument after it: a config override placed there lands in it
  const topKey = (a: string) => a.split("=")[0]!.replace(/^[+~]+/, "").split(".")[0]!;
  const misplacedMessage = (arg: string) =>
    `--env-config took '${arg}', a config override: put overrides before --env-config ` +
    "(it takes every argument after it)";
  const isConfigKey = (a: string) =>
    Object.hasOwn(loaded.config, topKey(a)) || Object.hasOwn(loaded.variables, topKey(a));
  const misplaced = (flags.envConfig ?? []).find((a) =>
    a.includes(".") && Object.hasOwn(loaded.config, topKey(a))
  );
  if (misplaced !== undefined) throw usage(misplacedMessage(misplaced));
  const { tag, entry } = resolveEnv(flags.env, loaded.config, loaded.variables, cliConfig, usage);
  const envConfig = mergeDeep(entry.env_config ?? {}, cliConfig);

  let env: Env;
  try {
    env = await createEnv(entry.env_type, envConfig);
  } catch (e) {
    if (!(e instanceof EnvConfigError)) throw e;
    // an unknown env key that is a config key: an override placed after --env-config
    const override = (flags.envConfig ?? []).find((a) =>
      isConfigKey(a) && e.message.includes(`Unknown env_config key '${topKey(a)}'`)
    );
    throw usage(override !== undefined ? misplacedMessage(override) : e.format());
  }
  // the env calls' time limit and the invalid-action penalty, as the env managers apply them
  const stepTimeout = loaded.config.train_env_manager.env_step_timeout;
  const formatPenalty = loaded.config.train_env_manager.format_penalty;
  const parser = new ActionParser(
    typeof envConfig.action_pattern === "string" ? { actionPattern: envConfig.action_pattern } : {},
  );
  if (policy.kind === "random" && !env.sampleAction) {
    throw usage(`env_type '${entry.env_type}' has no sampleAction(): --policy random needs it`);
  }
  if (policy.kind === "scripted" && !env.oracleAction) {
    throw usage(`env_type '${entry.env_type}' has no oracleAction(): --policy scripted needs it`);
  }

  await using model = policy.kind === "model"
    ? await loadModelPolicy(policy.path, loaded.config, seed, exit)
    : undefined;

  // With --json, stdout carries only the summary; a human still sees the game on stderr.
  const print = flags.json
    ? (policy.kind === "human" ? (s: string) => console.error(s) : () => {})
    : (s: string) => console.log(s);
  const rng = new Rng(seed, 0x5eed);
  const random = () => rng.float();
  const lines = policy.kind === "human" ? stdinLines() : undefined;
  const system = entry.agent_system_template ?? FALLBACK_SYSTEM;
  const template = entry.agent_template ?? FALLBACK_TEMPLATE;
  // --env-config max_steps=N moves the turn limit too (ROLL keeps the two equal).
  const maxTurns = typeof cliConfig.max_steps === "number" && Number.isInteger(cliConfig.max_steps)
    ? cliConfig.max_steps
    : entry.max_steps;
  // ROLL's step-wise (GiGPO) env manager: a fresh prompt every turn with the last steps.
  const stepWise = /step/i.test(entry.env_manager_cls ?? "");
  const historyLength = entry.history_length ?? 5;

  const returns: number[] = [];
  const successes: number[] = [];
  const actions: number[] = [];
  const validRates: number[] = [];
  let stoppedEarly = false;
  if (flags.render) { // before the first episode: a folder it cannot make fails at once
    try {
      Deno.mkdirSync(flags.render, { recursive: true });
    } catch (e) {
      throw usage(`--render ${flags.render} cannot write there: ${writeRefusal(e, flags.render)}`);
    }
  }
  episodes: for (let ep = 0; ep < episodes; ep++) {
    const episodeSeed = seed + ep;
    print(`=== episode ${ep + 1}/${episodes}: ${tag} (${entry.env_type}), seed ${episodeSeed} ===`);
    const frames: RgbFrame[] = [];
    const metrics: StepMetrics[] = [];
    let total = 0;
    let observation: string;
    const history: string[] = [];
    const conversation: ChatMessage[] = [];
    try {
      observation = checkResetResult(
        await withTimeout(
          Promise.resolve().then(() => env.reset(episodeSeed)),
          stepTimeout,
          "reset",
        ),
      ).observation;
    } catch (e) {
      throw exit(1, `The environment failed to reset (seed ${episodeSeed}): ${errorText(e)}`);
    }
    if (flags.render) frames.push(renderFrame(env, `after the reset of seed ${episodeSeed}`, exit));
    for (let turn = 1; turn <= maxTurns; turn++) {
      const recent = history.slice(Math.max(0, history.length - historyLength));
      const user = fillTemplate(template, {
        turn_idx: turn,
        observation,
        actions_left: maxTurns - turn + 1,
        max_response_length: entry.max_tokens_per_step,
        env_instruction: env.instruction,
        step_count: turn - 1,
        history_length: recent.length,
        history: recent.join(", "),
        current_step: turn,
        current_observation: observation,
      });
      if (stepWise) {
        print(`--- turn ${turn}: prompt messages (step-wise: a fresh prompt each turn) ---`);
        print(`[system]\n${system}`);
        print(`[user]\n${user}`);
      } else if (turn === 1) {
        print("--- turn 1: prompt messages (the model sees these) ---");
        print(`[system]\n${system}`);
        print(`[user]\n${env.instruction}\n${user}`);
      } else {
        print(`--- turn ${turn}: prompt = the conversation so far, then ---`);
        print(`[user]\n${user}`);
      }
      let response: string;
      if (model) {
        // Trajectory-wise: the conversation so far; step-wise: a fresh prompt.
        if (stepWise || turn === 1) {
          conversation.length = 0;
          conversation.push({ role: "system", content: system });
          conversation.push({
            role: "user",
            content: stepWise ? user : `${env.instruction}\n${user}`,
          });
        } else conversation.push({ role: "user", content: user });
        if (turn === 1 || stepWise) {
          print(`--- prompt text (chat template) ---\n${model.render(conversation)}`);
        }
        try {
          const reply = await model.reply(conversation, entry.max_tokens_per_step);
          response = reply.text;
          print(`(${reply.promptTokens} prompt tokens, ${reply.completionTokens} generated)`);
        } catch (e) {
          print(`the model could not answer: ${errorText(e)}; the episode ends`);
          break;
        }
        conversation.push({ role: "assistant", content: response });
      } else if (policy.kind === "human") {
        print(
          `your action (${env.actionDescription ?? "a reply"}; a bare word is wrapped for you):`,
        );
        const line = await lines!.next();
        if (line.done) {
          console.error(`stdin closed: stopped after ${returns.length} complete episode(s)`);
          stoppedEarly = true;
          break episodes;
        }
        const text = line.value.trim();
        response = text.includes("<") ? text : parser.format(text) ?? text;
      } else {
        const scripted = policy.kind === "scripted";
        try {
          response = scripted
            ? env.oracleAction!() ?? env.sampleAction?.(random) ?? ""
            : env.sampleAction!(random);
        } catch (e) {
          throw exit(
            1,
            `The environment's ${scripted ? "oracleAction" : "sampleAction"} failed on turn ` +
              `${turn} of seed ${episodeSeed}: ${errorText(e)}`,
          );
        }
      }
      print(`--- turn ${turn}: response [assistant] ---\n${response}`);
      let step;
      try {
        step = checkStepResult(
          await withTimeout(
            Promise.resolve().then(() => env.step(response)),
            stepTimeout,
            "step",
          ),
        );
      } catch (e) {
        throw exit(
          1,
          `The environment failed on turn ${turn} of seed ${episodeSeed}: ${errorText(e)}`,
        );
      }
      const valid = step.info.metrics.action_is_valid;
      const said = typeof step.info.action_content === "string"
        ? step.info.action_content
        : response;
      // Every step enters the history (ROLL's step manager keeps only invalid ones: a known bug).
      history.push(
        `(step: ${turn}, observation: ${observation}, action: ${said}` +
          `${valid ? "" : " (not a valid action)"}, reward: ${fmt(step.reward)})`,
      );
      observation = step.observation;
      // the env manager's format_penalty when the env charged none, as in training
      const penalty = !step.info.metrics.action_is_valid && !step.info.metrics.format_penalty
        ? formatPenalty
        : 0;
      total += step.reward + penalty;
      metrics.push(penalty ? { ...step.info.metrics, format_penalty: penalty } : step.info.metrics);
      if (flags.render) {
        frames.push(renderFrame(env, `after turn ${turn} of seed ${episodeSeed}`, exit));
      }
      const m = metrics.at(-1)!;
      print(
        `--- turn ${turn}: result ---\nreward ${
          fmt(step.reward + penalty)
        }, terminated ${step.terminated}, ` +
          `truncated ${step.truncated}\nmetrics: action_is_valid=${m.action_is_valid} ` +
          `action_is_effective=${m.action_is_effective} success=${m.success} ` +
          `format_penalty=${m.format_penalty}`,
      );
      if (step.terminated || step.truncated) break;
    }
    const agg = aggregateEpisodeMetrics(metrics);
    returns.push(total);
    successes.push(agg.success);
    actions.push(agg.num_actions);
    validRates.push(agg.action_is_valid);
    print(`[final state]\n${observation}`);
    print(
      `=== episode ${ep + 1} done: success ${agg.success === 1}, return ${fmt(total)}, ` +
        `${agg.num_actions} actions ===\n`,
    );
    if (flags.render) {
      const name = `episode_${String(ep).padStart(4, "0")}_seed_${episodeSeed}`;
      try {
        const written = await writeEpisodeFrames(flags.render, name, frames);
        print(`frames: ${written.pngs.length} PNG in ${flags.render}/${name}/, GIF ${written.gif}`);
      } catch (e) {
        if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
          throw usage(
            `--render ${flags.render} cannot write there: ${writeRefusal(e, flags.render)}`,
          );
        }
        throw exit(1, `Writing frames to ${flags.render} failed: ${errorText(e)}`);
      }
    }
  }
  try {
    await env.close();
  } catch (e) {
    console.error(`note: the environment's close() failed: ${errorText(e)}`);
  }

  const mean = (xs: number[]) => xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
  const summary: RolloutSummary = {
    env: tag,
    policy: flags.policy ?? "random",
    seed,
    episodes: returns.length,
    success_rate: mean(successes),
    mean_reward: mean(returns),
    mean_actions: mean(actions),
    valid_action_rate: mean(validRates),
  };
  if (flags.json) {
    console.log(JSON.stringify(summary, null, 2));
  } else {
    console.log(
      `${summary.episodes} episode(s)${stoppedEarly ? " (stopped early)" : ""}: ` +
        `success rate ${fmt(summary.success_rate)}, mean reward ${fmt(summary.mean_reward)}, ` +
        `mean actions ${fmt(summary.mean_actions)}, valid action rate ` +
        `${fmt(summary.valid_action_rate)}`,
    );
  }
}

export { fillTemplate };

function resolveEnv(
  name: string,
  config: AgenticConfig,
  variables: CfgObject,
  cliConfig: Record<string, unknown>,
  usage: (m: string) => Error,
): ResolvedEnv {
  const own = config.custom_envs as Record<string, CustomEnv>;
  if (own[name]) return { tag: name, entry: own[name]! };
  const library = variables.custom_env;
  if (library && typeof library === "object" && !Array.isArray(library) && name in library) {
    const parsed = CustomEnv.safeParse((library as CfgObject)[name]);
    if (!parsed.success) {
      throw usage(`custom_env.${name} is not a valid environment entry: ${parsed.error.message}`);
    }
    return { tag: name, entry: parsed.data };
  }
  const types = listEnvTypes().map((t) => t.type);
  if (types.includes(name) || isEnvModulePath(name)) {
    const maxSteps = typeof cliConfig.max_steps === "number"
      ? cliConfig.max_steps
      : typeof variables.max_actions_per_traj === "number"
      ? variables.max_actions_per_traj
      : 10;
    const text = (v: unknown) => (typeof v === "string" ? v : null);
    return {
      tag: name,
      entry: CustomEnv.parse({
        env_type: name,
        env_config: {},
        max_steps: maxSteps,
        max_tokens_per_step: typeof variables.max_tokens_per_step === "number"
          ? variables.max_tokens_per_step
          : config.custom_envs[Object.keys(config.custom_envs)[0] ?? ""]?.max_tokens_per_step ??
            128,
        agent_system_template: text(variables.agent_system_template),
        agent_template: text(variables.agent_template),
      }),
    };
  }
  const tags = [
    ...new Set([
      ...Object.keys(own),
      ...(library && typeof library === "object" ? Object.keys(library) : []),
    ]),
  ];
  throw usage(
    `Unknown --env '${name}': expected a custom_envs tag (${tags.join(", ") || "none"}) ` +
      `or an env_type (${types.join(", ")})` +
      (didYouMean(name, [...tags, ...types]) ? `; ${didYouMean(name, [...tags, ...types])}` : ""),
  );
}

function parseIntFlag(
  flag: string,
  text: string,
  min: number,
  usage: (m: string) => Error,
): number {
  const n = /^-?\d+$/.test(text.trim()) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw usage(
      `${flag} '${text}' is not valid: expected an integer from ${min} to ` +
        `${Number.MAX_SAFE_INTEGER}`,
    );
  }
  return n;
}

function parsePolicy(text: string, usage: (m: string) => Error): Policy {
  if (text === "random" || text === "human" || text === "scripted") return { kind: text };
  if (text.startsWith("model:")) {
    const path = text.slice("model:".length);
    if (path === "") throw usage("--policy model:PATH needs a path after 'model:'");
    return { kind: "model", path };
  }
  const hint = didYouMean(text, ["random", "human", "scripted", "model:PATH"]);
  throw usage(
    `--policy '${text}' is not valid: expected random, human, scripted or model:PATH` +
      (hint ? `; ${hint}` : ""),
  );
}

/** `--env-config k=v` values, typed like Hydra overrides; `a.b=v` sets a nested key. */
function parseEnvConfigFlags(
  items: readonly string[],
  usage: (m: string) => Error,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const item of items) {
    const eq = item.indexOf("=");
    const key = eq > 0 ? item.slice(0, eq).trim() : "";
    if (!/^[A-Za-z_]\w*(\.\w+)*$/.test(key)) {
      throw usage(`--env-config '${item}' is not valid: expected key=value, e.g. size=6`);
    }
    const value = parseOverrideValue(item.slice(eq + 1));
    const path = key.split(".");
    let node = out;
    for (const part of path.slice(0, -1)) {
      const next = node[part];
      node = (node[part] = next && typeof next === "object" ? next : {}) as Record<string, unknown>;
    }
    node[path[path.length - 1]!] = value;
  }
  return out;
}

function mergeDeep(
  base: Record<string, unknown>,
  extra: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = structuredClone(base);
  for (const [k, v] of Object.entries(extra)) {
    const b = out[k];
    out[k] = v && typeof v === "object" && !Array.isArray(v) && b && typeof b === "object" &&
        !Array.isArray(b)
      ? mergeDeep(b as Record<string, unknown>, v as Record<string, unknown>)
      : v;
  }
  return out;
}

/** Lines of standard input, read lazily (works for a terminal and for a pipe). */
async function* stdinLines(): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of Deno.stdin.readable) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, nl).replace(/\r$/, "");
      buffer = buffer.slice(nl + 1);
    }
  }
  buffer += decoder.decode();
  if (buffer.length > 0) yield buffer;
}

/** At most 4 decimals, no trailing zeros: -0.9999999999999999 prints as -1. */
function fmt(x: number): string {
  return String(Number(x.toFixed(4)) || 0);
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Loads the model:PATH policy; a bad folder is a clean error (exit 1). */
async function loadModelPolicy(
  path: string,
  config: AgenticConfig,
  seed: number,
  exit: ExitFn,
): Promise<ModelPolicy> {
  const g = config.val_env_manager.generating_args ?? config.actor_infer.generating_args;
  const template = templateSetupOf(config, (line) => console.error(`note: ${line}`));
  try {
    return await ModelPolicy.load(
      path,
      {
        temperature: g?.temperature ?? 0,
        top_p: g?.top_p ?? 1,
        top_k: g?.top_k ?? 0,
        do_sample: g?.do_sample ?? true,
        ...(g?.stop_strings?.length
          ? { stop_strings: g.stop_strings, include_stop_str_in_output: true }
          : {}),
      },
      config.val_sequence_length ?? config.sequence_length ?? 4096,
      seed,
      template,
      (line) => console.error(`note: ${line}`),
    );
  } catch (e) {
    // a folder that is not a model folder is the user's to fix (status 2, as in train and eval)
    const folderProblem = e instanceof CheckpointError || e instanceof TokenizerLoadError;
    // the same words as eval and train (ModelLoadError), whatever the loader's message starts with
    const why = errorText(e);
    const reason = why.startsWith(`${path}: `) ? why.slice(path.length + 2) : why;
    throw exit(folderProblem ? 2 : 1, `Cannot load the model ${path}: ${reason}`);
  }
}
