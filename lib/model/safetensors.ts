/**
 * Our own reader and writer of the safetensors format
 * (https://github.com/huggingface/safetensors):
 *
 * ```
 * u64 LE  N                      header size in bytes
 * N bytes JSON header            {name: {dtype, shape, data_offsets: [begin, end]},
 *                                 "__metadata__": {str: str}}, space-padded to 8
 * data                           offsets are relative to the start of the data,
 *                                contiguous from 0, little-endian, row-major
 * ```
 *
 * Reading is lazy: opening a file reads and validates its header only; each
 * tensor's bytes are read on demand with one seek and one read straight into the
 * returned array (F32 tensors are never copied twice). Writing is atomic: the file
 * is written to `name.tmp-<pid>`, synced, then renamed.
 *
 * @module
 */
import { editDistance } from "../util/did_you_mean.ts";

/** Where a checkpoint error was found, for the user to locate it. */
export interface CheckpointErrorDetails {
  /** The file (or folder) the error is about. */
  file?: string | undefined;
  /** The tensor, weight or config key the error is about. */
  key?: string | undefined;
}

/**
 * A problem with a model checkpoint on disk: a malformed safetensors file, a bad
 * `config.json`, a missing weight or shard. The message names the file and says
 * what was expected.
 *
 * @example
 * ```ts
 * import { CheckpointError } from "./safetensors.ts";
 * const e = new CheckpointError("Weight 'x' not found in /m/model.safetensors", {
 *   file: "/m/model.safetensors",
 *   key: "x",
 * });
 * console.log(e.details.file); // "/m/model.safetensors"
 * ```
 */
export class CheckpointError extends Error {
  /** The file and key the error is about. */
  readonly details: CheckpointErrorDetails;

  /** An error with a sentence-case message (naming the file) and its location. */
  constructor(message: string, details: CheckpointErrorDetails = {}) {
    super(message);
    this.name = "CheckpointError";
    this.details = details;
  }
}

/** Bytes per element of each safetensors dtype. */
export const SAFETENSORS_DTYPE_BYTES = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  F8_E4M3: 1,
  F8_E5M2: 1,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U64: 8,
  U32: 4,
  U16: 2,
  U8: 1,
  BOOL: 1,
} as const;

/** A dtype name as the safetensors header writes it. */
export type SafetensorsDtype = keyof typeof SAFETENSORS_DTYPE_BYTES;

/** The dtypes `readF32` converts; the others are read as raw bytes only. */
export const FLOAT_DTYPES: readonly SafetensorsDtype[] = ["F32", "BF16", "F16", "F64"];

/** The largest header we accept (as the reference implementation does). */
export const MAX_HEADER_BYTES = 100_000_000;

/** One tensor's entry in a safetensors header. */
export interface TensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: readonly number[];
  /** Byte offsets [begin, end) relative to the start of the data section. */
  begin: number;
  end: number;
}

/** A tensor to write: its name, shape and values (row-major). */
export interface TensorToWrite {
  name: string;
  shape: readonly number[];
  data: Float32Array;
}

/** Options for {@linkcode writeSafetensors}. */
export interface WriteSafetensorsOptions {
  /** The dtype stored on disk: `f32` (default) or `bf16` (round to nearest even). */
  dtype?: "f32" | "bf16";
  /** String key/value pairs for `__metadata__` (transformers wants `{format: "pt"}`). */
  metadata?: Readonly<Record<string, string>>;
}

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function assertLittleEndianHost(): void {
  if (!LITTLE_ENDIAN_HOST) {
    throw new Error("Safetensors I/O expects a little-endian host; this machine is big-endian");
  }
}

const product = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);
const formatShape = (shape: readonly number[]): string => `[${shape.join(", ")}]`;

// ---------------------------------------------------------------------------
// Element conversions

let f16Table: Float32Array | undefined;

