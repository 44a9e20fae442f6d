// Argument checks shared by lib/algo: each throws an Error that names the value
// and says what was expected.
import type { TokenValues } from "./types.ts";

/** Throws unless `value` is one of `allowed`; narrows it. */
export function checkOneOf<T extends string>(
  value: unknown,
  allowed: readonly T[],
  name: string,
): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new RangeError(
      `Unknown ${name} ${JSON.stringify(value)}: expected one of ${allowed.join(", ")}`,
    );
  }
  return value as T;
}

/** Throws unless `value` is a finite number. */
export function checkFinite(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new RangeError(`${name} must be a finite number, got ${String(value)}`);
  }
  return value;
}

/** Throws unless `value` is a finite number > 0. */
export function checkPositive(value: unknown, name: string): number {
  checkFinite(value, name);
  if ((value as number) <= 0) throw new RangeError(`${name} must be > 0, got ${value}`);
  return value as number;
}

/** Throws unless 0 <= value <= 1. */
export function checkUnit(value: unknown, name: string): number {
  checkFinite(value, name);
  if ((value as number) < 0 || (value as number) > 1) {
    throw new RangeError(`${name} must be in [0, 1], got ${value}`);
  }
  return value as number;
}

/** Throws unless `values` has `length` elements. */
export function checkLength(values: TokenValues, length: number, name: string): void {
  if (values.length !== length) {
    throw new RangeError(
      `${name} has ${values.length} elements, expected ${length} (one per token)`,
    );
  }
}

/** Throws unless every element of `mask` is 0 or 1. */
export function checkMask(mask: TokenValues, name: string): void {
  for (let i = 0; i < mask.length; i++) {
    const m = mask[i];
    if (m !== 0 && m !== 1) {
      throw new RangeError(`${name}[${i}] is ${m}, expected 0 or 1`);
    }
  }
}

/** Throws unless `rows` and `masks` have the same count and each pair the same length. */
export function checkRows(
  rows: readonly TokenValues[],
  masks: readonly TokenValues[],
  rowName: string,
  maskName: string,
): void {
  if (rows.length !== masks.length) {
    throw new RangeError(
      `${rowName} has ${rows.length} rows but ${maskName} has ${masks.length}: expected one mask per row`,
    );
  }
  for (let b = 0; b < rows.length; b++) {
    checkLength(rows[b]!, masks[b]!.length, `${rowName}[${b}]`);
    checkMask(masks[b]!, `${maskName}[${b}]`);
  }
}
