/**
 * Turning a model's response into an action, as ROLL does: strip chat special
 * tokens, find the action with a regular expression (`<answer>(.*?)</answer>`
 * by default), and look its name up case-insensitively. Nothing here throws on
 * a response: an unparsable one is reported as not matched.
 *
 * @module
 */
import { EnvConfigError } from "./errors.ts";

/** ROLL's default action pattern: the action sits inside `<answer>...</answer>`. */
export const DEFAULT_ACTION_PATTERN = "<answer>(.*?)</answer>";

/** ROLL's think variant: reasoning in `<think>...</think>`, then the answer. */
export const THINK_ACTION_PATTERN = "<think>(.*?)</think>\\s*<answer>(.*?)</answer>";

/** Chat special tokens removed before parsing (ROLL's two, plus Qwen's end of text). */
export const DEFAULT_SPECIAL_TOKENS: readonly string[] = [
  "<|im_start|>",
  "<|im_end|>",
  "<|endoftext|>",
];

/** What {@linkcode ActionParser.parse} found in a response. */
export interface ParsedResponse {
  /** The pattern matched. */
  matched: boolean;
  /** The action text (the answer group), trimmed; "" when nothing matched. */
  action: string;
  /** The reasoning (the think group of a two-group pattern), trimmed; "" otherwise. */
  think: string;
}

/** Options of an {@linkcode ActionParser}. */
export interface ActionParserOptions {
  /**
   * A regular expression with one group (the action) or two (reasoning, then the
   * action), matched with `.` spanning newlines (Python's `re.DOTALL`). Python's
   * `(?P<name>...)` spelling is accepted. Default {@linkcode DEFAULT_ACTION_PATTERN}.
   */
  actionPattern?: string;
  /** Strings removed from the response first; default {@linkcode DEFAULT_SPECIAL_TOKENS}. */
  specialTokens?: readonly string[];
}

type Kind = "answer" | "think" | "regex";

const NO_MATCH: ParsedResponse = Object.freeze({ matched: false, action: "", think: "" });

/**
 * Parses responses with one action pattern. The two patterns ROLL ships
 * (answer, and think + answer) are matched by a linear scan that returns what
 * the regular expression would, so a huge or adversarial response costs
 * linear time; any other pattern runs as a regular expression.
 *
 * @example
 * ```ts
 * import { ActionParser, THINK_ACTION_PATTERN } from "./action_parser.ts";
 * const p = new ActionParser();
 * console.log(p.parse("<answer> left </answer><|im_end|>").action); // "left"
 * console.log(p.lookup("<answer>LEFT</answer>", ["Left", "Down", "Right", "Up"])); // 0
 * const t = new ActionParser({ actionPattern: THINK_ACTION_PATTERN });
 * console.log(t.parse("<think>go</think>\n<answer>Up</answer>").think); // "go"
 * ```
 */
export class ActionParser {
  /** The action pattern's source text. */
  readonly pattern: string;
  /** The special tokens removed before matching. */
  readonly specialTokens: readonly string[];
  readonly #kind: Kind;
  readonly #regex: RegExp | undefined;
  readonly #groups: number;

  /** A parser for one pattern; a pattern that does not compile is an {@linkcode EnvConfigError}. */
  constructor(options: ActionParserOptions = {}) {
    this.pattern = options.actionPattern ?? DEFAULT_ACTION_PATTERN;
    this.specialTokens = options.specialTokens ?? DEFAULT_SPECIAL_TOKENS;
    this.#kind = this.pattern === DEFAULT_ACTION_PATTERN
      ? "answer"
      : this.pattern === THINK_ACTION_PATTERN
      ? "think"
      : "regex";
    const source = fromPythonRegex(this.pattern);
    try {
      this.#regex = new RegExp(source, "s");
    } catch (e) {
      throw new EnvConfigError(
        `action_pattern ${JSON.stringify(this.pattern)} is not a valid regular expression ` +
          `(${e instanceof Error ? e.message : String(e)}): expected e.g. ${
            JSON.stringify(DEFAULT_ACTION_PATTERN)
          }`,
      );
    }
    this.#groups = new RegExp(`${source}|`, "s").exec("")!.length - 1;
    if (this.#groups < 1 || this.#groups > 2) {
      throw new EnvConfigError(
        `action_pattern ${JSON.stringify(this.pattern)} has ${this.#groups} capturing groups: ` +
          "expected 1 (the action) or 2 (the reasoning, then the action)",
      );
    }
  }