/**
 * The float32 value of an IEEE 754 half-precision bit pattern (subnormals, ±0,
 * ±infinity and NaN included).
 *
 * @example
 * ```ts
 * import { f16ToF32 } from "./safetensors.ts";
 * console.log(f16ToF32(0x3c00)); // 1
 * console.log(f16ToF32(0x0001)); // 5.960464477539063e-8 (2^-24)
 * ```
 */
export function f16ToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24; // zero and subnormals
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/**
 * Decodes half-precision bit patterns into float32 values.
 *
 * @example
 * ```ts
 * import { decodeF16 } from "./safetensors.ts";
 * console.log(decodeF16(new Uint16Array([0x3c00, 0xc100, 0x7bff]))); // [1, -2.5, 65504]
 * ```
 */
export function decodeF16(src: Uint16Array, dst = new Float32Array(src.length)): Float32Array {
  if (dst.length !== src.length) {
    throw new RangeError(`decodeF16: output length ${dst.length}, expected ${src.length}`);
  }
  if (f16Table === undefined) {
    f16Table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) f16Table[i] = f16ToF32(i);
  }
  const table = f16Table;
  for (let i = 0; i < src.length; i++) dst[i] = table[src[i]!]!;
  return dst;
}

/**
 * Widens bfloat16 bit patterns to float32 (exact: bf16 is the top half of f32).
 *
 * @example
 * ```ts
 * import { decodeBf16 } from "./safetensors.ts";
 * console.log(decodeBf16(new Uint16Array([0x3f80, 0xc020]))); // [1, -2.5]
 * ```
 */
export function decodeBf16(src: Uint16Array, dst = new Float32Array(src.length)): Float32Array {
  if (dst.length !== src.length) {
    throw new RangeError(`decodeBf16: output length ${dst.length}, expected ${src.length}`);
  }
  const out = new Uint32Array(dst.buffer, dst.byteOffset, dst.length);
  for (let i = 0; i < src.length; i++) out[i] = src[i]! << 16;
  return dst;
}

/**
 * Rounds float32 values to bfloat16 bit patterns, to nearest with ties to even
 * (NaN stays a quiet NaN of the same sign; overflow rounds to infinity).
 *
 * @example
 * ```ts
 * import { decodeBf16, encodeBf16 } from "./safetensors.ts";
 * const bits = encodeBf16(new Float32Array([1, 1 + 2 ** -8, 1 + 3 * 2 ** -8]));
 * console.log(decodeBf16(bits)); // [1, 1, 1.015625]: ties go to the even neighbour
 * ```
 */
export function encodeBf16(src: Float32Array, dst = new Uint16Array(src.length)): Uint16Array {
  if (dst.length !== src.length) {
    throw new RangeError(`encodeBf16: output length ${dst.length}, expected ${src.length}`);
  }
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i]!;
    if ((b & 0x7fffffff) > 0x7f800000) {
      dst[i] = (b >>> 16) | 0x0040; // NaN: keep the sign, force a quiet NaN
    } else {
      dst[i] = (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
    }
  }
  return dst;
}

// ---------------------------------------------------------------------------
// Header parsing and validation

