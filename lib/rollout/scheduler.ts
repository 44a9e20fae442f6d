/**
 * The rollout scheduler: one asynchronous loop per environment, no lockstep.
 * Each env loop asks its group's queue for an episode, plays it (asking the
 * policy for a turn whenever the env is ready), and hands the trajectory
 * back; `getBatch` returns complete groups as soon as there are enough of
 * them, one group per group queue a round (ROLL's GroupQueueManager), so fast
 * groups cannot crowd slow ones out. Slow envs never stall fast ones.
 *
 * An env that throws or overruns `env_step_timeout` loses the trajectory it
 * was playing (counted in the metrics); the env is rebuilt and the group's
 * place is played again, so the run goes on.
 *
 * @example
 * ```ts ignore
 * const scheduler = new RolloutScheduler({ config, mode: "train", policy, encoder, decodeForEnv });
 * const batch = await scheduler.getBatch(config.rollout_batch_size, 0);
 * console.log(batch.samples.length, batch.metrics["rollout/score/mean"]);
 * await scheduler.close();
 * ```
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";
import { EnvConfigError } from "../../envs/errors.ts";
import { locateEnvError } from "./check_env_entries.ts";
import type { EnvManagerConfig } from "../config/schema/env_manager.ts";
import {
  type ChatEncoder,
  ChatTemplateIncrementError,
  ChatTemplateRenderError,
  missingChatMlTokens,
} from "../model/chat_template.ts";
import { type EnvHandle, type EnvHost, EnvTimeoutError, MainThreadEnvHost } from "./env_host.ts";
import { type EnvSlot, layoutEnvs } from "./env_layout.ts";
import { type EnvLimits, SHARED_ENV_LIMITS } from "./env_limits.ts";
import { WorkerEnvHost } from "./env_worker_host.ts";
import { PolicyError, runEpisode } from "./episode.ts";
import { RolloutConfigError, RolloutError } from "./errors.ts";
import { type CompleteGroup, GroupQueue } from "./group_queue.ts";
import { rolloutMetrics } from "./metrics.ts";
import { incrementConfigError } from "./turn_probe.ts";
import { episodeSeed, groupSeed } from "./seeding.ts";
import type { LostTrajectory, RolloutPolicy, TrajectorySample } from "./types.ts";

/** Options of a {@linkcode RolloutScheduler}. */
export interface RolloutSchedulerOptions {
  /** A finalized config (loadConfig's). */
  config: AgenticConfig;
  /** "train" uses train_env_manager, "val" val_env_manager. */
  mode: "train" | "val";
  policy: RolloutPolicy;
  encoder: ChatEncoder;
  /** Response ids to the text the env receives (ROLL: special tokens kept). */
  decodeForEnv: (ids: readonly number[]) => string;
  /** Where envs run (default: from env_runner and max_env_num_per_worker). */
  host?: EnvHost;
  /** Base seed (default config.seed). */
  seed?: number;
  /** Keep rendered frames in the samples. */
  render?: boolean;
  /** Called with each lost trajectory. */
  onLost?: (lost: LostTrajectory) => void;
  /** The env limits to count against (default: the process's, {@linkcode SHARED_ENV_LIMITS}). */
  envLimits?: EnvLimits;
}

/** What {@linkcode RolloutScheduler.getBatch} returns. */
export interface RolloutBatch {
  samples: TrajectorySample[];
  /** ROLL's metric names (`env/{tag}/...`, `rollout/...`, `scheduler/...`, `time/...`). */
  metrics: Record<string, number>;
  lost: LostTrajectory[];
}

/** Runs the env loops of one env manager and hands out complete groups. */
export class RolloutScheduler {
  readonly config: AgenticConfig;
  readonly mode: "train" | "val";
  readonly manager: EnvManagerConfig;
  readonly slots: readonly EnvSlot[];
  readonly #o: RolloutSchedulerOptions;
  readonly #host: EnvHost;
  /** The policy, noting which requests are in flight (close() aborts them). */
  readonly #policy: RolloutPolicy;
  readonly #inFlight = new Set<string>();
  /** max_env_step_concurrent per tag and use_thread_lock, shared by the process's env loops. */
  readonly #limits: EnvLimits;
  readonly #queues = new Map<number, GroupQueue>();
  readonly #groupSeeds = new Map<number, number>();
  /** Complete groups not yet handed out, per group queue, in episode order. */
  readonly #complete = new Map<number, CompleteGroup[]>();
  /** The group queues that still owe a group in the current round (ROLL's pending gets). */
  #round = new Set<number>();
  #lost: LostTrajectory[] = [];
  #expired = 0;
  #onProgress: (() => void) | null = null;
  #loops: Promise<void>[] | null = null;
  #closed = false;
  #loopError: unknown = null;
  #lossesInARow = 0;
  #getting = false;
  #doneLoops = 0;

