import { ConfigError } from "./errors.ts";
import {
  applyCast,
  CAST_FUNCTIONS,
  type CastInput,
  type CastName,
  intOf,
  PyFloat,
  unwrapMarked,
} from "./override_casts.ts";
import type { CfgValue } from "./types.ts";

const SWEEP_FUNCTIONS = ["choice", "range", "interval", "glob", "sort", "shuffle", "tag"];

/**
 * Parses the value of a command-line override with Hydra's grammar: `null`,
 * booleans, ints (`1_000`), floats (`1e-5`, `inf`, `nan`), quoted strings,
 * lists `[a, b]` and dicts `{a: 1}`, and the cast functions `int()`, `float()`,
 * `str()`, `bool()` and `json_str()`. Anything else is a string (interpolations
 * such as `${seed}` included). Sweeps (`a,b`, `range(...)`) need multirun,
 * which this tool does not run, and are errors. With `functions: false`
 * (OmegaConf's `oc.decode` and resolver arguments) `str(5)` is only text.
 *
 * @example
 * ```ts
 * import { parseOverrideValue } from "./override_value.ts";
 * parseOverrideValue("[1_000, 1e-5, null, 'a b']"); // [1000, 0.00001, null, "a b"]
 * parseOverrideValue("str(1.0)"); // "1.0"
 * ```
 */
export function parseOverrideValue(text: string, options: { functions?: boolean } = {}): CfgValue {
  const p = new ValueParser(text, options.functions ?? true);
  p.skipSpace();
  if (p.done()) return "";
  const value = p.element(true) as CfgValue;
  p.skipSpace();
  if (p.text[p.i] === ",") {
    throw new ConfigError(`Ambiguous value '${text}': a comma-separated sweep needs multirun`, {
      found: text,
      expected: "a single value; write a list as [a,b] or quote the string",
    });
  }
  if (!p.done()) {
    const e = p.fail("unexpected text after the value");
    // e.g. float(lr)_run: a cast followed by text; quoted, it is all text
    throw new ConfigError(e.message, {
      ...e.details,
      hint: `quote it to pass it as text: '${text.trim().replaceAll("'", "\\'")}'`,
    });
  }
  return value;
}

const DIGITS = String.raw`\d(?:_?\d)*`;
const POINT = String.raw`(?:${DIGITS})?\.${DIGITS}|${DIGITS}\.`;
const INT = /^[-+]?(?:0|[1-9](?:_?\d)*)$/;
const FLOAT = new RegExp(String.raw`^[-+]?(?:${POINT}|(?:${DIGITS}|${POINT})[eE][-+]?\d+)$`);

/** Types an unquoted primitive as Hydra does. */
export function typePrimitive(raw: string): CfgValue {
  const text = raw.trim();
  const lower = text.toLowerCase();
  if (lower === "null") return null;
  if (lower === "true") return true;
  if (lower === "false") return false;
  // Hydra's override grammar: no leading zeros in an int, one '_' at a time between digits
  if (INT.test(text)) return Number(text.replaceAll("_", ""));
  if (/^[-+]?(?:inf|nan)$/.test(lower)) {
    if (lower.endsWith("nan")) return NaN;
    return lower.startsWith("-") ? -Infinity : Infinity;
  }
  if (FLOAT.test(text)) return Number(text.replaceAll("_", ""));
  return text;
}

