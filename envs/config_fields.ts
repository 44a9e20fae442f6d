/**
 * The `env_config` fields that several environments share (ROLL's names and
 * defaults), as zod schemas: step limit, format penalty, action pattern, special
 * tokens, instruction override, render mode, and code → symbol lookup tables.
 *
 * @module
 */
import { z } from "npm:zod@4.6.7";
import { DEFAULT_ACTION_PATTERN, DEFAULT_SPECIAL_TOKENS } from "./action_parser.ts";

/** The fields every built-in grid environment accepts, with ROLL's defaults. */
export const commonConfigShape = {
  /** Actions per episode; the step that reaches it returns `truncated` (ROLL's default 20). */
  max_steps: z.number().int().positive().default(20),
  /** Reward of an invalid or unparsable action (ROLL's configs: FrozenLake -0.01, Sokoban -0.15). */
  format_penalty: z.number().default(0),
  /** The action's regular expression: one group, or two (reasoning, action). */
  action_pattern: z.string().min(1).default(DEFAULT_ACTION_PATTERN),
  /** Chat special tokens removed from the response before parsing. */
  special_token_list: z.array(z.string()).default(() => [...DEFAULT_SPECIAL_TOKENS]),
  /** Replaces the task paragraph of the instruction (the symbols and actions follow it). */
  env_instruction: z.string().nullable().default(null),
  /** ROLL's render mode: observations are text here ("rgb_array" images are not supported). */
  render_mode: z.literal("text", {
    error: "render_mode must be 'text': agentrl's environments observe in text " +
      "(images come from render('rgb'), e.g. agentrl rollout --render)",
  }).default("text"),
  /** The seed of the state shown before the first reset (every reset takes its own seed). */
  seed: z.number().int().nullable().default(null),
};

/**
 * A table from integer codes to names, written as a YAML mapping (`{0: "W", 1: "."}`):
 * every code in `codes` must be present, no other, and the values must be non-empty
 * and distinct. The output lists the names in the order of `codes`.
 *
 * @example
 * ```ts
 * import { codeTable } from "./config_fields.ts";
 * console.log(codeTable("action_lookup", [1, 2]).parse({ 1: "Up", 2: "Down" })); // ["Up", "Down"]
 * ```
 */
export function codeTable(field: string, codes: readonly number[], caseInsensitive = false) {
  return z.record(z.string(), z.string().min(1)).transform((table, ctx) => {
    const keys = Object.keys(table);
    const wanted = codes.map(String);
    const extra = keys.filter((k) => !wanted.includes(k));
    const missing = wanted.filter((k) => !keys.includes(k));
    if (extra.length > 0 || missing.length > 0) {
      ctx.addIssue({
        code: "custom",
        message: `${field} must have exactly the keys ${wanted.join(", ")}` +
          (missing.length ? `; missing ${missing.join(", ")}` : "") +
          (extra.length ? `; unexpected ${extra.join(", ")}` : ""),
      });
      return z.NEVER;
    }
    const out = codes.map((c) => table[String(c)]!);
    const seen = new Set<string>();
    for (const v of out) {
      const k = caseInsensitive ? v.toLowerCase() : v;
      if (seen.has(k)) {
        ctx.addIssue({
          code: "custom",
          message: `${field} names '${v}' twice: expected distinct names`,
        });
        return z.NEVER;
      }
      seen.add(k);
    }
    return out;
  });
}

/** A symbol → meaning table for the instruction (ROLL's `grid_vocab`). */
export const gridVocab = z.record(z.string(), z.string()).nullable().default(null);

/** Formats ROLL's instruction tail: what each symbol means, and the actions. */
export function describeGrid(
  vocab: ReadonlyArray<readonly [string, string]>,
  actionNames: readonly string[],
): string {
  return "\nThe meaning of each symbol in the state is:\n" +
    vocab.map(([symbol, meaning]) => `${symbol}: ${meaning}`).join(", ") +
    "\nYour available actions are:\n" + actionNames.join(", ");
}
