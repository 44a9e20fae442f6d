import {
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  Scalar,
} from "npm:yaml@2.9.1";
import { ConfigError } from "./errors.ts";
import { OriginMap } from "./origins.ts";
import { type CfgObject, type CfgValue, isCfgObject, type KeySegment } from "./types.ts";
import { parseYamlInt, resolvePlainScalar } from "./yaml_scalar.ts";

/** A parsed YAML config file: its data, the origin of every value, and its header. */
export interface LoadedYaml {
  /** The file's content. */
  value: CfgObject;
  /** `file:line:column` of every value. */
  origins: OriginMap;
  /** The `# @package` header's value, when the file has one. */
  packageHeader?: string;
}

const TAG_PREFIX = "tag:yaml.org,2002:";

/**
 * Parses YAML config text as OmegaConf would read it (YAML 1.1 scalars, no
 * timestamps), rejecting duplicate keys, and records `file:line:column` for
 * every value.
 *
 * @example
 * ```ts
 * import { loadYaml } from "./yaml_load.ts";
 * const { value, origins } = loadYaml("lr: 1e-5\nfast: yes\n", "run.yaml");
 * console.log(value, origins.get(["fast"])); // { lr: 0.00001, fast: true } { source: "run.yaml", line: 2, column: 7 }
 * ```
 */
export function loadYaml(text: string, source: string): LoadedYaml {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    schema: "failsafe",
    lineCounter,
    uniqueKeys: true,
    prettyErrors: false,
    merge: false,
  });
  const problem = doc.errors[0];
  if (problem) {
    // a problem found at the end of the input (an unclosed bracket) is at the last line's end,
    // not on the line after the file's final newline
    const end = text.trimEnd().length;
    const atEnd = problem.pos[0] >= end;
    const pos = lineCounter.linePos(Math.min(problem.pos[0], end));
    const where = atEnd ? " (at the end of the file)" : "";
    throw new ConfigError(`Invalid YAML: ${firstLine(problem.message)}${where}`, {
      origin: { source, line: pos.line, column: pos.col },
    });
  }
  const origins = new OriginMap();
  const converter = new Converter(doc, source, lineCounter, origins);
  const value = doc.contents === null ? {} : converter.convert(doc.contents, []);
  if (!isCfgObject(value)) {
    throw new ConfigError("A config file must hold a mapping at its top level", {
      origin: { source, line: 1, column: 1 },
      found: Array.isArray(value) ? "a list" : "a scalar",
      expected: "key: value pairs",
    });
  }
  const packageHeader = readPackageHeader(text);
  return packageHeader === undefined ? { value, origins } : { value, origins, packageHeader };
}

/** Reads `# @package NAME` from the comment lines at the top of a file. */
export function readPackageHeader(text: string): string | undefined {
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed === "") continue;
    if (!trimmed.startsWith("#")) break;
    const m = /^#\s*@package\s*:?\s*(\S+)/.exec(trimmed);
    if (m) return m[1];
  }
  return undefined;
}

function firstLine(message: string): string {
  return message.split("\n")[0]!.trim();
}

class Converter {
  constructor(
    private doc: Document,
    private source: string,
    private lines: LineCounter,
    private origins: OriginMap,
  ) {}

  convert(node: Node, path: KeySegment[], depth = 0): CfgValue {
    if (depth > 200) throw this.error(node, "YAML aliases nest too deeply (a cycle?)");
    this.record(node, path);
    if (isAlias(node)) {
      const target = node.resolve(this.doc);
      if (!target) throw this.error(node, `Unknown YAML alias '*${node.source}'`);
      return this.convert(target as Node, path, depth + 1);
    }
    if (isScalar(node)) return this.scalar(node);
    if (isSeq(node)) {
      return node.items.map((item, i) =>
        item === null ? null : this.convert(item as Node, [...path, i], depth + 1)
      );
    }
    if (isMap(node)) {
      const out: CfgObject = {};
      const merged: CfgObject[] = [];
      for (const pair of node.items) {
        const keyNode = pair.key as Node | null;
        const key = keyNode === null ? "" : this.key(keyNode);
        if (key === "<<" && isScalar(keyNode) && keyNode.type === Scalar.PLAIN) {
          merged.push(...this.mergeSources(pair.value as Node | null, path, depth));
          continue;
        }
        const valueNode = pair.value as Node | null;
        if (valueNode === null) {
          if (keyNode) this.record(keyNode, [...path, key]);
          out[key] = null;
        } else {
          out[key] = this.convert(valueNode, [...path, key], depth + 1);
        }
      }
      // YAML merge keys: the map's own keys win over merged ones.
      for (const src of merged.reverse()) {
        for (const [k, v] of Object.entries(src)) if (!Object.hasOwn(out, k)) out[k] = v;
      }
      return out;
    }
    throw this.error(node, "Unsupported YAML node");
  }

  private mergeSources(value: Node | null, path: KeySegment[], depth: number): CfgObject[] {
    if (value === null) return [];
    const items = isSeq(value) ? (value.items as Node[]) : [value];
    return items.map((item) => {
      const v = this.convert(item, path, depth + 1);
      if (!isCfgObject(v)) throw this.error(item, "A YAML merge key '<<' needs a mapping");
      return v;
    });
  }

  private key(node: Node): string {
    if (isScalar(node)) {
      const v = this.scalar(node);
      return v === null ? "null" : String(v);
    }
    throw this.error(node, "Config keys must be scalars, not lists or mappings");
  }

  private scalar(node: Scalar): null | boolean | number | string {
    const text = String(node.value ?? "");
    const tag = node.tag?.startsWith(TAG_PREFIX) ? node.tag.slice(TAG_PREFIX.length) : node.tag;
    if (tag !== undefined && tag !== "str" && tag !== "!") return this.tagged(node, tag, text);
    if (node.type === Scalar.PLAIN && tag === undefined) return resolvePlainScalar(text);
    return text;
  }

  private tagged(node: Scalar, tag: string, text: string): null | boolean | number | string {
    const v = resolvePlainScalar(text);
    switch (tag) {
      case "null":
        if (v === null) return null;
        break;
      case "bool":
        if (typeof v === "boolean") return v;
        break;
      case "int": {
        const n = parseYamlInt(text);
        if (n !== undefined) return n;
        break;
      }
      case "float":
        if (typeof v === "number") return v;
        break;
      default:
        throw this.error(node, `Unsupported YAML tag '!!${tag}'`);
    }
    throw this.error(node, `'${text}' is not a valid !!${tag}`);
  }

  private record(node: Node, path: KeySegment[]): void {
    const pos = this.position(node);
    if (pos) this.origins.set(path, { source: this.source, line: pos.line, column: pos.col });
  }

  private position(node: Node): { line: number; col: number } | undefined {
    const offset = node.range?.[0];
    return offset === undefined ? undefined : this.lines.linePos(offset);
  }

  private error(node: Node, message: string): ConfigError {
    const pos = this.position(node);
    return new ConfigError(message, {
      origin: pos
        ? { source: this.source, line: pos.line, column: pos.col }
        : { source: this.source },
    });
  }
}
