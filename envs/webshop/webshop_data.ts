/**
 * Loads WebShop's real data files into products the way its `load_products` does:
 * a products file (`items_shuffle*.json`, a JSON list in the scraped schema) or a
 * documents file (`documents*.jsonl`, `{id, contents, product}` per line), plus the
 * attribute and instruction file (`items_ins_v2*.json`, `{asin: {attributes,
 * instruction?, instruction_attributes?}}`).
 *
 * @module
 */
import { EnvConfigError } from "../errors.ts";
import { indexText } from "./goals.ts";
import type { Product } from "./types.ts";

/**
 * A data file that is missing, unreadable or not in the expected shape (a user's
 * mistake: the CLI prints it without a stack trace).
 */
export class WebShopDataError extends EnvConfigError {
  /** Builds the error; the message names the file and what was expected. */
  constructor(message: string) {
    super(message);
    this.name = "WebShopDataError";
  }
}

/** Which files to load; paths are relative to the working directory. */
export interface WebShopDataFiles {
  /** `items_shuffle*.json`: a JSON list of scraped products. */
  productsFile?: string | null | undefined;
  /** `documents*.jsonl`: one `{id, contents, product}` object per line. */
  documentsFile?: string | null | undefined;
  /** `items_ins_v2*.json`: attributes and instructions by ASIN. */
  instructionsFile?: string | null | undefined;
  /** Keep only the first N products of the file (as WebShop's `num_products`). */
  numProducts?: number | null | undefined;
}

const PRODUCTS_EXPECTED = "WebShop's items_shuffle*.json: a JSON list of product objects";
const DOCUMENTS_EXPECTED =
  'WebShop\'s documents.jsonl: one JSON object {"id", "contents", "product"} per line';
const INSTRUCTIONS_EXPECTED =
  'WebShop\'s items_ins_v2*.json: a JSON object {ASIN: {"attributes": [...], "instruction"?: str, "instruction_attributes"?: [...]}}';

function kindOf(value: unknown): string {
  if (value === undefined) return "missing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function readText(path: string, role: string, expected: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).message;
    throw new WebShopDataError(
      `WebShop ${role} '${path}' could not be read (${why}); expected ${expected}`,
    );
  }
}

function parseJson(text: string, path: string, role: string, expected: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new WebShopDataError(
      `WebShop ${role} '${path}' is not valid JSON (${(e as Error).message}); expected ${expected}`,
    );
  }
}

/** A raw product with the file position used in messages, and its indexed text if given. */
interface RawEntry {
  raw: Record<string, unknown>;
  where: string;
  contents?: string;
}

function readProductsFile(path: string): RawEntry[] {
  const data = parseJson(
    readText(path, "products_file", PRODUCTS_EXPECTED),
    path,
    "products_file",
    PRODUCTS_EXPECTED,
  );
  if (!Array.isArray(data)) {
    throw new WebShopDataError(
      `WebShop products_file '${path}' holds ${kindOf(data)}; expected ${PRODUCTS_EXPECTED}`,
    );
  }
  return data.map((raw, i) => {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      throw new WebShopDataError(
        `WebShop products_file '${path}': item ${i} is ${kindOf(raw)}; expected a product object`,
      );
    }
    return { raw: raw as Record<string, unknown>, where: `${path} item ${i}` };
  });
}

function readDocumentsFile(path: string): RawEntry[] {
  const lines = readText(path, "documents_file", DOCUMENTS_EXPECTED).split("\n");
  const entries: RawEntry[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    const where = `${path} line ${i + 1}`;
    let doc: unknown;
    try {
      doc = JSON.parse(line);
    } catch (e) {
      throw new WebShopDataError(
        `WebShop documents_file '${path}': line ${i + 1} is not valid JSON (${
          (e as Error).message
        }); expected ${DOCUMENTS_EXPECTED}`,
      );
    }
    const product = (doc as { product?: unknown } | null)?.product;
    if (
      doc === null || typeof doc !== "object" || product === null || typeof product !== "object" ||
      Array.isArray(product)
    ) {
      throw new WebShopDataError(
        `WebShop documents_file '${path}': line ${
          i + 1
        } has no "product" object; expected ${DOCUMENTS_EXPECTED}`,
      );
    }
    const contents = (doc as { contents?: unknown }).contents;
    entries.push({
      raw: product as Record<string, unknown>,
      where,
      ...(typeof contents === "string" ? { contents } : {}),
    });
  });
  return entries;
}

interface InstructionEntry {
  attributes?: string[];
  instruction?: string;
  instruction_attributes?: string[];
}

