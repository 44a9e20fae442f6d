/**
 * Sokoban as an image: brick walls, floor, targets, boxes (green once on a
 * target) and the player, one square tile per cell.
 *
 * @module
 */
import {
  createFrame,
  drawLine,
  fillCircle,
  fillRect,
  type Rgb,
  strokeRect,
} from "../frames/canvas.ts";
import type { RgbFrame } from "../types.ts";
import { CELL, type SokobanLevel, stateCodes } from "./level.ts";

/** Pixels per cell. */
export const SOKOBAN_TILE = 24;

/** Tile colors, one per kind. */
export const SOKOBAN_COLORS = {
  wall: [118, 64, 46] as Rgb,
  mortar: [86, 46, 34] as Rgb,
  floor: [226, 214, 190] as Rgb,
  target: [214, 52, 52] as Rgb,
  box: [196, 134, 48] as Rgb,
  boxEdge: [120, 78, 22] as Rgb,
  boxOnTarget: [70, 166, 80] as Rgb,
  boxOnTargetEdge: [36, 100, 44] as Rgb,
  player: [52, 92, 204] as Rgb,
  face: [245, 245, 245] as Rgb,
} as const;

/**
 * Draws a level.
 *
 * @example
 * ```ts
 * import { renderSokoban } from "./render_rgb.ts";
 * import { parseLevel } from "./level.ts";
 * const f = renderSokoban(parseLevel("####\n#PX#\n#_O#\n####"));
 * console.log(f.width, f.height); // 96 96
 * ```
 */
export function renderSokoban(level: SokobanLevel): RgbFrame {
  const t = SOKOBAN_TILE, c = SOKOBAN_COLORS;
  const codes = stateCodes(level);
  const frame = createFrame(level.cols * t, level.rows * t, c.floor);
  for (let r = 0; r < level.rows; r++) {
    for (let col = 0; col < level.cols; col++) {
      const x = col * t, y = r * t, code = codes[r * level.cols + col];
      if (code === CELL.wall) {
        fillRect(frame, x, y, t, t, c.wall);
        for (const yy of [t / 3, (2 * t) / 3]) fillRect(frame, x, y + yy, t, 1, c.mortar);
        fillRect(frame, x + t / 2, y, 1, t / 3, c.mortar);
        fillRect(frame, x + t / 4, y + t / 3, 1, t / 3, c.mortar);
        fillRect(frame, x + (3 * t) / 4, y + t / 3, 1, t / 3, c.mortar);
        fillRect(frame, x + t / 2, y + (2 * t) / 3, 1, t / 3, c.mortar);
        continue;
      }
      const onTarget = code === CELL.target || code === CELL.boxOnTarget ||
        code === CELL.playerOnTarget;
      if (onTarget) strokeRect(frame, x + 3, y + 3, t - 6, t - 6, c.target, 2);
      if (code === CELL.box || code === CELL.boxOnTarget) {
        const fill = code === CELL.box ? c.box : c.boxOnTarget;
        const edge = code === CELL.box ? c.boxEdge : c.boxOnTargetEdge;
        fillRect(frame, x + 4, y + 4, t - 8, t - 8, fill);
        strokeRect(frame, x + 4, y + 4, t - 8, t - 8, edge, 2);
        drawLine(frame, x + 6, y + 6, x + t - 7, y + t - 7, edge, 1);
        drawLine(frame, x + t - 7, y + 6, x + 6, y + t - 7, edge, 1);
      } else if (code === CELL.player || code === CELL.playerOnTarget) {
        fillCircle(frame, x + t / 2, y + t / 2, t * 0.3, c.player);
        fillCircle(frame, x + t / 2 - t * 0.1, y + t / 2 - t * 0.06, t * 0.06, c.face);
        fillCircle(frame, x + t / 2 + t * 0.1, y + t / 2 - t * 0.06, t * 0.06, c.face);
      }
    }
  }
  return frame;
}
