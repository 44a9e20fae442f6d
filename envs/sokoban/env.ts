/**
 * Sokoban with gym-sokoban's rules and ROLL's text interface.
 *
 * @module
 */
import { ActionParser } from "../action_parser.ts";
import { describeGrid } from "../config_fields.ts";
import { Rng } from "../random.ts";
import type { Env, ResetResult, RgbFrame, StepMetrics, StepResult } from "../types.ts";
import { SOKOBAN_ACTIONS, SOKOBAN_MEANINGS, SOKOBAN_SYMBOLS, SokobanConfig } from "./config.ts";
import { generateLevel, SokobanGenerationError } from "./generate.ts";
import { DIRECTIONS, type SokobanLevel, stateCodes, TARGET, WALL } from "./level.ts";
import { renderSokoban } from "./render_rgb.ts";
import { solveSokoban } from "./solver.ts";

/** gym-sokoban's rewards. */
export const SOKOBAN_REWARDS = {
  step: -0.1,
  boxOnTarget: 1,
  boxOffTarget: -1,
  finished: 10,
} as const;

/** Seeds derived from a reset seed when its level cannot be generated (ROLL reseeds too). */
const MAX_GENERATION_ATTEMPTS = 64;

/**
 * Sokoban: push every box onto a target. gym-sokoban's rules: actions 1 Up,
 * 2 Down, 3 Left, 4 Right are push moves (push the box ahead if the cell beyond
 * it is free, else walk if the cell ahead is free); each step gives -0.1, +1
 * when a box reaches a target, -1 when one leaves a target, +10 when all are on
 * targets, which ends the episode. Levels come from gym-sokoban's generator
 * (random-walk room, reverse playing) seeded by the reset seed; when a seed's
 * level cannot be made, seeds derived from it are tried, as ROLL does.
 *
 * An invalid or unparsable action leaves the state unchanged, gives reward
 * `format_penalty` and does not end the episode (ROLL's SokobanEnv also adds
 * gym-sokoban's -0.1 step penalty there; here the penalty alone, as for FrozenLake). Every action counts toward
 * `max_steps`; the step that reaches it returns `truncated` unless it also
 * terminated. Steps after the episode ended change nothing and give reward 0.
 *
 * @example
 * ```ts
 * import { SokobanEnv } from "./env.ts";
 * import { SokobanConfig } from "./config.ts";
 * const env = new SokobanEnv(SokobanConfig.parse({ dim_room: [6, 6], num_boxes: 1 }));
 * console.log(env.reset(0).observation); // a 6x6 room of # _ O X P
 * console.log(env.step("<answer>Up</answer>").reward); // -0.1, or more if a box reached its target
 * ```
 */
export class SokobanEnv implements Env {
  /** The validated config. */
  readonly config: SokobanConfig;
  readonly instruction: string;
  readonly actionDescription: string;
  readonly #parser: ActionParser;
  readonly #actions: readonly string[];
  readonly #symbols: readonly string[];
  #levelOrUndefined: SokobanLevel | undefined;
  #boxAt = new Uint8Array(0);
  #boxesOnTarget = 0;
  #steps = 0;
  #terminated = false;
  #truncated = false;
  #plan: { keys: string[]; actions: number[] } | undefined;

