/**
 * Hugging Face `config.json` ⇄ {@linkcode Qwen2Config}: parsing with validation
 * and HF's defaults, and writing a `config.json` that transformers loads as
 * `Qwen2ForCausalLM`, `Qwen3ForCausalLM`, `LlamaForCausalLM` or `MistralForCausalLM`.
 *
 * @module
 */
import {
  contextLength,
  isModelType,
  type ModelType,
  type Qwen2Config,
  type RopeScaling,
  type YarnRopeScaling,
} from "./config.ts";
import { ropeAttentionFactor, ropeScalingProblem, YARN_DEFAULTS } from "./rope_scaling.ts";
import { CheckpointError } from "./safetensors.ts";
import { isNormalF32 } from "../../ffi/mod.ts";

/** The Qwen2 architecture's name in `config.json`. */
export const QWEN2_ARCHITECTURE = "Qwen2ForCausalLM";

/** Each model type's architecture name in `config.json`. */
export const ARCHITECTURES: Readonly<Record<ModelType, string>> = {
  qwen2: QWEN2_ARCHITECTURE,
  qwen3: "Qwen3ForCausalLM",
  llama: "LlamaForCausalLM",
  mistral: "MistralForCausalLM",
};

/** Defaults of transformers' `Qwen2Config` for the optional fields we read. */
export const QWEN2_DEFAULTS = {
  max_position_embeddings: 32768,
  rope_theta: 10000,
  rms_norm_eps: 1e-6,
  tie_word_embeddings: false,
  attention_bias: true,
} as const;

/** Defaults of transformers' config classes where they differ from Qwen2's. */
const TYPE_DEFAULTS: Readonly<
  Record<ModelType, {
    max_position_embeddings: number;
    attention_bias: boolean;
    head_dim?: number;
    /** LlamaConfig's and MistralConfig's bos 1 and eos 2 (Qwen's configs have none). */
    bos_token_id?: number;
    eos_token_id?: number;
  }>
> = {
  qwen2: { max_position_embeddings: 32768, attention_bias: true },
  // Qwen3Config's head_dim is 128 whatever the hidden size
  qwen3: { max_position_embeddings: 32768, attention_bias: false, head_dim: 128 },
  llama: { max_position_embeddings: 2048, attention_bias: false, bos_token_id: 1, eos_token_id: 2 },
  mistral: {
    max_position_embeddings: 4096 * 32,
    attention_bias: false,
    bos_token_id: 1,
    eos_token_id: 2,
  },
};

type ScalingType = "llama3" | "linear" | "yarn";

/** A scaling as text with YaRN's defaults filled in: equal for scalings that rotate alike. */
function scalingKey(s: RopeScaling): string {
  if (s.rope_type !== "yarn") return JSON.stringify(s);
  return JSON.stringify([
    s.factor,
    s.original_max_position_embeddings,
    s.beta_fast ?? YARN_DEFAULTS.beta_fast,
    s.beta_slow ?? YARN_DEFAULTS.beta_slow,
    s.truncate ?? YARN_DEFAULTS.truncate,
    ropeAttentionFactor(s),
  ]);
}

/**
 * YaRN's fields with transformers 5's defaults filled in: `original_max_position_embeddings`
 * is config.json's top-level one, else `max_position_embeddings`, where absent; a missing
 * `factor` is their ratio.
 */
function yarnDefaults(
  v: Record<string, unknown>,
  maxPositions: number,
  topLevelOriginal: unknown,
): Record<string, unknown> {
  const original = v.original_max_position_embeddings ?? topLevelOriginal ?? maxPositions;
  const factor = v.factor ?? (typeof original === "number" ? maxPositions / original : undefined);
  return { ...v, original_max_position_embeddings: original, factor };
}

