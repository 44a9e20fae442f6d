/**
 * The decoder layers of a KV-cache step (`Qwen2Model.forwardCached`): on the GPU,
 * one token with bf16 weights runs as one call per layer (or one for all), fewer rows through
 * the fused few-row kernels; elsewhere the separate calls. Qwen3's norms of q and k, and a scaled
 * RoPE's table: one token's layer as one arl_decode_layer_norms_bf16 call; more tokens, the norms,
 * RoPE and the cache write as one call after the projections.
 *
 * @module
 */
import {
  attentionDecode,
  DECODE_FUSION_MAX_ROWS,
  decodeLayer,
  decodeLayers,
  type DecodeLayerWeights,
  hasDecodeLayerNorms,
  hasNormRopeKvCacheWrite,
  type Kernels,
  kvCacheWrite,
  linearForward,
  normRopeKvCacheWrite,
  rmsnormForward,
  rmsnormLinearForward,
  rmsnormLinearSwigluForward,
  rmsnormQkvRopeForward,
  rope,
  ropeFreqs,
  ropeKvCacheWrite,
  swigluForward,
  type Tensor,
} from "../../ffi/mod.ts";
import type { Qwen2Config } from "./config.ts";
import type { LayerWeights } from "./qwen2.ts";
import type { Qwen2KvCache } from "./qwen2_kv_cache.ts";
import type { DecodeActs } from "./_qwen2_workspace.ts";

/** What the layers of a step read besides the cache and the step's rows. */
export interface CachedLayersSetup {
  kernels: Kernels;
  config: Qwen2Config;
  layers: readonly LayerWeights[];
  /** The attention's score scale: 1 / sqrt(head_dim), times YaRN's attention factor squared. */
  scale: number;
  /** The fused few-row kernels on the GPU (AGENTRL_DECODE_FUSION=0 turns them off). */
  fusion: boolean;
  /** Scaled RoPE's frequencies, or null (theta's): no fused call takes a table. */
  ropeFreqs: Tensor | null;
  /** One call a layer for one token (AGENTRL_DECODE_LAYER=0 turns it off). */
  layerCalls: boolean;
  /**
   * That call for Qwen3's q/k norms or a RoPE table too (AGENTRL_DECODE_LAYER_NORMS=0: the
   * separate calls, with the norms, RoPE and the cache write in one kernel).
   */
  layerNormsCalls: boolean;
  /** One call for all layers (AGENTRL_DECODE_LAYERS=0 turns it off). */
  allLayersCall: boolean;
}

/** The decoder layers of {@linkcode forwardCached}: d.x in, d.x out. */
export function runCachedLayers(s: CachedLayersSetup, cache: Qwen2KvCache, d: DecodeActs): void {
  const cfg = s.config;
  const k = s.kernels;
  // Few rows on the GPU: each RMSNorm rides in the projections that read it, SwiGLU in the
  // stacked gate|up projection, RoPE with the cache write (one kernel each). The CPU library
  // would run the unfused calls anyway (through temporary rows), so it keeps them.
  // AGENTRL_DECODE_FUSION=0 runs the unfused calls on the GPU too (a benchmark baseline).
  const fuse = k.device === "cuda" && d.n <= DECODE_FUSION_MAX_ROWS && s.fusion;
  // One token with bf16 weights runs each layer as one call: four chained kernels on the GPU,
  // faster than the separate calls below (bench/results/gpu/DECODE_NOTES.md).
  // AGENTRL_DECODE_LAYER=0 runs those calls. Qwen3's norms of q and k (between the projection
  // and RoPE) and a scaled RoPE's table take arl_decode_layer_norms_bf16, where the library has
  // it (one call a layer, not one for all).
  const qk = d.qkNorm;
  const plainRope = s.ropeFreqs === null;
  const wholeLayer = fuse && d.n === 1 && s.layerCalls &&
    (qk === null && plainRope || s.layerNormsCalls && hasDecodeLayerNorms(k));
  // Qwen3's norms or a frequency table: the norms, RoPE and the cache write in one call on the
  // GPU, for any number of rows (a one-warp block a head of each; not in libraries built before
  // it, nor with AGENTRL_DECODE_FUSION=0: then the separate calls below)
  const normRope = k.device === "cuda" && s.fusion && (qk !== null || !plainRope) &&
    hasNormRopeKvCacheWrite(k);
  const eps = cfg.rms_norm_eps;
  const normed = (y: Tensor, norm: Tensor, w: Tensor, bias: Tensor | null) =>
    fuse ? rmsnormLinearForward(k, y, d.x, norm, w, bias, eps) : linearForward(k, y, d.h, w, bias);
  if (wholeLayer && allLayersCall(s, cache, d)) return;
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const w = s.layers[l]!;
    const [kc, vc] = [cache.k[l]!, cache.v[l]!];
    if (wholeLayer && layerCall(s, w, kc, vc, d)) continue;
    if (!fuse) rmsnormForward(k, d.h, d.rstd, d.x, w.ln1, eps);
    // One token with stacked bf16 weights: one GEMV; fused, it also ropes and caches.
    const stacked = d.qkv && w.qkv ? { y: d.qkv, w: w.qkv } : null;
    if (stacked && fuse && qk === null && plainRope) {
      rmsnormQkvRopeForward(k, stacked.y, d.x, w.ln1, stacked.w, w.bqkv ?? null, eps, {
        hq: cfg.num_attention_heads,
        kCache: kc,
        vCache: vc,
        slots: d.slots,
        positions: d.positions,
        theta: cfg.rope_theta,
      });
    } else if (stacked) {
      normed(stacked.y, w.ln1, stacked.w, w.bqkv ?? null);
    } else {
      normed(d.q, w.ln1, w.wq, w.bq);
      normed(d.k, w.ln1, w.wk, w.bk);
      normed(d.v, w.ln1, w.wv, w.bv);
    }
    // (q3: what the attention reads, normed and rotated)
    const [q3, k3] = qk && !normRope ? [qk.qn3, qk.kn3] : [d.q3, d.k3];
    if (normRope) {
      normRopeKvCacheWrite(k, q3, k3, kc, vc, d.v3, d.slots, d.positions, {
        qNorm: qk ? w.qn! : null,
        kNorm: qk ? w.kn! : null,
        invFreq: s.ropeFreqs,
        eps,
        theta: cfg.rope_theta,
      });
    } else {
      if (qk) { // Qwen3: each head's query and key normed before RoPE
        rmsnormForward(k, qk.qn2, qk.rq, qk.q2, w.qn!, eps);
        rmsnormForward(k, qk.kn2, qk.rk, qk.k2, w.kn!, eps);
      }
      if (s.ropeFreqs) {
        ropeFreqs(k, q3, q3, d.positions, s.ropeFreqs);
        ropeFreqs(k, k3, k3, d.positions, s.ropeFreqs);
        kvCacheWrite(k, kc, vc, k3, d.v3, d.slots, d.positions);
      } else if (fuse) { // RoPE and the cache write in one call (done above for stacked weights)
        if (!stacked || qk) {
          ropeKvCacheWrite(k, q3, k3, kc, vc, d.v3, d.slots, d.positions, cfg.rope_theta);
        }
      } else {
        rope(k, q3, q3, d.positions, cfg.rope_theta);
        rope(k, k3, k3, d.positions, cfg.rope_theta);
        kvCacheWrite(k, kc, vc, k3, d.v3, d.slots, d.positions);
      }
    }
    attentionDecode(k, d.a3, q3, cache.k[l]!, cache.v[l]!, d.slots, d.lens, s.scale);
    linearForward(k, d.x, d.a, w.wo, null, true); // the residual added by the GEMM
    const gateUp = w.gu ?? w.gu32;
    if (fuse && gateUp) { // the norm, gate|up and SwiGLU in one GEMV
      rmsnormLinearSwigluForward(k, d.s, d.x, w.ln2, gateUp, null, eps);
    } else {
      if (!fuse) rmsnormForward(k, d.h, d.rstd, d.x, w.ln2, eps);
      if (d.gu && w.gu) {
        normed(d.gu, w.ln2, w.gu, null);
      } else {
        normed(d.g, w.ln2, w.wg, null);
        normed(d.u, w.ln2, w.wu, null);
      }
      swigluForward(k, d.s, d.g, d.u);
    }
    linearForward(k, d.x, d.s, w.wd, null, true); // the residual added by the GEMM
  }
}

