/**
 * A 3x5 pixel font for digits and arithmetic symbols, to draw numbers and
 * expressions into frames without a font library.
 *
 * @module
 */
import { fillRect, type Rgb } from "./canvas.ts";
import type { RgbFrame } from "../types.ts";

/** Glyphs as five rows of three bits (1 = ink), most significant bit on the left. */
const GLYPHS: Readonly<Record<string, readonly number[]>> = {
  "0": [0b111, 0b101, 0b101, 0b101, 0b111],
  "1": [0b010, 0b110, 0b010, 0b010, 0b111],
  "2": [0b111, 0b001, 0b111, 0b100, 0b111],
  "3": [0b111, 0b001, 0b111, 0b001, 0b111],
  "4": [0b101, 0b101, 0b111, 0b001, 0b001],
  "5": [0b111, 0b100, 0b111, 0b001, 0b111],
  "6": [0b111, 0b100, 0b111, 0b101, 0b111],
  "7": [0b111, 0b001, 0b010, 0b010, 0b010],
  "8": [0b111, 0b101, 0b111, 0b101, 0b111],
  "9": [0b111, 0b101, 0b111, 0b001, 0b111],
  "+": [0b000, 0b010, 0b111, 0b010, 0b000],
  "-": [0b000, 0b000, 0b111, 0b000, 0b000],
  "*": [0b000, 0b101, 0b010, 0b101, 0b000],
  "/": [0b001, 0b001, 0b010, 0b100, 0b100],
  "(": [0b001, 0b010, 0b010, 0b010, 0b001],
  ")": [0b100, 0b010, 0b010, 0b010, 0b100],
  "=": [0b000, 0b111, 0b000, 0b111, 0b000],
  "?": [0b111, 0b001, 0b010, 0b000, 0b010],
  ",": [0b000, 0b000, 0b000, 0b010, 0b100],
  ".": [0b000, 0b000, 0b000, 0b000, 0b010],
  " ": [0, 0, 0, 0, 0],
};

/** Width in pixels of `text` drawn at `scale` (4 font pixels per character, spacing included). */
export function textWidth(text: string, scale: number): number {
  return [...text].length * 4 * scale;
}

/**
 * Draws `text` with its top-left corner at (x, y), each font pixel a
 * `scale` x `scale` square; characters without a glyph are drawn as `?`.
 *
 * @example
 * ```ts
 * import { createFrame } from "./canvas.ts";
 * import { drawText } from "./pixel_font.ts";
 * const f = createFrame(40, 12);
 * drawText(f, "12+3", 2, 1, 2, [255, 255, 255]);
 * ```
 */
export function drawText(
  frame: RgbFrame,
  text: string,
  x: number,
  y: number,
  scale: number,
  color: Rgb,
): void {
  let cx = x;
  for (const ch of text) {
    const glyph = GLYPHS[ch] ?? GLYPHS["?"]!;
    for (let row = 0; row < 5; row++) {
      for (let col = 0; col < 3; col++) {
        if (glyph[row]! & (0b100 >> col)) {
          fillRect(frame, cx + col * scale, y + row * scale, scale, scale, color);
        }
      }
    }
    cx += 4 * scale;
  }
}
