// The WebShop environment on a small hand-made catalog (WebShop's scraped schema written to
// a temporary folder): page navigation with exact observations and action lists, purchase
// rewards worked by hand, action parsing, step limit, fuzzing, delays and rendering.
import { deepStrictEqual, equal, match, ok, throws } from "node:assert/strict";
import { THINK_ACTION_PATTERN } from "../../envs/action_parser.ts";
import type { StepResult } from "../../envs/types.ts";
import { createWebShopEnv, WebShopEnv, webshopOracleAction } from "../../envs/webshop/mod.ts";
import { delaySampler } from "../../envs/webshop/step_delay.ts";
import { drawTextCard } from "../../envs/webshop/text_card.ts";
import { PyRandom } from "../../envs/webshop/rng.ts";

const SHOE = {
  asin: "B000000001",
  name: "Red Running Shoes for Men",
  full_description: "Lightweight running shoes with a breathable mesh upper.",
  small_description: ["Rubber sole", "Mesh upper for airflow"],
  pricing: "$45.00",
  customization_options: {
    Size: [{ value: "9" }, { value: "10" }],
    Color: [{ value: "Red/Black" }, { value: "Blue" }],
  },
  category: "fashion",
  query: "Men's Running Shoes",
  product_category: "Clothing, Shoes & Jewelry › Men › Shoes › Athletic › Running",
  images: ["https://example.invalid/1.jpg"],
};

function trailShoe(i: number) {
  return {
    asin: `B0000000${String(i).padStart(2, "0")}`,
    name: `Trail Running Shoes Model ${String.fromCharCode(64 + i)}`,
    full_description: "Durable trail shoes.",
    small_description: "Grippy outsole",
    pricing: "$30.00 - $40.00",
    customization_options: "",
    category: "fashion",
    query: "trail running shoes",
    product_category: "Sports & Outdoors › Outdoor Recreation › Hiking",
    images: ["x"],
  };
}

const BOTTLE = {
  asin: "B000000013",
  name: "Stainless Steel Water Bottle",
  full_description: "Keeps drinks cold.",
  small_description: ["Leak proof lid"],
  pricing: "",
  customization_options: null,
  category: "garden",
  query: "water bottles",
  product_category: "Home & Kitchen › Kitchen & Dining › Water Bottles",
  images: ["x"],
};

const PRODUCTS = [SHOE, ...Array.from({ length: 11 }, (_, k) => trailShoe(k + 2)), BOTTLE];
const INSTRUCTIONS = {
  B000000001: {
    attributes: ["rubber sole", "lightweight", "mesh upper"],
    instruction: "Find me lightweight men's running shoes with rubber sole",
    instruction_attributes: ["lightweight", "rubber sole"],
  },
  B000000013: { attributes: ["leak proof"] },
};

const dir = Deno.makeTempDirSync({ prefix: "agentrl_webshop_" });
Deno.writeTextFileSync(`${dir}/items_shuffle_13.json`, JSON.stringify(PRODUCTS));
Deno.writeTextFileSync(`${dir}/items_ins_v2_13.json`, JSON.stringify(INSTRUCTIONS));
const FILES = {
  products_file: `${dir}/items_shuffle_13.json`,
  instructions_file: `${dir}/items_ins_v2_13.json`,
  split: "all",
};

function shopEnv(extra: Record<string, unknown> = {}): WebShopEnv {
  return createWebShopEnv({ ...FILES, ...extra });
}

function act(env: WebShopEnv, action: string): StepResult {
  const r = env.step(`<answer>${action}</answer>`);
  if (r instanceof Promise) throw new Error("expected a synchronous step");
  return r;
}

function actions(obs: string): string[] {
  const line = obs.split("\n").at(-1)!;
  ok(line.startsWith("Available actions: "), line);
  return line.slice("Available actions: ".length).split(", ");
}

/** The goal index whose options are `options`. */
function goalWith(env: WebShopEnv, options: Record<string, string>): number {
  const i = env.goals.findIndex((g) => JSON.stringify(g.goal_options) === JSON.stringify(options));
  ok(i >= 0);
  return i;
}

const ITEM_ACTIONS = [
  "click[back to search]",
  "click[< prev]",
  "click[description]",
  "click[features]",
  "click[reviews]",
  "click[buy now]",
  "click[9]",
  "click[10]",
  "click[red | black]",
  "click[blue]",
];

