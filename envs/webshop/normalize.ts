/**
 * WebShop's color normalization for option matching (`normalize_color`).
 *
 * @module
 */

/** WebShop's base colors, in its order (the first one found wins). */
export const COLOR_SET: readonly string[] = [
  "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze",
  "brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate",
  "christmas coffee cognac copper coral cranberry cream crystal dark denim eggplant",
  "elephant espresso fuchsia gold granite grape graphite grass gray green grey heather",
  "indigo ivory ivy khaki lavender lemon leopard light lilac lime magenta maroon mauve",
  "merlot midnight mint mocha multicolor mushroom mustard natural navy nude olive orange",
  "peach pewter pink plum purple rainbow red rose royal rust sand sapphire seashell silver",
  "skull slate steel stone stonewash sunflower tan taupe teal tiger turquoise violet walnut",
  "wheat white wine yellow",
].join(" ").split(" ");

/**
 * The first base color contained in `value` (substring test), else `value` itself.
 *
 * @example
 * ```ts
 * import { normalizeColor } from "./normalize.ts";
 * console.log(normalizeColor("wine red")); // "red" ("red" comes before "wine")
 * console.log(normalizeColor("x-large")); // "x-large"
 * ```
 */
export function normalizeColor(value: string): string {
  for (const color of COLOR_SET) if (value.includes(color)) return color;
  return value;
}

/**
 * How WebShop normalizes a goal option: it passes `(name, value)` pairs to
 * `normalize_color`, whose `in` test on a pair is element equality, so a pair becomes
 * the first base color equal to its name or value; otherwise the pair stays and is
 * matched as the text "name value".
 *
 * @example
 * ```ts
 * import { normalizeGoalOption } from "./normalize.ts";
 * console.log(normalizeGoalOption("color", "black")); // "black"
 * console.log(normalizeGoalOption("color", "wine red")); // "color wine red"
 * ```
 */
export function normalizeGoalOption(name: string, value: string): string {
  for (const color of COLOR_SET) if (color === name || color === value) return color;
  return `${name} ${value}`;
}