/** The YaRN scaling of checked fields: the required ones, and the optional ones given. */
function yarnScaling(v: Record<string, unknown>): YarnRopeScaling {
  const out: YarnRopeScaling = {
    rope_type: "yarn",
    factor: v.factor as number,
    original_max_position_embeddings: v.original_max_position_embeddings as number,
  };
  const optional = ["beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim"];
  for (const name of optional) {
    if (v[name] != null) Object.assign(out, { [name]: v[name] });
  }
  // (transformers reads truncate with get("truncate", True): a null is None, so no rounding)
  if (v.truncate !== undefined) out.truncate = v.truncate === null ? false : v.truncate as boolean;
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const show = (v: unknown): string => v === undefined ? "nothing" : JSON.stringify(v);

/** What the kernels take a config's eps or RoPE theta as: a positive, normal float32. */
const KERNEL_NUMBER = "a positive number within a float32's normal range (1.2e-38..3.4e38)";

/**
 * Parses a Hugging Face `config.json` object into a {@linkcode Qwen2Config}.
 *
 * Requires `model_type` `"qwen2"`, `"qwen3"`, `"llama"` or `"mistral"` and, when
 * `architectures` is given, that it include the matching `Qwen2ForCausalLM`,
 * `Qwen3ForCausalLM`, `LlamaForCausalLM` or `MistralForCausalLM` (Mistral with no
 * sliding window narrower than the context: MistralConfig's default is 4096); the
 * shape fields (`vocab_size`, `hidden_size`, `intermediate_size`,
 * `num_hidden_layers`, `num_attention_heads`) must be positive integers. The rest defaults as transformers does: `num_key_value_heads`
 * to the head count, `head_dim` to hidden / heads (Qwen3: 128), `rope_theta` 10000,
 * `rms_norm_eps` 1e-6, `tie_word_embeddings` false, `max_position_embeddings`
 * 32768 (Llama: 2048), `attention_bias` true for Qwen2 (transformers always gives
 * its q/k/v biases) and false otherwise, `bos_token_id` / `eos_token_id` 1 / 2 for Llama
 * and Mistral (null for Qwen). Features the model does not implement
 * (`hidden_act` other than silu, sliding window attention, RoPE scaling other than
 * Llama 3.1's `llama3`, `attention_bias` for the types whose attention_bias also
 * biases o_proj, and `mlp_bias`) are refused. Errors are
 * {@linkcode CheckpointError}s naming `source` and the key.
 *
 * @example
 * ```ts
 * import { parseQwen2Config } from "./hf_config.ts";
 * const c = parseQwen2Config({
 *   architectures: ["Qwen2ForCausalLM"],
 *   model_type: "qwen2",
 *   vocab_size: 64,
 *   hidden_size: 32,
 *   intermediate_size: 48,
 *   num_hidden_layers: 2,
 *   num_attention_heads: 4,
 *   num_key_value_heads: 2,
 * }, "tiny/config.json");
 * console.log(c.head_dim, c.rope_theta, c.attention_bias); // 8 10000 true
 * ```
 */
export function parseQwen2Config(json: unknown, source: string): Qwen2Config {
  const fail = (key: string | undefined, message: string): never => {
    throw new CheckpointError(`${source}: ${message}`, { file: source, key });
  };
  if (!isPlainObject(json)) {
    return fail(undefined, `expected a JSON object (a model config), found ${show(json)}`);
  }
  const get = (key: string): unknown => json[key] ?? undefined; // JSON null counts as absent

  const modelType = get("model_type");
  if (!isModelType(modelType)) {
    const known = Object.entries(ARCHITECTURES).map(([t, a]) => `"${t}" (${a})`).join(", ");
    return fail(
      "model_type",
      `model_type is ${show(modelType)}; expected one this toolkit implements: ${known}`,
    );
  }
  const architecture = ARCHITECTURES[modelType];
  const defaults = TYPE_DEFAULTS[modelType];
  const architectures = get("architectures");
  if (architectures !== undefined) {
    if (!Array.isArray(architectures) || !architectures.every((a) => typeof a === "string")) {
      fail("architectures", `architectures is ${show(architectures)}; expected a list of names`);
    }
    if (!(architectures as string[]).includes(architecture)) {
      fail(
        "architectures",
        `architectures is ${
          show(architectures)
        }; expected it to include "${architecture}" (model_type "${modelType}")`,
      );
    }
  }

  const positiveInt = (key: string, fallback?: number): number => {
    const v = get(key) ?? fallback;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
      return fail(key, `${key} is ${show(get(key))}; expected a positive integer`);
    }
    return v;
  };
  const positiveNumber = (key: string, fallback: number): number => {
    const v = get(key) ?? fallback;
    if (!isNormalF32(v)) {
      return fail(key, `${key} is ${show(get(key))}; expected ${KERNEL_NUMBER}`);
    }
    return v;
  };
  const boolean = (key: string, fallback: boolean): boolean => {
    const v = get(key) ?? fallback;
    if (typeof v !== "boolean") return fail(key, `${key} is ${show(v)}; expected true or false`);
    return v;
  };
  // Called after vocab_size is read: a token id the model cannot emit is a config mistake.
  const isTokenId = (x: unknown): x is number =>
    typeof x === "number" && Number.isSafeInteger(x) && x >= 0 && x < vocab;
  // (absent: the type's default where it has one and the vocabulary holds it, as transformers)
  const fallback = (key: "bos_token_id" | "eos_token_id"): number | null => {
    const id = defaults[key];
    return id !== undefined && id < vocab ? id : null;
  };
  // (an explicit null stays null, as transformers keeps it; only an absent key takes the default)
  const tokenId = (key: "bos_token_id"): number | null => {
    const v = get(key);
    if (v === undefined) return json[key] === null ? null : fallback(key);
    if (isTokenId(v)) return v;
    return fail(key, `${key} is ${show(v)}; expected a token id in [0, ${vocab}) or null`);
  };
  const tokenIds = (key: "eos_token_id"): number | number[] | null => {
    const v = get(key);
    if (v === undefined) return json[key] === null ? null : fallback(key);
    if (isTokenId(v)) return v;
    if (Array.isArray(v) && v.length > 0 && v.every(isTokenId)) return [...v];
    return fail(
      key,
      `${key} is ${show(v)}; expected a token id in [0, ${vocab}), a list of them, or null`,
    );
  };

  const vocab = positiveInt("vocab_size");
  const hidden = positiveInt("hidden_size");
  const intermediate = positiveInt("intermediate_size");
  const layers = positiveInt("num_hidden_layers");
  const heads = positiveInt("num_attention_heads");
  const kvHeads = positiveInt("num_key_value_heads", heads);
  if (heads % kvHeads !== 0) {
    fail(
      "num_key_value_heads",
      `num_key_value_heads (${kvHeads}) must divide num_attention_heads (${heads})`,
    );
  }
  if (get("head_dim") === undefined && defaults.head_dim === undefined && hidden % heads !== 0) {
    fail(
      "num_attention_heads",
      `num_attention_heads (${heads}) must divide hidden_size (${hidden}) when head_dim is not given`,
    );
  }
  const headDim = positiveInt("head_dim", defaults.head_dim ?? hidden / heads);
  if (headDim % 2 !== 0) {
    fail("head_dim", `head_dim is ${headDim}; expected an even number (RoPE rotates pairs)`);
  }

  const act = get("hidden_act");
  // ("swish" is transformers' other name for SiLU)
  if (act !== undefined && act !== "silu" && act !== "swish") {
    fail("hidden_act", `hidden_act is ${show(act)}; expected "silu" (SwiGLU is all we implement)`);
  }
  const dropout = get("attention_dropout");
  if (dropout !== undefined && dropout !== 0) {
    fail(
      "attention_dropout",
      `attention_dropout is ${
        show(dropout)
      }; attention dropout is not implemented (expected 0, as Qwen, Llama and Mistral ship it)`,
    );
  }
  if (boolean("use_sliding_window", false)) {
    fail(
      "use_sliding_window",
      "use_sliding_window is true; sliding-window attention is not implemented (set it to false)",
    );
  }
  // (transformers' Mistral never biases its projections, whatever attention_bias says)
  const biasKey = boolean("attention_bias", defaults.attention_bias);
  const attentionBias = modelType === "mistral" ? false : biasKey;
  if (attentionBias && modelType !== "qwen2") {
    fail(
      "attention_bias",
      `attention_bias is true; ${architecture} then also biases o_proj, which is not ` +
        "implemented (expected false)",
    );
  }
  if (boolean("mlp_bias", false)) {
    fail("mlp_bias", "mlp_bias is true; MLP biases are not implemented (expected false)");
  }
  // partial_rotary_factor (top level, or in the RoPE settings): only the whole head is rotated
  const fullRotary = (key: string, name: string, v: unknown) => {
    if (v != null && v !== 1) {
      fail(
        key,
        `${name} is ${show(v)}; rotating part of each head is not implemented (expected 1 or none)`,
      );
    }
  };
  // RoPE scaling: Llama 3.1's "llama3" type, "linear" or YaRN's "yarn", from rope_scaling
  // (transformers 4.x) or rope_parameters (transformers 5, beside rope_theta)
  const maxPositions = positiveInt("max_position_embeddings", defaults.max_position_embeddings);
  const topOriginal = get("original_max_position_embeddings");
  const scaled = (key: string, type: ScalingType, v: Record<string, unknown>): RopeScaling => {
    if (
      type === "yarn" && topOriginal != null && v.original_max_position_embeddings != null &&
      topOriginal !== v.original_max_position_embeddings
    ) {
      fail(
        key,
        `original_max_position_embeddings (${show(topOriginal)}) and ${key}.` +
          `original_max_position_embeddings (${
            show(v.original_max_position_embeddings)
          }) disagree; expected one value`,
      );
    }
    const given = type === "yarn" ? yarnDefaults(v, maxPositions, topOriginal) : v;
    const problem = ropeScalingProblem({ ...given, rope_type: type });
    if (problem !== null) fail(key, `${key}.${problem}`);
    if (type === "linear") return { rope_type: type, factor: v.factor as number };
    if (type === "yarn") return yarnScaling(given);
    return {
      rope_type: type,
      factor: v.factor as number,
      low_freq_factor: v.low_freq_factor as number,
      high_freq_factor: v.high_freq_factor as number,
      original_max_position_embeddings: v.original_max_position_embeddings as number,
    };
  };
  // (a missing type, as transformers reads it, is default RoPE)
  const scalingOf = (key: string, v: unknown): RopeScaling | null => {
    if (!isPlainObject(v)) return fail(key, `${key} is ${show(v)}; expected an object or null`);
    if (v.rope_type != null && v.type != null && v.rope_type !== v.type) {
      return fail(
        key,
        `${key} has type ${show(v.type)} and rope_type ${
          show(v.rope_type)
        }; expected one type (transformers 4.x takes "rope_type" over "type")`,
      );
    }
    fullRotary(key, `${key}.partial_rotary_factor`, v.partial_rotary_factor);
    const type = v.rope_type ?? v.type ?? "default";
    if (type === "default") return null;
    if (type !== "llama3" && type !== "linear" && type !== "yarn") {
      return fail(
        key,
        `${key} is ${show(v)}; RoPE scaling of type ${
          show(type)
        } is not implemented (expected "default", "llama3", "linear" or "yarn")`,
      );
    }
    return scaled(key, type, v);
  };
  fullRotary("partial_rotary_factor", "partial_rotary_factor", get("partial_rotary_factor"));
  const ropeScalingRaw = get("rope_scaling");
  let ropeScaling = ropeScalingRaw === undefined ? null : scalingOf("rope_scaling", ropeScalingRaw);

  // transformers 5 writes RoPE settings as rope_parameters {rope_type, rope_theta}; 4.x as rope_theta.
  let ropeTheta = positiveNumber("rope_theta", QWEN2_DEFAULTS.rope_theta);
  const ropeParams = get("rope_parameters");
  if (ropeParams !== undefined) {
    if (!isPlainObject(ropeParams)) {
      fail("rope_parameters", `rope_parameters is ${show(ropeParams)}; expected an object`);
    }
    const rp = ropeParams as Record<string, unknown>;
    const fromParams = scalingOf("rope_parameters", rp);
    if (fromParams && ropeScaling && scalingKey(fromParams) !== scalingKey(ropeScaling)) {
      fail("rope_parameters", "rope_parameters and rope_scaling describe different RoPE scalings");
    }
    ropeScaling = fromParams ?? ropeScaling;
    const theta = rp.rope_theta;
    if (theta !== undefined && theta !== null) {
      if (!isNormalF32(theta)) {
        fail(
          "rope_parameters",
          `rope_parameters.rope_theta is ${show(theta)}; expected ${KERNEL_NUMBER}`,
        );
      }
      if (get("rope_theta") !== undefined && get("rope_theta") !== theta) {
        fail(
          "rope_theta",
          `rope_theta (${show(get("rope_theta"))}) and rope_parameters.rope_theta (${
            show(theta)
          }) disagree`,
        );
      }
      ropeTheta = theta as number;
    }
  }

  if (ropeScaling?.rope_type === "yarn" && !(ropeTheta > 1)) {
    fail("rope_theta", `rope_theta is ${show(ropeTheta)}; YaRN needs it above 1`);
  }
  // MistralConfig's sliding window (4096 when not given) applies to every layer; it changes
  // nothing only where it covers every position (YaRN's longer context too)
  if (modelType === "mistral") {
    // (null, unlike the other keys, is not "absent" here: it turns the window off)
    const raw = json.sliding_window;
    const window = raw === undefined ? 4096 : raw;
    const context = contextLength({
      max_position_embeddings: maxPositions,
      rope_scaling: ropeScaling,
    });
    if (window !== null && !(typeof window === "number" && window >= context)) {
      const what = typeof window === "number" && window >= maxPositions
        ? `below the context YaRN gives (${context} positions)`
        : `below max_position_embeddings (${maxPositions})`;
      fail(
        "sliding_window",
        `sliding_window is ${show(window)}${
          raw === undefined ? " (MistralConfig's default)" : ""
        }, ${what}: sliding-window attention is not implemented (expected null, as ` +
          "Mistral-7B v0.2 / v0.3 have it)",
      );
    }
  }

  return {
    vocab_size: vocab,
    hidden_size: hidden,
    intermediate_size: intermediate,
    num_hidden_layers: layers,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    max_position_embeddings: maxPositions,
    rope_theta: ropeTheta,
    rms_norm_eps: positiveNumber("rms_norm_eps", QWEN2_DEFAULTS.rms_norm_eps),
    tie_word_embeddings: boolean("tie_word_embeddings", QWEN2_DEFAULTS.tie_word_embeddings),
    attention_bias: attentionBias,
    bos_token_id: tokenId("bos_token_id"),
    eos_token_id: tokenIds("eos_token_id"),
    model_type: modelType,
    rope_scaling: ropeScaling,
  };
}

