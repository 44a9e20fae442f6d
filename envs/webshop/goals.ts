/**
 * Goals the way WebShop's `get_synthetic_goals` makes them: one per product that carries
 * an instruction and per combination of its option values, with a price bound drawn
 * from {@linkcode PRICE_RANGE}; then WebShop's seeded shuffle and its index splits.
 *
 * @module
 */
import { Bm25Index } from "./bm25.ts";
import { PyRandom } from "./rng.ts";
import type { Catalog, Goal, Product } from "./types.ts";

/** WebShop's price bounds: 10, 20, ..., 990 dollars. */
export const PRICE_RANGE: readonly number[] = Array.from({ length: 99 }, (_, i) => 10 * (i + 1));

/** The price bound used when none of {@linkcode PRICE_RANGE} fits (no price in the text). */
export const NO_PRICE_BOUND = 1000000;

/** The goal index ranges of the splits: [start, end). */
export const GOAL_SPLITS: Readonly<Record<"test" | "eval" | "train", [number, number]>> = {
  test: [0, 500],
  eval: [500, 1500],
  train: [1500, Infinity],
};

/**
 * The price each product is bought at (WebShop's `generate_product_prices`): 100 with no
 * pricing, the price itself, or a uniform draw inside a price range.
 */
export function productPrices(products: readonly Product[], rng: PyRandom): Map<string, number> {
  const prices = new Map<string, number>();
  for (const p of products) {
    const [lo, hi] = p.pricing;
    prices.set(
      p.asin,
      lo === undefined ? 100 : hi === undefined ? lo : rng.uniform(lo, hi),
    );
  }
  return prices;
}

/** Every combination of option values, option names sorted (Python's itertools.product). */
export function optionCombinations(
  options: Readonly<Record<string, readonly string[]>>,
): Record<string, string>[] {
  const names = Object.keys(options).sort();
  let combos: Record<string, string>[] = [{}];
  for (const name of names) {
    const next: Record<string, string>[] = [];
    for (const combo of combos) {
      for (const value of options[name]!) next.push({ ...combo, [name]: value });
    }
    combos = next;
  }
  return combos;
}

/**
 * The goals of every product with an instruction and at least one instruction attribute,
 * in product order (before the shuffle), with WebShop's weights.
 *
 * @example
 * ```ts
 * import { buildGoals } from "./goals.ts";
 * import { PyRandom } from "./rng.ts";
 * const product = {
 *   asin: "B000000001", name: "Tee", Title: "Tee", Description: "", BulletPoints: [],
 *   Price: "$12.0", pricing: [12], options: { size: ["s", "m"], color: ["red"] },
 *   Attributes: ["short sleeve"], Reviews: [], Rating: "N.A.", category: "fashion",
 *   query: "tees", product_category: "Fashion", instruction_text: "Find me tees",
 *   instruction_attributes: ["short sleeve"], contents: "tee",
 * };
 * const goals = buildGoals([product], new Map([["B000000001", 12]]), new PyRandom(0));
 * console.log(goals.map((g) => g.instruction_text));
 * // e.g. ["Find me tees with color: red, and size: s, and price lower than 30.00 dollars", ...]
 * ```
 */
export function buildGoals(
  products: readonly Product[],
  prices: ReadonlyMap<string, number>,
  rng: PyRandom,
): Goal[] {
  const goals: Omit<Goal, "weight">[] = [];
  for (const p of products) {
    const attributes = p.instruction_attributes;
    if (p.instruction_text === null || attributes === null || attributes.length === 0) continue;
    const price = prices.get(p.asin) ?? 100;
    const bounds = PRICE_RANGE.filter((x) => x > price).slice(0, 4);
    let price_upper = NO_PRICE_BOUND;
    let priceText = "";
    if (bounds.length >= 2) {
      price_upper = Math.max(...rng.sample(bounds, 2));
      priceText = `, and price lower than ${price_upper.toFixed(2)} dollars`;
    }
    for (const goal_options of optionCombinations(p.options)) {
      const optionText = Object.entries(goal_options).map(([k, v]) => `${k}: ${v}`).join(
        ", and ",
      );
      goals.push({
        asin: p.asin,
        category: p.category,
        query: p.query,
        name: p.Title,
        product_category: p.product_category,
        instruction_text: `${p.instruction_text}${
          optionText ? ` with ${optionText}` : ""
        }${priceText}`,
        attributes: [...attributes],
        price_upper,
        goal_options,
      });
    }
  }
  const counts = new Map<string, number>();
  for (const g of goals) for (const a of g.attributes) counts.set(a, (counts.get(a) ?? 0) + 1);
  return goals.map((g) => ({
    ...g,
    weight: g.attributes.reduce((s, a) => s + 1 / counts.get(a)!, 0) / g.attributes.length,
  }));
}

/** The text WebShop's search index holds for a product (its `documents.jsonl` contents). */
export function indexText(p: Pick<Product, "Title" | "Description" | "BulletPoints" | "options">) {
  const optionText = Object.entries(p.options).map(([name, values]) =>
    `${name}: ${values.join(", ")}`
  ).join(", and ");
  return [p.Title, p.Description, p.BulletPoints[0] ?? "", optionText].join(" ").toLowerCase();
}

/**
 * Builds a catalog from products: prices and goal price bounds drawn from a
 * CPython-compatible RNG seeded with `goalSeed`, then goals shuffled as WebShop's
 * `random.seed(233); random.shuffle(goals)` (the default seed 233 gives WebShop's order),
 * and the BM25 index over each product's `contents`.
 */
export function assembleCatalog(
  products: Product[],
  source: string,
  goalSeed: number,
): Catalog {
  const rng = new PyRandom(goalSeed);
  const prices = productPrices(products, rng);
  const goals = buildGoals(products, prices, rng);
  rng.seed(goalSeed);
  rng.shuffle(goals);
  const index = new Bm25Index(products.map((p) => ({ id: p.asin, text: p.contents })));
  return {
    source,
    products,
    byAsin: new Map(products.map((p) => [p.asin, p])),
    prices,
    goals,
    index,
  };
}

/**
 * The goals of a split, by index in the shuffled list: test 0-499, eval 500-1499,
 * train 1500+, or all of them.
 */
export function splitGoals(goals: readonly Goal[], split: "train" | "eval" | "test" | "all") {
  if (split === "all") return goals.slice();
  const [start, end] = GOAL_SPLITS[split];
  return goals.slice(start, end);
}
