import { applyOverrides } from "./apply_overrides.ts";
import {
  type AgenticConfig,
  AgenticConfigSchema,
  validateAgenticConfig,
} from "./agentic_config.ts";
import { composeConfig, type ComposedConfig, type GroupOverride } from "./compose.ts";
import { ConfigError } from "./errors.ts";
import { hasInterpolation, parseInterpolation, type Piece } from "./interpolation.ts";
import type { OriginMap } from "./origins.ts";
import { type Override, parseOverride } from "./override_parser.ts";
import { resolveConfig } from "./resolve.ts";
import { declaresPath } from "./schema/walk.ts";
import { type ConfigReader, defaultReader, toDirUrl } from "./source.ts";
import { type CfgObject, type CfgValue, isCfgObject } from "./types.ts";

/**
 * The folder of configs that ships with agentrl (a `file:` URL, or an
 * `http(s):` one when agentrl is imported by URL).
 *
 * @example
 * ```ts
 * import { BUILTIN_CONFIG_DIR } from "./load_config.ts";
 * console.log(new URL("agent_val_frozen_lake.yaml", BUILTIN_CONFIG_DIR).href);
 * ```
 */
export const BUILTIN_CONFIG_DIR: URL = new URL("../../configs/", import.meta.url);

/**
 * The config `agentrl train` uses when none is named.
 *
 * @example
 * ```ts
 * import { DEFAULT_CONFIG_NAME } from "./load_config.ts";
 * console.log(DEFAULT_CONFIG_NAME); // "agent_val_frozen_lake"
 * ```
 */
export const DEFAULT_CONFIG_NAME = "agent_val_frozen_lake";

/** What to load: Hydra's `--config-path`, `--config-name` and overrides. */
export interface LoadConfigOptions {
  /** Folder of the primary config (path or URL); default: the built-in `configs/`. */
  configPath?: string | URL;
  /** Primary config name without `.yaml`; default `agent_val_frozen_lake`. */
  configName?: string;
  /** Hydra-style overrides: `a.b=v`, `+a=v`, `++a=v`, `~a`, `group=option`. */
  overrides?: readonly string[];
  /** Reads config files (default: local files and `fetch`). */
  reader?: ConfigReader;
  /** Environment for `${oc.env:...}` (default: the process environment). */
  env?: (name: string) => string | undefined;
  /** The time `${now:...}` shows (default: now). */
  now?: Date;
}

/** A loaded config: validated, plus everything needed to explain it. */
export interface LoadedConfig {
  /** The validated config. */
  config: AgenticConfig;
  /** The resolved config before validation (defaults not filled in). */
  resolved: CfgObject;
  /** Interpolation-only variables split off the top level. */
  variables: CfgObject;
  /** Where every value was written (`file:line:column` or an override). */
  origins: OriginMap;
  /** One line per name that runs as something else here, and inert fields. */
  notices: string[];
  /** The option chosen for each config group. */
  choices: ComposedConfig["choices"];
  /** The files merged, in order. */
  files: string[];
}

/**
 * Composes, overrides, resolves and validates a config, as ROLL's launcher does
 * with Hydra and OmegaConf. Throws {@linkcode ConfigError} for any mistake.
 *
 * @example
 * ```ts
 * import { loadConfig } from "./load_config.ts";
 * const { config } = await loadConfig({ overrides: ["seed=7"] });
 * console.log(config.seed); // 7
 * ```
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const resolved = await composeAndResolve(options);
  const { config, variables, notices } = validateAgenticConfig(
    resolved.value,
    resolved.origins,
    resolved.referenced,
  );
  return {
    config,
    resolved: resolved.value,
    variables,
    origins: resolved.origins,
    notices: [...resolved.hydraNotices, ...notices],
    choices: resolved.choices,
    files: resolved.files,
  };
}

/** A composed, overridden and resolved config, not yet validated. */
export interface ResolvedConfig {
  /** The resolved config. */
  value: CfgObject;
  /** Where every value was written. */
  origins: OriginMap;
  /** The option chosen for each config group. */
  choices: ComposedConfig["choices"];
  /** The files merged, in order. */
  files: string[];
  /** Top-level keys that some interpolation refers to. */
  referenced: Set<string>;
  /** Hydra's own settings the overrides named, which do nothing here (one line each). */
  hydraNotices: string[];
}

/**
 * Composes a config, applies overrides and resolves interpolations, without
 * the schema check: what `agentrl config` prints before validation.
 *
 * @example
 * ```ts
 * import { composeAndResolve } from "./load_config.ts";
 * const { value } = await composeAndResolve({ overrides: ["seed=3"] });
 * console.log(value.seed); // 3
 * ```
 */
