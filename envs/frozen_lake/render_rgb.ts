/**
 * FrozenLake as an image: one square tile per cell (ice, hole, goal flag) and
 * the player drawn on top, red with a cross in a hole, with a check mark on the goal.
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
import type { FrozenLakeMap } from "./map.ts";

/** Pixels per cell. */
export const FROZEN_LAKE_TILE = 24;

/** Tile colors, one per kind (distinct so frames can be read back in tests). */
export const FROZEN_LAKE_COLORS = {
  ice: [214, 236, 247] as Rgb,
  iceEdge: [178, 212, 232] as Rgb,
  hole: [28, 44, 82] as Rgb,
  goal: [88, 178, 92] as Rgb,
  flag: [250, 204, 40] as Rgb,
  player: [232, 96, 32] as Rgb,
  fallen: [200, 30, 30] as Rgb,
  mark: [255, 255, 255] as Rgb,
} as const;

/**
 * Draws `map` with the player on tile `player` (row-major index).
 *
 * @example
 * ```ts
 * import { renderFrozenLake } from "./render_rgb.ts";
 * const f = renderFrozenLake(["SF", "HG"], 0);
 * console.log(f.width, f.height); // 48 48
 * ```
 */
export function renderFrozenLake(map: FrozenLakeMap, player: number): RgbFrame {
  const t = FROZEN_LAKE_TILE, c = FROZEN_LAKE_COLORS;
  const rows = map.length, cols = map[0]!.length;
  const frame = createFrame(cols * t, rows * t, c.ice);
  for (let r = 0; r < rows; r++) {
    for (let col = 0; col < cols; col++) {
      const x = col * t, y = r * t;
      const tile = map[r]![col];
      strokeRect(frame, x, y, t, t, c.iceEdge);
      if (tile === "H") {
        fillCircle(frame, x + t / 2, y + t / 2, t * 0.42, c.hole);
      } else if (tile === "G") {
        fillRect(frame, x + 2, y + 2, t - 4, t - 4, c.goal);
        drawLine(frame, x + t * 0.3, y + t * 0.2, x + t * 0.3, y + t * 0.85, c.mark, 2);
        fillRect(frame, x + t * 0.3, y + t * 0.2, t * 0.4, t * 0.25, c.flag);
      }
      if (r * cols + col === player) {
        const cx = x + t / 2, cy = y + t / 2;
        if (tile === "H") {
          fillCircle(frame, cx, cy, t * 0.3, c.fallen);
          drawLine(frame, cx - t * 0.18, cy - t * 0.18, cx + t * 0.18, cy + t * 0.18, c.mark, 2);
          drawLine(frame, cx - t * 0.18, cy + t * 0.18, cx + t * 0.18, cy - t * 0.18, c.mark, 2);
        } else {
          fillCircle(frame, cx, cy, t * 0.3, c.player);
          if (tile === "G") {
            drawLine(frame, cx - t * 0.15, cy, cx - t * 0.03, cy + t * 0.12, c.mark, 2);
            drawLine(frame, cx - t * 0.03, cy + t * 0.12, cx + t * 0.17, cy - t * 0.12, c.mark, 2);
          }
        }
      }
    }
  }
  return frame;
}
