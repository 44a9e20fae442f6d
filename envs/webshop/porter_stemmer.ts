/**
 * The Porter (1980) stemmer, as Lucene's `PorterStemFilter` (the analyzer WebShop's
 * pyserini index uses) applies it to lower-case English words.
 *
 * @module
 */

/** A word being stemmed: the characters and the index of its current last one. */
class Word {
  b: string[];
  k: number;
  j = 0;

  constructor(word: string) {
    this.b = [...word];
    this.k = this.b.length - 1;
  }

  /** Whether b[i] is a consonant (y after a consonant counts as a vowel). */
  cons(i: number): boolean {
    switch (this.b[i]) {
      case "a":
      case "e":
      case "i":
      case "o":
      case "u":
        return false;
      case "y":
        return i === 0 ? true : !this.cons(i - 1);
      default:
        return true;
    }
  }

  /** The measure m of b[0..j]: the number of vowel-consonant sequences. */
  m(): number {
    let n = 0;
    let i = 0;
    const j = this.j;
    for (;;) {
      if (i > j) return n;
      if (!this.cons(i)) break;
      i++;
    }
    i++;
    for (;;) {
      for (;;) {
        if (i > j) return n;
        if (this.cons(i)) break;
        i++;
      }
      i++;
      n++;
      for (;;) {
        if (i > j) return n;
        if (!this.cons(i)) break;
        i++;
      }
      i++;
    }
  }

  vowelInStem(): boolean {
    for (let i = 0; i <= this.j; i++) if (!this.cons(i)) return true;
    return false;
  }

  doubleC(i: number): boolean {
    return i >= 1 && this.b[i] === this.b[i - 1] && this.cons(i);
  }

  /** consonant-vowel-consonant ending at i, the last not w, x or y. */
  cvc(i: number): boolean {
    if (i < 2 || !this.cons(i) || this.cons(i - 1) || !this.cons(i - 2)) return false;
    const ch = this.b[i];
    return ch !== "w" && ch !== "x" && ch !== "y";
  }

  ends(s: string): boolean {
    const len = s.length;
    if (len > this.k + 1) return false;
    for (let i = 0; i < len; i++) {
      if (this.b[this.k - len + 1 + i] !== s[i]) return false;
    }
    this.j = this.k - len;
    return true;
  }

  setTo(s: string): void {
    this.b.splice(this.j + 1, this.k - this.j, ...s);
    this.k = this.j + s.length;
  }

  r(s: string): void {
    if (this.m() > 0) this.setTo(s);
  }

  toString(): string {
    return this.b.slice(0, this.k + 1).join("");
  }
}

function step1ab(w: Word): void {
  if (w.b[w.k] === "s") {
    if (w.ends("sses")) w.k -= 2;
    else if (w.ends("ies")) w.setTo("i");
    else if (w.b[w.k - 1] !== "s") w.k--;
  }
  if (w.ends("eed")) {
    if (w.m() > 0) w.k--;
  } else if ((w.ends("ed") || w.ends("ing")) && w.vowelInStem()) {
    w.k = w.j;
    if (w.ends("at")) w.setTo("ate");
    else if (w.ends("bl")) w.setTo("ble");
    else if (w.ends("iz")) w.setTo("ize");
    else if (w.doubleC(w.k)) {
      w.k--;
      const ch = w.b[w.k];
      if (ch === "l" || ch === "s" || ch === "z") w.k++;
    } else if (w.m() === 1 && w.cvc(w.k)) w.setTo("e");
  }
}

function step1c(w: Word): void {
  if (w.ends("y") && w.vowelInStem()) w.b[w.k] = "i";
}

const STEP2: Record<string, [string, string][]> = {
  a: [["ational", "ate"], ["tional", "tion"]],
  c: [["enci", "ence"], ["anci", "ance"]],
  e: [["izer", "ize"]],
  l: [["bli", "ble"], ["alli", "al"], ["entli", "ent"], ["eli", "e"], ["ousli", "ous"]],
  o: [["ization", "ize"], ["ation", "ate"], ["ator", "ate"]],
  s: [["alism", "al"], ["iveness", "ive"], ["fulness", "ful"], ["ousness", "ous"]],
  t: [["aliti", "al"], ["iviti", "ive"], ["biliti", "ble"]],
  g: [["logi", "log"]],
};

const STEP3: Record<string, [string, string][]> = {
  e: [["icate", "ic"], ["ative", ""], ["alize", "al"]],
  i: [["iciti", "ic"]],
  l: [["ical", "ic"], ["ful", ""]],
  s: [["ness", ""]],
};

const STEP4: Record<string, string[]> = {
  a: ["al"],
  c: ["ance", "ence"],
  e: ["er"],
  i: ["ic"],
  l: ["able", "ible"],
  n: ["ant", "ement", "ment", "ent"],
  o: ["ion", "ou"],
  s: ["ism"],
  t: ["ate", "iti"],
  u: ["ous"],
  v: ["ive"],
  z: ["ize"],
};

function replaceSuffix(w: Word, table: Record<string, [string, string][]>, at: number): void {
  const rules = table[w.b[at] ?? ""];
  if (!rules) return;
  for (const [suffix, replacement] of rules) {
    if (w.ends(suffix)) {
      w.r(replacement);
      return;
    }
  }
}

function step4(w: Word): void {
  const rules = STEP4[w.b[w.k - 1] ?? ""];
  if (!rules) return;
  let found = false;
  for (const suffix of rules) {
    if (w.ends(suffix)) {
      if (suffix === "ion" && !(w.j >= 0 && (w.b[w.j] === "s" || w.b[w.j] === "t"))) continue;
      found = true;
      break;
    }
  }
  if (found && w.m() > 1) w.k = w.j;
}

function step5(w: Word): void {
  w.j = w.k;
  if (w.b[w.k] === "e") {
    const a = w.m();
    if (a > 1 || (a === 1 && !w.cvc(w.k - 1))) w.k--;
  }
  if (w.b[w.k] === "l" && w.doubleC(w.k) && w.m() > 1) w.k--;
}

/**
 * Stems one lower-case word; words of one or two letters are returned unchanged.
 *
 * @example
 * ```ts
 * import { porterStem } from "./porter_stemmer.ts";
 * console.log(porterStem("dresses"), porterStem("running"), porterStem("relational")); // dress run relat
 * ```
 */
export function porterStem(word: string): string {
  if (word.length <= 2) return word;
  const w = new Word(word);
  step1ab(w);
  if (w.k > 0) {
    step1c(w);
    replaceSuffix(w, STEP2, w.k - 1);
    replaceSuffix(w, STEP3, w.k);
    step4(w);
    step5(w);
  }
  return w.toString();
}
