/**
 * Fuzzy string matching as WebShop's reward uses it: `thefuzz.fuzz.token_set_ratio`
 * (the rapidfuzz-backed thefuzz, with its default full processing).
 *
 * Formula. Process both strings as thefuzz does: drop the characters U+0080..U+00FF
 * (its `force_ascii`), lowercase, replace every character that is not a letter or digit
 * by a space, trim. Split into token sets A and B.
 * Let I = A ∩ B, DA = A \ I, DB = B \ I, each sorted and joined by single spaces into
 * `i`, `da`, `db`, and let `ia` = `i + " " + da` and `ib` = `i + " " + db` (just `da` / `db`
 * when I is empty, `i` when the difference is empty). With
 * ratio(x, y) = 100 x 2 x LCS(x, y) / (|x| + |y|) (LCS = longest common subsequence,
 * i.e. the normalized Indel similarity):
 *
 *     token_set_ratio = 0                        if either processed string is empty
 *                     = 100                      if I is non-empty and DA or DB is empty
 *                     = max(ratio(i, ia), ratio(i, ib), ratio(ia, ib))   otherwise
 *
 * (ratio(i, ·) counts as 0 when I is empty), rounded to an integer half-to-even as
 * Python's `round`. WebShop calls it a match when the result is > 85.
 *
 * @module
 */

/**
 * thefuzz's default processing: U+0080..U+00FF dropped, lowercase, characters that are
 * not letters or digits to spaces, trimmed.
 *
 * @example
 * ```ts
 * import { processText } from "./fuzzy.ts";
 * console.log(processText("  Wine-Red, 40 ")); // "wine red  40"
 * ```
 */
export function processText(text: string): string {
  const ascii = text.replace(/[\u0080-\u00ff]/g, "");
  return ascii.toLowerCase().replace(/[^\p{L}\p{N}]/gu, " ").trim();
}

/** Length of the longest common subsequence of two strings (UTF-16 units, O(|a| x |b|)). */
export function lcsLength(a: string, b: string): number {
  if (a.length === 0 || b.length === 0) return 0;
  const row = new Uint32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    let diag = 0;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = ca === b.charCodeAt(j - 1) ? diag + 1 : Math.max(up, row[j - 1]!);
      diag = up;
    }
  }
  return row[b.length]!;
}

/**
 * The normalized Indel similarity in [0, 100]: 100 x 2 x LCS / (|a| + |b|), unrounded;
 * 100 for two empty strings.
 *
 * @example
 * ```ts
 * import { ratio } from "./fuzzy.ts";
 * console.log(ratio("abcd", "abce")); // 75
 * ```
 */
export function ratio(a: string, b: string): number {
  const total = a.length + b.length;
  return total === 0 ? 100 : (200 * lcsLength(a, b)) / total;
}

/** Rounds 200·lcs/total half-to-even exactly (integer arithmetic), as Python's round(). */
function roundedRatio(lcs: number, total: number): number {
  if (total === 0) return 100;
  const num = 200 * lcs;
  const q = Math.floor(num / total);
  const twiceRem = 2 * (num - q * total);
  if (twiceRem > total) return q + 1;
  if (twiceRem < total) return q;
  return q % 2 === 0 ? q : q + 1;
}

/**
 * thefuzz's `token_set_ratio` (an integer in 0..100); see the module docs for the formula.
 *
 * @example
 * ```ts
 * import { tokenSetRatio } from "./fuzzy.ts";
 * console.log(tokenSetRatio("polyester spandex", "spandex, polyester")); // 100
 * console.log(tokenSetRatio("x-large", "large")); // 100 (one token set contains the other)
 * console.log(tokenSetRatio("black", "white")); // 0
 * ```
 */
export function tokenSetRatio(a: string, b: string): number {
  const pa = processText(a);
  const pb = processText(b);
  if (pa === "" || pb === "") return 0;
  const setA = new Set(pa.split(/\s+/));
  const setB = new Set(pb.split(/\s+/));
  const inter = [...setA].filter((t) => setB.has(t)).sort();
  const diffA = [...setA].filter((t) => !setB.has(t)).sort();
  const diffB = [...setB].filter((t) => !setA.has(t)).sort();
  if (inter.length > 0 && (diffA.length === 0 || diffB.length === 0)) return 100;
  const i = inter.join(" ");
  const da = diffA.join(" ");
  const db = diffB.join(" ");
  const ia = i === "" ? da : `${i} ${da}`;
  const ib = i === "" ? db : `${i} ${db}`;
  // Each candidate as (lcs, total) so the final rounding is exact.
  const candidates: [number, number][] = [];
  if (i !== "") {
    candidates.push([i.length, i.length + ia.length]);
    candidates.push([i.length, i.length + ib.length]);
  }
  const prefix = i === "" ? 0 : i.length + 1;
  candidates.push([prefix + lcsLength(da, db), ia.length + ib.length]);
  // Rounding is monotone, so the max of the rounded values is the rounded max.
  return Math.max(...candidates.map(([lcs, total]) => roundedRatio(lcs, total)));
}

/** WebShop's match rule: token_set_ratio > 85. */
export function fuzzyMatch(a: string, b: string): boolean {
  return tokenSetRatio(a, b) > 85;
}
