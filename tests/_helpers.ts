import { ConfigError } from "../lib/config/errors.ts";

/** Writes files (relative path → text) into a fresh temporary folder and returns its URL. */
export async function writeTree(files: Record<string, string>): Promise<URL> {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_test_" });
  for (const [path, text] of Object.entries(files)) {
    const full = `${dir}/${path}`;
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(full, text);
  }
  return new URL(`file://${dir}/`);
}

/** Runs `fn`, expects a ConfigError, and returns it (for asserting its details). */
export async function configError(fn: () => unknown): Promise<ConfigError> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error("expected a ConfigError, but nothing was thrown");
}
