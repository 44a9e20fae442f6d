import { REWARD_GROUPINGS } from "../algo/reward_normalization.ts";
import { didYouMean } from "../util/did_you_mean.ts";
import {
  type EnvManagerKind,
  envManagerKind,
  groupFilterClass,
  type Mapping,
  workerClass,
} from "./compat.ts";
import { ENGINE_DESCRIPTIONS, STRATEGY_ENGINES } from "./compat.ts";
import { ConfigError, ConfigErrors, describeValue } from "./errors.ts";
import type { OriginMap } from "./origins.ts";
import type { AgenticConfig } from "./agentic_config.ts";
import { formatKeyPath } from "./key_path.ts";
import type { KeySegment } from "./types.ts";

const ROLES = ["actor_train", "actor_infer", "critic", "reference"] as const;
const MANAGERS = ["train_env_manager", "val_env_manager"] as const;

/**
 * Applies ROLL's cross-field rules and derivations to a parsed config, in place:
 * lengths, env-group partitions, batch-size divisibility, generation settings,
 * model paths, reward-normalization defaults and the reference/recompute flags.
 * Returns one-line notices for names that run as something else here.
 */
export function finalizeConfig(config: AgenticConfig, origins: OriginMap): string[] {
  const errors: ConfigError[] = [];
  const notices: string[] = [];
  const fail = (
    path: KeySegment[],
    message: string,
    extra: { found?: unknown; expected?: string; hint?: string | undefined } = {},
  ) => {
    errors.push(
      new ConfigError(message, {
        key: formatKeyPath(path),
        origin: origins.find(path),
        found: "found" in extra ? describeValue(extra.found) : undefined,
        expected: extra.expected,
        hint: extra.hint,
      }),
    );
  };
  const check = <T>(path: KeySegment[], m: Mapping<T>): T | undefined => {
    if (m.ok) return m.value;
    fail(path, m.reason, { hint: m.hint });
    return undefined;
  };

  applyRunDir(config);

  if (!(config.max_steps > 0)) {
    fail(["max_steps"], "max_steps must be positive", {
      found: config.max_steps,
      expected: "> 0 (ROLL's -1, 'as many as the data gives', has no meaning for endless envs)",
    });
  }

  // Lengths (BaseConfig): sequence_length = prompt_length + response_length when unset.
  if (config.sequence_length === null) {
    if (config.response_length === null) {
      fail(["sequence_length"], "Set sequence_length (or response_length with prompt_length)", {
        expected: "a positive token count, e.g. sequence_length: 8192",
      });
    } else config.sequence_length = config.response_length + (config.prompt_length ?? 0);
  }
  if ((config.val_prompt_length === null) !== (config.val_sequence_length === null)) {
    fail(["val_sequence_length"], "val_prompt_length and val_sequence_length must be set together");
  }
  for (const key of ["sequence_length", "val_sequence_length"] as const) { // (before val's default)
    const n = config[key];
    if (n !== null && n < 2) {
      fail([key], `${key} must hold a prompt token and a generated one`, {
        found: n,
        expected: "at least 2 tokens",
      });
    }
  }
  config.val_prompt_length ??= config.prompt_length;
  config.val_sequence_length ??= config.sequence_length;

  // Env managers: older spellings, partitions, tags, managers.
  for (const name of MANAGERS) {
    const m = config[name];
    if (m.env_groups !== null) {
      if (origins.get([name, "num_env_groups"]) && m.num_env_groups !== m.env_groups) {
        fail(
          [name, "env_groups"],
          "env_groups and num_env_groups disagree (they are one setting)",
          { found: m.env_groups },
        );
      }
      m.num_env_groups = m.env_groups;
      m.env_groups = null;
    }
    if (m.n_groups !== null) {
      m.num_groups_partition ??= m.n_groups;
      m.n_groups = null;
    }
    if (m.num_groups_partition === null) {
      // The seeds: "if not set, all env names divide nums equally".
      const base = Math.floor(m.num_env_groups / m.tags.length);
      const extra = m.num_env_groups % m.tags.length;
      m.num_groups_partition = m.tags.map((_, i) => base + (i < extra ? 1 : 0));
    } else if (m.num_groups_partition.length !== m.tags.length) {
      fail([name, "num_groups_partition"], "num_groups_partition needs one count per tag", {
        found: m.num_groups_partition,
        expected: `${m.tags.length} counts (tags: ${m.tags.join(", ")})`,
      });
    } else {
      const sum = m.num_groups_partition.reduce((a, b) => a + b, 0);
      if (sum !== m.num_env_groups) {
        fail(
          [name, "num_groups_partition"],
          `num_groups_partition adds up to ${sum}, not num_env_groups`,
          {
            found: m.num_groups_partition,
            expected: `counts that add up to num_env_groups (${m.num_env_groups})`,
          },
        );
      }
    }
    m.tags.forEach((tag, i) => {
      if (!(tag in config.custom_envs)) {
        fail([name, "tags", i], `Tag '${tag}' is not defined in custom_envs`, {
          expected: `one of: ${
            Object.keys(config.custom_envs).join(", ") || "(custom_envs is empty)"
          }`,
          hint: didYouMean(tag, Object.keys(config.custom_envs)),
        });
      }
    });
    check([name, "worker_cls"], workerClass(m.worker_cls));
    check([name, "group_filter_cls"], groupFilterClass(m.group_filter_cls));
    if (m.max_env_num_per_worker <= 0) {
      m.max_env_num_per_worker = m.num_env_groups * (m.group_size + m.group_size_redundancy);
    }
  }

  const kinds = new Map<string, EnvManagerKind>();
  for (const [tag, env] of Object.entries(config.custom_envs)) {
    const kind = check(
      ["custom_envs", tag, "env_manager_cls"],
      envManagerKind(env.env_manager_cls),
    );
    if (kind) {
      kinds.set(tag, kind);
      env.env_manager_cls = kind;
    }
  }
  // step_reinforce needs step-wise samples; gigpo runs on either kind (on trajectory-wise
  // samples each turn gets its own advantage).
  if (config.adv_estimator === "step_reinforce") {
    for (const tag of config.train_env_manager.tags) {
      if (kinds.get(tag) === "traj") {
        fail(
          ["custom_envs", tag, "env_manager_cls"],
          `${config.adv_estimator} trains step-wise, but '${tag}' uses the trajectory-wise env manager`,
          {
            expected: "env_manager_cls: step (ROLL's StepEnvManager), e.g. compose with envs=step",
          },
        );
      }
    }
  }

  // The kernels store weights in fp32 or bf16 (mixed precision); there is no fp16 path.
  for (const role of ["actor_train", "actor_infer", "reference", "critic"] as const) {
    if (config[role].model_args.dtype === "fp16") {
      fail([role, "model_args", "dtype"], "fp16 is not supported by the kernels", {
        expected: "bf16 (mixed precision: bf16 weights, fp32 master weights) or fp32",
      });
    }
  }

  // Batch sizes (ROLL's asserts).
  const train = config.train_env_manager;
  if (config.rollout_batch_size <= 0 || config.rollout_batch_size % train.group_size !== 0) {
    fail(
      ["rollout_batch_size"],
      "rollout_batch_size counts trajectories and must be a positive multiple of " +
        "train_env_manager.group_size",
      {
        found: config.rollout_batch_size,
        expected: `a multiple of ${train.group_size}, e.g. ${
          Math.max(1, Math.round(config.rollout_batch_size / train.group_size)) * train.group_size
        }`,
      },
    );
  }
  // how many steps ahead episodes may start: ROLL's group queues count whole steps
  if (!Number.isInteger(config.async_generation_ratio)) {
    fail(["async_generation_ratio"], "async_generation_ratio counts whole steps", {
      found: config.async_generation_ratio,
      expected: "0 (synchronous), 1, 2, ...",
    });
  }
  const trainEnvs = train.num_env_groups * train.group_size;
  const trajPerEnv = Math.ceil(Math.max(config.rollout_batch_size, 0) / trainEnvs);
  if (config.async_generation_ratio > 0 || train.max_traj_per_env < 0) {
    if (train.max_traj_per_env >= 0 && train.max_traj_per_env !== trajPerEnv) {
      notices.push(
        `train_env_manager.max_traj_per_env ${train.max_traj_per_env} is set to ${trajPerEnv} ` +
          "(rollout_batch_size / training envs): with async_generation_ratio > 0 each env " +
          "plays that many episodes a step",
      );
    }
    train.max_traj_per_env = trajPerEnv;
  } else if (train.max_traj_per_env < trajPerEnv) {
    fail(
      ["train_env_manager", "max_traj_per_env"],
      "max_traj_per_env is too small to fill rollout_batch_size",
      {
        found: train.max_traj_per_env,
        expected: `at least ${trajPerEnv}`,
      },
    );
  }
  const val = config.val_env_manager;
  const valEnvs = val.num_env_groups * val.group_size;
  if (config.val_batch_size <= 0 || config.val_batch_size % valEnvs !== 0) {
    fail(
      ["val_batch_size"],
      "val_batch_size must be a positive multiple of the number of validation environments",
      {
        found: config.val_batch_size,
        expected: `a multiple of val_env_manager.num_env_groups x group_size = ${valEnvs}`,
      },
    );
  } else if (val.max_traj_per_env < 0) val.max_traj_per_env = config.val_batch_size / valEnvs;
  else if (val.max_traj_per_env < config.val_batch_size / valEnvs) {
    // fewer would play fewer validation episodes than val_batch_size, without a word
    fail(
      ["val_env_manager", "max_traj_per_env"],
      "max_traj_per_env is too small to fill val_batch_size",
      {
        found: val.max_traj_per_env,
        expected: `at least ${config.val_batch_size / valEnvs} (val_batch_size / ${valEnvs} envs)`,
      },
    );
  }

  // Generation settings: an env manager's own win; missing ones come from actor_infer.
  const inferGen = config.actor_infer.generating_args;
  if (!inferGen && !train.generating_args) {
    fail(["actor_infer", "generating_args"], "Generation settings are missing", {
      expected: "generating_args under actor_infer or train_env_manager",
    });
  }
  for (const name of MANAGERS) {
    const m = config[name];
    if (!m.generating_args && inferGen) m.generating_args = { ...inferGen };
  }
  config.actor_infer.generating_args ??= train.generating_args
    ? { ...train.generating_args }
    : null;
  for (
    const g of [config.actor_infer.generating_args, train.generating_args, val.generating_args]
  ) {
    if (g) g.num_return_sequences = 1;
  }

  // Roles: worker classes, strategies, model paths.
  for (const role of ROLES) {
    const w = config[role];
    check([role, "worker_cls"], workerClass(w.worker_cls));
    const strategy = w.strategy_args?.strategy_name;
    if (strategy) {
      const engine = STRATEGY_ENGINES[strategy]!;
      if (strategy !== engine) {
        const keys = Object.keys(w.strategy_args?.strategy_config ?? {});
        const ignored = keys.length
          ? `; strategy_config keys not used here: ${keys.join(", ")}`
          : "";
        notices.push(
          `${role}: strategy '${strategy}' runs as ${ENGINE_DESCRIPTIONS[engine]}${ignored}`,
        );
      }
    }
  }
  for (const role of ["actor_train", "actor_infer", "reference"] as const) {
    config[role].model_args.model_name_or_path ??= config.pretrain;
  }
  config.critic.model_args.model_name_or_path ??= config.reward_pretrain ?? config.pretrain;

  // Reward normalization: ROLL derives the mean/std scopes from the deprecated method.
  const rn = config.reward_normalization;
  if (!(REWARD_GROUPINGS as readonly string[]).includes(rn.grouping)) {
    fail(["reward_normalization", "grouping"], "Unknown reward normalization grouping", {
      found: rn.grouping,
      expected: `one of ${REWARD_GROUPINGS.join(", ")}`,
      hint: didYouMean(rn.grouping, REWARD_GROUPINGS),
    });
  }
  const scope = rn.grouping.toLowerCase() === "batch" ? "batch" : "group";
  if (rn.method === "mean") rn.norm_mean_type ??= scope;
  if (rn.method === "mean_std" || rn.method === "asym_clip") {
    rn.norm_mean_type ??= scope;
    rn.norm_std_type ??= scope;
  }

  // The ratio's lower clip bound 1 - low must stay above 0: the clip in use is pg_clip_low with
  // use_pg_clip_range, else pg_clip (the other only sets the dual clip's bound, or nothing)
  const clipKey = config.use_pg_clip_range ? "pg_clip_low" : "pg_clip";
  const clipLow = config[clipKey];
  if (clipLow !== null && clipLow >= 1) {
    fail([clipKey], `${clipKey} must be below 1: the ratio is clipped below at 1 - ${clipKey}`, {
      found: clipLow,
      expected: `a value in (0, 1)${config.use_pg_clip_range ? " with use_pg_clip_range" : ""}`,
    });
  }

  // The pipeline computes KL from the sampled tokens' log-probs; "full" needs the KL over the
  // whole vocabulary, which only the library's klPenalty takes (from its caller).
  if (config.kl_penalty === "full" && config.add_token_level_kl) {
    fail(["kl_penalty"], 'kl_penalty "full" is not computed by the training pipeline', {
      expected: "kl, abs, mse or k3 with add_token_level_kl",
    });
  }

  // fields of ROLL's RLVR pipeline: their defaults are what agentrl does; other values would
  // change nothing, so they are named
  const inert: string[] = Object.entries(RLVR_FIELD_DEFAULTS)
    .filter(([key, value]) => config[key as keyof typeof RLVR_FIELD_DEFAULTS] !== value)
    .map(([key]) => `${key}=${config[key as keyof typeof RLVR_FIELD_DEFAULTS]}`);
  inert.push(...unimplementedSettings(config));
  if (inert.length > 0) {
    notices.push(
      `not implemented in agentrl, so these settings have no effect: ${inert.join(", ")}`,
    );
  }
  for (const m of ["train_env_manager", "val_env_manager"] as const) {
    const proxy = config[m].llm_proxy.proxy_type;
    if (proxy !== "policy") {
      notices.push(
        `${m}.llm_proxy.proxy_type=${proxy}: training generates with the model` +
          (proxy === "random"
            ? " (agentrl eval reads val_env_manager.llm_proxy: random plays random legal actions)"
            : " (agentrl has no OpenAI proxy: eval generates with the model too)"),
      );
    }
  }

  if (config.rollout_dump_dir !== null) {
    notices.push(
      `rollout_dump_dir (${config.rollout_dump_dir}) is ignored: agentrl writes no rollout ` +
        "dumps (render_save_dir keeps each episode's frames)",
    );
  }

  const ckpt = config.checkpoint_config?.output_dir;
  if (typeof ckpt === "string") {
    notices.push(
      `checkpoint_config.output_dir (${ckpt}) is ignored: checkpoints go to ` +
        `${config.output_dir}/checkpoints (set output_dir to move them)`,
    );
  }

  // Which roles run.
  if (config.use_kl_loss || config.init_kl_coef > 0 || config.add_token_level_kl) {
    config.enable_reference = true;
  }
  if (
    !config.force_disable_old_logprobs_recompute &&
    (config.ppo_epochs > 1 || config.enable_reference || config.adv_estimator === "gigpo")
  ) {
    config.enable_old_logprobs_recompute = true;
  }

  if (errors.length === 1) throw errors[0]!;
  if (errors.length > 1) throw new ConfigErrors(errors);
  return notices;
}

