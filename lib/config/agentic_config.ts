import type { z } from "npm:zod@4.6.7";
import { AgenticConfigObject, agenticShape, NO_EFFECT_FIELDS } from "./schema/agentic.ts";
import { finalizeConfig } from "./finalize.ts";
import type { OriginMap } from "./origins.ts";
import { type CfgObject, isCfgObject } from "./types.ts";
import { parseWithSchema } from "./validate.ts";

/** The validated configuration of an agentic RL run (ROLL's AgenticConfig). */
export type AgenticConfig = z.output<typeof AgenticConfigObject>;

/**
 * The zod schema of {@linkcode AgenticConfig}: every field with ROLL's default.
 *
 * @example
 * ```ts
 * import { AgenticConfigSchema } from "./agentic_config.ts";
 * const defaults = AgenticConfigSchema.parse({});
 * console.log(defaults.adv_estimator, defaults.loss_agg_mode); // "gae" "seq-mean-token-mean"
 * ```
 */
export const AgenticConfigSchema = AgenticConfigObject;

/**
 * Top-level keys that ROLL's shared env files define only to be interpolated
 * (`${max_actions_per_traj}`); they are accepted and kept out of the config.
 */
export const LIBRARY_VARIABLES = new Set([
  "custom_env",
  "gem_code",
  "gem_games",
  "gem_math",
  "gem_qa",
  "gem_rg",
  "max_tokens_per_step",
  "max_actions_per_traj",
  "action_pattern",
  "think_action_pattern",
  "all_response_pattern",
  "sokoban_format_penalty",
  "frozen_format_penalty",
  "env_manager_cls",
  "agent_runner_cls",
  "default_history_length",
  "agent_system_template",
  "agent_template",
  "pre_step_template",
  "next_step_template",
  "single_prompt_agent_system_template",
  "single_prompt_agent_template",
  "pipeline_cls",
]);

/** A validated config, the variables that were split off, and notices for the user. */
export interface ValidatedConfig {
  /** The validated config with defaults and derived values filled in. */
  config: AgenticConfig;
  /** Top-level keys used only by interpolation (ROLL's `custom_env` library, etc.). */
  variables: CfgObject;
  /** One line per name that runs as something else here (e.g. `vllm`). */
  notices: string[];
}

/**
 * Validates a resolved config against the AgenticConfig schema and ROLL's
 * cross-field rules. Top-level keys outside the schema are accepted only as
 * interpolation variables: keys that `referenced` names, or ROLL's library keys.
 *
 * @example
 * ```ts
 * import { validateAgenticConfig } from "./agentic_config.ts";
 * import { loadYaml } from "./yaml_load.ts";
 * const { value, origins } = loadYaml("sequence_length: 512\nactor_infer:\n  generating_args: {}\ncustom_envs:\n  SimpleSokoban: {env_type: sokoban}\n", "run.yaml");
 * const { config } = validateAgenticConfig(value, origins);
 * console.log(config.sequence_length); // 512
 * ```
 */
export function validateAgenticConfig(
  resolved: CfgObject,
  origins: OriginMap,
  referenced: ReadonlySet<string> = new Set(),
): ValidatedConfig {
  const data: CfgObject = {};
  const variables: CfgObject = {};
  for (const [key, value] of Object.entries(resolved)) {
    const isVariable = !(key in agenticShape) &&
      (referenced.has(key) || LIBRARY_VARIABLES.has(key));
    (isVariable ? variables : data)[key] = value;
  }
  // A config that writes its environments under ROLL's `custom_env` (and no
  // `custom_envs`) means them as the environments of the run.
  if (!("custom_envs" in data) && isCfgObject(variables.custom_env)) {
    data.custom_envs = variables.custom_env;
    origins.copyFrom(origins, ["custom_env"], ["custom_envs"]);
  }
  const config = parseWithSchema(AgenticConfigObject, data, origins);
  const notices = finalizeConfig(config, origins);
  const inert = NO_EFFECT_FIELDS.filter((k) => k in data);
  if (inert.length > 0) {
    notices.push(`accepted for ROLL compatibility, no effect in agentrl: ${inert.join(", ")}`);
  }
  return { config, variables, notices };
}