Deno.test("goals come from the product with an instruction, one per option combination", () => {
  const env = shopEnv();
  equal(env.catalog.products.length, 13);
  equal(env.goals.length, 4); // color {red | black, blue} x size {9, 10}
  const texts = env.goals.map((g) => g.instruction_text).sort();
  for (const t of texts) {
    match(
      t,
      /^Find me lightweight men's running shoes with rubber sole with color: (red \| black|blue), and size: (9|10), and price lower than (60|70|80)\.00 dollars$/,
    );
  }
  // The price bound is the larger of two of the four tens above the price (45): 60, 70 or 80.
  const upper = env.goals[0]!.price_upper;
  ok([60, 70, 80].includes(upper));
  ok(env.goals.every((g) => g.price_upper === upper && g.asin === "B000000001"));
  equal(env.catalog.byAsin.get("B000000013")!.Price, "$100.0"); // no pricing -> $100.0
  equal(env.catalog.byAsin.get("B000000002")!.Price, "$30.0 to $40.0");
  deepStrictEqual(env.catalog.byAsin.get("B000000001")!.options, {
    size: ["9", "10"],
    color: ["red | black", "blue"],
  });
});

Deno.test("navigation: search -> results -> item -> options -> sub-pages -> back -> buy", () => {
  const env = shopEnv({ max_steps: 50 });
  const idx = goalWith(env, { color: "red | black", size: "10" });
  const { observation, info } = env.reset(idx);
  const instr = env.goal.instruction_text;
  equal(info.goal_index, idx);
  equal(
    observation,
    `WebShop [SEP] Instruction: [SEP] ${instr} [SEP] Search\nAvailable actions: search[<content>]`,
  );

  let r = act(env, "search[Running Shoes]");
  equal(r.reward, 0);
  equal(r.info.metrics.action_is_valid, true);
  equal(r.info.metrics.action_is_effective, true);
  const page1 = [
    "b000000001",
    ...Array.from({ length: 9 }, (_, k) => `b0000000${String(k + 2).padStart(2, "0")}`),
  ];
  deepStrictEqual(actions(r.observation), [
    "click[back to search]",
    "click[next >]",
    ...page1.map((a) => `click[${a}]`),
  ]);
  ok(
    r.observation.startsWith(
      `Instruction: [SEP] ${instr} [SEP] Back to Search [SEP] Page 1 (Total results: 12) [SEP] Next > [SEP] B000000001 [SEP] Red Running Shoes for Men [SEP] $45.0 [SEP] B000000002 [SEP] Trail Running Shoes Model B [SEP] $30.0 to $40.0 [SEP] `,
    ),
    r.observation,
  );

  r = act(env, "click[next >]");
  deepStrictEqual(actions(r.observation), [
    "click[back to search]",
    "click[< prev]",
    "click[b000000011]",
    "click[b000000012]",
  ]);
  match(r.observation, /Page 2 \(Total results: 12\) \[SEP\] < Prev \[SEP\] B000000011/);
  r = act(env, "click[< prev]");
  equal(actions(r.observation).length, 12);

  r = act(env, "click[B000000001]"); // case-insensitive
  deepStrictEqual(actions(r.observation), ITEM_ACTIONS);
  equal(
    r.observation.split("\n")[0],
    `Instruction: [SEP] ${instr} [SEP] Back to Search [SEP] < Prev [SEP] size [SEP] 9 [SEP] 10 [SEP] color [SEP] red | black [SEP] blue [SEP] Red Running Shoes for Men [SEP] Price: $45.0 [SEP] Rating: N.A. [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now`,
  );

  r = act(env, "click[description]");
  deepStrictEqual(actions(r.observation), ["click[back to search]", "click[< prev]"]);
  equal(
    r.observation.split("\n")[0],
    `Instruction: [SEP] ${instr} [SEP] Back to Search [SEP] < Prev [SEP] Lightweight running shoes with a breathable mesh upper.`,
  );
  r = act(env, "click[buy now]"); // not on this page: a no-op
  equal(r.info.metrics.action_is_valid, false);
  equal(r.reward, 0);
  equal(r.terminated, false);
  equal(env.page.kind, "sub");

  r = act(env, "click[< prev]");
  deepStrictEqual(actions(r.observation), ITEM_ACTIONS);
  r = act(env, "click[features]");
  match(r.observation, /< Prev \[SEP\] Rubber sole \[SEP\] Mesh upper for airflow\n/);
  act(env, "click[< prev]");
  r = act(env, "click[reviews]");
  equal(
    r.observation.split("\n")[0],
    `Instruction: [SEP] ${instr} [SEP] Back to Search [SEP] < Prev`,
  );
  act(env, "click[< prev]");

  r = act(env, "click[Red | Black]");
  equal(r.info.metrics.action_is_effective, true);
  r = act(env, "click[red | black]"); // already chosen: valid, changes nothing
  equal(r.info.metrics.action_is_valid, true);
  equal(r.info.metrics.action_is_effective, false);
  act(env, "click[10]");
  deepStrictEqual(env.selectedOptions, { color: "red | black", size: "10" });
  equal(env.stepCount, 14);

  r = act(env, "click[buy now]");
  // Attributes 2/2 ("lightweight", "rubber sole" in the product's attributes), options 2/2
  // ("red | black" -> "black" matches "color red | black"; "10" matches "size 10"),
  // price 45 <= bound: (2 + 2 + 1) / (2 + 2 + 1) = 1.
  equal(r.reward, 1);
  equal(r.terminated, true);
  equal(r.truncated, false);
  equal(r.info.metrics.success, true);
  equal(
    r.observation,
    "Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] 1.0\nAvailable actions: none (the episode is over)",
  );
  deepStrictEqual(r.info.purchased, {
    asin: "B000000001",
    options: { color: "red | black", size: "10" },
    price: 45,
  });

  // After the end: nothing happens.
  r = act(env, "click[buy now]");
  equal(r.reward, 0);
  equal(r.terminated, true);
  equal(r.info.metrics.action_is_valid, false);
});

