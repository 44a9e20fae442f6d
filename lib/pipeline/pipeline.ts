/**
 * The AgenticPipeline run loop (seed 001), trajectory-wise: for each step,
 * validation every `eval_steps` (the base model's level at step 0), a train
 * rollout of `rollout_batch_size` trajectories in complete groups, old (and
 * reference) log-probs, reward normalization and advantages, the actor's
 * PPO update after `critic_warmup`, model_update to the inference engine,
 * metrics to the trackers and the HTML report, and a checkpoint every
 * `save_steps` and at the end. `resume_from_checkpoint` continues a run
 * exactly where its last checkpoint left it.
 *
 * One process: actor_train and actor_infer share the model's memory (the
 * engine reads the weights the trainer writes; model_update is a version
 * bump), the reference is a frozen copy loaded only when a KL term needs it.
 *
 * @module
 */
import { Rng } from "../../envs/random.ts";
import { writeEpisodeFrames } from "../../envs/frames/episode_writer.ts";
import {
  advantageSettingsFromConfig,
  type AlgoSample,
  answerOnlyAdvantages,
  type BatchAdvantages,
  type BatchAdvantageSettings,
  computeBatchAdvantages,
  computeTurnGigpoAdvantages,
  computeTurnStepReinforceAdvantages,
  type KlController,
  klControllerFromConfig,
  klControllerFromJSON,
} from "../algo/mod.ts";
import type { AgenticConfig } from "../config/agentic_config.ts";
import { joinPieces, pieceAdvantages, trainingPieces } from "./pieces.ts";
import { actorSettingsOf, criticSettingsOf } from "./trainer_settings.ts";
import { chatEncoderFor } from "../rollout/chat_setup.ts";
import { prepareModelPath } from "../model/builtin_models.ts";
import { endOfTurnIds, EnginePolicy, samplingOf } from "../rollout/engine_policy.ts";
import { loadPolicyModel, type PolicyModel } from "../rollout/policy_model.ts";
import { RolloutScheduler } from "../rollout/scheduler.ts";
import { checkEnvEntries } from "../rollout/check_env_entries.ts";
import type { LostTrajectory, TrajectorySample } from "../rollout/types.ts";
import { capSequenceLengths } from "../rollout/context_limit.ts";
import { contextLength, contextLengthName } from "../model/config.ts";
import { weightLag } from "../rollout/metrics.ts";
import { engineOfSize, trainEngineSize } from "./engine_size.ts";
import { probeTurnIncrements } from "../rollout/turn_probe.ts";
import { runValidation } from "../rollout/validation.ts";
import { createTracker, type Tracker } from "../track/tracker.ts";
import { type MetricsRow, readJsonlMetrics } from "../track/jsonl.ts";
import { openPipelineKernels, pipelineDevice, rolePrecision } from "./device.ts";
import { writeHtmlReport } from "../track/html_report.ts";
import { Progress } from "../track/progress.ts";
import { ActorTrainer, sequenceLogprobs } from "../train/actor.ts";
import { CriticTrainer, sequenceValues, valueMetrics } from "../train/critic.ts";
import { distinctSequences, mergeDuplicateSamples, mergesExactly } from "../train/dedup.ts";
import { adjustBatch } from "../train/batch_adjust.ts";
import {
  type CheckpointInfo,
  latestCheckpoint,
  readCheckpointJson,
  removeIncompleteCheckpoints,
  resolveResume,
  saveCheckpoint,
  setAsideCheckpointsAfter,
} from "../train/checkpoint_dir.ts";
import { describePreviousRun } from "./previous_run.ts";
import { acquireRunLock } from "./run_lock.ts";
import { configChanges, resumeChangeNotes } from "./config_changes.ts";
import { CheckpointError } from "../model/safetensors.ts";
import { RolloutError } from "../rollout/errors.ts";
import { writeRefusal } from "../util/write_refusal.ts";
import { isFile, isFolder } from "../util/fs_probe.ts";
import { makeOutputFolders } from "./output_folders.ts";
import { lrAt, type LrScheduleType, resolveWarmupSteps } from "../train/lr_schedule.ts";
import { inferBatching } from "../train/micro_batches.ts";
import { AdamW, adamwOptionsOf } from "../train/optimizer.ts";

