import { ConfigError } from "./errors.ts";

type PyValue = number | PyValue[];

/**
 * Evaluates the small Python expressions ROLL configs write for device lists,
 * such as `list(range(0,16))`, `[0,1,2]`, `list(range(0,8)) + [9]` or
 * `[0]*4`. Only integers, lists, `list()`, `range()`, `+` and `*` are allowed.
 *
 * @example
 * ```ts
 * import { evalPythonList } from "./python_expr.ts";
 * evalPythonList("list(range(0,4))"); // [0, 1, 2, 3]
 * ```
 */
export function evalPythonList(text: string): number[] {
  const p = new ExprParser(text);
  const value = p.expr();
  p.space();
  if (!p.done()) throw p.fail("unexpected text");
  if (!Array.isArray(value) || !value.every((v) => typeof v === "number")) {
    throw p.fail("the expression does not give a list of integers");
  }
  return value as number[];
}

class ExprParser {
  i = 0;
  constructor(readonly text: string) {}

  done(): boolean {
    return this.i >= this.text.length;
  }

  space(): void {
    while (!this.done() && /\s/.test(this.text[this.i]!)) this.i++;
  }

  fail(what: string): ConfigError {
    return new ConfigError(`Cannot evaluate ${JSON.stringify(this.text)}: ${what}`, {
      found: this.text,
      expected: "a list of integers, e.g. [0,1] or list(range(0,8))",
    });
  }

  /** Consumes a token; a call token such as `list(` may have spaces before the `(`. */
  eat(token: string): boolean {
    this.space();
    const call = token.endsWith("(") && token.length > 1;
    const pattern = call ? new RegExp(`^${token.slice(0, -1)}\\s*\\(`) : undefined;
    const m = pattern?.exec(this.text.slice(this.i));
    if (m) {
      this.i += m[0].length;
      return true;
    }
    if (!call && this.text.startsWith(token, this.i)) {
      this.i += token.length;
      return true;
    }
    return false;
  }

  expect(token: string): void {
    if (!this.eat(token)) throw this.fail(`expected '${token}'`);
  }

  expr(): PyValue {
    let value = this.term();
    while (this.eat("+")) {
      const right = this.term();
      if (typeof value === "number" && typeof right === "number") value += right;
      else if (Array.isArray(value) && Array.isArray(right)) value = [...value, ...right];
      else throw this.fail("'+' needs two lists or two integers");
    }
    return value;
  }

  term(): PyValue {
    let value = this.atom();
    while (this.eat("*")) {
      const right = this.atom();
      if (typeof value === "number" && typeof right === "number") value *= right;
      else if (Array.isArray(value) !== Array.isArray(right)) {
        const list = (Array.isArray(value) ? value : right) as PyValue[];
        const times = (Array.isArray(value) ? right : value) as number;
        value = Array.from({ length: Math.max(0, times) }, () => list).flat(1);
      } else throw this.fail("'*' needs a list and an integer");
    }
    return value;
  }

  atom(): PyValue {
    this.space();
    if (this.eat("(")) {
      const v = this.expr();
      this.expect(")");
      return v;
    }
    if (this.eat("[")) {
      const items: PyValue[] = [];
      if (this.eat("]")) return items;
      do items.push(this.expr()); while (this.eat(","));
      this.expect("]");
      return items;
    }
    if (this.eat("list(")) {
      const v = this.expr();
      this.expect(")");
      if (!Array.isArray(v)) throw this.fail("list() needs a range or a list");
      return v;
    }
    if (this.eat("range(")) {
      const args: number[] = [];
      do args.push(this.int()); while (this.eat(","));
      this.expect(")");
      if (args.length > 3) throw this.fail("range() takes at most 3 arguments");
      const [a, b, c] = args.length === 1 ? [0, args[0]!, 1] : [args[0]!, args[1]!, args[2] ?? 1];
      if (c === 0) throw this.fail("range() step must not be zero");
      const out: number[] = [];
      for (let x = a; c > 0 ? x < b : x > b; x += c) {
        out.push(x);
        if (out.length > 1_000_000) throw this.fail("range() is too long");
      }
      return out;
    }
    return this.int();
  }

  int(): number {
    this.space();
    const m = /^[-+]?\d+/.exec(this.text.slice(this.i));
    if (!m) throw this.fail(`expected an integer at character ${this.i + 1}`);
    this.i += m[0].length;
    return Number(m[0]);
  }
}
