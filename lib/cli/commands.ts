import { Command } from "npm:@commander-js/extra-typings@15.1.0";
import { DEFAULT_CONFIG_NAME, loadConfig, type LoadConfigOptions } from "../config/load_config.ts";
import { toYaml } from "../config/to_yaml.ts";
import { runRollout } from "./rollout.ts";

const OVERRIDES_HELP =
  "Hydra-style overrides: key=value, +key=value, ++key=value, ~key, group=option";
const CONFIG_PATH_HELP = "folder of the primary config (default: agentrl's configs/)";
const CONFIG_NAME_HELP = `primary config name without .yaml (default: ${DEFAULT_CONFIG_NAME})`;

/**
 * What `agentrl train` (and `deno task train`) runs without `--config-name`:
 * FrozenLake as ROLL configures it, step-wise, each decision describing the
 * board in `<think>` before its answer; the one that learns on 2 cores.
 */
export const TRAIN_DEFAULT_CONFIG_NAME = "agent_val_frozen_lake_think";

interface ConfigFlags {
  configPath?: string;
  configName?: string;
}

function loadOptions(flags: ConfigFlags, overrides: string[]): LoadConfigOptions {
  return {
    ...(flags.configPath !== undefined ? { configPath: flags.configPath } : {}),
    ...(flags.configName !== undefined ? { configName: flags.configName } : {}),
    overrides,
  };
}

/** Thrown by a subcommand to end the process with a status and a message. */
export class ExitRequest extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function printNotices(notices: string[]): void {
  for (const n of notices) console.error(`note: ${n}`);
}

/** `agentrl config`: prints the composed, resolved and validated config. */
export function configCommand() {
  return new Command("config")
    .description("print the composed and resolved config as YAML (like Hydra's --cfg job)")
    .option("-p, --config-path <dir>", CONFIG_PATH_HELP)
    .option("-n, --config-name <name>", CONFIG_NAME_HELP)
    .option("--json", "print JSON instead of YAML")
    .option("--full", "print the validated config with every default and derived value")
    .argument("[overrides...]", OVERRIDES_HELP)
    .action(async (overrides, flags) => {
      const loaded = await loadConfig(loadOptions(flags, overrides));
      printNotices(loaded.notices);
      // The run's own keys, resolved: the output loads back as a config. The variables that
      // only fed interpolations follow as a YAML comment (JSON has none: they are left out).
      const own: Record<string, unknown> = Object.fromEntries(
        Object.entries(loaded.resolved).filter(([k]) => !(k in loaded.variables)),
      );
      // environments written under ROLL's `custom_env` alone are the run's custom_envs
      if (!("custom_envs" in own) && Object.keys(loaded.config.custom_envs).length > 0) {
        own.custom_envs = loaded.config.custom_envs;
      }
      const shown = flags.full ? loaded.config : own;
      if (flags.json) {
        console.log(JSON.stringify(shown, null, 2));
        return;
      }
      console.log(toYaml(shown).trimEnd());
      if (!flags.full && Object.keys(loaded.variables).length > 0) {
        const vars = toYaml(loaded.variables).trimEnd().split("\n").map((l) => `# ${l}`);
        console.log(["# the variables the interpolations above read:", ...vars].join("\n"));
      }
    });
}

/** `agentrl train`: the AgenticPipeline on a composed config (default: the embedded one). */
export function trainCommand() {
  return new Command("train")
    .description(
      "train an agent with the AgenticPipeline (default: the embedded FrozenLake config)",
    )
    .option("-p, --config-path <dir>", CONFIG_PATH_HELP)
    .option(
      "-n, --config-name <name>",
      `primary config name without .yaml (default: ${TRAIN_DEFAULT_CONFIG_NAME})`,
    )
    .argument("[overrides...]", OVERRIDES_HELP)
    .action(async (overrides, flags) => {
      const named = flags.configName ?? (flags.configPath ? undefined : TRAIN_DEFAULT_CONFIG_NAME);
      const { config, notices, files } = await loadConfig(
        loadOptions({ ...flags, ...(named !== undefined ? { configName: named } : {}) }, overrides),
      );
      printNotices(notices);
      const train = config.train_env_manager;
      console.error(`config: ${files[files.length - 1]} (${files.length} files composed)`);
      console.error(
        `  ${config.exp_name}: ${config.adv_estimator}, ${config.max_steps} steps, ` +
          `${config.rollout_batch_size} trajectories per step ` +
          `(${train.num_env_groups} groups x ${train.group_size}) on ${train.tags.join(", ")}; ` +
          `outputs in ${config.output_dir}`,
      );
      const { runPipeline } = await import("../pipeline/pipeline.ts");
      const summary = await runPipeline(config);
      console.error(
        `done: ${summary.steps} steps; metrics ${summary.outputDir}/metrics.jsonl, report ` +
          `${summary.outputDir}/report.html`,
      );
    });
}

