import { didYouMean } from "../util/did_you_mean.ts";
import { ConfigError } from "./errors.ts";
import {
  hasInterpolation,
  isPlainKey,
  keyPiece,
  parseInterpolation,
  type Piece,
} from "./interpolation.ts";
import { formatKeyPath, getChild, normalizeSegment } from "./key_path.ts";
import type { OriginMap } from "./origins.ts";
import { parseOverrideValue, typePrimitive } from "./override_value.ts";
import { pythonStr } from "./python_format.ts";
import { type ResolverContext, RESOLVERS } from "./resolvers.ts";
import {
  type CfgObject,
  type CfgValue,
  cloneCfg,
  isCfgObject,
  type KeySegment,
  MISSING,
} from "./types.ts";

/** Options for {@linkcode resolveConfig}. */
export interface ResolveOptions {
  /** Reads environment variables for `${oc.env:...}` (default: `Deno.env`). */
  env?: (name: string) => string | undefined;
  /** The time `${now:...}` shows (default: now). */
  now?: Date;
  /** Receives the first key of each `${a.${b}}` reference once its key is known. */
  referenced?: Set<string>;
}

/**
 * Resolves every OmegaConf interpolation of a composed config and returns a new,
 * plain config. A whole-value `${a.b}` keeps the target's type (a mapping stays
 * a mapping); one embedded in text gives a string. `???` left unset, a missing
 * key, and a reference cycle are errors that name the key and its location.
 * The origins of values copied by interpolation are updated in place.
 *
 * @example
 * ```ts
 * import { OriginMap } from "./origins.ts";
 * import { resolveConfig } from "./resolve.ts";
 * const out = resolveConfig({ n: 3, m: "${n}", s: "n=${n}" }, new OriginMap());
 * console.log(out); // { n: 3, m: 3, s: "n=3" }
 * ```
 */
export function resolveConfig(
  root: CfgObject,
  origins: OriginMap,
  options: ResolveOptions = {},
): CfgObject {
  const resolver = new InterpolationResolver(root, origins, options);
  return resolver.resolvePath([]) as CfgObject;
}

class InterpolationResolver {
  readonly #memo = new Map<string, CfgValue>();
  readonly #active: string[] = [];
  readonly #env: (name: string) => string | undefined;
  readonly #now: Date;
  readonly #referenced: Set<string> | undefined;

  constructor(
    private root: CfgObject,
    private origins: OriginMap,
    options: ResolveOptions,
  ) {
    this.#env = options.env ?? ((name: string) => Deno.env.get(name));
    this.#now = options.now ?? new Date();
    this.#referenced = options.referenced;
  }

  /** The context a resolver call at `path` sees: `oc.select` keys are relative to it. */
  contextAt(path: KeySegment[]): ResolverContext {
    return {
      env: this.#env,
      now: this.#now,
      select: (key) => {
        const target = this.targetOf({ ...keyPiece(key), source: key }, path);
        const found = this.lookup(target);
        if (!found || found.value === MISSING) return undefined;
        const value = this.resolvePath(target);
        return value !== null && typeof value === "object" ? cloneCfg(value) : value;
      },
    };
  }