/**
 * Every decode layer as one {@linkcode decodeLayers} call, if all their weights are bf16
 * (a layer call each unless AGENTRL_CUDA_DECODE_TOKEN=1 asks the CUDA library for its
 * persistent kernel; AGENTRL_DECODE_LAYERS=0 calls {@linkcode decodeLayer} here instead).
 */
function allLayersCall(s: CachedLayersSetup, cache: Qwen2KvCache, d: DecodeActs): boolean {
  if (!s.allLayersCall || !d.qkv || d.qkNorm || s.ropeFreqs) return false;
  const entries = [];
  for (let l = 0; l < s.config.num_hidden_layers; l++) {
    const w = bf16Layer(s.layers[l]!);
    if (w === null) return false;
    entries.push({ ...w, kCache: cache.k[l]!, vCache: cache.v[l]! });
  }
  decodeLayers(s.kernels, d.x, entries, decodeStep(s, d), {
    qkv: d.qkv,
    attn: d.a,
    act: d.s,
  });
  return true;
}

/** A layer's weights as {@linkcode decodeLayer} takes them, or null unless they are bf16. */
function bf16Layer(w: LayerWeights): DecodeLayerWeights | null {
  const bf16 = (t: Tensor | null | undefined): t is Tensor => t?.dtype === "bf16";
  if (!bf16(w.qkv) || !bf16(w.gu) || !bf16(w.wo) || !bf16(w.wd)) return null;
  return {
    ln1: w.ln1,
    qkv: w.qkv,
    bqkv: w.bqkv ?? null,
    o: w.wo,
    ln2: w.ln2,
    gateUp: w.gu,
    down: w.wd,
    qNorm: w.qn ?? null,
    kNorm: w.kn ?? null,
  };
}

/** The token's cache place and the model's constants, for the decode layer calls. */
function decodeStep(s: CachedLayersSetup, d: DecodeActs) {
  const cfg = s.config;
  return {
    slot: d.slots,
    position: d.positions,
    len: d.lens,
    hq: cfg.num_attention_heads,
    eps: cfg.rms_norm_eps,
    theta: cfg.rope_theta,
    scale: s.scale,
  };
}

/** One decode layer as one {@linkcode decodeLayer} call, if its weights are bf16. */
function layerCall(
  s: CachedLayersSetup,
  w: LayerWeights,
  kCache: Tensor,
  vCache: Tensor,
  d: DecodeActs,
): boolean {
  const weights = bf16Layer(w);
  if (weights === null || !d.qkv) return false;
  decodeLayer(s.kernels, d.x, weights, {
    ...decodeStep(s, d),
    kCache,
    vCache,
    invFreq: s.ropeFreqs,
  }, {
    qkv: d.qkv,
    attn: d.a,
    act: d.s,
  });
  return true;
}
