/**
 * Encoding frames: one PNG per frame (`fast-png`) and one animated GIF per
 * trajectory (`gifenc`) with a single palette shared by every frame.
 *
 * @module
 */
import { encode as encodePngData } from "npm:fast-png@8.0.0";
// @ts-types="./gifenc.d.ts"
import { applyPalette, GIFEncoder, quantize } from "npm:gifenc@1.0.3/dist/gifenc.esm.js";
import type { RgbFrame } from "../types.ts";

/**
 * A PNG file (8-bit RGB) of one frame.
 *
 * @example
 * ```ts
 * import { encodePng } from "./encode.ts";
 * import { createFrame } from "./canvas.ts";
 * const png = encodePng(createFrame(4, 4, [255, 0, 0]));
 * console.log(png[1] === 0x50 && png[2] === 0x4e && png[3] === 0x47); // true ("PNG")
 * ```
 */
export function encodePng(frame: RgbFrame): Uint8Array {
  checkFrame(frame);
  return encodePngData({
    width: frame.width,
    height: frame.height,
    data: frame.data,
    channels: 3,
    depth: 8,
  });
}

/** Options of {@linkcode encodeGif}. */
export interface GifOptions {
  /** Milliseconds each frame shows (default 400). */
  delayMs?: number;
  /** The last frame shows this long (default 3 x delayMs) so the ending is visible. */
  lastDelayMs?: number;
  /** Play once (false, the default, loops forever). */
  once?: boolean;
}

/**
 * An animated GIF of frames of one size. The palette is shared by all frames:
 * their exact colors when there are at most 256 of them (the environments
 * draw with a few flat colors), else a 256-color quantization of every frame.
 *
 * @example
 * ```ts
 * import { encodeGif } from "./encode.ts";
 * import { createFrame } from "./canvas.ts";
 * const gif = encodeGif([createFrame(8, 8, [0, 0, 0]), createFrame(8, 8, [255, 255, 255])]);
 * console.log(new TextDecoder().decode(gif.subarray(0, 6))); // "GIF89a"
 * ```
 */
export function encodeGif(frames: readonly RgbFrame[], options: GifOptions = {}): Uint8Array {
  if (frames.length === 0) throw new RangeError("A GIF needs at least one frame");
  const { width, height } = frames[0]!;
  for (const [i, f] of frames.entries()) {
    checkFrame(f);
    if (f.width !== width || f.height !== height) {
      throw new RangeError(
        `Frame ${i} is ${f.width}x${f.height}: expected ${width}x${height} like the first frame`,
      );
    }
  }
  const { palette, indices } = sharedPalette(frames);
  const delay = options.delayMs ?? 400;
  const gif = GIFEncoder();
  frames.forEach((_, i) => {
    // The first frame carries the global palette; later ones reuse it (a palette
    // passed again would be written as a local color table).
    gif.writeFrame(indices[i]!, width, height, {
      palette: i === 0 ? palette : null,
      delay: i === frames.length - 1 ? options.lastDelayMs ?? 3 * delay : delay,
      repeat: options.once ? -1 : 0,
    });
  });
  gif.finish();
  return gif.bytes();
}

/** One palette for all frames, and each frame's pixels as palette indices. */
function sharedPalette(frames: readonly RgbFrame[]): {
  palette: number[][];
  indices: Uint8Array[];
} {
  const lookup = new Map<number, number>();
  const palette: number[][] = [];
  exact: {
    for (const f of frames) {
      const d = f.data;
      for (let i = 0; i < d.length; i += 3) {
        const key = (d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!;
        if (lookup.has(key)) continue;
        if (palette.length === 256) break exact;
        lookup.set(key, palette.length);
        palette.push([d[i]!, d[i + 1]!, d[i + 2]!]);
      }
    }
    const indices = frames.map((f) => {
      const out = new Uint8Array(f.width * f.height);
      const d = f.data;
      for (let p = 0, i = 0; p < out.length; p++, i += 3) {
        out[p] = lookup.get((d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!)!;
      }
      return out;
    });
    return { palette, indices };
  }
  // More than 256 colors: quantize all frames together, then map each frame to that palette.
  const rgba = frames.map(toRgba);
  const all = new Uint8Array(rgba.reduce((n, a) => n + a.length, 0));
  let offset = 0;
  for (const a of rgba) {
    all.set(a, offset);
    offset += a.length;
  }
  const shared = quantize(all, 256, { format: "rgb565" }) as number[][];
  return { palette: shared, indices: rgba.map((a) => applyPalette(a, shared, "rgb565")) };
}

function toRgba(frame: RgbFrame): Uint8Array {
  const out = new Uint8Array(frame.width * frame.height * 4);
  for (let p = 0, i = 0, o = 0; p < frame.width * frame.height; p++, i += 3, o += 4) {
    out[o] = frame.data[i]!;
    out[o + 1] = frame.data[i + 1]!;
    out[o + 2] = frame.data[i + 2]!;
    out[o + 3] = 255;
  }
  return out;
}

function checkFrame(frame: RgbFrame): void {
  if (frame.data.length !== frame.width * frame.height * 3) {
    throw new RangeError(
      `Frame data has ${frame.data.length} bytes: expected ${frame.width}x${frame.height}x3 = ` +
        `${frame.width * frame.height * 3}`,
    );
  }
}
