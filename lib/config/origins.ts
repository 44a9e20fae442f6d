import { formatKeyPath } from "./key_path.ts";
import type { KeySegment, Origin } from "./types.ts";

/**
 * Where each value of a configuration came from, keyed by its key path
 * (`a.b[0]`). Used to point errors at `file:line:column`.
 *
 * @example
 * ```ts
 * import { OriginMap } from "./origins.ts";
 * const origins = new OriginMap();
 * origins.set(["a"], { source: "run.yaml", line: 3, column: 1 });
 * console.log(origins.find(["a", "b", 0])?.line); // 3
 * ```
 */
export class OriginMap {
  readonly #map = new Map<string, Origin>();

  /** Records the origin of the value at `segments`. */
  set(segments: readonly KeySegment[], origin: Origin): void {
    this.#map.set(formatKeyPath(segments), origin);
  }

  /** The origin of the value at `segments`, or of its nearest recorded ancestor. */
  find(segments: readonly KeySegment[]): Origin | undefined {
    for (let n = segments.length; n >= 0; n--) {
      const hit = this.#map.get(formatKeyPath(segments.slice(0, n)));
      if (hit) return hit;
    }
    return undefined;
  }

  /** The origin recorded for exactly this path. */
  get(segments: readonly KeySegment[]): Origin | undefined {
    return this.#map.get(formatKeyPath(segments));
  }

  /** Removes the origins of a subtree. */
  deleteTree(segments: readonly KeySegment[]): void {
    const key = formatKeyPath(segments);
    for (const k of [...this.#map.keys()]) {
      if (isWithin(k, key)) this.#map.delete(k);
    }
  }

  /** Copies the origins of the subtree at `from` in `source` onto the subtree at `to`. */
  copyFrom(source: OriginMap, from: readonly KeySegment[], to: readonly KeySegment[]): void {
    const src = formatKeyPath(from);
    const dst = formatKeyPath(to);
    const additions: [string, Origin][] = [];
    for (const [k, v] of source.#map) {
      if (isWithin(k, src)) additions.push([joinRest(dst, k.slice(src.length)), v]);
    }
    for (const [k, v] of additions) this.#map.set(k, v);
  }
}

function isWithin(key: string, prefix: string): boolean {
  if (prefix === "") return true;
  if (!key.startsWith(prefix)) return false;
  const next = key[prefix.length];
  return next === undefined || next === "." || next === "[";
}

function joinRest(prefix: string, rest: string): string {
  if (prefix === "") return rest.startsWith(".") ? rest.slice(1) : rest;
  if (rest === "" || rest.startsWith(".") || rest.startsWith("[")) return prefix + rest;
  return `${prefix}.${rest}`;
}
