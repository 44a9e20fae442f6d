/**
 * Draws lines of text into an RGB image with the built-in 5x7 font: the `rgb` render
 * of the text environments (a "text card").
 *
 * @module
 */
import type { RgbFrame } from "../types.ts";
import { GLYPH_HEIGHT, GLYPH_WIDTH, glyphRows } from "./bitmap_font.ts";

/** Layout and colors of a text card. */
export interface TextCardOptions {
  /** Characters per line (default 64); longer lines are wrapped by the caller or cut. */
  columns?: number;
  /** Lines drawn (default 24); later lines are dropped. */
  rows?: number;
  /** Pixel scale of the font (default 2). */
  scale?: number;
  /** Margin in pixels (default 8). */
  margin?: number;
  /** Background color (default off-white). */
  background?: [number, number, number];
  /** Text color (default near black). */
  foreground?: [number, number, number];
  /** Color of the first line (default dark blue), for a title. */
  title?: [number, number, number];
}

/**
 * Wraps text at word boundaries to at most `columns` characters per line (words longer
 * than a line are split).
 *
 * @example
 * ```ts
 * import { wrapText } from "./text_card.ts";
 * console.log(wrapText("buy the red shoes now", 9)); // ["buy the", "red shoes", "now"]
 * ```
 */
export function wrapText(text: string, columns: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (let word of text.split(/\s+/).filter((w) => w !== "")) {
    while (word.length > columns) {
      if (line) lines.push(line);
      lines.push(word.slice(0, columns));
      word = word.slice(columns);
      line = "";
    }
    if (line === "") line = word;
    else if (line.length + 1 + word.length <= columns) line += ` ${word}`;
    else {
      lines.push(line);
      line = word;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * Draws up to `rows` lines (each cut to `columns` characters) into an RGB frame whose
 * size depends only on the options: width = 2·margin + columns·6·scale, height =
 * 2·margin + rows·9·scale (one pixel column and two rows of spacing per glyph).
 *
 * @example
 * ```ts
 * import { drawTextCard } from "./text_card.ts";
 * const frame = drawTextCard(["Hello"], { columns: 10, rows: 2, scale: 1, margin: 0 });
 * console.log(frame.width, frame.height, frame.data.length); // 60 18 3240
 * ```
 */
export function drawTextCard(lines: readonly string[], options: TextCardOptions = {}): RgbFrame {
  const columns = options.columns ?? 64;
  const rows = options.rows ?? 24;
  const scale = options.scale ?? 2;
  const margin = options.margin ?? 8;
  const bg = options.background ?? [250, 250, 245];
  const fg = options.foreground ?? [25, 25, 25];
  const title = options.title ?? [20, 60, 150];
  const cellW = (GLYPH_WIDTH + 1) * scale;
  const cellH = (GLYPH_HEIGHT + 2) * scale;
  const width = 2 * margin + columns * cellW;
  const height = 2 * margin + rows * cellH;
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) data.set(bg, 3 * i);
  lines.slice(0, rows).forEach((line, row) => {
    const color = row === 0 ? title : fg;
    [...line.slice(0, columns)].forEach((ch, col) => {
      const glyph = glyphRows(ch);
      const x0 = margin + col * cellW;
      const y0 = margin + row * cellH;
      for (let gy = 0; gy < GLYPH_HEIGHT; gy++) {
        for (let gx = 0; gx < GLYPH_WIDTH; gx++) {
          if (!((glyph[gy]! >> (GLYPH_WIDTH - 1 - gx)) & 1)) continue;
          for (let sy = 0; sy < scale; sy++) {
            for (let sx = 0; sx < scale; sx++) {
              const x = x0 + gx * scale + sx;
              const y = y0 + gy * scale + sy;
              data.set(color, 3 * (y * width + x));
            }
          }
        }
      }
    });
  });
  return { width, height, data };
}
