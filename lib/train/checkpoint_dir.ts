/**
 * Training checkpoint folders: `<output_dir>/checkpoints/checkpoint-<step>/`,
 * written atomically. What goes inside is the caller's (model, optimizer,
 * scheduler step, RNG, metric history); this module makes sure a folder
 * counts as a checkpoint only once all of it is on disk:
 *
 * 1. the caller's writer fills `checkpoint-<step>.tmp-<random>/`;
 * 2. every file is fsynced, then `manifest.json` (the step and every file's
 *    size) is written and fsynced last;
 * 3. the folder is renamed to `checkpoint-<step>` (atomic on one file system).
 *
 * A folder with a temporary name, without a manifest, or whose files do not
 * match their manifest sizes is never returned as a checkpoint, so a crash at
 * any point leaves at worst garbage that {@linkcode removeIncompleteCheckpoints}
 * clears.
 *
 * @example
 * ```ts
 * import { latestCheckpoint, saveCheckpoint } from "./checkpoint_dir.ts";
 * const out = await Deno.makeTempDir();
 * await saveCheckpoint(out, 10, (dir) => Deno.writeTextFile(`${dir}/state.json`, "{}"));
 * await saveCheckpoint(out, 20, (dir) => Deno.writeTextFile(`${dir}/state.json`, "{}"));
 * console.log(latestCheckpoint(out)?.step); // 20
 * ```
 *
 * @module
 */
import { basename, join, relative } from "node:path";
import { CheckpointError } from "../model/safetensors.ts";
import { isFile } from "../util/fs_probe.ts";

/** The folder under `output_dir` that holds the checkpoints. */
export const CHECKPOINTS_DIR = "checkpoints";

/** The completion marker, written last. */
export const MANIFEST_FILE = "manifest.json";

const FORMAT = "agentrl-checkpoint";
const NAME = /^checkpoint-(0|[1-9][0-9]*)$/;

/** The contents of {@linkcode MANIFEST_FILE}. */
export interface CheckpointManifest {
  format: typeof FORMAT;
  version: 1;
  /** The training step the checkpoint was taken after. */
  step: number;
  /** ISO time of the save. */
  createdAt: string;
  /** Every file the writer wrote (path relative to the checkpoint) → its size in bytes. */
  files: Record<string, number>;
  /** The caller's JSON data ({@linkcode SaveCheckpointOptions.meta}). */
  meta: Record<string, unknown>;
}

/** A complete checkpoint on disk. */
export interface CheckpointInfo {
  step: number;
  /** The checkpoint folder. */
  dir: string;
  manifest: CheckpointManifest;
}

/** Options of {@linkcode saveCheckpoint}. */
export interface SaveCheckpointOptions {
  /** JSON data stored in the manifest (e.g. the metric history's length). */
  meta?: Record<string, unknown>;
  /** After saving, keep only the newest n complete checkpoints (0 or absent: keep all). */
  keepLastN?: number;
}

/** The outcome of {@linkcode resolveResume}. */
export interface ResumeDecision {
  /** The checkpoint to resume from, or null to start afresh. */
  checkpoint: CheckpointInfo | null;
  /** Why there is none, when `true` asked for the latest and none was found. */
  notice?: string;
}

/**
 * `<outputDir>/checkpoints`.
 *
 * @example
 * ```ts
 * import { checkpointsDir } from "./checkpoint_dir.ts";
 * console.log(checkpointsDir("./output")); // output/checkpoints
 * ```
 */
export function checkpointsDir(outputDir: string): string {
  return join(outputDir, CHECKPOINTS_DIR);
}

function expectStep(step: number): void {
  if (!Number.isSafeInteger(step) || step < 0) {
    throw new RangeError(`A checkpoint step must be an integer >= 0, got ${step}`);
  }
}

/** Relative paths and sizes of the regular files under `dir`, recursively. */
async function listFiles(dir: string, root = dir, out: Record<string, number> = {}) {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) await listFiles(path, root, out);
    else if (e.isFile) out[relative(root, path)] = (await Deno.stat(path)).size;
    else throw new CheckpointError(`${path} is neither a file nor a folder`, { file: path });
  }
  return out;
}

/** fsync a file or folder; folders that cannot be opened are skipped (not every OS allows it). */
async function sync(path: string, folder = false): Promise<void> {
  let f: Deno.FsFile;
  try {
    f = await Deno.open(path, { read: true });
  } catch (e) {
    if (folder) return;
    throw e;
  }
  try {
    await f.sync();
  } catch (e) {
    if (!folder) throw e;
  } finally {
    f.close();
  }
}

