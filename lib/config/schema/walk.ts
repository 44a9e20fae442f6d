import type { z } from "npm:zod@4.6.7";
import type { KeySegment } from "../types.ts";

type AnySchema = z.core.$ZodType;

interface Def {
  type: string;
  shape?: Record<string, AnySchema>;
  innerType?: AnySchema;
  in?: AnySchema;
  out?: AnySchema;
  valueType?: AnySchema;
  element?: AnySchema;
  options?: AnySchema[];
}

function defOf(schema: AnySchema): Def {
  return schema._zod.def as unknown as Def;
}

/** Strips defaults, optionals, nullables and pipes to the schema that holds the shape. */
export function unwrap(schema: AnySchema): AnySchema[] {
  const def = defOf(schema);
  switch (def.type) {
    case "default":
    case "prefault":
    case "optional":
    case "nullable":
    case "readonly":
    case "catch":
      return unwrap(def.innerType!);
    case "pipe":
      return [...unwrap(def.in!), ...unwrap(def.out!)];
    case "union":
      return def.options!.flatMap(unwrap);
    default:
      return [schema];
  }
}

/** The schemas that describe the value at `path`, following objects, records and arrays. */
export function schemasAt(root: AnySchema, path: readonly KeySegment[]): AnySchema[] {
  let current = unwrap(root);
  for (const seg of path) {
    const next: AnySchema[] = [];
    for (const s of current) {
      const def = defOf(s);
      if (def.type === "object" && typeof seg === "string" && def.shape && seg in def.shape) {
        next.push(...unwrap(def.shape[seg]!));
      } else if (def.type === "record" && typeof seg === "string") {
        next.push(...unwrap(def.valueType!));
      } else if (def.type === "array" && (typeof seg === "number" || /^\d+$/.test(seg))) {
        next.push(...unwrap(def.element!));
      }
    }
    current = next;
    if (current.length === 0) break;
  }
  return current;
}

/** The field names an object schema at `path` declares (empty when it is not an object). */
export function keysAt(root: AnySchema, path: readonly KeySegment[]): string[] {
  const keys = new Set<string>();
  for (const s of schemasAt(root, path)) {
    const def = defOf(s);
    if (def.type === "object" && def.shape) { for (const k of Object.keys(def.shape)) keys.add(k); }
  }
  return [...keys];
}

/** Whether the schema declares a value at `path` (so an override may set it). */
export function declaresPath(root: AnySchema, path: readonly KeySegment[]): boolean {
  return path.length > 0 && schemasAt(root, path).length > 0;
}
