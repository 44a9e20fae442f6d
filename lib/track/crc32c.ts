/**
 * CRC-32C (Castagnoli), the checksum TFRecord and TensorBoard event files use,
 * and the "masked" form those files store.
 *
 * @module
 */

/** The reflected Castagnoli polynomial 0x1EDC6F41. */
const POLY = 0x82f63b78;

/** Byte-at-a-time lookup table: TABLE[b] is the CRC register after shifting byte b through. */
const TABLE: Uint32Array = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/**
 * CRC-32C of `data` as an unsigned 32-bit number. Pass the CRC of earlier
 * bytes as `previous` to continue it: `crc32c(b, crc32c(a))` equals the CRC of
 * `a` followed by `b`.
 *
 * @example
 * ```ts
 * import { crc32c } from "./crc32c.ts";
 * const crc = crc32c(new TextEncoder().encode("123456789"));
 * console.log(crc.toString(16)); // "e3069283"
 * ```
 */
export function crc32c(data: Uint8Array, previous = 0): number {
  let crc = ~previous;
  for (let i = 0; i < data.length; i++) crc = TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

/**
 * The masked CRC-32C stored in TFRecord framing: the CRC rotated right by 15
 * bits plus the constant 0xa282ead8 (mod 2^32), so that a CRC computed over
 * data that itself contains CRCs does not degenerate.
 *
 * @example
 * ```ts
 * import { maskedCrc32c } from "./crc32c.ts";
 * console.log(maskedCrc32c(new Uint8Array(0)).toString(16)); // "a282ead8"
 * ```
 */
export function maskedCrc32c(data: Uint8Array): number {
  return maskCrc(crc32c(data));
}

/**
 * Masks an already computed CRC-32C: `((crc >>> 15) | (crc << 17)) + 0xa282ead8`.
 *
 * @example
 * ```ts
 * import { maskCrc, unmaskCrc } from "./crc32c.ts";
 * console.log(unmaskCrc(maskCrc(0xe3069283)) === 0xe3069283); // true
 * ```
 */
export function maskCrc(crc: number): number {
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/**
 * Inverts {@linkcode maskCrc}.
 *
 * @example
 * ```ts
 * import { maskCrc, unmaskCrc } from "./crc32c.ts";
 * console.log(unmaskCrc(maskCrc(12345)) === 12345); // true
 * ```
 */
export function unmaskCrc(masked: number): number {
  const rot = (masked - 0xa282ead8) >>> 0;
  return ((rot << 15) | (rot >>> 17)) >>> 0;
}