function randomTag(): string {
  return crypto.randomUUID().slice(0, 8);
}

/**
 * Saves checkpoint `step` under `<outputDir>/checkpoints/` atomically:
 * `writer` fills a temporary folder, which becomes `checkpoint-<step>` only
 * after every file and the manifest are synced. If the writer throws, the
 * temporary folder is removed and the error rethrown; no checkpoint appears.
 * A checkpoint of the same step is replaced.
 *
 * @example
 * ```ts
 * import { loadCheckpointManifest, saveCheckpoint } from "./checkpoint_dir.ts";
 * const out = await Deno.makeTempDir();
 * const info = await saveCheckpoint(out, 5, async (dir) => {
 *   await Deno.writeTextFile(`${dir}/trainer_state.json`, JSON.stringify({ step: 5 }));
 * }, { meta: { reward: 0.5 } });
 * console.log(loadCheckpointManifest(info.dir).files); // { "trainer_state.json": 10 }
 * ```
 */
export async function saveCheckpoint(
  outputDir: string,
  step: number,
  writer: (tmpDir: string) => Promise<void>,
  options: SaveCheckpointOptions = {},
): Promise<CheckpointInfo> {
  expectStep(step);
  const root = checkpointsDir(outputDir);
  await Deno.mkdir(root, { recursive: true });
  const name = `checkpoint-${step}`;
  const tmp = join(root, `${name}.tmp-${randomTag()}`);
  const final = join(root, name);
  await Deno.mkdir(tmp);
  let manifest: CheckpointManifest;
  try {
    await writer(tmp);
    const files = await listFiles(tmp);
    if (MANIFEST_FILE in files) {
      throw new CheckpointError(
        `The checkpoint writer must not write ${MANIFEST_FILE}; it is the completion marker`,
        { file: join(tmp, MANIFEST_FILE) },
      );
    }
    for (const f of Object.keys(files)) await sync(join(tmp, f));
    manifest = {
      format: FORMAT,
      version: 1,
      step,
      createdAt: new Date().toISOString(),
      files,
      meta: options.meta ?? {},
    };
    const path = join(tmp, MANIFEST_FILE);
    await Deno.writeTextFile(path, JSON.stringify(manifest, null, 2));
    await sync(path);
    await sync(tmp, true);
  } catch (e) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw e;
  }
  // Replacing an existing step: move it aside first (a folder cannot be renamed onto a full one).
  let old: string | null = null;
  try {
    await Deno.stat(final);
    old = join(root, `${name}.old-${randomTag()}`);
    await Deno.rename(final, old);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  await Deno.rename(tmp, final);
  await sync(root, true);
  if (old !== null) await Deno.remove(old, { recursive: true });
  if (options.keepLastN) await pruneCheckpoints(outputDir, options.keepLastN, final);
  return { step, dir: final, manifest };
}

/**
 * Reads and checks the manifest of checkpoint folder `dir`: its format, its
 * step (matching a `checkpoint-<step>` folder name), and every listed file's
 * presence and size. Throws a {@linkcode CheckpointError} saying what is
 * wrong (an incomplete save has no manifest).
 *
 * @example
 * ```ts
 * import { loadCheckpointManifest, saveCheckpoint } from "./checkpoint_dir.ts";
 * const out = await Deno.makeTempDir();
 * const { dir } = await saveCheckpoint(out, 3, async () => {});
 * console.log(loadCheckpointManifest(dir).step); // 3
 * ```
 */
