import { didYouMean } from "../util/did_you_mean.ts";
import { ConfigError, describeValue } from "./errors.ts";
import { formatKeyPath, getChild, normalizeSegment, parseKeyPath } from "./key_path.ts";
import { mergeInto } from "./merge.ts";
import { ownChild } from "./node_reference.ts";
import { OriginMap } from "./origins.ts";
import type { Override } from "./override_parser.ts";
import {
  type CfgObject,
  type CfgValue,
  cloneCfg,
  isCfgObject,
  type KeySegment,
  MISSING,
  type Origin,
} from "./types.ts";

/** Tells whether a key path is declared by the config schema (so it may be set). */
export type KnownKey = (path: readonly KeySegment[]) => boolean;

/**
 * Applies value overrides to a composed config, in order, with Hydra's rules:
 * `a=v` needs `a` to exist (in the config or its schema), `+a=v` needs it absent
 * or null (or `v` to be a mapping or list), `++a=v` sets either way, `~a` deletes
 * (`~a=v` only if the value is `v`). A mapping value merges into the mapping at
 * `a`; lists and scalars replace.
 *
 * @example
 * ```ts
 * import { applyOverrides } from "./apply_overrides.ts";
 * import { OriginMap } from "./origins.ts";
 * import { parseOverride } from "./override_parser.ts";
 * const config = { trainer: { lr: 0.1 } };
 * applyOverrides(config, new OriginMap(), ["trainer.lr=0.01", "+trainer.wd=0"].map(parseOverride));
 * console.log(config); // { trainer: { lr: 0.01, wd: 0 } }
 * ```
 */
export function applyOverrides(
  root: CfgObject,
  origins: OriginMap,
  overrides: readonly Override[],
  knownKey: KnownKey = () => false,
): void {
  for (const o of overrides) applyOne(root, origins, o, knownKey);
}

function applyOne(root: CfgObject, origins: OriginMap, o: Override, knownKey: KnownKey): void {
  const origin = { source: "command line", override: o.text };
  const fail = (
    message: string,
    extra: Partial<ConstructorParameters<typeof ConfigError>[1]> = {},
  ) => new ConfigError(message, { key: o.key, origin, ...extra });
  let path: KeySegment[];
  try {
    path = parseKeyPath(o.key);
  } catch {
    throw fail(`Invalid key '${o.key}'`, { expected: "a dotted key such as a.b.c" });
  }
  if (path.length === 0) throw fail("An override needs a key");
  const parentPath = path.slice(0, -1);
  const create = o.kind === "add" || o.kind === "force" || knownKey(path);
  const parent = walk(root, origins, parentPath, create, fail, o);
  const last = normalizeSegment(parent, path[path.length - 1]!);
  const fullPath = [...parentPath, last];
  const existing = parent === undefined ? undefined : getChild(parent, last);

  switch (o.kind) {
    case "set":
      if (existing === undefined && !knownKey(fullPath)) {
        const outside = Array.isArray(parent) && typeof last === "number";
        throw fail(`Could not override '${o.key}': no such key in the config`, {
          hint: outside
            ? suggest(parent, last) ?? `the list has ${(parent as CfgValue[]).length} items`
            : orAdd(suggest(parent, last), o.text),
        });
      }
      break;
    case "add": // Hydra's rule: onto nothing or null, or a mapping or list (merged) onto anything
      if (
        existing !== undefined && existing !== null && existing !== MISSING &&
        !isContainer(o.value)
      ) {
        throw fail(`Could not add '${o.key}': it already has a value`, {
          found: describeValue(existing),
          hint: `to replace it, use ${o.text.slice(1)} (or ++${o.text.slice(1)})`,
        });
      }
      break;
    case "delete":
      if (existing === undefined) {
        throw fail(`Could not delete '${o.key}': no such key in the config`, {
          hint: suggest(parent, last),
        });
      }
      if (o.value !== undefined && !sameValue(o.value, existing)) {
        throw fail(`Could not delete '${o.key}': its value is not the one given`, {
          found: describeValue(existing),
          expected: describeValue(o.value),
        });
      }
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete (parent as CfgObject)[String(last)];
      origins.deleteTree(fullPath);
      return;
  }
  // a mapping merges into the mapping there (as Hydra's update(merge=True)); where a ${a.b}
  // stands, into a copy of the mapping it names (agentrl's choice, as for dotted keys: OmegaConf
  // would replace the reference)
  if (isCfgObject(o.value) && parent !== undefined) {
    const current = ownChild(root, parent, last, fullPath, origins);
    if (isCfgObject(current)) {
      mergeInto(root, current, o.value, fullPath, origins, originsOf(o.value, origin));
      return;
    }
  }
  if (Array.isArray(parent)) {
    if (typeof last !== "number" || last >= parent.length) {
      throw fail(`Index ${String(last)} is outside the list at '${formatKeyPath(parentPath)}'`, {
        found: `a list of ${parent.length}`,
      });
    }
    parent[last] = cloneCfg(o.value ?? null);
  } else if (isCfgObject(parent)) {
    parent[String(last)] = cloneCfg(o.value ?? null);
  } else {
    throw fail(`Could not set '${o.key}': '${formatKeyPath(parentPath)}' is not a mapping`, {
      found: describeValue(parent),
    });
  }
  origins.deleteTree(fullPath);
  origins.set(fullPath, origin);
}

