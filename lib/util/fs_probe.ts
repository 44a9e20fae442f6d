/**
 * Whether a path is a file or a folder, false for anything missing or unreadable: for checks
 * that name what they expected rather than pass on the operating system's error.
 *
 * @module
 */

/**
 * Whether `path` is a file (false when it is missing or cannot be read).
 *
 * @example
 * ```ts
 * import { isFile } from "./fs_probe.ts";
 * console.log(isFile("/nonexistent/config.json")); // false
 * ```
 */
export function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Whether `path` is a folder (false when it is missing or cannot be read).
 *
 * @example
 * ```ts
 * import { isFolder } from "./fs_probe.ts";
 * console.log(isFolder("/")); // true
 * ```
 */
export function isFolder(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}
