// The four-kernel decode layer (decode_chain.cu), arl_decode_layer_bf16's default CUDA path.
#pragma once

#include "common.cuh"

namespace arl {

// Floats of the decode buffer's o-projection partials (heads times the hidden size).
constexpr int64_t kDecodePartFloats = int64_t(1) << 18;

// The decode buffer's o-projection partials (kDecodePartFloats; after decode_buffers).
float* decode_partials(arl_ctx* ctx);

// arl_decode_layer_bf16 as four chained kernels, its arguments checked by the caller.
// ARL_ERR_UNSUPPORTED, with nothing launched, when the shapes, the pointers' alignment or the
// device do not fit it; else ARL_OK or a launch error.
arl_status decode_layer_chain(arl_ctx* ctx, const char* fn, float* x, float* qkv, float* attn,
                              float* act, const float* ln1, const uint16_t* w_qkv,
                              const float* b_qkv, const uint16_t* w_o, const float* ln2,
                              const uint16_t* w_gu, const uint16_t* w_down, float* k_cache,
                              float* v_cache, const int32_t* slot, const int32_t* position,
                              const int32_t* len, int32_t c, int32_t f, int32_t hq, int32_t hkv,
                              int32_t d, int32_t s, int32_t l, float eps, float theta,
                              float scale);

}  // namespace arl
