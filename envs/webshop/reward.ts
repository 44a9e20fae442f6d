/**
 * WebShop's purchase reward (`get_reward` in its goal.py):
 *
 *     r = r_type · (#attribute matches + #option matches + 1[price ≤ price_upper])
 *               / (|goal attributes| + |goal options| + 1)
 *
 * - attribute match: token-set ratio > 85 against one of the product's `Attributes`, or
 *   the goal attribute is a substring of the lower-cased title, bullet points (joined by
 *   spaces) or description;
 * - option match: token-set ratio > 85 between a chosen option value (color-normalized)
 *   and the goal option (normalized as WebShop does, see {@linkcode normalizeGoalOption});
 * - r_type = 1, lowered to 0.5 when neither the queries are equal, nor >= 2 category
 *   levels are shared, nor the title score is > 0.2; 0.1 when the title score is < 0.1;
 *   0 when it is 0. Title score = |type words(purchased name) ∩ type words(goal name)| /
 *   |type words(goal name)| (0.2 when the goal name has none).
 *
 * Type words: WebShop keeps the nouns and proper nouns spaCy tags in a name. We have no
 * tagger; {@linkcode typeWords} approximates them by the name's lower-case content words
 * (letters-only tokens of two or more letters, without function words and
 * frequent shopping adjectives). The approximation only changes r_type for products of
 * another type than the goal's.
 *
 * @module
 */
import { fuzzyMatch } from "./fuzzy.ts";
import { normalizeColor, normalizeGoalOption } from "./normalize.ts";
import type { Goal, Product } from "./types.ts";

/** Words never counted as type words: function words and frequent product adjectives. */
const NON_TYPE_WORDS: ReadonlySet<string> = new Set(
  ("a an and are as at be but by for from if in into is it its no not of on or such that the " +
    "their then there these they this to was will with without your you our we my all " +
    "new best premium high low great perfect extra super ultra large small mini big long " +
    "short soft hard heavy easy free natural organic original pure classic portable " +
    "professional").split(" "),
);

/**
 * The type words of a product name (see the module docs), as a set.
 *
 * @example
 * ```ts
 * import { typeWords } from "./reward.ts";
 * console.log([...typeWords("Premium Stainless Steel Water Bottle, 32 oz")]);
 * // ["stainless", "steel", "water", "bottle", "oz"]
 * ```
 */
export function typeWords(name: string): Set<string> {
  const words = new Set<string>();
  for (const m of name.toLowerCase().matchAll(/[a-z]+/g)) {
    const w = m[0];
    if (w.length >= 2 && !NON_TYPE_WORDS.has(w)) words.add(w);
  }
  return words;
}

/** The type reward and its parts. */
export interface TypeReward {
  r_type: number;
  query_match: boolean;
  category_match: boolean;
  title_score: number;
}

/** The product fields the reward reads. */
export type RewardProduct = Pick<
  Product,
  "name" | "Title" | "Description" | "BulletPoints" | "Attributes" | "query" | "product_category"
>;

/** The goal fields the reward reads. */
export type RewardGoal = Pick<
  Goal,
  "name" | "query" | "product_category" | "attributes" | "goal_options" | "price_upper"
>;

function categoryLevels(path: string): Set<string> {
  return new Set(path.split("›").map((x) => x.trim()));
}

/**
 * WebShop's `get_type_reward`.
 *
 * @example
 * ```ts
 * import { typeReward } from "./reward.ts";
 * const p = { name: "Red Running Shoes", query: "shoes", product_category: "A › B" };
 * console.log(typeReward(p, { ...p }).r_type); // 1
 * ```
 */
