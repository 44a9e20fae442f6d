// Helpers the op wrappers share: shape checks and pointer conversion.
import { expectTensor, type Tensor } from "../tensor.ts";

export { expectTensor };

/** A tensor's pointer, or null for an absent optional argument. */
export function ptrOf(t: Tensor | null | undefined): Deno.PointerObject | null {
  return t == null ? null : t.ptr;
}

/** Throws unless `value` is an integer in [min, max]. */
export function expectInt(value: number, name: string, min = 1, max = 2 ** 31 - 1): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer in ${min}..${max}, got ${value}`);
  }
}

/** Throws unless `value` is a finite number (and positive when asked). */
export function expectNumber(value: number, name: string, positive = false): void {
  if (!Number.isFinite(value) || (positive && !(value > 0))) {
    throw new RangeError(
      `${name} must be a ${positive ? "positive" : "finite"} number, got ${value}`,
    );
  }
}

/** The dimension of `t` at `axis`. */
export function dim(t: Tensor, axis: number): number {
  return t.shape[axis]!;
}

/**
 * Checks a weight matrix (fp32, or bf16 for mixed precision) and returns
 * whether it is bf16 (the caller then uses the `_bf16` symbol).
 */
export function expectWeight(w: Tensor, name: string, shape: readonly number[]): boolean {
  const bf16 = w instanceof Object && w.dtype === "bf16";
  expectTensor(w, name, bf16 ? "bf16" : "f32", shape);
  return bf16;
}