Deno.test("purchase rewards: wrong size 0.8, another product 0.2 (worked by hand)", () => {
  const env = shopEnv();
  env.reset(goalWith(env, { color: "blue", size: "9" }));
  act(env, "search[running shoes]");
  act(env, "click[b000000001]");
  act(env, "click[blue]");
  act(env, "click[10]");
  // "10" vs the goal pair "size 9": no shared token and LCS("10", "9 size") = 0, so 0:
  // (2 + 1 + 1) / 5.
  let r = act(env, "click[buy now]");
  equal(r.reward, 0.8);
  equal(r.info.metrics.success, false);

  env.reset(goalWith(env, { color: "blue", size: "9" }));
  act(env, "search[running shoes]");
  act(env, "click[b000000002]");
  r = act(env, "click[buy now]");
  // Trail shoe: type words {trail, running, shoes, model} vs goal {red, running, shoes, men}:
  // 2/4 > 0.2 -> r_type 1; no attribute ("lightweight", "rubber sole" absent), no option,
  // price in [30, 40] <= bound: (0 + 0 + 1) / 5 = 0.2.
  equal(r.reward, 0.2);
  equal((r.info.reward_info as { r_type: number }).r_type, 1);
});

Deno.test("back to search and < prev reset the chosen options, as WebShop's pages do", () => {
  const env = shopEnv();
  env.reset(0);
  act(env, "search[running shoes]");
  act(env, "click[b000000001]");
  act(env, "click[blue]");
  deepStrictEqual(env.selectedOptions, { color: "blue" });
  let r = act(env, "click[< prev]");
  equal(env.page.kind, "results");
  deepStrictEqual(env.selectedOptions, {});
  act(env, "click[b000000001]");
  act(env, "click[9]");
  r = act(env, "click[back to search]");
  deepStrictEqual(actions(r.observation), ["search[<content>]"]);
  deepStrictEqual(env.selectedOptions, {});
  // Search only where a search bar is shown.
  act(env, "search[water bottle]");
  r = act(env, "search[running shoes]");
  equal(r.info.metrics.action_is_valid, false);
  equal(r.info.metrics.format_penalty, 0);
  equal(env.page.kind, "results");
  deepStrictEqual(env.visibleProducts, ["B000000013"]);
});