export function loadCheckpointManifest(dir: string): CheckpointManifest {
  const path = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      // a model folder (config.json beside its weights) given where a checkpoint belongs
      if (isFile(join(dir, "config.json")) && !isFile(join(dir, "model", "config.json"))) {
        throw new CheckpointError(
          `${dir} is a model folder, not a training checkpoint (one holds model/, optimizer/ ` +
            `and ${MANIFEST_FILE}): to start from these weights, set pretrain=${dir} and ` +
            "resume_from_checkpoint=false",
          { file: path },
        );
      }
      throw new CheckpointError(
        `${dir} is not a complete checkpoint: it has no ${MANIFEST_FILE} (an interrupted save?)`,
        { file: path },
      );
    }
    throw e;
  }
  let m: Partial<CheckpointManifest>;
  try {
    m = JSON.parse(text);
  } catch (e) {
    throw new CheckpointError(`${path} is not valid JSON: ${(e as Error).message}`, {
      file: path,
    });
  }
  if (
    typeof m !== "object" || m === null || m.format !== FORMAT || m.version !== 1 ||
    !Number.isSafeInteger(m.step) || typeof m.files !== "object" || m.files === null
  ) {
    throw new CheckpointError(
      `${path} is not an ${FORMAT} version 1 manifest with a step and a file list`,
      { file: path },
    );
  }
  const named = NAME.exec(basename(dir));
  if (named !== null && Number(named[1]) !== m.step) {
    throw new CheckpointError(`${path} is for step ${m.step}, but the folder is ${named[0]}`, {
      file: path,
    });
  }
  for (const [file, size] of Object.entries(m.files)) {
    let actual: number;
    try {
      actual = Deno.statSync(join(dir, file)).size;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new CheckpointError(`Checkpoint ${dir} lacks ${file}, which its manifest lists`, {
          file: join(dir, file),
        });
      }
      throw e;
    }
    if (actual !== size) {
      throw new CheckpointError(
        `Checkpoint ${dir}: ${file} is ${actual} bytes; its manifest says ${size}`,
        { file: join(dir, file) },
      );
    }
  }
  return { meta: {}, createdAt: "", ...m } as CheckpointManifest;
}

/**
 * The complete checkpoints under `<outputDir>/checkpoints`, oldest step first
 * (none when the folder does not exist). Folders that fail
 * {@linkcode loadCheckpointManifest} are skipped.
 *
 * @example
 * ```ts
 * import { listCheckpoints } from "./checkpoint_dir.ts";
 * console.log(listCheckpoints(await Deno.makeTempDir())); // []
 * ```
 */
export function listCheckpoints(outputDir: string): CheckpointInfo[] {
  return scanCheckpoints(outputDir).complete;
}

/** A `checkpoint-<step>` folder that fails its manifest check, with the check's message. */
export interface DamagedCheckpoint {
  step: number;
  dir: string;
  why: string;
}

/** The `checkpoint-<step>` folders under `outputDir`, complete or not (by step). */
function scanCheckpoints(
  outputDir: string,
): { complete: CheckpointInfo[]; damaged: DamagedCheckpoint[] } {
  const root = checkpointsDir(outputDir);
  const complete: CheckpointInfo[] = [];
  const damaged: DamagedCheckpoint[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(root)];
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { complete, damaged };
    throw e;
  }
  for (const e of entries) {
    if (!e.isDirectory || !NAME.test(e.name)) continue;
    const dir = join(root, e.name);
    try {
      const manifest = loadCheckpointManifest(dir);
      complete.push({ step: manifest.step, dir, manifest });
    } catch (err) {
      if (!(err instanceof CheckpointError)) throw err;
      damaged.push({ step: Number(e.name.slice("checkpoint-".length)), dir, why: err.message });
    }
  }
  complete.sort((a, b) => a.step - b.step);
  damaged.sort((a, b) => a.step - b.step);
  return { complete, damaged };
}

/**
 * The `checkpoint-<step>` folders under `outputDir` that fail
 * {@linkcode loadCheckpointManifest} (changed after their save, e.g. a truncated file), by
 * step, each with the check's message.
 *
 * @example
 * ```ts
 * import { damagedCheckpoints } from "./checkpoint_dir.ts";
 * console.log(damagedCheckpoints(await Deno.makeTempDir())); // []
 * ```
 */
export function damagedCheckpoints(outputDir: string): DamagedCheckpoint[] {
  return scanCheckpoints(outputDir).damaged;
}

/**
 * The complete checkpoint with the highest step, or null.
 *
 * @example
 * ```ts
 * import { latestCheckpoint } from "./checkpoint_dir.ts";
 * console.log(latestCheckpoint(await Deno.makeTempDir())); // null
 * ```
 */
export function latestCheckpoint(outputDir: string): CheckpointInfo | null {
  return listCheckpoints(outputDir).at(-1) ?? null;
}

/**
 * What `resume_from_checkpoint` asks for: `false` → start afresh; `true` →
 * the latest complete checkpoint under `outputDir`, or none with a notice (so
 * a config that always resumes also works on its first run); a path → that
 * checkpoint folder, validated (an error says what is wrong, and names the
 * latest checkpoint when the path is an output folder).
 *
 * @example
 * ```ts
 * import { resolveResume } from "./checkpoint_dir.ts";
 * const out = await Deno.makeTempDir();
 * console.log(resolveResume(true, out).checkpoint); // null (with a notice)
 * console.log(resolveResume(false, out)); // { checkpoint: null }
 * ```
 */
