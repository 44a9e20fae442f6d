// Hydra's cast functions for override values: int(), float(), str(), bool(), json_str().
// They apply to every leaf of a list or dict (dict keys stay), as in Hydra's grammar.
import { ConfigError } from "./errors.ts";
import { pythonNumber } from "./python_format.ts";
import type { CfgValue } from "./types.ts";

/** The cast functions an override value may call. */
export const CAST_FUNCTIONS = ["int", "float", "str", "bool", "json_str"] as const;
/** One of {@linkcode CAST_FUNCTIONS}. */
export type CastName = typeof CAST_FUNCTIONS[number];

/**
 * A float while a cast reads it: Python tells `1.0` from `1` (`str(1.0)` is "1.0"), and a
 * JS number cannot. It never leaves the override parser: the outermost cast unwraps it.
 */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** An integer literal past 2^53 inside a cast: its digits, which `str()` keeps exactly. */
export class PyInt {
  constructor(readonly text: string) {}
}

/** A parsed value inside a cast's parentheses: floats and big integers stay marked. */
export type CastInput =
  | CfgValue
  | PyFloat
  | PyInt
  | CastInput[]
  | { [key: string]: CastInput };

/** Applies cast `name` to `value` (leaf by leaf for lists and dicts). */
export function applyCast(name: CastName, value: CastInput): CastInput {
  if (name === "json_str") return jsonStr(value);
  return mapLeaves(value, (leaf) => {
    if (leaf === null) throw castError(name, leaf, "null has no such conversion");
    switch (name) {
      case "int":
        return toInt(leaf);
      case "float":
        return new PyFloat(toFloat(leaf));
      case "str":
        return toStr(leaf);
      case "bool":
        return toBool(leaf);
    }
  });
}

/** `value` with every {@linkcode PyFloat} and {@linkcode PyInt} replaced by its number. */
export function unwrapMarked(value: CastInput): CfgValue {
  return mapLeaves(
    value,
    (leaf) =>
      leaf instanceof PyFloat ? leaf.value : leaf instanceof PyInt ? Number(leaf.text) : leaf,
  ) as CfgValue;
}

/** `value` with `f` applied to each leaf of its lists and dicts (dict keys stay). */
function mapLeaves(value: CastInput, f: (leaf: Leaf | null) => CastInput): CastInput {
  if (Array.isArray(value)) return value.map((v) => mapLeaves(v, f));
  if (isDict(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapLeaves(v, f)]));
  }
  return f(value);
}

/** `str()` of a Python float: `1.0`, `0.1`, `1e-05`, `inf`. */
export function pythonFloatStr(n: number): string {
  if (Object.is(n, -0)) return "-0.0";
  const text = pythonNumber(n);
  return /^-?\d+$/.test(text) ? `${text}.0` : text;
}

type Leaf = boolean | number | string | PyFloat | PyInt;

function isDict(v: CastInput): v is { [key: string]: CastInput } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof PyFloat) &&
    !(v instanceof PyInt);
}

const INT_TEXT = /^[-+]?\d+(?:_\d+)*$/;
const FLOAT_TEXT =
  /^[-+]?(?:\d+(?:_\d+)*(?:\.(?:\d+(?:_\d+)*)?)?|\.\d+(?:_\d+)*)(?:[eE][-+]?\d+(?:_\d+)*)?$/;

function toInt(v: Leaf): number | PyInt {
  if (v instanceof PyInt) return v;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "number") return v;
  if (v instanceof PyFloat) {
    if (!Number.isFinite(v.value)) throw castError("int", v, "it is not a finite number");
    return Math.trunc(v.value) || 0; // Python's int() truncates toward zero; no -0
  }
  const text = v.trim();
  if (!INT_TEXT.test(text)) throw castError("int", v, "the text is not an integer");
  return intOf(text);
}

/** An integer literal's value: a number, or its digits when a number cannot hold them. */
export function intOf(text: string): number | PyInt {
  const digits = text.replaceAll("_", "").replace(/^\+/, "");
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : new PyInt(digits.replace(/^(-?)0+(?=\d)/, "$1"));
}

function toFloat(v: Leaf): number {
  if (v instanceof PyInt) return Number(v.text);
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "number") return v;
  if (v instanceof PyFloat) return v.value;
  const text = v.trim();
  const lower = text.toLowerCase().replace(/^[-+]/, "");
  const sign = text.startsWith("-") ? -1 : 1;
  if (lower === "inf" || lower === "infinity") return sign * Infinity;
  if (lower === "nan") return NaN;
  if (!FLOAT_TEXT.test(text)) throw castError("float", v, "the text is not a number");
  return Number(text.replaceAll("_", ""));
}

function toStr(v: Leaf): string {
  if (v instanceof PyInt) return v.text;
  if (typeof v === "boolean") return v ? "true" : "false"; // Hydra lower-cases booleans
  if (typeof v === "number") return BigInt(v).toString(); // an int: floats come as PyFloat
  if (v instanceof PyFloat) return pythonFloatStr(v.value);
  return v;
}

function toBool(v: Leaf): boolean {
  if (v instanceof PyInt) return true; // past 2^53: never 0
  if (typeof v === "boolean") return v;
  if (typeof v === "number") return v !== 0;
  if (v instanceof PyFloat) return v.value !== 0; // Python: bool(nan) is True
  const lower = v.toLowerCase();
  if (lower === "true") return true;
  if (lower === "false") return false;
  throw castError("bool", v, "only the text true or false converts");
}

/** Python's json.dumps (default separators, ASCII only) of the value, quotes dropped. */
function jsonStr(value: CastInput): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return BigInt(value).toString();
  if (value instanceof PyInt) return value.text;
  if (value instanceof PyFloat) {
    const n = value.value;
    if (Number.isNaN(n)) return "NaN";
    if (!Number.isFinite(n)) return n > 0 ? "Infinity" : "-Infinity";
    return pythonFloatStr(n);
  }
  if (typeof value === "string") {
    return JSON.stringify(value).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
  }
  if (Array.isArray(value)) return `[${value.map(jsonStr).join(", ")}]`;
  return `{${Object.entries(value).map(([k, v]) => `${jsonStr(k)}: ${jsonStr(v)}`).join(", ")}}`;
}

function castError(name: CastName, v: Leaf | null, why: string): ConfigError {
  const shown = v instanceof PyFloat
    ? pythonFloatStr(v.value)
    : v instanceof PyInt
    ? v.text
    : JSON.stringify(v);
  return new ConfigError(`Cannot cast ${shown} to ${name}: ${why}`, {
    found: `${name}(${shown})`,
    expected: name === "bool"
      ? "bool() of true/false (any case), a number or a boolean"
      : `${name}() of a number, a boolean or text that reads as one`,
    hint: "to pass the text as it is, quote the whole value",
  });
}
