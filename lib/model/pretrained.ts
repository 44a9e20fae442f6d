/**
 * A Hugging Face model folder as agentrl uses it: the Qwen2 weights loaded into
 * a {@linkcode Qwen2Model}, plus its tokenizer; and the way back, a folder that
 * transformers (and agentrl) load.
 *
 * @module
 */
import type { Kernels } from "../../ffi/mod.ts";
import { loadHfCheckpoint, type SavedHfCheckpoint, saveHfCheckpoint } from "./checkpoint.ts";
import { CheckpointError } from "./safetensors.ts";
import type { Qwen2Config } from "./config.ts";
import { Qwen2Model } from "./qwen2.ts";
import type { Precision } from "./_mixed_precision.ts";
import { ChatTemplate, missingChatMlTokens } from "./chat_template.ts";
import { Tokenizer, TokenizerLoadError } from "./tokenizer.ts";
import { isFile } from "../util/fs_probe.ts";

/** Files besides the weights that travel with a model folder. */
export const TOKENIZER_FILES = [
  "tokenizer.json",
  "tokenizer_config.json",
  "generation_config.json",
  "chat_template.jinja",
  // the slow tokenizer's files, kept when the folder has them (use_fast=False reads them)
  "vocab.json",
  "merges.txt",
  "special_tokens_map.json",
  "added_tokens.json",
] as const;

/** A loaded model folder. Dispose it to free the model. */
export interface Pretrained extends Disposable {
  model: Qwen2Model;
  tokenizer: Tokenizer;
  config: Qwen2Config;
  dir: string;
  /** Notes from the weight check (ignored extras such as rotary inv_freq). */
  notes: string[];
}

/** Options of {@linkcode loadPretrained}. */
export interface LoadPretrainedOptions {
  /** Add a value head (the critic); it starts at zero unless the folder has one. */
  valueHead?: boolean;
  /** Storage of the weights the kernels read (see `Qwen2ModelOptions.precision`). */
  precision?: Precision;
}

/**
 * Throws a {@linkcode CheckpointError} unless `dir` is a folder with a `config.json`; a
 * training checkpoint's folder (its model in `model/`) is named as such.
 */
export function expectModelFolder(dir: string): void {
  const expected = "expected a Hugging Face model folder (config.json, model.safetensors, " +
    "tokenizer.json)";
  let isFolder;
  try {
    isFolder = Deno.statSync(dir).isDirectory;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new CheckpointError(`${dir}: no such folder: ${expected}`, { file: dir });
  }
  if (!isFolder) throw new CheckpointError(`${dir} is not a folder: ${expected}`, { file: dir });
  if (!isFile(`${dir}/config.json`) && isFile(`${dir}/model/config.json`)) {
    throw new CheckpointError(
      `${dir} has no config.json: it looks like a training checkpoint, whose model is in ` +
        `${dir.replace(/\/+$/, "")}/model`,
      { file: dir },
    );
  }
  // (before the tokenizer's check, which would name tokenizer.json in a folder that is no model)
  if (!isFile(`${dir}/config.json`)) {
    throw new CheckpointError(`${dir} has no config.json: ${expected}`, {
      file: `${dir}/config.json`,
    });
  }
}

/**
 * Parses the folder's chat template and renders a system and a user message with it, so that a
 * template that cannot work fails at load, naming its file, not in the first episode.
 */
export function probeChatTemplate(tokenizer: Tokenizer): void {
  const file = tokenizer.chatTemplateFile;
  if (file === undefined) {
    // the built-in Qwen2.5 template: its turn markers must be tokens, not text
    const missing = missingChatMlTokens(tokenizer);
    if (missing.length > 0) {
      throw new TokenizerLoadError(
        `${tokenizer.source}/tokenizer_config.json`,
        `${tokenizer.source} has no chat template (tokenizer_config.json's chat_template or ` +
          `chat_template.jinja), and the built-in Qwen2.5 one needs ${missing.join(" and ")}, ` +
          "which its tokenizer lacks: expected a chat template in the folder",
      );
    }
    return;
  }
  try {
    ChatTemplate.forTokenizer(tokenizer).render(
      [{ role: "system", content: "s" }, { role: "user", content: "u" }],
      { addGenerationPrompt: true },
    );
  } catch (e) {
    throw new TokenizerLoadError(file, e instanceof Error ? e.message : String(e), { cause: e });
  }
}

