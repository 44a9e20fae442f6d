/**
 * Action parsing as ROLL's `default_parser_action_func` does it: special tokens
 * stripped, the pattern matched with DOTALL, one or two groups, case-insensitive
 * lookup. The linear-time scanners for ROLL's two patterns are checked against
 * JavaScript's own regular-expression engine on random and adversarial text.
 */
import { deepStrictEqual, equal, throws } from "node:assert/strict";
import {
  ActionParser,
  DEFAULT_ACTION_PATTERN,
  THINK_ACTION_PATTERN,
} from "../../envs/action_parser.ts";
import { EnvConfigError } from "../../envs/errors.ts";
import { Rng } from "../../envs/random.ts";

const NAMES = ["Left", "Down", "Right", "Up"];

Deno.test("the answer pattern extracts and trims the first answer", () => {
  const p = new ActionParser();
  deepStrictEqual(p.parse("I go <answer> Right </answer>"), {
    matched: true,
    action: "Right",
    think: "",
  });
  equal(p.parse("<answer>Up</answer> then <answer>Down</answer>").action, "Up");
  equal(p.parse("<answer>multi\nline</answer>").action, "multi\nline"); // DOTALL
  equal(p.parse("no tags").matched, false);
  equal(p.parse("<answer>unclosed").matched, false);
  equal(p.parse("</answer>Left<answer>").matched, false);
  equal(p.parse("<answer></answer>").action, "");
});

Deno.test("special tokens are stripped before matching; the defaults include <|im_end|>", () => {
  const p = new ActionParser();
  equal(p.parse("<answer>Left<|im_end|></answer>").action, "Left");
  equal(p.parse("<|im_start|>assistant\n<answer>Up</answer><|im_end|><|endoftext|>").action, "Up");
  const custom = new ActionParser({ specialTokens: ["<eos>"] });
  equal(custom.parse("<answer>Left<|im_end|></answer>").action, "Left<|im_end|>");
  equal(custom.parse("<answer>Left<eos></answer>").action, "Left");
});

Deno.test("lookup is case-insensitive and -1 for unknown or unparsable actions", () => {
  const p = new ActionParser();
  equal(p.lookup("<answer>left</answer>", NAMES), 0);
  equal(p.lookup("<answer>DOWN</answer>", NAMES), 1);
  equal(p.lookup("<answer>  rIgHt\n</answer>", NAMES), 2);
  equal(p.lookup("<answer>North</answer>", NAMES), -1);
  equal(p.lookup("<answer>Left Up</answer>", NAMES), -1);
  equal(p.lookup("Left", NAMES), -1);
});

Deno.test("the think pattern returns the reasoning and the action", () => {
  const p = new ActionParser({ actionPattern: THINK_ACTION_PATTERN });
  deepStrictEqual(p.parse("<think>the goal is right</think>\n  <answer>Right</answer>"), {
    matched: true,
    action: "Right",
    think: "the goal is right",
  });
  // The reasoning may contain a closing tag that is not followed by an answer.
  deepStrictEqual(p.parse("<think>a</think> b</think><answer>Up</answer>"), {
    matched: true,
    action: "Up",
    think: "a</think> b",
  });
  equal(p.parse("<answer>Up</answer>").matched, false);
  equal(p.parse("<think>x</think> text <answer>Up</answer>").matched, false);
});

Deno.test("custom patterns: one group, two groups, Python named groups", () => {
  equal(new ActionParser({ actionPattern: "Action: (\\w+)" }).parse("Action: Up!").action, "Up");
  const two = new ActionParser({ actionPattern: "\\[(.*?)\\]\\s*->\\s*(\\w+)" });
  deepStrictEqual(two.parse("[plan] -> Down"), { matched: true, action: "Down", think: "plan" });
  const named = new ActionParser({ actionPattern: "<a>(?P<act>.*?)</a>" });
  equal(named.parse("<a>Left</a>").action, "Left");
});

Deno.test("a bad action_pattern is an EnvConfigError naming it", () => {
  throws(() => new ActionParser({ actionPattern: "<answer>(.*</answer>" }), (e: unknown) => {
    equal(e instanceof EnvConfigError, true);
    equal(String((e as Error).message).includes("<answer>(.*</answer>"), true);
    return true;
  });
  throws(() => new ActionParser({ actionPattern: "<answer>.*</answer>" }), /0 capturing groups/);
  throws(() => new ActionParser({ actionPattern: "(a)(b)(c)" }), /3 capturing groups/);
});

Deno.test("format builds a response the parser reads back", () => {
  for (const pattern of [DEFAULT_ACTION_PATTERN, THINK_ACTION_PATTERN, "\\[(\\w+)\\]"]) {
    const p = new ActionParser({ actionPattern: pattern });
    const text = p.format("Left");
    equal(typeof text, "string", pattern);
    equal(p.lookup(text!, NAMES), 0, `${pattern}: ${text}`);
  }
  // No simple response fits this pattern: the caller is told so.
  equal(new ActionParser({ actionPattern: "Action: (\\w+)" }).format("Left"), undefined);
});

/** Random text built from tag fragments, whitespace and unicode, to stress the scanners. */
function randomText(rng: Rng, length: number): string {
  const pieces = [
    "<answer>",
    "</answer>",
    "<think>",
    "</think>",
    "<answer",
    "answer>",
    " ",
    "\n",
    "\t",
    "Left",
    "x",
    "<",
    ">",
    "/",
    "é",
    "😀",
    "\u00a0",
    "<|im_end|>",
  ];
  let s = "";
  for (let i = 0; i < length; i++) s += rng.pick(pieces);
  return s;
}

Deno.test("the linear scanners agree with the regular expression engine (20,000 random texts)", () => {
  const rng = new Rng(2024);
  for (const pattern of [DEFAULT_ACTION_PATTERN, THINK_ACTION_PATTERN]) {
    const fast = new ActionParser({ actionPattern: pattern, specialTokens: [] });
    const regex = new RegExp(pattern, "s");
    for (let i = 0; i < 10_000; i++) {
      const text = randomText(rng, 1 + rng.int(24));
      const m = regex.exec(text);
      const expected = !m
        ? { matched: false, action: "", think: "" }
        : m.length === 2
        ? { matched: true, action: m[1]!.trim(), think: "" }
        : { matched: true, action: m[2]!.trim(), think: m[1]!.trim() };
      deepStrictEqual(fast.parse(text), expected, `${pattern} on ${JSON.stringify(text)}`);
    }
  }
});

Deno.test("huge adversarial responses parse in linear time and never throw", () => {
  const p = new ActionParser();
  const t = new ActionParser({ actionPattern: THINK_ACTION_PATTERN });
  const huge = [
    "<answer>".repeat(200_000),
    "<think>" + "</think>".repeat(100_000) + "<answer>",
    "<think>".repeat(100_000) + "</think> <answer>" + "x".repeat(500_000),
    "a".repeat(2_000_000),
  ];
  for (const text of huge) {
    equal(p.parse(text).matched, false);
    equal(t.parse(text).matched, false);
  }
  equal(
    p.parse("<answer>".repeat(100_000) + "Up</answer>").action,
    "<answer>".repeat(99_999) + "Up",
  );
});
