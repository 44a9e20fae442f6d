// Stop strings over the decoded text of a growing token sequence.
//
// Decoding the whole sequence at every step costs O(n) per token; instead the
// text grows by deltas, as vLLM's incremental detokenizer does: decode the
// tokens from `prefixOffset` with and without the newest ones and keep the
// difference. A delta whose text ends in U+FFFD (a multi-byte character split
// across tokens, as byte-level BPE does) is held back until the character is
// complete. Only the tail that could hold a new match is searched.

/** Decodes token ids to text (e.g. `(ids) => tokenizer.decode(ids)`). */
export type DecodeFn = (ids: number[]) => string;

/** A stop string found in the generated text. */
export interface StopMatch {
  stop: string;
  /** Where the match starts in {@linkcode StopStringMatcher.text}. */
  index: number;
}

/** Incremental text of one sequence and the earliest stop string in it. */
export class StopStringMatcher {
  readonly #decode: DecodeFn;
  readonly #stops: readonly string[];
  readonly #longest: number;
  #prefixOffset = 0;
  #readOffset = 0;
  /** The text decoded so far (it may lag the tokens by an incomplete character). */
  text = "";

  constructor(decode: DecodeFn, stops: readonly string[]) {
    this.#decode = decode;
    this.#stops = stops;
    this.#longest = Math.max(...stops.map((s) => s.length));
  }

  /**
   * Takes the sequence's tokens so far (the newest last) and returns the
   * earliest stop string in the text, or null.
   */
  update(ids: number[]): StopMatch | null {
    const prefix = this.#decode(ids.slice(this.#prefixOffset, this.#readOffset));
    const full = this.#decode(ids.slice(this.#prefixOffset));
    if (full.length <= prefix.length || full.endsWith("\uFFFD")) return null;
    const from = Math.max(0, this.text.length - this.#longest + 1);
    this.text += full.slice(prefix.length);
    this.#prefixOffset = this.#readOffset;
    this.#readOffset = ids.length;
    let best: StopMatch | null = null;
    for (const stop of this.#stops) {
      const index = this.text.indexOf(stop, from);
      if (index >= 0 && (best === null || index < best.index)) best = { stop, index };
    }
    return best;
  }
}

/**
 * The fewest leading tokens of `ids` whose text already holds `text[0, end)`:
 * the token that completed a stop string ending at `end`. (A match is usually
 * completed by the newest token; it is an earlier one when a split character
 * held the text back.)
 */
export function tokensThrough(decode: DecodeFn, ids: number[], text: string, end: number): number {
  const need = text.slice(0, end);
  let k = ids.length;
  while (k > 1 && decode(ids.slice(0, k - 1)).startsWith(need)) k--;
  return k;
}