/** A validated safetensors header. */
export interface SafetensorsHeader {
  /** The tensors, in data order (sorted by offset). */
  tensors: TensorInfo[];
  /** The `__metadata__` map (empty when absent). */
  metadata: Record<string, string>;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Validates a parsed header against the size of the data section that follows
 * it: known dtypes, byte sizes matching shapes, offsets contiguous from 0 with no
 * gap or overlap, and the last tensor ending exactly at the end of the data.
 *
 * @example
 * ```ts
 * import { validateSafetensorsHeader } from "./safetensors.ts";
 * const h = validateSafetensorsHeader(
 *   { w: { dtype: "F32", shape: [2], data_offsets: [0, 8] }, __metadata__: { format: "pt" } },
 *   8,
 *   "demo.safetensors",
 * );
 * console.log(h.tensors[0]!.shape, h.metadata.format); // [2] "pt"
 * ```
 */
export function validateSafetensorsHeader(
  header: unknown,
  dataBytes: number,
  file: string,
): SafetensorsHeader {
  const fail = (message: string, key?: string): never => {
    throw new CheckpointError(`Safetensors file ${file}: ${message}`, { file, key });
  };
  if (!isPlainObject(header)) {
    fail(`the header must be a JSON object, found ${Array.isArray(header) ? "an array" : header}`);
  }
  const metadata: Record<string, string> = {};
  const tensors: TensorInfo[] = [];
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (!isPlainObject(entry)) fail(`'__metadata__' must be an object of strings`, name);
      for (const [k, v] of Object.entries(entry as Record<string, unknown>)) {
        if (typeof v !== "string") {
          fail(`'__metadata__.${k}' must be a string, found ${JSON.stringify(v)}`, name);
        }
        metadata[k] = v as string;
      }
      continue;
    }
    if (!isPlainObject(entry)) {
      fail(`tensor '${name}' must be an object {dtype, shape, data_offsets}`, name);
    }
    const { dtype, shape, data_offsets: offsets } = entry as Record<string, unknown>;
    if (typeof dtype !== "string" || !Object.hasOwn(SAFETENSORS_DTYPE_BYTES, dtype)) {
      fail(
        `tensor '${name}' has unknown dtype ${JSON.stringify(dtype)}; expected one of ${
          Object.keys(SAFETENSORS_DTYPE_BYTES).join(", ")
        }`,
        name,
      );
    }
    if (
      !Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)
    ) {
      fail(
        `tensor '${name}' has shape ${
          JSON.stringify(shape)
        }; expected an array of non-negative integers`,
        name,
      );
    }
    if (
      !Array.isArray(offsets) || offsets.length !== 2 ||
      !offsets.every((o) => Number.isSafeInteger(o) && (o as number) >= 0) ||
      offsets[0] > offsets[1]
    ) {
      fail(
        `tensor '${name}' has data_offsets ${
          JSON.stringify(offsets)
        }; expected [begin, end] with 0 <= begin <= end`,
        name,
      );
    }
    const dims = shape as number[];
    const [begin, end] = offsets as [number, number];
    const itemBytes = SAFETENSORS_DTYPE_BYTES[dtype as SafetensorsDtype];
    const expected = product(dims) * itemBytes;
    if (expected !== end - begin) {
      fail(
        `tensor '${name}' (${dtype}, shape ${formatShape(dims)}) needs ${
          product(dims)
        } × ${itemBytes} = ${expected} bytes, but its data_offsets [${begin}, ${end}] span ${
          end - begin
        }`,
        name,
      );
    }
    tensors.push({ name, dtype: dtype as SafetensorsDtype, shape: dims, begin, end });
  }
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let position = 0;
  let previous: TensorInfo | undefined;
  for (const t of tensors) {
    if (t.begin > position) {
      fail(
        `gap in the data: tensor '${t.name}' starts at byte ${t.begin} but ${
          previous ? `'${previous.name}' ends at ${position}` : "the data starts at 0"
        } (${t.begin - position} bytes unaccounted for); offsets must be contiguous`,
        t.name,
      );
    }
    if (t.begin < position) {
      fail(
        `tensor '${t.name}' [${t.begin}, ${t.end}) overlaps '${previous!.name}' [${
          previous!.begin
        }, ${previous!.end}); offsets must be contiguous without overlap`,
        t.name,
      );
    }
    position = t.end;
    previous = t;
  }
  if (position > dataBytes) {
    fail(
      `truncated: the header describes ${position} data bytes but only ${dataBytes} follow it (${
        position - dataBytes
      } bytes missing)`,
    );
  }
  if (position < dataBytes) {
    fail(
      `the header describes ${position} data bytes but ${dataBytes} follow it (${
        dataBytes - position
      } unexpected trailing bytes)`,
    );
  }
  return { tensors, metadata };
}

// ---------------------------------------------------------------------------
// Reading

function readFully(file: Deno.FsFile, into: Uint8Array, offset: number, path: string): void {
  file.seekSync(offset, Deno.SeekMode.Start);
  let done = 0;
  while (done < into.length) {
    const n = file.readSync(into.subarray(done));
    if (n === null || n === 0) {
      throw new CheckpointError(
        `Safetensors file ${path} ended early: wanted ${into.length} bytes at offset ${offset}, got ${done} (was it changed while open?)`,
        { file: path },
      );
    }
    done += n;
  }
}

