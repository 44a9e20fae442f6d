import { didYouMean } from "../util/did_you_mean.ts";
import { type DefaultsEntry, parseDefaultsList } from "./defaults_list.ts";
import { ConfigError } from "./errors.ts";
import { mergeAt } from "./merge.ts";
import { OriginMap } from "./origins.ts";
import { type ConfigReader, defaultReader, displayUrl } from "./source.ts";
import { type CfgObject, formatOrigin, type Origin } from "./types.ts";
import { type LoadedYaml, loadYaml } from "./yaml_load.ts";

/** A command-line change to the defaults list: `group=opt`, `+group=opt`, `~group`. */
export interface GroupOverride {
  /** `set` group=opt, `append` +group=opt, `delete` ~group. */
  kind: "set" | "append" | "delete";
  /** The config group, `/`-separated, relative to the config folder. */
  group: string;
  /** The package after `@`, if the override named one. */
  package?: string;
  /** The option to select (for `delete`, the option that must match, if given). */
  option?: string | string[] | null;
  /** The override as the user typed it. */
  text: string;
}

/** What to compose: a primary config in a folder, plus group overrides. */
export interface ComposeOptions {
  /** The primary config folder (`--config-path`). */
  configDir: URL;
  /** The primary config name (`--config-name`), without `.yaml`. */
  configName: string;
  /** Further folders searched for config groups after `configDir`. */
  searchPath?: URL[];
  /** Command-line changes to the defaults list. */
  groupOverrides?: GroupOverride[];
  /** Reads config files (default: local files and `fetch`). */
  reader?: ConfigReader;
}

/** The merged output of a defaults tree, before overrides and interpolation. */
export interface ComposedConfig {
  /** The merged config. */
  value: CfgObject;
  /** Where every value was written. */
  origins: OriginMap;
  /** The option chosen for each config group (`group` or `group@package`). */
  choices: Record<string, string | string[] | null>;
  /** The files merged, in merge order. */
  files: string[];
}

interface Frame {
  url: URL;
  /** The search-path folder holding the file, when it is inside one. */
  root?: URL;
  /** The file's config group: its folder relative to `root`. */
  group?: string;
  /** Where the file's own content lands (dotted; "" is the top level). */
  package: string;
  primary: boolean;
}

/** A config file found on the search path, with its root and group when inside one. */
interface Located {
  url: URL;
  root?: URL;
  group?: string;
}

interface OverrideSlot {
  option: string | string[] | null;
  text: string;
  origin?: Origin;
  used: boolean;
  delete: boolean;
}

/**
 * A config of the defaults tree: its content, the package it lands in, and what its defaults
 * list puts before and after it (`"self"` is its own content), in list order.
 */
interface TreeNode {
  source: string;
  loaded: LoadedYaml;
  pkg: string;
  items: (TreeNode | "self")[];
}

const MAX_DEPTH = 32;

/**
 * Composes a config from its defaults tree as Hydra 1.1 does: `_self_`
 * placement (implicitly last), config groups, `override`, `optional`, `null`,
 * packages (`@_here_`, `@_global_`, `@pkg`, `# @package`), and relative paths
 * such as `../config/traj_envs@_here_` resolved against the including file.
 *
 * @example
 * ```ts
 * import { composeConfig } from "./compose.ts";
 * const composed = await composeConfig({
 *   configDir: new URL("../../configs/", import.meta.url),
 *   configName: "agent_val_frozen_lake",
 * });
 * console.log(Object.keys(composed.value).length > 0);
 * ```
 */
export async function composeConfig(options: ComposeOptions): Promise<ComposedConfig> {
  return await new Composer(options).run();
}

class Composer {
  readonly value: CfgObject = {};
  readonly origins = new OriginMap();
  readonly choices: Record<string, string | string[] | null> = {};
  readonly files: string[] = [];
  readonly #reader: ConfigReader;
  readonly #roots: URL[];
  readonly #slots = new Map<string, OverrideSlot>();
  readonly #appends: GroupOverride[] = [];
  /** Where each group (at its package) was first chosen: a group is chosen once. */
  readonly #chosen = new Map<string, { where?: Origin; appended: boolean }>();

