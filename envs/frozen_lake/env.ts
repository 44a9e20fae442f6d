/**
 * FrozenLake with gymnasium's rules and ROLL's text interface.
 *
 * @module
 */
import { ActionParser } from "../action_parser.ts";
import { describeGrid } from "../config_fields.ts";
import { Rng } from "../random.ts";
import type { Env, ResetResult, RgbFrame, StepMetrics, StepResult } from "../types.ts";
import {
  FROZEN_LAKE_ACTIONS,
  FROZEN_LAKE_MEANINGS,
  FROZEN_LAKE_SYMBOLS,
  FrozenLakeConfig,
} from "./config.ts";
import { type FrozenLakeMap, generateRandomMap, MOVES, shortestPath } from "./map.ts";
import { renderFrozenLake } from "./render_rgb.ts";

/** Random streams of one reset seed: the map, and the slippery dynamics. */
const MAP_STREAM = 0;
const DYNAMICS_STREAM = 1;

/**
 * FrozenLake: walk from the start to the goal over a frozen lake without falling
 * into a hole. Gymnasium's rules: actions 0 Left, 1 Down, 2 Right, 3 Up; a move
 * into the border stays in place; with `is_slippery` the move goes in the
 * intended direction or either perpendicular one, 1/3 each; reaching the goal
 * gives reward 1 and a hole or the goal ends the episode. The map is drawn from
 * the reset seed (ROLL/RAGEN's random start and goal), and so are the slippery
 * outcomes, so a seed replays exactly.
 *
 * An invalid or unparsable action leaves the state unchanged, gives reward
 * `format_penalty` and does not end the episode. Every action, valid or not,
 * counts toward `max_steps`; the step that reaches it returns `truncated`
 * unless it also terminated. Steps after the episode ended change nothing and
 * give reward 0.
 *
 * @example
 * ```ts
 * import { FrozenLakeEnv } from "./env.ts";
 * import { FrozenLakeConfig } from "./config.ts";
 * const env = new FrozenLakeEnv(FrozenLakeConfig.parse({ is_slippery: false }));
 * const { observation } = env.reset(7);
 * console.log(observation); // e.g. "_O__\nP___\n__G_\nO___"
 * const r = env.step("<answer>Right</answer>");
 * console.log(r.info.metrics.action_is_valid); // true
 * ```
 */
export class FrozenLakeEnv implements Env {
  /** The validated config. */
  readonly config: FrozenLakeConfig;
  readonly instruction: string;
  readonly actionDescription: string;
  readonly #parser: ActionParser;
  readonly #actions: readonly string[];
  readonly #symbols: readonly string[];
  #map: FrozenLakeMap;
  #pos = 0;
  #rng: Rng;
  #steps = 0;
  #terminated = false;
  #truncated = false;

