// Types for the parts of gifenc 1.0.3 (which ships none) that agentrl uses.

/** An RGB palette entry. */
export type PaletteColor = [number, number, number] | number[];

/** Options of one frame. */
export interface WriteFrameOptions {
  palette?: PaletteColor[] | null;
  /** Milliseconds this frame shows. */
  delay?: number;
  /** Loop count: 0 forever, -1 once. */
  repeat?: number;
  transparent?: boolean;
  transparentIndex?: number;
  colorDepth?: number;
  dispose?: number;
  first?: boolean;
}

/** A streaming GIF encoder. */
export interface Encoder {
  writeFrame(index: Uint8Array, width: number, height: number, opts?: WriteFrameOptions): void;
  finish(): void;
  bytes(): Uint8Array;
  bytesView(): Uint8Array;
  reset(): void;
}

export function GIFEncoder(opts?: { initialCapacity?: number; auto?: boolean }): Encoder;
export function quantize(
  rgba: Uint8Array | Uint8ClampedArray,
  maxColors: number,
  opts?: Record<string, unknown>,
): PaletteColor[];
export function applyPalette(
  rgba: Uint8Array | Uint8ClampedArray,
  palette: PaletteColor[],
  format?: string,
): Uint8Array;
