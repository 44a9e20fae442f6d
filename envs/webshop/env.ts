/**
 * The WebShop text environment: search → results → item (options, sub-pages) → buy,
 * with WebShop's reward on purchase, ROLL's action parsing and step metrics.
 *
 * @module
 */
import { ActionParser } from "../action_parser.ts";
import { EnvConfigError } from "../errors.ts";
import type { Env, ResetResult, RgbFrame, StepMetrics, StepResult } from "../types.ts";
import { loadCatalog } from "./catalog.ts";
import { commandText, parseCommand, type WebShopCommand } from "./command.ts";
import { parseWebShopConfig, type StepDelayConfig, type WebShopConfig } from "./config.ts";
import { splitGoals } from "./goals.ts";
import {
  availableActions,
  observationText,
  type PageState,
  PRODUCT_WINDOW,
  type RenderedPage,
  renderPage,
  SEARCH_RETURN_N,
} from "./pages.ts";
import { oracleCommand, type OracleOptions } from "./oracle.ts";
import { computeReward, type RewardInfo } from "./reward.ts";
import { type DelaySampler, delaySampler, sleep } from "./step_delay.ts";
import { drawTextCard, wrapText } from "./text_card.ts";
import type { Catalog, Goal } from "./types.ts";

/** The default system-prompt text (ROLL's, with the action format of this environment). */
export const DEFAULT_ENV_INSTRUCTION =
  "You are web shopping. I will give you instructions about what to do. You have to follow " +
  "the instructions. Every round I will give you an observation and a list of available " +
  "actions, you have to respond an action based on the state and instruction. You can use " +
  "search action if search is available. You can click one of the buttons in clickables. " +
  "An action should be of the following structure: search[keywords] click[value] If the " +
  "action is not valid, perform nothing. Keywords in search are up to you, but the value in " +
  "click must be a value in the list of available actions. Remember that your keywords in " +
  "search should be carefully designed.";

/** What a step did, before the delay. */
interface Outcome {
  reward: number;
  valid: boolean;
  effective: boolean;
  formatPenalty: number;
  rewardInfo?: RewardInfo;
}

/**
 * The WebShop environment. Build it with {@linkcode createWebShopEnv} (which validates
 * the config) or `new WebShopEnv(parseWebShopConfig(raw))`.
 */
export class WebShopEnv implements Env {
  /** The validated config. */
  readonly config: WebShopConfig;
  /** The shared catalog (products, all goals, search index). */
  readonly catalog: Catalog;
  /** The goals of the configured split (after `limit_goals`). */
  readonly goals: readonly Goal[];
  readonly instruction: string;
  readonly actionDescription: string;
  readonly #parser: ActionParser;
  readonly #delayConfig: StepDelayConfig | null;
  #delay: DelaySampler | null = null;
  #goalIndex = -1;
  #goal!: Goal;
  #state: PageState = { kind: "search" };
  #results: string[] = [];
  #options: Record<string, string> = {};
  #rendered: RenderedPage | null = null;
  #steps = 0;
  #terminated = false;
  #truncated = false;

