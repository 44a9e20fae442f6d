/**
 * Named regions of one flat native buffer (llm.c style): every parameter of a
 * model in one f32 tensor, its gradient in a second tensor of the same layout,
 * activations of one batch shape in a third. A region is a name, a shape, a
 * dtype (f32 or i32, both 4 bytes) and an offset in 4-byte words, aligned to
 * 64 bytes so that every region starts on a cache line.
 *
 * @example
 * ```ts
 * import { BufferLayout } from "./param_layout.ts";
 * const layout = new BufferLayout();
 * layout.add("w", [3, 5]);
 * layout.add("b", [3]);
 * console.log(layout.get("b").offset, layout.total); // 16 32
 * ```
 *
 * @module
 */
import { Tensor } from "../../ffi/mod.ts";
import { hasQkNorm, type Qwen2Config } from "./config.ts";

/** Element types a region may hold (both 4 bytes wide). */
export type RegionDType = "f32" | "i32";

/** One named region of a {@linkcode BufferLayout}. */
export interface Region {
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: RegionDType;
  /** Offset in 4-byte words from the start of the buffer. */
  readonly offset: number;
  /** Number of elements (product of the shape). */
  readonly size: number;
}

/** Words per alignment unit: 16 x 4 bytes = one 64-byte cache line. */
export const ALIGN_WORDS = 16;

/**
 * An ordered set of named regions in one buffer.
 *
 * @example
 * ```ts
 * import { BufferLayout } from "./param_layout.ts";
 * const layout = new BufferLayout();
 * const r = layout.add("tokens", [7], "i32");
 * console.log(r.offset, r.size, layout.total); // 0 7 16
 * ```
 */
export class BufferLayout {
  readonly #regions: Region[] = [];
  readonly #byName = new Map<string, Region>();
  #total = 0;

  /** Appends a region; its offset is the current end rounded up to 64 bytes. */
  add(name: string, shape: readonly number[], dtype: RegionDType = "f32"): Region {
    if (this.#byName.has(name)) throw new Error(`Region '${name}' is already in the layout`);
    for (const d of shape) {
      if (!Number.isInteger(d) || d <= 0) {
        throw new RangeError(
          `Region '${name}' must have positive integer dimensions, got [${shape.join(", ")}]`,
        );
      }
    }
    const size = shape.reduce((a, b) => a * b, 1);
    const offset = Math.ceil(this.#total / ALIGN_WORDS) * ALIGN_WORDS;
    const region: Region = Object.freeze({
      name,
      shape: Object.freeze([...shape]),
      dtype,
      offset,
      size,
    });
    this.#regions.push(region);
    this.#byName.set(name, region);
    this.#total = offset + size;
    return region;
  }

  /** The region called `name`; throws when there is none. */
  get(name: string): Region {
    const r = this.#byName.get(name);
    if (r === undefined) throw new Error(`No region named '${name}' in this layout`);
    return r;
  }

  /** Whether a region called `name` exists. */
  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /** Regions in the order they were added. */
  get regions(): readonly Region[] {
    return this.#regions;
  }

  /** Words the buffer needs (end of the last region, rounded up to 64 bytes). */
  get total(): number {
    return Math.max(ALIGN_WORDS, Math.ceil(this.#total / ALIGN_WORDS) * ALIGN_WORDS);
  }

  /** Elements in all regions (padding excluded). */
  get elements(): number {
    return this.#regions.reduce((a, r) => a + r.size, 0);
  }

  /** A view tensor of `region` inside `buffer` (no copy), optionally reshaped. */
  static view(buffer: Tensor, region: Region, shape: readonly number[] = region.shape): Tensor {
    return Tensor.viewOf(buffer, region.offset * 4, shape, region.dtype);
  }
}

/** Options of {@linkcode qwen2ParamLayout}. */
export interface Qwen2LayoutOptions {
  /** Adds `value_head.weight` [C] and `value_head.bias` [1] (the critic). */
  valueHead?: boolean;
}

/**
 * The parameter layout of a Qwen2 model, with Hugging Face's weight names and
 * [out, in] shapes, in the order of transformers' `state_dict()`:
 * `model.embed_tokens.weight`; per layer `self_attn.{q,k,v}_proj.{weight,bias}`
 * (biases only with `attention_bias`), `self_attn.o_proj.weight`,
 * `self_attn.{q,k}_norm.weight` (Qwen3 only), `mlp.{gate,up,down}_proj.weight`, `input_layernorm.weight`,
 * `post_attention_layernorm.weight`; `model.norm.weight`; `lm_head.weight` only
 * when the embeddings are not tied; then the optional value head.
 *
 * @example
 * ```ts
 * import { qwen2ParamLayout } from "./param_layout.ts";
 * const layout = qwen2ParamLayout({
 *   vocab_size: 32, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1,
 *   num_attention_heads: 4, num_key_value_heads: 2, head_dim: 4,
 *   max_position_embeddings: 64, rope_theta: 10000, rms_norm_eps: 1e-6,
 *   tie_word_embeddings: true, attention_bias: true, bos_token_id: null, eos_token_id: null,
 * });
 * console.log(layout.get("model.layers.0.self_attn.k_proj.weight").shape); // [ 8, 16 ]
 * ```
 */
export function qwen2ParamLayout(
  config: Qwen2Config,
  options: Qwen2LayoutOptions = {},
): BufferLayout {
  const c = config.hidden_size;
  const v = config.vocab_size;
  const f = config.intermediate_size;
  const qd = config.num_attention_heads * config.head_dim;
  const kvd = config.num_key_value_heads * config.head_dim;
  const layout = new BufferLayout();
  layout.add("model.embed_tokens.weight", [v, c]);
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    for (const [name, out] of [["q", qd], ["k", kvd], ["v", kvd]] as const) {
      layout.add(`${p}.self_attn.${name}_proj.weight`, [out, c]);
      if (config.attention_bias) layout.add(`${p}.self_attn.${name}_proj.bias`, [out]);
    }
    layout.add(`${p}.self_attn.o_proj.weight`, [c, qd]);
    if (hasQkNorm(config)) {
      layout.add(`${p}.self_attn.q_norm.weight`, [config.head_dim]);
      layout.add(`${p}.self_attn.k_norm.weight`, [config.head_dim]);
    }
    layout.add(`${p}.mlp.gate_proj.weight`, [f, c]);
    layout.add(`${p}.mlp.up_proj.weight`, [f, c]);
    layout.add(`${p}.mlp.down_proj.weight`, [c, f]);
    layout.add(`${p}.input_layernorm.weight`, [c]);
    layout.add(`${p}.post_attention_layernorm.weight`, [c]);
  }
  layout.add("model.norm.weight", [c]);
  if (!config.tie_word_embeddings) layout.add("lm_head.weight", [v, c]);
  if (options.valueHead) {
    layout.add("value_head.weight", [c]);
    layout.add("value_head.bias", [1]);
  }
  return layout;
}

/** How a parameter is initialised: by its role, from its name. */
export type ParamKind = "matrix" | "norm" | "bias";

/** The role of a Qwen2 parameter: norms (ones), biases (zeros) or matrices (normal). */
export function qwen2ParamKind(name: string): ParamKind {
  if (name.endsWith("norm.weight")) return "norm";
  if (name.endsWith(".bias")) return "bias";
  return "matrix";
}
