/**
 * The trajectory-wise env manager's turn prompts, as ROLL's TrajEnvManager
 * builds them: the first turn opens with the system message
 * (`agent_system_template`) and a user message holding the env's instruction
 * then the filled `agent_template`; every later turn is one user message with
 * the filled `agent_template`. Placeholders: `{turn_idx}` (1-based),
 * `{observation}`, `{actions_left}`, `{max_response_length}`.
 *
 * @module
 */
import type { ChatMessage } from "../model/chat_template.ts";

/** agentrl's system template when a custom_envs entry has none (ROLL requires one). */
export const DEFAULT_AGENT_SYSTEM_TEMPLATE =
  "You are a capable game player. Win the game with as few actions as you can.";

/** agentrl's turn template when a custom_envs entry has none (ROLL requires one). */
export const DEFAULT_AGENT_TEMPLATE = "Turn {turn_idx}:\nState:\n{observation}\n" +
  "Reply with exactly one action in the form <answer>ACTION</answer> and nothing else.\n" +
  "Actions left: {actions_left}. At most {max_response_length} tokens.\n";

/**
 * Fills ROLL's placeholders (`{turn_idx}`, `{observation}`, ...) like Python's
 * `str.format`: `{{` and `}}` are literal braces; unknown placeholders stay as written.
 */
export function fillTemplate(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{\{|\}\}|\{(\w+)\}/g, (m, name?: string) => {
    if (m === "{{") return "{";
    if (m === "}}") return "}";
    return name !== undefined && name in values ? String(values[name]) : m;
  });
}

/** What a turn's prompt is made of. */
export interface TurnPromptInput {
  /** `agent_system_template` (null: the default). */
  systemTemplate: string | null;
  /** `agent_template` (null: the default). */
  agentTemplate: string | null;
  /** The env's instruction (first turn only). */
  instruction: string;
  /** The observation to act on. */
  observation: string;
  /** 0-based index of the action about to be taken. */
  turn: number;
  /** `max_steps` of the entry (actions allowed per trajectory). */
  maxActions: number;
  /** `max_tokens_per_step` of the entry. */
  maxResponseLength: number;
}

/** The placeholders every turn prompt fills (trajectory-wise and step-wise). */
function turnValues(
  turn: number,
  observation: string,
  maxActions: number,
  maxResponseLength: number,
): Record<string, string | number> {
  return {
    turn_idx: turn + 1,
    observation,
    actions_left: maxActions - turn,
    max_response_length: maxResponseLength,
  };
}

/** The messages a turn adds to the conversation: [system, user] first, then [user]. */
export function turnMessages(input: TurnPromptInput): ChatMessage[] {
  const body = fillTemplate(
    input.agentTemplate ?? DEFAULT_AGENT_TEMPLATE,
    turnValues(input.turn, input.observation, input.maxActions, input.maxResponseLength),
  );
  if (input.turn > 0) return [{ role: "user", content: body }];
  return [
    { role: "system", content: input.systemTemplate ?? DEFAULT_AGENT_SYSTEM_TEMPLATE },
    { role: "user", content: `${input.instruction}\n${body}` },
  ];
}

/** The fields of a `custom_envs` entry that shape its turn prompts. */
export interface TurnPromptEntry {
  agent_system_template?: string | null;
  agent_template?: string | null;
  max_steps: number;
  max_tokens_per_step: number;
}

/**
 * {@linkcode turnMessages} with the templates and limits of a `custom_envs` entry.
 *
 * @example
 * ```ts
 * import { entryTurnMessages } from "./prompt.ts";
 * const entry = { max_steps: 10, max_tokens_per_step: 24 };
 * console.log(entryTurnMessages(entry, "Walk to G.", "P_\n_G", 1).length); // 1
 * ```
 */
export function entryTurnMessages(
  entry: TurnPromptEntry,
  instruction: string,
  observation: string,
  turn: number,
): ChatMessage[] {
  return turnMessages({
    systemTemplate: entry.agent_system_template ?? null,
    agentTemplate: entry.agent_template ?? null,
    instruction,
    observation,
    turn,
    maxActions: entry.max_steps,
    maxResponseLength: entry.max_tokens_per_step,
  });
}

/** The fields of a step-wise `custom_envs` entry (ROLL's StepEnvManager) that shape its prompts. */
export interface StepPromptEntry extends TurnPromptEntry {
  /** How many earlier steps the prompt recalls (ROLL's default 5). */
  history_length?: number | null;
}

/** One earlier step as the step-wise history recalls it. */
export function stepHistoryLine(
  step: number,
  observation: string,
  action: string,
  valid: boolean,
  reward: number,
): string {
  return `(step: ${step}, observation: ${observation}, action: ${action}` +
    `${valid ? "" : " (not a valid action)"}, reward: ${Number(reward.toFixed(4))})`;
}

/**
 * A step-wise turn's fresh prompt: [system, user], the user message filled
 * from `agent_template` with `{env_instruction}`, `{history}` (the last
 * `history_length` lines of `history`), `{current_observation}` and the rest.
 * Every step enters the history (ROLL's step manager keeps only invalid ones:
 * a known bug). `history_length` counts the earlier steps recalled (5 when
 * unset); ROLL's slice `history[-history_length:-1]` recalls one fewer, and
 * none when unset. The shipped step-wise configs and base models were made
 * with this count.
 */
export function stepTurnMessages(
  entry: StepPromptEntry,
  instruction: string,
  observation: string,
  turn: number,
  history: readonly string[],
): ChatMessage[] {
  const keep = entry.history_length ?? 5;
  const recent = keep > 0 ? history.slice(Math.max(0, history.length - keep)) : [];
  const user = fillTemplate(entry.agent_template ?? DEFAULT_AGENT_TEMPLATE, {
    ...turnValues(turn, observation, entry.max_steps, entry.max_tokens_per_step),
    env_instruction: instruction,
    step_count: turn,
    history_length: recent.length,
    history: recent.join(", "),
    current_step: turn + 1,
    current_observation: observation,
  });
  return [
    { role: "system", content: entry.agent_system_template ?? DEFAULT_AGENT_SYSTEM_TEMPLATE },
    { role: "user", content: user },
  ];
}
