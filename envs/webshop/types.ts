/**
 * WebShop's product and goal records, with WebShop's own field names (as its
 * `load_products` and `get_synthetic_goals` build them), and the loaded catalog.
 *
 * @module
 */
import type { Bm25Index } from "./bm25.ts";

/** One product review (WebShop's review page fields). */
export interface Review {
  title: string;
  score: number;
  body: string;
}

/** A product as WebShop's engine holds it after `load_products`. */
export interface Product {
  /** Amazon Standard Identification Number, upper case, at most 10 characters. */
  asin: string;
  /** The scraped product name (the type reward compares names). */
  name: string;
  /** The title shown on pages (equal to `name` in WebShop). */
  Title: string;
  /** The description sub-page's text. */
  Description: string;
  /** The features sub-page's bullet points. */
  BulletPoints: string[];
  /** The price tag shown: `$12.99` or `$12.99 to $15.99`. */
  Price: string;
  /** One price, or the low and high ends of a range. */
  pricing: number[];
  /** Option groups: lower-case option name → lower-case values, in page order. */
  options: Record<string, string[]>;
  /** Attribute phrases the reward matches goal attributes against. */
  Attributes: string[];
  /** Reviews (empty in WebShop's data). */
  Reviews: Review[];
  /** Average rating text (`N.A.` in WebShop's data). */
  Rating: string;
  /** Top category: beauty, fashion, garden, electronics, grocery. */
  category: string;
  /** The search query the product was scraped under (lower case). */
  query: string;
  /** The Amazon category path, levels joined by ` › `. */
  product_category: string;
  /** WebShop's instruction for this product, or null (no goals then). */
  instruction_text: string | null;
  /** The attributes the instruction asks for, or null. */
  instruction_attributes: string[] | null;
  /** The text the search engine indexes. */
  contents: string;
}

/** A shopping goal, as WebShop's `get_synthetic_goals` builds it. */
export interface Goal {
  /** The product the goal was made from. */
  asin: string;
  category: string;
  query: string;
  /** The target's title (the type reward compares it with the purchased product's name). */
  name: string;
  product_category: string;
  /** What the agent is told: instruction, options, price bound. */
  instruction_text: string;
  /** Attributes to match (the reward's attribute term). */
  attributes: string[];
  /** Upper price bound (1,000,000 when no bound was stated). */
  price_upper: number;
  /** Option name → wanted value. */
  goal_options: Record<string, string>;
  /** WebShop's sampling weight: mean over attributes of 1 / (goals with that attribute). */
  weight: number;
}

/** A loaded catalog: products, goals in WebShop's shuffled order, and the search index. */
export interface Catalog {
  /** Where it came from, for messages: `synthetic(seed=0, n=2000)` or the file paths. */
  source: string;
  products: Product[];
  byAsin: Map<string, Product>;
  /** The price each product is bought at (a range's price is drawn once, as WebShop). */
  prices: Map<string, number>;
  goals: Goal[];
  index: Bm25Index;
}
