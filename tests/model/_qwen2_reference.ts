// A float64 reference implementation of the Qwen2 decoder (and Qwen3's per-head
// q/k norms), written from the Hugging Face modeling code's definitions as plain loops (no kernels, no
// packing tricks: each sequence is run on its own), and the helpers the model
// tests share.
//
// Scalars the kernels take as float32 (eps, theta, attention scale,
// temperature) are rounded with Math.fround first, as the kernels see them.
import type { Qwen2Config } from "../../lib/model/config.ts";
import type { Qwen2Model } from "../../lib/model/qwen2.ts";
import { Rng } from "../kernels/_helpers.ts";

const fr = Math.fround;
type Arr = ArrayLike<number>;

/** Parameters by HF name, as float64 copies. */
export type RefParams = Map<string, Float64Array>;

/** A float64 copy of every parameter of `model`. */
export function refParams(model: Qwen2Model): RefParams {
  const out: RefParams = new Map();
  for (const p of model.exportNamed()) out.set(p.name, Float64Array.from(p.data));
  return out;
}

function need(p: RefParams, name: string): Float64Array {
  const x = p.get(name);
  if (x === undefined) throw new Error(`reference: no parameter ${name}`);
  return x;
}

/** y (n, out) = x (n, in) W (out, in)^T + b. */
function linear(x: Arr, w: Arr, b: Arr | null, n: number, out: number, inp: number): Float64Array {
  const y = new Float64Array(n * out);
  for (let i = 0; i < n; i++) {
    for (let o = 0; o < out; o++) {
      let s = b ? b[o]! : 0;
      for (let j = 0; j < inp; j++) s += x[i * inp + j]! * w[o * inp + j]!;
      y[i * out + o] = s;
    }
  }
  return y;
}

/** HF Qwen2RMSNorm: x * rsqrt(mean(x^2) + eps) * weight, per row. */
function rmsnorm(x: Arr, w: Arr, n: number, c: number, eps: number): Float64Array {
  const y = new Float64Array(n * c);
  for (let i = 0; i < n; i++) {
    let ss = 0;
    for (let j = 0; j < c; j++) ss += x[i * c + j]! ** 2;
    const r = 1 / Math.sqrt(ss / c + fr(eps));
    for (let j = 0; j < c; j++) y[i * c + j] = x[i * c + j]! * r * w[j]!;
  }
  return y;
}

/**
 * HF's inverse frequencies: base^(-2j/d), with Llama 3.1's scaling when the config has one
 * (transformers' _compute_llama3_parameters: low frequencies / factor, the band between the
 * two wavelength bounds blended; or the linear type's, every frequency / factor).
 */
function invFreqs(cfg: Qwen2Config): Float64Array {
  const d = cfg.head_dim, half = d / 2;
  const base = Float64Array.from(
    { length: half },
    (_, j) => 1 / Math.pow(fr(cfg.rope_theta), 2 * j / d),
  );
  const s = cfg.rope_scaling;
  if (!s) return base;
  // (transformers' _compute_linear_scaling_rope_parameters: inv_freq / factor)
  if (s.rope_type === "linear") return base.map((f) => f / s.factor);
  if (s.rope_type === "yarn") {
    // (transformers 5's _compute_yarn_parameters: the correction range of dimensions between
    // beta_fast's and beta_slow's rotations over the original context, a linear ramp blending
    // the extrapolated (kept) and interpolated (/ factor) frequencies)
    const theta = fr(cfg.rope_theta), L = s.original_max_position_embeddings;
    const corr = (rot: number) => (d * Math.log(L / (rot * 2 * Math.PI))) / (2 * Math.log(theta));
    const trunc = s.truncate ?? true;
    const lo = Math.max(trunc ? Math.floor(corr(s.beta_fast ?? 32)) : corr(s.beta_fast ?? 32), 0);
    let hi = Math.min(trunc ? Math.ceil(corr(s.beta_slow ?? 1)) : corr(s.beta_slow ?? 1), d - 1);
    if (lo === hi) hi += 0.001;
    return base.map((f, j) => {
      const extrapolationFactor = 1 - Math.min(1, Math.max(0, (j - lo) / (hi - lo)));
      return (f / s.factor) * (1 - extrapolationFactor) + f * extrapolationFactor;
    });
  }
  const old = s.original_max_position_embeddings;
  return base.map((f) => {
    const wavelen = 2 * Math.PI / f;
    const llama = wavelen > old / s.low_freq_factor ? f / s.factor : f;
    const smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    const medium = !(wavelen < old / s.high_freq_factor) && !(wavelen > old / s.low_freq_factor);
    return medium ? (1 - smooth) * llama / s.factor + smooth * llama : llama;
  });
}