function isStringList(x: unknown): x is string[] {
  return Array.isArray(x) && x.every((s) => typeof s === "string");
}

function readInstructionsFile(path: string): Map<string, InstructionEntry> {
  const data = parseJson(
    readText(path, "instructions_file", INSTRUCTIONS_EXPECTED),
    path,
    "instructions_file",
    INSTRUCTIONS_EXPECTED,
  );
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new WebShopDataError(
      `WebShop instructions_file '${path}' holds ${
        kindOf(data)
      }; expected ${INSTRUCTIONS_EXPECTED}`,
    );
  }
  const out = new Map<string, InstructionEntry>();
  for (const [asin, entry] of Object.entries(data)) {
    const e = entry as Record<string, unknown> | null;
    const bad = (field: string, want: string) =>
      new WebShopDataError(
        `WebShop instructions_file '${path}': entry ${asin} field "${field}" is ${
          kindOf(e?.[field])
        }; expected ${want}`,
      );
    if (e === null || typeof e !== "object" || Array.isArray(e)) {
      throw new WebShopDataError(
        `WebShop instructions_file '${path}': entry ${asin} is ${kindOf(e)}; expected an object`,
      );
    }
    if (e.attributes !== undefined && !isStringList(e.attributes)) {
      throw bad("attributes", "a list of strings");
    }
    if (
      e.instruction !== undefined && e.instruction !== null && typeof e.instruction !== "string"
    ) {
      throw bad("instruction", "a string");
    }
    if (
      e.instruction_attributes !== undefined && e.instruction_attributes !== null &&
      !isStringList(e.instruction_attributes)
    ) {
      throw bad("instruction_attributes", "a list of strings");
    }
    out.set(asin, {
      ...(e.attributes !== undefined ? { attributes: e.attributes as string[] } : {}),
      ...(typeof e.instruction === "string" ? { instruction: e.instruction } : {}),
      ...(isStringList(e.instruction_attributes)
        ? { instruction_attributes: e.instruction_attributes }
        : {}),
    });
  }
  return out;
}

/** Python's `str(float)` for the price tag: `20.0`, `19.99`. */
function pyFloat(x: number): string {
  return Number.isInteger(x) ? `${x}.0` : String(x);
}

/** Parses WebShop's scraped pricing: a `$`-separated string, or an already parsed list. */
function parsePricing(value: unknown, where: string): number[] {
  if (value === undefined || value === null || value === "") return [];
  if (typeof value === "string") {
    const out: number[] = [];
    for (const part of value.split("$").slice(1)) {
      const digits = part.replace(/[^\d.]/g, "");
      const x = Number(digits);
      if (digits !== "" && Number.isFinite(x)) out.push(x);
    }
    return out.slice(0, 2);
  }
  if (Array.isArray(value)) {
    const bad = value.findIndex((x) => typeof x !== "number" || !Number.isFinite(x));
    if (bad < 0) return (value as number[]).slice(0, 2);
    throw new WebShopDataError(
      `${where}: "pricing"[${bad}] is ${kindOf(value[bad])}; expected a finite number`,
    );
  }
  throw new WebShopDataError(
    `${where}: "pricing" is ${
      kindOf(value)
    }; expected a "$12.99 - $15.99" string or a list of numbers`,
  );
}

/** WebShop's option processing: lower-case names; values trimmed, `/` → ` | `, lower case. */
function parseOptions(raw: Record<string, unknown>, where: string): Record<string, string[]> {
  const custom = raw.customization_options;
  const options: Record<string, string[]> = {};
  if (custom !== undefined && custom !== null && custom !== "") {
    if (typeof custom !== "object" || Array.isArray(custom)) {
      throw new WebShopDataError(
        `${where}: "customization_options" is ${
          kindOf(custom)
        }; expected an object {name: [{value}]} or ""`,
      );
    }
    for (const [name, contents] of Object.entries(custom)) {
      if (contents === null || contents === undefined) continue;
      if (!Array.isArray(contents)) {
        throw new WebShopDataError(
          `${where}: customization option "${name}" is ${
            kindOf(contents)
          }; expected a list of {value} objects`,
        );
      }
      options[name.toLowerCase()] = contents.map((c, i) => {
        const v = (c as { value?: unknown } | null)?.value;
        if (typeof v !== "string") {
          throw new WebShopDataError(
            `${where}: customization option "${name}" entry ${i} has no string "value"`,
          );
        }
        return v.trim().replaceAll("/", " | ").toLowerCase();
      });
    }
    return options;
  }
  // A processed product (as in documents.jsonl) may carry only its parsed options.
  const parsed = raw.options;
  if (
    parsed !== undefined && parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
  ) {
    for (const [name, values] of Object.entries(parsed)) {
      if (!isStringList(values)) {
        throw new WebShopDataError(
          `${where}: option "${name}" is ${kindOf(values)}; expected a list of strings`,
        );
      }
      options[name.toLowerCase()] = values.map((v) => v.toLowerCase());
    }
  }
  return options;
}

