import { ConfigError } from "./errors.ts";
import { parseOverrideValue } from "./override_value.ts";
import type { CfgValue } from "./types.ts";

/** A parsed command-line override (Hydra syntax). */
export interface Override {
  /** `set` a=v (must exist), `add` +a=v (must not exist), `force` ++a=v, `delete` ~a[=v]. */
  kind: "set" | "add" | "force" | "delete";
  /** The key as written: dotted for values (`a.b`), `/`-separated for groups (`envs`). */
  key: string;
  /** The package after `@` in a group override key (`group@pkg=option`). */
  package?: string;
  /** The parsed value; absent for `~a` without `=`. */
  value?: CfgValue;
  /** The raw text after `=`, for telling a plain word from a quoted one. */
  rawValue?: string;
  /** The override as typed. */
  text: string;
}

const KEY = /^[A-Za-z0-9_\-./[\]$]+(?:@[A-Za-z0-9_.]+)?$/;

/**
 * Parses one override argument: `a.b=v`, `+a.b=v`, `++a.b=v`, `~a.b`,
 * `~a.b=v`, or a group override `group=option`.
 *
 * @example
 * ```ts
 * import { parseOverride } from "./override_parser.ts";
 * parseOverride("+trainer.lr=1e-5"); // { kind: "add", key: "trainer.lr", value: 0.00001, ... }
 * ```
 */
export function parseOverride(text: string): Override {
  let rest = text;
  let kind: Override["kind"] = "set";
  if (rest.startsWith("++")) {
    kind = "force";
    rest = rest.slice(2);
  } else if (rest.startsWith("+")) {
    kind = "add";
    rest = rest.slice(1);
  } else if (rest.startsWith("~")) {
    kind = "delete";
    rest = rest.slice(1);
  }
  const eq = rest.indexOf("=");
  const rawKey = (eq < 0 ? rest : rest.slice(0, eq)).trim();
  if (eq < 0 && kind !== "delete") {
    throw new ConfigError(`Override '${text}' has no '='`, {
      origin: { source: "command line", override: text },
      expected: "key=value, +key=value, ++key=value, ~key or ~key=value",
    });
  }
  if (rawKey === "" || !KEY.test(rawKey)) {
    throw new ConfigError(`Invalid key '${rawKey}' in override '${text}'`, {
      origin: { source: "command line", override: text },
      expected: "a dotted key such as actor_train.training_args.learning_rate",
    });
  }
  const at = rawKey.indexOf("@");
  const key = at < 0 ? rawKey : rawKey.slice(0, at);
  const out: Override = { kind, key, text };
  if (at >= 0) out.package = rawKey.slice(at + 1);
  if (eq >= 0) {
    const rawValue = rest.slice(eq + 1);
    try {
      out.value = parseOverrideValue(rawValue);
    } catch (e) {
      if (e instanceof ConfigError) {
        throw new ConfigError(e.message, {
          ...e.details,
          key,
          origin: { source: "command line", override: text },
        });
      }
      throw e;
    }
    out.rawValue = rawValue;
  }
  return out;
}