Deno.test("action parsing: pattern, special tokens, format penalty, invalid no-ops", () => {
  const env = shopEnv({ format_penalty: -0.05 });
  env.reset(1);
  const obs = env.render("text");
  // No <answer> tags: unparsable -> format penalty, nothing changes.
  let r = env.step("search[shoes]") as StepResult;
  equal(r.reward, -0.05);
  deepStrictEqual(r.info.metrics, {
    action_is_valid: false,
    action_is_effective: false,
    success: false,
    format_penalty: -0.05,
  });
  equal(r.observation, obs);
  // Tags but no search[...] / click[...] syntax: also a format error.
  r = env.step("<answer>buy the shoes</answer>") as StepResult;
  equal(r.reward, -0.05);
  // Well formed but not available: reward 0, invalid, no penalty.
  r = env.step("<answer>click[buy now]</answer>") as StepResult;
  equal(r.reward, 0);
  equal(r.info.metrics.action_is_valid, false);
  equal(r.info.metrics.format_penalty, 0);
  r = env.step("<answer>search[   ]</answer>") as StepResult;
  equal(r.info.metrics.action_is_valid, false);
  // Special tokens stripped; verb case and spaces tolerated.
  r = env.step(
    "I will search.<|im_start|> <answer> Search [Running Shoes] </answer><|im_end|>",
  ) as StepResult;
  equal(r.info.metrics.action_is_valid, true);
  equal(r.info.action, "search[running shoes]");

  const think = shopEnv({ action_pattern: THINK_ACTION_PATTERN });
  think.reset(0);
  r = think.step("<think>search first</think>\n<answer>search[shoes]</answer>") as StepResult;
  equal(r.info.metrics.action_is_valid, true);
  equal(
    think.formatAction("click[x]"),
    "<think>I choose the next move.</think>\n<answer>click[x]</answer>",
  );
  r = think.step("<answer>click[b000000001]</answer>") as StepResult; // no <think>: unparsable
  equal(r.info.metrics.action_is_valid, false);
  match(think.actionDescription, /<think>/);
});

Deno.test("the step limit truncates; reset picks goal seed mod |goals| deterministically", () => {
  const env = shopEnv({ max_steps: 3 });
  env.reset(2);
  let r = act(env, "click[nothing]");
  equal(r.truncated, false);
  r = act(env, "search[shoes]");
  equal(r.truncated, false);
  r = act(env, "click[b000000001]");
  equal(r.truncated, true);
  equal(r.terminated, false);
  equal(env.done, true);
  r = act(env, "click[buy now]");
  equal(r.info.metrics.action_is_valid, false);
  equal(env.stepCount, 3);

  // A purchase on the last allowed step terminates rather than truncates.
  env.reset(2);
  act(env, "search[running shoes]");
  act(env, "click[b000000001]");
  r = act(env, "click[buy now]");
  equal(r.terminated, true);
  equal(r.truncated, false);

  const n = env.goals.length;
  equal(env.reset(5).info.goal_index, 5 % n);
  equal(env.reset(-1).info.goal_index, n - 1);
  equal(env.reset(1).info.instruction_text, env.reset(1 + n).info.instruction_text);
  throws(() => env.reset(1.5), /seed 1\.5 is not an integer/);
});

Deno.test("fuzz: random and adversarial replies never throw and are invalid", () => {
  const env = shopEnv({ max_steps: 100000 });
  const rng = new PyRandom(7);
  const alphabet = "<>[]/answerclicksearch buy now|_\\\n\t\"'`()*+?{}$^.0123456789ÿ€😀";
  const adversarial = [
    "",
    "<answer></answer>",
    "<answer>click[]</answer>",
    "<answer>search[]</answer>",
    "<answer>click[buy now]", // no closing tag
    "<answer>click[buy now</answer>",
    "<answer>click]buy now[</answer>",
    "<answer>clickbuy now]</answer>",
    "<answer>press[buy now]</answer>",
    "<answer>click[<answer>]</answer>",
    "<answer>click[[b000000001]]</answer>",
    "<answer>".repeat(20000),
    "<think>x</think>".repeat(1000),
    "\u0000<answer>\u0000</answer>",
    "<answer>click[.*]</answer>",
    "<answer>click[back to search" + "]".repeat(500) + "</answer>",
    "x".repeat(200000),
    null as unknown as string,
    42 as unknown as string,
    { answer: "click[buy now]" } as unknown as string,
  ];
  for (const phase of ["search", "results", "item"] as const) {
    env.reset(0);
    if (phase !== "search") act(env, "search[running shoes]");
    if (phase === "item") act(env, "click[b000000001]");
    const before = env.render("text");
    const random = Array.from(
      { length: 300 },
      () => Array.from({ length: rng.randint(0, 60) }, () => rng.choice([...alphabet])).join(""),
    );
    for (const text of [...adversarial, ...random]) {
      const r = env.step(text) as StepResult;
      equal(r.info.metrics.action_is_valid, false, JSON.stringify(text)?.slice(0, 80));
      equal(r.terminated, false);
      equal(env.render("text"), before);
    }
  }
});

