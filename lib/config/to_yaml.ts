import { stringify } from "npm:yaml@2.9.1";

/**
 * Prints a config as YAML, the way `agentrl config` shows it.
 *
 * @example
 * ```ts
 * import { toYaml } from "./to_yaml.ts";
 * toYaml({ seed: 7, tags: ["FrozenLake"] }); // "seed: 7\ntags:\n  - FrozenLake\n"
 * ```
 */
export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}
