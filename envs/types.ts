/**
 * The gym-like environment interface: text observations in, action text out.
 *
 * @module
 */

/** The per-step metrics every environment reports (ROLL's names). */
export interface StepMetrics {
  /** The action parsed and named a legal action. */
  action_is_valid: boolean;
  /** The action changed the environment's state. */
  action_is_effective: boolean;
  /** The episode's goal is reached (aggregated with the last value). */
  success: boolean;
  /** The penalty applied for a badly formatted action (0 when none). */
  format_penalty: number;
}

/** What `reset` returns. */
export interface ResetResult {
  observation: string;
  info: Record<string, unknown>;
}

/** What `step` returns, gymnasium-style. */
export interface StepResult {
  observation: string;
  reward: number;
  /** The episode ended by the environment's rules (goal, hole, purchase). */
  terminated: boolean;
  /** The episode was cut short (the step limit). */
  truncated: boolean;
  info: { metrics: StepMetrics; [key: string]: unknown };
}

/** An RGB image, row-major, 3 bytes per pixel. */
export interface RgbFrame {
  width: number;
  height: number;
  data: Uint8Array;
}

/** A multi-turn text environment. Implementations never throw on bad actions. */
export interface Env {
  /** The task description for the system prompt (ROLL's `env_instruction`). */
  readonly instruction: string;
  /** What a valid action looks like (shown to the human policy; optional). */
  readonly actionDescription?: string | undefined;
  reset(seed: number): ResetResult | Promise<ResetResult>;
  step(action: string): StepResult | Promise<StepResult>;
  render(mode: "text"): string;
  render(mode: "rgb"): RgbFrame;
  close(): void;
  /**
   * Optional, for random policies and benchmarks: a response naming a uniformly
   * random legal action (already in the env's action format, e.g.
   * `<answer>Left</answer>`), drawn with `random` (uniform in [0, 1)).
   */
  sampleAction?(random: () => number): string;
  /**
   * Optional, for the scripted policy: a response naming the next action of a
   * solution from the current state (FrozenLake: a shortest path; Sokoban: the
   * solver's plan), or undefined when the env knows none.
   */
  oracleAction?(): string | undefined;
}
