/**
 * A Hugging Face model folder as agentrl uses it: the Qwen2 weights loaded into
 * a {@linkcode Qwen2Model}, plus its tokenizer; and the way back, a folder that
 * transformers (and agentrl) load.
 *
 * @module
 */
import type { Kernels } from "../../ffi/mod.ts";
import { loadHfCheckpoint, type SavedHfCheckpoint, saveHfCheckpoint } from "./checkpoint.ts";
import type { Qwen2Config } from "./config.ts";
import { Qwen2Model } from "./qwen2.ts";
import type { Precision } from "./_mixed_precision.ts";
import { Tokenizer } from "./tokenizer.ts";

/** Files besides the weights that travel with a model folder. */
export const TOKENIZER_FILES = [
  "tokenizer.json",
  "tokenizer_config.json",
  "generation_config.json",
  "chat_template.jinja",
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
  const tokenizer = await Tokenizer.load(dir);
  using ckpt = loadHfCheckpoint(dir);
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
 * Saves a model as a Hugging Face folder (weights, config.json) with the
 * tokenizer files copied from `tokenizerDir`. A critic's value head is saved
 * too (transformers ignores it); `dtype` bf16 halves the size.
 */
export async function savePretrained(
  model: Qwen2Model,
  dir: string,
  options: { tokenizerDir?: string; dtype?: "f32" | "bf16"; overwrite?: boolean } = {},
): Promise<SavedHfCheckpoint> {
  const extraFiles: Record<string, Uint8Array> = {};
  let generationConfig: Record<string, unknown> | undefined;
  if (options.tokenizerDir) {
    for (const name of TOKENIZER_FILES) {
      let bytes: Uint8Array;
      try {
        bytes = await Deno.readFile(`${options.tokenizerDir}/${name}`);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) continue;
        throw e;
      }
      if (name === "generation_config.json") {
        generationConfig = JSON.parse(new TextDecoder().decode(bytes));
      } else extraFiles[name] = bytes;
    }
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
