/**
 * TensorBoard event files: a writer that appends scalar and text summaries,
 * and a reader that checks both CRCs of every record and decodes events.
 *
 * File layout (TFRecord framing, one record per `Event` message):
 * `u64le length · u32le masked_crc32c(length bytes) · data · u32le masked_crc32c(data)`.
 * Messages used (field numbers from TensorFlow's event.proto / summary.proto):
 * - `Event { double wall_time = 1; int64 step = 2; string file_version = 3;
 *   Summary summary = 5; SessionLog session_log = 6 }`
 * - `Summary { repeated Value value = 1 }`,
 *   `Value { string tag = 1; float simple_value = 2; TensorProto tensor = 8;
 *   SummaryMetadata metadata = 9 }`
 * - `SummaryMetadata { PluginData plugin_data = 1 (plugin_name = 1, content = 2);
 *   DataClass data_class = 4 }`
 * - `TensorProto { DataType dtype = 1; TensorShapeProto tensor_shape = 2;
 *   bytes tensor_content = 4; repeated float float_val = 5; repeated double double_val = 6;
 *   repeated bytes string_val = 8 }`
 * - `SessionLog { SessionStatus status = 1 }` (START = 1)
 *
 * @module
 */
import { crc32c, maskCrc } from "./crc32c.ts";
import { decodeProto, fixedToNumber, type ProtoField, ProtoWriter } from "./protobuf.ts";

/** The version string of the first event in every file. */
export const TF_EVENTS_FILE_VERSION = "brain.Event:2";

// TensorFlow DataType and TensorBoard DataClass values used here.
const DT_FLOAT = 1;
const DT_DOUBLE = 2;
const DT_STRING = 7;
const DATA_CLASS_TENSOR = 2;
const SESSION_START = 1;

/**
 * One record in TFRecord framing: length, masked CRC of the length, data,
 * masked CRC of the data.
 *
 * @example
 * ```ts
 * import { frameRecord } from "./tfevents.ts";
 * console.log(frameRecord(new Uint8Array([1, 2, 3])).length); // 19 (8 + 4 + 3 + 4)
 * ```
 */
export function frameRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(16 + data.length);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskCrc(crc32c(out.subarray(0, 8))), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskCrc(crc32c(data)), true);
  return out;
}

/** Options of {@linkcode TfEventsWriter.create}. */
export interface TfEventsWriterOptions {
  /** Host name in the file name (default `Deno.hostname()` when permitted, else "agentrl"). */
  hostname?: string;
  /** Clock in seconds since the epoch, for the file name and default wall times (default `Date.now() / 1000`). */
  now?: () => number;
  /**
   * A resumed run: write a SessionLog START event at this step right after
   * the file version. TensorBoard's event loader then drops events from older
   * files at steps >= this one (the orphaned tail of the interrupted run).
   */
  restartStep?: number;
}

