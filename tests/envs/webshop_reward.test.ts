// WebShop's reward: the fuzzy token-set ratio against reference values from rapidfuzz
// (the library thefuzz wraps), color normalization, and purchase rewards computed by
// hand from r = r_type x (#attr + #option + 1[price <= upper]) / (|attr| + |options| + 1).
import { deepStrictEqual, equal } from "node:assert/strict";
import {
  attributeMatches,
  computeReward,
  optionMatches,
  processText,
  ratio,
  tokenSetRatio,
  typeReward,
  typeWords,
} from "../../envs/webshop/mod.ts";
import { normalizeColor, normalizeGoalOption } from "../../envs/webshop/normalize.ts";

Deno.test("tokenSetRatio matches rapidfuzz's token_set_ratio (thefuzz processing) on reference pairs", () => {
  // [a, b, round(score)] printed by rapidfuzz 3.14.6 with thefuzz's full_process.
  const cases: [string, string, number][] = [
    ["polyester spandex", "spandex, polyester", 100],
    ["x-large", "large", 100],
    ["black", "white", 0],
    ["x-large", "size large", 83],
    ["large", "x-large", 100],
    ["wine red", "color wine red", 100],
    ["long sleeve", "short sleeve", 71],
    ["machine wash", "machine washable", 86],
    ["dairy free", "lactose free", 57],
    ["gluten free", "gluten-free", 100],
    ["easy to use", "easy use", 100],
    ["high quality", "quality materials", 74],
    ["stainless steel", "steel", 100],
    ["", "abc", 0],
    ["!!", "abc", 0],
    ["café latte", "cafe latte", 95],
    ["Home › Kitchen", "home kitchen", 100],
    ["naturally flavored", "natural flavor", 88],
    ["light weight", "lightweight", 96],
    ["hair loss", "hair growth", 62],
    ["anti slip", "non slip", 71],
    ["memory foam", "memory foam mattress topper", 100],
    ["3 ounce (pack of 2)", "3 ounce (pack of 6)", 94],
    ["abcdefghij klm", "abcdefghij klx", 93],
    ["heavy duty", "heavy-duty", 100],
  ];
  for (const [a, b, want] of cases) equal(tokenSetRatio(a, b), want, `${a} | ${b}`);
});

Deno.test("tokenSetRatio follows the documented formula on a case worked by hand", () => {
  // "long sleeve" vs "short sleeve": I = {sleeve}, DA = {long}, DB = {short}.
  // ia = "sleeve long" (11), ib = "sleeve short" (12), i = "sleeve" (6).
  // ratio(i, ia) = 200*6/17 = 70.59; ratio(i, ib) = 200*6/18 = 66.67;
  // ratio(ia, ib): LCS("sleeve long", "sleeve short") = "sleeve " + LCS("long","short") = 7 + 1 ("o")
  //   = 8 -> 200*8/23 = 69.57. Max 70.59 -> 71.
  equal(ratio("sleeve", "sleeve long"), (200 * 6) / 17);
  equal(ratio("sleeve long", "sleeve short"), (200 * 8) / 23);
  equal(tokenSetRatio("long sleeve", "short sleeve"), 71);
  // Python's round is half to even: 200*5/16 = 62.5 -> 62, 200*7/16 = 87.5 -> 88
  // (rapidfuzz + round give the same).
  equal(tokenSetRatio("abcdexyz", "abcdeqrs"), 62);
  equal(tokenSetRatio("abcdefgx", "abcdefgy"), 88);
  equal(ratio("abc", "abc"), 100);
  equal(processText("  Wine-Red, 40 "), "wine red  40");
  equal(processText("Café"), "caf");
});

Deno.test("normalizeColor and the goal-option normalization follow WebShop's normalize_color", () => {
  equal(normalizeColor("wine red"), "red"); // "red" comes before "wine" in COLOR_SET
  equal(normalizeColor("dark wash"), "ash"); // a substring test, as WebShop's
  equal(normalizeColor("x-large"), "x-large");
  equal(normalizeGoalOption("color", "black"), "black"); // pair membership: exact value
  equal(normalizeGoalOption("color", "wine red"), "color wine red");
  equal(normalizeGoalOption("size", "large"), "size large");
});

Deno.test("typeWords keeps content words of a name", () => {
  deepStrictEqual([...typeWords("Men's Running Shoes, Size 9")], [
    "men",
    "running",
    "shoes",
    "size",
  ]);
  deepStrictEqual([...typeWords("The Best New Water Bottle")], ["water", "bottle"]);
});

const TEE = {
  name: "Acme Cotton Crew Tee Shirt",
  Title: "Acme Cotton Crew Tee Shirt",
  Description: "A soft tee that is machine washable and pre-shrunk.",
  BulletPoints: ["Short sleeve", "Tagless collar"],
  Attributes: ["machine wash", "cotton spandex"],
  query: "men's t-shirts",
  product_category: "Clothing, Shoes & Jewelry › Men › Clothing › Shirts › T-Shirts",
};

const TEE_GOAL = {
  name: TEE.name,
  query: TEE.query,
  product_category: TEE.product_category,
  attributes: ["machine wash", "short sleeve"],
  goal_options: { color: "black", size: "large" },
  price_upper: 30,
};

Deno.test("reward: everything matches -> 1", () => {
  const r = computeReward(TEE, TEE_GOAL, 20, { color: "black", size: "large" });
  // attributes 2/2 (fuzzy "machine wash", substring "short sleeve" in the bullets),
  // options 2/2, price 20 <= 30: (2 + 2 + 1) / (2 + 2 + 1) = 1.
  equal(r.attribute_matches, 2);
  equal(r.option_matches, 2);
  equal(r.price_ok, true);
  equal(r.denominator, 5);
  equal(r.r_type, 1);
  equal(r.reward, 1);
});

