/**
 * Whole-file replacement that readers never see half done.
 *
 * @module
 */

/**
 * Writes `data` to `<path>.tmp-<pid>` and renames it over `path` (atomic on
 * POSIX file systems), so a reader sees the old file or the new one, never a
 * partial write. The temp file is removed if the write fails.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.tmp-${Deno.pid}`;
  try {
    if (typeof data === "string") await Deno.writeTextFile(tmp, data);
    else await Deno.writeFile(tmp, data);
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw e;
  }
}