/** Options of {@linkcode runPipeline}. */
export interface PipelineOptions {
  /** Status lines (default: console.error). */
  log?: (line: string) => void;
  /** Stop after this many steps of this run (tests; the schedule still spans max_steps). */
  stopAfter?: number;
}

/** What a run did. */
export interface PipelineSummary {
  /** Steps completed in all (including those of a resumed run). */
  steps: number;
  /** The last metrics logged. */
  lastMetrics: Record<string, number>;
  /** Validation success per step, per tag: `val/env/{tag}/success`. */
  history: MetricsRow[];
  /** The checkpoints written by this run. */
  checkpoints: string[];
  outputDir: string;
}

/** The trainer state a checkpoint holds besides the model and the optimizer. */
interface TrainerState {
  /** The next step to run. */
  step: number;
  klController: unknown;
  seed: number;
}

const STATE_FILE = "trainer_state.json";
/** The resolved config of the run that saved a checkpoint (compared on resume). */
const CONFIG_FILE = "agentic_config.json";

/**
 * How far the sampler's log-probs are from the trainer's recomputed ones on the
 * generated tokens (verl's rollout_probs_diff): near zero unless sampling
 * settings (temperature, top-p/k) or a numeric mismatch separate the two.
 */
function rolloutProbsDiff(
  samples: readonly TrajectorySample[],
  old: readonly Float32Array[],
): Record<string, number> {
  let sum = 0, max = 0, n = 0;
  samples.forEach((s, i) => {
    const o = old[i]!;
    for (let t = 0; t < s.tokens.length; t++) {
      if (!s.responseMask[t]) continue;
      const d = Math.abs(Math.exp(s.logprobs[t]!) - Math.exp(o[t]!));
      sum += d, n++;
      if (d > max) max = d;
    }
  });
  return {
    "training/rollout_probs_diff_mean": n ? sum / n : 0,
    "training/rollout_probs_diff_max": max,
  };
}

function toAlgo(
  s: TrajectorySample,
  oldLogprobs: Float32Array,
  ref?: Float32Array,
  values?: Float32Array,
): AlgoSample {
  return {
    responseMask: s.responseMask,
    score: s.score,
    trajGroupId: s.trajGroupId,
    tag: s.tag,
    logprobs: oldLogprobs,
    ...(ref ? { refLogprobs: ref } : {}),
    ...(values ? { values } : {}),
  };
}

