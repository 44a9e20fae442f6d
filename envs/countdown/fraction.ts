/**
 * Exact rational numbers over `bigint`, so that Countdown answers are judged
 * without floating-point error or overflow.
 *
 * @module
 */

/** A reduced fraction `num / den` with `den > 0`. */
export interface Fraction {
  readonly num: bigint;
  readonly den: bigint;
}

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/**
 * The reduced fraction `num / den`; throws a RangeError for a zero denominator.
 *
 * @example
 * ```ts
 * import { fraction } from "./fraction.ts";
 * console.log(fraction(6n, -4n)); // { num: -3n, den: 2n }
 * ```
 */
export function fraction(num: bigint, den = 1n): Fraction {
  if (den === 0n) throw new RangeError("Division by zero");
  if (den < 0n) [num, den] = [-num, -den];
  const g = gcd(num, den);
  return g > 1n ? { num: num / g, den: den / g } : { num, den };
}

/** `a + b`, `a - b`, `a * b` or `a / b` (a RangeError when dividing by zero). */
export function applyOp(op: string, a: Fraction, b: Fraction): Fraction {
  switch (op) {
    case "+":
      return fraction(a.num * b.den + b.num * a.den, a.den * b.den);
    case "-":
      return fraction(a.num * b.den - b.num * a.den, a.den * b.den);
    case "*":
      return fraction(a.num * b.num, a.den * b.den);
    case "/":
      return fraction(a.num * b.den, a.den * b.num);
    default:
      throw new RangeError(`Unknown operator '${op}': expected + - * /`);
  }
}

/** Whether the fraction is the integer `n`. */
export function equalsInteger(f: Fraction, n: number): boolean {
  return f.den === 1n && f.num === BigInt(n);
}

/** The fraction as text: `7`, `-3/2`. */
export function formatFraction(f: Fraction): string {
  return f.den === 1n ? `${f.num}` : `${f.num}/${f.den}`;
}
