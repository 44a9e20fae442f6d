/**
 * Nodes that are whole-value interpolations of other nodes (`${custom_env.FrozenLake}`):
 * OmegaConf merges into, and overrides set keys under, a copy of the node they refer to.
 *
 * @module
 */
import { parseInterpolation } from "./interpolation.ts";
import { getChild, getPath } from "./key_path.ts";
import type { OriginMap } from "./origins.ts";
import { type CfgObject, type CfgValue, cloneCfg, isCfgObject, type KeySegment } from "./types.ts";

/** The absolute key a whole-value `${a.b}` string refers to, if it is one. */
export function nodeReference(text: string): KeySegment[] | undefined {
  if (!text.includes("${")) return undefined;
  try {
    const pieces = parseInterpolation(text);
    const only = pieces.length === 1 ? pieces[0] : undefined;
    return only?.kind === "node" && only.up === 0 ? only.segments : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A copy of the mapping or list that `text` refers to (following references to references),
 * or undefined when `text` is not a node reference or its target is missing or a scalar.
 */
function referencedCopy(
  root: CfgObject,
  text: string,
): { value: CfgValue; target: KeySegment[] } | undefined {
  let target = nodeReference(text);
  for (let depth = 0; target !== undefined && depth <= 16; depth++) {
    const value = getPath(root, target);
    if (typeof value === "string") {
      target = nodeReference(value);
      continue;
    }
    return value !== null && typeof value === "object"
      ? { value: cloneCfg(value), target }
      : undefined;
  }
  return undefined;
}

/**
 * The child `key` of `container` (at `path` in `root`), made its own first when it is a
 * `${a.b}` naming a mapping or list: replaced by a copy of that node, with its origins, so
 * that a change under `path` changes this place only.
 */
export function ownChild(
  root: CfgObject,
  container: CfgValue,
  key: KeySegment,
  path: readonly KeySegment[],
  origins: OriginMap,
): CfgValue | undefined {
  const child = getChild(container, key);
  const copied = typeof child === "string" ? referencedCopy(root, child) : undefined;
  if (copied === undefined) return child;
  if (Array.isArray(container) && typeof key === "number") container[key] = copied.value;
  else if (isCfgObject(container)) container[String(key)] = copied.value;
  else return child;
  origins.deleteTree(path);
  origins.copyFrom(origins, copied.target, path);
  return copied.value;
}