function requireString(raw: Record<string, unknown>, key: string, where: string): string {
  const v = raw[key];
  if (typeof v !== "string") {
    throw new WebShopDataError(`${where}: "${key}" is ${kindOf(v)}; expected a string`);
  }
  return v;
}

function optionalString(raw: Record<string, unknown>, key: string, where: string): string {
  const v = raw[key];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") {
    throw new WebShopDataError(`${where}: "${key}" is ${kindOf(v)}; expected a string`);
  }
  return v;
}

/**
 * Loads products (and their instructions) from WebShop data files, skipping ASINs that
 * are `nan`, longer than 10 characters or repeated, as WebShop does.
 *
 * @example
 * ```ts ignore
 * import { loadWebShopProducts } from "./webshop_data.ts";
 * const products = loadWebShopProducts({
 *   documentsFile: "../shared/data/webshop/documents_100.jsonl",
 *   instructionsFile: "../shared/data/webshop/items_ins_v2_1000.json",
 * });
 * console.log(products.length); // 100
 * ```
 *
 * @throws {WebShopDataError} naming the file (and item) and what was expected.
 */
export function loadWebShopProducts(files: WebShopDataFiles): Product[] {
  const { productsFile, documentsFile, instructionsFile, numProducts } = files;
  if ((productsFile ?? null) === null && (documentsFile ?? null) === null) {
    throw new WebShopDataError(
      "WebShop data: give a products file (items_shuffle*.json) or a documents file (documents.jsonl)",
    );
  }
  let entries = productsFile ? readProductsFile(productsFile) : readDocumentsFile(documentsFile!);
  if (numProducts !== undefined && numProducts !== null) entries = entries.slice(0, numProducts);
  const instructions = instructionsFile ? readInstructionsFile(instructionsFile) : null;
  const seen = new Set<string>();
  const products: Product[] = [];
  for (const { raw, where, contents } of entries) {
    const asin = requireString(raw, "asin", where);
    if (asin === "nan" || asin.length > 10 || seen.has(asin)) continue;
    seen.add(asin);
    const at = `${where} (asin ${asin})`;
    const name = requireString(raw, "name", at);
    const small = raw.small_description ?? raw.BulletPoints;
    let bullets: string[];
    if (small === undefined || small === null) bullets = [];
    else if (typeof small === "string") bullets = [small];
    else if (isStringList(small)) bullets = small;
    else {
      throw new WebShopDataError(
        `${at}: "small_description" is ${kindOf(small)}; expected a string or a list of strings`,
      );
    }
    const pricing = parsePricing(raw.pricing, at);
    const Price = pricing.length === 0
      ? "$100.0"
      : pricing.length === 1
      ? `$${pyFloat(pricing[0]!)}`
      : `$${pyFloat(pricing[0]!)} to $${pyFloat(pricing[1]!)}`;
    const options = parseOptions(raw, at);
    const info = instructions?.get(asin);
    let Attributes: string[];
    if (info?.attributes !== undefined) Attributes = info.attributes;
    else if (instructions === null && isStringList(raw.Attributes)) Attributes = raw.Attributes;
    else Attributes = ["DUMMY_ATTR"];
    const instruction_text = instructions === null
      ? (typeof raw.instruction_text === "string" ? raw.instruction_text : null)
      : info?.instruction ?? null;
    const instruction_attributes = instructions === null
      ? (isStringList(raw.instruction_attributes) ? raw.instruction_attributes : null)
      : info?.instruction_attributes ?? null;
    const product: Product = {
      asin,
      name,
      Title: name,
      Description: optionalString(raw, "full_description", at),
      BulletPoints: bullets,
      Price,
      pricing: pricing.length === 0 ? [100] : pricing,
      options,
      Attributes,
      Reviews: [],
      Rating: "N.A.",
      category: requireString(raw, "category", at),
      query: requireString(raw, "query", at).toLowerCase().trim(),
      product_category: optionalString(raw, "product_category", at),
      instruction_text,
      instruction_attributes,
      contents: "",
    };
    product.contents = contents ?? indexText(product);
    products.push(product);
  }
  if (products.length === 0) {
    throw new WebShopDataError(`WebShop data '${productsFile ?? documentsFile}' holds no products`);
  }
  return products;
}