Deno.test("sampleAction draws only legal actions; oracleAction buys the target", () => {
  const env = shopEnv({ max_steps: 1000 });
  const rng = new PyRandom(3);
  env.reset(0);
  for (let i = 0; i < 300; i++) {
    if (env.done) env.reset(i);
    const r = env.step(env.sampleAction(() => rng.random())) as StepResult;
    equal(r.info.metrics.action_is_valid, true);
  }
  for (let seed = 0; seed < env.goals.length; seed++) {
    env.reset(seed);
    let r: StepResult;
    do r = env.step(webshopOracleAction(env)) as StepResult; while (!r.terminated && !r.truncated);
    equal(r.reward, 1);
    equal(env.stepCount, 5); // search, open, two options, buy
  }
  throws(() => webshopOracleAction({} as WebShopEnv), /expected a WebShop environment/);
});

Deno.test("step delays: step() returns a promise with the same result; samplers are seeded", async () => {
  const plain = shopEnv();
  const slow = shopEnv({ step_delay_ms: 1 });
  plain.reset(3);
  slow.reset(3);
  for (const a of ["search[running shoes]", "click[b000000001]", "click[buy now]"]) {
    const p = slow.step(`<answer>${a}</answer>`);
    ok(p instanceof Promise);
    deepStrictEqual(await p, plain.step(`<answer>${a}</answer>`));
  }
  const pareto = { distribution: "pareto" as const, scale_ms: 5, alpha: 1.2, seed: 9 };
  const a = delaySampler(pareto, 1);
  const b = delaySampler(pareto, 1);
  const xs = Array.from({ length: 500 }, () => a.next());
  deepStrictEqual(xs, Array.from({ length: 500 }, () => b.next()));
  ok(xs.every((x) => x >= 5));
  ok(Math.max(...xs) > 50, "heavy tail"); // P(x > 50) = 10^-1.2 per draw
  const capped = delaySampler({ ...pareto, cap_ms: 8 });
  ok(Array.from({ length: 200 }, () => capped.next()).every((x) => x >= 5 && x <= 8));
  const logn = delaySampler({ distribution: "lognormal", median_ms: 20, sigma: 1, seed: 0 });
  const ys = Array.from({ length: 4001 }, () => logn.next()).sort((p, q) => p - q);
  ok(Math.abs(ys[2000]! - 20) < 2, `median ${ys[2000]}`);
  equal(delaySampler({ distribution: "fixed", ms: 3, seed: 0 }).next(), 3);
  const zero = shopEnv({ step_delay: { distribution: "fixed", ms: 0 } });
  const junk = zero.step("junk");
  ok(junk instanceof Promise);
  equal((await junk).info.metrics.action_is_valid, false);
});

Deno.test("render: text is the observation, rgb a text card drawn with the 5x7 font", () => {
  const env = shopEnv();
  const { observation } = env.reset(0);
  equal(env.render("text"), observation);
  const frame = env.render("rgb");
  equal(frame.width, 2 * 8 + 64 * 12);
  equal(frame.height, 2 * 8 + 24 * 18);
  equal(frame.data.length, frame.width * frame.height * 3);
  let ink = 0;
  for (let i = 0; i < frame.data.length; i += 3) if (frame.data[i]! < 128) ink++;
  ok(ink > 500, `ink ${ink}`);
  throws(() => env.render("png" as "text"), /mode "png", expected "text" or "rgb"/);

  // "I" at scale 1 without margin: the drawn pixels are the glyph rows.
  const card = drawTextCard(["I"], { columns: 1, rows: 1, scale: 1, margin: 0 });
  const rows: string[] = [];
  for (let y = 0; y < 7; y++) {
    let row = "";
    for (let x = 0; x < 5; x++) row += card.data[3 * (y * card.width + x)]! < 128 ? "#" : ".";
    rows.push(row);
  }
  deepStrictEqual(rows, [".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."]);
});
