import { ownChild } from "./node_reference.ts";
import { OriginMap } from "./origins.ts";
import {
  type CfgObject,
  type CfgValue,
  cloneCfg,
  isCfgObject,
  type KeySegment,
  MISSING,
} from "./types.ts";

/**
 * Merges `source` into `target` at `at`, as OmegaConf merges configs: mappings
 * merge deeply (into a copy of the mapping a `${a.b}` value refers to), lists and
 * scalars replace, and `???` never replaces a value.
 * Origins of replaced values are taken from `sourceOrigins`.
 */
export function mergeAt(
  target: CfgObject,
  targetOrigins: OriginMap,
  at: readonly KeySegment[],
  source: CfgObject,
  sourceOrigins: OriginMap,
): void {
  let node = target;
  const path: KeySegment[] = [];
  for (const key of at) {
    const name = String(key);
    path.push(name);
    const next = node[name];
    if (!isCfgObject(next)) {
      node[name] = {};
      targetOrigins.deleteTree(path);
      const origin = sourceOrigins.get([]);
      if (origin) targetOrigins.set(path, origin);
    }
    node = node[name] as CfgObject;
  }
  mergeObjects(target, node, source, [...at], [], targetOrigins, sourceOrigins);
}

/**
 * Merges mapping `source` into `target`, the mapping at `targetPath` of `root`, as
 * {@linkcode mergeAt} does.
 */
export function mergeInto(
  root: CfgObject,
  target: CfgObject,
  source: CfgObject,
  targetPath: readonly KeySegment[],
  targetOrigins: OriginMap,
  sourceOrigins: OriginMap,
): void {
  mergeObjects(root, target, source, [...targetPath], [], targetOrigins, sourceOrigins);
}

function mergeObjects(
  root: CfgObject,
  target: CfgObject,
  source: CfgObject,
  targetPath: KeySegment[],
  sourcePath: KeySegment[],
  targetOrigins: OriginMap,
  sourceOrigins: OriginMap,
): void {
  for (const [key, value] of Object.entries(source)) {
    const tPath = [...targetPath, key];
    const sPath = [...sourcePath, key];
    // a mapping merges into a copy of the mapping a `${custom_env.FrozenLake}` there names
    const existing = isCfgObject(value)
      ? ownChild(root, target, key, tPath, targetOrigins)
      : target[key];
    if (isCfgObject(value) && isCfgObject(existing)) {
      mergeObjects(root, existing, value, tPath, sPath, targetOrigins, sourceOrigins);
      continue;
    }
    if (value === MISSING && existing !== undefined) continue;
    target[key] = cloneCfg(value as CfgValue);
    targetOrigins.deleteTree(tPath);
    targetOrigins.copyFrom(sourceOrigins, sPath, tPath);
  }
}
