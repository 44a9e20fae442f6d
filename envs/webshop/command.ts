/**
 * WebShop's action syntax, read from the action text the pattern extracted:
 * `search[query]` or `click[value]`. Never throws on any input.
 *
 * @module
 */

/** A WebShop command: a search with its query, or a click on a lower-cased label. */
export type WebShopCommand =
  | { kind: "search"; query: string }
  | { kind: "click"; label: string };

/**
 * Reads `search[...]` or `click[...]` (the verb in any case, spaces allowed before `[`);
 * the argument is trimmed and lower-cased (WebShop lower-cases it too). Anything else
 * → null.
 *
 * @example
 * ```ts
 * import { parseCommand } from "./command.ts";
 * console.log(parseCommand("Click[ Buy Now ]")); // { kind: "click", label: "buy now" }
 * console.log(parseCommand("buy it")); // null
 * ```
 */
export function parseCommand(action: string): WebShopCommand | null {
  if (typeof action !== "string") return null;
  const m = /^(search|click)\s*\[(.*)\]$/is.exec(action.trim());
  if (m === null) return null;
  const arg = m[2]!.trim().toLowerCase();
  return m[1]!.toLowerCase() === "search"
    ? { kind: "search", query: arg }
    : { kind: "click", label: arg };
}

/** The command as text: `search[query]` or `click[label]`. */
export function commandText(command: WebShopCommand): string {
  return command.kind === "search" ? `search[${command.query}]` : `click[${command.label}]`;
}
