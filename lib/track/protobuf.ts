/**
 * The few pieces of the protocol buffers wire format that event files need:
 * a writer for varint, 64-bit double, 32-bit float and length-delimited
 * fields, and a flat field decoder for reading them back.
 *
 * @module
 */

/** Wire types: 0 varint, 1 fixed 64-bit, 2 length-delimited, 5 fixed 32-bit. */
export type WireType = 0 | 1 | 2 | 5;

const utf8 = new TextEncoder();

/**
 * Appends protobuf fields to a growing buffer. Fields are written in call
 * order; nested messages are encoded separately and added with
 * {@linkcode ProtoWriter.bytes}.
 *
 * @example
 * ```ts
 * import { ProtoWriter } from "./protobuf.ts";
 * const bytes = new ProtoWriter().varint(1, 150).finish();
 * console.log([...bytes]); // [8, 150, 1]
 * ```
 */
export class ProtoWriter {
  #buf = new Uint8Array(64);
  #view = new DataView(this.#buf.buffer);
  #len = 0;

  /** Makes room for `n` more bytes. */
  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
    this.#view = new DataView(next.buffer);
  }

  /** A bare varint (no tag). Negative numbers are written as 64-bit two's complement. */
  #rawVarint(value: number | bigint): void {
    if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) {
      this.#reserve(8);
      while (value >= 0x80) {
        this.#buf[this.#len++] = (value % 0x80) | 0x80;
        value = Math.floor(value / 0x80);
      }
      this.#buf[this.#len++] = value;
      return;
    }
    if (typeof value === "number" && !Number.isInteger(value)) {
      throw new RangeError(`A varint needs an integer: got ${value}`);
    }
    let v = BigInt.asUintN(64, BigInt(value));
    this.#reserve(10);
    while (v >= 0x80n) {
      this.#buf[this.#len++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.#buf[this.#len++] = Number(v);
  }

  #tag(field: number, wire: WireType): void {
    if (!Number.isInteger(field) || field < 1 || field > 0x1fffffff) {
      throw new RangeError(`A field number is an integer in [1, 2^29 - 1]: got ${field}`);
    }
    this.#rawVarint(field * 8 + wire);
  }

  /** An int32/int64/uint64/bool/enum field (wire type 0). */
  varint(field: number, value: number | bigint): this {
    this.#tag(field, 0);
    this.#rawVarint(value);
    return this;
  }

  /** A double field (wire type 1, little-endian IEEE 754 binary64). */
  double(field: number, value: number): this {
    this.#tag(field, 1);
    this.#reserve(8);
    this.#view.setFloat64(this.#len, value, true);
    this.#len += 8;
    return this;
  }

  /** A float field (wire type 5, little-endian IEEE 754 binary32; the value is rounded). */
  float(field: number, value: number): this {
    this.#tag(field, 5);
    this.#reserve(4);
    this.#view.setFloat32(this.#len, value, true);
    this.#len += 4;
    return this;
  }

  /** A bytes or embedded-message field (wire type 2). */
  bytes(field: number, value: Uint8Array): this {
    this.#tag(field, 2);
    this.#rawVarint(value.length);
    this.#reserve(value.length);
    this.#buf.set(value, this.#len);
    this.#len += value.length;
    return this;
  }

  /** A string field (wire type 2, UTF-8). */
  string(field: number, value: string): this {
    return this.bytes(field, utf8.encode(value));
  }

  /** The encoded message (a copy; the writer can go on appending). */
  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

/** One decoded field: varints as unsigned 64-bit bigints, everything else as its raw bytes. */
export type ProtoField =
  | { field: number; wireType: 0; value: bigint }
  | { field: number; wireType: 1 | 2 | 5; value: Uint8Array };

/**
 * The top-level fields of one encoded message, in order (nested messages stay
 * as bytes: decode them again). Throws a RangeError on truncated or
 * malformed input and on group wire types (3, 4), which event files never use.
 *
 * @example
 * ```ts
 * import { decodeProto, ProtoWriter } from "./protobuf.ts";
 * const [f] = decodeProto(new ProtoWriter().varint(2, 7).finish());
 * console.log(f?.field, f?.value); // 2 7n
 * ```
 */
export function decodeProto(bytes: Uint8Array): ProtoField[] {
  const out: ProtoField[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (pos >= bytes.length) throw new RangeError(`Truncated varint at byte ${pos}`);
      const b = bytes[pos++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return BigInt.asUintN(64, v);
    }
    throw new RangeError(`Varint longer than 10 bytes at byte ${pos}`);
  };
  const take = (n: number): Uint8Array => {
    if (pos + n > bytes.length) {
      throw new RangeError(`Field runs past the end: ${n} bytes at byte ${pos} of ${bytes.length}`);
    }
    const s = bytes.subarray(pos, pos + n);
    pos += n;
    return s;
  };
  while (pos < bytes.length) {
    const key = varint();
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (field < 1) throw new RangeError(`Field number 0 at byte ${pos}`);
    if (wire === 0) out.push({ field, wireType: 0, value: varint() });
    else if (wire === 1) out.push({ field, wireType: 1, value: take(8) });
    else if (wire === 5) out.push({ field, wireType: 5, value: take(4) });
    else if (wire === 2) out.push({ field, wireType: 2, value: take(Number(varint())) });
    else throw new RangeError(`Unsupported wire type ${wire} for field ${field}`);
  }
  return out;
}

/**
 * A little-endian double or float from a fixed-width field's bytes (8 or 4 of them).
 *
 * @example
 * ```ts
 * import { decodeProto, fixedToNumber, ProtoWriter } from "./protobuf.ts";
 * const [f] = decodeProto(new ProtoWriter().float(2, 0.5).finish());
 * console.log(f?.wireType === 5 && fixedToNumber(f.value)); // 0.5
 * ```
 */
export function fixedToNumber(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length === 8) return view.getFloat64(0, true);
  if (bytes.length === 4) return view.getFloat32(0, true);
  throw new RangeError(`A fixed-width number has 4 or 8 bytes: got ${bytes.length}`);
}