  /** Strips the special tokens (trimming after each, as ROLL does) and matches the pattern. */
  parse(text: string): ParsedResponse {
    if (typeof text !== "string") return NO_MATCH;
    let t = text;
    for (const token of this.specialTokens) {
      if (token !== "") t = t.replaceAll(token, "").trim();
    }
    if (this.#kind === "answer") return scanAnswer(t);
    if (this.#kind === "think") return scanThink(t);
    const m = this.#regex!.exec(t);
    if (!m) return NO_MATCH;
    return this.#groups === 1
      ? { matched: true, action: (m[1] ?? "").trim(), think: "" }
      : { matched: true, action: (m[2] ?? "").trim(), think: (m[1] ?? "").trim() };
  }

  /**
   * The index in `names` of the response's action, compared case-insensitively,
   * or -1 when the response does not match or names no action in the list.
   */
  lookup(text: string, names: readonly string[]): number {
    const { matched, action } = this.parse(text);
    if (!matched) return -1;
    const wanted = action.toLowerCase();
    return names.findIndex((n) => n.toLowerCase() === wanted);
  }

  /**
   * A response that this parser reads back as `action` (e.g. `<answer>Left</answer>`),
   * for scripted and random policies; undefined when no simple response fits a
   * custom pattern.
   */
  format(action: string, think = "I choose the next move."): string | undefined {
    if (this.#kind === "answer") return `<answer>${action}</answer>`;
    if (this.#kind === "think") return `<think>${think}</think>\n<answer>${action}</answer>`;
    const candidates = [
      `<answer>${action}</answer>`,
      `<think>${think}</think>\n<answer>${action}</answer>`,
      `<think>${think}</think><answer>${action}</answer>`,
      `<action>${action}</action>`,
      `[${action}]`,
      action,
    ];
    return candidates.find((c) => {
      const r = this.parse(c);
      return r.matched && r.action === action.trim();
    });
  }
}

const OPEN_ANSWER = "<answer>";
const CLOSE_ANSWER = "</answer>";
const OPEN_THINK = "<think>";
const CLOSE_THINK = "</think>";

/**
 * `<answer>(.*?)</answer>` with DOTALL: the leftmost match starts at the first
 * `<answer>` and ends at the first `</answer>` after it (if none follows the
 * first opening tag, none follows a later one either).
 */
function scanAnswer(t: string): ParsedResponse {
  const open = t.indexOf(OPEN_ANSWER);
  if (open < 0) return NO_MATCH;
  const close = t.indexOf(CLOSE_ANSWER, open + OPEN_ANSWER.length);
  if (close < 0) return NO_MATCH;
  return { matched: true, action: t.slice(open + OPEN_ANSWER.length, close).trim(), think: "" };
}

/**
 * `<think>(.*?)</think>\s*<answer>(.*?)</answer>` with DOTALL. The leftmost match
 * starts at the first `<think>` if any match exists (a later `<think>` sees only a
 * subset of the same closing tags); the lazy group ends at the first `</think>`
 * that is followed by whitespace, `<answer>` and, later, `</answer>`.
 */
function scanThink(t: string): ParsedResponse {
  const open = t.indexOf(OPEN_THINK);
  if (open < 0) return NO_MATCH;
  const lastClose = t.lastIndexOf(CLOSE_ANSWER);
  if (lastClose < 0) return NO_MATCH;
  let from = open + OPEN_THINK.length;
  for (;;) {
    const end = t.indexOf(CLOSE_THINK, from);
    if (end < 0) return NO_MATCH;
    let i = end + CLOSE_THINK.length;
    while (i < t.length && /\s/u.test(t[i]!)) i++;
    if (t.startsWith(OPEN_ANSWER, i)) {
      const a = i + OPEN_ANSWER.length;
      const close = t.indexOf(CLOSE_ANSWER, a);
      if (close < 0) return NO_MATCH; // no later opening tag can find a closing one either
      return {
        matched: true,
        think: t.slice(open + OPEN_THINK.length, end).trim(),
        action: t.slice(a, close).trim(),
      };
    }
    from = end + 1;
  }
}

/** Python-only regex spellings ROLL configs may use, rewritten for JavaScript. */
function fromPythonRegex(pattern: string): string {
  return pattern
    .replaceAll("(?P<", "(?<")
    .replace(/\(\?P=(\w+)\)/g, "\\k<$1>")
    .replaceAll("\\A", "^")
    .replaceAll("\\Z", "$");
}
