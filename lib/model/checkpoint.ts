/**
 * Hugging Face model folders: `config.json` plus `model.safetensors` or a sharded
 * `model.safetensors.index.json`. Loading reads the config and the safetensors
 * headers only; weights are read one at a time on demand. Saving writes a folder
 * transformers can load, atomically.
 *
 * Qwen2 weight names and shapes (C hidden, F intermediate, V vocab, H heads,
 * Hkv key/value heads, D head_dim; Linear weights are [out, in]):
 *
 * ```
 * model.embed_tokens.weight                      [V, C]
 * model.layers.{i}.input_layernorm.weight          [C]
 * model.layers.{i}.self_attn.q_proj.weight         [H*D, C]     .bias [H*D]
 * model.layers.{i}.self_attn.k_proj.weight         [Hkv*D, C]   .bias [Hkv*D]
 * model.layers.{i}.self_attn.v_proj.weight         [Hkv*D, C]   .bias [Hkv*D]
 * model.layers.{i}.self_attn.o_proj.weight         [C, H*D]
 * model.layers.{i}.post_attention_layernorm.weight [C]
 * model.layers.{i}.mlp.gate_proj.weight            [F, C]
 * model.layers.{i}.mlp.up_proj.weight              [F, C]
 * model.layers.{i}.mlp.down_proj.weight            [C, F]
 * model.norm.weight                                [C]
 * lm_head.weight                                   [V, C]   only when not tied
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { hasQkNorm, type Qwen2Config } from "./config.ts";
import { configJsonText, parseQwen2Config, qwen2ConfigToJson } from "./hf_config.ts";
import {
  CheckpointError,
  closeNames,
  FLOAT_DTYPES,
  SAFETENSORS_DTYPE_BYTES,
  type SafetensorsDtype,
  SafetensorsFile,
  type TensorInfo,
  writeSafetensors,
} from "./safetensors.ts";

export { CheckpointError } from "./safetensors.ts";

/** File names of a Hugging Face model folder. */
export const HF_FILES = {
  config: "config.json",
  generationConfig: "generation_config.json",
  weights: "model.safetensors",
  index: "model.safetensors.index.json",
} as const;

/** A weight's name and shape. */
export interface WeightSpec {
  name: string;
  shape: number[];
}

/** Lazy, read-only access to a checkpoint's weights (each read on demand). */
export interface WeightReader extends Disposable {
  /** All weight names (across shards), sorted. */
  names(): string[];
  /** Whether a weight called `name` exists. */
  has(name: string): boolean;
  /** The shape of weight `name` (throws naming close names when absent). */
  shape(name: string): readonly number[];
  /** The on-disk dtype of weight `name`. */
  dtype(name: string): SafetensorsDtype;
  /** The file holding weight `name`. */
  file(name: string): string;
  /** Weight `name` as float32 (converted from BF16/F16/F64). */
  readF32(name: string): Float32Array;
  /** Closes the files (idempotent). */
  close(): void;
}

/** A loaded Hugging Face model folder. */
export interface HfCheckpoint extends Disposable {
  /** The folder. */
  dir: string;
  /** The parsed, validated model config. */
  config: Qwen2Config;
  /** `config.json` as written (for fields the model does not read). */
  rawConfig: Record<string, unknown>;
  /** `generation_config.json`, when the folder has one. */
  generationConfig: Record<string, unknown> | undefined;
  /** The weights, read on demand. */
  weights: WeightReader;
  /** What the weight check ignored (e.g. rotary `inv_freq` buffers); empty if unchecked. */
  notes: string[];
  /** Closes the weight files. */
  close(): void;
}

/** Options for {@linkcode loadHfCheckpoint}. */
export interface LoadHfCheckpointOptions {
  /** Check the weights against {@linkcode expectedQwen2Weights} (default true). */
  check?: boolean;
}

