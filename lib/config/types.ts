/** A composed configuration value: the JSON-like data a YAML config holds. */
export type CfgValue = null | boolean | number | string | CfgValue[] | CfgObject;

/** A mapping node of a configuration. */
export interface CfgObject {
  /** A child value. */
  [key: string]: CfgValue;
}

/** One step of a key path: a mapping key or a list index. */
export type KeySegment = string | number;

/** Where a configuration value came from. */
export interface Origin {
  /** A file path or URL, or a description such as `command line`. */
  source: string;
  /** 1-based line, when the source is a file. */
  line?: number;
  /** 1-based column, when the source is a file. */
  column?: number;
  /** The command-line override that set the value, when one did. */
  override?: string;
}

/** The value OmegaConf uses for a mandatory value that has not been given. */
export const MISSING = "???";

/** Whether a value is a mapping (not a list, not null). */
export function isCfgObject(value: unknown): value is CfgObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A deep copy of a configuration value. */
export function cloneCfg<T extends CfgValue>(value: T): T {
  return structuredClone(value);
}

/** Formats an origin as `file:line:column`, or the override that set it. */
export function formatOrigin(origin: Origin | undefined): string {
  if (!origin) return "an unknown place";
  if (origin.override !== undefined) return `command-line override '${origin.override}'`;
  if (origin.line === undefined) return origin.source;
  return `${origin.source}:${origin.line}:${origin.column ?? 1}`;
}