/**
 * Settings that would change what a run does and that agentrl does not implement, as
 * `path=value`: generation options past sampling, the inference weight-sync cadence, and env
 * manager hooks. (Knobs of ROLL's distributed engines that change speed only are accepted.)
 */
function unimplementedSettings(config: AgenticConfig): string[] {
  const out: string[] = [];
  const at = (path: string, value: unknown, ok: unknown) => {
    if (value !== null && value !== undefined && value !== ok) out.push(`${path}=${value}`);
  };
  // the env managers' generating_args are the ones generation reads (actor_infer's fill them)
  const neutral = {
    num_beams: 1,
    repetition_penalty: 1,
    length_penalty: 1,
    num_return_sequences: 1,
  };
  for (const [key, ok] of Object.entries(neutral) as [keyof typeof neutral, number][]) {
    const [t, v] = [config.train_env_manager, config.val_env_manager]
      .map((m) => m.generating_args?.[key] ?? ok);
    if (t !== ok && t === v) out.push(`{train,val}_env_manager.generating_args.${key}=${t}`);
    else {
      at(`train_env_manager.generating_args.${key}`, t, ok);
      at(`val_env_manager.generating_args.${key}`, v, ok);
    }
  }
  for (const role of ["actor_train", "actor_infer", "reference", "critic"] as const) {
    at(`${role}.model_update_frequency`, config[role].model_update_frequency, 1);
  }
  for (const [tag, env] of Object.entries(config.custom_envs)) {
    for (const key of ["pre_step_template", "next_step_template", "agent_runner_cls"] as const) {
      at(`custom_envs.${tag}.${key}`, env[key] === null ? null : JSON.stringify(env[key]), null);
    }
    if (env.tool_wrapper !== null) out.push(`custom_envs.${tag}.tool_wrapper`);
  }
  return out;
}

