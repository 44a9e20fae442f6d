/**
 * Where a response's answer begins: the first token of its last `<answer>`
 * tag, so that `policy_gradient_tokens: answer` can give the advantage to the
 * answer alone and leave the reasoning before it (a `<think>`) to the KL loss.
 * A token that straddles the tag's first character belongs to the answer. A
 * response without the tag is all answer (its whole text is what the env
 * judged).
 *
 * @example
 * ```ts
 * import { answerStart } from "./answer_span.ts";
 * const pieces = ["<think>", "left ice", "</think>", "<answer>", "Up", "</answer>"];
 * const decode = (ids: readonly number[]) => ids.map((i) => pieces[i]).join("");
 * console.log(answerStart([0, 1, 2, 3, 4, 5], decode)); // 3
 * ```
 *
 * @module
 */

/** The tag an answer opens with (every built-in env's action format). */
export const ANSWER_TAG = "<answer>";

/**
 * Index into `ids` of the first token of the last `tag` in the decoded
 * response; 0 when the response has no such tag. Binary search over prefix
 * decodes (a prefix's text only grows with its length).
 */
export function answerStart(
  ids: readonly number[],
  decode: (ids: readonly number[]) => string,
  tag = ANSWER_TAG,
): number {
  const at = decode(ids).lastIndexOf(tag);
  if (at <= 0) return 0;
  // the longest prefix whose text ends at or before the tag's first character
  let lo = 0, hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (decode(ids.slice(0, mid)).length <= at) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