function toPath(path: string | URL): string {
  return path instanceof URL ? decodeURIComponent(path.pathname) : path;
}

/**
 * An open safetensors file: the validated header, with each tensor's bytes read
 * on demand. Close it (or `using` it) when done.
 *
 * @example
 * ```ts
 * import { SafetensorsFile, writeSafetensors } from "./safetensors.ts";
 * const path = `${await Deno.makeTempDir()}/demo.safetensors`;
 * await writeSafetensors(path, [{ name: "w", shape: [2, 2], data: new Float32Array([1, 2, 3, 4]) }]);
 * using f = SafetensorsFile.open(path);
 * console.log(f.names(), f.info("w").shape, f.readF32("w")); // ["w"] [2, 2] [1, 2, 3, 4]
 * ```
 */
export class SafetensorsFile implements Disposable {
  /** The file's path. */
  readonly path: string;
  /** The `__metadata__` strings (empty when absent). */
  readonly metadata: Readonly<Record<string, string>>;
  /** Absolute byte offset of the data section (8 + header size). */
  readonly dataStart: number;
  #tensors: Map<string, TensorInfo>;
  #file: Deno.FsFile | null;

  private constructor(
    path: string,
    file: Deno.FsFile,
    header: SafetensorsHeader,
    dataStart: number,
  ) {
    this.path = path;
    this.#file = file;
    this.metadata = header.metadata;
    this.dataStart = dataStart;
    this.#tensors = new Map(header.tensors.map((t) => [t.name, t]));
  }

