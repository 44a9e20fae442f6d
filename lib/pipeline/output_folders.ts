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
 * The folders a run made (none of them existed before), removed again by `Symbol.dispose`
 * where they are still empty, unless {@linkcode MadeFolders.keep} was called: a run that fails
 * before it writes anything leaves no empty folders behind.
 */
export class MadeFolders implements Disposable {
  #made: string[];

  constructor(made: string[]) {
    this.#made = made;
  }

  /** The folders made, each after its parent. */
  get made(): readonly string[] {
    return this.#made;
  }

  /** Keeps every folder (the run went through). */
  keep(): void {
    this.#made = [];
  }

  /** Removes the folders made that are empty, deepest first; others stay as they are. */
  [Symbol.dispose](): void {
    for (const path of [...this.#made].reverse()) {
      try {
        Deno.removeSync(path); // (fails on a folder that holds something: it stays)
      } catch {
        // kept
      }
    }
    this.#made = [];
  }
}

/** `path` and those of its parents that do not exist yet, outermost first. */
function missingFolders(path: string): string[] {
  const missing: string[] = [];
  for (let p = path.replace(/\/+$/, ""); p !== "" && p !== "."; p = parentOf(p)) {
    try {
      Deno.statSync(p);
      break;
    } catch {
      missing.unshift(p);
    }
  }
  return missing;
}

function parentOf(path: string): string {
  const cut = path.lastIndexOf("/");
  return cut > 0 ? path.slice(0, cut) : cut === 0 ? "" : ".";
}

/**
 * Makes each `[config key, path]` folder (with its parents); skips null and empty paths.
 * Throws a {@linkcode RolloutConfigError} naming the key and path for one it cannot make.
 * Returns the folders it made, which `using` removes again where still empty, unless kept.
 *
 * @example
 * ```ts
 * import { makeOutputFolders } from "./output_folders.ts";
 * const dir = await Deno.makeTempDir();
 * makeOutputFolders([["output_dir", `${dir}/run`], ["render_save_dir", null]]);
 * console.log(Deno.statSync(`${dir}/run`).isDirectory); // true
 * ```
 */
export function makeOutputFolders(
  folders: [key: string, path: string | null | undefined][],
): MadeFolders {
  const made: string[] = [];
  for (const [key, path] of folders) {
    if (!path) continue;
    const missing = missingFolders(path);
    try {
      Deno.mkdirSync(path, { recursive: true });
      made.push(...missing);
    } catch (e) {
      new MadeFolders(made)[Symbol.dispose](); // (those made before this one)
      throw new RolloutConfigError(
        `${key} ${path} cannot be used as a folder (${
          writeRefusal(e, path)
        }): expected a folder, or a path ` +
          "where one can be made",
      );
    }
  }
  return new MadeFolders(made);
}
