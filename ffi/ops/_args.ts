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

/** The smallest normal float32: below it a value loses precision, and its reciprocal overflows. */
const F32_MIN_NORMAL = 2 ** -126;

/**
 * Throws unless `value` is a finite number (and positive when asked) that keeps its meaning as
 * a float32, the type the kernels take it as: not past 3.4e38 (Infinity there) and, unless 0,
 * not below 1.2e-38 (a subnormal, whose reciprocal is Infinity).
 */
export function expectNumber(value: number, name: string, positive = false): void {
  const f32 = Math.fround(value);
  if (
    !Number.isFinite(value) || (positive && !(value > 0)) || !Number.isFinite(f32) ||
    (value !== 0 && Math.abs(f32) < F32_MIN_NORMAL)
  ) {
    throw new RangeError(
      `${name} must be a ${positive ? "positive" : "finite"} number, got ${value} (the ` +
        "kernels take it as a float32: at most 3.4e38 in size, and 0 or at least 1.2e-38)",
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

type Named = readonly [name: string, tensor: Tensor | null | undefined];

/**
 * Throws if an output's memory overlaps an input's or another output's: ops that read an
 * input after writing part of an output would compute from overwritten values.
 */
export function expectDisjoint(outputs: readonly Named[], inputs: readonly Named[]): void {
  const span = ([name, t]: Named) => {
    if (!t) return null;
    const start = Deno.UnsafePointer.value(t.ptr);
    return { name, start, end: start + BigInt(t.byteSize) };
  };
  const outs = outputs.map(span).filter((x) => x !== null);
  const all = [...outs, ...inputs.map(span).filter((x) => x !== null)];
  outs.forEach((o, i) => {
    for (const other of all.slice(i + 1)) {
      if (o.start < other.end && other.start < o.end) {
        throw new RangeError(
          `${o.name} and ${other.name} share memory: this op needs its outputs apart from ` +
            "its inputs and from each other",
        );
      }
    }
  });
}

/**
 * Throws if an output partly overlaps an input: for elementwise ops, which may write in place
 * (the output is the input, same start and size) but compute garbage from a shifted view.
 */
export function expectSameOrApart(outputs: readonly Named[], inputs: readonly Named[]): void {
  for (const [oName, o] of outputs) {
    if (!o) continue;
    const oStart = Deno.UnsafePointer.value(o.ptr);
    for (const [iName, i] of inputs) {
      if (!i || i === o) continue;
      const iStart = Deno.UnsafePointer.value(i.ptr);
      const same = iStart === oStart && i.byteSize === o.byteSize;
      const apart = oStart + BigInt(o.byteSize) <= iStart || iStart + BigInt(i.byteSize) <= oStart;
      if (!same && !apart) {
        throw new RangeError(
          `${oName} and ${iName} partly share memory: this op may write in place (${oName} the ` +
            `same tensor as ${iName}) or apart from it, not into a shifted view`,
        );
      }
    }
  }
}
