/**
 * A small, deterministic byte-level BPE trainer (GPT-2 / Qwen style) that
 * writes Hugging Face's `tokenizer.json` format: 256 byte tokens, then one
 * token per learned merge, then the added (special) tokens. Meant for compact
 * vocabularies (hundreds to a few thousand entries) over a corpus of a few
 * megabytes, such as the tiny default model's.
 *
 * @module
 */

/**
 * Qwen2's pre-tokenizer pattern (Oniguruma syntax, as `tokenizer.json` stores
 * it): contractions, words with one leading non-letter, single digits,
 * punctuation runs, newlines, spaces.
 */
export const QWEN2_PRETOKENIZE_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/**
 * Grid rows (FrozenLake's and Sokoban's symbols `_ O P G X √ # S`): every
 * cell of a line made only of these symbols is its own pre-token, so a cell
 * is always one token and the cell above is always row-width + 1 tokens back
 * (Oniguruma syntax: `^` and `$` match at line breaks). Applied before
 * {@linkcode QWEN2_PRETOKENIZE_PATTERN}.
 */
export const GRID_CELL_PATTERN = "(?<=^|[_OPGX√#S])[_OPGX√#S](?=[_OPGX√#S]*$)";

/** {@linkcode GRID_CELL_PATTERN} as a JavaScript regular expression. */
const GRID_CELL = /(?<=^|[_OPGX√#S])[_OPGX√#S](?=[_OPGX√#S]*$)/gmu;

/** {@linkcode QWEN2_PRETOKENIZE_PATTERN} as a JavaScript regular expression, for training. */
const PRETOKENIZE =
  /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/**
 * GPT-2's byte → printable character table (`bytes_to_unicode`): printable
 * Latin-1 bytes map to themselves, the rest to U+0100 and up (space → `Ġ`,
 * newline → `Ċ`).
 *
 * @example
 * ```ts
 * import { BYTE_TO_UNICODE } from "./bpe_trainer.ts";
 * console.log(BYTE_TO_UNICODE[32], BYTE_TO_UNICODE[10], BYTE_TO_UNICODE[65]); // "Ġ" "Ċ" "A"
 * ```
 */
export const BYTE_TO_UNICODE: readonly string[] = (() => {
  const table: string[] = new Array(256);
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    table[b] = String.fromCodePoint(printable ? b : next++);
  }
  return Object.freeze(table);
})();

/**
 * Splits text into pre-tokens the way {@linkcode QWEN2_PRETOKENIZE_PATTERN}
 * does, each mapped to byte-level characters.
 *
 * @example
 * ```ts
 * import { byteLevelPieces } from "./bpe_trainer.ts";
 * console.log(byteLevelPieces("Hello world\n")); // ["Hello", "Ġworld", "Ċ"]
 * ```
 */
export function byteLevelPieces(text: string): string[] {
  const encoder = new TextEncoder();
  const pieces: string[] = [];
  const push = (part: string) => {
    for (const match of part.matchAll(PRETOKENIZE)) {
      let piece = "";
      for (const byte of encoder.encode(match[0])) piece += BYTE_TO_UNICODE[byte]!;
      pieces.push(piece);
    }
  };
  // grid cells first (isolated), then the Qwen2 pattern over everything else
  let at = 0;
  for (const cell of text.matchAll(GRID_CELL)) {
    push(text.slice(at, cell.index));
    push(cell[0]);
    at = cell.index + cell[0].length;
  }
  push(text.slice(at));
  return pieces;
}

/** Options of {@linkcode trainByteLevelBpe}. */
export interface BpeTrainOptions {
  /** Vocabulary entries before the added tokens: 256 bytes plus merges (at least 256). */
  vocabSize: number;
  /** A pair must occur at least this often to be merged (default 2). */
  minFrequency?: number;
  /** Strings cut out of the corpus before training (they become added tokens). */
  specialTokens?: readonly string[];
}

/** What {@linkcode trainByteLevelBpe} learned. */
export interface BpeModel {
  /** Token → id: the 256 bytes (id = byte value), then one token per merge. */
  vocab: Map<string, number>;
  /** The merges in rank order, as `[left, right]` token pairs. */
  merges: Array<[string, string]>;
}

/**
 * Learns byte-level BPE merges from `texts`: count the pre-tokens, then
 * repeatedly merge the most frequent adjacent pair (ties: the pair whose left
 * token, then right token, has the lower id, as Hugging Face's trainer), until
 * `vocabSize` entries or no pair reaches `minFrequency`. Deterministic: the same
 * corpus gives the same merges.
 *
 * @example
 * ```ts
 * import { trainByteLevelBpe } from "./bpe_trainer.ts";
 * const { merges, vocab } = trainByteLevelBpe(["low lower lowest"], { vocabSize: 259 });
 * console.log(merges); // [["l", "o"], ["lo", "w"], ["Ġ", "low"]]
 * console.log(vocab.size); // 259
 * ```
 */
export function trainByteLevelBpe(texts: Iterable<string>, options: BpeTrainOptions): BpeModel {
  const { vocabSize } = options;
  const minFrequency = options.minFrequency ?? 2;
  if (!Number.isInteger(vocabSize) || vocabSize < 256) {
    throw new RangeError(`vocabSize ${vocabSize} is not valid: expected an integer >= 256`);
  }
  if (!Number.isInteger(minFrequency) || minFrequency < 1) {
    throw new RangeError(`minFrequency ${minFrequency} is not valid: expected an integer >= 1`);
  }
  const specials = [...(options.specialTokens ?? [])].filter((s) => s !== "");
  const splitter = specials.length > 0
    ? new RegExp(specials.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g")
    : undefined;

  // Word (pre-token) frequencies.
  const counts = new Map<string, number>();
  for (const text of texts) {
    for (const part of splitter ? text.split(splitter) : [text]) {
      for (const piece of byteLevelPieces(part)) counts.set(piece, (counts.get(piece) ?? 0) + 1);
    }
  }
  const vocab = new Map<string, number>();
  BYTE_TO_UNICODE.forEach((ch, b) => vocab.set(ch, b));
  // Words as arrays of token ids, sorted so that iteration order never depends on the input order.
  const words = [...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([word, count]) => ({ ids: [...word].map((ch) => vocab.get(ch)!), count }));
  const tokens: string[] = [...BYTE_TO_UNICODE];
  const merges: Array<[string, string]> = [];

  // Pair counts (key = left * 2^20 + right) and, per pair, the words it occurs in.
  const SHIFT = 1 << 20;
  if (vocabSize > SHIFT) throw new RangeError(`vocabSize ${vocabSize} is too large`);
  const pairCounts = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const addPairs = (w: number, sign: 1 | -1) => {
    const { ids, count } = words[w]!;
    for (let i = 0; i + 1 < ids.length; i++) {
      const key = ids[i]! * SHIFT + ids[i + 1]!;
      pairCounts.set(key, (pairCounts.get(key) ?? 0) + sign * count);
      if (sign > 0) {
        let set = pairWords.get(key);
        if (!set) pairWords.set(key, set = new Set());
        set.add(w);
      }
    }
  };
  for (let w = 0; w < words.length; w++) addPairs(w, 1);

  while (tokens.length < vocabSize) {
    let bestKey = -1;
    let bestCount = 0;
    for (const [key, count] of pairCounts) {
      if (count > bestCount || (count === bestCount && count > 0 && key < bestKey)) {
        bestKey = key;
        bestCount = count;
      }
    }
    if (bestKey < 0 || bestCount < minFrequency) break;
    const left = Math.floor(bestKey / SHIFT);
    const right = bestKey % SHIFT;
    const merged = tokens[left]! + tokens[right]!;
    // Two different pairs can spell the same string (a+bc, ab+c): keep the first id.
    const newId = vocab.get(merged) ?? tokens.length;
    if (newId === tokens.length) {
      tokens.push(merged);
      vocab.set(merged, newId);
    }
    merges.push([tokens[left]!, tokens[right]!]);
    const affected = [...(pairWords.get(bestKey) ?? [])].sort((a, b) => a - b);
    for (const w of affected) {
      addPairs(w, -1);
      const ids = words[w]!.ids;
      const out: number[] = [];
      for (let i = 0; i < ids.length; i++) {
        if (i + 1 < ids.length && ids[i] === left && ids[i + 1] === right) {
          out.push(newId);
          i++;
        } else {
          out.push(ids[i]!);
        }
      }
      words[w]!.ids = out;
      addPairs(w, 1);
    }
    pairCounts.delete(bestKey);
    pairWords.delete(bestKey);
    for (const [key, count] of pairCounts) if (count <= 0) pairCounts.delete(key);
  }
  return { vocab, merges };
}