/** `agentrl eval`: validation rollouts with a checkpoint (or the config's pretrain). */
export function evalCommand() {
  return new Command("eval")
    .description(
      "play the validation episodes (val_env_manager, val_batch_size) with a model and " +
        "print ROLL's val/ metrics; GIFs go to render_save_dir when it is set",
    )
    .option("-p, --config-path <dir>", CONFIG_PATH_HELP)
    .option("-n, --config-name <name>", CONFIG_NAME_HELP)
    .option(
      "--checkpoint <dir>",
      "model folder to evaluate (default: the config's pretrain, else the tiny default " +
        "with random weights)",
    )
    .option(
      "--policy <kind>",
      "model, or random (the env's random legal actions on the same seeds; default: " +
        "val_env_manager.llm_proxy.proxy_type)",
    )
    .option("--json", "print the metrics as JSON")
    .argument("[overrides...]", OVERRIDES_HELP)
    .action(async (overrides, flags) => {
      const { runEval } = await import("./eval.ts");
      await runEval(flags, overrides, (status, message) => new ExitRequest(status, message));
    });
}

/** `agentrl rollout`: runs episodes of one environment locally and prints every turn. */
export function rolloutCommand() {
  return new Command("rollout")
    .description(
      "run multi-turn episodes locally with a random, human, scripted or model:PATH policy and " +
        "print every turn (prompt messages, response, reward, metrics)",
    )
    .option("-p, --config-path <dir>", CONFIG_PATH_HELP)
    .option("-n, --config-name <name>", CONFIG_NAME_HELP)
    .option("--env <tag>", "environment tag (custom_envs, custom_env) or type, e.g. FrozenLake")
    .option(
      "--env-config <k=v...>",
      "environment config values, e.g. size=6 is_slippery=true (every k=v after it: put " +
        "config overrides before it)",
    )
    .option("--policy <policy>", "random | human | scripted | model:PATH", "random")
    .option("--episodes <n>", "number of episodes", "1")
    .option("--seed <n>", "first episode seed (episode i uses seed + i)", "0")
    .option("--render <dir>", "write PNG frames and a GIF per episode")
    .option("--json", "print only a JSON summary on stdout")
    .argument("[overrides...]", OVERRIDES_HELP)
    .action(async (overrides, flags) => {
      await runRollout(flags, overrides, (status, message) => new ExitRequest(status, message));
    });
}

/** `agentrl inspect PATH`: what a run would read from a Hugging Face model folder. */
export function inspectCommand() {
  return new Command("inspect")
    .description(
      "show what agentrl reads from a Hugging Face model folder (architecture, weights, " +
        "tokenizer, chat template, trajectory-wise or step-wise, memory) without loading it",
    )
    .argument("<path>", "the model folder")
    .option("-p, --config-path <dir>", CONFIG_PATH_HELP)
    .option("-n, --config-name <name>", CONFIG_NAME_HELP)
    .option("--json", "print the report as JSON")
    .argument(
      "[overrides...]",
      `${OVERRIDES_HELP} (actor_train.data_args.template picks the template)`,
    )
    .action(async (path, overrides, flags) => {
      const loaded = await loadConfig(loadOptions(flags, overrides));
      printNotices(loaded.notices);
      const { formatModelReport, inspectModel } = await import("./inspect.ts");
      const { TokenizerLoadError } = await import("../model/tokenizer.ts");
      const { isBuiltinModelPath } = await import("../model/builtin_models.ts");
      const { CheckpointError } = await import("../model/safetensors.ts");
      let report;
      try {
        report = await inspectModel(path, loaded.config);
      } catch (e) {
        if (e instanceof TokenizerLoadError) throw new ExitRequest(2, e.message);
        // a built-in base model not built yet: a run that names it builds it first
        if (e instanceof CheckpointError && isBuiltinModelPath(path)) {
          throw new ExitRequest(
            2,
            `${e.message} (a built-in base model: a run whose pretrain names it builds it first)`,
          );
        }
        throw e;
      }
      console.log(flags.json ? JSON.stringify(report, null, 2) : formatModelReport(report));
    });
}

/** `agentrl bench` (lands with the kernels issue). */
export function benchCommand() {
  return new Command("bench")
    .description("run benchmarks; each prints a table and writes bench/results/NAME.json")
    .argument(
      "[names...]",
      "benchmarks to run (default: every quick one); unknown names are listed",
    )
    .action(async (names) => {
      const { main } = await import("../../bench/main.ts");
      const status = await main(names);
      if (status !== 0) throw new ExitRequest(status, "");
    });
}