  constructor(private options: ComposeOptions) {
    this.#reader = options.reader ?? defaultReader;
    this.#roots = [options.configDir, ...(options.searchPath ?? [])];
    for (const o of options.groupOverrides ?? []) {
      if (o.kind === "append") {
        this.#appends.push(o);
        continue;
      }
      this.#slots.set(slotKey(o.group, o.package), {
        option: o.option ?? null,
        text: o.text,
        used: false,
        delete: o.kind === "delete",
      });
    }
  }

  async run(): Promise<ComposedConfig> {
    const name = this.options.configName.replace(/\.ya?ml$/, "");
    const url = new URL(`${name}.yaml`, this.options.configDir);
    const slash = name.lastIndexOf("/");
    const tree = await this.#include(
      url,
      {
        url,
        root: this.options.configDir,
        group: slash < 0 ? "" : name.slice(0, slash),
        package: "",
        primary: true,
      },
      0,
      undefined,
    );
    for (const [key, slot] of this.#slots) {
      if (slot.used) continue;
      const plain = key.split("@")[0];
      throw new ConfigError(
        `Could not ${slot.delete ? "delete" : "override"} '${key}': no such config group in ` +
          "the defaults list",
        {
          origin: slot.origin ?? { source: "command line", override: slot.text },
          hint: slot.delete ? undefined : `to add it to the defaults list, use +${plain}=...`,
        },
      );
    }
    this.#merge(tree);
    return { value: this.value, origins: this.origins, choices: this.choices, files: this.files };
  }

  /** Merges a built tree in list order: each config's entries around its own content. */
  #merge(node: TreeNode) {
    for (const item of node.items) {
      if (item !== "self") {
        this.#merge(item);
        continue;
      }
      this.files.push(node.source);
      mergeAt(
        this.value,
        this.origins,
        packageSegments(node.pkg),
        node.loaded.value,
        node.loaded.origins,
      );
    }
  }

  /**
   * Builds the subtree of a config file. As in Hydra, a list's `override` entries are registered
   * before any of its entries is expanded, and the entries are expanded last to first, so that an
   * override in a later entry's subtree (a `+experiment=...` on the command line) changes a group
   * chosen earlier in the list.
   */
  async #include(
    url: URL,
    frame: Frame,
    depth: number,
    explicitPackage: string | undefined,
  ): Promise<TreeNode> {
    if (depth > MAX_DEPTH) {
      throw new ConfigError(
        `The defaults list nests more than ${MAX_DEPTH} levels deep (a cycle?)`,
        {
          origin: { source: displayUrl(url) },
        },
      );
    }
    const source = displayUrl(url);
    const text = await this.#reader.read(url);
    if (text === undefined) {
      // the primary config: name the configs that are there
      const there = frame.primary ? await this.#reader.list(new URL(".", url)) ?? [] : [];
      const name = url.pathname.split("/").pop()!.replace(/\.yaml$/, "");
      throw new ConfigError(`Config file not found: ${source}`, {
        expected: there.length ? `one of: ${there.sort().join(", ")}` : undefined,
        hint: didYouMean(name, there),
      });
    }
    const loaded = loadYaml(text, source);
    const entries = parseDefaultsList(loaded.value.defaults ?? null, loaded.origins);
    delete loaded.value.defaults;

    let pkg = frame.package;
    if (explicitPackage === undefined && loaded.packageHeader !== undefined) {
      pkg = headerPackage(loaded.packageHeader, frame, url);
    }
    const here: Frame = { ...frame, package: pkg };

    for (const e of entries) {
      if (e.kind === "group" && e.override) this.#registerOverride(e, here, loaded.origins);
    }
    const ordered: (DefaultsEntry | GroupOverride)[] = entries.filter((e) =>
      !(e.kind === "group" && e.override)
    );
    if (!ordered.some((e) => "kind" in e && e.kind === "self")) ordered.push({ kind: "self" });
    if (frame.primary) ordered.push(...this.#appends);

    const items: (TreeNode | "self")[][] = [];
    for (const e of ordered.toReversed()) {
      if ("text" in e) {
        items.push(
          await this.#includeGroup(
            here,
            e.group,
            e.package,
            e.option ?? null,
            false,
            depth,
            e.text,
          ),
        );
      } else if (e.kind === "self") {
        items.push(["self"]);
      } else if (e.kind === "config") {
        items.push([
          await this.#includeConfig(here, e.path, e.package, depth, loaded.origins, e.index),
        ]);
      } else {
        const key = slotKey(this.#absoluteGroup(here, e.group) ?? e.group, e.package);
        const slot = this.#slots.get(key);
        let option = e.option;
        let origin = loaded.origins.find(["defaults", e.index]);
        if (slot) {
          slot.used = true;
          if (slot.delete) {
            if (slot.option === null || sameOption(slot.option, option)) continue;
            throw new ConfigError(
              `Could not delete '${key}=${slot.option}': the defaults list chooses ` +
                `'${option}' for it`,
              {
                origin: slot.origin ?? { source: "command line", override: slot.text },
                hint: `to delete it whatever its option, use ~${key}`,
              },
            );
          } else {
            option = slot.option;
            origin = slot.origin ?? { source: "command line", override: slot.text };
          }
        }
        items.push(
          await this.#includeGroup(
            here,
            e.group,
            e.package,
            option,
            e.optional,
            depth,
            undefined,
            origin,
          ),
        );
      }
    }
    return { source, loaded, pkg, items: items.toReversed().flat() };
  }

  #registerOverride(
    e: Extract<DefaultsEntry, { kind: "group" }>,
    frame: Frame,
    origins: OriginMap,
  ) {
    const key = slotKey(this.#absoluteGroup(frame, e.group) ?? e.group, e.package);
    if (this.#slots.has(key)) return; // the command line and outer configs win
    const origin = origins.find(["defaults", e.index]);
    this.#slots.set(key, {
      option: e.option,
      text: `override ${e.group}`,
      ...(origin ? { origin } : {}),
      used: false,
      delete: false,
    });
  }

  #absoluteGroup(frame: Frame, group: string): string | undefined {
    if (group.startsWith("/")) return normalize(group.slice(1));
    if (frame.group === undefined) return undefined;
    const joined = normalize(frame.group === "" ? group : `${frame.group}/${group}`);
    return joined.startsWith("..") ? undefined : joined;
  }

  async #includeGroup(
    frame: Frame,
    group: string,
    pkgSpec: string | undefined,
    option: string | string[] | null,
    optional: boolean,
    depth: number,
    overrideText?: string,
    origin?: Origin,
  ): Promise<TreeNode[]> {
    const absGroup = this.#absoluteGroup(frame, group);
    const where = origin ??
      (overrideText ? { source: "command line", override: overrideText } : undefined);
    this.#chooseOnce(frame, group, absGroup, pkgSpec, where, overrideText !== undefined);
    this.choices[slotKey(absGroup ?? group, pkgSpec)] = option;
    if (option === null) return [];
    const nodes: TreeNode[] = [];
    const relGroup = group.startsWith("/") ? group.slice(1) : group;
    for (const name of Array.isArray(option) ? option : [option]) {
      if (name === "???") { // a choice the config leaves to the user
        const available = await this.#options(frame, group, absGroup);
        const g = absGroup ?? group;
        throw new ConfigError(`You must choose an option for config group '${g}'`, {
          origin: where,
          expected: available.length ? `one of: ${available.join(", ")}` : undefined,
          hint: `e.g. ${g}=${available[0] ?? "<option>"} on the command line`,
        });
      }
      const found = await this.#locate(frame, group, absGroup, `${name}.yaml`);
      if (!found) {
        if (optional) continue;
        const available = await this.#options(frame, group, absGroup);
        throw new ConfigError(`Could not find '${name}' in config group '${absGroup ?? group}'`, {
          origin: origin ??
            (overrideText ? { source: "command line", override: overrideText } : undefined),
          expected: available.length ? `one of: ${available.join(", ")}` : undefined,
          hint: didYouMean(name, available),
        });
      }
      nodes.push(await this.#includeFound(frame, found, relGroup, absGroup, name, pkgSpec, depth));
    }
    return nodes;
  }

  /**
   * Records a group's choice, refusing a second one at the same package: Hydra's "multiple
   * values" error, since merging both would hide which one the user meant.
   */
  #chooseOnce(
    frame: Frame,
    group: string,
    absGroup: string | undefined,
    pkgSpec: string | undefined,
    where: Origin | undefined,
    appended: boolean,
  ) {
    const pkg = pkgSpec === undefined
      ? join(frame.package, dotted(group.replace(/^\//, "")) ?? "")
      : explicitPackageOf(pkgSpec, frame.package, dotted(absGroup ?? "") ?? "", "");
    const key = `${absGroup ?? `${displayUrl(frame.url)}:${group}`} @ ${pkg}`;
    const later = this.#chosen.get(key);
    if (!later) {
      this.#chosen.set(key, { ...(where ? { where } : {}), appended });
      return;
    }
    // entries are expanded last to first: the one recorded is the later in the list
    const name = slotKey(absGroup ?? group, pkgSpec);
    throw new ConfigError(`Config group '${name}' is chosen twice in the defaults list`, {
      ...(later.where ? { origin: later.where } : {}),
      found: `also chosen at ${where ? formatOrigin(where) : "an earlier entry"}`,
      expected: "one entry per group and package",
      hint: later.appended
        ? `'${name}' is already in the defaults list: use ${name}=... (without +) to change it`
        : `to change the earlier choice, make the later entry 'override ${name}: ...'`,
    });
  }

  async #includeConfig(
    frame: Frame,
    path: string,
    pkgSpec: string | undefined,
    depth: number,
    origins: OriginMap,
    index: number,
  ): Promise<TreeNode> {
    const slash = path.lastIndexOf("/");
    const group = slash < 0 ? "" : path.slice(0, slash);
    const name = path.slice(slash + 1);
    const absGroup = group === "" ? frame.group : this.#absoluteGroup(frame, group);
    const found = await this.#locate(frame, group, absGroup, `${name}.yaml`);
    if (!found) {
      throw new ConfigError(`Could not find config '${path}'`, {
        key: `defaults[${index}]`,
        origin: origins.find(["defaults", index]),
        expected: `a file ${path}.yaml relative to ${displayUrl(new URL(".", frame.url))}`,
      });
    }
    const relGroup = group.startsWith("/") ? group.slice(1) : group;
    return await this.#includeFound(frame, found, relGroup, absGroup, name, pkgSpec, depth);
  }

  /**
   * Includes a located file in its package: the `@pkg` the entry gave (relative
   * to the including config), else the group path under the including package.
   */
  async #includeFound(
    frame: Frame,
    found: Located,
    relGroup: string,
    absGroup: string | undefined,
    name: string,
    pkgSpec: string | undefined,
    depth: number,
  ): Promise<TreeNode> {
    const groupDots = dotted(relGroup);
    const pkg = pkgSpec !== undefined
      ? explicitPackageOf(pkgSpec, frame.package, dotted(absGroup ?? "") ?? "", name)
      : groupDots === undefined
      ? frame.package
      : join(frame.package, groupDots);
    const child: Frame = { url: found.url, package: pkg, primary: false };
    if (found.root) child.root = found.root;
    if (found.group !== undefined) child.group = found.group;
    return await this.#include(found.url, child, depth + 1, pkgSpec);
  }

  /** Finds `file` in a group: beside the including file, then along the search path. */
  async #locate(
    frame: Frame,
    group: string,
    absGroup: string | undefined,
    file: string,
  ): Promise<Located | undefined> {
    const candidates: Located[] = [];
    if (!group.startsWith("/")) {
      const url = new URL(group === "" ? file : `${group}/${file}`, frame.url);
      candidates.push(
        absGroup !== undefined && frame.root ? { url, root: frame.root, group: absGroup } : { url },
      );
    }
    if (absGroup !== undefined) {
      for (const root of this.#roots) {
        const url = new URL(absGroup === "" ? file : `${absGroup}/${file}`, root);
        candidates.push({ url, root, group: absGroup });
      }
    }
    const seen = new Set<string>();
    for (const c of candidates) {
      if (seen.has(c.url.href)) continue;
      seen.add(c.url.href);
      if (await this.#reader.read(c.url) !== undefined) return c;
    }
    return undefined;
  }

  async #options(frame: Frame, group: string, absGroup: string | undefined): Promise<string[]> {
    const dirs: URL[] = [];
    if (!group.startsWith("/")) dirs.push(new URL(`${group}/`, frame.url));
    if (absGroup !== undefined) {
      for (const r of this.#roots) {
        dirs.push(new URL(`${absGroup}/`, r));
      }
    }
    const names = new Set<string>();
    for (const d of dirs) for (const n of await this.#reader.list(d) ?? []) names.add(n);
    return [...names].sort();
  }
}

