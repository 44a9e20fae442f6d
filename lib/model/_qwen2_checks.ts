/**
 * The checks {@linkcode Qwen2Model} makes of its config and of packed batches before any
 * kernel runs, each a clear error naming the field.
 *
 * @module
 */
import { isNormalF32 } from "../../ffi/mod.ts";
import { isModelType, MODEL_TYPES, type Qwen2Config } from "./config.ts";
import { ropeScalingProblem } from "./rope_scaling.ts";
import type { PackedBatch } from "./qwen2.ts";

/** Throws a clear error unless `cfg` describes a model the kernels can run. */
export function validateConfig(cfg: Qwen2Config): void {
  const ints: (keyof Qwen2Config)[] = [
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
  ];
  for (const key of ints) {
    const n = cfg[key];
    if (typeof n !== "number" || !Number.isInteger(n) || n <= 0 || n > 2 ** 31 - 1) {
      throw new RangeError(`Qwen2 config ${key} must be a positive integer, got ${n}`);
    }
  }
  if (cfg.num_attention_heads % cfg.num_key_value_heads !== 0) {
    throw new RangeError(
      `Qwen2 config num_attention_heads (${cfg.num_attention_heads}) must be a multiple of ` +
        `num_key_value_heads (${cfg.num_key_value_heads})`,
    );
  }
  const type = cfg.model_type ?? "qwen2";
  if (!isModelType(type)) {
    const names = MODEL_TYPES.map((t) => `"${t}"`);
    throw new RangeError(
      `Qwen2 config model_type must be ${names.slice(0, -1).join(", ")} or ${names.at(-1)}, ` +
        `got ${JSON.stringify(type)}`,
    );
  }
  if (type !== "qwen2" && cfg.attention_bias) {
    throw new RangeError(
      `Qwen2 config attention_bias must be false for model_type ${type} (its attention_bias ` +
        "biases o_proj too, which is not implemented)",
    );
  }
  const scaling = cfg.rope_scaling;
  if (scaling) {
    const type = (scaling as { rope_type: unknown }).rope_type;
    const problem = type === "llama3" || type === "linear" || type === "yarn"
      ? ropeScalingProblem(scaling as unknown as Record<string, unknown>) ??
        (type === "yarn" && !(cfg.rope_theta > 1)
          ? `YaRN needs rope_theta above 1, got ${cfg.rope_theta}`
          : null)
      : `rope_type is ${JSON.stringify(type)}; expected "llama3", "linear" or "yarn"`;
    if (problem !== null) {
      throw new RangeError(
        `Qwen2 config rope_scaling: ${problem} (got ${JSON.stringify(scaling)})`,
      );
    }
  }
  if (cfg.head_dim % 2 !== 0) {
    throw new RangeError(`Qwen2 config head_dim must be even for RoPE, got ${cfg.head_dim}`);
  }
  // (the kernels take both as float32s: a normal one, or 0 for the eps)
  if (!isNormalF32(cfg.rope_theta)) {
    throw new RangeError(
      `Qwen2 config rope_theta must be a positive number in 1.2e-38..3.4e38, got ${cfg.rope_theta}`,
    );
  }
  if (!(cfg.rms_norm_eps === 0 || isNormalF32(cfg.rms_norm_eps))) {
    throw new RangeError(
      `Qwen2 config rms_norm_eps must be 0 or a positive number in 1.2e-38..3.4e38, got ${cfg.rms_norm_eps}`,
    );
  }
}

/** Throws unless `x` is an Int32Array (of `length` entries, when given). */
export function expectInt32Array(
  x: unknown,
  name: string,
  length?: number,
): asserts x is Int32Array {
  if (!(x instanceof Int32Array)) throw new TypeError(`${name} must be an Int32Array`);
  if (length !== undefined && x.length !== length) {
    throw new RangeError(`${name} must have ${length} entries, got ${x.length}`);
  }
}

/** Token ids in [0, vocab): checked here, before the (CUDA: deferred) kernel check. */
export function expectTokenIds(tokens: Int32Array, vocab: number): void {
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i]!;
    if (!(id >= 0 && id < vocab)) {
      throw new RangeError(`tokens[${i}] = ${id} is outside the vocabulary 0..${vocab - 1}`);
    }
  }
}

/** The batch's tokens (T) and sequences (B), its arrays checked against each other. */
export function checkPacked(batch: PackedBatch, vocab: number): { t: number; b: number } {
  expectInt32Array(batch.tokens, "tokens");
  expectTokenIds(batch.tokens, vocab);
  const t = batch.tokens.length;
  if (t < 1) throw new RangeError("tokens must hold at least one token");
  expectInt32Array(batch.positions, "positions", t);
  expectInt32Array(batch.cuSeqlens, "cuSeqlens");
  const cu = batch.cuSeqlens;
  const b = cu.length - 1;
  if (b < 1) throw new RangeError("cuSeqlens needs at least 2 entries (B + 1)");
  if (cu[0] !== 0) throw new RangeError(`cuSeqlens[0] must be 0, got ${cu[0]}`);
  for (let s = 0; s < b; s++) {
    if (cu[s + 1]! < cu[s]!) {
      throw new RangeError(
        `cuSeqlens must be non-decreasing, got ${cu[s]} then ${cu[s + 1]} at ${s}`,
      );
    }
  }
  if (cu[b] !== t) throw new RangeError(`cuSeqlens[${b}] must equal the ${t} tokens, got ${cu[b]}`);
  for (let i = 0; i < t; i++) {
    if (batch.positions[i]! < 0) {
      throw new RangeError(`positions must be non-negative, got ${batch.positions[i]} at ${i}`);
    }
  }
  return { t, b };
}
