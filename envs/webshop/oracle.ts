/**
 * A scripted policy that knows the goal (for `--policy scripted`, smoke tests and
 * upper-bound checks): search the instruction text, open the target if it is listed
 * (looking through a few result pages), otherwise search the target's title; select
 * the goal's options; buy.
 *
 * @module
 */
import type { PageState } from "./pages.ts";
import type { Catalog, Goal } from "./types.ts";

/** How the scripted policy searches. */
export interface OracleOptions {
  /** Results pages to look through for the target before giving up (default 2). */
  maxResultPages?: number;
  /** After giving up, search the target's title (default true); else buy the first result. */
  titleFallback?: boolean;
}

/** What the scripted policy reads from the environment. */
export interface OracleView {
  readonly goal: Goal;
  readonly catalog: Catalog;
  readonly page: PageState;
  readonly selectedOptions: Record<string, string>;
  readonly visibleProducts: string[];
  readonly stepCount: number;
  availableActions(): string[];
}

/**
 * The scripted policy's next command, bare (`search[...]`, `click[...]`).
 *
 * @example
 * ```ts
 * import { createWebShopEnv } from "./env.ts";
 * import { oracleCommand } from "./oracle.ts";
 * const env = createWebShopEnv({ num_products: 300, split: "all" });
 * env.reset(0);
 * console.log(oracleCommand(env)); // search[Find me ...]
 * ```
 */
export function oracleCommand(view: OracleView, options: OracleOptions = {}): string {
  const maxPages = options.maxResultPages ?? 2;
  const fallback = options.titleFallback ?? true;
  const goal = view.goal;
  const target = view.catalog.byAsin.get(goal.asin);
  if (target === undefined) throw new Error(`WebShop oracle: goal product ${goal.asin} is unknown`);
  const titleQuery = target.Title.toLowerCase().split(" ").filter((w) => w !== "").join(" ");
  const page = view.page;
  switch (page.kind) {
    case "search":
      return view.stepCount > 0 && fallback
        ? `search[${titleQuery}]`
        : `search[${goal.instruction_text}]`;
    case "results": {
      const visible = view.visibleProducts;
      if (visible.includes(goal.asin)) return `click[${goal.asin.toLowerCase()}]`;
      if (page.page < maxPages && view.availableActions().includes("click[next >]")) {
        return "click[next >]";
      }
      if (fallback && page.keywords !== titleQuery) return "click[back to search]";
      return visible.length > 0 ? `click[${visible[0]!.toLowerCase()}]` : "click[back to search]";
    }
    case "item": {
      if (page.asin === goal.asin) {
        // A value label selects the last option group offering it (WebShop's clickables).
        const groupOf = new Map<string, string>();
        for (const [name, values] of Object.entries(target.options)) {
          for (const v of values) groupOf.set(v.toLowerCase(), name);
        }
        const chosen = view.selectedOptions;
        for (const [name, value] of Object.entries(goal.goal_options)) {
          const label = value.toLowerCase();
          if (chosen[name] !== value && groupOf.get(label) === name) return `click[${label}]`;
        }
      }
      return "click[buy now]";
    }
    case "sub":
      return "click[< prev]";
    case "done":
      return "click[buy now]";
  }
}
