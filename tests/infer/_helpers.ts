// Shared helpers of the generation engine tests: a tiny random Qwen2 model
// whose logits are of order one (so that greedy generation does not lock onto
// one token), and an uncached reference built on forwardLogits.
import type { Qwen2Config } from "../../lib/model/config.ts";
import { Qwen2Model } from "../../lib/model/qwen2.ts";
import type { Kernels } from "../../ffi/mod.ts";
import { Rng } from "../kernels/_helpers.ts";

/** A 2-layer Qwen2 shape with a small vocabulary (64 unless overridden). */
export function smallConfig(overrides: Partial<Qwen2Config> = {}): Qwen2Config {
  return {
    vocab_size: 64,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    max_position_embeddings: 256,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
    attention_bias: true,
    bos_token_id: null,
    eos_token_id: null,
    ...overrides,
  };
}

/**
 * A model with order-one activations: matrices normal / sqrt(fan-in), the
 * (tied) embedding normal * 2 / sqrt(C), norms 1 + 0.2 normal, biases 0.2 normal.
 */
export function randomModel(k: Kernels, cfg: Qwen2Config, seed: string): Qwen2Model {
  const model = new Qwen2Model(k, cfg, { init: "none" });
  const rng = new Rng(`infer ${seed}`);
  model.loadNamed((name, shape) => {
    const n = shape.reduce((a, b) => a * b, 1);
    if (name.endsWith("norm.weight")) return Float32Array.from(rng.randn(n, 0.2), (x) => 1 + x);
    if (name.endsWith(".bias")) return rng.randn(n, 0.2);
    if (name === "model.embed_tokens.weight") return rng.randn(n, 2 / Math.sqrt(shape[1]!));
    return rng.randn(n, 1 / Math.sqrt(shape[shape.length - 1]!));
  });
  return model;
}

/** Logits (V) of the last token of `seq`, by the full uncached forward pass. */
export function lastLogits(model: Qwen2Model, seq: readonly number[]): Float32Array {
  const n = seq.length;
  return model.forwardLogits(
    Int32Array.from(seq),
    Int32Array.from({ length: n }, (_, i) => i),
    new Int32Array([0, n]),
    new Int32Array([n - 1]),
  ).toArray() as Float32Array;
}

/** log softmax(x)[i]. */
export function logSoftmaxAt(x: ArrayLike<number>, i: number): number {
  let m = -Infinity;
  for (let j = 0; j < x.length; j++) m = Math.max(m, x[j]!);
  let s = 0;
  for (let j = 0; j < x.length; j++) s += Math.exp(x[j]! - m);
  return x[i]! - m - Math.log(s);
}

/** Index of the largest entry. */
export function argmax(x: ArrayLike<number>): number {
  let best = 0;
  for (let j = 1; j < x.length; j++) if (x[j]! > x[best]!) best = j;
  return best;
}

/** Greedy generation by full recomputation at every step (the reference). */
export function referenceGreedy(model: Qwen2Model, prompt: readonly number[], n: number): number[] {
  const seq = [...prompt];
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = argmax(lastLogits(model, seq));
    out.push(t);
    seq.push(t);
  }
  return out;
}

/** `n` random prompts with lengths in lo..hi. */
export function randomPrompts(rng: Rng, vocab: number, lens: number[]): number[][] {
  return lens.map((n) => Array.from(rng.ints(n, 0, vocab - 1)));
}

/** Resolves after the event loop has run `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
