/**
 * The WebShop `env_config` schema: every key with its default, validated with zod
 * (unknown keys are errors), and {@linkcode parseWebShopConfig} that turns zod issues
 * into one readable error.
 *
 * @module
 */
import { z } from "npm:zod@4.6.7";
import { ActionParser } from "../action_parser.ts";
import { commonConfigShape } from "../config_fields.ts";
import { EnvConfigError } from "../errors.ts";

const nonNegative = z.number().refine(Number.isFinite, "expected a finite number").check(
  z.nonnegative(),
);
const positiveMs = z.number().refine(Number.isFinite, "expected a finite number").check(
  z.positive(),
);
const capAndSeed = {
  /** Upper bound on one delay in milliseconds (no bound when absent). */
  cap_ms: positiveMs.optional(),
  /** Seed of the delay RNG (each episode draws its delays from this seed and its reset seed). */
  seed: z.number().int().default(0),
};

/**
 * A random per-step delay, for benchmarking asynchronous rollout against slow
 * environments: `fixed` (`ms`), `lognormal` (`median_ms`, `sigma`: delay =
 * median x exp(sigma x N(0,1))) or `pareto` (`scale_ms` = the minimum, `alpha` = the
 * tail index: delay = scale / U^(1/alpha)).
 */
export const StepDelayConfig = z.discriminatedUnion("distribution", [
  z.strictObject({ distribution: z.literal("fixed"), ms: nonNegative, ...capAndSeed }),
  z.strictObject({
    distribution: z.literal("lognormal"),
    median_ms: positiveMs,
    sigma: nonNegative,
    ...capAndSeed,
  }),
  z.strictObject({
    distribution: z.literal("pareto"),
    scale_ms: positiveMs,
    alpha: positiveMs,
    ...capAndSeed,
  }),
]);

/** A validated step delay. */
export type StepDelayConfig = z.output<typeof StepDelayConfig>;

const path = z.string().min(1).nullable().default(null);

/**
 * The WebShop environment's `env_config`. Catalog: the built-in synthetic catalog
 * unless a data file is given (`products_file` / `documents_file`, or ROLL's
 * `file_path`, with `instructions_file` for the goals).
 */
