// WebShop's search engine: the Porter stemmer against pairs from Porter's published
// word list, the analyzer, BM25 scores worked by hand, and ranking sanity.
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { analyze, Bm25Index } from "../../envs/webshop/mod.ts";
import { porterStem } from "../../envs/webshop/porter_stemmer.ts";

Deno.test("porterStem gives Porter's outputs", () => {
  // Word -> stem pairs from the examples of Porter (1980) and his reference output.
  const pairs: [string, string][] = [
    ["caresses", "caress"],
    ["ponies", "poni"],
    ["ties", "ti"],
    ["caress", "caress"],
    ["cats", "cat"],
    ["feed", "feed"],
    ["agreed", "agre"],
    ["plastered", "plaster"],
    ["bled", "bled"],
    ["motoring", "motor"],
    ["sing", "sing"],
    ["conflated", "conflat"],
    ["troubled", "troubl"],
    ["sized", "size"],
    ["hopping", "hop"],
    ["tanned", "tan"],
    ["falling", "fall"],
    ["hissing", "hiss"],
    ["fizzed", "fizz"],
    ["failing", "fail"],
    ["filing", "file"],
    ["happy", "happi"],
    ["sky", "sky"],
    ["relational", "relat"],
    ["conditional", "condit"],
    ["rational", "ration"],
    ["digitizer", "digit"],
    ["vietnamization", "vietnam"],
    ["predication", "predic"],
    ["operator", "oper"],
    ["feudalism", "feudal"],
    ["decisiveness", "decis"],
    ["hopefulness", "hope"],
    ["callousness", "callous"],
    ["formaliti", "formal"],
    ["sensitiviti", "sensit"],
    ["sensibiliti", "sensibl"],
    ["triplicate", "triplic"],
    ["formative", "form"],
    ["formalize", "formal"],
    ["electrical", "electr"],
    ["hopeful", "hope"],
    ["goodness", "good"],
    ["revival", "reviv"],
    ["allowance", "allow"],
    ["inference", "infer"],
    ["airliner", "airlin"],
    ["adjustable", "adjust"],
    ["defensible", "defens"],
    ["irritant", "irrit"],
    ["replacement", "replac"],
    ["adjustment", "adjust"],
    ["dependent", "depend"],
    ["adoption", "adopt"],
    ["communism", "commun"],
    ["activate", "activ"],
    ["effective", "effect"],
    ["bowdlerize", "bowdler"],
    ["probate", "probat"],
    ["rate", "rate"],
    ["cease", "ceas"],
    ["controll", "control"],
    ["roll", "roll"],
    ["generalizations", "gener"],
    ["oscillators", "oscil"],
    ["dresses", "dress"],
    ["is", "is"],
  ];
  for (const [word, stem] of pairs) equal(porterStem(word), stem, word);
});

Deno.test("analyze lower-cases, drops possessives and stop words, stems, keeps 6.5", () => {
  deepStrictEqual(analyze("The Women's Running Shoes, size 6.5 and MORE!"), [
    "women",
    "run",
    "shoe",
    "size",
    "6.5",
    "more",
  ]);
  deepStrictEqual(analyze(""), []);
  deepStrictEqual(analyze("of the and"), []);
});

Deno.test("BM25 scores equal Lucene's formula worked by hand (k1 0.9, b 0.4)", () => {
  const index = new Bm25Index([
    { id: "d1", text: "red shoes" },
    { id: "d2", text: "blue shoes" },
    { id: "d3", text: "red hat red" },
  ]);
  // N = 3, avgdl = 7/3. "red": df 2, idf = ln(1 + 1.5/2.5) = ln 1.6.
  // d3: tf 2, |d| 3: norm = 0.9 (0.6 + 0.4 * 3 / (7/3)) = 0.9 * (0.6 + 36/70);
  // d1: tf 1, |d| 2: norm = 0.9 (0.6 + 0.4 * 2 / (7/3)) = 0.9 * (0.6 + 24/70).
  const idf = Math.log(1.6);
  const n3 = 0.9 * (0.6 + 36 / 70);
  const n1 = 0.9 * (0.6 + 24 / 70);
  const hits = index.search("red");
  deepStrictEqual(hits.map((h) => h.id), ["d3", "d1"]);
  ok(Math.abs(hits[0]!.score - idf * 2 / (2 + n3)) < 1e-12);
  ok(Math.abs(hits[1]!.score - idf * 1 / (1 + n1)) < 1e-12);
  equal(index.idf("red"), idf);
  // A repeated query term counts twice.
  ok(Math.abs(index.search("red red")[0]!.score - 2 * idf * 2 / (2 + n3)) < 1e-12);
  deepStrictEqual(index.search("green"), []);
});

Deno.test("BM25 ranks the product holding every query term first", () => {
  const docs = [
    { id: "mug", text: "ceramic coffee mug with handle" },
    { id: "shoe", text: "lightweight running shoes for men with rubber sole" },
    { id: "sock", text: "running socks for men" },
    { id: "boot", text: "leather boots with rubber sole" },
  ];
  const index = new Bm25Index(docs);
  equal(index.search("men's running shoes rubber sole")[0]!.id, "shoe");
  equal(index.search("coffee mug")[0]!.id, "mug");
  equal(index.size, 4);
});

Deno.test("BM25's idf favours the rare term", () => {
  // "red" is in 9 of 10 documents, "widget" in one: a document with only "widget"
  // outranks one with only "red".
  const docs = Array.from({ length: 8 }, (_, i) => ({ id: `r${i}`, text: `red thing ${i}` }));
  docs.push({ id: "red-only", text: "red gadget" }, { id: "widget-only", text: "blue widget" });
  const index = new Bm25Index(docs);
  ok(index.idf("widget") > index.idf("red"));
  const ids = index.search("red widget").map((h) => h.id);
  equal(ids[0], "widget-only");
  equal(ids.length, 10);
  // Ties keep insertion order.
  deepStrictEqual(index.search("thing").map((h) => h.id).slice(0, 3), ["r0", "r1", "r2"]);
  equal(index.search("red", 3).length, 3);
});