/**
 * transformers' attention_scaling, which multiplies cos and sin: YaRN's attention_factor, or
 * 0.1 ln(factor) + 1 (DeepSeek's mscale ratio where mscale and mscale_all_dim are set).
 */
function attentionScaling(cfg: Qwen2Config): number {
  const s = cfg.rope_scaling;
  if (s?.rope_type !== "yarn") return 1;
  if (s.attention_factor != null) return s.attention_factor;
  const get = (scale: number, m: number) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
  if (s.mscale && s.mscale_all_dim) {
    return get(s.factor, s.mscale) / get(s.factor, s.mscale_all_dim);
  }
  return get(s.factor, 1);
}

/**
 * HF apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, emb = cat(freqs, freqs), cos and sin
 * times `m` (the rotary embedding's attention_scaling).
 */
function applyRope(
  x: Float64Array,
  pos: Arr,
  n: number,
  h: number,
  d: number,
  inv: Float64Array,
  m: number,
) {
  const half = d / 2;
  const out = new Float64Array(x.length);
  for (let i = 0; i < n; i++) {
    for (let hh = 0; hh < h; hh++) {
      const base = (i * h + hh) * d;
      for (let j = 0; j < d; j++) {
        const ang = pos[i]! * inv[j % half]!;
        const rotated = j < half ? -x[base + j + half]! : x[base + j - half]!;
        out[base + j] = x[base + j]! * (Math.cos(ang) * m) + rotated * (Math.sin(ang) * m);
      }
    }
  }
  return out;
}

