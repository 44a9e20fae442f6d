/**
 * The metrics history as JSON Lines: `<output_dir>/metrics.jsonl`, one object
 * `{"step": N, "<metric>": value, ...}` per logged step. It is written for
 * every run whatever `track_with` says, and read back to resume a run and to
 * draw the HTML report.
 *
 * JSON has no NaN or Infinity: non-finite values are written as `null`
 * (JSON.stringify's rule), so a row read back has `number | null` values.
 *
 * @module
 */
import { writeFileAtomic } from "./_atomic.ts";

/** One logged step: its number and metric values (`null` where the value was not finite). */
export type MetricsRow = { step: number } & Record<string, number | null>;

/** The file name inside the output folder. */
export const METRICS_JSONL = "metrics.jsonl";

const encoder = new TextEncoder();

/**
 * Appends one JSON line per {@linkcode JsonlMetricsWriter.log} call. The file
 * is opened once in append mode and each line goes out in one write, so a
 * killed run leaves at most a truncated last line; opening repairs such a
 * line (dropped when it is not valid JSON, else given its missing newline).
 *
 * @example
 * ```ts
 * import { JsonlMetricsWriter, readJsonlMetrics } from "./jsonl.ts";
 * const dir = await Deno.makeTempDir();
 * const w = await JsonlMetricsWriter.open(dir);
 * w.log(1, { "actor/pg_loss": 0.5, "critic/kl": NaN });
 * await w.close();
 * console.log(await readJsonlMetrics(w.path)); // [ { step: 1, "actor/pg_loss": 0.5, "critic/kl": null } ]
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class JsonlMetricsWriter {
  #file: Deno.FsFile | undefined;
  /** Path of the JSONL file. */
  readonly path: string;

  private constructor(file: Deno.FsFile, path: string) {
    this.#file = file;
    this.path = path;
  }

  /** Opens (creating folder and file as needed) `<outputDir>/metrics.jsonl` for appending. */
  static async open(outputDir: string, fileName = METRICS_JSONL): Promise<JsonlMetricsWriter> {
    await Deno.mkdir(outputDir, { recursive: true });
    const path = `${outputDir.replace(/\/+$/, "") || "/"}/${fileName}`;
    await repairTail(path);
    const file = await Deno.open(path, { append: true, create: true });
    return new JsonlMetricsWriter(file, path);
  }

  /**
   * Appends `{"step": step, ...metrics}`. Entries that are not numbers are
   * skipped, a `step` entry in `metrics` is ignored, and NaN/±Infinity become null.
   */
  log(step: number, metrics: Readonly<Record<string, number>>): void {
    if (!Number.isSafeInteger(step)) throw new RangeError(`A step is an integer: got ${step}`);
    if (this.#file === undefined) throw new Error(`The metrics file ${this.path} is closed`);
    const row: Record<string, number> = { step };
    for (const [k, v] of Object.entries(metrics)) {
      if (k !== "step" && typeof v === "number") row[k] = v;
    }
    const line = encoder.encode(JSON.stringify(row) + "\n");
    for (let off = 0; off < line.length;) off += this.#file.writeSync(line.subarray(off));
  }

  /** Forces written lines to disk (fdatasync). */
  async flush(): Promise<void> {
    if (this.#file === undefined) throw new Error(`The metrics file ${this.path} is closed`);
    await this.#file.syncData();
  }

  /** Closes the file; later writes throw. Closing twice is allowed. */
  close(): Promise<void> {
    this.#file?.close();
    this.#file = undefined;
    return Promise.resolve();
  }

  /** Same as {@linkcode JsonlMetricsWriter.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Lines of a JSONL file and whether the last one lacks its newline. */
interface Lines {
  lines: string[];
  /** The last line has no terminating newline (a write cut short, or a hand edit). */
  openTail: boolean;
}

function splitLines(text: string): Lines {
  const lines = text.split("\n");
  const openTail = lines[lines.length - 1] !== "";
  if (!openTail) lines.pop();
  return { lines, openTail };
}

/** The row of one line, or an error message saying what is wrong with it. */
function parseRow(line: string): MetricsRow | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    return (e as Error).message;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return "not a JSON object";
  const step = (v as { step?: unknown }).step;
  if (!Number.isSafeInteger(step)) return `"step" is not an integer: ${JSON.stringify(step)}`;
  return v as MetricsRow;
}

/** Parsed rows paired with their source lines. */
function parseLines(path: string, text: string): { rows: MetricsRow[]; lines: string[] } {
  const { lines, openTail } = splitLines(text);
  const rows: MetricsRow[] = [];
  const kept: string[] = [];
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue;
    const row = parseRow(line);
    if (typeof row === "string") {
      if (openTail && i === lines.length - 1) break; // truncated by a killed run
      throw new SyntaxError(`${path}:${i + 1}: bad metrics row (${row})`);
    }
    rows.push(row);
    kept.push(line);
  }
  return { rows, lines: kept };
}

/**
 * The rows of a metrics JSONL file in file order. A last line without its
 * newline that does not parse (a killed run) is ignored; any other bad line
 * throws a SyntaxError naming the file and line.
 *
 * @example
 * ```ts
 * import { readJsonlMetrics } from "./jsonl.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/m.jsonl`, '{"step":1,"x":2}\n{"step":2,"x"');
 * console.log(await readJsonlMetrics(`${dir}/m.jsonl`)); // [ { step: 1, x: 2 } ]
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readJsonlMetrics(path: string): Promise<MetricsRow[]> {
  return parseLines(path, await Deno.readTextFile(path)).rows;
}

/**
 * For a resumed run: rewrites the file (atomically) without rows whose step
 * is greater than `step` and without a truncated last line, and returns the
 * rows kept (`dropped`, if given, is called with the rows removed, when there are some). A
 * missing file gives `[]`. Call it before opening a {@linkcode JsonlMetricsWriter} on the file.
 *
 * @example
 * ```ts
 * import { truncateJsonlMetrics } from "./jsonl.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/m.jsonl`, '{"step":1}\n{"step":2}\n{"step":3}\n');
 * console.log((await truncateJsonlMetrics(`${dir}/m.jsonl`, 2)).length); // 2
 * console.log(await Deno.readTextFile(`${dir}/m.jsonl`)); // '{"step":1}\n{"step":2}\n'
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function truncateJsonlMetrics(
  path: string,
  step: number,
  dropped?: (rows: MetricsRow[]) => void,
): Promise<MetricsRow[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  const { rows, lines } = parseLines(path, text);
  const keep = rows.map((r) => r.step <= step);
  const out = lines.filter((_, i) => keep[i]).map((l) => l + "\n").join("");
  if (out !== text) await writeFileAtomic(path, out);
  const gone = rows.filter((_, i) => !keep[i]);
  if (gone.length > 0) dropped?.(gone);
  return rows.filter((_, i) => keep[i]);
}

/** Ends an existing file on a newline: a cut-off last line is dropped, a complete one terminated. */
async function repairTail(path: string): Promise<void> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  const { lines, openTail } = splitLines(text);
  if (!openTail) return;
  const last = lines[lines.length - 1]!;
  if (typeof parseRow(last) !== "string") await Deno.writeTextFile(path, "\n", { append: true });
  else await Deno.truncate(path, encoder.encode(text.slice(0, text.length - last.length)).length);
}
