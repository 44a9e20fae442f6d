/**
 * PNG and GIF output, read back with small decoders written here (zlib through
 * the platform's DecompressionStream, PNG row filters, GIF blocks and LZW), so
 * the pixels are checked independently of the encoders.
 */
import { deepStrictEqual, equal, ok, throws } from "node:assert/strict";
import { createFrame, fillCircle, fillRect } from "../../envs/frames/canvas.ts";
import { encodeGif, encodePng } from "../../envs/frames/encode.ts";
import { writeEpisodeFrames } from "../../envs/frames/episode_writer.ts";
import { createFrozenLakeEnv } from "../../envs/frozen_lake/mod.ts";
import { Rng } from "../../envs/random.ts";
import type { RgbFrame } from "../../envs/types.ts";

async function inflate(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as Uint8Array<ArrayBuffer>]).stream().pipeThrough(
    new DecompressionStream("deflate"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Decodes an 8-bit RGB, non-interlaced PNG. */
async function decodePng(png: Uint8Array): Promise<RgbFrame> {
  deepStrictEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  let width = 0, height = 0;
  const idat: Uint8Array[] = [];
  for (let p = 8; p < png.length;) {
    const len = view.getUint32(p);
    const type = new TextDecoder().decode(png.subarray(p + 4, p + 8));
    const body = png.subarray(p + 8, p + 8 + len);
    if (type === "IHDR") {
      width = view.getUint32(p + 8);
      height = view.getUint32(p + 12);
      deepStrictEqual([...body.subarray(8, 13)], [8, 2, 0, 0, 0]); // depth 8, RGB, no interlace
    }
    if (type === "IDAT") idat.push(body);
    p += 12 + len;
  }
  const raw = await inflate(new Uint8Array(idat.flatMap((c) => [...c])));
  const stride = width * 3;
  const data = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    for (let x = 0; x < stride; x++) {
      const v = raw[y * (stride + 1) + 1 + x]!;
      const a = x >= 3 ? data[y * stride + x - 3]! : 0;
      const b = y > 0 ? data[(y - 1) * stride + x]! : 0;
      const c = x >= 3 && y > 0 ? data[(y - 1) * stride + x - 3]! : 0;
      const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c);
      const paeth = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      const pred = [0, a, b, (a + b) >> 1, paeth][filter]!;
      data[y * stride + x] = (v + pred) & 255;
    }
  }
  return { width, height, data };
}

/** Decodes a GIF's frames to RGB (global or local palettes, full-size frames). */
function decodeGif(
  gif: Uint8Array,
): { frames: RgbFrame[]; delays: number[]; localTables: number; globalTable: boolean } {
  equal(new TextDecoder().decode(gif.subarray(0, 6)), "GIF89a");
  let p = 6;
  const u16 = () => gif[p++]! | (gif[p++]! << 8);
  const width = u16(), height = u16();
  const packed = gif[p++]!;
  p += 2;
  const readTable = (flags: number) => {
    const n = 1 << ((flags & 7) + 1);
    const table = gif.subarray(p, p + 3 * n);
    p += 3 * n;
    return table;
  };
  const global = packed & 0x80 ? readTable(packed) : undefined;
  const frames: RgbFrame[] = [];
  const delays: number[] = [];
  let localTables = 0;
  const subBlocks = () => {
    const parts: number[] = [];
    for (let n = gif[p++]!; n > 0; n = gif[p++]!) {
      parts.push(...gif.subarray(p, p + n));
      p += n;
    }
    return parts;
  };
  for (;;) {
    const block = gif[p++];
    if (block === 0x3b) break;
    if (block === 0x21) {
      const label = gif[p++];
      const body = subBlocks();
      if (label === 0xf9) delays.push((body[1]! | (body[2]! << 8)) * 10);
      continue;
    }
    equal(block, 0x2c, `unexpected block 0x${block?.toString(16)} at ${p - 1}`);
    p += 4; // left, top
    const w = u16(), h = u16();
    deepStrictEqual([w, h], [width, height]);
    const flags = gif[p++]!;
    if (flags & 0x80) localTables++;
    const palette = flags & 0x80 ? readTable(flags) : global!;
    const minCode = gif[p++]!;
    const indices = lzwDecode(subBlocks(), minCode, w * h);
    const data = new Uint8Array(w * h * 3);
    indices.forEach((ix, i) => data.set(palette.subarray(ix * 3, ix * 3 + 3), i * 3));
    frames.push({ width: w, height: h, data });
  }
  return { frames, delays, localTables, globalTable: global !== undefined };
}