/**
 * Walks to a container, creating mappings when allowed. A node that is an
 * interpolation of another node (`${custom_env.FrozenLake}`) is replaced by a
 * copy of its target so that the override changes this place only.
 */
function walk(
  root: CfgObject,
  origins: OriginMap,
  path: KeySegment[],
  create: boolean,
  fail: (m: string, extra?: Partial<ConstructorParameters<typeof ConfigError>[1]>) => ConfigError,
  o: Override,
): CfgValue | undefined {
  let node: CfgValue = root;
  const done: KeySegment[] = [];
  for (const raw of path) {
    const seg = normalizeSegment(node, raw);
    let child = ownChild(root, node, seg, [...done, seg], origins);
    if (child === undefined || child === null) {
      if (!create) {
        if (child === undefined) {
          const verb = o.kind === "delete" ? "delete" : "override";
          throw fail(
            `Could not ${verb} '${o.key}': no such key '${
              formatKeyPath([...done, seg])
            }' in the config`,
            {
              hint: o.kind === "delete" ? suggest(node, seg) : orAdd(suggest(node, seg), o.text),
            },
          );
        }
        return undefined;
      }
      if (!isCfgObject(node)) return undefined;
      child = {};
      node[String(seg)] = child;
    }
    if (!isCfgObject(child) && !Array.isArray(child)) {
      throw fail(
        `Could not set a key under '${formatKeyPath([...done, seg])}': it is not a mapping`,
        {
          found: describeValue(child),
        },
      );
    }
    done.push(seg);
    node = child;
  }
  return node;
}

function isContainer(value: CfgValue | undefined): boolean {
  return isCfgObject(value) || Array.isArray(value);
}

/** Origins saying that every node of `value` came from `origin`. */
function originsOf(value: CfgValue, origin: Origin): OriginMap {
  const out = new OriginMap();
  const visit = (v: CfgValue, path: KeySegment[]) => {
    out.set(path, origin);
    if (Array.isArray(v)) v.forEach((item, i) => visit(item, [...path, i]));
    else if (isCfgObject(v)) {
      for (const [k, item] of Object.entries(v)) {
        visit(item, [...path, k]);
      }
    }
  };
  visit(value, []);
  return out;
}

/** A suggestion, and always the way to add the key (as Hydra says it). */
function orAdd(suggestion: string | undefined, text: string): string {
  const add = `to add a new key, use +${text}`;
  return suggestion === undefined ? add : `${suggestion} (or, ${add})`;
}

function suggest(container: CfgValue | undefined, key: KeySegment): string | undefined {
  return isCfgObject(container) ? didYouMean(String(key), Object.keys(container)) : undefined;
}

/** Deep equality of config values; mapping key order does not matter. */
function sameValue(a: CfgValue, b: CfgValue): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
      a.every((v, i) => sameValue(v, b[i]!));
  }
  if (isCfgObject(a) || isCfgObject(b)) {
    if (!isCfgObject(a) || !isCfgObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length &&
      keys.every((k) => Object.hasOwn(b, k) && sameValue(a[k]!, b[k]!));
  }
  return Object.is(a, b) || a === b;
}