const FUNCTION_CALL = /^([a-z_]+)\s*\(/;

class ValueParser {
  i = 0;
  /** How many cast calls enclose the position: floats stay marked inside one. */
  calls = 0;
  constructor(readonly text: string, readonly functions: boolean) {}

  done(): boolean {
    return this.i >= this.text.length;
  }

  fail(what: string): ConfigError {
    return new ConfigError(`Invalid override value '${this.text}': ${what}`, {
      found: `${what} at character ${this.i + 1}`,
      expected: "null, true/false, a number, a quoted string, [list] or {dict}",
    });
  }

  skipSpace(): void {
    while (!this.done() && /\s/.test(this.text[this.i]!)) this.i++;
  }

  element(top: boolean): CastInput {
    this.skipSpace();
    if (this.functions) {
      const fn = FUNCTION_CALL.exec(this.text.slice(this.i));
      if (fn && SWEEP_FUNCTIONS.includes(fn[1]!)) {
        throw new ConfigError(`Sweep '${fn[1]}(...)' needs multirun, which agentrl does not run`, {
          found: this.text,
          expected: "a single value (quote it to pass the text as a string)",
        });
      }
      if (fn && (CAST_FUNCTIONS as readonly string[]).includes(fn[1]!)) {
        this.i += fn[0].length;
        return this.call(fn[1] as CastName);
      }
    }
    const ch = this.text[this.i];
    if (ch === "[") return this.list();
    if (ch === "{") return this.dict();
    if (ch === "'" || ch === '"') return this.quoted();
    return this.primitive(top);
  }

  /** `name(value)` or `name(value=value)`, after the opening parenthesis. */
  call(name: CastName): CastInput {
    this.calls++;
    this.skipSpace();
    const named = /^value\s*=/.exec(this.text.slice(this.i));
    if (named) this.i += named[0].length;
    this.skipSpace();
    if (this.text[this.i] === ")") throw this.fail(`${name}() needs a value`);
    const value = applyCast(name, this.element(false));
    this.skipSpace();
    const ch = this.text[this.i];
    if (ch === ",") {
      throw new ConfigError(
        `Ambiguous value '${this.text}': ${name}() of several values is a sweep, which needs multirun`,
        { found: this.text, expected: `${name}(one value); write a list as [a,b]` },
      );
    }
    if (ch !== ")") throw this.fail(`expected ')' to close ${name}(`);
    this.i++;
    this.calls--;
    return this.calls > 0 ? value : unwrapMarked(value);
  }

  list(): CastInput[] {
    this.i++;
    const out: CastInput[] = [];
    this.skipSpace();
    if (this.text[this.i] === "]") {
      this.i++;
      return out;
    }
    for (;;) {
      out.push(this.element(false));
      this.skipSpace();
      const ch = this.text[this.i];
      this.i++;
      if (ch === "]") return out;
      if (ch !== ",") throw this.fail("expected ',' or ']' in a list");
    }
  }

  dict(): { [key: string]: CastInput } {
    this.i++;
    const out: { [key: string]: CastInput } = {};
    this.skipSpace();
    if (this.text[this.i] === "}") {
      this.i++;
      return out;
    }
    for (;;) {
      this.skipSpace();
      const key = this.dictKey();
      this.skipSpace();
      if (this.text[this.i] !== ":") throw this.fail("expected ':' after a dict key");
      this.i++;
      out[key] = this.element(false);
      this.skipSpace();
      const ch = this.text[this.i];
      this.i++;
      if (ch === "}") return out;
      if (ch !== ",") throw this.fail("expected ',' or '}' in a dict");
    }
  }

  dictKey(): string {
    const ch = this.text[this.i];
    if (ch === "'" || ch === '"') return this.quoted();
    const m = /^[^\s:,{}[\]'"]+/.exec(this.text.slice(this.i));
    if (!m) throw this.fail("expected a dict key");
    this.i += m[0].length;
    return m[0];
  }

  quoted(): string {
    const q = this.text[this.i]!;
    this.i++;
    let out = "";
    while (!this.done()) {
      const ch = this.text[this.i]!;
      if (ch === "\\" && (this.text[this.i + 1] === q || this.text[this.i + 1] === "\\")) {
        out += this.text[this.i + 1];
        this.i += 2;
      } else if (ch === q) {
        this.i++;
        return out;
      } else {
        out += ch;
        this.i++;
      }
    }
    throw this.fail("unterminated quoted string");
  }

  primitive(top: boolean): CastInput {
    let out = "";
    let depth = 0;
    while (!this.done()) {
      const ch = this.text[this.i]!;
      if (ch === "$" && this.text[this.i + 1] === "{") depth++;
      if (ch === "}" && depth > 0) depth--;
      else if (depth === 0 && (ch === "," || (!top && (ch === "]" || ch === "}")))) break;
      else if (depth === 0 && this.calls > 0 && ch === ")") break;
      else if (depth === 0 && !top && (ch === "[" || ch === "{")) {
        throw this.fail(`unexpected '${ch}'`);
      }
      if (ch === "\\" && "\\,[]{}():= '\"".includes(this.text[this.i + 1] ?? "$")) {
        out += this.text[this.i + 1];
        this.i += 2;
        continue;
      }
      out += ch;
      this.i++;
    }
    const value = typePrimitive(out);
    if (this.calls === 0 || typeof value !== "number") return value;
    // inside a cast, floats are marked so that str(1.0) gives "1.0" as in Python, and integers
    // past 2^53 keep their digits
    return INT.test(out.trim()) ? intOf(out.trim()) : new PyFloat(value);
  }
}
