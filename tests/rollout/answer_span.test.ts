// Where a response's answer begins (policy_gradient_tokens: answer): with the
// tiny tokenizer's real merges, a scripted think-then-answer policy's samples
// mark exactly the tokens from the last <answer> to the end of each turn.
import assert from "node:assert/strict";
import { answerStart } from "../../lib/rollout/answer_span.ts";
import {
  decodeForEnv,
  IM_END,
  smallConfig,
  TextPolicy,
  tokenizer,
  trainScheduler,
} from "./_setup.ts";

const encode = (text: string) => [...tokenizer.encode(text, { addSpecialTokens: false })];

Deno.test("answerStart: the first token of the last <answer>, 0 without one", () => {
  const think = encode("<think>left ice, goal down</think>");
  const answer = encode("<answer>Up</answer>");
  const ids = [...think, ...answer, IM_END];
  assert.equal(answerStart(ids, decodeForEnv), think.length);
  assert.equal(
    decodeForEnv(ids.slice(answerStart(ids, decodeForEnv))),
    "<answer>Up</answer><|im_end|>",
  );
  // the last tag counts; a response with no tag is all answer
  const twice = [...encode("<answer>Down</answer> "), ...answer];
  assert.equal(decodeForEnv(twice.slice(answerStart(twice, decodeForEnv))), "<answer>Up</answer>");
  assert.equal(answerStart(encode("I go up"), decodeForEnv), 0);
  assert.equal(answerStart([], decodeForEnv), 0);
});

Deno.test("answerStart: a token straddling the tag's first character belongs to the answer", () => {
  const pieces = ["<think>x</think> <", "answer>", "Up", "</answer>"];
  const decode = (ids: readonly number[]) => ids.map((i) => pieces[i]).join("");
  assert.equal(answerStart([0, 1, 2, 3], decode), 0);
  const clean = ["<think>x</think>", " ", "<answer>", "Up"];
  assert.equal(answerStart([0, 1, 2, 3], (ids) => ids.map((i) => clean[i]).join("")), 2);
});

Deno.test("rollout: answerMask covers each turn's answer and nothing else", async () => {
  const config = await smallConfig();
  const policy = new TextPolicy(() => "<think>the goal is down</think><answer>Down</answer>");
  await using scheduler = trainScheduler(config, policy);
  const batch = await scheduler.getBatch(8, 0);
  for (const s of batch.samples) {
    assert.equal(s.answerMask.length, s.tokens.length);
    let answers = 0;
    for (let t = 0; t < s.tokens.length; t++) {
      if (s.answerMask[t]) assert.equal(s.responseMask[t], 1, `answer token ${t} not generated`);
      if (!s.answerMask[t] || s.answerMask[t - 1]) continue;
      // a run of answer tokens decodes to the answer and the end of turn; the generated
      // tokens right before it to the think
      answers++;
      let end = t;
      while (s.answerMask[end]) end++;
      assert.equal(decodeForEnv([...s.tokens.subarray(t, end)]), "<answer>Down</answer><|im_end|>");
      let begin = t;
      while (s.responseMask[begin - 1]) begin--;
      assert.equal(
        decodeForEnv([...s.tokens.subarray(begin, t)]),
        "<think>the goal is down</think>",
      );
    }
    assert.equal(answers, s.stepRewards.length);
    const generated = s.responseMask.reduce((a, b) => a + b, 0);
    const inAnswers = s.answerMask.reduce((a, b) => a + b, 0);
    assert.ok(inAnswers < generated, "the think is outside the answer");
  }
});