/** Fields of ROLL's RLVR pipeline that agentrl accepts at these values and does not read. */
const RLVR_FIELD_DEFAULTS = {
  use_reward_scaling: false,
  use_reward_norm: false,
  reward_norm: null,
  reward_shift: false,
  reward_scale: false,
  add_len_reward: false,
  difficulty_loss_weight: false,
  length_loss_weight: false,
  norm_mean_type: null,
  norm_std_type: null,
  l2: 0,
  rl_loss_coef: 1,
  sft_loss_coef: 0,
  use_topr_loss: false,
} as const;

/**
 * Hydra runs a job inside `hydra.run.dir`; agentrl does not change directory,
 * so relative output paths are placed under that folder instead.
 */
function applyRunDir(config: AgenticConfig): void {
  const runDir = config.hydra.run.dir;
  if (runDir === "." || runDir === "") return;
  const under = (
    p: string,
  ) => (p.startsWith("/") ? p : `${runDir.replace(/\/$/, "")}/${p.replace(/^\.\//, "")}`);
  config.output_dir = under(config.output_dir);
  config.base_dir = under(config.base_dir);
  config.logging_dir = under(config.logging_dir);
  if (config.render_save_dir !== null) config.render_save_dir = under(config.render_save_dir);
  if (config.rollout_dump_dir !== null) config.rollout_dump_dir = under(config.rollout_dump_dir);
  const logDir = config.tracker_kwargs.log_dir;
  if (typeof logDir === "string") config.tracker_kwargs.log_dir = under(logDir);
  const ckptDir = config.checkpoint_config?.output_dir;
  if (typeof ckptDir === "string") config.checkpoint_config!.output_dir = under(ckptDir);
}