function lzwDecode(bytes: number[], minCode: number, count: number): number[] {
  const clear = 1 << minCode, end = clear + 1;
  let size = minCode + 1;
  let dict: number[][] = [];
  const reset = () => {
    dict = Array.from({ length: clear + 2 }, (_, i) => [i]);
    size = minCode + 1;
  };
  reset();
  const out: number[] = [];
  let prev: number[] | undefined;
  let bit = 0;
  while (out.length < count) {
    let code = 0;
    for (let i = 0; i < size; i++, bit++) {
      code |= ((bytes[bit >> 3]! >> (bit & 7)) & 1) << i;
    }
    if (code === clear) {
      reset();
      prev = undefined;
      continue;
    }
    if (code === end) break;
    const entry = code < dict.length ? dict[code]! : [...prev!, prev![0]!];
    out.push(...entry);
    if (prev) dict.push([...prev, entry[0]!]);
    prev = entry;
    if (dict.length === 1 << size && size < 12) size++;
  }
  return out.slice(0, count);
}

function randomFrame(rng: Rng, w: number, h: number, colors: number): RgbFrame {
  const palette = Array.from({ length: colors }, () => [rng.int(256), rng.int(256), rng.int(256)]);
  const f = createFrame(w, h);
  for (let i = 0; i < w * h; i++) f.data.set(palette[rng.int(colors)]!, i * 3);
  return f;
}

Deno.test("PNG frames decode back to the same pixels", async () => {
  const rng = new Rng(1);
  for (const f of [randomFrame(rng, 37, 23, 200), createFrozenLakeEnv({}).render("rgb")]) {
    const decoded = await decodePng(encodePng(f));
    deepStrictEqual([decoded.width, decoded.height], [f.width, f.height]);
    deepStrictEqual(decoded.data, f.data);
  }
});

Deno.test("a GIF holds every frame, exactly, with one shared palette", () => {
  const frames: RgbFrame[] = [];
  for (let i = 0; i < 5; i++) {
    const f = createFrame(40, 30, [20, 30, 40]);
    fillRect(f, i * 5, 3, 10, 10, [250, 10, 10]);
    fillCircle(f, 30, 20, 6 - i, [10, 200, 90]);
    frames.push(f);
  }
  const gif = encodeGif(frames, { delayMs: 200 });
  const decoded = decodeGif(gif);
  equal(decoded.frames.length, 5);
  decoded.frames.forEach((f, i) => deepStrictEqual(f.data, frames[i]!.data, `frame ${i}`));
  deepStrictEqual(decoded.delays, [200, 200, 200, 200, 600]);
  // One palette: a global color table and no local ones.
  deepStrictEqual([decoded.globalTable, decoded.localTables], [true, 0]);
});

Deno.test("more than 256 colors are quantized to one palette; every frame is still there", () => {
  const rng = new Rng(2);
  const frames = [randomFrame(rng, 32, 32, 400), randomFrame(rng, 32, 32, 400)];
  const decoded = decodeGif(encodeGif(frames));
  equal(decoded.frames.length, 2);
  // Quantized colors stay near the originals on average.
  let err = 0;
  decoded.frames[0]!.data.forEach((v, i) => err += Math.abs(v - frames[0]!.data[i]!));
  ok(err / frames[0]!.data.length < 40, `mean error ${err / frames[0]!.data.length}`);
});

Deno.test("frames of different sizes, bad buffers and empty GIFs are errors", () => {
  throws(() => encodeGif([]), /at least one frame/);
  throws(() => encodeGif([createFrame(4, 4), createFrame(5, 4)]), /expected 4x4/);
  throws(() => encodePng({ width: 4, height: 4, data: new Uint8Array(3) }), /expected 4x4x3/);
});

Deno.test("writeEpisodeFrames writes one PNG per frame and a GIF", async () => {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_frames_" });
  try {
    const env = createFrozenLakeEnv({ is_slippery: false });
    env.reset(1);
    const frames = [env.render("rgb")];
    for (let i = 0; i < 3; i++) {
      env.step("<answer>Right</answer>");
      frames.push(env.render("rgb"));
    }
    const out = await writeEpisodeFrames(dir, "ep", frames);
    equal(out.pngs.length, 4);
    for (const [i, path] of out.pngs.entries()) {
      deepStrictEqual((await decodePng(await Deno.readFile(path))).data, frames[i]!.data);
    }
    equal(decodeGif(await Deno.readFile(out.gif)).frames.length, 4);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