  /** An environment for a validated config (see {@linkcode SokobanConfig}). */
  constructor(config: SokobanConfig) {
    this.config = config;
    this.#parser = new ActionParser({
      actionPattern: config.action_pattern,
      specialTokens: config.special_token_list,
    });
    this.#actions = config.action_lookup ?? SOKOBAN_ACTIONS;
    this.#symbols = config.grid_lookup ?? SOKOBAN_SYMBOLS;
    const vocab: Array<[string, string]> = config.grid_vocab
      ? Object.entries(config.grid_vocab)
      : this.#symbols.map((s, i) => [s, SOKOBAN_MEANINGS[i]!]);
    const example = this.#parser.format(this.#actions[3]!) ?? this.#actions[3]!;
    const task = config.env_instruction ??
      "You are solving the Sokoban puzzle: you are the player and must push every box onto " +
        "a target. Moving toward an adjacent box pushes it one cell if the cell beyond is free; " +
        "boxes cannot be pulled or pushed into walls or other boxes. " +
        `Give one action per turn, in the form ${example}.`;
    this.instruction = task + describeGrid(vocab, this.#actions);
    this.actionDescription = `one of ${this.#actions.join(", ")}, in the form ${example}`;
  }

  /** The current level; before the first reset, the level of `config.seed` (default 0). */
  get #level(): SokobanLevel {
    if (!this.#levelOrUndefined) this.#setLevel(this.#generate(this.config.seed ?? 0).level);
    return this.#levelOrUndefined!;
  }

  /** A copy of the current level (room, player, boxes). */
  get level(): SokobanLevel {
    const l = this.#level;
    return { rows: l.rows, cols: l.cols, fixed: l.fixed, player: l.player, boxes: [...l.boxes] };
  }

  /** Boxes on targets now. */
  get boxesOnTarget(): number {
    return this.#boxesOnTarget;
  }

  /** Actions taken since the last reset, valid or not. */
  get stepCount(): number {
    return this.#steps;
  }

  /** Generates the level of `seed` (deterministic) and starts an episode. */
  reset(seed: number): ResetResult {
    if (!Number.isSafeInteger(seed)) {
      throw new RangeError(`Reset seed ${seed} is not valid: expected an integer`);
    }
    const { level, attempt } = this.#generate(seed);
    this.#setLevel(level);
    return {
      observation: this.render("text"),
      info: { env_instruction: this.instruction, generation_attempt: attempt },
    };
  }

  /** Starts an episode on a given level (for tests and hand-made puzzles). */
  resetToLevel(level: SokobanLevel): ResetResult {
    this.#setLevel({ ...level, fixed: new Uint8Array(level.fixed), boxes: [...level.boxes] });
    return { observation: this.render("text"), info: { env_instruction: this.instruction } };
  }

  /** Parses `action` and applies it (see the class description for every rule). */
  step(action: string): StepResult {
    const parsed = this.#parser.parse(action);
    const index = parsed.matched ? this.#lookup(parsed.action) : -1;
    const actionInfo = {
      action: index >= 0 ? index + 1 : null,
      action_content: parsed.action,
      think_content: parsed.think,
    };
    const numBoxes = this.#level.boxes.length;
    if (this.#terminated || this.#truncated) {
      return this.#result(0, {
        action_is_valid: index >= 0,
        action_is_effective: false,
        success: this.#boxesOnTarget === numBoxes,
        format_penalty: 0,
      }, { ...actionInfo, action_desc: "The episode is over; nothing changed." });
    }
    this.#steps++;
    if (index < 0) {
      this.#truncated = this.#steps >= this.config.max_steps;
      return this.#result(this.config.format_penalty, {
        action_is_valid: false,
        action_is_effective: false,
        success: this.#boxesOnTarget === numBoxes,
        format_penalty: this.config.format_penalty,
      }, { ...actionInfo, action_desc: `At turn ${this.#steps}, you gave no valid action.` });
    }
    const before = this.#level.player;
    this.#applyMove(index);
    const onTarget = this.#countOnTarget();
    let reward: number = SOKOBAN_REWARDS.step;
    if (onTarget > this.#boxesOnTarget) reward += SOKOBAN_REWARDS.boxOnTarget;
    else if (onTarget < this.#boxesOnTarget) reward += SOKOBAN_REWARDS.boxOffTarget;
    const solved = onTarget === numBoxes;
    if (solved) reward += SOKOBAN_REWARDS.finished;
    this.#boxesOnTarget = onTarget;
    this.#terminated = solved;
    this.#truncated = !solved && this.#steps >= this.config.max_steps;
    const effective = before !== this.#level.player;
    return this.#result(reward, {
      action_is_valid: true,
      action_is_effective: effective,
      success: solved,
      format_penalty: 0,
    }, {
      ...actionInfo,
      action_desc: effective
        ? `At turn ${this.#steps}, you moved ${this.#actions[index]}.`
        : `At turn ${this.#steps}, you tried to move ${this.#actions[index]}, which had no effect.`,
    });
  }

  /** The room as text (ROLL's symbols, or `grid_lookup`'s), or as an image. */
  render(mode: "text"): string;
  render(mode: "rgb"): RgbFrame;
  render(mode: "text" | "rgb"): string | RgbFrame {
    if (mode === "rgb") return renderSokoban(this.#level);
    const codes = stateCodes(this.#level);
    const { rows, cols } = this.#level;
    const lines: string[] = [];
    for (let r = 0; r < rows; r++) {
      let line = "";
      for (let c = 0; c < cols; c++) line += this.#symbols[codes[r * cols + c]!];
      lines.push(line);
    }
    return lines.join("\n");
  }

  /** A uniformly random action, formatted for the action pattern. */
  sampleAction(random: () => number): string {
    const name = this.#actions[Math.min(3, Math.floor(random() * 4))]!;
    return this.#parser.format(name) ?? name;
  }

  /**
   * The next action of a shortest solution from the current state (the plan is
   * kept while the state follows it, and recomputed otherwise); undefined when
   * solved or when the solver finds none.
   */
  oracleAction(): string | undefined {
    const key = this.#stateKey();
    let i = this.#plan?.keys.indexOf(key) ?? -1;
    if (i < 0) {
      const actions = solveSokoban(this.#level);
      if (!actions || actions.length === 0) return undefined;
      this.#plan = { actions, keys: this.#planKeys(actions) };
      i = 0;
    }
    const id = this.#plan!.actions[i];
    if (id === undefined) return undefined;
    const name = this.#actions[id - 1]!;
    return this.#parser.format(name) ?? name;
  }

  /** Nothing to release. */
  close(): void {}

  #generate(seed: number): { level: SokobanLevel; attempt: number } {
    const [rows, cols] = this.config.dim_room;
    const options = {
      rows,
      cols,
      numBoxes: this.config.num_boxes,
      searchDepth: this.config.search_depth,
      ...(this.config.num_gen_steps !== null ? { numSteps: this.config.num_gen_steps } : {}),
    };
    let last: unknown;
    for (let attempt = 0; attempt < MAX_GENERATION_ATTEMPTS; attempt++) {
      try {
        return { level: generateLevel(options, new Rng(seed, attempt)), attempt };
      } catch (e) {
        if (!(e instanceof SokobanGenerationError)) throw e;
        last = e;
      }
    }
    throw new Error(
      `Sokoban could not generate a ${rows}x${cols} level with ${this.config.num_boxes} boxes ` +
        `from seed ${seed} in ${MAX_GENERATION_ATTEMPTS} attempts (last: ${
          last instanceof Error ? last.message : String(last)
        }): expected a larger room or fewer boxes`,
    );
  }

  #setLevel(level: SokobanLevel): void {
    this.#levelOrUndefined = level;
    this.#boxAt = new Uint8Array(level.fixed.length);
    for (const b of level.boxes) this.#boxAt[b] = 1;
    this.#boxesOnTarget = this.#countOnTarget();
    this.#steps = 0;
    this.#terminated = false;
    this.#truncated = false;
    this.#plan = undefined;
  }

  #lookup(content: string): number {
    const wanted = content.toLowerCase();
    return this.#actions.findIndex((n) => n.toLowerCase() === wanted);
  }

  #countOnTarget(): number {
    let n = 0;
    for (const b of this.#level.boxes) if (this.#level.fixed[b] === TARGET) n++;
    return n;
  }

  /** gym-sokoban's `_push`: push the box ahead if the cell beyond is free, else `_move`. */
  #applyMove(direction: number): void {
    moveInPlace(this.#level, this.#boxAt, direction);
  }

  #stateKey(): string {
    return String.fromCharCode(this.#level.player, ...[...this.#level.boxes].sort((a, b) => a - b));
  }

  #planKeys(actions: readonly number[]): string[] {
    const scratch = this.level;
    const boxAt = new Uint8Array(this.#boxAt);
    const keys: string[] = [];
    for (const id of actions) {
      keys.push(String.fromCharCode(scratch.player, ...[...scratch.boxes].sort((a, b) => a - b)));
      moveInPlace(scratch, boxAt, id - 1);
    }
    return keys;
  }

  #result(reward: number, metrics: StepMetrics, extra: Record<string, unknown>): StepResult {
    return {
      observation: this.render("text"),
      reward,
      terminated: this.#terminated,
      truncated: this.#truncated,
      info: { metrics, boxes_on_target: this.#boxesOnTarget, ...extra },
    };
  }
}

/** One push move on `level` (mutated) with `boxAt` its box occupancy; direction 0 up .. 3 right. */
function moveInPlace(level: SokobanLevel, boxAt: Uint8Array, direction: number): void {
  const [dr, dc] = DIRECTIONS[direction]!;
  const { cols, rows, fixed } = level;
  const inside = (r: number, c: number) => r >= 0 && r < rows && c >= 0 && c < cols;
  const pr = Math.floor(level.player / cols), pc = level.player % cols;
  const nr = pr + dr, nc = pc + dc;
  if (!inside(nr, nc)) return;
  const next = nr * cols + nc;
  if (boxAt[next]) {
    const br = nr + dr, bc = nc + dc;
    if (!inside(br, bc)) return;
    const beyond = br * cols + bc;
    if (fixed[beyond] === WALL || boxAt[beyond]) return;
    boxAt[next] = 0;
    boxAt[beyond] = 1;
    level.boxes[level.boxes.indexOf(next)] = beyond;
    level.player = next;
    return;
  }
  if (fixed[next] !== WALL) level.player = next;
}