/** Options for {@linkcode qwen2ConfigToJson}. */
export interface Qwen2ConfigJsonOptions {
  /** The dtype the weights are stored in: `float32` (default) or `bfloat16`. */
  torch_dtype?: "float32" | "bfloat16";
}

/** The keys transformers reads as floats: written `32.0`, not `32` (it warns on a llama3 int factor). */
const FLOAT_KEYS = new Set([
  "factor",
  "low_freq_factor",
  "high_freq_factor",
  "rope_theta",
  "attention_dropout",
  // YaRN's (transformers 5 warns on an int attention_factor)
  "attention_factor",
  "beta_fast",
  "beta_slow",
  "mscale",
  "mscale_all_dim",
]);

/**
 * `config.json`'s text for {@linkcode qwen2ConfigToJson}'s object: JSON with two-space indents, and
 * the float fields that hold whole numbers written with `.0`, as Python's json module writes them.
 *
 * @example
 * ```ts
 * import { configJsonText } from "./hf_config.ts";
 * console.log(configJsonText({ rope_theta: 10000, rope_scaling: { factor: 32 } }).includes("32.0")); // true
 * ```
 */
export function configJsonText(json: Record<string, unknown>): string {
  const marker = "\u0000float:";
  const text = JSON.stringify(
    json,
    (key, value) =>
      FLOAT_KEYS.has(key) && typeof value === "number" && Number.isInteger(value)
        ? `${marker}${value}`
        : value,
    2,
  );
  return text.replace(/"\\u0000float:([^"]+)"/g, (_, n) => /^-?\d+$/.test(n) ? `${n}.0` : n) +
    "\n";
}