/** Final hidden states (n, C) after model.norm for ONE sequence of n tokens. */
export function refHidden(cfg: Qwen2Config, p: RefParams, tokens: Arr, positions: Arr) {
  const n = tokens.length;
  const c = cfg.hidden_size, f = cfg.intermediate_size;
  const hq = cfg.num_attention_heads, hkv = cfg.num_key_value_heads, d = cfg.head_dim;
  const emb = need(p, "model.embed_tokens.weight");
  let x = new Float64Array(n * c);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < c; j++) x[i * c + j] = emb[tokens[i]! * c + j]!;
  }
  const scale = fr(1 / Math.sqrt(d));
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const pre = `model.layers.${l}`;
    const bias = (name: string) => p.get(`${pre}.self_attn.${name}_proj.bias`) ?? null;
    const h = rmsnorm(x, need(p, `${pre}.input_layernorm.weight`), n, c, cfg.rms_norm_eps);
    // Qwen3Attention: q_norm / k_norm (RMSNorm over head_dim) on each head before RoPE
    const headNorm = (y: Float64Array, which: "q" | "k", heads: number) => {
      const w = p.get(`${pre}.self_attn.${which}_norm.weight`);
      return w === undefined ? y : rmsnorm(y, w, n * heads, d, cfg.rms_norm_eps);
    };
    const q = applyRope(
      headNorm(
        linear(h, need(p, `${pre}.self_attn.q_proj.weight`), bias("q"), n, hq * d, c),
        "q",
        hq,
      ),
      positions,
      n,
      hq,
      d,
      invFreqs(cfg),
      attentionScaling(cfg),
    );
    const k = applyRope(
      headNorm(
        linear(h, need(p, `${pre}.self_attn.k_proj.weight`), bias("k"), n, hkv * d, c),
        "k",
        hkv,
      ),
      positions,
      n,
      hkv,
      d,
      invFreqs(cfg),
      attentionScaling(cfg),
    );
    const v = linear(h, need(p, `${pre}.self_attn.v_proj.weight`), bias("v"), n, hkv * d, c);
    // causal softmax attention, query head hh reads kv head hh / (hq / hkv) (repeat_kv)
    const att = new Float64Array(n * hq * d);
    for (let hh = 0; hh < hq; hh++) {
      const kh = Math.floor(hh / (hq / hkv));
      for (let i = 0; i < n; i++) {
        const scores = new Float64Array(i + 1);
        let mx = -Infinity;
        for (let j = 0; j <= i; j++) {
          let s = 0;
          for (let e = 0; e < d; e++) s += q[(i * hq + hh) * d + e]! * k[(j * hkv + kh) * d + e]!;
          scores[j] = s * scale;
          mx = Math.max(mx, scores[j]!);
        }
        let z = 0;
        for (let j = 0; j <= i; j++) z += Math.exp(scores[j]! - mx);
        for (let j = 0; j <= i; j++) {
          const pr = Math.exp(scores[j]! - mx) / z;
          for (let e = 0; e < d; e++) {
            att[(i * hq + hh) * d + e]! += pr * v[(j * hkv + kh) * d + e]!;
          }
        }
      }
    }
    const o = linear(att, need(p, `${pre}.self_attn.o_proj.weight`), null, n, c, hq * d);
    const m = new Float64Array(n * c);
    for (let i = 0; i < n * c; i++) m[i] = x[i]! + o[i]!;
    const h2 = rmsnorm(
      m,
      need(p, `${pre}.post_attention_layernorm.weight`),
      n,
      c,
      cfg.rms_norm_eps,
    );
    const g = linear(h2, need(p, `${pre}.mlp.gate_proj.weight`), null, n, f, c);
    const u = linear(h2, need(p, `${pre}.mlp.up_proj.weight`), null, n, f, c);
    const s = new Float64Array(n * f);
    for (let i = 0; i < n * f; i++) s[i] = (g[i]! / (1 + Math.exp(-g[i]!))) * u[i]!;
    const y = linear(s, need(p, `${pre}.mlp.down_proj.weight`), null, n, c, f);
    x = new Float64Array(n * c);
    for (let i = 0; i < n * c; i++) x[i] = m[i]! + y[i]!;
  }
  return rmsnorm(x, need(p, "model.norm.weight"), n, c, cfg.rms_norm_eps);
}

