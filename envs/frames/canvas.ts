/**
 * Minimal drawing on {@linkcode RgbFrame}s (filled rectangles, circles, lines),
 * enough for the environments to draw their own tiles.
 *
 * @module
 */
import type { RgbFrame } from "../types.ts";

/** An RGB color, each channel 0..255. */
export type Rgb = readonly [number, number, number];

/**
 * A `width` x `height` frame filled with `color`.
 *
 * @example
 * ```ts
 * import { createFrame } from "./canvas.ts";
 * const f = createFrame(2, 1, [255, 0, 0]);
 * console.log(f.data); // Uint8Array(6) [255, 0, 0, 255, 0, 0]
 * ```
 */
export function createFrame(width: number, height: number, color: Rgb = [0, 0, 0]): RgbFrame {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new RangeError(`Frame size ${width}x${height} is not valid: expected positive integers`);
  }
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i += 3) {
    data[i] = color[0];
    data[i + 1] = color[1];
    data[i + 2] = color[2];
  }
  return { width, height, data };
}

/** Sets one pixel; pixels outside the frame are ignored. */
export function setPixel(frame: RgbFrame, x: number, y: number, color: Rgb): void {
  if (x < 0 || y < 0 || x >= frame.width || y >= frame.height) return;
  const i = (y * frame.width + x) * 3;
  frame.data[i] = color[0];
  frame.data[i + 1] = color[1];
  frame.data[i + 2] = color[2];
}

/**
 * Fills the rectangle with top-left corner (x, y), clipped to the frame.
 *
 * @example
 * ```ts
 * import { createFrame, fillRect } from "./canvas.ts";
 * const f = createFrame(4, 4);
 * fillRect(f, 1, 1, 2, 2, [9, 9, 9]);
 * console.log(f.data[(1 * 4 + 1) * 3]); // 9
 * ```
 */
export function fillRect(
  frame: RgbFrame,
  x: number,
  y: number,
  w: number,
  h: number,
  color: Rgb,
): void {
  const x0 = Math.max(0, Math.round(x)), y0 = Math.max(0, Math.round(y));
  const x1 = Math.min(frame.width, Math.round(x + w)),
    y1 = Math.min(frame.height, Math.round(y + h));
  for (let yy = y0; yy < y1; yy++) {
    let i = (yy * frame.width + x0) * 3;
    for (let xx = x0; xx < x1; xx++, i += 3) {
      frame.data[i] = color[0];
      frame.data[i + 1] = color[1];
      frame.data[i + 2] = color[2];
    }
  }
}

/** Draws a rectangle's outline `thickness` pixels wide, inside its bounds. */
export function strokeRect(
  frame: RgbFrame,
  x: number,
  y: number,
  w: number,
  h: number,
  color: Rgb,
  thickness = 1,
): void {
  fillRect(frame, x, y, w, thickness, color);
  fillRect(frame, x, y + h - thickness, w, thickness, color);
  fillRect(frame, x, y, thickness, h, color);
  fillRect(frame, x + w - thickness, y, thickness, h, color);
}

/** Fills the disc of radius `r` centred at (cx, cy) (pixel centres inside the circle). */
export function fillCircle(frame: RgbFrame, cx: number, cy: number, r: number, color: Rgb): void {
  const r2 = r * r;
  for (let y = Math.floor(cy - r); y <= Math.ceil(cy + r); y++) {
    for (let x = Math.floor(cx - r); x <= Math.ceil(cx + r); x++) {
      const dx = x + 0.5 - cx, dy = y + 0.5 - cy;
      if (dx * dx + dy * dy <= r2) setPixel(frame, x, y, color);
    }
  }
}

/** Draws a straight line `thickness` pixels wide from (x0, y0) to (x1, y1). */
export function drawLine(
  frame: RgbFrame,
  x0: number,
  y0: number,
  x1: number,
  y1: number,
  color: Rgb,
  thickness = 1,
): void {
  const steps = Math.max(1, Math.ceil(Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0)) * 2));
  const half = thickness / 2;
  for (let i = 0; i <= steps; i++) {
    const t = i / steps;
    const x = x0 + (x1 - x0) * t, y = y0 + (y1 - y0) * t;
    fillRect(frame, x - half, y - half, thickness, thickness, color);
  }
}

/** The color of the pixel at (x, y). */
export function getPixel(frame: RgbFrame, x: number, y: number): Rgb {
  const i = (y * frame.width + x) * 3;
  return [frame.data[i]!, frame.data[i + 1]!, frame.data[i + 2]!];
}
