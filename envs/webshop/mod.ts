/**
 * WebShop (text mode): a simulated web store where an agent searches, browses and buys
 * the product an instruction describes, rewarded as in WebShop (Yao et al., 2022).
 * The built-in catalog is synthetic (deterministic by seed); WebShop's real data files
 * can be loaded instead (`products_file` / `documents_file` + `instructions_file`).
 *
 * @example
 * ```ts
 * import { createWebShopEnv, webshopOracleAction } from "./mod.ts";
 * const env = createWebShopEnv({ num_products: 500, split: "test" });
 * const { observation } = env.reset(0);
 * console.log(observation); // WebShop [SEP] Instruction: [SEP] Find me ... [SEP] Search
 * const r = await env.step("<answer>search[gluten free snack nuts]</answer>");
 * console.log(r.observation.split("\n")[1]); // Available actions: click[back to search], ...
 * await env.step(webshopOracleAction(env)); // the scripted policy's next move
 * ```
 *
 * @module
 */
export {
  parseWebShopConfig,
  StepDelayConfig,
  WebShopConfig,
  WebShopConfigError,
} from "./config.ts";
export {
  createWebShopEnv,
  DEFAULT_ENV_INSTRUCTION,
  WebShopEnv,
  webshopOracleAction,
} from "./env.ts";
export { oracleCommand, type OracleOptions, type OracleView } from "./oracle.ts";
export { parseCommand, type WebShopCommand } from "./command.ts";
export { clearCatalogCache, loadCatalog } from "./catalog.ts";
export { loadWebShopProducts, WebShopDataError, type WebShopDataFiles } from "./webshop_data.ts";
export { generateSyntheticProducts, type SyntheticCatalogOptions } from "./synthetic_catalog.ts";
export { assembleCatalog, buildGoals, GOAL_SPLITS, PRICE_RANGE, splitGoals } from "./goals.ts";
export {
  attributeMatches,
  computeReward,
  optionMatches,
  type RewardInfo,
  typeReward,
  typeWords,
} from "./reward.ts";
export { fuzzyMatch, processText, ratio, tokenSetRatio } from "./fuzzy.ts";
export { analyze, Bm25Index, type SearchHit } from "./bm25.ts";
export type { Catalog, Goal, Product, Review } from "./types.ts";
export type { PageState } from "./pages.ts";
