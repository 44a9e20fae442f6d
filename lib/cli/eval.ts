/**
 * `agentrl eval`: loads a policy (a checkpoint folder, else the config's
 * `pretrain`, else the tiny default with random weights), plays the
 * validation episodes through the generation engine and prints the metrics
 * (a table, or JSON with --json); with `render_save_dir` set, every episode
 * is written as PNG frames and a GIF.
 *
 * @module
 */
import { writeEpisodeFrames } from "../../envs/frames/episode_writer.ts";
import { loadConfig, type LoadConfigOptions } from "../config/load_config.ts";
import { chatEncoderFor } from "../rollout/chat_setup.ts";
import { isBuiltinModelPath, prepareModelPath } from "../model/builtin_models.ts";
import { endOfTurnIds, EnginePolicy, samplingOf } from "../rollout/engine_policy.ts";
import { RandomPolicy } from "../rollout/random_policy.ts";
import { engineOfSize, evalEngineSize } from "../pipeline/engine_size.ts";
import { loadPolicyModel } from "../rollout/policy_model.ts";
import { capSequenceLengths } from "../rollout/context_limit.ts";
import { contextLength, contextLengthName } from "../model/config.ts";
import { probeTurnIncrements } from "../rollout/turn_probe.ts";
import { runValidation } from "../rollout/validation.ts";
import { openPipelineKernels, pipelineDevice } from "../pipeline/device.ts";
import { makeOutputFolders } from "../pipeline/output_folders.ts";
import { checkEnvEntries } from "../rollout/check_env_entries.ts";
import type { ExitFn } from "./rollout.ts";

/** The options of `agentrl eval` as commander parses them. */
export interface EvalFlags {
  configPath?: string;
  configName?: string;
  checkpoint?: string;
  policy?: string;
  json?: boolean;
}

/** Runs the command. */
export async function runEval(flags: EvalFlags, overrides: string[], exit: ExitFn): Promise<void> {
  const options: LoadConfigOptions = {
    ...(flags.configPath !== undefined ? { configPath: flags.configPath } : {}),
    ...(flags.configName !== undefined ? { configName: flags.configName } : {}),
    overrides,
  };
  const { config, notices } = await loadConfig(options);
  for (const n of notices) console.error(`note: ${n}`);
  const val = config.val_env_manager;
  const kind = flags.policy ?? (val.llm_proxy.proxy_type === "random" ? "random" : "model");
  if (kind !== "model" && kind !== "random") {
    throw exit(2, `--policy '${kind}' is not valid: expected model or random`);
  }
  // (removed again where still empty if the evaluation fails)
  using folders = makeOutputFolders([["render_save_dir", config.render_save_dir]]);
  await checkEnvEntries(config, val.tags); // (before the model loads)
  const path = flags.checkpoint ?? await evalModelPath(config.pretrain ?? null, kind);
  // the inference roles' device_mapping, as in training (workers=cuda: GPU 0)
  using kernels = openPipelineKernels(pipelineDevice(config, false, false));
  using policyModel = await loadPolicyModel(kernels, path);
  const { model, tokenizer } = policyModel;
  console.error(`model: ${policyModel.source}`);
  const gen = val.generating_args!;
  // (the random policy generates nothing: no engine, and no KV cache to fit in memory)
  await using engine = kind === "model"
    ? engineOfSize(
      model,
      evalEngineSize(config, contextLength(model.config)),
      tokenizer,
      config.seed,
    )
    : null;
  const encoder = chatEncoderFor(tokenizer, config, (line) => console.error(`note: ${line}`));
  const enginePolicy = engine === null
    ? null
    : new EnginePolicy(engine, samplingOf(gen), endOfTurnIds(tokenizer, encoder.template));
  const policy = enginePolicy ?? new RandomPolicy(
    tokenizer,
    encoder.turnEndTokenId() ?? tokenizer.tokenToId("<|im_end|>") ?? null,
  );
  console.error(
    `policy: ${kind === "random" ? "random legal actions (the env's sampleAction)" : "the model"}`,
  );
  const t0 = performance.now();
  // validation's budget: val_sequence_length (sequence_length when unset, by finalize)
  const capped = capSequenceLengths(
    config,
    contextLength(model.config),
    ["val_sequence_length"],
    contextLengthName(model.config),
  );
  capped.notices.forEach((n) => console.error(`note: ${n}`));
  probeTurnIncrements(encoder, config, config.val_env_manager.tags);
  const result = await runValidation({
    config: capped.config,
    policy,
    encoder,
    decodeForEnv: (ids) => tokenizer.decode(ids),
    render: config.render_save_dir !== null && config.render_save_dir !== undefined,
  });
  const seconds = (performance.now() - t0) / 1000;
  if (result.samples.length === 0) { // every episode was lost: an env or the policy fails
    const first = result.lost[0];
    throw exit(
      1,
      "No validation episode finished" +
        (first
          ? ` (${result.lost.length} lost); the first: ${first.reason}: ${first.message}`
          : ""),
    );
  }
  const metrics = { ...result.metrics };
  metrics["val/time/rollout"] = seconds;
  if (enginePolicy !== null) {
    metrics["val/system/generated_tokens_per_s"] = enginePolicy.generatedTokens / seconds;
  }
  if (config.render_save_dir) {
    for (const s of result.samples) {
      if (!s.frames || s.frames.length === 0) continue;
      await writeEpisodeFrames(config.render_save_dir, `val_${s.trajId}`, s.frames);
    }
    console.error(`frames: ${result.samples.length} episodes in ${config.render_save_dir}/`);
  }
  folders.keep();
  if (flags.json) {
    console.log(JSON.stringify(metrics, null, 2));
    return;
  }
  const width = Math.max(...Object.keys(metrics).map((k) => k.length));
  console.log(`${result.samples.length} validation episodes in ${seconds.toFixed(1)} s`);
  for (const [k, v] of Object.entries(metrics).sort(([a], [b]) => a.localeCompare(b))) {
    console.log(`  ${k.padEnd(width)}  ${Number.isInteger(v) ? v : v.toFixed(4)}`);
  }
}

/**
 * The model eval loads: `pretrain`, built first when it is a missing built-in base model,
 * except for the random policy, which needs only a tokenizer: a built-in model that is not
 * there yet is not built for it (the tiny default has the same tokenizer).
 */
async function evalModelPath(pretrain: string | null, kind: "model" | "random") {
  if (kind === "random" && pretrain !== null && isBuiltinModelPath(pretrain)) {
    try {
      if (Deno.statSync(`${pretrain}/config.json`).isFile) return pretrain;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return null;
  }
  return await prepareModelPath(pretrain);
}
