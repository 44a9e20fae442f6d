// Helpers the op wrappers share: shape checks and pointer conversion.
import type { Kernels } from "../kernels.ts";
import { expectTensor, type Tensor } from "../tensor.ts";

export { expectTensor };

/** A tensor's pointer for an op on `k`, or null for an absent optional argument. */
export function ptrOf(k: Kernels, t: Tensor | null | undefined): Deno.PointerObject | null {
  return t == null ? null : t.ptrIn(k);
}

/** Throws unless `value` is an integer in [min, max]. */
export function expectInt(value: number, name: string, min = 1, max = 2 ** 31 - 1): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer in ${min}..${max}, got ${value}`);
  }
}

/**
 * Throws unless `value` is a finite number (and positive when asked) that keeps its meaning as
 * a float32, the type the kernels take it as: not past 3.4e38 (Infinity there) and not so
 * small that it becomes 0.
 */
export function expectNumber(value: number, name: string, positive = false): void {
  const f32 = Math.fround(value);
  if (
    !Number.isFinite(value) || (positive && !(value > 0)) || !Number.isFinite(f32) ||
    (value !== 0 && f32 === 0)
  ) {
    throw new RangeError(
      `${name} must be a ${positive ? "positive" : "finite"} number, got ${value} (the ` +
        `kernels take it as a float32: at most 3.4e38 in size${
          positive ? " and at least 1.4e-45" : ", and 0 or at least 1.4e-45 in size"
        })`,
    );
  }
}

/** Whether `x` is a positive number a float32 holds as a normal value (its reciprocal too). */
export function isNormalF32(x: unknown): x is number {
  return typeof x === "number" && x >= 2 ** -126 && Number.isFinite(Math.fround(x));
}

/**
 * Throws unless `value` is a positive number whose reciprocal a float32 holds: a normal
 * float32 (1.2e-38..3.4e38), for the scalars the kernels divide by (a temperature).
 */
export function expectDivisor(value: number, name: string): void {
  if (!isNormalF32(value)) {
    throw new RangeError(
      `${name} must be a positive number in 1.2e-38..3.4e38, got ${value} (the kernels ` +
        "divide by it as a float32)",
    );
  }
}

/** The wildcard shape of `t`'s rank: any shape (for ops over same-shaped tensors). */
export const anyShape = (t: Tensor): number[] => t?.shape?.map(() => -1) ?? [];

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

type Named = readonly [name: string, tensor: Tensor | null | undefined];

/**
 * Throws if an output's memory overlaps an input's or another output's: ops that read an
 * input after writing part of an output would compute from overwritten values.
 */
export function expectDisjoint(outputs: readonly Named[], inputs: readonly Named[]): void {
  // (plain loops over numbers: this runs on every call of the ops that check it)
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i]![1];
    if (!o) continue;
    const [start, end] = [o.address, o.address + o.byteSize];
    for (let j = i + 1; j < outputs.length + inputs.length; j++) {
      const [name, t] = j < outputs.length ? outputs[j]! : inputs[j - outputs.length]!;
      if (t && start < t.address + t.byteSize && t.address < end) {
        throw new RangeError(
          `${outputs[i]![0]} and ${name} share memory: this op needs its outputs apart from ` +
            "its inputs and from each other",
        );
      }
    }
  }
}

/**
 * Throws if an output partly overlaps an input: for elementwise ops, which may write in place
 * (the output is the input, same start and size) but compute garbage from a shifted view.
 */
export function expectSameOrApart(outputs: readonly Named[], inputs: readonly Named[]): void {
  for (const [oName, o] of outputs) {
    if (!o) continue;
    const oStart = o.address;
    for (const [iName, i] of inputs) {
      if (!i || i === o) continue;
      const iStart = i.address;
      const same = iStart === oStart && i.byteSize === o.byteSize;
      const apart = oStart + o.byteSize <= iStart || iStart + i.byteSize <= oStart;
      if (!same && !apart) {
        throw new RangeError(
          `${oName} and ${iName} partly share memory: this op may write in place (${oName} the ` +
            `same tensor as ${iName}) or apart from it, not into a shifted view`,
        );
      }
    }
  }
}