function toPath(path: string | URL): string {
  return path instanceof URL ? decodeURIComponent(path.pathname) : path;
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

function readJson(path: string, what: string): unknown {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new CheckpointError(`${what} ${path} does not exist`, { file: path });
    }
    if (e instanceof Deno.errors.PermissionDenied) throw e; // (Deno's permission, not the file)
    // a folder in its place, no read access, bad bytes: say which file, and what was expected
    throw new CheckpointError(
      `${what} ${path} cannot be read (${(e as Error).message}): expected a JSON file`,
      { file: path },
    );
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CheckpointError(`${path} is not valid JSON: ${(e as Error).message}`, {
      file: path,
    });
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const formatShape = (shape: readonly number[]): string => `[${shape.join(", ")}]`;

class SafetensorsWeights implements WeightReader {
  #where: Map<string, { file: SafetensorsFile; info: TensorInfo }>;
  #files: SafetensorsFile[];
  #source: string;

  constructor(
    files: SafetensorsFile[],
    where: Map<string, { file: SafetensorsFile; info: TensorInfo }>,
    source: string,
  ) {
    this.#files = files;
    this.#where = where;
    this.#source = source;
  }

  names(): string[] {
    return [...this.#where.keys()].sort();
  }

  has(name: string): boolean {
    return this.#where.has(name);
  }

  #get(name: string): { file: SafetensorsFile; info: TensorInfo } {
    const w = this.#where.get(name);
    if (w === undefined) {
      const close = closeNames(name, this.#where.keys());
      throw new CheckpointError(
        `Weight '${name}' not found in ${this.#source} (${this.#where.size} weights)${
          close.length ? `; close names: ${close.join(", ")}` : ""
        }`,
        { file: this.#source, key: name },
      );
    }
    return w;
  }

  shape(name: string): readonly number[] {
    return this.#get(name).info.shape;
  }

  dtype(name: string): SafetensorsDtype {
    return this.#get(name).info.dtype;
  }

  file(name: string): string {
    return this.#get(name).file.path;
  }

  readF32(name: string): Float32Array {
    return this.#get(name).file.readF32(name);
  }

  close(): void {
    for (const f of this.#files) f.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Opens the weights of a model folder: `model.safetensors`, or else the shards
 * that `model.safetensors.index.json` lists (every shard's header is read and
 * checked now, so a missing shard or a weight absent from its shard fails here).
 *
 * @example
 * ```ts
 * import { openHfWeights } from "./checkpoint.ts";
 * import { writeSafetensors } from "./safetensors.ts";
 * const dir = await Deno.makeTempDir();
 * await writeSafetensors(`${dir}/model.safetensors`, [
 *   { name: "model.norm.weight", shape: [2], data: new Float32Array([1, 1]) },
 * ]);
 * using w = openHfWeights(dir);
 * console.log(w.names(), w.shape("model.norm.weight")); // ["model.norm.weight"] [2]
 * ```
 */
export function openHfWeights(dir: string | URL): WeightReader {
  const d = toPath(dir);
  const single = join(d, HF_FILES.weights);
  const indexPath = join(d, HF_FILES.index);
  if (exists(single)) {
    const file = SafetensorsFile.open(single);
    const where = new Map(file.tensors().map((info) => [info.name, { file, info }]));
    return new SafetensorsWeights([file], where, single);
  }
  if (!exists(indexPath)) {
    let listing: string[] = [];
    try {
      listing = [...Deno.readDirSync(d)].map((e) => e.name).sort();
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new CheckpointError(`Model folder ${d} does not exist`, { file: d });
      }
      throw e;
    }
    const legacy = listing.filter((n) => n.endsWith(".bin") || n.endsWith(".pt"));
    throw new CheckpointError(
      `Model folder ${d} has neither ${HF_FILES.weights} nor ${HF_FILES.index}${
        legacy.length
          ? ` (found ${
            legacy.join(", ")
          }: PyTorch pickles are not read; re-save with safe_serialization=True)`
          : ` (it holds: ${listing.join(", ") || "nothing"})`
      }`,
      { file: d },
    );
  }
  const index = readJson(indexPath, "Index file");
  const weightMap = isPlainObject(index) ? index.weight_map : undefined;
  if (!isPlainObject(weightMap)) {
    throw new CheckpointError(
      `${indexPath}: expected an object with a 'weight_map' object (weight name → shard file)`,
      { file: indexPath, key: "weight_map" },
    );
  }
  const byShard = new Map<string, string[]>();
  for (const [name, shard] of Object.entries(weightMap)) {
    if (typeof shard !== "string" || shard === "" || /[\\/]/.test(shard) || shard === "..") {
      throw new CheckpointError(
        `${indexPath}: weight_map['${name}'] is ${
          JSON.stringify(shard)
        }; expected a shard file name in the same folder`,
        { file: indexPath, key: name },
      );
    }
    byShard.set(shard, [...(byShard.get(shard) ?? []), name]);
  }
  const files: SafetensorsFile[] = [];
  const where = new Map<string, { file: SafetensorsFile; info: TensorInfo }>();
  try {
    for (const [shard, names] of byShard) {
      const path = join(d, shard);
      if (!exists(path)) {
        throw new CheckpointError(
          `Shard ${path} is missing: ${indexPath} maps ${names.length} weights to it (e.g. '${
            names[0]
          }')`,
          { file: path, key: names[0] },
        );
      }
      const file = SafetensorsFile.open(path);
      files.push(file);
      for (const name of names) {
        if (!file.has(name)) {
          throw new CheckpointError(
            `${indexPath} maps weight '${name}' to ${shard}, but that shard has no such tensor`,
            { file: path, key: name },
          );
        }
        where.set(name, { file, info: file.info(name) });
      }
    }
  } catch (e) {
    for (const f of files) f.close();
    throw e;
  }
  return new SafetensorsWeights(files, where, indexPath);
}

/**
 * Loads a Hugging Face Qwen2 model folder: `config.json` (parsed and validated),
 * `generation_config.json` when present, and lazy access to the weights, checked
 * by default against the names and shapes the config implies.
 *
 * @example
 * ```ts
 * import { loadHfCheckpoint, saveHfCheckpoint, expectedQwen2Weights } from "./checkpoint.ts";
 * import { parseQwen2Config } from "./hf_config.ts";
 * const config = parseQwen2Config({
 *   model_type: "qwen2", vocab_size: 16, hidden_size: 8, intermediate_size: 12,
 *   num_hidden_layers: 1, num_attention_heads: 2, tie_word_embeddings: true,
 * }, "demo");
 * const weights = expectedQwen2Weights(config).map(({ name, shape }) =>
 *   [name, shape, new Float32Array(shape.reduce((a, b) => a * b, 1))] as const
 * );
 * const dir = `${await Deno.makeTempDir()}/tiny`;
 * await saveHfCheckpoint(dir, config, weights);
 * using ckpt = loadHfCheckpoint(dir);
 * console.log(ckpt.config.hidden_size, ckpt.weights.shape("model.norm.weight")); // 8 [8]
 * ```
 */
export function loadHfCheckpoint(
  dir: string | URL,
  options: LoadHfCheckpointOptions = {},
): HfCheckpoint {
  const d = toPath(dir);
  const configPath = join(d, HF_FILES.config);
  if (!exists(d)) throw new CheckpointError(`Model folder ${d} does not exist`, { file: d });
  const rawConfig = readJson(configPath, "Model config");
  let config = parseQwen2Config(rawConfig, configPath);
  const genPath = join(d, HF_FILES.generationConfig);
  let generationConfig: Record<string, unknown> | undefined;
  if (exists(genPath)) {
    const g = readJson(genPath, "Generation config");
    if (!isPlainObject(g)) {
      throw new CheckpointError(`${genPath}: expected a JSON object`, { file: genPath });
    }
    generationConfig = g;
  }
  const weights = openHfWeights(d);
  let notes: string[] = [];
  // transformers' Qwen2 gives q, k and v biases whatever attention_bias says (only our own
  // folders without biases write it false): a folder that has them is run with them
  const biasNote = !config.attention_bias && (config.model_type ?? "qwen2") === "qwen2" &&
    weights.has("model.layers.0.self_attn.q_proj.bias");
  if (biasNote) config = { ...config, attention_bias: true };
  try {
    if (options.check ?? true) notes = checkQwen2Weights(config, weights, d);
    if (biasNote) {
      notes.unshift(
        "attention_bias is false in config.json but the weights have q/k/v biases: they are " +
          "used, as transformers' Qwen2 always uses them",
      );
    }
  } catch (e) {
    weights.close();
    throw e;
  }
  return {
    dir: d,
    config,
    rawConfig: rawConfig as Record<string, unknown>,
    generationConfig,
    weights,
    notes,
    close: () => weights.close(),
    [Symbol.dispose]: () => weights.close(),
  };
}

/**
 * The weights a Qwen2ForCausalLM (or Qwen3ForCausalLM, LlamaForCausalLM) checkpoint
 * holds for `config`, in the order transformers registers them (biases only when
 * `attention_bias`; Qwen3's `q_norm` and `k_norm`; `lm_head.weight` only when the
 * embeddings are not tied).
 *
 * @example
 * ```ts
 * import { expectedQwen2Weights } from "./checkpoint.ts";
 * import { parseQwen2Config } from "./hf_config.ts";
 * const c = parseQwen2Config({
 *   model_type: "qwen2", vocab_size: 151936, hidden_size: 896, intermediate_size: 4864,
 *   num_hidden_layers: 24, num_attention_heads: 14, num_key_value_heads: 2,
 *   tie_word_embeddings: true,
 * }, "qwen2.5-0.5b");
 * const w = expectedQwen2Weights(c);
 * console.log(w.length); // 290 = 1 + 24 × 12 + 1
 * console.log(w.find((x) => x.name === "model.layers.0.self_attn.k_proj.weight")!.shape); // [128, 896]
 * ```
 */
export function expectedQwen2Weights(config: Qwen2Config): WeightSpec[] {
  const C = config.hidden_size, F = config.intermediate_size, V = config.vocab_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = config.num_key_value_heads * config.head_dim;
  const out: WeightSpec[] = [{ name: "model.embed_tokens.weight", shape: [V, C] }];
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    out.push({ name: `${p}.self_attn.q_proj.weight`, shape: [q, C] });
    if (config.attention_bias) out.push({ name: `${p}.self_attn.q_proj.bias`, shape: [q] });
    out.push({ name: `${p}.self_attn.k_proj.weight`, shape: [kv, C] });
    if (config.attention_bias) out.push({ name: `${p}.self_attn.k_proj.bias`, shape: [kv] });
    out.push({ name: `${p}.self_attn.v_proj.weight`, shape: [kv, C] });
    if (config.attention_bias) out.push({ name: `${p}.self_attn.v_proj.bias`, shape: [kv] });
    out.push({ name: `${p}.self_attn.o_proj.weight`, shape: [C, q] });
    if (hasQkNorm(config)) {
      out.push(
        { name: `${p}.self_attn.q_norm.weight`, shape: [config.head_dim] },
        { name: `${p}.self_attn.k_norm.weight`, shape: [config.head_dim] },
      );
    }
    out.push(
      { name: `${p}.mlp.gate_proj.weight`, shape: [F, C] },
      { name: `${p}.mlp.up_proj.weight`, shape: [F, C] },
      { name: `${p}.mlp.down_proj.weight`, shape: [C, F] },
      { name: `${p}.input_layernorm.weight`, shape: [C] },
      { name: `${p}.post_attention_layernorm.weight`, shape: [C] },
    );
  }
  out.push({ name: "model.norm.weight", shape: [C] });
  if (!config.tie_word_embeddings) out.push({ name: "lm_head.weight", shape: [V, C] });
  return out;
}

/**
 * Checks that `weights` holds every weight {@linkcode expectedQwen2Weights} lists,
 * with the right shape and a float dtype; throws one {@linkcode CheckpointError}
 * listing every problem. Extra weights are ignored (as transformers does) and
 * returned as notes: rotary `inv_freq` buffers, `lm_head.weight` when tied, others.
 *
 * @example
 * ```ts
 * import { checkQwen2Weights, expectedQwen2Weights } from "./checkpoint.ts";
 * import { parseQwen2Config } from "./hf_config.ts";
 * const c = parseQwen2Config({
 *   model_type: "qwen2", vocab_size: 4, hidden_size: 2, intermediate_size: 2,
 *   num_hidden_layers: 1, num_attention_heads: 1, tie_word_embeddings: true,
 * }, "demo");
 * const shapes = new Map(expectedQwen2Weights(c).map((w) => [w.name, w.shape]));
 * shapes.set("lm_head.weight", [4, 2]);
 * const notes = checkQwen2Weights(c, {
 *   names: () => [...shapes.keys()], shape: (n) => shapes.get(n)!, dtype: () => "BF16",
 * }, "demo");
 * console.log(notes); // ["lm_head.weight ignored: tie_word_embeddings is true, ..."]
 * ```
 */
export function checkQwen2Weights(
  config: Qwen2Config,
  weights: Pick<WeightReader, "names" | "shape" | "dtype">,
  source: string,
): string[] {
  const present = new Set(weights.names());
  // (a layer holds 9 weights at least: a mistyped layer count is named before its list is built)
  if (config.num_hidden_layers * 9 > present.size) {
    throw new CheckpointError(
      `${source}: num_hidden_layers is ${config.num_hidden_layers}, which needs at least ${
        config.num_hidden_layers * 9
      } weights; the checkpoint holds ${present.size}`,
      { file: source, key: "num_hidden_layers" },
    );
  }
  const expected = expectedQwen2Weights(config);
  const expectedNames = new Set(expected.map((w) => w.name));
  const missing: string[] = [];
  const problems: string[] = [];
  for (const { name, shape } of expected) {
    if (!present.has(name)) {
      missing.push(name);
      continue;
    }
    const found = weights.shape(name);
    if (found.length !== shape.length || found.some((d, i) => d !== shape[i])) {
      problems.push(
        `weight '${name}' has shape ${formatShape(found)}; expected ${formatShape(shape)}`,
      );
    }
    const dtype = weights.dtype(name);
    if (!FLOAT_DTYPES.includes(dtype)) {
      problems.push(`weight '${name}' is ${dtype}; expected one of ${FLOAT_DTYPES.join(", ")}`);
    }
  }
  if (missing.length > 0) {
    const shown = missing.slice(0, 10).map((name) => {
      const close = closeNames(name, [...present].filter((p) => !expectedNames.has(p)), 1);
      return close.length ? `${name} (found '${close[0]}')` : name;
    });
    problems.unshift(
      `${missing.length} expected weight${missing.length === 1 ? " is" : "s are"} missing: ${
        shown.join(", ")
      }${missing.length > 10 ? `, … (${missing.length - 10} more)` : ""}`,
    );
  }
  if (problems.length > 0) {
    throw new CheckpointError(
      `Checkpoint ${source} does not match its Qwen2 config (${config.num_hidden_layers} layers, hidden ${config.hidden_size}):\n  ${
        problems.join("\n  ")
      }`,
      { file: source },
    );
  }
  const extras = [...present].filter((n) => !expectedNames.has(n)).sort();
  const notes: string[] = [];
  const invFreq = extras.filter((n) => n.endsWith("rotary_emb.inv_freq"));
  if (invFreq.length > 0) {
    notes.push(
      `${invFreq.length} rotary inv_freq buffer(s) ignored (recomputed from rope_theta and rope_scaling)`,
    );
  }
  if (extras.includes("lm_head.weight") && config.tie_word_embeddings) {
    notes.push(
      "lm_head.weight ignored: tie_word_embeddings is true, so the output layer reuses model.embed_tokens.weight",
    );
  }
  const others = extras.filter((n) => !invFreq.includes(n) && n !== "lm_head.weight");
  if (others.length > 0) {
    notes.push(
      `${others.length} unexpected weight(s) ignored: ${others.slice(0, 10).join(", ")}${
        others.length > 10 ? ", …" : ""
      }`,
    );
  }
  return notes;
}

/** Options for {@linkcode saveHfCheckpoint}. */
export interface SaveHfCheckpointOptions {
  /** Stored dtype: `f32` (default) or `bf16` (round to nearest even). */
  dtype?: "f32" | "bf16";
  /** Split into shards of at most this many data bytes (default 5 GB, as transformers). */
  maxShardBytes?: number;
  /** Written as `generation_config.json` when given. */
  generationConfig?: Record<string, unknown>;
  /** More files to put in the folder (e.g. tokenizer files): name → contents. */
  extraFiles?: Record<string, string | Uint8Array>;
  /** Replace `dir` when it exists and is not empty (default false: an error). */
  overwrite?: boolean;
  /** Check names and shapes against {@linkcode expectedQwen2Weights} (default true). */
  check?: boolean;
}

/** What {@linkcode saveHfCheckpoint} wrote. */
export interface SavedHfCheckpoint {
  dir: string;
  /** File names written, config.json last. */
  files: string[];
  /** Total tensor data bytes. */
  totalBytes: number;
}

/**
 * Writes a Hugging Face model folder that transformers can load: the weights as
 * `model.safetensors` (or `model-0000i-of-0000n.safetensors` shards plus
 * `model.safetensors.index.json` when they exceed `maxShardBytes`), then
 * `generation_config.json` and extra files, and `config.json` last. Everything is
 * written into `dir.tmp-<pid>` and renamed to `dir` at the end, so a killed save
 * never leaves a folder at `dir` that looks complete.
 *
 * @example
 * ```ts
 * import { saveHfCheckpoint, expectedQwen2Weights } from "./checkpoint.ts";
 * import { parseQwen2Config } from "./hf_config.ts";
 * const config = parseQwen2Config({
 *   model_type: "qwen2", vocab_size: 16, hidden_size: 8, intermediate_size: 12,
 *   num_hidden_layers: 2, num_attention_heads: 2,
 * }, "demo");
 * const weights = expectedQwen2Weights(config).map(({ name, shape }) =>
 *   [name, shape, new Float32Array(shape.reduce((a, b) => a * b, 1))] as const
 * );
 * const saved = await saveHfCheckpoint(`${await Deno.makeTempDir()}/out`, config, weights, {
 *   dtype: "bf16",
 *   maxShardBytes: 512,
 * });
 * console.log(saved.files.at(-1)); // "config.json"
 * ```
 */
export async function saveHfCheckpoint(
  dir: string | URL,
  config: Qwen2Config,
  weights: Iterable<readonly [string, readonly number[], Float32Array]>,
  options: SaveHfCheckpointOptions = {},
): Promise<SavedHfCheckpoint> {
  const d = toPath(dir).replace(/\/+$/, "");
  const dtype = options.dtype ?? "f32";
  if (dtype !== "f32" && dtype !== "bf16") {
    throw new TypeError(
      `Cannot save ${d}: dtype '${dtype}' is not supported; expected f32 or bf16`,
    );
  }
  const maxShardBytes = options.maxShardBytes ?? 5_000_000_000;
  if (!(maxShardBytes > 0)) {
    throw new RangeError(`Cannot save ${d}: maxShardBytes is ${maxShardBytes}; expected > 0`);
  }
  for (const name of Object.keys(options.extraFiles ?? {})) {
    if (
      /[\\/]/.test(name) || name === ".." || name === "." || name === "" ||
      (Object.values(HF_FILES) as string[]).includes(name) || /^model-.*\.safetensors$/.test(name)
    ) {
      throw new TypeError(`Cannot save ${d}: extra file name '${name}' is not allowed`);
    }
  }
  const tensors = [...weights].map(([name, shape, data]) => ({ name, shape, data }));
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) {
      throw new TypeError(
        `Cannot save ${d}: weight '${t.name}' has shape ${
          formatShape(t.shape)
        } (${n} values) but ${t.data.length} values were given`,
      );
    }
  }
  if (options.check ?? true) {
    const shapes = new Map(tensors.map((t) => [t.name, t.shape]));
    const expected = new Set(expectedQwen2Weights(config).map((w) => w.name));
    const extra = tensors.filter((t) => !expected.has(t.name)).map((t) => t.name);
    if (extra.length > 0) {
      throw new CheckpointError(
        `Cannot save ${d}: ${extra.length} weight(s) a Qwen2 checkpoint does not have: ${
          extra.slice(0, 10).join(", ")
        } (pass check: false to write them anyway)`,
        { file: d, key: extra[0] },
      );
    }
    checkQwen2Weights(config, {
      names: () => [...shapes.keys()],
      shape: (n) => shapes.get(n)!,
      dtype: () => "F32",
    }, `to be saved at ${d}`);
  }

  // Shards: greedy in the given order; a tensor larger than the limit gets its own.
  const itemBytes = SAFETENSORS_DTYPE_BYTES[dtype === "f32" ? "F32" : "BF16"];
  const shards: (typeof tensors)[] = [[]];
  let shardBytes = 0, totalBytes = 0;
  for (const t of tensors) {
    const bytes = t.data.length * itemBytes;
    if (shards.at(-1)!.length > 0 && shardBytes + bytes > maxShardBytes) {
      shards.push([]);
      shardBytes = 0;
    }
    shards.at(-1)!.push(t);
    shardBytes += bytes;
    totalBytes += bytes;
  }
  const pad = (i: number) => String(i).padStart(5, "0");
  const shardName = (i: number) =>
    shards.length === 1
      ? HF_FILES.weights
      : `model-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`;

  let replace = false;
  try {
    const entries = [...Deno.readDirSync(d)];
    if (entries.length > 0 && !options.overwrite) {
      throw new CheckpointError(
        `Cannot save to ${d}: the folder exists and is not empty (pass overwrite: true to replace it)`,
        { file: d },
      );
    }
    replace = true;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }

  const tmp = `${d}.tmp-${Deno.pid}`;
  await Deno.remove(tmp, { recursive: true }).catch(() => {});
  await Deno.mkdir(tmp, { recursive: true });
  const files: string[] = [];
  try {
    const weightMap: Record<string, string> = {};
    for (const [i, shard] of shards.entries()) {
      const name = shardName(i);
      await writeSafetensors(join(tmp, name), shard, { dtype, metadata: { format: "pt" } });
      for (const t of shard) weightMap[t.name] = name;
      files.push(name);
    }
    const writeJson = async (name: string, value: unknown) => {
      await Deno.writeTextFile(join(tmp, name), JSON.stringify(value, null, 2) + "\n");
      files.push(name);
    };
    if (shards.length > 1) {
      const sorted = Object.fromEntries(
        Object.entries(weightMap).sort(([a], [b]) => a < b ? -1 : 1),
      );
      await writeJson(HF_FILES.index, { metadata: { total_size: totalBytes }, weight_map: sorted });
    }
    if (options.generationConfig !== undefined) {
      await writeJson(HF_FILES.generationConfig, options.generationConfig);
    }
    for (const [name, contents] of Object.entries(options.extraFiles ?? {})) {
      if (typeof contents === "string") await Deno.writeTextFile(join(tmp, name), contents);
      else await Deno.writeFile(join(tmp, name), contents);
      files.push(name);
    }
    const json = qwen2ConfigToJson(config, {
      torch_dtype: dtype === "f32" ? "float32" : "bfloat16",
    });
    await Deno.writeTextFile(join(tmp, HF_FILES.config), configJsonText(json));
    files.push(HF_FILES.config);
    if (replace) {
      const old = `${d}.old-${Deno.pid}`;
      await Deno.rename(d, old);
      await Deno.rename(tmp, d);
      await Deno.remove(old, { recursive: true });
    } else {
      await Deno.rename(tmp, d);
    }
  } catch (e) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw e;
  }
  return { dir: d, files, totalBytes };
}
