/**
 * Why a folder or file could not be written, in the user's terms: Deno's own permission errors
 * name flags (`--allow-all`) that do not apply to a run through `deno task`.
 *
 * @module
 */

/**
 * A short reason for a failed write to `path`: the operating system's refusal, a path Deno
 * guards even with `--allow-write` (`/proc`, `/dev`, `/sys`, ...), a run without write
 * permission, or the error's own message.
 *
 * @example
 * ```ts
 * import { writeRefusal } from "./write_refusal.ts";
 * console.log(writeRefusal(new Deno.errors.PermissionDenied("EACCES"), "/root/x"));
 * // the operating system denies it (EACCES)
 * ```
 */
export function writeRefusal(e: unknown, path: string): string {
  if (e instanceof Deno.errors.PermissionDenied) {
    return `the operating system denies it (${e.message})`;
  }
  if (e instanceof Deno.errors.NotCapable) {
    const granted = Deno.permissions.querySync({ name: "write", path }).state === "granted";
    return granted
      ? "Deno guards this path even where writing is allowed (a system folder such as /proc, " +
        "/dev or /sys)"
      : "this run may not write files (`deno run` needs --allow-write; `deno task` grants it)";
  }
  if (e instanceof Deno.errors.AlreadyExists) return "it is a file, not a folder";
  return e instanceof Error ? e.message : String(e);
}
