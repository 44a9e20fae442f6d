import { ConfigError } from "./errors.ts";
import { parseKeyPath } from "./key_path.ts";
import type { KeySegment } from "./types.ts";

/**
 * A piece of a string value: literal text, a `${key}` reference, a reference whose key is
 * itself built by interpolations (`${a.${b}}`, resolved when it is read), or a
 * `${resolver:args}` call.
 */
export type Piece =
  | { kind: "text"; text: string }
  | { kind: "node"; source: string; up: number; segments: KeySegment[] }
  | { kind: "dynamic"; source: string; key: Piece[] }
  | { kind: "call"; source: string; name: string; args: ResolverArg[] };

/** One argument of a resolver call: its pieces, and whether it was quoted. */
export interface ResolverArg {
  pieces: Piece[];
  quoted: boolean;
}

/** Whether a string holds an interpolation or an escaped `\${`. */
export function hasInterpolation(value: string): boolean {
  return value.includes("${");
}

/**
 * Parses an OmegaConf string value into pieces: `${a.b}`, `${.x}`, `${..x}`,
 * `${a[0]}`, `${a.${b}}` (a key made by interpolations), `${oc.env:VAR,default}`
 * (arguments may nest interpolations), and `\${` escapes for a literal `${`.
 */
export function parseInterpolation(text: string): Piece[] {
  const p = new Parser(text);
  const pieces = p.pieces(() => false);
  if (!p.done()) throw p.fail("unexpected '}'");
  return pieces;
}

class Parser {
  i = 0;
  constructor(readonly text: string) {}

  done(): boolean {
    return this.i >= this.text.length;
  }

  fail(what: string): ConfigError {
    return new ConfigError(`Invalid interpolation in ${JSON.stringify(this.text)}: ${what}`, {
      found: `${what} at character ${this.i + 1}`,
      expected: "${key}, ${.relative}, or ${resolver:arg,...}",
    });
  }

  /** Text and interpolations up to a stop character (not consumed). */
  pieces(stop: (ch: string) => boolean): Piece[] {
    const out: Piece[] = [];
    let text = "";
    const push = () => {
      if (text !== "") out.push({ kind: "text", text });
      text = "";
    };
    while (!this.done()) {
      const ch = this.text[this.i]!;
      if (ch === "\\" && this.text.startsWith("\\${", this.i)) {
        text += "${";
        this.i += 3;
      } else if (ch === "\\" && this.text.startsWith("\\\\${", this.i)) {
        text += "\\";
        this.i += 2;
      } else if (ch === "\\" && this.i + 1 < this.text.length && stop(this.text[this.i + 1]!)) {
        text += this.text[this.i + 1];
        this.i += 2;
      } else if (ch === "$" && this.text[this.i + 1] === "{") {
        push();
        out.push(this.interpolation());
      } else if (stop(ch)) {
        break;
      } else {
        text += ch;
        this.i++;
      }
    }
    push();
    return out;
  }

  interpolation(): Piece {
    const start = this.i;
    this.i += 2;
    this.skipSpace();
    const head = /^[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*\s*:/.exec(this.text.slice(this.i));
    let piece: Piece;
    if (head) {
      const name = head[0].slice(0, -1).trim();
      this.i += head[0].length;
      const args = this.args();
      piece = { kind: "call", source: "", name, args };
    } else {
      const close = this.findClose();
      const body = this.text.slice(this.i, close).trim();
      if (body === "") throw this.fail("empty ${}");
      if (body.includes("${")) {
        // OmegaConf's nested interpolation: the key is known only once its parts resolve
        piece = { kind: "dynamic", source: "", key: trimPieces(this.pieces((ch) => ch === "}")) };
      } else {
        if (!isPlainKey(body)) throw this.fail(`invalid key '${body}'`);
        piece = keyPiece(body);
        this.i = close;
      }
    }
    this.skipSpace();
    if (this.text[this.i] !== "}") throw this.fail("missing '}'");
    this.i++;
    piece.source = this.text.slice(start, this.i);
    return piece;
  }

  findClose(): number {
    const close = this.text.indexOf("}", this.i);
    if (close < 0) throw this.fail("missing '}'");
    return close;
  }

  args(): ResolverArg[] {
    const args: ResolverArg[] = [];
    this.skipSpace();
    if (this.text[this.i] === "}") return args;
    for (;;) {
      this.skipSpace();
      const q = this.text[this.i];
      if (q === "'" || q === '"') {
        this.i++;
        const pieces = this.pieces((ch) => ch === q);
        if (this.text[this.i] !== q) throw this.fail("unterminated quoted argument");
        this.i++;
        args.push({ pieces, quoted: true });
      } else {
        // a [list] or {dict} argument holds commas and braces of its own
        let depth = 0;
        const pieces = this.pieces((ch) => {
          if (ch === "[" || ch === "{") depth++;
          else if ((ch === "]" || ch === "}") && depth > 0) {
            depth--;
            return false;
          }
          return depth === 0 && (ch === "," || ch === "}");
        });
        args.push({ pieces: trimPieces(pieces), quoted: false });
      }
      this.skipSpace();
      if (this.text[this.i] === ",") {
        this.i++;
        continue;
      }
      if (this.text[this.i] === "}") return args;
      throw this.fail("expected ',' or '}' after an argument");
    }
  }

  skipSpace(): void {
    while (!this.done() && /\s/.test(this.text[this.i]!)) this.i++;
  }
}

/** The reference piece for a key such as `a.b`, `.x` or `..a[0]` (its source left empty). */
export function keyPiece(key: string): Extract<Piece, { kind: "node" }> {
  const up = /^\.*/.exec(key)![0].length;
  return { kind: "node", source: "", up, segments: parseKeyPath(key.slice(up)) };
}

/** Whether `key` may name a node: no interpolation syntax, quotes or spaces in it. */
export function isPlainKey(key: string): boolean {
  return key !== "" && !/[${}:,'"\s]/.test(key);
}

function trimPieces(pieces: Piece[]): Piece[] {
  const out = pieces.map((p) => ({ ...p }));
  const first = out[0];
  if (first?.kind === "text") first.text = first.text.trimStart();
  const last = out[out.length - 1];
  if (last?.kind === "text") last.text = last.text.trimEnd();
  return out.filter((p) => p.kind !== "text" || p.text !== "");
}
