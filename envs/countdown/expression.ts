/**
 * Countdown answers: arithmetic expressions of integer literals, `+ - * /` and
 * parentheses (no unary signs, no decimals), parsed without `eval` and
 * evaluated exactly.
 *
 * @module
 */
import { applyOp, type Fraction, fraction } from "./fraction.ts";

/** A parsed expression: its value (undefined after a division by zero) and its literals. */
export interface ParsedExpression {
  /** The exact value, or undefined when the expression divides by zero. */
  value: Fraction | undefined;
  /** The integer literals in order of appearance. */
  numbers: number[];
}

/** Longest expression accepted (characters); longer answers are not expressions. */
export const MAX_EXPRESSION_LENGTH = 1000;

/**
 * Parses an expression; undefined when the text is not one (a stray character,
 * unbalanced parentheses, a missing operand, more than
 * {@linkcode MAX_EXPRESSION_LENGTH} characters or nesting deeper than 100).
 *
 * @example
 * ```ts
 * import { parseExpression } from "./expression.ts";
 * const e = parseExpression("(25 - 5) * 2 + 8")!;
 * console.log(e.value, e.numbers); // { num: 48n, den: 1n } [25, 5, 2, 8]
 * console.log(parseExpression("2 ** 3")); // undefined
 * ```
 */
export function parseExpression(text: string): ParsedExpression | undefined {
  if (text.length > MAX_EXPRESSION_LENGTH) return undefined;
  const tokens = text.match(/\d+|[-+*/()]|\S/g) ?? [];
  const numbers: number[] = [];
  let i = 0;
  let divByZero = false;
  let depth = 0;

  const expr = (): Fraction | undefined => {
    let left = term();
    while (left && (tokens[i] === "+" || tokens[i] === "-")) {
      const op = tokens[i++]!;
      const right = term();
      if (!right) return undefined;
      left = combine(op, left, right);
    }
    return left;
  };
  const term = (): Fraction | undefined => {
    let left = factor();
    while (left && (tokens[i] === "*" || tokens[i] === "/")) {
      const op = tokens[i++]!;
      const right = factor();
      if (!right) return undefined;
      left = combine(op, left, right);
    }
    return left;
  };
  const factor = (): Fraction | undefined => {
    const t = tokens[i];
    if (t === undefined) return undefined;
    if (/^\d+$/.test(t)) {
      i++;
      const n = Number(t);
      if (!Number.isSafeInteger(n)) return undefined;
      numbers.push(n);
      return fraction(BigInt(t));
    }
    if (t === "(") {
      if (++depth > 100) return undefined;
      i++;
      const inner = expr();
      if (!inner || tokens[i] !== ")") return undefined;
      i++;
      depth--;
      return inner;
    }
    return undefined;
  };
  // Division by zero poisons the value but keeps the parse going (the text is still an expression).
  const ZERO = fraction(0n);
  const combine = (op: string, a: Fraction, b: Fraction): Fraction => {
    if (op === "/" && b.num === 0n) {
      divByZero = true;
      return ZERO;
    }
    return applyOp(op, a, b);
  };

  if (tokens.length === 0) return undefined;
  const value = expr();
  if (!value || i !== tokens.length) return undefined;
  return { value: divByZero ? undefined : value, numbers };
}

/**
 * Whether `used` is the same multiset as `available` (each number used exactly
 * once, as TinyZero's Countdown reward requires).
 *
 * @example
 * ```ts
 * import { usesExactly } from "./expression.ts";
 * console.log(usesExactly([5, 25, 2, 8], [2, 5, 8, 25])); // true
 * console.log(usesExactly([5, 5], [5])); // false
 * ```
 */
export function usesExactly(used: readonly number[], available: readonly number[]): boolean {
  if (used.length !== available.length) return false;
  const a = [...used].sort((x, y) => x - y), b = [...available].sort((x, y) => x - y);
  return a.every((v, k) => v === b[k]);
}