export function typeReward(
  purchased: Pick<Product, "name" | "query" | "product_category">,
  goal: Pick<Goal, "name" | "query" | "product_category">,
): TypeReward {
  const query_match = purchased.query === goal.query;
  const pc = categoryLevels(purchased.product_category);
  const gc = categoryLevels(goal.product_category);
  const category_match = [...pc].filter((x) => gc.has(x)).length >= 2;
  const pw = typeWords(purchased.name);
  const gw = typeWords(goal.name);
  const title_score = gw.size === 0 ? 0.2 : [...gw].filter((w) => pw.has(w)).length / gw.size;
  let r_type = 1.0;
  if (!(query_match || category_match || title_score > 0.2)) r_type = 0.5;
  if (title_score < 0.1) r_type = 0.1;
  if (title_score === 0) r_type = 0.0;
  return { r_type, query_match, category_match, title_score };
}

/**
 * How many goal attributes the product matches (WebShop's `get_attribute_reward`).
 *
 * @example
 * ```ts
 * import { attributeMatches } from "./reward.ts";
 * const p = { Attributes: ["machine wash"], Title: "Cotton Tee", BulletPoints: ["Short sleeve"], Description: "" };
 * console.log(attributeMatches(p, ["machine wash", "short sleeve", "long sleeve"])); // 2
 * ```
 */
export function attributeMatches(
  product: Pick<Product, "Attributes" | "Title" | "BulletPoints" | "Description">,
  goalAttributes: readonly string[],
): number {
  const title = product.Title.toLowerCase();
  const bullets = product.BulletPoints.join(" ").toLowerCase();
  const description = product.Description.toLowerCase();
  let n = 0;
  for (const g of goalAttributes) {
    if (product.Attributes.some((p) => fuzzyMatch(p, g))) n++;
    else if (title.includes(g) || bullets.includes(g) || description.includes(g)) n++;
  }
  return n;
}

/**
 * How many goal options the chosen options match (WebShop's `get_option_reward`).
 *
 * @example
 * ```ts
 * import { optionMatches } from "./reward.ts";
 * console.log(optionMatches({ color: "black", size: "large" }, { color: "black", size: "small" })); // 1
 * ```
 */
export function optionMatches(
  chosen: Readonly<Record<string, string>>,
  goalOptions: Readonly<Record<string, string>>,
): number {
  const purchased = Object.values(chosen).map(normalizeColor);
  let n = 0;
  for (const [name, value] of Object.entries(goalOptions)) {
    const g = normalizeGoalOption(name, value);
    if (purchased.some((p) => fuzzyMatch(p, g))) n++;
  }
  return n;
}

/** The reward and its parts (WebShop's verbose `reward_info`). */
export interface RewardInfo extends TypeReward {
  reward: number;
  attribute_matches: number;
  option_matches: number;
  price_ok: boolean;
  /** The formula's denominator: |attributes| + |options| + 1. */
  denominator: number;
}

/**
 * WebShop's purchase reward for buying `purchased` at `price` with `chosen` options.
 *
 * @example
 * ```ts
 * import { computeReward } from "./reward.ts";
 * const product = {
 *   name: "Cotton Tee", Title: "Cotton Tee", Description: "", BulletPoints: [],
 *   Attributes: ["machine wash"], query: "tees", product_category: "Fashion › Tops",
 * };
 * const goal = {
 *   name: "Cotton Tee", query: "tees", product_category: "Fashion › Tops",
 *   attributes: ["machine wash"], goal_options: { color: "black" }, price_upper: 20,
 * };
 * console.log(computeReward(product, goal, 15, { color: "black" }).reward); // 1
 * console.log(computeReward(product, goal, 25, { color: "white" }).reward); // 1/3
 * ```
 */
export function computeReward(
  purchased: RewardProduct,
  goal: RewardGoal,
  price: number,
  chosen: Readonly<Record<string, string>>,
): RewardInfo {
  const type = typeReward(purchased, goal);
  const price_ok = price <= goal.price_upper;
  const attribute_matches = attributeMatches(purchased, goal.attributes);
  const option_matches = optionMatches(chosen, goal.goal_options);
  const denominator = goal.attributes.length + Object.keys(goal.goal_options).length + 1;
  const reward = ((attribute_matches + option_matches + (price_ok ? 1 : 0)) / denominator) *
    type.r_type;
  return { ...type, reward, attribute_matches, option_matches, price_ok, denominator };
}