export function resolveResume(resume: boolean | string, outputDir: string): ResumeDecision {
  if (resume === false) return { checkpoint: null };
  if (resume === true) {
    const { complete, damaged } = scanCheckpoints(outputDir);
    const latest = complete.at(-1) ?? null;
    // a damaged checkpoint past the latest complete one: resuming would quietly redo its steps
    // (or start afresh) and overwrite it at the next save; the user decides instead
    const newer = damaged.filter((d) => d.step > (latest?.step ?? -1));
    if (newer.length > 0) {
      const last = newer.at(-1)!;
      const instead = latest !== null
        ? `resume from ${latest.dir} (step ${latest.step})`
        : "start from scratch";
      throw new CheckpointError(
        `resume_from_checkpoint is true but the latest checkpoint, ${last.dir}, is damaged ` +
          `(${last.why}): restore it, or move ${
            newer.length > 1 ? `it and ${newer.length - 1} more damaged one(s)` : "it"
          } away to ${instead}`,
        { file: last.dir },
      );
    }
    if (latest !== null) return { checkpoint: latest };
    return {
      checkpoint: null,
      notice: `resume_from_checkpoint is true but ${
        checkpointsDir(outputDir)
      } holds no complete checkpoint; starting from scratch`,
    };
  }
  if (typeof resume !== "string" || resume === "") {
    throw new CheckpointError(
      `resume_from_checkpoint must be true, false or a checkpoint folder, got ${
        JSON.stringify(resume)
      }`,
    );
  }
  try {
    if (!Deno.statSync(resume).isDirectory) {
      throw new CheckpointError(`resume_from_checkpoint ${resume} is not a folder`, {
        file: resume,
      });
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new CheckpointError(`resume_from_checkpoint ${resume} does not exist`, {
        file: resume,
      });
    }
    throw e;
  }
  try {
    const manifest = loadCheckpointManifest(resume);
    return { checkpoint: { step: manifest.step, dir: resume, manifest } };
  } catch (e) {
    // An output folder or a checkpoints folder given instead of one checkpoint.
    const latest = latestCheckpoint(resume) ??
      (basename(resume) === CHECKPOINTS_DIR ? latestCheckpoint(join(resume, "..")) : null);
    if (e instanceof CheckpointError && latest !== null) {
      throw new CheckpointError(
        `resume_from_checkpoint ${resume} is not a checkpoint folder; its latest checkpoint is ${latest.dir} (or set resume_from_checkpoint: true)`,
        { file: resume },
      );
    }
    throw e;
  }
}

/**
 * Removes all but the `keepLastN` complete checkpoints of the highest steps (never `keep`,
 * a checkpoint folder, when given); returns the
 * removed folders.
 *
 * @example
 * ```ts
 * import { listCheckpoints, pruneCheckpoints, saveCheckpoint } from "./checkpoint_dir.ts";
 * const out = await Deno.makeTempDir();
 * for (const step of [1, 2, 3]) await saveCheckpoint(out, step, async () => {});
 * await pruneCheckpoints(out, 2);
 * console.log(listCheckpoints(out).map((c) => c.step)); // [2, 3]
 * ```
 */
export async function pruneCheckpoints(
  outputDir: string,
  keepLastN: number,
  keep?: string,
): Promise<string[]> {
  if (!Number.isInteger(keepLastN) || keepLastN < 1) {
    throw new RangeError(`keepLastN must be a positive integer, got ${keepLastN}`);
  }
  const all = listCheckpoints(outputDir);
  const removed = all.slice(0, Math.max(0, all.length - keepLastN)).map((c) => c.dir)
    .filter((dir) => dir !== keep);
  for (const dir of removed) await Deno.remove(dir, { recursive: true });
  return removed;
}

/**
 * Removes what interrupted saves left under `<outputDir>/checkpoints`:
 * temporary and set-aside folders, and `checkpoint-<step>` folders that fail
 * {@linkcode loadCheckpointManifest}. A complete set-aside copy of a step whose
 * `checkpoint-<step>` is missing or incomplete is renamed back first. With
 * `keepDamaged`, `checkpoint-<step>` folders that fail the check stay (a save never
 * leaves one: something else changed it). Call it only when no save is running.
 * Returns the removed folders.
 *
 * @example
 * ```ts
 * import { checkpointsDir, removeIncompleteCheckpoints } from "./checkpoint_dir.ts";
 * const out = await Deno.makeTempDir();
 * await Deno.mkdir(`${checkpointsDir(out)}/checkpoint-7.tmp-1234abcd`, { recursive: true });
 * console.log((await removeIncompleteCheckpoints(out)).length); // 1
 * ```
 */
