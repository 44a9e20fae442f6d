/**
 * The folders a run writes to, made before the model loads: a path that is a file, or where
 * no folder can be made, fails at once with its config key instead of after the first
 * rollout.
 *
 * @module
 */
import { RolloutConfigError } from "../rollout/errors.ts";
import { writeRefusal } from "../util/write_refusal.ts";

/**
 * Makes each `[config key, path]` folder (with its parents); skips null and empty paths.
 * Throws a {@linkcode RolloutConfigError} naming the key and path for one it cannot make.
 *
 * @example
 * ```ts
 * import { makeOutputFolders } from "./output_folders.ts";
 * const dir = await Deno.makeTempDir();
 * makeOutputFolders([["output_dir", `${dir}/run`], ["render_save_dir", null]]);
 * console.log(Deno.statSync(`${dir}/run`).isDirectory); // true
 * ```
 */
export function makeOutputFolders(folders: [key: string, path: string | null | undefined][]) {
  for (const [key, path] of folders) {
    if (!path) continue;
    try {
      Deno.mkdirSync(path, { recursive: true });
    } catch (e) {
      throw new RolloutConfigError(
        `${key} ${path} cannot be used as a folder (${
          writeRefusal(e, path)
        }): expected a folder, or a path ` +
          "where one can be made",
      );
    }
  }
}