/** Runs the pipeline of `config` to `max_steps` (or `stopAfter`). */
export async function runPipeline(
  config: AgenticConfig,
  options: PipelineOptions = {},
): Promise<PipelineSummary> {
  const log = options.log ?? ((l: string) => console.error(l));
  const outputDir = config.output_dir ?? "./output";
  // the token-level KL needs the reference even at coefficient 0 (ROLL loads it, and logs the KL)
  const needsRef = config.use_kl_loss || config.add_token_level_kl;
  const useCritic = config.adv_estimator === "gae";
  const device = pipelineDevice(config, useCritic, needsRef);
  if (device.notice) log(device.notice);
  // a mistake in the config of an env the run opens fails before the model loads
  await checkEnvEntries(config, [
    ...config.train_env_manager.tags,
    ...(config.eval_steps > 0 ? config.val_env_manager.tags : []),
  ]);
  using kernels = openPipelineKernels(device);
  log(`device: ${kernels.backend}${device.kind === "cuda" ? ` (GPU ${device.index})` : ""}`);
  const logDir = config.tracker_kwargs?.log_dir;
  // (removed again where still empty if the run fails: a failed start leaves no empty folders)
  using folders = makeOutputFolders([
    ["output_dir", outputDir],
    ["tracker_kwargs.log_dir", typeof logDir === "string" ? logDir : null],
    ["render_save_dir", config.render_save_dir],
  ]);
  // one run at a time here: taken before the checks below read what the folder holds
  using _lock = acquireRunLock(outputDir, { log });
  if (config.resume_from_checkpoint === false) {
    const previous = describePreviousRun(outputDir);
    if (previous !== null) {
      const continues = latestCheckpoint(outputDir) !== null
        ? "set resume_from_checkpoint=true to continue it"
        : "set resume_from_checkpoint=true to restart it there (it has no checkpoint: its " +
          "metrics are replaced)";
      throw new CheckpointError(
        `output_dir ${outputDir} already holds a run (${previous}): ${continues}, or choose ` +
          "another output_dir (or delete that folder) to start afresh",
        { file: outputDir },
      );
    }
  }
  // what interrupted saves left (a set-aside complete copy is put back first); a damaged
  // checkpoint folder is not a save's leftover: it stays, and is not resumed from
  for (const dir of await removeIncompleteCheckpoints(outputDir, { keepDamaged: true })) {
    log(`removed ${dir}: left by an interrupted save`);
  }
  const resume = resolveResume(config.resume_from_checkpoint, outputDir);
  if (resume.notice) log(resume.notice);
  if (resume.checkpoint) {
    // the run goes on from this step: later checkpoints here belong to the history it replaces
    for (const dir of await setAsideCheckpointsAfter(outputDir, resume.checkpoint.step)) {
      log(`set aside ${dir}: after the step resumed from`);
    }
  }
  const from: CheckpointInfo | null = resume.checkpoint;
  // pretrain (built first when it names a built-in model that is missing), for whichever role
  // starts from it: the actor and critic of a fresh run, the reference always
  let pretrained: Promise<string | null> | undefined;
  const pretrain = () => pretrained ??= prepareModelPath(config.pretrain ?? null, log);
  const modelPath = from ? `${from.dir}/model` : await pretrain();
  using actor: PolicyModel = await loadPolicyModel(kernels, modelPath, {
    seed: config.seed,
    ...rolePrecision(config.actor_train.model_args.dtype, device.kind),
  });
  log(`actor: ${actor.source}${from ? ` (resuming at step ${from.step})` : ""}`);
  const model = actor.model;
  const tok = actor.tokenizer;
  const encoder = chatEncoderFor(tok, config, (line) => log(`note: ${line}`));
  const decodeForEnv = (ids: readonly number[]) => tok.decode(ids);
  // a template that cannot extend a conversation fails now, not at its first <think> turn
  probeTurnIncrements(encoder, config, [
    ...config.train_env_manager.tags,
    ...(config.eval_steps > 0 ? config.val_env_manager.tags : []),
  ]);

  // reference: only when a KL term reads it (needsRef, above)
  using reference = needsRef
    ? await loadPolicyModel(kernels, await pretrain(), {
      seed: config.seed,
      ...rolePrecision(config.reference.model_args.dtype, device.kind),
    })
    : null;

  // critic: a value head on the same backbone (gae only)
  if (from && useCritic && !isFolder(`${from.dir}/critic`)) {
    throw new CheckpointError(
      `${from.dir} holds no critic (the run that saved it did not train one), but ` +
        "adv_estimator gae needs it: resume with that run's adv_estimator, or start afresh",
      { file: from.dir },
    );
  }
  using critic = useCritic
    ? await loadPolicyModel(
      kernels,
      from ? `${from.dir}/critic` : await pretrain(),
      {
        seed: config.seed,
        valueHead: true,
        ...rolePrecision(config.critic.model_args.dtype, device.kind),
      },
    )
    : null;
  const criticArgs = config.critic.training_args;
  const criticOptimizer = critic ? new AdamW(critic.model, adamwOptionsOf(criticArgs)) : null;
  const criticTrainer = critic && criticOptimizer
    ? new CriticTrainer(critic.model, criticOptimizer, criticSettingsOf(config))
    : null;
  const criticSchedule = {
    learningRate: criticArgs.learning_rate,
    warmupSteps: warmupOf(criticArgs, config.max_steps),
    totalSteps: config.max_steps,
    type: (criticArgs.lr_scheduler_type ?? "constant") as LrScheduleType,
  };

  const train = config.actor_train;
  const ta = train.training_args;
  const optimizer = new AdamW(model, adamwOptionsOf(ta));
  const actorSettings = actorSettingsOf(config);
  const trainer = new ActorTrainer(model, optimizer, actorSettings);
  const schedule = {
    learningRate: ta.learning_rate,
    warmupSteps: warmupOf(ta, config.max_steps),
    totalSteps: config.max_steps,
    type: (ta.lr_scheduler_type ?? "constant") as LrScheduleType,
  };
  const advSettings = advantageSettingsFromConfig(config);
  let klController: KlController = klControllerFromConfig(config);
  let startStep = 0;
  if (from) {
    optimizer.load(`${from.dir}/optimizer`);
    criticOptimizer?.load(`${from.dir}/critic_optimizer`);
    const statePath = `${from.dir}/${STATE_FILE}`;
    const state = readCheckpointJson(statePath);
    const bad = (key: string, what: string) =>
      new CheckpointError(`${statePath}: '${key}' ${what}`, { file: statePath, key });
    if (typeof state.step !== "number" || !Number.isInteger(state.step) || state.step < 0) {
      throw bad("step", `must be an integer >= 0, got ${JSON.stringify(state.step)}`);
    }
    startStep = state.step;
    // the run that saved it: settings that differ now make the continuation inexact
    const savedConfig = `${from.dir}/${CONFIG_FILE}`;
    if (isFile(savedConfig)) {
      const changes = configChanges(
        readCheckpointJson(savedConfig),
        JSON.parse(JSON.stringify(config)),
      );
      if (changes.length > 0) {
        log(
          `resuming with ${changes.length} config change(s) from the run that saved ${from.dir}:`,
        );
        for (const line of changes.slice(0, 12)) log(`  ${line}`);
        if (changes.length > 12) log(`  ... and ${changes.length - 12} more`);
        for (const note of resumeChangeNotes(changes, from.dir, needsRef)) log(`note: ${note}`);
      }
    }
    if (startStep === config.max_steps) {
      log(
        `note: ${from.dir} is at max_steps ${config.max_steps}: nothing left to train (raise ` +
          "max_steps to go on)",
      );
    }
    if (startStep > config.max_steps) {
      throw new CheckpointError(
        `${from.dir} is at step ${startStep}, past max_steps ${config.max_steps}: raise ` +
          "max_steps to train on from it",
        { file: from.dir },
      );
    }
    try {
      klController = klControllerFromJSON(state.klController);
    } catch (e) {
      throw bad("klController", `is not valid: ${e instanceof Error ? e.message : e}`);
    }
  }

  const size = trainEngineSize(config, contextLength(model.config));
  await using engine = engineOfSize(model, size, tok, config.seed);
  const stops = endOfTurnIds(tok, encoder.template);
  const trainPolicy = new EnginePolicy(
    engine,
    samplingOf(config.train_env_manager.generating_args),
    stops,
  );
  const valPolicy = new EnginePolicy(
    engine,
    samplingOf(config.val_env_manager.generating_args),
    stops,
  );
  // the episodes' token budgets stop at the model's context, where the engine stops
  const capped = capSequenceLengths(
    config,
    contextLength(model.config),
    config.eval_steps > 0 ? ["sequence_length", "val_sequence_length"] : ["sequence_length"],
    contextLengthName(model.config),
  );
  capped.notices.forEach((n) => log(`note: ${n}`));
  await using scheduler = new RolloutScheduler({
    config: capped.config,
    mode: "train",
    policy: trainPolicy,
    encoder,
    decodeForEnv,
  });

  await Deno.mkdir(outputDir, { recursive: true });
  const tracker: Tracker = await createTracker(
    config.track_with,
    config.tracker_kwargs ?? {},
    outputDir,
    // resuming: the rows after the checkpoint go (all of them when there was none to resume)
    from
      ? { resumeStep: startStep - 1, warn: log }
      : config.resume_from_checkpoint === true
      ? { resumeStep: -1, warn: log }
      : { warn: log },
  );
  const history: MetricsRow[] = from ? await readJsonlMetrics(`${outputDir}/metrics.jsonl`) : [];
  const progress = new Progress();
  const checkpoints: string[] = [];
  // a resumed run's clock goes on from the interrupted run's last step
  const before = history.findLast((r) => Number.isFinite(r["time/elapsed"]))?.["time/elapsed"] ?? 0;
  const t0 = performance.now() - before * 1000;
  let lastMetrics: Record<string, number> = {};
  const endStep = Math.min(config.max_steps, startStep + (options.stopAfter ?? Infinity));

  // lost trajectories (an env or the policy failed): how many, and the first one's reason
  const noteLost = (where: string, lost: readonly LostTrajectory[]) => {
    const first = lost[0];
    if (!first) return;
    log(
      `  ${where} lost ${lost.length} trajectories; the first: ${first.reason} in ` +
        `${first.tag} env ${first.envId}: ${first.message}`,
    );
  };

  // optimizer steps skipped for a non-finite gradient norm (the weights were left unchanged)
  const noteSkipped = (step: number, metrics: Record<string, number>) => {
    for (const role of ["actor", "critic"]) {
      const skipped = metrics[`${role}/skipped_updates`] ?? 0;
      if (skipped === 0) continue;
      log(
        `  step ${step}: ${skipped} of ${metrics[`${role}/num_updates`]} ${role} updates ` +
          `skipped: the gradient norm was not finite (a NaN or Inf loss); weights unchanged`,
      );
    }
  };

  const validate = async (step: number) => {
    const tv = performance.now();
    progress.start("validation", config.val_batch_size);
    const val = await runValidation({
      config: capped.config,
      policy: valPolicy,
      encoder,
      decodeForEnv,
      render: !!config.render_save_dir,
    });
    progress.done();
    noteLost("validation", val.lost);
    if (config.render_save_dir) {
      for (const s of val.samples.slice(0, 8)) {
        if (s.frames?.length) {
          await writeEpisodeFrames(`${config.render_save_dir}/step_${step}`, s.trajId, s.frames);
        }
      }
    }
    return { ...val.metrics, "time/step_val": (performance.now() - tv) / 1000 };
  };

  const save = async (nextStep: number, metrics: Record<string, number>) => {
    const info = await saveOrSay(
      outputDir,
      nextStep,
      () =>
        saveCheckpoint(outputDir, nextStep, async (dir) => {
          await actor.save(model, `${dir}/model`);
          await Deno.mkdir(`${dir}/optimizer`, { recursive: true });
          await optimizer.save(`${dir}/optimizer`);
          if (critic && criticOptimizer) {
            await actor.save(critic.model, `${dir}/critic`);
            await Deno.mkdir(`${dir}/critic_optimizer`, { recursive: true });
            await criticOptimizer.save(`${dir}/critic_optimizer`);
          }
          const state: TrainerState = {
            step: nextStep,
            klController: klController.toJSON(),
            seed: config.seed,
          };
          await Deno.writeTextFile(`${dir}/${STATE_FILE}`, JSON.stringify(state, null, 2));
          await Deno.writeTextFile(`${dir}/${CONFIG_FILE}`, JSON.stringify(config, null, 2));
        }, {
          // max_ckpt_to_keep: that many of the highest steps stay (0 keeps every one)
          ...(config.max_ckpt_to_keep > 0 ? { keepLastN: config.max_ckpt_to_keep } : {}),
          // the validation success of each tag, when this step validated
          meta: Object.fromEntries(
            Object.entries(metrics).filter(([k]) => /^val\/env\/[^/]+\/success$/.test(k)),
          ),
        }),
    );
    checkpoints.push(info.dir);
    log(`checkpoint: ${info.dir}`);
  };

  try {
    for (let step = startStep; step < endStep; step++) {
      const ts = performance.now();
      const metrics: Record<string, number> = {};
      if (config.eval_steps > 0 && step % config.eval_steps === 0) {
        Object.assign(metrics, await validate(step));
      }

      // rollout
      const tr = performance.now();
      const tokensBefore = trainPolicy.generatedTokens;
      const batch = await scheduler.getBatch(config.rollout_batch_size, step);
      noteLost(`step ${step}'s rollout`, batch.lost);
      Object.assign(metrics, batch.metrics);
      Object.assign(metrics, weightLag(batch.samples, engine.weightVersion));
      metrics["time/step_rollout"] = (performance.now() - tr) / 1000;
      const generated = trainPolicy.generatedTokens - tokensBefore;

      // old and reference log-probs, advantages; the training sequences are the episodes'
      // conversations, or the turns of step-wise episodes (whose advantages are computed per
      // turn with step_sample_reward step, else per episode over its pieces laid end to end;
      // either way laid end to end per episode, then cut back into the pieces)
      const tt = performance.now();
      const pieces = trainingPieces(batch.samples);
      const seqs = pieces.map((p) => batch.samples[p.episode]!.tokens.subarray(p.begin, p.end));
      // step-wise groups repeat (state, response) pairs: each distinct sequence runs once
      const { distinct, index } = distinctSequences(seqs);
      metrics["actor/distinct_sequences"] = distinct.length / Math.max(1, seqs.length);
      const perPiece = (lp: Float32Array[]) => index.map((i) => lp[i]!);
      // forward-only passes micro-batch by each role's inference settings (infer_batch_size)
      const oldPieces = perPiece(sequenceLogprobs(model, distinct, inferBatching(train)));
      const refPieces = reference
        ? perPiece(sequenceLogprobs(reference.model, distinct, inferBatching(config.reference)))
        : null;
      const old = joinPieces(batch.samples, pieces, oldPieces);
      const ref = refPieces ? joinPieces(batch.samples, pieces, refPieces) : null;
      // critic values per training sequence (a step-wise turn's from its own prompt); GAE runs
      // within each turn (step_sample_reward step) or over the episode's pieces laid end to end
      const valuePieces = critic
        ? perPiece(sequenceValues(critic.model, distinct, inferBatching(config.critic)))
        : null;
      const values = valuePieces ? joinPieces(batch.samples, pieces, valuePieces) : null;
      Object.assign(metrics, rolloutProbsDiff(batch.samples, old));
      const algoSamples = batch.samples.map((s, i) => toAlgo(s, old[i]!, ref?.[i], values?.[i]));
      const turnLevel = config.adv_estimator === "gigpo" ||
        config.adv_estimator === "step_reinforce";
      const stepSamples = config.step_sample_reward === "step" &&
        batch.samples.some((s) => s.stepStarts !== undefined);
      const adv = turnLevel
        ? turnCredit(config, advSettings, algoSamples, batch.samples, klController)
        : stepSamples
        ? pieceAdvantages(
          batch.samples,
          pieces,
          {
            old: oldPieces,
            ref: refPieces,
            values: valuePieces,
          },
          advSettings,
          klController,
        )
        : computeBatchAdvantages(algoSamples, advSettings, klController);
      const advantages = config.policy_gradient_tokens === "answer"
        ? answerOnlyAdvantages(batch.samples, adv.advantages)
        : adv.advantages;
      if (criticTrainer && values && valuePieces) {
        Object.assign(metrics, valueMetrics(values, batch.samples.map((s) => s.responseMask)));
        const rng = new Rng(config.seed, 0xc41c + step);
        Object.assign(
          metrics,
          criticTrainer.train(
            pieces.map((p, j) => ({
              tokens: seqs[j]!,
              responseMask: batch.samples[p.episode]!.responseMask.subarray(p.begin, p.end),
              returns: adv.returns[p.episode]!.subarray(p.begin, p.end),
              oldValues: valuePieces[j]!,
            })),
            lrAt(step, criticSchedule),
            (n) => permutation(rng, n),
          ),
        );
      }
      Object.assign(metrics, adv.metrics);
      // over the generated tokens, zeros included (ROLL's masked mean)
      let advSum = 0, advCount = 0;
      advantages.forEach((a, i) => {
        const mask = batch.samples[i]!.responseMask;
        for (let t = 0; t < a.length; t++) if (mask[t]) (advSum += a[t]!, advCount++);
      });
      metrics["critic/advantages/mean"] = advCount ? advSum / advCount : 0;
      metrics["critic/score/mean"] = batch.samples.reduce((a, s) => a + s.score, 0) /
        Math.max(1, batch.samples.length);

      // actor update, then model_update (the engine shares the weights: a version bump)
      if (step >= config.critic_warmup) {
        const rng = new Rng(config.seed, 0x7a11 + step);
        const lr = lrAt(step, schedule);
        const actorSamples = pieces.map((p, j) => {
          const s = batch.samples[p.episode]!;
          return {
            tokens: seqs[j]!,
            responseMask: s.responseMask.subarray(p.begin, p.end),
            advantages: advantages[p.episode]!.subarray(p.begin, p.end),
            oldLogprobs: oldPieces[j]!,
            ...(refPieces ? { refLogprobs: refPieces[j]! } : {}),
          };
        });
        // whole mini-batches (batch_adjust_mode), then identical sequences train once, weighted
        // (exact for these aggregations within a mini-batch; over several, a merged sample's
        // copies train together instead of spread at random, the same update in expectation)
        const adjusted = adjustBatch(
          actorSamples.map((sample, j) => ({ sample, id: index[j]! })),
          actorSettings.miniBatchSize,
          config.batch_adjust_mode,
          (n) => rng.int(n),
        );
        metrics["system/batch_add_count"] = adjusted.added;
        metrics["system/batch_remove_count"] = adjusted.removed;
        const trainSamples = adjusted.samples.map((a) => a.sample);
        const merged = mergesExactly(config.loss_agg_mode)
          ? mergeDuplicateSamples(trainSamples, adjusted.samples.map((a) => a.id)).samples
          : trainSamples;
        metrics["actor/merged_fraction"] = merged.length / Math.max(1, trainSamples.length);
        Object.assign(metrics, trainer.train(merged, lr, (n) => permutation(rng, n)));
        await engine.updateWeights(model);
      }
      metrics["time/step_train"] = (performance.now() - tt) / 1000;
      const seconds = (performance.now() - ts) / 1000;
      metrics["time/step_total"] = seconds;
      metrics["time/elapsed"] = (performance.now() - t0) / 1000;
      const trainTokens = batch.samples.reduce((a, s) => a + s.tokens.length, 0);
      metrics["system/tps"] = trainTokens / Math.max(1e-9, metrics["time/step_train"]);
      metrics["system/generated_tps"] = generated / Math.max(1e-9, metrics["time/step_rollout"]);

      noteSkipped(step, metrics);
      tracker.log(step, metrics);
      history.push({ step, ...metrics });
      lastMetrics = metrics;
      if (config.logging_steps > 0 && step % config.logging_steps === 0) {
        log(stepLine(step, config.max_steps, metrics, config.train_env_manager.tags));
        const sample = batch.samples[0];
        if (sample) log(transcript(sample));
      }
      await writeHtmlReport(`${outputDir}/report.html`, history, {
        runName: config.exp_name,
        wallTimeSeconds: metrics["time/elapsed"],
      });
      const next = step + 1;
      if ((config.save_steps > 0 && next % config.save_steps === 0) || next === config.max_steps) {
        await save(next, metrics);
      }
    }
    // the final level
    if (endStep === config.max_steps && config.eval_steps > 0) {
      const metrics = await validate(endStep);
      tracker.log(endStep, metrics);
      history.push({ step: endStep, ...metrics });
      lastMetrics = metrics;
      log(stepLine(endStep, config.max_steps, metrics, config.train_env_manager.tags));
      await writeHtmlReport(`${outputDir}/report.html`, history, {
        runName: config.exp_name,
        wallTimeSeconds: (performance.now() - t0) / 1000,
      });
    }
  } finally {
    await tracker.close();
    optimizer.dispose();
    criticOptimizer?.dispose();
  }
  folders.keep();
  return { steps: endStep, lastMetrics, history, checkpoints, outputDir };
}