export async function composeAndResolve(options: LoadConfigOptions = {}): Promise<ResolvedConfig> {
  const reader = options.reader ?? defaultReader;
  const configDir = options.configPath === undefined
    ? BUILTIN_CONFIG_DIR
    : toDirUrl(options.configPath);
  const searchPath = configDir.href === BUILTIN_CONFIG_DIR.href ? [] : [BUILTIN_CONFIG_DIR];
  const parsed = (options.overrides ?? []).map(parseOverride);
  const hydraNotices = hydraSettingNotices(parsed);
  const { groups, values } = await splitOverrides(
    parsed.filter((o) => !isHydraGroup(o)),
    [configDir, ...searchPath],
    reader,
  );
  const composed = await composeConfig({
    configDir,
    configName: options.configName ?? DEFAULT_CONFIG_NAME,
    searchPath,
    groupOverrides: groups,
    reader,
  });
  applyOverrides(
    composed.value,
    composed.origins,
    values,
    // (hydra.*: Hydra's settings, accepted as ROLL's launcher takes them; only run.dir is read)
    (path) => path[0] === "hydra" || declaresPath(AgenticConfigSchema, path),
  );
  const referenced = referencedTopKeys(composed.value);
  const value = resolveConfig(composed.value, composed.origins, {
    ...(options.env ? { env: options.env } : {}),
    ...(options.now ? { now: options.now } : {}),
    referenced, // ${a.${b}} adds its first key once the key resolves
  });
  return {
    value,
    origins: composed.origins,
    choices: composed.choices,
    files: composed.files,
    referenced,
    hydraNotices,
  };
}

/** `hydra/job_logging=disabled`: an option of one of Hydra's own config groups. */
function isHydraGroup(o: Override): boolean {
  return o.key.startsWith("hydra/");
}

/** A notice for each override of Hydra's own settings, which agentrl does not run. */
function hydraSettingNotices(overrides: Override[]): string[] {
  return overrides
    .filter((o) => isHydraGroup(o) || (o.key.startsWith("hydra.") && o.key !== "hydra.run.dir"))
    .map((o) =>
      `'${o.text}' sets one of Hydra's own settings, which do nothing here (agentrl reads ` +
      "only hydra.run.dir)"
    );
}

/** Tells group overrides (`envs=step`: a config group folder exists) from value overrides. */
async function splitOverrides(overrides: Override[], roots: URL[], reader: ConfigReader) {
  const groups: GroupOverride[] = [];
  const values: Override[] = [];
  for (const o of overrides) {
    const group = await groupOf(o, roots, reader);
    if (!group) {
      if (o.package !== undefined) {
        throw new ConfigError(
          `'${o.key}' is not a config group, so '@${o.package}' has no meaning`,
          {
            origin: { source: "command line", override: o.text },
          },
        );
      }
      values.push(o);
      continue;
    }
    if (o.kind === "force") {
      throw new ConfigError(`'${o.text}': force-adding (++) a config group is not supported`, {
        origin: { source: "command line", override: o.text },
        hint: `use ${o.text.slice(2)} to change its choice, or +${o.text.slice(2)} to add it`,
      });
    }
    const kind = o.kind === "delete" ? "delete" : o.kind === "set" ? "set" : "append";
    const option = o.value as string | string[] | null | undefined;
    groups.push({
      kind,
      group: o.key,
      ...(o.package !== undefined ? { package: o.package } : {}),
      ...(option !== undefined ? { option } : {}),
      text: o.text,
    });
  }
  return { groups, values };
}

async function groupOf(o: Override, roots: URL[], reader: ConfigReader): Promise<boolean> {
  if (o.key.includes(".") && !o.key.includes("/")) return false;
  const v = o.value;
  const names = v === undefined || v === null
    ? []
    : typeof v === "string"
    ? [v]
    : Array.isArray(v) && v.every((x) => typeof x === "string")
    ? v as string[]
    : undefined;
  if (names === undefined) return false;
  for (const root of roots) {
    const dir = new URL(`${o.key}/`, root);
    if (names.length > 0) {
      // "./": a value such as "State: ..." must not read as a URL scheme
      if (await reader.read(new URL(`./${names[0]}.yaml`, dir)) !== undefined) return true;
    }
    if (await reader.isDir(dir)) return true;
  }
  return false;
}

/** The first key of every absolute `${a.b}` reference in the tree. */
export function referencedTopKeys(root: CfgValue): Set<string> {
  const out = new Set<string>();
  const visitPieces = (pieces: Piece[]) => {
    for (const p of pieces) {
      if (p.kind === "node" && p.up === 0 && typeof p.segments[0] === "string") {
        out.add(p.segments[0]);
      }
      if (p.kind === "call") { for (const a of p.args) visitPieces(a.pieces); }
      if (p.kind === "dynamic") visitPieces(p.key);
      if (p.kind === "call" && (p.name === "oc.select" || p.name.startsWith("oc.dict."))) {
        const first = p.args[0]?.pieces[0];
        if (first?.kind === "text") out.add(first.text.split(/[.[]/)[0]!);
      }
    }
  };
  const visit = (v: CfgValue) => {
    if (typeof v === "string" && hasInterpolation(v)) {
      try {
        visitPieces(parseInterpolation(v));
      } catch {
        // Reported with its location when the value is resolved.
      }
    } else if (Array.isArray(v)) v.forEach(visit);
    else if (isCfgObject(v)) Object.values(v).forEach(visit);
  };
  visit(root);
  return out;
}