  /** Opens `path`, reads and validates its header (throws {@linkcode CheckpointError}). */
  static open(path: string | URL): SafetensorsFile {
    assertLittleEndianHost();
    const p = toPath(path);
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(p, { read: true });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new CheckpointError(`Safetensors file ${p} does not exist`, { file: p });
      }
      if (e instanceof Deno.errors.IsADirectory || e instanceof Deno.errors.PermissionDenied) {
        throw new CheckpointError(`Safetensors file ${p} cannot be read: ${e.message}`, {
          file: p,
        });
      }
      throw e;
    }
    try {
      const stat = file.statSync();
      if (stat.isDirectory) {
        throw new CheckpointError(`Safetensors file ${p} is a folder: expected a file`, {
          file: p,
        });
      }
      const size = stat.size;
      if (size < 8) {
        throw new CheckpointError(
          `Safetensors file ${p} is ${size} bytes long; expected at least the 8-byte header size`,
          { file: p },
        );
      }
      const prefix = new Uint8Array(8);
      readFully(file, prefix, 0, p);
      const n = new DataView(prefix.buffer).getBigUint64(0, true);
      if (n > BigInt(MAX_HEADER_BYTES)) {
        throw new CheckpointError(
          `Safetensors file ${p} declares a header of ${n} bytes, over the ${MAX_HEADER_BYTES} byte limit (corrupt, or not a safetensors file)`,
          { file: p },
        );
      }
      const headerBytes = Number(n);
      if (8 + headerBytes > size) {
        throw new CheckpointError(
          `Safetensors file ${p} is truncated: its header is ${headerBytes} bytes but only ${
            size - 8
          } bytes follow the size prefix`,
          { file: p },
        );
      }
      const raw = new Uint8Array(headerBytes);
      readFully(file, raw, 8, p);
      let json: unknown;
      try {
        json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
      } catch (e) {
        throw new CheckpointError(
          `Safetensors file ${p}: the ${headerBytes}-byte header is not valid UTF-8 JSON (${
            (e as Error).message
          })`,
          { file: p },
        );
      }
      const header = validateSafetensorsHeader(json, size - 8 - headerBytes, p);
      return new SafetensorsFile(p, file, header, 8 + headerBytes);
    } catch (e) {
      file.close();
      throw e;
    }
  }

  /** The tensor names, in data order. */
  names(): string[] {
    return [...this.#tensors.keys()];
  }

  /** Whether the file holds a tensor called `name`. */
  has(name: string): boolean {
    return this.#tensors.has(name);
  }

  /** All tensor entries, in data order. */
  tensors(): TensorInfo[] {
    return [...this.#tensors.values()];
  }

  /** The header entry of tensor `name` (throws naming close names when absent). */
  info(name: string): TensorInfo {
    const t = this.#tensors.get(name);
    if (t === undefined) {
      const close = closeNames(name, this.#tensors.keys());
      throw new CheckpointError(
        `Tensor '${name}' not found in ${this.path} (${this.#tensors.size} tensors)${
          close.length ? `; close names: ${close.join(", ")}` : ""
        }`,
        { file: this.path, key: name },
      );
    }
    return t;
  }

  /** The raw little-endian bytes of tensor `name` (one read, no copy). */
  readBytes(name: string): Uint8Array {
    const t = this.info(name);
    const out = new Uint8Array(t.end - t.begin);
    readFully(this.#open(), out, this.dataStart + t.begin, this.path);
    return out;
  }

  /**
   * Tensor `name` as float32 values: F32 is read straight into the result, BF16,
   * F16 and F64 are converted. Integer and boolean tensors are refused (use
   * {@linkcode readBytes}).
   */
  readF32(name: string): Float32Array {
    const t = this.info(name);
    const count = product(t.shape);
    const file = this.#open();
    const at = this.dataStart + t.begin;
    switch (t.dtype) {
      case "F32": {
        const out = new Float32Array(count);
        readFully(file, new Uint8Array(out.buffer), at, this.path);
        return out;
      }
      case "BF16":
      case "F16": {
        const bits = new Uint16Array(count);
        readFully(file, new Uint8Array(bits.buffer), at, this.path);
        return t.dtype === "BF16" ? decodeBf16(bits) : decodeF16(bits);
      }
      case "F64": {
        const wide = new Float64Array(count);
        readFully(file, new Uint8Array(wide.buffer), at, this.path);
        return Float32Array.from(wide);
      }
      default:
        throw new CheckpointError(
          `Tensor '${name}' in ${this.path} is ${t.dtype}; readF32 converts only ${
            FLOAT_DTYPES.join(", ")
          } (read ${t.dtype} tensors with readBytes)`,
          { file: this.path, key: name },
        );
    }
  }

  #open(): Deno.FsFile {
    if (this.#file === null) throw new Error(`Safetensors file ${this.path} is closed`);
    return this.#file;
  }

  /** Closes the file (idempotent). */
  close(): void {
    this.#file?.close();
    this.#file = null;
  }

  /** Closes the file. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Up to `limit` names closest to `name` by edit distance (for "not found" errors).
 *
 * @example
 * ```ts
 * import { closeNames } from "./safetensors.ts";
 * console.log(closeNames("model.norm.weigth", ["model.norm.weight", "lm_head.weight"], 1));
 * // ["model.norm.weight"]
 * ```
 */
export function closeNames(name: string, candidates: Iterable<string>, limit = 3): string[] {
  // Case differences count less than other edits: rank by the case-insensitive
  // distance, then the exact one, then the name.
  const lower = name.toLowerCase();
  const scored: [number, number, string][] = [];
  for (const c of candidates) {
    scored.push([editDistance(lower, c.toLowerCase()), editDistance(name, c), c]);
  }
  scored.sort((a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : 1));
  const cutoff = Math.max(3, Math.ceil(name.length / 3));
  return scored.filter(([d]) => d <= cutoff).slice(0, limit).map(([, , c]) => c);
}

// ---------------------------------------------------------------------------
// Writing

const CHUNK_ELEMENTS = 1 << 20;

async function writeAll(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
  let done = 0;
  while (done < bytes.length) done += await file.write(bytes.subarray(done));
}

/**
 * The header JSON, space-padded to a multiple of 8, for tensors laid out in the
 * given order at `bytesPerElement`.
 */
function encodeHeader(
  tensors: readonly TensorToWrite[],
  dtype: "F32" | "BF16",
  metadata: Readonly<Record<string, string>> | undefined,
  file: string,
): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata !== undefined && Object.keys(metadata).length > 0) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== "string") {
        throw new TypeError(
          `Cannot write ${file}: metadata '${k}' must be a string, got ${typeof v}`,
        );
      }
    }
    header.__metadata__ = { ...metadata };
  }
  const itemBytes = SAFETENSORS_DTYPE_BYTES[dtype];
  let offset = 0;
  for (const t of tensors) {
    if (t.name === "" || t.name === "__metadata__") {
      throw new TypeError(`Cannot write ${file}: '${t.name}' is not a valid tensor name`);
    }
    if (Object.hasOwn(header, t.name)) {
      throw new TypeError(`Cannot write ${file}: tensor '${t.name}' appears twice`);
    }
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new TypeError(
        `Cannot write ${file}: tensor '${t.name}' has shape ${
          formatShape(t.shape)
        }; expected non-negative integers`,
      );
    }
    if (product(t.shape) !== t.data.length) {
      throw new TypeError(
        `Cannot write ${file}: tensor '${t.name}' has shape ${formatShape(t.shape)} (${
          product(t.shape)
        } elements) but ${t.data.length} values`,
      );
    }
    const bytes = t.data.length * itemBytes;
    header[t.name] = { dtype, shape: [...t.shape], data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = new Uint8Array(8 + Math.ceil(json.length / 8) * 8).fill(0x20);
  new DataView(padded.buffer).setBigUint64(0, BigInt(padded.length - 8), true);
  padded.set(json, 8);
  return padded;
}