  /** Builds the environment from a validated config (loads or reuses the catalog). */
  constructor(config: WebShopConfig) {
    this.config = config;
    this.catalog = loadCatalog(config);
    let goals = splitGoals(this.catalog.goals, config.split);
    if (config.limit_goals !== -1) goals = goals.slice(0, config.limit_goals);
    if (goals.length === 0) {
      throw new EnvConfigError(
        `WebShop split '${config.split}' has no goals: the catalog ${this.catalog.source} has ${this.catalog.goals.length} goals and the splits are test 0-499, eval 500-1499, train 1500+; use a larger catalog or split 'test' / 'all'`,
      );
    }
    this.goals = goals;
    this.#parser = new ActionParser({
      actionPattern: config.action_pattern,
      specialTokens: config.special_token_list,
    });
    this.instruction = config.env_instruction ?? DEFAULT_ENV_INSTRUCTION;
    const example = this.#parser.format("click[buy now]") ?? "click[buy now]";
    this.actionDescription =
      "One action per turn: search[keywords] (only when search is available) or click[value] " +
      `with a value from the available actions, written as ${example}`;
    this.#delayConfig = config.step_delay ??
      (config.step_delay_ms > 0
        ? { distribution: "fixed" as const, ms: config.step_delay_ms, seed: 0 }
        : null);
    this.reset(config.seed ?? 0);
  }

  /** Starts an episode on goal `seed mod |goals|` of the split, at the search page. */
  reset(seed: number): ResetResult {
    if (!Number.isSafeInteger(seed)) {
      throw new RangeError(`WebShop reset: seed ${seed} is not an integer`);
    }
    const n = this.goals.length;
    this.#goalIndex = ((seed % n) + n) % n;
    this.#goal = this.goals[this.#goalIndex]!;
    this.#state = { kind: "search" };
    this.#results = [];
    this.#options = {};
    this.#steps = 0;
    this.#terminated = false;
    this.#truncated = false;
    this.#rendered = null;
    if (this.#delayConfig) this.#delay = delaySampler(this.#delayConfig, seed);
    return {
      observation: this.render("text"),
      info: {
        env_instruction: this.instruction,
        goal_index: this.#goalIndex,
        goal_asin: this.#goal.asin,
        instruction_text: this.#goal.instruction_text,
      },
    };
  }

  /**
   * Applies the agent's reply. Synchronous unless a step delay is configured, then the
   * result arrives after the delay. Bad actions never throw.
   */
  step(action: string): StepResult | Promise<StepResult> {
    const result = this.#step(action);
    if (this.#delay === null) return result;
    const ms = this.#delay.next();
    return sleep(ms).then(() => result);
  }

  #step(text: string): StepResult {
    const goal = this.#goal;
    if (this.#terminated || this.#truncated) {
      return this.#result(
        { reward: 0, valid: false, effective: false, formatPenalty: 0 },
        null,
      );
    }
    this.#steps++;
    const parsed = this.#parser.parse(text);
    const command = parsed.matched ? parseCommand(parsed.action) : null;
    let outcome: Outcome;
    if (command === null) {
      const p = this.config.format_penalty;
      outcome = { reward: p, valid: false, effective: false, formatPenalty: p };
    } else {
      outcome = this.#apply(command, goal);
    }
    if (!this.#terminated && this.#steps >= this.config.max_steps) this.#truncated = true;
    return this.#result(outcome, command);
  }

  #result(outcome: Outcome, command: WebShopCommand | null): StepResult {
    const metrics: StepMetrics = {
      action_is_valid: outcome.valid,
      action_is_effective: outcome.effective,
      success: outcome.rewardInfo !== undefined && outcome.rewardInfo.reward === 1,
      format_penalty: outcome.formatPenalty,
    };
    const info: StepResult["info"] = {
      metrics,
      action: command === null ? null : commandText(command),
      page: this.#state.kind,
      goal_index: this.#goalIndex,
    };
    if (outcome.rewardInfo) {
      info.reward_info = outcome.rewardInfo;
      info.purchased = {
        asin: (this.#state as { asin: string }).asin,
        options: { ...this.#options },
        price: this.catalog.prices.get((this.#state as { asin: string }).asin),
      };
    }
    return {
      observation: this.render("text"),
      reward: outcome.reward,
      terminated: this.#terminated,
      truncated: this.#truncated,
      info,
    };
  }

  #apply(command: WebShopCommand, goal: Goal): Outcome {
    const invalid: Outcome = { reward: 0, valid: false, effective: false, formatPenalty: 0 };
    const page = this.#page();
    const before = JSON.stringify([this.#state, this.#options]);
    const state = this.#state;
    let rewardInfo: RewardInfo | undefined;
    if (command.kind === "search") {
      if (!page.hasSearchBar || command.query === "") return invalid;
      const keywords = command.query.split(" ").filter((w) => w !== "").join(" ");
      this.#results = this.catalog.index.search(keywords, SEARCH_RETURN_N).map((h) => h.id);
      this.#options = {};
      this.#state = { kind: "results", keywords, page: 1 };
    } else {
      const target = page.clickables.get(command.label);
      if (target === undefined) return invalid;
      switch (target.kind) {
        case "back_to_search":
          this.#state = { kind: "search" };
          this.#results = [];
          this.#options = {};
          break;
        case "next":
        case "prev":
          if (state.kind === "results") {
            this.#state = { ...state, page: state.page + (target.kind === "next" ? 1 : -1) };
          } else if (state.kind === "item") {
            this.#options = {};
            this.#state = { kind: "results", keywords: state.keywords, page: state.page };
          } else if (state.kind === "sub") {
            this.#state = {
              kind: "item",
              asin: state.asin,
              keywords: state.keywords,
              page: state.page,
            };
          }
          break;
        case "product":
          if (state.kind === "results") {
            this.#state = {
              kind: "item",
              asin: target.asin,
              keywords: state.keywords,
              page: state.page,
            };
          }
          break;
        case "sub":
          if (state.kind === "item") this.#state = { ...state, kind: "sub", sub: target.sub };
          break;
        case "option":
          this.#options = { ...this.#options, [target.name]: target.value };
          break;
        case "buy": {
          if (state.kind !== "item") return invalid;
          const product = this.catalog.byAsin.get(state.asin)!;
          const price = this.catalog.prices.get(state.asin) ?? 100;
          rewardInfo = computeReward(product, goal, price, this.#options);
          this.#state = { kind: "done", asin: state.asin, reward: rewardInfo.reward };
          this.#terminated = true;
          break;
        }
      }
    }
    this.#rendered = null;
    const effective = JSON.stringify([this.#state, this.#options]) !== before;
    return {
      reward: rewardInfo?.reward ?? 0,
      valid: true,
      effective,
      formatPenalty: 0,
      ...(rewardInfo ? { rewardInfo } : {}),
    };
  }

  #page(): RenderedPage {
    if (this.#rendered === null) {
      this.#rendered = renderPage(this.#state, {
        catalog: this.catalog,
        instruction: this.#goal.instruction_text,
        results: this.#results,
        options: this.#options,
        showAttrs: this.config.show_attrs,
      });
    }
    return this.#rendered;
  }

  /** `text`: the observation; `rgb`: the page's first lines drawn as a text card. */
  render(mode: "text"): string;
  render(mode: "rgb"): RgbFrame;
  render(mode: "text" | "rgb"): string | RgbFrame {
    if (mode === "text") return observationText(this.#page());
    if (mode === "rgb") {
      const page = this.#page();
      const lines: string[] = [];
      for (const t of page.texts) {
        const label = page.clickables.has(t.toLowerCase()) || t === "Search";
        const chosen = Object.values(this.#options).includes(t);
        lines.push(...wrapText(chosen ? `(*) ${t}` : label ? `[${t}]` : t, 64));
      }
      return drawTextCard(lines, { columns: 64, rows: 24 });
    }
    throw new RangeError(`WebShop render: mode ${JSON.stringify(mode)}, expected "text" or "rgb"`);
  }

  /** Nothing to release: the catalog is shared, the episode state is plain data. */
  close(): void {
    this.#rendered = null;
  }

  /**
   * A response naming a uniformly random legal action; on the search page a search for
   * one to four random words of the instruction.
   */
  sampleAction(random: () => number): string {
    const pick = <T>(items: readonly T[]): T =>
      items[Math.min(items.length - 1, Math.floor(random() * items.length))]!;
    const actions = this.availableActions();
    let action = actions.length === 0 ? "click[buy now]" : pick(actions);
    if (action === "search[<content>]") {
      const words = this.#goal.instruction_text.toLowerCase().split(/\s+/).filter((w) => w);
      const n = 1 + Math.floor(random() * 4);
      action = `search[${Array.from({ length: n }, () => pick(words)).join(" ")}]`;
    }
    return this.formatAction(action);
  }

  /** The scripted policy's next response (see {@linkcode oracleCommand}). */
  oracleAction(options: OracleOptions = {}): string {
    return this.formatAction(oracleCommand(this, options));
  }

  /** The current goal. */
  get goal(): Goal {
    return this.#goal;
  }

  /** Index of the current goal within {@linkcode goals}. */
  get goalIndex(): number {
    return this.#goalIndex;
  }

  /** The current page state (a copy). */
  get page(): PageState {
    return { ...this.#state };
  }

  /** The options chosen on the current item (a copy). */
  get selectedOptions(): Record<string, string> {
    return { ...this.#options };
  }

  /** The current search's result ASINs (up to 50, best first). */
  get searchResults(): readonly string[] {
    return this.#results;
  }

  /** ASINs listed on the current results page (empty elsewhere). */
  get visibleProducts(): string[] {
    const s = this.#state;
    if (s.kind !== "results") return [];
    return this.#results.slice((s.page - 1) * PRODUCT_WINDOW, s.page * PRODUCT_WINDOW);
  }

  /** Steps taken in this episode. */
  get stepCount(): number {
    return this.#steps;
  }

  /** Whether the episode has ended (purchase or step limit). */
  get done(): boolean {
    return this.#terminated || this.#truncated;
  }

  /** The available actions, as listed in the observation. */
  availableActions(): string[] {
    return availableActions(this.#page());
  }

  /**
   * Wraps a bare command (`click[buy now]`) in the configured action pattern, e.g.
   * `<answer>click[buy now]</answer>`, so that step() reads it back.
   *
   * @throws {Error} when the pattern is too complex to fill in.
   */
  formatAction(command: string): string {
    const text = this.#parser.format(command);
    if (text === undefined) {
      throw new Error(
        `WebShop formatAction: no simple response fits action_pattern ${
          JSON.stringify(this.config.action_pattern)
        }`,
      );
    }
    return text;
  }
}

/**
 * Builds a WebShop environment from its raw `env_config`.
 *
 * @example
 * ```ts
 * import { createWebShopEnv } from "./mod.ts";
 * const env = createWebShopEnv({ num_products: 300, split: "all" });
 * const { observation } = env.reset(0);
 * console.log(observation.startsWith("WebShop [SEP] Instruction:")); // true
 * ```
 *
 * @throws {WebShopConfigError} for a bad config; {@linkcode WebShopDataError} for bad data.
 */
export function createWebShopEnv(config: Record<string, unknown>): WebShopEnv {
  return new WebShopEnv(parseWebShopConfig(config));
}

/**
 * The scripted policy's next response for a WebShop environment, ready for `env.step`
 * (the CLI's `--policy scripted` calls `env.oracleAction()`, which is the same).
 *
 * @example
 * ```ts
 * import { createWebShopEnv, webshopOracleAction } from "./env.ts";
 * const env = createWebShopEnv({ num_products: 300, split: "all" });
 * env.reset(3);
 * let r;
 * do r = await env.step(webshopOracleAction(env)); while (!r.terminated && !r.truncated);
 * console.log(r.reward); // 1 when the target was found
 * ```
 */
export function webshopOracleAction(env: Env, options: OracleOptions = {}): string {
  if (!(env instanceof WebShopEnv)) {
    throw new TypeError("webshopOracleAction: expected a WebShop environment (createWebShopEnv)");
  }
  return env.oracleAction(options);
}