  constructor(options: RolloutSchedulerOptions) {
    this.#o = options;
    this.#limits = options.envLimits ?? SHARED_ENV_LIMITS;
    const policy = options.policy;
    this.#policy = {
      generate: async (request) => {
        this.#inFlight.add(request.requestId);
        try {
          return await policy.generate(request);
        } finally {
          this.#inFlight.delete(request.requestId);
        }
      },
    };
    this.config = options.config;
    this.mode = options.mode;
    this.manager = options.mode === "train"
      ? options.config.train_env_manager
      : options.config.val_env_manager;
    this.slots = layoutEnvs(this.manager, options.config.custom_envs);
    const m = this.manager;
    this.#host = options.host ??
      (m.env_runner === "worker"
        ? new WorkerEnvHost(m.env_step_timeout, Math.max(1, m.max_env_num_per_worker))
        : new MainThreadEnvHost(m.env_step_timeout));
    const seed = options.seed ?? options.config.seed;
    const batch = options.mode === "train"
      ? options.config.rollout_batch_size
      : options.config.val_batch_size;
    const perStep = m.max_traj_per_env > 0
      ? m.max_traj_per_env
      : Math.max(1, Math.ceil(batch / Math.max(1, this.slots.length)));
    for (const slot of this.slots) {
      if (this.#queues.has(slot.groupId)) continue;
      this.#groupSeeds.set(slot.groupId, groupSeed(seed, options.mode, slot.groupId));
      this.#queues.set(
        slot.groupId,
        new GroupQueue({
          groupId: slot.groupId,
          groupSize: m.group_size,
          redundancy: m.group_size_redundancy,
          episodesPerStep: perStep,
          asyncRatio: options.mode === "train" ? options.config.async_generation_ratio : 0,
          mode: options.mode,
          onComplete: (g) => {
            const list = this.#complete.get(g.groupId) ?? [];
            list.push(g);
            list.sort((a, b) => a.episodeId - b.episodeId);
            this.#complete.set(g.groupId, list);
            this.#onProgress?.();
          },
        }),
      );
    }
  }

  /** The group size of this scheduler's env manager. */
  get groupSize(): number {
    return this.manager.group_size;
  }

  /**
   * Complete groups totalling `batchSize` trajectories for training step
   * `step`, taken in rounds of one group per group queue (its oldest episode
   * first) and returned sorted by group, then env. `batchSize` must be a
   * multiple of group_size. Groups older than async_generation_ratio steps are
   * discarded; groups beyond the batch wait for the next call.
   */
  async getBatch(batchSize: number, step: number): Promise<RolloutBatch> {
    if (this.#closed) throw new Error("getBatch on a closed RolloutScheduler");
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize % this.groupSize !== 0) {
      throw new RangeError(
        `batch size ${batchSize} is not valid: expected a positive multiple of group_size ` +
          `${this.groupSize} (the scheduler hands out complete groups)`,
      );
    }
    if (this.#getting) {
      throw new Error("getBatch is already running: await it before the next call");
    }
    this.#getting = true;
    try {
      return await this.#getBatch(batchSize, step);
    } finally {
      this.#getting = false;
    }
  }

  async #getBatch(batchSize: number, step: number): Promise<RolloutBatch> {
    const t0 = performance.now();
    for (const q of this.#queues.values()) q.advanceStep(step);
    // (a loop that fails outside its episodes stops the batch with its error: never unhandled)
    this.#loops ??= this.slots.map((slot) =>
      this.#envLoop(slot).catch((e) => {
        this.#loopError ??= e;
        this.#onProgress?.();
      })
    );
    const ratio = this.mode === "train" ? this.config.async_generation_ratio : 0;
    // complete groups left from earlier calls that are now too old go here, as ROLL's
    // advance_step drops them, so the queues they came from give fresh groups this round
    for (const [id, list] of this.#complete) {
      const fresh = list.filter((g) => step - g.createStep <= ratio);
      this.#expired += list.length - fresh.length;
      this.#complete.set(id, fresh);
    }
    const taken: CompleteGroup[] = [];
    let have = 0;
    while (have < batchSize) {
      if (this.#loopError !== null) throw this.#loopError;
      if (this.#closed) throw new Error("The RolloutScheduler was closed while getBatch waited");
      const group = this.#nextGroup();
      if (group === undefined) {
        if (this.mode === "val" && this.#allLoopsDone) break;
        await new Promise<void>((resolve) => (this.#onProgress = resolve));
        this.#onProgress = null;
        continue;
      }
      if (step - group.createStep > ratio) {
        this.#expired++;
        continue;
      }
      taken.push(group);
      have += group.samples.length;
    }
    // a canonical order (groups complete in any order; members finish in any order), so
    // that training on the batch does not depend on timing: a resumed run repeats a run
    taken.sort((a, b) =>
      a.createStep - b.createStep || a.groupId - b.groupId || a.episodeId - b.episodeId
    );
    const samples = taken.flatMap((g) => [...g.samples].sort((a, b) => a.envId - b.envId));
    const lost = this.#lost;
    this.#lost = [];
    const metrics = rolloutMetrics(samples, lost, this.manager.tags);
    metrics["scheduler/expired_groups"] = this.#expired;
    metrics["scheduler/dropped_groups"] = [...this.#queues.values()].reduce(
      (a, q) => a + q.droppedEpisodes,
      0,
    );
    // async training: episodes that expired while still being played, and how many steps old
    // the episodes trained on are (0: started at this step's weights)
    metrics["scheduler/expired_episodes"] = [...this.#queues.values()].reduce(
      (a, q) => a + q.expiredEpisodes,
      0,
    );
    const ages = taken.map((g) => step - g.createStep);
    metrics["scheduler/episode_age/mean"] = ages.length
      ? ages.reduce((a, b) => a + b, 0) / ages.length
      : 0;
    metrics["scheduler/episode_age/max"] = ages.length ? Math.max(...ages) : 0;
    metrics["time/rollout"] = (performance.now() - t0) / 1000;
    this.#expired = 0;
    for (const q of this.#queues.values()) {
      q.droppedEpisodes = 0;
      q.expiredEpisodes = 0;
    }
    return { samples, metrics, lost };
  }

  /**
   * The next group to hand out, as ROLL's GroupQueueManager takes them: in rounds, each group
   * queue giving at most one group a round, its oldest episode first (a newer episode that
   * completes first waits for it), so fast groups cannot crowd slow ones out of a batch. A round
   * left unfinished by one batch goes on in the next. Undefined: wait for progress.
   */
  #nextGroup(): CompleteGroup | undefined {
    // after validation's loops end, whatever completed goes, in order
    if (this.mode === "val" && this.#allLoopsDone) {
      for (const [id, list] of this.#complete) {
        const g = list.shift();
        if (g) {
          this.#round.delete(id);
          return g;
        }
      }
      return undefined;
    }
    for (let pass = 0; pass < 2; pass++) {
      for (const id of [...this.#round].sort((a, b) => a - b)) {
        const list = this.#complete.get(id) ?? [];
        const oldestOpen = this.#queues.get(id)!.oldestOpenEpisode();
        if (list.length === 0 && oldestOpen === undefined) {
          this.#round.delete(id); // nothing to give this round
          continue;
        }
        if (list.length > 0 && (oldestOpen === undefined || list[0]!.episodeId < oldestOpen)) {
          this.#round.delete(id);
          return list.shift();
        }
      }
      if (this.#round.size > 0 || pass === 1) return undefined;
      this.#round = new Set(this.#queues.keys()); // a new round
    }
    return undefined;
  }

  get #allLoopsDone(): boolean {
    return this.#loops !== null && this.#doneLoops === this.#loops.length;
  }

  async #envLoop(slot: EnvSlot): Promise<void> {
    const queue = this.#queues.get(slot.groupId)!;
    const gSeed = this.#groupSeeds.get(slot.groupId)!;
    const m = this.manager;
    const gen = m.generating_args;
    let env: EnvHandle | null = null;
    try {
      while (!this.#closed) {
        const ticket = await queue.next();
        if (ticket === null) break;
        const seed = episodeSeed(gSeed, ticket.episodeId);
        const lose = (reason: LostTrajectory["reason"], e: unknown) => {
          const lost: LostTrajectory = {
            tag: slot.tag,
            groupId: slot.groupId,
            envId: slot.envId,
            episodeId: ticket.episodeId,
            seed,
            reason,
            message: e instanceof Error ? e.message : String(e),
          };
          this.#lost.push(lost);
          this.#o.onLost?.(lost);
          queue.release(ticket.episodeId, true);
          // a systematic failure (every trajectory lost) stops the run instead of spinning
          if (++this.#lossesInARow >= 3 * this.slots.length + 3) {
            this.#loopError ??= new RolloutError(
              `Every trajectory is being lost (${this.#lossesInARow} in a row); the last: ` +
                `${lost.reason} in env ${slot.envId} (${slot.tag}, seed ${seed}): ${lost.message}`,
            );
            this.#onProgress?.();
          }
        };
        try {
          env ??= this.#limits.wrap(
            slot.tag,
            slot.entry,
            await this.#limits.build(
              slot.tag,
              slot.entry,
              () => this.#host.open(slot.envId, slot.entry.env_type, slot.entry.env_config),
            ),
          );
        } catch (e) {
          lose(lossReason(e), e);
          if (e instanceof EnvConfigError) {
            // a config mistake fails every env the same way: stop instead of spinning
            this.#loopError ??= locateEnvError(e, slot.tag) as EnvConfigError;
            this.#onProgress?.();
            break;
          }
          // a crash or a hang: the next episode tries a fresh env (losses in a row stop it)
          continue;
        }
        try {
          const sample = await runEpisode(env, {
            tag: slot.tag,
            entry: slot.entry,
            envId: slot.envId,
            groupId: slot.groupId,
            episodeId: ticket.episodeId,
            groupSeed: gSeed,
            seed,
            createStep: ticket.createStep,
          }, {
            policy: this.#policy,
            encoder: this.#o.encoder,
            decodeForEnv: this.#o.decodeForEnv,
            // validation may have its own budget (val_sequence_length)
            sequenceLength: (this.mode === "val" ? this.config.val_sequence_length : null) ??
              this.config.sequence_length ?? Number.MAX_SAFE_INTEGER,
            maxNewTokens: gen?.max_new_tokens ?? slot.entry.max_tokens_per_step,
            formatPenalty: m.format_penalty,
            render: this.#o.render ?? false,
            isWanted: () => !this.#closed && queue.wants(ticket.episodeId),
          });
          if (sample === null) queue.release(ticket.episodeId, false);
          else {
            this.#lossesInARow = 0;
            queue.put(ticket.episodeId, sample);
          }
        } catch (caught) {
          // a template that cannot extend a conversation fails every multi-turn episode
          const e = caught instanceof ChatTemplateIncrementError
            ? incrementConfigError(
              caught,
              missingChatMlTokens(this.#o.encoder.tokenizer).length === 0,
            )
            : caught instanceof ChatTemplateRenderError // the template, not the env, fails
            ? new RolloutConfigError(caught.message, { cause: caught })
            : caught;
          if (e instanceof RolloutConfigError) {
            // the config cannot work for any env: stop at once
            this.#loopError ??= e;
            this.#onProgress?.();
            break;
          }
          lose(lossReason(e), e);
          // the env may be in any state (or its worker gone): rebuild it
          const broken = env;
          env = null;
          void broken.close();
        }
      }
    } finally {
      await env?.close();
      this.#doneLoops++;
      this.#onProgress?.();
    }
  }

  /** Stops the env loops (in-flight episodes are abandoned) and frees the envs. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // abandoned turns would go on taking engine slots from the next rollout
    for (const id of this.#inFlight) this.#o.policy.abort?.(id);
    for (const q of this.#queues.values()) q.close();
    this.#onProgress?.();
    await this.#host.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** Why a trajectory was lost, from what its episode (or its env's creation) threw. */
function lossReason(e: unknown): LostTrajectory["reason"] {
  return e instanceof PolicyError
    ? "policy_error"
    : e instanceof EnvTimeoutError
    ? "env_timeout"
    : "env_error";
}