/**
 * Loads `config.json`, the safetensors weights (single file or sharded; f32,
 * bf16 or f16) and the tokenizer of a Qwen2 model folder.
 *
 * @example
 * ```ts ignore
 * import { Kernels } from "../../ffi/mod.ts";
 * import { loadPretrained } from "./pretrained.ts";
 * using k = Kernels.open();
 * using p = await loadPretrained(k, "/models/Qwen2.5-0.5B-Instruct");
 * console.log(p.model.numParams); // 494032768
 * ```
 */
export async function loadPretrained(
  kernels: Kernels,
  dir: string,
  options: LoadPretrainedOptions = {},
): Promise<Pretrained> {
  expectModelFolder(dir);
  const tokenizer = await Tokenizer.load(dir);
  probeChatTemplate(tokenizer);
  using ckpt = loadHfCheckpoint(dir);
  if (tokenizer.vocabSize > ckpt.config.vocab_size) {
    throw new CheckpointError(
      `${dir}/config.json: vocab_size is ${ckpt.config.vocab_size}, but ${dir}/tokenizer.json ` +
        `has ${tokenizer.vocabSize} tokens: expected a vocab_size of at least the tokenizer's`,
      { file: `${dir}/config.json`, key: "vocab_size" },
    );
  }
  const model = new Qwen2Model(kernels, ckpt.config, {
    init: "none",
    ...(options.valueHead ? { valueHead: true } : {}),
    ...(options.precision ? { precision: options.precision } : {}),
  });
  try {
    const missing = model.loadNamed(
      (name) => (ckpt.weights.has(name) ? ckpt.weights.readF32(name) : undefined),
      { strict: !options.valueHead },
    );
    const unexpected = missing.filter((n) => !n.startsWith("value_head."));
    if (unexpected.length > 0) {
      throw new Error(`${dir}: weights missing from the checkpoint: ${unexpected.join(", ")}`);
    }
  } catch (e) {
    model.dispose();
    throw e;
  }
  return {
    model,
    tokenizer,
    config: ckpt.config,
    dir,
    notes: [...ckpt.notes],
    [Symbol.dispose]() {
      model.dispose();
    },
  };
}

/**
 * The tokenizer files (and generation_config.json) of model folder `dir` that exist, by name:
 * what {@linkcode savePretrained} copies, read once so that a later save does not depend on
 * the folder still being there.
 */
export async function readTokenizerFiles(dir: string): Promise<Record<string, Uint8Array>> {
  const files: Record<string, Uint8Array> = {};
  for (const name of TOKENIZER_FILES) {
    try {
      files[name] = await Deno.readFile(`${dir}/${name}`);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  return files;
}

/**
 * Saves a model as a Hugging Face folder (weights, config.json) with the
 * tokenizer files copied from `tokenizerDir` (or given as `tokenizerFiles`, from
 * {@linkcode readTokenizerFiles}). A critic's value head is saved too
 * (transformers ignores it); `dtype` bf16 halves the size.
 */
export async function savePretrained(
  model: Qwen2Model,
  dir: string,
  options: {
    tokenizerDir?: string;
    tokenizerFiles?: Record<string, Uint8Array>;
    dtype?: "f32" | "bf16";
    overwrite?: boolean;
  } = {},
): Promise<SavedHfCheckpoint> {
  const extraFiles: Record<string, Uint8Array> = {};
  let generationConfig: Record<string, unknown> | undefined;
  const tokenizerFiles = options.tokenizerFiles ??
    (options.tokenizerDir ? await readTokenizerFiles(options.tokenizerDir) : {});
  for (const [name, bytes] of Object.entries(tokenizerFiles)) {
    if (name === "generation_config.json") {
      generationConfig = JSON.parse(new TextDecoder().decode(bytes));
    } else extraFiles[name] = bytes;
  }
  return await saveHfCheckpoint(
    dir,
    model.config,
    model.exportNamed().map((p) => [p.name, p.shape, p.data] as const),
    {
      extraFiles,
      check: !model.hasValueHead,
      ...(generationConfig ? { generationConfig } : {}),
      ...(options.dtype ? { dtype: options.dtype } : {}),
      ...(options.overwrite ? { overwrite: true } : {}),
    },
  );
}
