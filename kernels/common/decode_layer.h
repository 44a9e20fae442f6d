// arl_decode_layer_bf16 (see agentrl.h): its argument checks, and the layer as the calls it
// stands for, in sequence (the CPU library's implementation; the CUDA library's for shapes
// its one-kernel version does not take). Both libraries compile it against their own entry
// points.
#pragma once

#include <cmath>
#include <utility>

#include "checks.h"

// The arguments of arl_decode_layer_bf16 (b_qkv may be null), checked under its name.
#define ARL_DECODE_LAYER_ARGS(ctx)                                                            \
  do {                                                                                        \
    ARL_NOT_NULL(ctx, x);                                                                     \
    ARL_NOT_NULL(ctx, qkv);                                                                   \
    ARL_NOT_NULL(ctx, attn);                                                                  \
    ARL_NOT_NULL(ctx, act);                                                                   \
    ARL_NOT_NULL(ctx, ln1);                                                                   \
    ARL_NOT_NULL(ctx, w_qkv);                                                                 \
    ARL_NOT_NULL(ctx, w_o);                                                                   \
    ARL_NOT_NULL(ctx, ln2);                                                                   \
    ARL_NOT_NULL(ctx, w_gu);                                                                  \
    ARL_NOT_NULL(ctx, w_down);                                                                \
    ARL_NOT_NULL(ctx, k_cache);                                                               \
    ARL_NOT_NULL(ctx, v_cache);                                                               \
    ARL_NOT_NULL(ctx, slot);                                                                  \
    ARL_NOT_NULL(ctx, position);                                                              \
    ARL_NOT_NULL(ctx, len);                                                                   \
    ARL_POSITIVE(ctx, c);                                                                     \
    ARL_POSITIVE(ctx, f);                                                                     \
    ARL_POSITIVE(ctx, hq);                                                                    \
    ARL_POSITIVE(ctx, hkv);                                                                   \
    ARL_POSITIVE(ctx, d);                                                                     \
    ARL_POSITIVE(ctx, s);                                                                     \
    ARL_POSITIVE(ctx, l);                                                                     \
    if (hq % hkv != 0)                                                                        \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: hq (%d) must be a multiple of hkv (%d)",        \
                       __func__, (int)hq, (int)hkv);                                          \
    if (d % 2 != 0)                                                                           \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: head dim %d must be even", __func__, (int)d);  \
    if (((int64_t)(hq) + 2 * (int64_t)(hkv)) * (d) > INT32_MAX)                                \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: (hq + 2 hkv) x d = %lld columns is too many",   \
                       __func__, (long long)(((int64_t)(hq) + 2 * (int64_t)(hkv)) * (d)));    \
    if (2 * (int64_t)(f) > INT32_MAX)                                                         \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: 2 x f = %lld gate|up rows is too many",         \
                       __func__, (long long)(2 * (int64_t)(f)));                              \
    ARL_PRODUCT(ctx, ((int64_t)(hq) + 2 * (int64_t)(hkv)) * (d), c);                          \
    ARL_PRODUCT(ctx, 2 * (int64_t)(f), c);                                                    \
    ARL_PRODUCT(ctx, (int64_t)(s) * (hkv) * (l), d);                                          \
    if (!((eps) >= 0.0f) || !std::isfinite(eps))                                              \
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: eps must be finite and >= 0, got %g",          \
                       __func__, double(eps));                                                \
    if (!((theta) > 0.0f) || !std::isfinite(theta))                                           \
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: theta must be finite and > 0, got %g",         \
                       __func__, double(theta));                                              \
    if (!std::isfinite(scale))                                                                \
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: scale must be finite, got %g", __func__,      \
                       double(scale));                                                        \
  } while (0)

// The arguments of arl_decode_layers_bf16: its table (arl::check_decode_layers), then the shared
// arguments with layer 0's tensors as ARL_DECODE_LAYER_ARGS checks them (it binds their names).
#define ARL_DECODE_LAYERS_ARGS(ctx)                                                     \
  if (arl_status table_status = arl::check_decode_layers(ctx, __func__, layers, n_layers)) \
    return table_status;                                                                \
  const float *ln1 = layers[0].ln1, *ln2 = layers[0].ln2;                               \
  const uint16_t *w_qkv = layers[0].w_qkv, *w_o = layers[0].w_o;                        \
  const uint16_t *w_gu = layers[0].w_gu, *w_down = layers[0].w_down;                    \
  const float *k_cache = layers[0].k_cache, *v_cache = layers[0].v_cache;               \
  ARL_DECODE_LAYER_ARGS(ctx)