/**
 * A `config.json` object for `config` that transformers loads as its
 * architecture (`Qwen2ForCausalLM` unless `model_type` names another),
 * and {@linkcode parseQwen2Config} reads back unchanged.
 *
 * @example
 * ```ts
 * import { parseQwen2Config, qwen2ConfigToJson } from "./hf_config.ts";
 * const config = parseQwen2Config({
 *   model_type: "qwen2",
 *   vocab_size: 64,
 *   hidden_size: 32,
 *   intermediate_size: 48,
 *   num_hidden_layers: 2,
 *   num_attention_heads: 4,
 * }, "demo");
 * const json = qwen2ConfigToJson(config, { torch_dtype: "bfloat16" });
 * console.log(json.architectures, json.hidden_act); // ["Qwen2ForCausalLM"] "silu"
 * ```
 */
export function qwen2ConfigToJson(
  config: Qwen2Config,
  options: Qwen2ConfigJsonOptions = {},
): Record<string, unknown> {
  const modelType = config.model_type ?? "qwen2";
  const common = {
    architectures: [ARCHITECTURES[modelType]],
    model_type: modelType,
    attention_dropout: 0.0,
    bos_token_id: config.bos_token_id,
    eos_token_id: config.eos_token_id,
    hidden_act: "silu",
    hidden_size: config.hidden_size,
    initializer_range: 0.02,
    intermediate_size: config.intermediate_size,
    max_position_embeddings: config.max_position_embeddings,
    num_attention_heads: config.num_attention_heads,
    num_hidden_layers: config.num_hidden_layers,
    num_key_value_heads: config.num_key_value_heads,
    head_dim: config.head_dim,
    rms_norm_eps: config.rms_norm_eps,
    // (linear and YaRN also as "type": transformers before 4.43 reads only that key, and Qwen's
    // model cards write YaRN's so)
    rope_scaling: config.rope_scaling?.rope_type === "linear" ||
        config.rope_scaling?.rope_type === "yarn"
      ? { type: config.rope_scaling.rope_type, ...config.rope_scaling }
      : config.rope_scaling ?? null,
    rope_theta: config.rope_theta,
    tie_word_embeddings: config.tie_word_embeddings,
    torch_dtype: options.torch_dtype ?? "float32",
    use_cache: true,
    vocab_size: config.vocab_size,
  };
  if (modelType === "llama") return { ...common, attention_bias: false, mlp_bias: false };
  if (modelType === "mistral") return { ...common, sliding_window: null };
  return {
    ...common,
    max_window_layers: config.num_hidden_layers,
    sliding_window: config.max_position_embeddings,
    use_sliding_window: false,
    // transformers ignores this for Qwen2 (q/k/v always have biases); we read it back.
    attention_bias: config.attention_bias,
  };
}
