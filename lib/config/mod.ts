/**
 * Hydra-style config composition, OmegaConf interpolation and the validated
 * AgenticConfig.
 *
 * @module
 */
export * from "./load_config.ts";
export * from "./agentic_config.ts";
export { type ComposeOptions, type ComposedConfig, composeConfig, type GroupOverride } from "./compose.ts";
export { applyOverrides } from "./apply_overrides.ts";
export { parseOverride, type Override } from "./override_parser.ts";
export { parseOverrideValue } from "./override_value.ts";
export { resolveConfig, type ResolveOptions } from "./resolve.ts";
export { ConfigError, ConfigErrors } from "./errors.ts";
export { OriginMap } from "./origins.ts";
export { loadYaml } from "./yaml_load.ts";
export { evalPythonList } from "./python_expr.ts";
export { toYaml } from "./to_yaml.ts";
export type { CfgObject, CfgValue, Origin } from "./types.ts";
