/**
 * The environments a run will open, checked before the model loads: each tag's `env_type` is
 * known and its `env_config` parses, and an error names the `custom_envs` entry it is in.
 *
 * @module
 */
import { EnvConfigError } from "../../envs/errors.ts";
import { isEnvModulePath, parseEnvConfig, resolveEnvFactory } from "../../envs/registry.ts";
import type { AgenticConfig } from "../config/mod.ts";

/**
 * `e` with the config entry it came from in front of its message (`custom_envs.FrozenLake: ...`),
 * its hint kept; other errors unchanged.
 *
 * @example
 * ```ts
 * import { EnvConfigError } from "../../envs/errors.ts";
 * import { locateEnvError } from "./check_env_entries.ts";
 * const e = locateEnvError(new EnvConfigError("Unknown env_type 'nope'"), "FrozenLake");
 * console.log(e instanceof Error && e.message); // custom_envs.FrozenLake: Unknown env_type 'nope'
 * ```
 */
export function locateEnvError(e: unknown, tag: string): unknown {
  if (!(e instanceof EnvConfigError)) return e;
  const where = `custom_envs.${tag}`;
  if (e.message.startsWith(`${where}: `)) return e;
  return new EnvConfigError(`${where}: ${e.message}`, e.hint);
}

/**
 * Checks the entries of `tags` (the env managers' tags a run will open): its built-in
 * `env_type` is registered and its `env_config` parses. Module paths are left to the env's
 * creation (importing one may have effects that `env_runner: worker` keeps out of this
 * process), and so are tags without an entry. Throws an {@linkcode EnvConfigError} naming
 * `custom_envs.<tag>`.
 *
 * @example
 * ```ts
 * import { loadConfig } from "../config/mod.ts";
 * import { checkEnvEntries } from "./check_env_entries.ts";
 * const { config } = await loadConfig({ overrides: ["custom_envs.FrozenLake.env_config.size=abc"] });
 * const tags = config.train_env_manager.tags;
 * await checkEnvEntries(config, tags).catch((e) => console.log(e.message.split(":")[0]));
 * // custom_envs.FrozenLake
 * ```
 */
export async function checkEnvEntries(
  config: AgenticConfig,
  tags: Iterable<string>,
): Promise<void> {
  const custom = config.custom_envs as Record<string, { env_type: string; env_config?: unknown }>;
  for (const tag of new Set(tags)) {
    const entry = custom[tag];
    if (!entry) continue; // (the config's validation names a tag missing from custom_envs)
    if (isEnvModulePath(entry.env_type)) continue;
    try {
      const factory = await resolveEnvFactory(entry.env_type);
      parseEnvConfig(entry.env_type, factory, entry.env_config);
    } catch (e) {
      throw locateEnvError(e, tag);
    }
  }
}
