/**
 * The catalog an environment uses, from its config: the synthetic catalog by default,
 * or WebShop's data files. Catalogs are built once per process and shared by every
 * environment with the same data settings (as WebShop shares one server).
 *
 * @module
 */
import type { WebShopConfig } from "./config.ts";
import { assembleCatalog } from "./goals.ts";
import { generateSyntheticProducts } from "./synthetic_catalog.ts";
import type { Catalog } from "./types.ts";
import { loadWebShopProducts, WebShopDataError } from "./webshop_data.ts";

/** Default size of the synthetic catalog. */
export const DEFAULT_SYNTHETIC_PRODUCTS = 2000;

const cache = new Map<string, Catalog>();

/** The data settings of a config that pick the catalog. */
export type CatalogSettings = Pick<
  WebShopConfig,
  | "file_path"
  | "products_file"
  | "documents_file"
  | "instructions_file"
  | "num_products"
  | "synthetic_seed"
  | "goal_seed"
>;

/**
 * The catalog for these settings, built on first use and then shared.
 *
 * @throws {WebShopDataError} for a missing or malformed file, or data that gives no goals.
 */
export function loadCatalog(settings: CatalogSettings): Catalog {
  const fp = settings.file_path;
  const isDocs = fp !== null && fp.toLowerCase().endsWith(".jsonl");
  const productsFile = settings.products_file ?? (fp !== null && !isDocs ? fp : null);
  const documentsFile = settings.documents_file ?? (isDocs ? fp : null);
  const real = productsFile !== null || documentsFile !== null;
  const key = JSON.stringify(
    real
      ? [
        "files",
        productsFile,
        documentsFile,
        settings.instructions_file,
        settings.num_products,
        settings.goal_seed,
      ]
      : ["synthetic", settings.num_products, settings.synthetic_seed, settings.goal_seed],
  );
  const hit = cache.get(key);
  if (hit) return hit;
  let catalog: Catalog;
  if (real) {
    const products = loadWebShopProducts({
      productsFile,
      documentsFile,
      instructionsFile: settings.instructions_file,
      numProducts: settings.num_products,
    });
    const source = [productsFile ?? documentsFile, settings.instructions_file].filter((x) =>
      x !== null
    ).join(" + ");
    catalog = assembleCatalog(products, source, settings.goal_seed);
    if (catalog.goals.length === 0) {
      throw new WebShopDataError(
        `WebShop data '${source}' gives no goals: no product carries an instruction with instruction_attributes${
          settings.instructions_file === null ? "; give instructions_file (items_ins_v2*.json)" : ""
        }`,
      );
    }
  } else {
    const n = settings.num_products ?? DEFAULT_SYNTHETIC_PRODUCTS;
    const products = generateSyntheticProducts({ numProducts: n, seed: settings.synthetic_seed });
    catalog = assembleCatalog(
      products,
      `synthetic(seed=${settings.synthetic_seed}, n=${n})`,
      settings.goal_seed,
    );
    if (catalog.goals.length === 0) {
      throw new WebShopDataError(
        `Synthetic WebShop catalog of ${n} products gives no goals: use more products (num_products)`,
      );
    }
  }
  cache.set(key, catalog);
  return catalog;
}

/** Forgets every shared catalog (the next environment rebuilds its catalog). */
export function clearCatalogCache(): void {
  cache.clear();
}
