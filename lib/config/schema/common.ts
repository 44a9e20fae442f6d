import { z } from "npm:zod@4.6.7";
import { evalPythonList } from "../python_expr.ts";
import { ConfigError } from "../errors.ts";

/** A finite number (ints allowed where floats are expected, as in ROLL). */
export const num = z.number().refine(Number.isFinite, "expected a finite number");
/** The largest finite float32 (settings the kernels take as float32 stay under it). */
export const F32_MAX = 3.4028234663852886e38;
/** An integer. */
export const int = z.number().int();
/** A non-negative integer. */
export const count = z.number().int().nonnegative();
/** A positive integer. */
export const positive = z.number().int().positive();
/** A free-form mapping whose content other components check. */
export const freeDict = z.record(z.string(), z.unknown());

/**
 * A device list: a YAML list of ints, or the Python expression ROLL writes,
 * such as `list(range(0,8))`. `null` means no devices (CPU).
 */
export const deviceMapping = z.preprocess((value, ctx) => {
  if (typeof value !== "string") return value;
  try {
    return evalPythonList(value);
  } catch (e) {
    ctx.addIssue({
      code: "custom",
      message: e instanceof ConfigError ? e.message : String(e),
      input: value,
    });
    return z.NEVER;
  }
}, z.array(count).nullable());

/** Shorthand: a strict object (unknown keys are errors) whose fields all have defaults. */
export function section<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.strictObject(shape);
}