/**
 * Writes tensors to a safetensors file atomically (`path.tmp-<pid>`, fsync, rename),
 * stored as F32 (default) or BF16 (rounded to nearest even), in the given order.
 *
 * @example
 * ```ts
 * import { SafetensorsFile, writeSafetensors } from "./safetensors.ts";
 * const path = `${await Deno.makeTempDir()}/half.safetensors`;
 * await writeSafetensors(path, [{ name: "b", shape: [3], data: new Float32Array([1, 0.1, -2]) }], {
 *   dtype: "bf16",
 *   metadata: { format: "pt" },
 * });
 * using f = SafetensorsFile.open(path);
 * console.log(f.info("b").dtype, f.readF32("b")); // "BF16" [1, 0.10009765625, -2]
 * ```
 */
export async function writeSafetensors(
  path: string | URL,
  tensors: Iterable<TensorToWrite>,
  options: WriteSafetensorsOptions = {},
): Promise<void> {
  assertLittleEndianHost();
  const p = toPath(path);
  const dtype = options.dtype ?? "f32";
  if (dtype !== "f32" && dtype !== "bf16") {
    throw new TypeError(
      `Cannot write ${p}: dtype '${dtype}' is not supported; expected f32 or bf16`,
    );
  }
  const list = [...tensors];
  const header = encodeHeader(list, dtype === "f32" ? "F32" : "BF16", options.metadata, p);
  const tmp = `${p}.tmp-${Deno.pid}`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
  try {
    await writeAll(file, header);
    const scratch = dtype === "bf16"
      ? new Uint16Array(
        Math.min(CHUNK_ELEMENTS, list.reduce((m, t) => Math.max(m, t.data.length), 1)),
      )
      : undefined;
    for (const { data } of list) {
      if (scratch === undefined) {
        await writeAll(file, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
        continue;
      }
      for (let i = 0; i < data.length; i += CHUNK_ELEMENTS) {
        const part = data.subarray(i, i + CHUNK_ELEMENTS);
        const bits = encodeBf16(part, scratch.subarray(0, part.length));
        await writeAll(file, new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength));
      }
    }
    await file.sync();
    file.close();
    await Deno.rename(tmp, p);
  } catch (e) {
    try {
      file.close();
    } catch { /* already closed */ }
    await Deno.remove(tmp).catch(() => {});
    throw e;
  }
}
