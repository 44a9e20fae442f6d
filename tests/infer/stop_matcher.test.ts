// The incremental stop-string matcher against a byte-level decoder (each
// token one UTF-8 byte, as byte-level BPE can split a character): a match is
// found once its characters are complete, the matcher's text equals the full
// decode, and tokensThrough names the token that completed the match.
import assert from "node:assert/strict";
import { StopStringMatcher, tokensThrough } from "../../lib/infer/_stop.ts";

const bytes = (s: string) => Array.from(new TextEncoder().encode(s));
const decode = (ids: number[]) => new TextDecoder().decode(new Uint8Array(ids));

/** Feeds `ids` one at a time; returns the 1-based count at the first match, and the match. */
function feed(stops: string[], ids: number[]) {
  const m = new StopStringMatcher(decode, stops);
  for (let n = 1; n <= ids.length; n++) {
    const hit = m.update(ids.slice(0, n));
    if (hit !== null) return { n, hit, text: m.text };
  }
  return { n: -1, hit: null, text: m.text };
}

Deno.test("stop matcher: matches across tokens, waits for split characters, finds the earliest stop", () => {
  const ids = bytes("plan: é then <answer>Left</answer> tail");
  // a stop string of two-byte characters completes at its last byte
  const e = feed(["é"], ids);
  assert.equal(e.n, bytes("plan: é").length);
  assert.equal(e.hit?.index, "plan: ".length);
  // text held back while a character is incomplete: "é" is released whole
  const m = new StopStringMatcher(decode, ["zzz"]);
  const upto = bytes("plan: ").length;
  for (let n = 1; n <= upto; n++) m.update(ids.slice(0, n));
  assert.equal(m.text, "plan: ");
  m.update(ids.slice(0, upto + 1)); // the first byte of é
  assert.equal(m.text, "plan: ");
  m.update(ids.slice(0, upto + 2));
  assert.equal(m.text, "plan: é");
  // the earliest of two stop strings
  const two = feed(["</answer>", "<answer>"], ids);
  assert.equal(two.hit?.stop, "<answer>");
  // no match: the text is the whole decode
  const none = feed(["zzz"], ids);
  assert.equal(none.n, -1);
  assert.equal(none.text, "plan: é then <answer>Left</answer> tail");
});

Deno.test("stop matcher: tokensThrough finds the token that completed a match released late", () => {
  // "ab" then the first byte of "é": the text "ab" is complete after 2 tokens,
  // but the matcher sees it only when "é" completes (4 tokens)
  const ids = bytes("abé!");
  const m = new StopStringMatcher(decode, ["b"]);
  assert.equal(m.update(ids.slice(0, 1)), null);
  const hit = m.update(ids.slice(0, 2));
  assert.deepEqual(hit, { stop: "b", index: 1 });
  assert.equal(tokensThrough(decode, ids.slice(0, 2), m.text, 2), 2);

  const late = new StopStringMatcher(decode, ["bé"]);
  let found = null;
  let n = 0;
  while (found === null) found = late.update(ids.slice(0, ++n));
  assert.equal(n, 4);
  assert.equal(tokensThrough(decode, ids.slice(0, n), late.text, found.index + 2), 4);
  // a match completed before later tokens arrived (e.g. held back by a split character)
  assert.equal(tokensThrough(decode, bytes("xab\u00e9"), "xab\u00e9", 3), 3);
});
