/**
 * Checks of what an environment hands back (its reset and step results and its frames), so
 * that a custom env's mistake is an error naming the field instead of a NaN averaged into
 * the metrics, a success rate of 7, or a crash further on.
 *
 * @module
 */
import type { ResetResult, RgbFrame, StepResult } from "./types.ts";

/** An environment returned something that breaks the Env contract. */
export class EnvResultError extends Error {
  /** `message` names the call and the field. */
  constructor(message: string) {
    super(message);
    this.name = "EnvResultError";
  }
}

function show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.slice(0, 40));
  if (typeof value === "number" || typeof value === "boolean" || value == null) {
    return String(value);
  }
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function fail(call: string, field: string, value: unknown, expected: string): never {
  throw new EnvResultError(`${call} returned ${field} ${show(value)}: expected ${expected}`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * `value` as a {@linkcode ResetResult}, or an {@linkcode EnvResultError}.
 *
 * @example
 * ```ts
 * import { checkResetResult } from "./check_results.ts";
 * console.log(checkResetResult({ observation: "S F", info: {} }).observation); // S F
 * ```
 */
export function checkResetResult(value: unknown): ResetResult {
  if (!isObject(value)) fail("reset", "a result of", value, "{ observation, info }");
  if (typeof value.observation !== "string") {
    fail("reset", "observation", value.observation, "a string");
  }
  if (value.info !== undefined && !isObject(value.info)) {
    fail("reset", "info", value.info, "an object");
  }
  return value as unknown as ResetResult;
}

const FLAGS = ["action_is_valid", "action_is_effective", "success"] as const;

/**
 * `value` as a {@linkcode StepResult}, or an {@linkcode EnvResultError}: a string
 * observation, a finite reward, boolean terminated and truncated, and `info.metrics` with the
 * three flags (booleans, or 0 and 1), a finite `format_penalty`, and finite numbers for any
 * other numeric metric.
 *
 * @example
 * ```ts
 * import { checkStepResult } from "./check_results.ts";
 * const metrics = { action_is_valid: true, action_is_effective: true, success: false, format_penalty: 0 };
 * const r = checkStepResult({ observation: "x", reward: 0, terminated: false, truncated: false, info: { metrics } });
 * console.log(r.reward); // 0
 * ```
 */
export function checkStepResult(value: unknown): StepResult {
  if (!isObject(value)) {
    fail("step", "a result of", value, "{ observation, reward, terminated, truncated, info }");
  }
  if (typeof value.observation !== "string") {
    fail("step", "observation", value.observation, "a string");
  }
  if (typeof value.reward !== "number" || !Number.isFinite(value.reward)) {
    fail("step", "reward", value.reward, "a finite number");
  }
  for (const key of ["terminated", "truncated"] as const) {
    if (typeof value[key] !== "boolean") fail("step", key, value[key], "a boolean");
  }
  const info = value.info;
  if (!isObject(info)) fail("step", "info", info, "an object holding metrics");
  const metrics = info.metrics;
  if (!isObject(metrics)) {
    fail("step", "info.metrics", metrics, `an object (${FLAGS.join(", ")}, format_penalty)`);
  }
  for (const key of FLAGS) {
    const v = metrics[key];
    if (typeof v !== "boolean" && v !== 0 && v !== 1) {
      fail("step", `info.metrics.${key}`, v, "a boolean (or 0 or 1)");
    }
  }
  for (const [key, v] of Object.entries(metrics)) {
    if (key === "format_penalty" || (typeof v === "number" && !FLAGS.includes(key as never))) {
      if (typeof v !== "number" || !Number.isFinite(v)) {
        fail("step", `info.metrics.${key}`, v, "a finite number");
      }
    }
  }
  return value as unknown as StepResult;
}

/**
 * `value` as an {@linkcode RgbFrame} (what `render("rgb")` returns), or an
 * {@linkcode EnvResultError}: positive integer width and height, and a Uint8Array of
 * width x height x 3 bytes.
 *
 * @example
 * ```ts
 * import { checkRgbFrame } from "./check_results.ts";
 * console.log(checkRgbFrame({ width: 1, height: 1, data: new Uint8Array(3) }).width); // 1
 * ```
 */
export function checkRgbFrame(value: unknown): RgbFrame {
  if (!isObject(value)) fail("render", "a frame of", value, "{ width, height, data }");
  for (const key of ["width", "height"] as const) {
    const v = value[key];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 16384) {
      fail("render", `frame ${key}`, v, "an integer in 1..16384");
    }
  }
  const bytes = (value.width as number) * (value.height as number) * 3;
  if (!(value.data instanceof Uint8Array) || value.data.length !== bytes) {
    const got = value.data instanceof Uint8Array ? `${value.data.length} bytes` : show(value.data);
    throw new EnvResultError(
      `render returned frame data of ${got}: expected a Uint8Array of ` +
        `${value.width}x${value.height}x3 = ${bytes} bytes`,
    );
  }
  return value as unknown as RgbFrame;
}
