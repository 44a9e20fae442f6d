/**
 * One line for a thrown value: its message and, for an Error, where it was thrown.
 *
 * @module
 */

/**
 * `e`'s message and, for an Error, the first frame of its stack: `boom (at f (file:///x.ts:1:2))`;
 * with `named`, the error's name first (`TypeError: boom (at ...)`).
 *
 * @example
 * ```ts
 * import { describeThrown } from "./describe_thrown.ts";
 * console.log(describeThrown("plain")); // plain
 * console.log(describeThrown(new TypeError("boom"), true).startsWith("TypeError: boom (at ")); // true
 * ```
 */
export function describeThrown(e: unknown, named = false): string {
  if (!(e instanceof Error)) return String(e);
  const frame = e.stack?.split("\n").find((l) => l.trim().startsWith("at "))?.trim();
  return `${named ? `${e.name}: ` : ""}${e.message}${frame ? ` (${frame})` : ""}`;
}