export async function removeIncompleteCheckpoints(
  outputDir: string,
  options: { keepDamaged?: boolean } = {},
): Promise<string[]> {
  const root = checkpointsDir(outputDir);
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(root)];
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  // A save that replaced checkpoint-N and stopped between its two renames left the old
  // complete copy set aside: it becomes checkpoint-N again.
  for (const e of entries) {
    const m = /^(checkpoint-\d+)\.old-/.exec(e.name);
    if (!e.isDirectory || !m) continue;
    const aside = join(root, e.name), final = join(root, m[1]!);
    if (completeAt(final) || !completeAt(aside, final)) continue;
    await Deno.remove(final, { recursive: true }).catch(() => {});
    await Deno.rename(aside, final);
  }
  entries = [...Deno.readDirSync(root)];
  const complete = new Set(listCheckpoints(outputDir).map((c) => c.dir));
  const removed: string[] = [];
  for (const e of entries) {
    const dir = join(root, e.name);
    const leftover = /^checkpoint-\d+\.(tmp|old)-/.test(e.name) ||
      (!options.keepDamaged && NAME.test(e.name) && !complete.has(dir));
    if (e.isDirectory && leftover) {
      await Deno.remove(dir, { recursive: true });
      removed.push(dir);
    }
  }
  return removed;
}

/**
 * Renames the checkpoints of steps after `step`, complete or damaged, to
 * `checkpoint-<N>.superseded-<tag>` (kept, but no longer listed): a run resumed from `step`
 * replaces their history, and the latest checkpoint must be its own. Returns the new folder
 * names.
 *
 * @example
 * ```ts
 * import { listCheckpoints, saveCheckpoint, setAsideCheckpointsAfter } from "./checkpoint_dir.ts";
 * const out = await Deno.makeTempDir();
 * for (const step of [1, 2, 3]) await saveCheckpoint(out, step, async () => {});
 * await setAsideCheckpointsAfter(out, 1);
 * console.log(listCheckpoints(out).map((c) => c.step)); // [1]
 * ```
 */
export async function setAsideCheckpointsAfter(outputDir: string, step: number): Promise<string[]> {
  const moved: string[] = [];
  // (damaged ones too: a save of their step would otherwise replace them)
  const { complete, damaged } = scanCheckpoints(outputDir);
  for (const c of [...complete, ...damaged]) {
    if (c.step <= step) continue;
    const to = `${c.dir}.superseded-${randomTag()}`;
    await Deno.rename(c.dir, to);
    moved.push(to);
  }
  return moved;
}

/** Whether `dir` holds a complete checkpoint (checked as if it were at `asName`). */
function completeAt(dir: string, asName = dir): boolean {
  try {
    Deno.statSync(dir);
  } catch {
    return false;
  }
  try {
    const m = loadCheckpointManifest(dir);
    return `checkpoint-${m.step}` === basename(asName);
  } catch (e) {
    if (e instanceof CheckpointError) return false;
    throw e;
  }
}

/**
 * The JSON object in checkpoint file `path`. A file that cannot be read or holds anything but
 * a JSON object is a {@linkcode CheckpointError} naming it.
 *
 * @example
 * ```ts
 * import { readCheckpointJson } from "./checkpoint_dir.ts";
 * const path = await Deno.makeTempFile({ suffix: ".json" });
 * await Deno.writeTextFile(path, '{"step": 3}');
 * console.log(readCheckpointJson(path).step); // 3
 * ```
 */
export function readCheckpointJson(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    throw new CheckpointError(
      `Cannot read checkpoint file ${path}: ${e instanceof Error ? e.message : e}`,
      { file: path },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new CheckpointError(
      `Checkpoint file ${path} is not valid JSON (${e instanceof Error ? e.message : e}): ` +
        "expected the file as the trainer wrote it",
      { file: path },
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CheckpointError(
      `Checkpoint file ${path} holds ${
        JSON.stringify(value)?.slice(0, 40)
      }: expected a JSON object`,
      { file: path },
    );
  }
  return value as Record<string, unknown>;
}