  /** An environment for a validated config (see {@linkcode FrozenLakeConfig}). */
  constructor(config: FrozenLakeConfig) {
    this.config = config;
    this.#parser = new ActionParser({
      actionPattern: config.action_pattern,
      specialTokens: config.special_token_list,
    });
    this.#actions = config.action_lookup ?? FROZEN_LAKE_ACTIONS;
    this.#symbols = config.grid_lookup ?? FROZEN_LAKE_SYMBOLS;
    const vocab: Array<[string, string]> = config.grid_vocab
      ? Object.entries(config.grid_vocab)
      : this.#symbols.map((s, i) => [s, FROZEN_LAKE_MEANINGS[i]!]);
    const example = this.#parser.format(this.#actions[2]!) ?? this.#actions[2]!;
    const task = config.env_instruction ??
      "You are solving the FrozenLake puzzle: walk over the frozen lake to the goal " +
        "without falling into a hole. " +
        (config.is_slippery
          ? "The ice is slippery: a move goes in the intended direction only one time in three, " +
            "and sideways otherwise. "
          : "") +
        `Give one action per turn, in the form ${example}.`;
    this.instruction = task + describeGrid(vocab, this.#actions);
    this.actionDescription = `one of ${this.#actions.join(", ")}, in the form ${example}`;
    const initialSeed = config.map_seed ?? config.seed ?? 0;
    this.#map = generateRandomMap(config.size, config.p, new Rng(initialSeed, MAP_STREAM));
    this.#rng = new Rng(initialSeed, DYNAMICS_STREAM);
    this.#pos = this.#start();
  }

  /** The current map (`S`, `F`, `H`, `G` rows). */
  get map(): FrozenLakeMap {
    return this.#map;
  }

  /** The player's tile, row-major (gymnasium's observation `s`). */
  get position(): number {
    return this.#pos;
  }

  /** Actions taken since the last reset, valid or not. */
  get stepCount(): number {
    return this.#steps;
  }

  /** Draws the map and the slippery-ice generator from `seed` and puts the player on the start. */
  reset(seed: number): ResetResult {
    if (!Number.isSafeInteger(seed)) {
      throw new RangeError(`Reset seed ${seed} is not valid: expected an integer`);
    }
    this.#map = generateRandomMap(this.config.size, this.config.p, new Rng(seed, MAP_STREAM));
    this.#rng = new Rng(seed, DYNAMICS_STREAM);
    this.#pos = this.#start();
    this.#steps = 0;
    this.#terminated = false;
    this.#truncated = false;
    return { observation: this.render("text"), info: { env_instruction: this.instruction } };
  }

  /**
   * Starts an episode on a given map (rows of `S F H G`, square, one `S`), with the
   * slippery-ice generator seeded by `seed`: for tests and hand-made puzzles.
   */
  resetToMap(map: FrozenLakeMap, seed = 0): ResetResult {
    const n = this.config.size;
    const starts = map.join("").split("S").length - 1;
    if (
      map.length !== n || map.some((row) => row.length !== n || /[^SFHG]/.test(row)) || starts !== 1
    ) {
      throw new RangeError(
        `FrozenLake map ${JSON.stringify(map)} is not valid: expected ${n} rows of ${n} ` +
          "characters from S F H G with exactly one S",
      );
    }
    this.#map = [...map];
    this.#rng = new Rng(seed, DYNAMICS_STREAM);
    this.#pos = this.#start();
    this.#steps = 0;
    this.#terminated = false;
    this.#truncated = false;
    return { observation: this.render("text"), info: { env_instruction: this.instruction } };
  }

  /** Parses `action` and applies it (see the class description for every rule). */
  step(action: string): StepResult {
    const parsed = this.#parser.parse(action);
    const id = parsed.matched ? this.#lookup(parsed.action) : -1;
    const actionInfo = {
      action: id >= 0 ? id : null,
      action_content: parsed.action,
      think_content: parsed.think,
    };
    if (this.#terminated || this.#truncated) {
      return this.#result(0, {
        action_is_valid: id >= 0,
        action_is_effective: false,
        success: this.#tile() === "G",
        format_penalty: 0,
      }, { ...actionInfo, action_desc: "The episode is over; nothing changed." });
    }
    this.#steps++;
    if (id < 0) {
      this.#truncated = this.#steps >= this.config.max_steps;
      return this.#result(this.config.format_penalty, {
        action_is_valid: false,
        action_is_effective: false,
        success: false,
        format_penalty: this.config.format_penalty,
      }, { ...actionInfo, action_desc: `At turn ${this.#steps}, you gave no valid action.` });
    }
    const before = this.#pos;
    this.#pos = this.#move(this.#pos, this.#slip(id));
    const tile = this.#tile();
    this.#terminated = tile === "G" || tile === "H";
    this.#truncated = !this.#terminated && this.#steps >= this.config.max_steps;
    const effective = before !== this.#pos;
    return this.#result(tile === "G" ? 1 : 0, {
      action_is_valid: true,
      action_is_effective: effective,
      success: tile === "G",
      format_penalty: 0,
    }, {
      ...actionInfo,
      action_desc: effective
        ? `At turn ${this.#steps}, you moved ${this.#actions[id]}.`
        : `At turn ${this.#steps}, you tried to move ${this.#actions[id]}, which had no effect.`,
    });
  }

  /** The map as text (ROLL's symbols), or as an image. */
  render(mode: "text"): string;
  render(mode: "rgb"): RgbFrame;
  render(mode: "text" | "rgb"): string | RgbFrame {
    if (mode === "rgb") return renderFrozenLake(this.#map, this.#pos);
    const s = this.#symbols;
    const cols = this.config.size;
    return this.#map.map((row, r) =>
      [...row].map((tile, c) => {
        if (r * cols + c === this.#pos) return tile === "H" ? s[4] : tile === "G" ? s[5] : s[0];
        return tile === "H" ? s[2] : tile === "G" ? s[3] : s[1];
      }).join("")
    ).join("\n");
  }

  /** A uniformly random action, formatted for the action pattern. */
  sampleAction(random: () => number): string {
    const name = this.#actions[Math.min(3, Math.floor(random() * 4))]!;
    return this.#parser.format(name) ?? name;
  }

  /** The first action of a shortest path to the goal (recomputed each step, so slips are fine). */
  oracleAction(): string | undefined {
    const path = shortestPath(this.#map, this.#pos);
    if (!path || path.length === 0) return undefined;
    const name = this.#actions[path[0]!]!;
    return this.#parser.format(name) ?? name;
  }

  /** Nothing to release. */
  close(): void {}

  #lookup(content: string): number {
    const wanted = content.toLowerCase();
    return this.#actions.findIndex((n) => n.toLowerCase() === wanted);
  }

  #start(): number {
    const cols = this.config.size;
    for (let r = 0; r < this.#map.length; r++) {
      const c = this.#map[r]!.indexOf("S");
      if (c >= 0) return r * cols + c;
    }
    throw new Error("FrozenLake map has no start tile");
  }

  #tile(): string {
    const cols = this.config.size;
    return this.#map[Math.floor(this.#pos / cols)]![this.#pos % cols]!;
  }

  /** Gymnasium's slippery ice: (a-1)%4, a, (a+1)%4 with probability 1/3 each. */
  #slip(a: number): number {
    if (!this.config.is_slippery) return a;
    const u = this.#rng.float();
    return u < 1 / 3 ? (a + 3) % 4 : u < 2 / 3 ? a : (a + 1) % 4;
  }

  #move(s: number, a: number): number {
    const n = this.config.size;
    const [dr, dc] = MOVES[a]!;
    const r = Math.min(n - 1, Math.max(0, Math.floor(s / n) + dr));
    const c = Math.min(n - 1, Math.max(0, (s % n) + dc));
    return r * n + c;
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