function slotKey(group: string, pkg: string | undefined): string {
  const g = group.startsWith("/") ? group.slice(1) : group;
  return pkg === undefined ? g : `${g}@${pkg}`;
}

function sameOption(a: string | string[] | null, b: string | string[] | null): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function normalize(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && out.length > 0 && out[out.length - 1] !== "..") out.pop();
    else out.push(part);
  }
  return out.join("/");
}

/** A group path as a package (`a/b` → `a.b`), or undefined when it leaves the folder. */
function dotted(group: string): string | undefined {
  const norm = normalize(group);
  if (norm.startsWith("..")) return undefined;
  return norm.split("/").filter((p) => p !== "").join(".");
}

function join(a: string, b: string): string {
  return a === "" ? b : b === "" ? a : `${a}.${b}`;
}

function packageSegments(pkg: string): string[] {
  return pkg === "" ? [] : pkg.split(".");
}

/** A defaults-list package: relative to the including config's, unless `_global_`. */
function explicitPackageOf(spec: string, parent: string, groupDots: string, name: string): string {
  const parts = spec.split(".");
  let base = parent;
  if (parts[0] === "_global_") {
    base = "";
    parts.shift();
  } else if (parts[0] === "_here_") {
    parts.shift();
  }
  const rest = parts.map((p) => p === "_group_" ? groupDots : p === "_name_" ? name : p)
    .filter((p) => p !== "").join(".");
  return join(base, rest);
}

/** A `# @package` header: absolute. */
function headerPackage(header: string, frame: Frame, url: URL): string {
  if (header === "_here_") return frame.package;
  const name = decodeURIComponent(url.pathname.split("/").pop() ?? "").replace(/\.ya?ml$/, "");
  const groupDots = frame.group === undefined ? "" : dotted(frame.group) ?? "";
  return header.split(".").filter((p) => p !== "_global_")
    .map((p) => p === "_group_" ? groupDots : p === "_name_" ? name : p)
    .filter((p) => p !== "").join(".");
}
