/**
 * Writing one episode's frames to disk: a PNG per frame and a GIF of them all.
 *
 * @module
 */
import type { RgbFrame } from "../types.ts";
import { encodeGif, encodePng, type GifOptions } from "./encode.ts";

/** What {@linkcode writeEpisodeFrames} wrote. */
export interface WrittenEpisode {
  /** The PNG files, in frame order. */
  pngs: string[];
  /** The GIF file. */
  gif: string;
}

/**
 * Writes `frames` as `DIR/NAME/frame_000.png ...` and `DIR/NAME.gif`, creating
 * the folders. Needs write permission for `dir`.
 *
 * @example
 * ```ts ignore
 * import { writeEpisodeFrames } from "./episode_writer.ts";
 * import { createFrame } from "./canvas.ts";
 * const out = await writeEpisodeFrames("render", "episode_0000", [createFrame(8, 8)]);
 * console.log(out.gif); // "render/episode_0000.gif"
 * ```
 */
export async function writeEpisodeFrames(
  dir: string,
  name: string,
  frames: readonly RgbFrame[],
  options: GifOptions = {},
): Promise<WrittenEpisode> {
  const folder = `${dir.replace(/\/+$/, "")}/${name}`;
  await Deno.mkdir(folder, { recursive: true });
  const pngs: string[] = [];
  for (const [i, frame] of frames.entries()) {
    const path = `${folder}/frame_${String(i).padStart(3, "0")}.png`;
    await Deno.writeFile(path, encodePng(frame));
    pngs.push(path);
  }
  const gif = `${folder}.gif`;
  await Deno.writeFile(gif, encodeGif(frames, options));
  return { pngs, gif };
}
