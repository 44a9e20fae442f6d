/**
 * `policy_gradient_tokens: answer`: only each response's answer carries the
 * advantage. The generated tokens before it (a `<think>`) get 0, so the policy
 * gradient trains the decision alone and the reasoning is shaped by the KL and
 * entropy terms only. Useful when the reasoning is a skill the base model
 * already has (describing the state) that a noisy episode reward would
 * otherwise push around at random. The KL loss still covers every token: it
 * holds the reasoning (and the answer's format) to the reference model.
 *
 * @example
 * ```ts
 * import { answerOnlyAdvantages } from "./answer_advantages.ts";
 * const [a] = answerOnlyAdvantages(
 *   [{ responseMask: [0, 1, 1, 1], answerMask: [0, 0, 1, 1] }],
 *   [new Float32Array([0, 0.5, 0.5, 0.5])],
 * );
 * console.log(Array.from(a!)); // [0, 0, 0.5, 0.5]
 * ```
 *
 * @module
 */

/** The masks {@linkcode answerOnlyAdvantages} reads (a rollout's TrajectorySample has both). */
export interface AnswerMasks {
  /** 1 on generated tokens. */
  readonly responseMask: ArrayLike<number>;
  /** 1 on generated tokens of the answer (from its last `<answer>` tag). */
  readonly answerMask: ArrayLike<number>;
}

/** New advantage arrays with the generated tokens outside the answer set to 0. */
export function answerOnlyAdvantages(
  samples: readonly AnswerMasks[],
  advantages: readonly Float32Array[],
): Float32Array[] {
  if (samples.length !== advantages.length) {
    throw new RangeError(
      `answerOnlyAdvantages: ${samples.length} samples but ${advantages.length} advantage arrays`,
    );
  }
  return samples.map((s, i) => {
    const a = advantages[i]!;
    if (s.responseMask.length !== a.length || s.answerMask.length !== a.length) {
      throw new RangeError(
        `answerOnlyAdvantages: sample ${i} has ${a.length} advantages but masks of ` +
          `${s.responseMask.length} and ${s.answerMask.length} tokens`,
      );
    }
    return a.map((v, t) => (s.responseMask[t] && !s.answerMask[t] ? 0 : v));
  });
}