/**
 * Appends events to a new `events.out.tfevents.<unix-seconds>.<hostname>`
 * file in a folder (a `.1`, `.2`, ... suffix when that name is taken). The
 * file is opened once; every call writes its record straight through, so a
 * killed run loses at most the record being written (the reader ignores a
 * truncated last record).
 *
 * @example
 * ```ts
 * import { readTfEvents, TfEventsWriter } from "./tfevents.ts";
 * const dir = await Deno.makeTempDir();
 * const w = await TfEventsWriter.create(dir);
 * w.scalars(1, { "actor/pg_loss": 0.25, "system/tps": 1000 });
 * await w.close();
 * const events = await readTfEvents(w.path);
 * console.log(events[1]?.values["actor/pg_loss"]); // 0.25
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class TfEventsWriter {
  #file: Deno.FsFile | undefined;
  #now: () => number;
  /** Path of the event file. */
  readonly path: string;

  private constructor(file: Deno.FsFile, path: string, now: () => number) {
    this.#file = file;
    this.path = path;
    this.#now = now;
  }

  /** Creates the folder (recursively) and a new event file in it, and writes the file version event. */
  static async create(dir: string, options: TfEventsWriterOptions = {}): Promise<TfEventsWriter> {
    const now = options.now ?? (() => Date.now() / 1000);
    await Deno.mkdir(dir, { recursive: true });
    const t = now();
    const base = `${dir.replace(/\/+$/, "") || "/"}/events.out.tfevents.${Math.floor(t)}.${
      safeHostname(options.hostname ?? hostname())
    }`;
    for (let i = 0;; i++) {
      const path = i === 0 ? base : `${base}.${i}`;
      let file: Deno.FsFile;
      try {
        file = await Deno.open(path, { write: true, createNew: true });
      } catch (e) {
        if (e instanceof Deno.errors.AlreadyExists) continue;
        throw e;
      }
      const w = new TfEventsWriter(file, path, now);
      w.#write(new ProtoWriter().double(1, t).string(3, TF_EVENTS_FILE_VERSION).finish());
      if (options.restartStep !== undefined) {
        const log = new ProtoWriter().varint(1, SESSION_START).finish();
        w.#write(eventHeader(t, checkStep(options.restartStep)).bytes(6, log).finish());
      }
      return w;
    }
  }

  /**
   * One event at `step` holding a scalar (`simple_value`) per entry of
   * `values`. Entries whose value is not a number are skipped; NaN and
   * infinities are kept (TensorBoard shows them). Nothing is written when no
   * entry is left.
   */
  scalars(step: number, values: Readonly<Record<string, number>>, wallTime?: number): void {
    const summary = new ProtoWriter();
    let n = 0;
    for (const [tag, v] of Object.entries(values)) {
      if (typeof v !== "number") continue;
      summary.bytes(1, new ProtoWriter().string(1, tag).float(2, v).finish());
      n++;
    }
    if (n === 0) return;
    this.#writeSummary(step, summary.finish(), wallTime);
  }

  /**
   * A text summary (TensorBoard's Text tab): a scalar string tensor with
   * plugin "text", rendered as Markdown by TensorBoard.
   */
  text(step: number, tag: string, value: string, wallTime?: number): void {
    const metadata = new ProtoWriter()
      .bytes(1, new ProtoWriter().string(1, "text").finish())
      .varint(4, DATA_CLASS_TENSOR)
      .finish();
    const tensor = new ProtoWriter()
      .varint(1, DT_STRING)
      .bytes(2, new Uint8Array(0)) // shape [] (a scalar)
      .string(8, value)
      .finish();
    const v = new ProtoWriter().string(1, tag).bytes(9, metadata).bytes(8, tensor).finish();
    this.#writeSummary(step, new ProtoWriter().bytes(1, v).finish(), wallTime);
  }

  /** Forces written records to disk (fdatasync). */
  async flush(): Promise<void> {
    await this.#open().syncData();
  }

  /** Closes the file; later writes throw. Closing twice is allowed. */
  close(): Promise<void> {
    this.#file?.close();
    this.#file = undefined;
    return Promise.resolve();
  }

  /** Same as {@linkcode TfEventsWriter.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #writeSummary(step: number, summary: Uint8Array, wallTime: number | undefined): void {
    this.#write(eventHeader(wallTime ?? this.#now(), checkStep(step)).bytes(5, summary).finish());
  }

  #open(): Deno.FsFile {
    if (this.#file === undefined) throw new Error(`The event file ${this.path} is closed`);
    return this.#file;
  }

  #write(event: Uint8Array): void {
    const file = this.#open();
    const record = frameRecord(event);
    for (let off = 0; off < record.length;) off += file.writeSync(record.subarray(off));
  }
}

/** wall_time and step of an Event (step omitted when 0, as proto3 does). */
function eventHeader(wallTime: number, step: number): ProtoWriter {
  const w = new ProtoWriter().double(1, wallTime);
  return step === 0 ? w : w.varint(2, step);
}

function checkStep(step: number): number {
  if (!Number.isSafeInteger(step)) throw new RangeError(`A step is an integer: got ${step}`);
  return step;
}

/** Deno.hostname() when the sys permission is already granted (no prompt), else "agentrl". */
function hostname(): string {
  try {
    if (Deno.permissions.querySync({ name: "sys", kind: "hostname" }).state !== "granted") {
      return "agentrl";
    }
    return Deno.hostname() || "agentrl";
  } catch {
    return "agentrl";
  }
}

function safeHostname(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, "_") || "agentrl";
}

/** One decoded event. */
export interface TfEvent {
  /** Seconds since the epoch. */
  wallTime: number;
  /** Global step (0 when absent). */
  step: number;
  /** Set on the first event of a file. */
  fileVersion?: string;
  /** True for a SessionLog START event (a restart marker). */
  sessionStart?: boolean;
  /** Scalars by tag: `simple_value`s, and float/double scalar tensors. */
  values: Record<string, number>;
  /** Text summaries by tag (string tensors; several strings are joined by newlines). */
  texts: Record<string, string>;
}

/** Options of {@linkcode readTfEvents} and {@linkcode parseTfEvents}. */
export interface ReadTfEventsOptions {
  /**
   * Throw on a truncated last record instead of ignoring it (default false:
   * a killed writer leaves one, and TensorBoard ignores it too).
   */
  strict?: boolean;
}

/**
 * Reads an event file. Both CRCs of every record are checked; a mismatch
 * throws an error naming the file and byte offset.
 *
 * @example
 * ```ts
 * import { readTfEvents, TfEventsWriter } from "./tfevents.ts";
 * const dir = await Deno.makeTempDir();
 * const w = await TfEventsWriter.create(dir);
 * await w.close();
 * console.log((await readTfEvents(w.path))[0]?.fileVersion); // "brain.Event:2"
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readTfEvents(
  path: string,
  options: ReadTfEventsOptions = {},
): Promise<TfEvent[]> {
  const bytes = await Deno.readFile(path);
  try {
    return parseTfEvents(bytes, options);
  } catch (e) {
    if (e instanceof Error) e.message = `${path}: ${e.message}`;
    throw e;
  }
}

/**
 * Decodes the records of an event file held in memory (see {@linkcode readTfEvents}).
 *
 * @example
 * ```ts
 * import { frameRecord, parseTfEvents } from "./tfevents.ts";
 * import { ProtoWriter } from "./protobuf.ts";
 * const event = new ProtoWriter().double(1, 1.5).varint(2, 3).finish();
 * console.log(parseTfEvents(frameRecord(event))[0]?.step); // 3
 * ```
 */
