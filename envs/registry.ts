/**
 * The environment registry: `env_type` → factory, each with a zod schema for its
 * `env_config`. Built in: `frozen_lake`, `sokoban`, `countdown`, `webshop`. Users
 * add their own with {@linkcode registerEnv}, or name a module in `env_type`
 * (`./my_env.ts`, `../x.ts`, `/abs.ts`, `file:`, `http:`, `https:`) whose default
 * export is a factory function or `{ create, configSchema }`.
 *
 * @module
 */
import type { z } from "npm:zod@4.6.7";
import { describeThrown } from "../lib/util/describe_thrown.ts";
import { didYouMean } from "../lib/util/did_you_mean.ts";
import { CountdownConfig } from "./countdown/config.ts";
import { CountdownEnv } from "./countdown/env.ts";
import { EnvConfigError } from "./errors.ts";
import { FrozenLakeConfig } from "./frozen_lake/config.ts";
import { FrozenLakeEnv } from "./frozen_lake/env.ts";
import { SokobanConfig } from "./sokoban/config.ts";
import { SokobanEnv } from "./sokoban/env.ts";
import type { Env } from "./types.ts";
import { createWebShopEnv, WebShopConfig } from "./webshop/mod.ts";

/**
 * How to build one type of environment. `create` receives the `env_config`
 * as `configSchema` outputs it (defaults filled in), or as written when there is
 * no schema.
 */
export interface EnvFactory<C = Record<string, unknown>> {
  /** Builds an environment (may be async, e.g. to load data). */
  create(config: C): Env | Promise<Env>;
  /** Validates the `env_config`; unknown keys of an object schema are reported by name. */
  configSchema?: z.ZodType<C>;
  /** One line for listings and errors. */
  description?: string;
}

/** Options of {@linkcode createEnv} and {@linkcode resolveEnvFactory}. */
export interface ResolveOptions {
  /** What a relative module path in `env_type` is relative to (default: the working directory). */
  base?: string | URL;
}

// deno-lint-ignore no-explicit-any
type AnyFactory = EnvFactory<any>;

const registry = new Map<string, AnyFactory>();

const BUILTIN: ReadonlyArray<[string, AnyFactory]> = [
  ["frozen_lake", {
    create: (c: FrozenLakeConfig) => new FrozenLakeEnv(c),
    configSchema: FrozenLakeConfig,
    description: "FrozenLake (gymnasium rules, random solvable maps, ROLL's text symbols)",
  }],
  ["sokoban", {
    create: (c: SokobanConfig) => new SokobanEnv(c),
    configSchema: SokobanConfig,
    description: "Sokoban (gym-sokoban rules and generator, ROLL's text symbols)",
  }],
  ["countdown", {
    create: (c: CountdownConfig) => new CountdownEnv(c),
    configSchema: CountdownConfig,
    description: "Countdown (reach a target with + - * / over given numbers)",
  }],
  ["webshop", {
    create: (c: Record<string, unknown>) => createWebShopEnv(c),
    configSchema: WebShopConfig as unknown as z.ZodType<Record<string, unknown>>,
    description: "WebShop (text mode: search, browse and buy a product)",
  }],
];
for (const [type, factory] of BUILTIN) registry.set(type, factory);

const MODULE_PATH = /^(\.{1,2}\/|\/|file:|https?:)/;

/**
 * Whether `env_type` names a module rather than a registered type.
 *
 * @example
 * ```ts
 * import { isEnvModulePath } from "./registry.ts";
 * console.log(isEnvModulePath("./my_env.ts"), isEnvModulePath("sokoban")); // true false
 * ```
 */
export function isEnvModulePath(type: string): boolean {
  return MODULE_PATH.test(type);
}

/**
 * Registers an environment type. A name that is already registered, empty, or
 * looks like a module path is an {@linkcode EnvConfigError} (pass
 * `{ replace: true }` to replace a registration on purpose).
 *
 * @example
 * ```ts
 * import { createEnv, registerEnv, unregisterEnv } from "./registry.ts";
 * import { FrozenLakeConfig, FrozenLakeEnv } from "./frozen_lake/mod.ts";
 * registerEnv("tiny_lake", {
 *   create: (c) => new FrozenLakeEnv(FrozenLakeConfig.parse({ ...c, size: 2 })),
 *   description: "a 2x2 FrozenLake",
 * });
 * const env = await createEnv("tiny_lake", {});
 * console.log((await env.reset(0)).observation); // two rows of two cells
 * unregisterEnv("tiny_lake");
 * ```
 */
