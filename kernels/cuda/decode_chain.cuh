// The four-kernel decode layer (decode_chain.cu), arl_decode_layer_bf16's default CUDA path.
#pragma once

#include "common.cuh"

namespace arl {

// Floats of the decode buffer's o-projection partials (heads times the hidden size).
constexpr int64_t kDecodePartFloats = int64_t(1) << 18;

// The decode buffer's o-projection partials (kDecodePartFloats; after decode_buffers).
float* decode_partials(arl_ctx* ctx);

// arl_decode_layer_norms_bf16's additions (each may be null): each head's q and k norm weights
// (Qwen3) and RoPE's frequency table.
struct DecodeNorms {
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  const float* inv_freq = nullptr;
  bool any() const { return q_norm != nullptr || k_norm != nullptr || inv_freq != nullptr; }
};

// arl_decode_layer_bf16 as four chained kernels, its arguments checked by the caller (with
// `norms`, arl_decode_layer_norms_bf16: kernel 1 is the q|k|v GEMV without RoPE, then
// arl_norm_rope_kv_cache_write's kernel, then kernels 2-4). ARL_ERR_UNSUPPORTED, with nothing
// launched, when the shapes, the pointers' alignment or the device do not fit it; else ARL_OK
// or a launch error.
arl_status decode_layer_chain(arl_ctx* ctx, const char* fn, float* x, float* qkv, float* attn,
                              float* act, const float* ln1, const uint16_t* w_qkv,
                              const float* b_qkv, const uint16_t* w_o, const float* ln2,
                              const uint16_t* w_gu, const uint16_t* w_down, float* k_cache,
                              float* v_cache, const int32_t* slot, const int32_t* position,
                              const int32_t* len, int32_t c, int32_t f, int32_t hq, int32_t hkv,
                              int32_t d, int32_t s, int32_t l, float eps, float theta,
                              float scale, const DecodeNorms& norms = {});

// arl_norm_rope_kv_cache_write's kernel (decode_qkv_rope.cu), its arguments checked by the
// caller: a one-warp block a head of each of the n tokens.
void launch_norm_rope_kv(arl_ctx* ctx, float* q, float* k, float* k_cache, float* v_cache,
                         const float* v, const float* q_norm, const float* k_norm,
                         const float* inv_freq, const int32_t* slots, const int32_t* positions,
                         int32_t n, int32_t hq, int32_t s, int32_t hkv, int32_t l, int32_t d,
                         float eps, float theta);

// Asks the largest shared-memory carveout for that kernel (as decode_layer_chain's kernel 1):
// 1 where it took, else 0 (the emulator: 1).
int norm_rope_prefer_shared();

}  // namespace arl
