/**
 * Countdown: the expression grammar and exact arithmetic (checked against
 * hand-computed values), TinyZero's scoring rules, the solver (every generated
 * puzzle solvable, impossible ones reported), and determinism by seed.
 */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import {
  createCountdownEnv,
  formatFraction,
  generateCountdown,
  parseExpression,
  solveCountdown,
  usesExactly,
} from "../../envs/countdown/mod.ts";
import { Rng } from "../../envs/random.ts";

const value = (text: string) => {
  const e = parseExpression(text);
  return e === undefined ? "not an expression" : e.value ? formatFraction(e.value) : "undefined";
};

Deno.test("expressions: precedence, parentheses, exact division", () => {
  equal(value("2 + 3 * 4"), "14");
  equal(value("(2 + 3) * 4"), "20");
  equal(value("100 - 10 - 1"), "89"); // left-associative
  equal(value("64 / 4 / 2"), "8");
  equal(value("1 / 3 + 1 / 6"), "1/2");
  equal(value("7 / (3 - 3)"), "undefined"); // division by zero: still an expression
  equal(value("((((5))))"), "5");
  equal(value("3 - 10"), "-7");
  deepStrictEqual(parseExpression("(25 - 5) * 2 + 8")!.numbers, [25, 5, 2, 8]);
});

Deno.test("not expressions: unary signs, decimals, stray text, unbalanced parentheses", () => {
  for (
    const text of [
      "",
      "-3 + 5",
      "2.5 * 2",
      "2 ** 3",
      "2 3",
      "(1 + 2",
      "1 + 2)",
      "1 +",
      "x + 1",
      "1 = 1",
      "٣ + 1",
      "(".repeat(200) + "1" + ")".repeat(200),
      "1+".repeat(600) + "1",
    ]
  ) {
    equal(parseExpression(text), undefined, JSON.stringify(text.slice(0, 40)));
  }
});

Deno.test("usesExactly compares multisets", () => {
  equal(usesExactly([3, 3, 7], [7, 3, 3]), true);
  equal(usesExactly([3, 7], [7, 3, 3]), false);
  equal(usesExactly([3, 3, 7], [3, 7, 7]), false);
});

Deno.test("the solver finds a correct expression for 300 generated puzzles", () => {
  const options = { numNumbers: 4, minNumber: 1, maxNumber: 99, minTarget: 1, maxTarget: 100 };
  const rng = new Rng(3);
  for (let i = 0; i < 300; i++) {
    const { puzzle, witness } = generateCountdown(options, rng);
    // The witness itself is a valid answer...
    const w = parseExpression(witness)!;
    ok(usesExactly(w.numbers, puzzle.numbers));
    equal(formatFraction(w.value!), String(puzzle.target));
    // ...and the solver finds one independently.
    const found = solveCountdown(puzzle)!;
    const e = parseExpression(found)!;
    ok(usesExactly(e.numbers, puzzle.numbers), found);
    equal(formatFraction(e.value!), String(puzzle.target), found);
  }
});

Deno.test("the solver reports impossible puzzles", () => {
  equal(solveCountdown({ numbers: [1, 1], target: 5 }), undefined);
  equal(solveCountdown({ numbers: [2, 2, 2], target: 100 }), undefined);
  equal(typeof solveCountdown({ numbers: [1, 5, 5, 5], target: 24 }), "string"); // 5 * (5 - 1/5)
});

Deno.test("scoring: 1 for a correct answer, 0.1 for a wrong expression, both end the episode", () => {
  const env = createCountdownEnv({ format_penalty: -0.05 });
  env.reset(0);
  const r = env.step(env.oracleAction()!);
  deepStrictEqual([r.reward, r.terminated, r.info.metrics.success], [1, true, true]);
  ok(r.observation.includes("(correct)"));

  env.reset(0);
  const { numbers, target } = env.puzzle;
  const wrongNumbers = env.step(`<answer>${target}</answer>`); // the target itself, numbers unused
  deepStrictEqual([wrongNumbers.reward, wrongNumbers.terminated], [0.1, true]);
  equal(wrongNumbers.info.metrics.success, false);
  equal(wrongNumbers.info.metrics.action_is_valid, true);

  env.reset(0);
  const sum = numbers.reduce((a, b) => a + b, 0);
  const r2 = env.step(`<answer>${numbers.join(" + ")}</answer>`);
  equal(r2.reward, sum === target ? 1 : 0.1);

  env.reset(0);
  const divZero = env.step(`<answer>${numbers[0]} / (${numbers[1]} - ${numbers[1]})</answer>`);
  deepStrictEqual([divZero.reward, divZero.terminated], [0.1, true]);
});

Deno.test("invalid answers cost format_penalty and let the agent retry until max_steps", () => {
  const env = createCountdownEnv({ format_penalty: -0.05, max_steps: 3 });
  const start = env.reset(4).observation;
  for (const [i, text] of ["<answer>twelve</answer>", "no tags"].entries()) {
    const r = env.step(text);
    deepStrictEqual([r.reward, r.terminated, r.truncated, r.observation], [
      -0.05,
      false,
      false,
      start,
    ]);
    equal(r.info.metrics.action_is_valid, false, `${i}`);
  }
  const last = env.step("<answer>1 +</answer>");
  deepStrictEqual([last.terminated, last.truncated], [false, true]);
});

Deno.test("puzzles are reproducible by seed and respect the config ranges", () => {
  const env = createCountdownEnv({ num_numbers: 3, min_number: 2, max_number: 20, max_target: 50 });
  const twin = createCountdownEnv({
    num_numbers: 3,
    min_number: 2,
    max_number: 20,
    max_target: 50,
  });
  const seen = new Set<string>();
  for (let seed = 0; seed < 300; seed++) {
    equal(env.reset(seed).observation, twin.reset(seed).observation);
    const { numbers, target } = env.puzzle;
    equal(numbers.length, 3);
    ok(numbers.every((n) => n >= 2 && n <= 20));
    ok(target >= 1 && target <= 50);
    seen.add(`${numbers}|${target}`);
  }
  ok(seen.size > 280);
});

Deno.test("random sampled answers are well-formed expressions over the numbers", () => {
  const env = createCountdownEnv({});
  const rng = new Rng(5);
  for (let seed = 0; seed < 200; seed++) {
    env.reset(seed);
    const text = env.sampleAction(() => rng.float());
    const inner = /<answer>(.*)<\/answer>/.exec(text)![1]!;
    const e = parseExpression(inner)!;
    ok(usesExactly(e.numbers, env.puzzle.numbers), text);
    equal(env.step(text).info.metrics.action_is_valid, true);
  }
});

Deno.test("rgb frames draw the puzzle", () => {
  const env = createCountdownEnv({});
  env.reset(0);
  const before = env.render("rgb");
  env.step(env.oracleAction()!);
  const after = env.render("rgb");
  equal(before.data.length, before.width * before.height * 3);
  ok(before.data.some((v, i) => v !== after.data[i]) || before.width !== after.width);
});