Deno.test("reward: partial attributes -> (matched + options + price) / total", () => {
  const goal = { ...TEE_GOAL, attributes: ["machine wash", "tagless collar", "long sleeve"] };
  // "machine wash" by fuzzy attribute, "tagless collar" as a substring of the bullets,
  // "long sleeve" nowhere ("short sleeve" scores 71 <= 85): (2 + 2 + 1) / (3 + 2 + 1) = 5/6.
  equal(attributeMatches(TEE, goal.attributes), 2);
  equal(computeReward(TEE, goal, 20, { color: "black", size: "large" }).reward, 5 / 6);
});

Deno.test("reward: a wrong option loses its share", () => {
  // white vs black scores 0: (2 + 1 + 1) / 5 = 0.8.
  equal(optionMatches({ color: "white", size: "large" }, TEE_GOAL.goal_options), 1);
  equal(computeReward(TEE, TEE_GOAL, 20, { color: "white", size: "large" }).reward, 0.8);
  // No option chosen at all: (2 + 0 + 1) / 5 = 0.6.
  equal(computeReward(TEE, TEE_GOAL, 20, {}).reward, 0.6);
  // The goal pair ("size", "x-large") is matched as "size x large": buying "large" is a token
  // subset (100, a match), buying "x-large" for a goal of "large" scores 83 (no match).
  equal(optionMatches({ size: "large" }, { size: "x-large" }), 1);
  equal(optionMatches({ size: "x-large" }, { size: "large" }), 0);
});

Deno.test("reward: a price above the bound loses the price share", () => {
  const r = computeReward(TEE, TEE_GOAL, 30.01, { color: "black", size: "large" });
  equal(r.price_ok, false);
  equal(r.reward, 4 / 5);
  equal(computeReward(TEE, TEE_GOAL, 30, { color: "black", size: "large" }).reward, 1);
});

Deno.test("reward: WebShop's color normalization can keep an exact option from matching", () => {
  // The bought value "green2" normalizes to "green"; the goal pair ("color", "green2") stays
  // "color green2": no shared token, ratio("green", "color green2") = 200*5/17 = 59 -> no match.
  const goal = { ...TEE_GOAL, goal_options: { color: "green2" } };
  equal(optionMatches({ color: "green2" }, goal.goal_options), 0);
  equal(computeReward(TEE, goal, 20, { color: "green2" }).reward, 3 / 4);
});

function typed(name: string, query = "q-other", category = "X › Y") {
  return { ...TEE, name, Title: name, query, product_category: category };
}

Deno.test("reward: r_type 0.5 when no query, category or title match (> 0.2)", () => {
  // Goal type words {acme, cotton, crew, tee, shirt} (5); "Shirt Hanger" shares {shirt}:
  // title score 1/5 = 0.2, not > 0.2, and query/category differ -> r_type 0.5.
  const t = typeReward(typed("Shirt Hanger"), TEE_GOAL);
  equal(t.title_score, 0.2);
  equal(t.query_match, false);
  equal(t.category_match, false);
  equal(t.r_type, 0.5);
  const r = computeReward(typed("Shirt Hanger"), TEE_GOAL, 20, { color: "black", size: "large" });
  equal(r.reward, 0.5); // everything else matches: 0.5 x 5/5
});

Deno.test("reward: r_type 0.1 when the title score is below 0.1, 0 when it is 0", () => {
  const goal = {
    ...TEE_GOAL,
    name: "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo",
  };
  // 11 goal type words, one shared: 1/11 = 0.0909 < 0.1 -> 0.1 (even with the same query).
  const t1 = typeReward(typed("kilo lamp", TEE.query), goal);
  equal(t1.title_score, 1 / 11);
  equal(t1.r_type, 0.1);
  equal(computeReward(typed("kilo lamp", TEE.query), goal, 20, goal.goal_options).reward, 0.1);
  // Nothing shared -> 0 whatever else matches.
  const t0 = typeReward(typed("lamp", TEE.query, TEE.product_category), goal);
  equal(t0.title_score, 0);
  equal(t0.r_type, 0);
  equal(computeReward(typed("lamp"), goal, 20, goal.goal_options).reward, 0);
});

Deno.test("reward: a query or >= 2 shared category levels keep r_type at 1", () => {
  // Title score 0.2 (not > 0.2), but the same query -> 1.
  equal(typeReward(typed("Shirt Hanger", TEE.query), TEE_GOAL).r_type, 1);
  // Shares "Clothing, Shoes & Jewelry" and "Men" (2 levels) -> 1.
  const cat = "Clothing, Shoes & Jewelry › Men › Shoes";
  const t = typeReward(typed("Shirt Hanger", "shoes", cat), TEE_GOAL);
  equal(t.category_match, true);
  equal(t.r_type, 1);
  // One shared level is not enough.
  equal(
    typeReward(typed("Shirt Hanger", "shoes", "Clothing, Shoes & Jewelry › Kids"), TEE_GOAL).r_type,
    0.5,
  );
  // A goal name without type words scores 0.2 (WebShop's default): 0.5 without other matches.
  const t2 = typeReward(typed("Anything"), { ...TEE_GOAL, name: "the best of all" });
  equal(t2.title_score, 0.2);
  equal(t2.r_type, 0.5);
});