function headWeight(cfg: Qwen2Config, p: RefParams): Float64Array {
  return need(p, cfg.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
}

/** Logits (n, V) of one sequence. */
export function refLogits(cfg: Qwen2Config, p: RefParams, tokens: Arr, positions: Arr) {
  const h = refHidden(cfg, p, tokens, positions);
  return linear(h, headWeight(cfg, p), null, tokens.length, cfg.vocab_size, cfg.hidden_size);
}

/** The packed batch a test feeds the model. */
export interface Batch {
  tokens: Int32Array;
  positions: Int32Array;
  cuSeqlens: Int32Array;
  targets: Int32Array;
}

/** log-probs and entropies (T) of a packed batch, each sequence run on its own. */
export function refLogprobs(cfg: Qwen2Config, p: RefParams, batch: Batch, temperature = 1) {
  const t = batch.tokens.length, vocab = cfg.vocab_size;
  const logp = new Float64Array(t), entropy = new Float64Array(t);
  const temp = fr(temperature);
  const cu = batch.cuSeqlens;
  for (let s = 0; s + 1 < cu.length; s++) {
    const [a, b] = [cu[s]!, cu[s + 1]!];
    if (a === b) continue;
    const z = refLogits(cfg, p, batch.tokens.subarray(a, b), batch.positions.subarray(a, b));
    for (let i = 0; i < b - a; i++) {
      const row = Array.from(z.subarray(i * vocab, (i + 1) * vocab), (x) => x / temp);
      const mx = Math.max(...row);
      const lse = mx + Math.log(row.reduce((acc, x) => acc + Math.exp(x - mx), 0));
      logp[a + i] = row[batch.targets[a + i]!]! - lse;
      let ent = 0;
      for (const x of row) ent -= Math.exp(x - lse) * (x - lse);
      entropy[a + i] = ent;
    }
  }
  return { logp, entropy };
}

/** Values (T) of a packed batch through the value head, each sequence on its own. */
export function refValues(cfg: Qwen2Config, p: RefParams, batch: Omit<Batch, "targets">) {
  const t = batch.tokens.length, c = cfg.hidden_size;
  const w = need(p, "value_head.weight"), bias = need(p, "value_head.bias")[0]!;
  const values = new Float64Array(t);
  const cu = batch.cuSeqlens;
  for (let s = 0; s + 1 < cu.length; s++) {
    const [a, b] = [cu[s]!, cu[s + 1]!];
    if (a === b) continue;
    const h = refHidden(cfg, p, batch.tokens.subarray(a, b), batch.positions.subarray(a, b));
    for (let i = 0; i < b - a; i++) {
      let v = bias;
      for (let j = 0; j < c; j++) v += h[i * c + j]! * w[j]!;
      values[a + i] = v;
    }
  }
  return values;
}

// ---- shared test fixtures ------------------------------------------------------

/** A tiny Qwen2 config (V=48, C=32, 2 layers, 4 heads / 2 kv heads, D=8, F=48). */
/**
 * Llama 3.1's RoPE scaling on an original context of 64: at head_dim 8 and theta 1e4
 * (wavelengths 6.3, 63, 628, 6283) one frequency is kept, one blended and two divided.
 */
export const LLAMA3_SMALL = {
  rope_type: "llama3",
  factor: 8,
  low_freq_factor: 1,
  high_freq_factor: 4,
  original_max_position_embeddings: 64,
} as const;

/**
 * YaRN on an original context of 64: at head_dim 8 and theta 1e4 the ramp runs over dimensions
 * 0..2 (one frequency kept, one blended half way, two divided by 4); attention factor 1.139.
 */
export const YARN_SMALL = {
  rope_type: "yarn",
  factor: 4,
  original_max_position_embeddings: 64,
} as const;

export function tinyConfig(overrides: Partial<Qwen2Config> = {}): Qwen2Config {
  return {
    vocab_size: 48,
    hidden_size: 32,
    intermediate_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    max_position_embeddings: 128,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: false,
    attention_bias: true,
    bos_token_id: null,
    eos_token_id: null,
    ...overrides,
  };
}

/**
 * Replaces the default 0.02 initialisation with one whose activations are of
 * order one, so that every parameter visibly moves the outputs: matrices
 * normal / sqrt(fan-in) (the LM head twice that), embeddings normal (as the
 * LM head's when tied), norm
 * weights 1 + 0.2 normal, biases 0.2 normal.
 */
export function randomizeParams(model: Qwen2Model, seed: string): void {
  const rng = new Rng(seed);
  model.loadNamed((name, shape) => {
    const n = shape.reduce((a, b) => a * b, 1);
    if (name.endsWith("norm.weight")) return Float32Array.from(rng.randn(n, 0.2), (x) => 1 + x);
    if (name.endsWith(".bias")) return rng.randn(n, 0.2);
    if (name === "model.embed_tokens.weight") {
      // a tied embedding is the LM head too: keep the logits moderate
      return rng.randn(n, model.config.tie_word_embeddings ? 2 / Math.sqrt(shape[1]!) : 1);
    }
    const fanIn = shape[shape.length - 1]!;
    const gain = name === "lm_head.weight" || name === "value_head.weight" ? 2 : 1;
    return rng.randn(n, gain / Math.sqrt(fanIn));
  });
}

/** A packed batch of sequences of `lens` tokens with random ids and targets. */
export function randomBatch(
  rng: Rng,
  vocab: number,
  lens: number[],
  startPositions?: number[],
): Batch {
  const t = lens.reduce((a, b) => a + b, 0);
  const cuSeqlens = new Int32Array(lens.length + 1);
  const positions = new Int32Array(t);
  lens.forEach((len, s) => {
    cuSeqlens[s + 1] = cuSeqlens[s]! + len;
    for (let i = 0; i < len; i++) positions[cuSeqlens[s]! + i] = (startPositions?.[s] ?? 0) + i;
  });
  return {
    tokens: rng.ints(t, 0, vocab - 1),
    positions,
    cuSeqlens,
    targets: rng.ints(t, 0, vocab - 1),
  };
}
