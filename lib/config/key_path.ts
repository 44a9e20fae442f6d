import { ConfigError } from "./errors.ts";
import { type CfgValue, isCfgObject, type KeySegment } from "./types.ts";

/**
 * Parses a dotted key path such as `a.b[0].c` or `a.b.0.c` into segments.
 * Bracketed integers become list indices; bracketed names are keys.
 */
export function parseKeyPath(path: string): KeySegment[] {
  if (path === "") return [];
  const segments: KeySegment[] = [];
  let i = 0;
  let current = "";
  let pending = false;
  const flush = () => {
    if (pending || current !== "") {
      if (current === "") throw new ConfigError(`Empty key in path '${path}'`);
      segments.push(current);
    }
    current = "";
    pending = false;
  };
  while (i < path.length) {
    const ch = path[i]!;
    if (ch === ".") {
      flush();
      pending = true;
      i++;
    } else if (ch === "[") {
      if (current !== "") {
        segments.push(current);
        current = "";
      }
      pending = false;
      const end = path.indexOf("]", i);
      if (end < 0) throw new ConfigError(`Unclosed '[' in key path '${path}'`);
      const inner = path.slice(i + 1, end).trim();
      if (inner === "") throw new ConfigError(`Empty '[]' in key path '${path}'`);
      segments.push(/^\d+$/.test(inner) ? Number(inner) : inner.replace(/^['"]|['"]$/g, ""));
      i = end + 1;
    } else {
      current += ch;
      i++;
    }
  }
  flush();
  return segments;
}

/** Formats segments as a key path: `a.b[0].c`. */
export function formatKeyPath(segments: readonly KeySegment[]): string {
  let out = "";
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else if (/[.[\]'"]/.test(s) || s === "") out += `['${s}']`;
    else out += out === "" ? s : `.${s}`;
  }
  return out;
}

/** Reads the child of a container; a numeric key indexes a list. */
export function getChild(node: CfgValue | undefined, key: KeySegment): CfgValue | undefined {
  if (Array.isArray(node)) {
    const index = typeof key === "number" ? key : /^\d+$/.test(key) ? Number(key) : NaN;
    return Number.isInteger(index) ? node[index] : undefined;
  }
  if (isCfgObject(node)) {
    const name = String(key);
    return Object.hasOwn(node, name) ? node[name] : undefined;
  }
  return undefined;
}

/** Reads the value at a path, or `undefined` when any step is missing. */
export function getPath(root: CfgValue, segments: readonly KeySegment[]): CfgValue | undefined {
  let node: CfgValue | undefined = root;
  for (const s of segments) {
    node = getChild(node, s);
    if (node === undefined) return undefined;
  }
  return node;
}

/** Normalizes a segment against its container: numeric strings index lists. */
export function normalizeSegment(container: CfgValue | undefined, key: KeySegment): KeySegment {
  if (Array.isArray(container) && typeof key === "string" && /^\d+$/.test(key)) return Number(key);
  if (isCfgObject(container) && typeof key === "number") return String(key);
  return key;
}
