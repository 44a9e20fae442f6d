/**
 * WebShop's pages in simple text mode: what each page shows (its visible texts, in
 * document order, as WebShop's `convert_html_to_text(simple=True)` lists them) and what
 * can be clicked on it (WebShop's `text_to_clickable`: buttons and product links, then
 * option values, keys lower-cased).
 *
 * @module
 */
import type { Catalog, Product } from "./types.ts";

/** Results shown per page. */
export const PRODUCT_WINDOW = 10;
/** Results kept per search. */
export const SEARCH_RETURN_N = 50;

/** The item sub-pages. */
export type SubPage = "description" | "features" | "reviews" | "attributes";

/** Where the browser is. */
export type PageState =
  | { kind: "search" }
  | { kind: "results"; keywords: string; page: number }
  | { kind: "item"; asin: string; keywords: string; page: number }
  | { kind: "sub"; sub: SubPage; asin: string; keywords: string; page: number }
  | { kind: "done"; asin: string; reward: number };

/** What a click does. */
export type ClickTarget =
  | { kind: "back_to_search" }
  | { kind: "next" }
  | { kind: "prev" }
  | { kind: "product"; asin: string }
  | { kind: "sub"; sub: SubPage }
  | { kind: "option"; name: string; value: string }
  | { kind: "buy" };

/** A page as the agent sees it. */
export interface RenderedPage {
  /** Visible texts in order (joined by ` [SEP] ` for the observation). */
  texts: string[];
  /** Lower-cased label → what clicking it does, in WebShop's order. */
  clickables: Map<string, ClickTarget>;
  /** Whether the page has a search bar (`search[...]` is allowed). */
  hasSearchBar: boolean;
}

/** Everything a page render needs. */
export interface PageContext {
  catalog: Catalog;
  instruction: string;
  /** The current search's result ASINs (up to 50). */
  results: readonly string[];
  /** Chosen options of the current item. */
  options: Readonly<Record<string, string>>;
  showAttrs: boolean;
}

/** Python's `str()` of a float reward: `1.0`, `0.5`, `0.6666666666666666`. */
export function pythonFloat(x: number): string {
  return Number.isInteger(x) ? `${x}.0` : String(x);
}

function product(ctx: PageContext, asin: string): Product {
  const p = ctx.catalog.byAsin.get(asin);
  if (!p) throw new Error(`WebShop page: unknown product ${asin}`);
  return p;
}

/** Renders a page state. */
export function renderPage(state: PageState, ctx: PageContext): RenderedPage {
  const clickables = new Map<string, ClickTarget>();
  const header = ["Instruction:", ctx.instruction];
  switch (state.kind) {
    case "search":
      return { texts: ["WebShop", ...header, "Search"], clickables, hasSearchBar: true };
    case "results": {
      const total = ctx.results.length;
      const shown = ctx.results.slice(
        (state.page - 1) * PRODUCT_WINDOW,
        state.page * PRODUCT_WINDOW,
      );
      const texts = [...header, "Back to Search", `Page ${state.page} (Total results: ${total})`];
      clickables.set("back to search", { kind: "back_to_search" });
      if (state.page > 1) {
        texts.push("< Prev");
        clickables.set("< prev", { kind: "prev" });
      }
      if (state.page * PRODUCT_WINDOW < total) {
        texts.push("Next >");
        clickables.set("next >", { kind: "next" });
      }
      for (const asin of shown) {
        const p = product(ctx, asin);
        texts.push(p.asin, p.Title, p.Price);
        clickables.set(asin.toLowerCase(), { kind: "product", asin });
      }
      return { texts, clickables, hasSearchBar: false };
    }
    case "item": {
      const p = product(ctx, state.asin);
      const texts = [...header, "Back to Search", "< Prev"];
      const optionClicks: [string, ClickTarget][] = [];
      for (const [name, values] of Object.entries(p.options)) {
        texts.push(name);
        for (const value of values) {
          texts.push(value);
          optionClicks.push([value, { kind: "option", name, value }]);
        }
      }
      texts.push(p.Title, `Price: ${p.Price}`, `Rating: ${p.Rating}`);
      clickables.set("back to search", { kind: "back_to_search" });
      clickables.set("< prev", { kind: "prev" });
      const subs: SubPage[] = ["description", "features", "reviews"];
      if (ctx.showAttrs) subs.push("attributes");
      for (const sub of subs) {
        texts.push(sub[0]!.toUpperCase() + sub.slice(1));
        clickables.set(sub, { kind: "sub", sub });
      }
      texts.push("Buy Now");
      clickables.set("buy now", { kind: "buy" });
      for (const [label, target] of optionClicks) clickables.set(label.toLowerCase(), target);
      return { texts: texts.filter((t) => t.trim() !== ""), clickables, hasSearchBar: false };
    }
    case "sub": {
      const p = product(ctx, state.asin);
      const texts = [...header, "Back to Search", "< Prev"];
      clickables.set("back to search", { kind: "back_to_search" });
      clickables.set("< prev", { kind: "prev" });
      switch (state.sub) {
        case "description":
          texts.push(p.Description);
          break;
        case "features":
          texts.push(...p.BulletPoints);
          break;
        case "reviews":
          for (const r of p.Reviews) texts.push(`"${r.title}"`, String(r.score), r.body);
          break;
        case "attributes":
          texts.push(...p.Attributes, p.category, p.query, p.product_category);
          break;
      }
      return {
        texts: texts.map((t) => t.trim()).filter((t) => t !== ""),
        clickables,
        hasSearchBar: false,
      };
    }
    case "done":
      return {
        texts: [
          "Thank you for shopping with us!",
          "Your score (min 0.0, max 1.0)",
          pythonFloat(state.reward),
        ],
        clickables,
        hasSearchBar: false,
      };
  }
}

/** The available actions as WebShop's text env lists them: `search[<content>]`, `click[x]`. */
export function availableActions(page: RenderedPage): string[] {
  const actions = page.hasSearchBar ? ["search[<content>]"] : [];
  for (const label of page.clickables.keys()) actions.push(`click[${label}]`);
  return actions;
}

/** The observation: visible texts joined by ` [SEP] `, then the available actions. */
export function observationText(page: RenderedPage): string {
  const actions = availableActions(page);
  return `${page.texts.join(" [SEP] ")}\nAvailable actions: ${
    actions.length === 0 ? "none (the episode is over)" : actions.join(", ")
  }`;
}