/**
 * Per-turn credit (gigpo, step_reinforce): each turn's reward, then ROLL's step-wise treatment
 * of it (reward_clip, the token-level KL, gamma, whitening, advantage_clip).
 */
function turnCredit(
  config: AgenticConfig,
  advSettings: BatchAdvantageSettings,
  algoSamples: readonly AlgoSample[],
  episodes: readonly { stepRewards: number[]; stepStates: string[] }[],
  klController: KlController,
): BatchAdvantages {
  const samples = algoSamples.map((a, i) => ({
    ...a,
    stepRewards: episodes[i]!.stepRewards,
    stepStates: episodes[i]!.stepStates,
  }));
  const perTurn = {
    gamma: advSettings.gamma,
    rewardClip: advSettings.rewardClip ?? null,
    addTokenLevelKl: advSettings.addTokenLevelKl ?? false,
    ...(advSettings.klPenalty !== undefined && { klPenalty: advSettings.klPenalty }),
    whitenRewards: advSettings.whitenRewards ?? false,
    whitenAdvantages: advSettings.whitenAdvantages ?? false,
    advantageClip: advSettings.advantageClip ?? null,
  };
  if (config.adv_estimator === "step_reinforce") {
    return computeTurnStepReinforceAdvantages(samples, {
      ...perTurn,
      normalization: advSettings.rewardNormalization,
      stepGamma: config.step_reward_gamma,
    }, klController);
  }
  return computeTurnGigpoAdvantages(samples, {
    ...perTurn,
    episodeNormalization: advSettings.rewardNormalization,
    stepGamma: config.step_reward_gamma,
    episodeWeight: config.episode_reward_weight,
    stepWeight: config.step_reward_weight,
    stepMethod: config.reward_normalization.method,
  }, klController);
}

