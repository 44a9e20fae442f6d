/**
 * A synthetic WebShop catalog, deterministic by seed, in WebShop's product schema:
 * products of five categories with brands, titles, descriptions, bullet points,
 * attributes, option groups and prices, and for about half of them an instruction in
 * the style of WebShop's `items_ins_v2` ("Find me sulfate free shampoo & conditioner
 * with coconut oil for damaged hair"), from which goals are made as WebShop does.
 *
 * @module
 */
import { indexText } from "./goals.ts";
import { PyRandom } from "./rng.ts";
import {
  BRAND_HEADS,
  BRAND_TAILS,
  CATEGORIES,
  DESCRIPTION_TEMPLATES,
  REVIEW_BODIES,
  REVIEW_TITLES,
} from "./synthetic_vocab.ts";
import type { Product, Review } from "./types.ts";

/** Options of the synthetic generator. */
export interface SyntheticCatalogOptions {
  /** Number of products (default 2000). */
  numProducts?: number;
  /** Seed (default 0). */
  seed?: number;
  /** Share of products that carry an instruction and so give goals (default 0.5). */
  instructionShare?: number;
}

const ASIN_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

function titleCase(text: string): string {
  return text.replace(/\b[a-z]/g, (c) => c.toUpperCase());
}

/** A random ordered subset of `items` with between `min` and `max` elements. */
function subset<T>(rng: PyRandom, items: readonly T[], min: number, max: number): T[] {
  const k = rng.randint(Math.min(min, items.length), Math.min(max, items.length));
  const picked = new Set<number>();
  while (picked.size < k) picked.add(rng.randbelow(items.length));
  return [...picked].sort((a, b) => a - b).map((i) => items[i]!);
}

function roundPrice(rng: PyRandom, x: number): number {
  const cents = rng.choice([0.99, 0.49, 0.95, 0.0]);
  return Math.max(1, Math.floor(x)) + cents;
}

/** Python's `str(float)` for the price tag. */
function pyFloat(x: number): string {
  const r = Math.round(x * 100) / 100;
  return Number.isInteger(r) ? `${r}.0` : String(r);
}

/**
 * Makes the synthetic products (goals come from {@linkcode assembleCatalog}).
 *
 * @example
 * ```ts
 * import { generateSyntheticProducts } from "./synthetic_catalog.ts";
 * const a = generateSyntheticProducts({ numProducts: 50, seed: 1 });
 * const b = generateSyntheticProducts({ numProducts: 50, seed: 1 });
 * console.log(a.length, JSON.stringify(a) === JSON.stringify(b)); // 50 true
 * ```
 */
export function generateSyntheticProducts(options: SyntheticCatalogOptions = {}): Product[] {
  const n = options.numProducts ?? 2000;
  const seed = options.seed ?? 0;
  const share = options.instructionShare ?? 0.5;
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`Synthetic catalog: numProducts = ${n}, expected a positive integer`);
  }
  const rng = new PyRandom(seed);
  const asins = new Set<string>();
  const products: Product[] = [];
  for (let i = 0; i < n; i++) {
    const cat = rng.choice(CATEGORIES);
    const type = rng.choice(cat.types);
    let asin: string;
    do {
      asin = "B0" + Array.from({ length: 8 }, () => rng.choice([...ASIN_CHARS])).join("");
    } while (asins.has(asin));
    asins.add(asin);
    const brand = rng.choice(BRAND_HEADS) + rng.choice(BRAND_TAILS);
    const noun = rng.choice(type.nouns);
    const pre = subset(rng, cat.attributes.pre, 1, 2);
    const withs = subset(rng, cat.attributes.with, 1, 2);
    const fors = subset(rng, cat.attributes.for, 0, 1);
    const attributes = [...pre, ...withs, ...fors];

    // Title: brand, maybe a leading attribute, the noun, maybe "with ..." and "for ...".
    const parts = [brand];
    if (rng.random() < 0.6) parts.push(titleCase(pre[0]!));
    parts.push(noun);
    if (rng.random() < 0.5) parts.push(`with ${titleCase(withs[0]!)}`);
    if (fors.length > 0 && rng.random() < 0.5) parts.push(`for ${titleCase(fors[0]!)}`);
    const title = parts.join(" ");

    const description = subset(rng, DESCRIPTION_TEMPLATES, 2, 3).map((t) =>
      t.replaceAll("{brand}", brand).replaceAll("{noun}", noun.toLowerCase()).replaceAll(
        "{attr}",
        rng.choice(attributes),
      )
    ).join(" ");
    const bullets = attributes.map((a) =>
      `${a.toUpperCase()}: ${
        rng.choice([
          "designed for comfort and durability",
          "a detail our customers love",
          "checked by our quality team",
          "built to last",
        ])
      }.`
    );
    if (rng.random() < 0.5) bullets.push(`Package includes: 1 x ${noun.toLowerCase()}.`);

    const productOptions: Record<string, string[]> = {};
    if (rng.random() < 0.85) {
      for (const group of type.options) {
        if (rng.random() < 0.8) productOptions[group.name] = subset(rng, group.values, 2, 5);
      }
    }

    const [lo, hi] = type.price;
    const p0 = roundPrice(rng, rng.uniform(lo, hi));
    const pricing = rng.random() < 0.2 ? [p0, roundPrice(rng, p0 * rng.uniform(1.2, 1.6))] : [p0];
    const Price = pricing.length === 1
      ? `$${pyFloat(pricing[0]!)}`
      : `$${pyFloat(pricing[0]!)} to $${pyFloat(pricing[1]!)}`;

    const reviews: Review[] = Array.from({ length: rng.randint(0, 2) }, () => ({
      title: rng.choice(REVIEW_TITLES),
      score: rng.randint(3, 5),
      body: rng.choice(REVIEW_BODIES),
    }));
    const rating = reviews.length === 0
      ? "N.A."
      : (reviews.reduce((s, r) => s + r.score, 0) / reviews.length).toFixed(1);

    let instruction_text: string | null = null;
    let instruction_attributes: string[] | null = null;
    if (rng.random() < share) {
      const ip = subset(rng, pre, 1, pre.length);
      const iw = subset(rng, withs, 0, withs.length);
      const iff = subset(rng, fors, 0, fors.length);
      instruction_attributes = [...ip, ...iw, ...iff];
      instruction_text = `Find me ${ip.join(", ")} ${type.query}` +
        (iw.length ? ` with ${iw.join(", ")}` : "") + (iff.length ? ` for ${iff.join(", ")}` : "");
    }

    const product: Product = {
      asin,
      name: title,
      Title: title,
      Description: description,
      BulletPoints: bullets,
      Price,
      pricing,
      options: productOptions,
      Attributes: attributes,
      Reviews: reviews,
      Rating: rating,
      category: cat.category,
      query: type.query,
      product_category: type.product_category,
      instruction_text,
      instruction_attributes,
      contents: "",
    };
    product.contents = indexText(product);
    products.push(product);
  }
  return products;
}
