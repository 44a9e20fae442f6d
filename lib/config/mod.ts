/**
 * Hydra-style config composition, OmegaConf interpolation and the validated
 * AgenticConfig.
 *
 * @module
 */
export {
  BUILTIN_CONFIG_DIR,
  composeAndResolve,
  DEFAULT_CONFIG_NAME,
  loadConfig,
  type LoadConfigOptions,
  type LoadedConfig,
  type ResolvedConfig,
} from "./load_config.ts";
export {
  type AgenticConfig,
  AgenticConfigSchema,
  validateAgenticConfig,
  type ValidatedConfig,
} from "./agentic_config.ts";
export {
  composeConfig,
  type ComposedConfig,
  type ComposeOptions,
  type GroupOverride,
} from "./compose.ts";
export { applyOverrides } from "./apply_overrides.ts";
export { type Override, parseOverride } from "./override_parser.ts";
export { parseOverrideValue } from "./override_value.ts";
export { resolveConfig, type ResolveOptions } from "./resolve.ts";
export { ConfigError, ConfigErrors } from "./errors.ts";
export { OriginMap } from "./origins.ts";
export { loadYaml } from "./yaml_load.ts";
export { evalPythonList } from "./python_expr.ts";
export { toYaml } from "./to_yaml.ts";
export type { CfgObject, CfgValue, KeySegment, Origin } from "./types.ts";
export type { ConfigErrorDetails } from "./errors.ts";
export type { ConfigReader } from "./source.ts";
export type { KnownKey } from "./apply_overrides.ts";
export type { LoadedYaml } from "./yaml_load.ts";
