/**
 * Countdown: reach a target number with + - * / over given numbers.
 *
 * @module
 */
import { ActionParser } from "../action_parser.ts";
import { createFrame, type Rgb } from "../frames/canvas.ts";
import { drawText, textWidth } from "../frames/pixel_font.ts";
import { Rng } from "../random.ts";
import type { Env, ResetResult, RgbFrame, StepMetrics, StepResult } from "../types.ts";
import { CountdownConfig } from "./config.ts";
import { parseExpression, usesExactly } from "./expression.ts";
import { formatFraction } from "./fraction.ts";
import { type CountdownPuzzle, generateCountdown, solveCountdown } from "./solver.ts";

interface Answer {
  expression: string;
  value: string;
  correct: boolean;
}

/**
 * Countdown (TinyZero's task, a RAGEN environment): the observation gives
 * numbers and a target; the answer is an expression of integer literals,
 * `+ - * /` and parentheses that must use each number exactly once and equal
 * the target (exact rational arithmetic). The first well-formed expression ends
 * the episode with reward `correct_score` if right, `format_score` otherwise
 * (also after a division by zero). Anything else is an invalid action: state
 * unchanged, reward `format_penalty`, the episode goes on until `max_steps`.
 * Puzzles are drawn from the reset seed and always have a solution.
 *
 * @example
 * ```ts
 * import { CountdownEnv } from "./env.ts";
 * import { CountdownConfig } from "./config.ts";
 * const env = new CountdownEnv(CountdownConfig.parse({}));
 * console.log(env.reset(0).observation); // "Numbers: ...\nTarget: ..."
 * const r = env.step(env.oracleAction()!);
 * console.log(r.reward, r.terminated); // 1 true
 * ```
 */
export class CountdownEnv implements Env {
  /** The validated config. */
  readonly config: CountdownConfig;
  readonly instruction: string;
  readonly actionDescription: string;
  readonly #parser: ActionParser;
  #puzzle: CountdownPuzzle | undefined;
  #answer: Answer | undefined;
  #steps = 0;
  #terminated = false;
  #truncated = false;

