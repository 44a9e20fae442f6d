/**
 * A small BM25 search engine, after the Lucene index WebShop's pyserini searcher
 * uses: English analysis (possessive `'s` removed, Lucene's English stop words dropped,
 * Porter stemming), Lucene's BM25 with Anserini's defaults k1 = 0.9, b = 0.4:
 *
 *     score(q, d) = Σ_{t in q} qtf(t) · idf(t) · tf / (tf + k1 · (1 − b + b · |d| / avgdl))
 *     idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
 *
 * Only documents sharing at least one term with the query are returned, best first,
 * ties in insertion order.
 *
 * @module
 */
import { porterStem } from "./porter_stemmer.ts";

/** Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`. */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set(
  ("a an and are as at be but by for if in into is it no not of on or such that the their " +
    "then there these they this to was will with").split(" "),
);

/**
 * Splits text into index terms: lower case, letter/digit runs (inner `'` and `.` kept, as
 * in `6.5`), possessive `'s` removed, stop words dropped, Porter-stemmed.
 *
 * @example
 * ```ts
 * import { analyze } from "./bm25.ts";
 * console.log(analyze("Women's Running Shoes, size 6.5")); // ["women", "run", "shoe", "size", "6.5"]
 * ```
 */
export function analyze(text: string): string[] {
  const out: string[] = [];
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}]+(?:['’.][\p{L}\p{N}]+)*/gu)) {
    let token = m[0].replace(/['’]s$/, "");
    token = token.replace(/['’]/g, "");
    if (token === "" || ENGLISH_STOP_WORDS.has(token)) continue;
    out.push(porterStem(token));
  }
  return out;
}

/** One search hit: the document's id and its BM25 score. */
export interface SearchHit {
  id: string;
  score: number;
}

/** BM25 parameters. */
export interface Bm25Options {
  /** Term-frequency saturation (default 0.9, Anserini's). */
  k1?: number;
  /** Length normalization (default 0.4, Anserini's). */
  b?: number;
}

/**
 * An in-memory BM25 index over `{id, text}` documents.
 *
 * @example
 * ```ts
 * import { Bm25Index } from "./bm25.ts";
 * const index = new Bm25Index([
 *   { id: "A", text: "red running shoes" },
 *   { id: "B", text: "blue coffee mug" },
 * ]);
 * console.log(index.search("running shoe").map((h) => h.id)); // ["A"]
 * ```
 */
export class Bm25Index {
  readonly k1: number;
  readonly b: number;
  readonly ids: readonly string[];
  readonly #terms = new Map<string, number>();
  #postDocs: Int32Array[] = [];
  #postTf: Float32Array[] = [];
  readonly #docLen: Float32Array;
  readonly #avgdl: number;

  /** Indexes the documents (ids need not be unique; hits report them as given). */
  constructor(docs: Iterable<{ id: string; text: string }>, options: Bm25Options = {}) {
    this.k1 = options.k1 ?? 0.9;
    this.b = options.b ?? 0.4;
    const ids: string[] = [];
    const lens: number[] = [];
    const docsOf: number[][] = [];
    const tfsOf: number[][] = [];
    for (const doc of docs) {
      const d = ids.length;
      ids.push(doc.id);
      const terms = analyze(doc.text);
      lens.push(terms.length);
      const counts = new Map<string, number>();
      for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
      for (const [t, c] of counts) {
        let id = this.#terms.get(t);
        if (id === undefined) {
          id = docsOf.length;
          this.#terms.set(t, id);
          docsOf.push([]);
          tfsOf.push([]);
        }
        docsOf[id]!.push(d);
        tfsOf[id]!.push(c);
      }
    }
    this.ids = ids;
    this.#postDocs = docsOf.map((a) => Int32Array.from(a));
    this.#postTf = tfsOf.map((a) => Float32Array.from(a));
    this.#docLen = Float32Array.from(lens);
    const total = lens.reduce((s, x) => s + x, 0);
    this.#avgdl = ids.length === 0 ? 0 : total / ids.length;
  }

  /** Number of documents. */
  get size(): number {
    return this.ids.length;
  }

  /** Documents containing the (analyzed) term. */
  docFreq(term: string): number {
    const id = this.#terms.get(term);
    return id === undefined ? 0 : this.#postDocs[id]!.length;
  }

  /** Lucene's idf of an analyzed term. */
  idf(term: string): number {
    const df = this.docFreq(term);
    return Math.log(1 + (this.size - df + 0.5) / (df + 0.5));
  }

  /** The `k` best documents for the query (fewer when fewer share a term with it). */
  search(query: string, k = 50): SearchHit[] {
    const qtf = new Map<string, number>();
    for (const t of analyze(query)) qtf.set(t, (qtf.get(t) ?? 0) + 1);
    const scores = new Float64Array(this.size);
    const touched: number[] = [];
    for (const [term, count] of qtf) {
      const id = this.#terms.get(term);
      if (id === undefined) continue;
      const docs = this.#postDocs[id]!;
      const tfs = this.#postTf[id]!;
      const w = count * this.idf(term);
      for (let i = 0; i < docs.length; i++) {
        const d = docs[i]!;
        const tf = tfs[i]!;
        const norm = this.k1 * (1 - this.b + (this.b * this.#docLen[d]!) / this.#avgdl);
        if (scores[d] === 0) touched.push(d);
        scores[d]! += (w * tf) / (tf + norm);
      }
    }
    touched.sort((x, y) => scores[y]! - scores[x]! || x - y);
    return touched.slice(0, k).map((d) => ({ id: this.ids[d]!, score: scores[d]! }));
  }
}