  /** The fully resolved value at a path; throws when it does not exist. */
  resolvePath(path: KeySegment[]): CfgValue {
    const key = formatKeyPath(path);
    if (this.#memo.has(key)) return this.#memo.get(key)!;
    const cycleAt = this.#active.indexOf(key);
    if (cycleAt >= 0) {
      const chain = [...this.#active.slice(cycleAt), key].map((k) => k || "(root)").join(" -> ");
      throw new ConfigError(`Interpolation cycle: ${chain}`, {
        key,
        origin: this.origins.find(path),
      });
    }
    const found = this.lookup(path);
    if (!found) throw this.missingKey(path, path);
    if (found.resolved) {
      this.#memo.set(key, found.value);
      return found.value;
    }
    this.#active.push(key);
    try {
      const value = this.resolveValue(found.value, path);
      this.#memo.set(key, value);
      return value;
    } finally {
      this.#active.pop();
    }
  }

  /** Walks to a path, resolving any interpolated node met on the way. */
  lookup(path: KeySegment[]): { value: CfgValue; resolved: boolean } | undefined {
    let node: CfgValue = this.root;
    for (let i = 0; i < path.length; i++) {
      const child = getChild(node, path[i]!);
      if (child === undefined) return undefined;
      if (typeof child === "string" && hasInterpolation(child) && i < path.length - 1) {
        let value: CfgValue = this.resolvePath(path.slice(0, i + 1));
        for (const seg of path.slice(i + 1)) {
          const next = getChild(value, seg);
          if (next === undefined) return undefined;
          value = next;
        }
        return { value, resolved: true };
      }
      node = child;
    }
    return { value: node, resolved: false };
  }

  resolveValue(value: CfgValue, path: KeySegment[]): CfgValue {
    if (Array.isArray(value)) return value.map((_, i) => this.resolvePath([...path, i]));
    if (isCfgObject(value)) {
      const out: CfgObject = {};
      for (const k of Object.keys(value)) out[k] = this.resolvePath([...path, k]);
      return out;
    }
    if (value === MISSING) {
      throw new ConfigError("Missing mandatory value '???'", {
        key: formatKeyPath(path),
        origin: this.origins.find(path),
        expected: "a value: set it in a config file or with an override such as key=value",
      });
    }
    if (typeof value !== "string" || !hasInterpolation(value)) return value;
    return this.interpolate(value, path);
  }

  interpolate(text: string, path: KeySegment[]): CfgValue {
    let pieces: Piece[];
    try {
      pieces = parseInterpolation(text);
    } catch (e) {
      throw this.locate(e, path);
    }
    const only = pieces.length === 1 ? pieces[0]! : undefined;
    if (only && only.kind !== "text") return this.evaluate(only, path, true);
    return pieces.map((p) => this.embed(p, path)).join("");
  }

  embed(piece: Piece, path: KeySegment[]): string {
    if (piece.kind === "text") return piece.text;
    const value = this.evaluate(piece, path, false);
    if (value !== null && typeof value === "object") {
      throw new ConfigError(
        `Cannot embed ${Array.isArray(value) ? "a list" : "a mapping"} in text`,
        {
          key: formatKeyPath(path),
          origin: this.origins.find(path),
          found: piece.source,
          expected: "a reference to a single value, or the whole value being the interpolation",
        },
      );
    }
    return pythonStr(value);
  }

  evaluate(piece: Exclude<Piece, { kind: "text" }>, path: KeySegment[], whole: boolean): CfgValue {
    if (piece.kind === "dynamic") {
      const key = piece.key.map((p) => this.embed(p, path)).join("");
      if (!isPlainKey(key)) {
        throw new ConfigError(`Interpolation ${piece.source} makes the key '${key}'`, {
          key: formatKeyPath(path),
          origin: this.origins.find(path),
          found: JSON.stringify(key),
          expected: "a key such as a.b, .x or a[0] once the inner interpolations resolve",
        });
      }
      let node: Extract<Piece, { kind: "node" }>;
      try {
        node = { ...keyPiece(key), source: piece.source };
      } catch (e) {
        throw this.locate(e, path, piece.source);
      }
      const first = node.segments[0];
      if (node.up === 0 && typeof first === "string") this.#referenced?.add(first);
      return this.evaluate(node, path, whole);
    }
    if (piece.kind === "node") {
      const target = this.targetOf(piece, path);
      if (!this.lookup(target)) throw this.missingKey(target, path, piece.source);
      const value = this.resolvePath(target);
      if (whole && value !== null && typeof value === "object") {
        this.origins.copyFrom(this.origins, target, path);
        return cloneCfg(value);
      }
      return value;
    }
    const fn = RESOLVERS[piece.name];
    if (!fn) {
      throw new ConfigError(`Unknown resolver '${piece.name}' in ${piece.source}`, {
        key: formatKeyPath(path),
        origin: this.origins.find(path),
        expected: `one of: ${Object.keys(RESOLVERS).join(", ")}`,
        hint: didYouMean(piece.name, Object.keys(RESOLVERS)),
      });
    }
    const args = piece.args.map((arg) => {
      const single = arg.pieces.length === 1 ? arg.pieces[0]! : undefined;
      if (single && single.kind !== "text") return this.evaluate(single, path, true);
      const text = arg.pieces.map((p) => this.embed(p, path)).join("");
      if (arg.quoted) return text;
      // a [list] or {dict}, typed as an override's value is (OmegaConf's resolver grammar)
      return /^[[{]/.test(text) ? this.#container(text, path, piece.source) : typePrimitive(text);
    });
    try {
      return fn(args, this.contextAt(path));
    } catch (e) {
      throw this.locate(e, path, piece.source);
    }
  }

  #container(text: string, path: KeySegment[], source: string): CfgValue {
    try {
      return parseOverrideValue(text, { functions: false });
    } catch (e) {
      throw this.locate(e, path, source);
    }
  }

  targetOf(piece: Extract<Piece, { kind: "node" }>, path: KeySegment[]): KeySegment[] {
    if (piece.up === 0) return piece.segments;
    const base = path.slice(0, path.length - piece.up);
    if (path.length - piece.up < 0) {
      throw new ConfigError(`Relative interpolation ${piece.source} goes above the root`, {
        key: formatKeyPath(path),
        origin: this.origins.find(path),
      });
    }
    let container: CfgValue | undefined = this.root;
    const out: KeySegment[] = [];
    for (const seg of [...base, ...piece.segments]) {
      const s = normalizeSegment(container, seg);
      out.push(s);
      container = container === undefined ? undefined : getChild(container, s);
    }
    return out;
  }

  missingKey(target: KeySegment[], path: KeySegment[], source?: string): ConfigError {
    const parent = target.slice(0, -1);
    const last = target[target.length - 1];
    const container = parent.length === 0 ? this.root : this.lookup(parent)?.value;
    const siblings = isCfgObject(container) ? Object.keys(container) : [];
    return new ConfigError(
      source
        ? `Interpolation ${source} refers to '${formatKeyPath(target)}', which does not exist`
        : `Key '${formatKeyPath(target)}' does not exist`,
      {
        key: formatKeyPath(path),
        origin: this.origins.find(path),
        hint: last === undefined ? undefined : didYouMean(String(last), siblings),
      },
    );
  }

  locate(e: unknown, path: KeySegment[], source?: string): unknown {
    if (!(e instanceof ConfigError)) return e;
    if (e.details.key !== undefined) return e;
    return new ConfigError(source ? `${e.message} (in ${source})` : e.message, {
      ...e.details,
      key: formatKeyPath(path),
      origin: this.origins.find(path),
    });
  }
}