export function registerEnv<C = Record<string, unknown>>(
  type: string,
  factory: EnvFactory<C>,
  options: { replace?: boolean } = {},
): void {
  if (typeof type !== "string" || !/^[A-Za-z_][\w.-]*$/.test(type)) {
    throw new EnvConfigError(
      `Env type name ${JSON.stringify(type)} is not valid: expected letters, digits, _ . - ` +
        "(module paths are given in env_type directly, not registered)",
    );
  }
  if (!factory || typeof factory.create !== "function") {
    throw new EnvConfigError(
      `Env type '${type}' needs a factory with a create(config) function`,
    );
  }
  if (registry.has(type) && !options.replace) {
    throw new EnvConfigError(
      `Env type '${type}' is registered already: pass { replace: true } to replace it`,
    );
  }
  registry.set(type, factory as AnyFactory);
}

/** Removes a registration; returns whether there was one. */
export function unregisterEnv(type: string): boolean {
  return registry.delete(type);
}

/**
 * The registered types and their descriptions, sorted by name.
 *
 * @example
 * ```ts
 * import { listEnvTypes } from "./registry.ts";
 * console.log(listEnvTypes().map((t) => t.type)); // [..., "frozen_lake", "sokoban", ...]
 * ```
 */
export function listEnvTypes(): Array<{ type: string; description: string }> {
  return [...registry].map(([type, f]) => ({ type, description: f.description ?? "" }))
    .sort((a, b) => a.type.localeCompare(b.type));
}

/**
 * The factory of a registered type or of a module path (imported dynamically).
 * An unknown type is an {@linkcode EnvConfigError} listing the registered types.
 *
 * @example
 * ```ts
 * import { resolveEnvFactory } from "./registry.ts";
 * const f = await resolveEnvFactory("sokoban");
 * console.log(f.description);
 * ```
 */
export async function resolveEnvFactory(
  type: string,
  options: ResolveOptions = {},
): Promise<AnyFactory> {
  if (typeof type !== "string" || type === "") {
    throw new EnvConfigError(`env_type ${JSON.stringify(type)} is not valid: expected a name`);
  }
  if (isEnvModulePath(type)) return await importFactory(type, options);
  const factory = registry.get(type);
  if (factory) return factory;
  const names = [...registry.keys()].sort();
  throw new EnvConfigError(
    `Unknown env_type '${type}': the registered types are ${names.join(", ")}; ` +
      "a module path (./my_env.ts, file:..., https://...) whose default export is an env " +
      "factory works too",
    didYouMean(type, names),
  );
}

/**
 * Validates an `env_config` against a factory's schema: not an object, an
 * unknown key (listing the accepted keys) or a bad value is an
 * {@linkcode EnvConfigError} naming the key and what was expected.
 *
 * @example
 * ```ts
 * import { parseEnvConfig, resolveEnvFactory } from "./registry.ts";
 * const f = await resolveEnvFactory("frozen_lake");
 * console.log(parseEnvConfig("frozen_lake", f, { size: 5 })); // { ..., size: 5, p: 0.8, ... }
 * ```
 */
export function parseEnvConfig<C>(type: string, factory: EnvFactory<C>, raw: unknown): C {
  const config = raw ?? {};
  if (typeof config !== "object" || Array.isArray(config)) {
    throw new EnvConfigError(
      `env_config of env_type '${type}' is ${
        describe(config)
      }: expected a mapping of keys to values`,
    );
  }
  const schema = factory.configSchema;
  if (!schema) return config as C;
  const shape = (schema as unknown as { shape?: Record<string, unknown> }).shape;
  if (shape && typeof shape === "object") {
    const accepted = Object.keys(shape).sort();
    for (const key of Object.keys(config)) {
      if (!(key in shape)) {
        throw new EnvConfigError(
          `Unknown env_config key '${key}' for env_type '${type}': the accepted keys are ` +
            accepted.join(", "),
          didYouMean(key, accepted),
        );
      }
    }
  }
  const result = schema.safeParse(config);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    const found = path ? valueAt(config, issue.path) : undefined;
    return `${path ? `env_config.${path}` : "env_config"}: ${issue.message}` +
      (found !== undefined ? ` (found ${describe(found)})` : "");
  });
  throw new EnvConfigError(
    `Invalid env_config for env_type '${type}': ${problems.join("; ")}`,
  );
}

