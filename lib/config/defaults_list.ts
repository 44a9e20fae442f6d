import { ConfigError, describeValue } from "./errors.ts";
import type { OriginMap } from "./origins.ts";
import { type CfgValue, isCfgObject } from "./types.ts";

/** One parsed entry of a Hydra defaults list. */
export type DefaultsEntry =
  | { kind: "self" }
  | { kind: "config"; path: string; package?: string; optional: boolean; index: number }
  | {
    kind: "group";
    group: string;
    package?: string;
    option: string | string[] | null;
    optional: boolean;
    override: boolean;
    index: number;
  };

/**
 * Parses a `defaults` list (Hydra 1.1 grammar): `_self_`, `path/config(@pkg)`,
 * and `[optional|override] group(@pkg): option | [options] | null`.
 */
export function parseDefaultsList(value: CfgValue, origins: OriginMap): DefaultsEntry[] {
  if (value === null) return [];
  if (!Array.isArray(value)) {
    throw new ConfigError("The defaults list must be a list", {
      key: "defaults",
      origin: origins.find(["defaults"]),
      found: describeValue(value),
      expected: "a list such as [ _self_, envs: traj ]",
    });
  }
  const entries = value.map((item, index) => parseEntry(item, index, origins));
  checkOrder(entries, value, origins);
  return entries;
}

/** Hydra's rules for a whole list: one `_self_` at most, and `override` entries at its end. */
function checkOrder(entries: DefaultsEntry[], value: CfgValue[], origins: OriginMap): void {
  const at = (index: number) => ({
    key: `defaults[${index}]`,
    origin: origins.find(["defaults", index]),
  });
  const selves = value.flatMap((
    v,
    i,
  ) => (typeof v === "string" && v.trim() === "_self_" ? [i] : []));
  if (selves.length > 1) {
    throw new ConfigError("Duplicate _self_ in the defaults list", {
      ...at(selves[1]!),
      expected: "_self_ once (where this config's own keys merge)",
    });
  }
  let lastOverride: (DefaultsEntry & { kind: "group" }) | null = null;
  for (const e of entries) {
    if (e.kind === "self") continue;
    if (e.kind === "group" && e.override) {
      lastOverride = e;
    } else if (lastOverride !== null) {
      const what = e.kind === "group" ? `'${e.group}'` : `'${e.path}'`;
      throw new ConfigError(
        `Override '${lastOverride.group}' is defined before ${what}: overrides must be at the ` +
          "end of the defaults list",
        { ...at(lastOverride.index), expected: "the override entries after every other entry" },
      );
    }
  }
}

function parseEntry(item: CfgValue, index: number, origins: OriginMap): DefaultsEntry {
  const where = { key: `defaults[${index}]`, origin: origins.find(["defaults", index]) };
  if (typeof item === "string") {
    const text = item.trim();
    if (text === "_self_") return { kind: "self" };
    const { name, pkg } = splitPackage(text, where);
    if (name === "") throw new ConfigError("A defaults entry names no config", where);
    return { kind: "config", path: name, optional: false, index, ...pkgField(pkg) };
  }
  if (isCfgObject(item)) {
    const keys = Object.keys(item);
    if (keys.length !== 1) {
      throw new ConfigError("A defaults entry must have exactly one key", {
        ...where,
        found: `${keys.length} keys (${keys.join(", ")})`,
        expected: "group: option",
      });
    }
    const rawKey = keys[0]!;
    const words = rawKey.trim().split(/\s+/);
    let optional = false;
    let override = false;
    while (words.length > 1) {
      const word = words.shift()!;
      if (word === "optional") optional = true;
      else if (word === "override") override = true;
      else {
        throw new ConfigError(`Unknown keyword '${word}' in defaults entry '${rawKey}'`, {
          ...where,
          expected: "'optional' or 'override' before the group name",
        });
      }
    }
    const { name, pkg } = splitPackage(words[0]!, where);
    const option = parseOption(item[rawKey]!, where);
    return { kind: "group", group: name, option, optional, override, index, ...pkgField(pkg) };
  }
  throw new ConfigError("Invalid defaults entry", {
    ...where,
    found: describeValue(item),
    expected: "_self_, a config path, or group: option",
  });
}

function pkgField(pkg: string | undefined): { package?: string } {
  return pkg === undefined ? {} : { package: pkg };
}

function splitPackage(
  text: string,
  where: { key: string; origin: ReturnType<OriginMap["find"]> },
): { name: string; pkg?: string } {
  const at = text.indexOf("@");
  if (at < 0) return { name: text };
  const pkg = text.slice(at + 1).trim();
  if (pkg === "") {
    throw new ConfigError(`Empty package after '@' in '${text}'`, {
      ...where,
      expected: "a package such as _here_, _global_ or a.b",
    });
  }
  return { name: text.slice(0, at).trim(), pkg };
}

function parseOption(
  value: CfgValue,
  where: { key: string; origin: ReturnType<OriginMap["find"]> },
): string | string[] | null {
  if (value === null) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value as string[];
  throw new ConfigError("Invalid option in defaults entry", {
    ...where,
    found: describeValue(value),
    expected: "a config name, a list of config names, or null",
  });
}