export const WebShopConfig = z.strictObject({
  ...commonConfigShape,
  /** Only `text` (WebShop's simple text mode) is implemented. */
  observation_mode: z.string().default("text"),
  /** Steps before the episode is truncated (ROLL's WebShop default 10). */
  max_steps: z.number().int().positive().default(10),
  /** ROLL's data path: a products JSON list (`items_shuffle*.json`) or a `.jsonl` documents file. */
  file_path: path,
  /** A products file in WebShop's scraped schema (`items_shuffle*.json`: a JSON list). */
  products_file: path,
  /** WebShop's attribute and instruction file (`items_ins_v2*.json`: `{asin: {...}}`). */
  instructions_file: path,
  /** WebShop's search documents (`documents.jsonl`: `{id, contents, product}` per line). */
  documents_file: path,
  /** Synthetic catalog size (default 2000), or the first N products of a data file. */
  num_products: z.number().int().positive().nullable().default(null),
  /** Seed of the synthetic catalog. */
  synthetic_seed: z.number().int().default(0),
  /** Seed of the goal prices and the goal shuffle (WebShop's 233). */
  goal_seed: z.number().int().default(233),
  /** Goal split by index: test 0-499, eval 500-1499, train 1500+, or all goals. */
  split: z.enum(["train", "eval", "test", "all"]).default("train"),
  /** Use only the first N goals of the split; -1 means all. */
  limit_goals: z.number().int().min(-1).default(-1),
  /** Human-written goals need WebShop's full data; only false is accepted. */
  human_goals: z.boolean().default(false),
  /** Show the `Attributes` sub-page button on item pages. */
  show_attrs: z.boolean().default(false),
  /** A fixed delay per step in milliseconds (step() becomes async when > 0). */
  step_delay_ms: nonNegative.default(0),
  /** A random delay per step (step() becomes async). */
  step_delay: StepDelayConfig.nullable().default(null),
  /** ROLL passes `server: null`; a shared server object cannot be given here. */
  server: z.null({
    error: "expected null: a WebShop server object cannot be given (catalogs are shared " +
      "between environments automatically)",
  }).optional(),
  /** ROLL passes `filter_goals: null`; a Python filter cannot be given here. */
  filter_goals: z.null({
    error: "expected null: a goal filter function cannot be given (use split and limit_goals)",
  }).optional(),
}).superRefine((c, ctx) => {
  if (c.observation_mode !== "text") {
    ctx.addIssue({
      code: "custom",
      path: ["observation_mode"],
      input: c.observation_mode,
      message: `${
        JSON.stringify(c.observation_mode)
      } is not supported: only "text" (WebShop's simple text mode) is implemented`,
    });
  }
  if (c.human_goals) {
    ctx.addIssue({
      code: "custom",
      path: ["human_goals"],
      input: true,
      message:
        "true is not supported: human goals need WebShop's full data (items_human_ins.json, 12,087 human goals); use human_goals: false (goals made from the products' instructions)",
    });
  }
  try {
    new ActionParser({ actionPattern: c.action_pattern, specialTokens: c.special_token_list });
  } catch (e) {
    ctx.addIssue({
      code: "custom",
      path: ["action_pattern"],
      input: c.action_pattern,
      message: (e as Error).message,
    });
  }
  if (c.file_path !== null && (c.products_file !== null || c.documents_file !== null)) {
    ctx.addIssue({
      code: "custom",
      path: ["file_path"],
      input: c.file_path,
      message:
        "file_path (ROLL's name) and products_file/documents_file both give the products: give only one",
    });
  }
  if (c.products_file !== null && c.documents_file !== null) {
    ctx.addIssue({
      code: "custom",
      path: ["documents_file"],
      input: c.documents_file,
      message: "products_file and documents_file both give the products: give only one",
    });
  }
  const hasProducts = c.file_path !== null || c.products_file !== null ||
    c.documents_file !== null;
  if (c.instructions_file !== null && !hasProducts) {
    ctx.addIssue({
      code: "custom",
      path: ["instructions_file"],
      input: c.instructions_file,
      message:
        "instructions_file was given without products: also give products_file (items_shuffle*.json) or documents_file (documents.jsonl)",
    });
  }
  if (c.step_delay_ms > 0 && c.step_delay !== null) {
    ctx.addIssue({
      code: "custom",
      path: ["step_delay"],
      input: c.step_delay,
      message: "step_delay_ms and step_delay both set a delay: give only one",
    });
  }
});

/** A validated WebShop `env_config` with every default filled in. */
export type WebShopConfig = z.output<typeof WebShopConfig>;

/** A WebShop `env_config` that failed validation; `issues` lists each problem. */
export class WebShopConfigError extends EnvConfigError {
  /** One line per problem: `key: message (found ...)`. */
  readonly issues: string[];

  /** Builds the error from its issue lines. */
  constructor(issues: string[]) {
    super(`Invalid WebShop env_config:\n  ${issues.join("\n  ")}`);
    this.name = "WebShopConfigError";
    this.issues = issues;
  }
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (typeof value === "object") return "a mapping";
  const text = typeof value === "string" ? JSON.stringify(value) : String(value);
  return `${text.length > 60 ? `${text.slice(0, 57)}...` : text} (${typeof value})`;
}

/**
 * Validates a raw `env_config` (null or undefined mean `{}`) and fills in defaults.
 *
 * @example
 * ```ts
 * import { parseWebShopConfig } from "./config.ts";
 * const c = parseWebShopConfig({ max_steps: 15, split: "test" });
 * console.log(c.max_steps, c.split, c.observation_mode); // 15 test text
 * ```
 *
 * @throws {WebShopConfigError} naming each bad key, what was found and what was expected.
 */
export function parseWebShopConfig(raw: unknown): WebShopConfig {
  const input = raw === null || raw === undefined ? {} : raw;
  const result = WebShopConfig.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    const key = issue.path.length === 0 ? "(env_config)" : issue.path.map(String).join(".");
    if (issue.code === "unrecognized_keys") {
      return `${key}: unknown key(s) ${
        issue.keys.map((k) => `'${k}'`).join(", ")
      }; expected keys of the WebShop env_config: ${Object.keys(WebShopConfig.shape).join(", ")}`;
    }
    if (issue.code === "custom") return `${key}: ${issue.message}`;
    const found = describe((issue as { input?: unknown }).input);
    return `${key}: ${issue.message} (found ${found})`;
  });
  throw new WebShopConfigError(lines);
}
