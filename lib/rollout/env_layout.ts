/**
 * The envs of an env manager, as ROLL lays them out: tags take
 * `num_groups_partition` groups each, in order; a group has `group_size`
 * envs (plus `group_size_redundancy`); env `i` belongs to group
 * `floor(i / final_group_size)`.
 *
 * @module
 */
import type { AgenticConfig } from "../config/agentic_config.ts";
import type { CustomEnv, EnvManagerConfig } from "../config/schema/env_manager.ts";

/** One env slot. */
export interface EnvSlot {
  envId: number;
  groupId: number;
  tag: string;
  entry: CustomEnv;
}

/** The slots of `manager`, every tag resolved in `customEnvs`. */
export function layoutEnvs(
  manager: EnvManagerConfig,
  customEnvs: AgenticConfig["custom_envs"],
): EnvSlot[] {
  const finalGroupSize = manager.group_size + manager.group_size_redundancy;
  const partition = manager.num_groups_partition ??
    manager.tags.map((_, i) =>
      Math.floor(manager.num_env_groups / manager.tags.length) +
      (i < manager.num_env_groups % manager.tags.length ? 1 : 0)
    );
  const slots: EnvSlot[] = [];
  let group = 0;
  manager.tags.forEach((tag, t) => {
    const entry = (customEnvs as Record<string, CustomEnv>)[tag];
    if (!entry) {
      throw new Error(
        `tag '${tag}' is not in custom_envs (defined: ${Object.keys(customEnvs).join(", ")})`,
      );
    }
    for (let g = 0; g < (partition[t] ?? 0); g++, group++) {
      for (let m = 0; m < finalGroupSize; m++) {
        slots.push({ envId: group * finalGroupSize + m, groupId: group, tag, entry });
      }
    }
  });
  return slots;
}
