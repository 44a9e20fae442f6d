// policy_gradient_tokens: answer keeps the advantage on the answer's tokens only.
import assert from "node:assert/strict";
import { answerOnlyAdvantages } from "../../lib/algo/answer_advantages.ts";

Deno.test("answerOnlyAdvantages: zero on generated tokens before the answer, unchanged elsewhere", () => {
  const adv = [new Float32Array([9, 0.5, 0.5, 7, -1, -1])];
  const out = answerOnlyAdvantages(
    [{ responseMask: [0, 1, 1, 0, 1, 1], answerMask: [0, 0, 1, 0, 0, 1] }],
    adv,
  );
  // prompt tokens (9, 7) are left alone: the loss masks them anyway
  assert.deepEqual(Array.from(out[0]!), [9, 0, 0.5, 7, 0, -1]);
  assert.deepEqual(Array.from(adv[0]!), [9, 0.5, 0.5, 7, -1, -1], "the input is not changed");
});

Deno.test("answerOnlyAdvantages: mismatched lengths are an error that says which sample", () => {
  assert.throws(
    () => answerOnlyAdvantages([{ responseMask: [1, 1], answerMask: [1] }], [new Float32Array(2)]),
    /sample 0 has 2 advantages but masks of 2 and 1 tokens/,
  );
  assert.throws(() => answerOnlyAdvantages([], [new Float32Array(1)]), /0 samples but 1/);
});