namespace arl {

// The attention, the o projection and the MLP of decode_layer_steps (after its q|k|v, RoPE and
// cache rows).
inline arl_status decode_layer_tail(arl_ctx* ctx, float* x, float* qkv, float* attn, float* act,
                                    const uint16_t* w_o, const float* ln2, const uint16_t* w_gu,
                                    const uint16_t* w_down, float* k_cache, float* v_cache,
                                    const int32_t* slot, const int32_t* len, int32_t c,
                                    int32_t f, int32_t hq, int32_t hkv, int32_t d, int32_t s,
                                    int32_t l, float eps, float scale) {
  if (arl_status st =
          arl_attention_decode(ctx, attn, qkv, k_cache, v_cache, slot, len, 1, s, hq, hkv, l, d,
                               scale))
    return st;
  if (arl_status st = arl_linear_forward_bf16(ctx, x, attn, w_o, nullptr, 1, c, hq * d, 1))
    return st;
  if (arl_status st =
          arl_rmsnorm_linear_swiglu_forward_bf16(ctx, act, x, ln2, w_gu, nullptr, 1, f, c, eps))
    return st;
  return arl_linear_forward_bf16(ctx, x, act, w_down, nullptr, 1, c, f, 1);
}

// arl_decode_layer_norms_bf16 as the calls agentrl.h lists.
inline arl_status decode_layer_norm_steps(
    arl_ctx* ctx, float* x, float* qkv, float* attn, float* act, const float* ln1,
    const uint16_t* w_qkv, const float* b_qkv, const uint16_t* w_o, const float* ln2,
    const uint16_t* w_gu, const uint16_t* w_down, float* k_cache, float* v_cache,
    const float* q_norm, const float* k_norm, const float* inv_freq, const int32_t* slot,
    const int32_t* position, const int32_t* len, int32_t c, int32_t f, int32_t hq, int32_t hkv,
    int32_t d, int32_t s, int32_t l, float eps, float theta, float scale) {
  const int64_t q_rows = int64_t(hq) * d, kv_rows = int64_t(hkv) * d;
  if (arl_status st = arl_rmsnorm_linear_forward_bf16(ctx, qkv, x, ln1, w_qkv, b_qkv, 1,
                                                      int32_t(q_rows + 2 * kv_rows), c, eps))
    return st;
  if (arl_status st = arl_norm_rope_kv_cache_write(
          ctx, qkv, qkv + q_rows, k_cache, v_cache, qkv + q_rows + kv_rows, q_norm, k_norm,
          inv_freq, slot, position, 1, hq, s, hkv, l, d, eps, theta))
    return st;
  return decode_layer_tail(ctx, x, qkv, attn, act, w_o, ln2, w_gu, w_down, k_cache, v_cache, slot,
                           len, c, f, hq, hkv, d, s, l, eps, scale);
}

// The layer as the five calls agentrl.h lists.
inline arl_status decode_layer_steps(arl_ctx* ctx, float* x, float* qkv, float* attn,
                                     float* act, const float* ln1, const uint16_t* w_qkv,
                                     const float* b_qkv, const uint16_t* w_o, const float* ln2,
                                     const uint16_t* w_gu, const uint16_t* w_down,
                                     float* k_cache, float* v_cache, const int32_t* slot,
                                     const int32_t* position, const int32_t* len, int32_t c,
                                     int32_t f, int32_t hq, int32_t hkv, int32_t d, int32_t s,
                                     int32_t l, float eps, float theta, float scale) {
  if (arl_status st = arl_rmsnorm_qkv_rope_forward_bf16(ctx, qkv, x, ln1, w_qkv, b_qkv, 1, c,
                                                        eps, k_cache, v_cache, slot, position,
                                                        hq, s, hkv, l, d, theta))
    return st;
  return decode_layer_tail(ctx, x, qkv, attn, act, w_o, ln2, w_gu, w_down, k_cache, v_cache, slot,
                           len, c, f, hq, hkv, d, s, l, eps, scale);
}

// arl_decode_layers_bf16's table: n_layers >= 1 entries, each with its tensors (b_qkv may be
// null). The shared arguments are checked by ARL_DECODE_LAYER_ARGS under the caller's name.
inline arl_status check_decode_layers(arl_ctx* ctx, const char* fn,
                                      const arl_decode_layer_ptrs* layers, int32_t n_layers) {
  if (layers == nullptr) return fail(ctx, ARL_ERR_NULL, "%s: layers must not be null", fn);
  if (n_layers < 1)
    return fail(ctx, ARL_ERR_SIZE, "%s: n_layers must be positive, got %d", fn, int(n_layers));
  for (int32_t i = 0; i < n_layers; i++) {
    const arl_decode_layer_ptrs& p = layers[i];
    const std::pair<const void*, const char*> named[] = {
        {p.ln1, "ln1"},       {p.w_qkv, "w_qkv"},   {p.w_o, "w_o"},
        {p.ln2, "ln2"},       {p.w_gu, "w_gu"},     {p.w_down, "w_down"},
        {p.k_cache, "k_cache"}, {p.v_cache, "v_cache"}};
    for (const auto& [ptr, name] : named)
      if (ptr == nullptr)
        return fail(ctx, ARL_ERR_NULL, "%s: layers[%d].%s must not be null", fn, int(i), name);
  }
  return ARL_OK;
}

// arl_decode_layers_bf16 as arl_decode_layer_bf16 (the library's own) once a layer;
// before_layer(i) runs before layer i's call (the CUDA library tells the layer what comes next).
template <typename Before = void (*)(int32_t)>
inline arl_status decode_layers_each(arl_ctx* ctx, float* x, float* qkv, float* attn,
                                     float* act, const arl_decode_layer_ptrs* layers,
                                     int32_t n_layers, const int32_t* slot,
                                     const int32_t* position, const int32_t* len, int32_t c,
                                     int32_t f, int32_t hq, int32_t hkv, int32_t d, int32_t s,
                                     int32_t l, float eps, float theta, float scale,
                                     Before before_layer = [](int32_t) {}) {
  for (int32_t i = 0; i < n_layers; i++) {
    before_layer(i);
    const arl_decode_layer_ptrs& p = layers[i];
    if (arl_status st = arl_decode_layer_bf16(ctx, x, qkv, attn, act, p.ln1, p.w_qkv, p.b_qkv,
                                              p.w_o, p.ln2, p.w_gu, p.w_down, p.k_cache,
                                              p.v_cache, slot, position, len, c, f, hq, hkv, d,
                                              s, l, eps, theta, scale))
      return st;
  }
  return ARL_OK;
}

}  // namespace arl
