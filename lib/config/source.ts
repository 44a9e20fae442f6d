import { ConfigError } from "./errors.ts";

/**
 * Reads config files from a local folder or from a URL base (`file:`, `http:`,
 * `https:`), so scripts that import this module by URL can compose the
 * configs that ship beside it.
 */
export interface ConfigReader {
  /** The text of the file, or `undefined` when it does not exist. */
  read(url: URL): Promise<string | undefined>;
  /** The `*.yaml` names (without extension) in a folder, when it can be listed. */
  list(dir: URL): Promise<string[] | undefined>;
  /** Whether `dir` is a folder (`undefined` when this cannot be known). */
  isDir(dir: URL): Promise<boolean | undefined>;
}

/** Reads local files with Deno's file API and remote ones with `fetch`. */
export const defaultReader: ConfigReader = {
  async read(url) {
    if (url.protocol === "file:") {
      try {
        return await Deno.readTextFile(url);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.IsADirectory) {
          return undefined;
        }
        throw readError(url, e);
      }
    }
    let response: Response;
    try {
      response = await fetch(url);
    } catch (e) {
      throw readError(url, e);
    }
    if (response.status === 404) {
      await response.body?.cancel();
      return undefined;
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new ConfigError(`Could not read config ${url.href}: HTTP ${response.status}`);
    }
    return await response.text();
  },
  async list(dir) {
    if (dir.protocol !== "file:") return undefined;
    try {
      const names: string[] = [];
      for await (const entry of Deno.readDir(dir)) {
        if (entry.isFile && entry.name.endsWith(".yaml")) names.push(entry.name.slice(0, -5));
      }
      return names.sort();
    } catch {
      return undefined;
    }
  },
  async isDir(dir) {
    if (dir.protocol !== "file:") return undefined;
    try {
      return (await Deno.stat(dir)).isDirectory;
    } catch {
      return false;
    }
  },
};

function readError(url: URL, cause: unknown): ConfigError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new ConfigError(`Could not read config ${displayUrl(url)}: ${reason}`);
}

/** A URL shown to users: a path relative to the working folder for local files. */
export function displayUrl(url: URL): string {
  if (url.protocol !== "file:") return url.href;
  const path = decodeURIComponent(url.pathname);
  let cwd = "";
  try {
    cwd = Deno.cwd();
  } catch {
    return path;
  }
  return path.startsWith(cwd + "/") ? path.slice(cwd.length + 1) : path;
}

/** Turns a folder given on the command line (path or URL) into a folder URL. */
export function toDirUrl(pathOrUrl: string | URL, base?: URL): URL {
  if (pathOrUrl instanceof URL) return ensureSlash(pathOrUrl);
  if (/^(?:file|https?):\/\//.test(pathOrUrl)) return ensureSlash(new URL(pathOrUrl));
  const cwdBase = base ?? new URL(`file://${Deno.cwd()}/`);
  const url = pathOrUrl.startsWith("/")
    ? new URL(`file://${encodePath(pathOrUrl)}`)
    : new URL(encodePath(pathOrUrl), cwdBase);
  return ensureSlash(url);
}

function encodePath(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

function ensureSlash(url: URL): URL {
  return url.href.endsWith("/") ? url : new URL(url.href + "/");
}
