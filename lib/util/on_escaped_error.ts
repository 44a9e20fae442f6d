/**
 * Handling of errors that escape every awaited call in this thread (a timer's exception, a
 * promise nobody awaits), instead of Deno printing them with their stack and exiting.
 *
 * @module
 */

/**
 * Routes this thread's uncaught errors and unhandled rejections to `report`.
 *
 * @example
 * ```ts ignore
 * import { onEscapedError } from "./on_escaped_error.ts";
 * onEscapedError((e) => console.error("escaped:", e));
 * ```
 */
export function onEscapedError(report: (error: unknown) => void): void {
  globalThis.addEventListener("error", (event) => {
    event.preventDefault();
    report(event.error);
  });
  globalThis.addEventListener("unhandledrejection", (event) => {
    event.preventDefault();
    report(event.reason);
  });
}