/**
 * Builds an environment: resolves `type` (a registered name or a module path),
 * validates `envConfig` with the factory's schema and calls its `create`.
 * Every user mistake is an {@linkcode EnvConfigError}.
 *
 * @example
 * ```ts
 * import { createEnv } from "./registry.ts";
 * const env = await createEnv("frozen_lake", { size: 4, is_slippery: false });
 * const { observation } = await env.reset(3);
 * console.log(observation.split("\n").length); // 4
 * ```
 */
export async function createEnv(
  type: string,
  envConfig: Record<string, unknown> | null = {},
  options: ResolveOptions = {},
): Promise<Env> {
  const factory = await resolveEnvFactory(type, options);
  const config = parseEnvConfig(type, factory, envConfig);
  let env: Env;
  try {
    env = await factory.create(config);
  } catch (e) {
    if (e instanceof EnvConfigError) throw e;
    throw new EnvConfigError(
      `The factory of env_type '${type}' failed: ${describeThrown(e)}`,
    );
  }
  const missing = ["reset", "step", "render", "close"].filter((m) =>
    typeof (env as unknown as Record<string, unknown>)?.[m] !== "function"
  );
  if (missing.length > 0) {
    throw new EnvConfigError(
      `The factory of env_type '${type}' returned ${describe(env)}, which lacks ` +
        `${missing.join(", ")}: expected an Env (reset, step, render, close)`,
    );
  }
  // (the prompt's first user turn starts with the instruction; the human policy shows the
  // optional actionDescription)
  const fields = env as unknown as Record<string, unknown>;
  const refuse = async (message: string): Promise<never> => {
    try {
      await env.close(); // (an env that holds a server or a process lets it go)
    } catch {
      // the refusal says what matters
    }
    throw new EnvConfigError(message);
  };
  if (typeof fields.instruction !== "string") {
    await refuse(
      `The env of env_type '${type}' has ${
        fields.instruction === undefined
          ? "no instruction"
          : `instruction ${describe(fields.instruction)}`
      }: expected a string (the task description at the start of the prompt)`,
    );
  }
  const action = fields.actionDescription;
  if (action !== undefined && action !== null && typeof action !== "string") {
    await refuse(
      `The env of env_type '${type}' has actionDescription ${
        describe(action)
      }: expected a string (what a valid action looks like) or none`,
    );
  }
  return env;
}

async function importFactory(type: string, options: ResolveOptions): Promise<AnyFactory> {
  const base = options.base ?? new URL(`file://${Deno.cwd().replace(/\/?$/, "/")}`);
  let url: URL;
  try {
    url = new URL(type, base);
  } catch {
    throw new EnvConfigError(`env_type '${type}' is not a valid module path or URL`);
  }
  let mod: Record<string, unknown>;
  try {
    mod = await import(url.href);
  } catch (e) {
    throw new EnvConfigError(
      `Cannot import the env module '${type}' (${url.href}): ${
        e instanceof Error ? e.message.split("\n")[0] : String(e)
      }`,
    );
  }
  const d = mod.default as unknown;
  if (typeof d === "function") {
    return { create: d as AnyFactory["create"], description: `module ${type}` };
  }
  if (d && typeof d === "object" && typeof (d as AnyFactory).create === "function") {
    const f = d as AnyFactory;
    return { ...f, description: f.description ?? `module ${type}` };
  }
  throw new EnvConfigError(
    `The env module '${type}' has ${
      d === undefined ? "no default export" : `a default export that is ${describe(d)}`
    }: ` +
      "expected a factory function (config) => Env, or { create, configSchema, description }",
  );
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = root;
  for (const k of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return `a list ${truncate(JSON.stringify(v))}`;
  if (typeof v === "string") return `the string ${truncate(JSON.stringify(v))}`;
  if (typeof v === "object") return `an object with keys ${Object.keys(v).join(", ") || "(none)"}`;
  return `${typeof v} ${String(v)}`;
}

function truncate(s: string): string {
  return s.length > 60 ? s.slice(0, 57) + "..." : s;
}
