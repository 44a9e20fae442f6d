import { ConfigError } from "./errors.ts";
import { parseOverrideValue } from "./override_value.ts";
import { pythonStr } from "./python_format.ts";
import type { CfgValue } from "./types.ts";

/** What a resolver can ask of the config being resolved. */
export interface ResolverContext {
  /**
   * The fully resolved value at a key (absolute, or relative with leading dots
   * like `${.x}`), or `undefined` when it is absent or `???`.
   */
  select(key: string): CfgValue | undefined;
  /** Reads an environment variable. */
  env(name: string): string | undefined;
  /** The time `${now:...}` formats (fixed for one composition). */
  now: Date;
}

/** A resolver: `${name:arg1,arg2}`. Arguments arrive already resolved. */
export type Resolver = (args: CfgValue[], ctx: ResolverContext) => CfgValue;

function envResolver(args: CfgValue[], ctx: ResolverContext): CfgValue {
  const [name, ...rest] = args;
  if (typeof name !== "string" || name === "" || rest.length > 1) {
    throw new ConfigError("oc.env takes a variable name and an optional default", {
      expected: "${oc.env:NAME} or ${oc.env:NAME,default}",
    });
  }
  const value = ctx.env(name);
  if (value !== undefined) return value;
  // the default as OmegaConf returns it: a string, in Python's spelling (1e-05, True)
  if (rest.length === 1) {
    const d = rest[0];
    if (d === null) return null;
    return typeof d === "object" ? String(d) : pythonStr(d as boolean | number | string);
  }
  throw new ConfigError(`Environment variable '${name}' is not set`, {
    expected: `set ${name}, or give a default: \${oc.env:${name},default}`,
  });
}

/** The mapping an oc.dict.* call names: a key (`${oc.dict.keys:a.b}`) or the mapping itself. */
function dictArg(name: string, args: CfgValue[], ctx: ResolverContext): Record<string, CfgValue> {
  const [arg] = args;
  const value = typeof arg === "string" ? ctx.select(arg) : arg;
  if (args.length !== 1 || value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ConfigError(`${name} takes the key of a mapping`, {
      found: typeof arg === "string"
        ? `'${arg}', ${value === undefined ? "which does not exist" : "not a mapping"}`
        : String(arg),
      expected: `\${${name}:some.mapping}`,
    });
  }
  return value as Record<string, CfgValue>;
}

const STRFTIME: Record<string, (d: Date) => string> = {
  Y: (d) => String(d.getFullYear()),
  m: (d) => pad(d.getMonth() + 1),
  d: (d) => pad(d.getDate()),
  H: (d) => pad(d.getHours()),
  M: (d) => pad(d.getMinutes()),
  S: (d) => pad(d.getSeconds()),
  f: (d) => String(d.getMilliseconds() * 1000).padStart(6, "0"),
  "%": () => "%",
};

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

/** The resolvers OmegaConf and Hydra configs use. */
export const RESOLVERS: Record<string, Resolver> = {
  "oc.env": envResolver,
  env: envResolver,
  "oc.select": (args, ctx) => {
    const [key, fallback] = args;
    if (typeof key !== "string" || args.length > 2) {
      throw new ConfigError("oc.select takes a key and an optional default", {
        expected: "${oc.select:key} or ${oc.select:key,default}",
      });
    }
    const v = ctx.select(key);
    return v === undefined ? fallback ?? null : v;
  },
  "oc.decode": (args) => {
    const [text] = args;
    if (args.length !== 1) {
      throw new ConfigError("oc.decode takes one string", { expected: "${oc.decode:'...'}" });
    }
    if (text === null || typeof text !== "string") return text ?? null;
    return parseOverrideValue(text, { functions: false });
  },
  // oc.create: a list or dict argument as a config node (ours are plain values already)
  "oc.create": (args) => {
    const [value] = args;
    if (args.length !== 1 || value === null || typeof value !== "object") {
      throw new ConfigError("oc.create takes one list or dict", {
        expected: "${oc.create:{a: 1}} or ${oc.create:${some.dict}}",
      });
    }
    return value;
  },
  "oc.dict.keys": (args, ctx) => Object.keys(dictArg("oc.dict.keys", args, ctx)),
  "oc.dict.values": (args, ctx) => Object.values(dictArg("oc.dict.values", args, ctx)),
  now: (args, ctx) => {
    const [format] = args;
    if (typeof format !== "string") {
      throw new ConfigError("now takes a strftime pattern", { expected: "${now:%Y-%m-%d}" });
    }
    return format.replace(/%(.)/g, (m, code: string) => STRFTIME[code]?.(ctx.now) ?? m);
  },
};