  /** An environment for a validated config (see {@linkcode CountdownConfig}). */
  constructor(config: CountdownConfig) {
    this.config = config;
    this.#parser = new ActionParser({
      actionPattern: config.action_pattern,
      specialTokens: config.special_token_list,
    });
    const example = this.#parser.format("(25 - 5) * 2 + 8") ?? "(25 - 5) * 2 + 8";
    this.instruction = config.env_instruction ??
      "You are playing Countdown: combine the given numbers, each exactly once, with " +
        "+ - * / and parentheses so that the expression equals the target. Answer with the " +
        `expression only, e.g. ${example}.`;
    this.actionDescription = `an arithmetic expression over the numbers, e.g. ${example}`;
  }

  /** The current puzzle; before the first reset, the puzzle of `config.seed` (default 0). */
  get puzzle(): CountdownPuzzle {
    if (!this.#puzzle) this.#puzzle = this.#generate(this.config.seed ?? 0);
    return this.#puzzle;
  }

  /** Draws a puzzle from `seed` and starts an episode. */
  reset(seed: number): ResetResult {
    if (!Number.isSafeInteger(seed)) {
      throw new RangeError(`Reset seed ${seed} is not valid: expected an integer`);
    }
    this.#puzzle = this.#generate(seed);
    this.#answer = undefined;
    this.#steps = 0;
    this.#terminated = false;
    this.#truncated = false;
    return { observation: this.render("text"), info: { env_instruction: this.instruction } };
  }

  /** Parses and judges an answer (see the class description for every rule). */
  step(action: string): StepResult {
    const parsed = this.#parser.parse(action);
    const expression = parsed.matched ? parseExpression(parsed.action) : undefined;
    const actionInfo = { action_content: parsed.action, think_content: parsed.think };
    if (this.#terminated || this.#truncated) {
      return this.#result(0, {
        action_is_valid: expression !== undefined,
        action_is_effective: false,
        success: this.#answer?.correct ?? false,
        format_penalty: 0,
      }, actionInfo);
    }
    this.#steps++;
    if (!expression) {
      this.#truncated = this.#steps >= this.config.max_steps;
      return this.#result(this.config.format_penalty, {
        action_is_valid: false,
        action_is_effective: false,
        success: false,
        format_penalty: this.config.format_penalty,
      }, actionInfo);
    }
    const { numbers, target } = this.puzzle;
    const correct = expression.value !== undefined && usesExactly(expression.numbers, numbers) &&
      expression.value.den === 1n && expression.value.num === BigInt(target);
    this.#answer = {
      expression: parsed.action,
      value: expression.value ? formatFraction(expression.value) : "undefined",
      correct,
    };
    this.#terminated = true;
    return this.#result(correct ? this.config.correct_score : this.config.format_score, {
      action_is_valid: true,
      action_is_effective: true,
      success: correct,
      format_penalty: 0,
    }, actionInfo);
  }

  /** The puzzle (and the answer, once given) as text, or as an image. */
  render(mode: "text"): string;
  render(mode: "rgb"): RgbFrame;
  render(mode: "text" | "rgb"): string | RgbFrame {
    const { numbers, target } = this.puzzle;
    if (mode === "rgb") return this.#renderRgb();
    const lines = [`Numbers: ${numbers.join(", ")}`, `Target: ${target}`];
    if (this.#answer) {
      lines.push(
        `Answer: ${this.#answer.expression} = ${this.#answer.value} ` +
          `(${this.#answer.correct ? "correct" : "wrong"})`,
      );
    }
    return lines.join("\n");
  }

  /** A random well-formed expression over the numbers (each used once). */
  sampleAction(random: () => number): string {
    const ops = ["+", "-", "*", "/"];
    const pick = (n: number) => Math.min(n - 1, Math.floor(random() * n));
    const list = this.puzzle.numbers.map(String);
    while (list.length > 1) {
      const a = list.splice(pick(list.length), 1)[0]!;
      const b = list.splice(pick(list.length), 1)[0]!;
      list.push(`(${a} ${ops[pick(4)]} ${b})`);
    }
    return this.#parser.format(list[0]!) ?? list[0]!;
  }

  /** A correct expression found by exhaustive search; undefined once answered. */
  oracleAction(): string | undefined {
    if (this.#terminated) return undefined;
    const solution = solveCountdown(this.puzzle);
    return solution === undefined ? undefined : this.#parser.format(solution) ?? solution;
  }

  /** Nothing to release. */
  close(): void {}

  #generate(seed: number): CountdownPuzzle {
    const c = this.config;
    return generateCountdown({
      numNumbers: c.num_numbers,
      minNumber: c.min_number,
      maxNumber: c.max_number,
      minTarget: c.min_target,
      maxTarget: c.max_target,
    }, new Rng(seed)).puzzle;
  }

  #renderRgb(): RgbFrame {
    const scale = 4;
    const { numbers, target } = this.puzzle;
    const lines: Array<[string, Rgb]> = [
      [numbers.join(" "), [240, 240, 240]],
      [`= ${target}`, [250, 204, 40]],
    ];
    if (this.#answer) {
      const shown = this.#answer.expression.length > 40
        ? this.#answer.expression.slice(0, 37) + "..."
        : this.#answer.expression;
      lines.push([shown, this.#answer.correct ? [88, 200, 92] : [230, 80, 70]]);
    } else {
      lines.push(["?", [150, 150, 150]]);
    }
    const width = Math.max(160, ...lines.map(([t]) => textWidth(t, scale) + 2 * scale * 2));
    const frame = createFrame(width, lines.length * 8 * scale + 2 * scale, [32, 36, 48]);
    lines.forEach(([text, color], i) =>
      drawText(frame, text, 2 * scale, (1 + i * 8) * scale, scale, color)
    );
    return frame;
  }

  #result(reward: number, metrics: StepMetrics, extra: Record<string, unknown>): StepResult {
    return {
      observation: this.render("text"),
      reward,
      terminated: this.#terminated,
      truncated: this.#truncated,
      info: { metrics, ...extra },
    };
  }
}