/** The warmup steps of a role's training_args: warmup_steps, else warmup_ratio of the run. */
function warmupOf(
  args: { warmup_steps?: number; warmup_ratio?: number },
  totalSteps: number,
): number {
  return resolveWarmupSteps({
    warmupSteps: args.warmup_steps ?? 0,
    warmupRatio: args.warmup_ratio ?? 0,
    totalSteps,
  });
}

/** A seeded Fisher-Yates permutation of 0..n-1. */
function permutation(rng: Rng, n: number): number[] {
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [p[i], p[j]] = [p[j]!, p[i]!];
  }
  return p;
}

/** One status line: step, validation and train success, score, losses, times. */
function stepLine(
  step: number,
  maxSteps: number,
  m: Record<string, number>,
  tags: readonly string[],
): string {
  const f = (v: number | undefined, d = 3) => v === undefined ? "-" : v.toFixed(d);
  const parts = [`step ${step}/${maxSteps}`];
  for (const tag of tags) {
    if (m[`val/env/${tag}/success`] !== undefined) {
      parts.push(`val ${tag} success ${f(m[`val/env/${tag}/success`])}`);
    }
    if (m[`env/${tag}/success`] !== undefined) {
      parts.push(`train success ${f(m[`env/${tag}/success`])}`);
    }
  }
  if (m["rollout/score/mean"] !== undefined) parts.push(`score ${f(m["rollout/score/mean"])}`);
  if (m["actor/pg_loss"] !== undefined) parts.push(`pg_loss ${f(m["actor/pg_loss"], 4)}`);
  if (m["time/step_rollout"] !== undefined) {
    parts.push(
      `time rollout ${f(m["time/step_rollout"], 1)} s, train ${f(m["time/step_train"], 1)} s` +
        (m["time/step_val"] !== undefined ? `, val ${f(m["time/step_val"], 1)} s` : ""),
    );
  }
  return parts.join(" | ");
}

/** A sample's conversation, for the log every logging_steps. */
function transcript(s: TrajectorySample): string {
  const turns = s.messages
    .filter((m) => m.role === "assistant")
    .map((m) => JSON.stringify(m.content))
    .join(" ");
  return `  sample ${s.trajId}: score ${s.score.toFixed(2)}, ${s.endReason}, responses ${turns}`;
}

/**
 * `save()`, with a failure (a full disk, a refused write) said as the save of step `step`'s
 * checkpoint in `outputDir`, and that the ones saved before it are intact; agentrl's own errors
 * pass unchanged.
 */
export async function saveOrSay<T>(
  outputDir: string,
  step: number,
  save: () => Promise<T>,
): Promise<T> {
  try {
    return await save();
  } catch (e) {
    if (e instanceof CheckpointError || e instanceof RolloutError || !(e instanceof Error)) throw e;
    throw new RolloutError(
      `Saving the checkpoint of step ${step} in ${outputDir}/checkpoints failed: ` +
        `${writeRefusal(e, `${outputDir}/checkpoints`)} (the checkpoints saved before it are ` +
        "intact, and resume_from_checkpoint=true goes on from the latest)",
    );
  }
}