export function parseTfEvents(bytes: Uint8Array, options: ReadTfEventsOptions = {}): TfEvent[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const events: TfEvent[] = [];
  for (let pos = 0; pos < bytes.length;) {
    if (pos + 12 > bytes.length) {
      if (options.strict) throw new Error(`Truncated record header at byte ${pos}`);
      break;
    }
    if (view.getUint32(pos + 8, true) !== maskCrc(crc32c(bytes.subarray(pos, pos + 8)))) {
      throw new Error(`Length CRC mismatch in the record at byte ${pos}`);
    }
    const len = Number(view.getBigUint64(pos, true));
    const end = pos + 12 + len + 4;
    if (end > bytes.length) {
      if (options.strict) {
        throw new Error(`Truncated record at byte ${pos}: needs ${len} data bytes`);
      }
      break;
    }
    const data = bytes.subarray(pos + 12, pos + 12 + len);
    if (view.getUint32(end - 4, true) !== maskCrc(crc32c(data))) {
      throw new Error(`Data CRC mismatch in the record at byte ${pos}`);
    }
    try {
      events.push(decodeEvent(data));
    } catch (e) {
      throw new Error(`Malformed event in the record at byte ${pos}: ${(e as Error).message}`);
    }
    pos = end;
  }
  return events;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function lenField(f: ProtoField): Uint8Array {
  if (f.wireType !== 2) throw new Error(`Field ${f.field} has wire type ${f.wireType}, expected 2`);
  return f.value;
}

function decodeEvent(data: Uint8Array): TfEvent {
  const event: TfEvent = { wallTime: 0, step: 0, values: {}, texts: {} };
  for (const f of decodeProto(data)) {
    if (f.field === 1 && f.wireType === 1) event.wallTime = fixedToNumber(f.value);
    else if (f.field === 2 && f.wireType === 0) event.step = Number(BigInt.asIntN(64, f.value));
    else if (f.field === 3) event.fileVersion = utf8.decode(lenField(f));
    else if (f.field === 5) decodeSummary(lenField(f), event);
    else if (f.field === 6) {
      for (const s of decodeProto(lenField(f))) {
        if (s.field === 1 && s.wireType === 0 && s.value === BigInt(SESSION_START)) {
          event.sessionStart = true;
        }
      }
    }
  }
  return event;
}

function decodeSummary(data: Uint8Array, event: TfEvent): void {
  for (const f of decodeProto(data)) {
    if (f.field !== 1) continue;
    let tag = "";
    let simple: number | undefined;
    let tensor: Uint8Array | undefined;
    for (const v of decodeProto(lenField(f))) {
      if (v.field === 1) tag = utf8.decode(lenField(v));
      else if (v.field === 2 && v.wireType === 5) simple = fixedToNumber(v.value);
      else if (v.field === 8) tensor = lenField(v);
    }
    if (simple !== undefined) event.values[tag] = simple;
    else if (tensor !== undefined) decodeTensor(tag, tensor, event);
  }
}

/** String tensors become texts; float/double scalar tensors (TF2-style scalars) become values. */
function decodeTensor(tag: string, data: Uint8Array, event: TfEvent): void {
  let dtype = 0;
  const strings: string[] = [];
  const numbers: number[] = [];
  let content: Uint8Array | undefined;
  for (const t of decodeProto(data)) {
    if (t.field === 1 && t.wireType === 0) dtype = Number(t.value);
    else if (t.field === 8) strings.push(utf8.decode(lenField(t)));
    else if (t.field === 4) content = lenField(t);
    else if (t.field === 5 || t.field === 6) {
      const width = t.field === 5 ? 4 : 8;
      // Packed (wire type 2) or one value per field.
      const raw = t.wireType === 2 || t.wireType === 1 || t.wireType === 5 ? t.value : undefined;
      if (raw === undefined) continue;
      for (let i = 0; i + width <= raw.length; i += width) {
        numbers.push(fixedToNumber(raw.subarray(i, i + width)));
      }
    }
  }
  if (dtype === DT_STRING) event.texts[tag] = strings.join("\n");
  else if ((dtype === DT_FLOAT || dtype === DT_DOUBLE) && content !== undefined) {
    const width = dtype === DT_FLOAT ? 4 : 8;
    if (content.length === width) event.values[tag] = fixedToNumber(content);
  } else if ((dtype === DT_FLOAT || dtype === DT_DOUBLE) && numbers.length === 1) {
    event.values[tag] = numbers[0]!;
  }
}
