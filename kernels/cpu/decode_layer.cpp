// arl_decode_layer_bf16 (ABI version 6): on the CPU, the calls it stands for, in sequence (the
// CUDA library runs them as one kernel to save the launches between them).
#include "common.h"
// (after common.h: the checks need its context)
#include "../common/decode_layer.h"

extern "C" {

arl_status arl_decode_layer_bf16(arl_ctx* ctx, float* x, float* qkv, float* attn, float* act,
                                 const float* ln1, const uint16_t* w_qkv, const float* b_qkv,
                                 const uint16_t* w_o, const float* ln2, const uint16_t* w_gu,
                                 const uint16_t* w_down, float* k_cache, float* v_cache,
                                 const int32_t* slot, const int32_t* position, const int32_t* len,
                                 int32_t c, int32_t f, int32_t hq, int32_t hkv, int32_t d,
                                 int32_t s, int32_t l, float eps, float theta, float scale) {
  ARL_CTX(ctx);
  ARL_DECODE_LAYER_ARGS(ctx);
  // The values the steps check one by one, checked before the first writes anything (a bad
  // one would leave the cache and qkv written and the layer half done).
  if (arl_status st = arl::check_decode_token(ctx, __func__, slot, position, len, s, l)) return st;
  return arl::decode_layer_steps(ctx, x, qkv, attn, act, ln1, w_qkv, b_qkv, w_o, ln2, w_gu,
                                 w_down, k_cache, v_cache, slot, position, len, c, f, hq, hkv, d,
                                 s, l, eps, theta, scale);
}

// arl_decode_layer_norms_bf16 (optional): the calls it stands for, every value checked first.
arl_status arl_decode_layer_norms_bf16(
    arl_ctx* ctx, float* x, float* qkv, float* attn, float* act, const float* ln1,
    const uint16_t* w_qkv, const float* b_qkv, const uint16_t* w_o, const float* ln2,
    const uint16_t* w_gu, const uint16_t* w_down, float* k_cache, float* v_cache,
    const float* q_norm, const float* k_norm, const float* inv_freq, const int32_t* slot,
    const int32_t* position, const int32_t* len, int32_t c, int32_t f, int32_t hq, int32_t hkv,
    int32_t d, int32_t s, int32_t l, float eps, float theta, float scale) {
  ARL_CTX(ctx);
  ARL_DECODE_LAYER_ARGS(ctx);
  if (arl_status st = arl::check_decode_token(ctx, __func__, slot, position, len, s, l)) return st;
  if (inv_freq != nullptr)
    if (arl_status st = arl::check_inv_freq(ctx, __func__, inv_freq, d)) return st;
  return arl::decode_layer_norm_steps(ctx, x, qkv, attn, act, ln1, w_qkv, b_qkv, w_o, ln2, w_gu,
                                      w_down, k_cache, v_cache, q_norm, k_norm, inv_freq, slot,
                                      position, len, c, f, hq, hkv, d, s, l, eps, theta, scale);
}

// arl_decode_layers_bf16 (ABI version 9): arl_decode_layer_bf16 once a layer.
arl_status arl_decode_layers_bf16(arl_ctx* ctx, float* x, float* qkv, float* attn, float* act,
                                  const arl_decode_layer_ptrs* layers, int32_t n_layers,
                                  const int32_t* slot, const int32_t* position,
                                  const int32_t* len, int32_t c, int32_t f, int32_t hq,
                                  int32_t hkv, int32_t d, int32_t s, int32_t l, float eps,
                                  float theta, float scale) {
  ARL_CTX(ctx);
  ARL_DECODE_LAYERS_ARGS(ctx);
  return arl::decode_layers_each(ctx, x, qkv, attn, act, layers, n_layers, slot, position, len,
                                 c, f, hq, hkv, d, s, l, eps, theta, scale);
}

}  // extern "C"
