/**
 * Countdown puzzles: generating one with a known solution, and solving one by
 * exhaustive search (combine any two numbers with + - * /, repeat until one is left).
 *
 * @module
 */
import type { Rng } from "../random.ts";
import { applyOp, equalsInteger, type Fraction, fraction } from "./fraction.ts";

/** A Countdown puzzle: reach `target` using each of `numbers` exactly once. */
export interface CountdownPuzzle {
  numbers: number[];
  target: number;
}

interface Item {
  value: Fraction;
  text: string;
}

const OPS = ["+", "-", "*", "/"] as const;

/**
 * An expression that uses each number exactly once and equals `target`, or
 * undefined when there is none. Exhaustive: it tries every pair, operator and
 * order, skipping repeated sub-problems.
 *
 * @example
 * ```ts
 * import { solveCountdown } from "./solver.ts";
 * console.log(solveCountdown({ numbers: [2, 3, 4], target: 20 })); // e.g. "(2 + 3) * 4"
 * console.log(solveCountdown({ numbers: [1, 1], target: 5 })); // undefined
 * ```
 */
export function solveCountdown(puzzle: CountdownPuzzle): string | undefined {
  const items = puzzle.numbers.map((n) => ({ value: fraction(BigInt(n)), text: String(n) }));
  const failed = new Set<string>();
  const search = (list: Item[]): string | undefined => {
    if (list.length === 1) {
      return equalsInteger(list[0]!.value, puzzle.target) ? list[0]!.text : undefined;
    }
    const key = list.map((x) => `${x.value.num}/${x.value.den}`).sort().join(",");
    if (failed.has(key)) return undefined;
    for (let i = 0; i < list.length; i++) {
      for (let j = 0; j < list.length; j++) {
        if (i === j) continue;
        const a = list[i]!, b = list[j]!;
        const rest = list.filter((_, k) => k !== i && k !== j);
        for (const op of OPS) {
          // + and * are symmetric: one order is enough.
          if ((op === "+" || op === "*") && j < i) continue;
          if (op === "/" && b.value.num === 0n) continue;
          const value = applyOp(op, a.value, b.value);
          const found = search([...rest, { value, text: `(${a.text} ${op} ${b.text})` }]);
          if (found !== undefined) return found;
        }
      }
    }
    failed.add(key);
    return undefined;
  };
  const found = search(items);
  return found === undefined ? undefined : stripOuterParens(found);
}

/** Options of {@linkcode generateCountdown}. */
export interface CountdownGenerateOptions {
  numNumbers: number;
  minNumber: number;
  maxNumber: number;
  minTarget: number;
  maxTarget: number;
}

/**
 * A puzzle with at least one solution: random numbers, combined in a random
 * order with random operators; kept when the result is an integer target in
 * range, else redrawn. Returns the puzzle and the expression that made it.
 *
 * @example
 * ```ts
 * import { generateCountdown } from "./solver.ts";
 * import { Rng } from "../random.ts";
 * const { puzzle, witness } = generateCountdown(
 *   { numNumbers: 4, minNumber: 1, maxNumber: 99, minTarget: 1, maxTarget: 100 },
 *   new Rng(0),
 * );
 * console.log(puzzle.numbers.length, witness.length > 0); // 4 true
 * ```
 */
export function generateCountdown(
  options: CountdownGenerateOptions,
  rng: Rng,
): { puzzle: CountdownPuzzle; witness: string } {
  const { numNumbers, minNumber, maxNumber, minTarget, maxTarget } = options;
  for (let attempt = 0; attempt < 100_000; attempt++) {
    const numbers = Array.from(
      { length: numNumbers },
      () => minNumber + rng.int(maxNumber - minNumber + 1),
    );
    let list: Item[] = numbers.map((n) => ({ value: fraction(BigInt(n)), text: String(n) }));
    let ok = true;
    while (list.length > 1) {
      const i = rng.int(list.length);
      let j = rng.int(list.length - 1);
      if (j >= i) j++;
      const a = list[i]!, b = list[j]!;
      const op = rng.pick(OPS);
      if (op === "/" && b.value.num === 0n) {
        ok = false;
        break;
      }
      const item = { value: applyOp(op, a.value, b.value), text: `(${a.text} ${op} ${b.text})` };
      list = [...list.filter((_, k) => k !== i && k !== j), item];
    }
    const result = list[0]!.value;
    if (!ok || result.den !== 1n) continue;
    const target = Number(result.num);
    if (target < minTarget || target > maxTarget) continue;
    return { puzzle: { numbers, target }, witness: stripOuterParens(list[0]!.text) };
  }
  throw new RangeError(
    `No Countdown puzzle with ${numNumbers} numbers in [${minNumber}, ${maxNumber}] reaches a ` +
      `target in [${minTarget}, ${maxTarget}]: expected a wider target range`,
  );
}

function stripOuterParens(text: string): string {
  if (!text.startsWith("(") || !text.endsWith(")")) return text;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")") depth--;
    if (depth === 0 && i < text.length - 1) return text; // the first parenthesis closes early
  }
  return text.slice(1, -1);
}
