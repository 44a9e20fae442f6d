// Decode fusions (ABI version 4). On the CPU they are the unfused calls in sequence, with the
// intermediate rows in temporary memory: the CUDA library fuses them to save kernel launches.
#include <vector>

#include "common.h"

namespace {

// The linear entry point for the weights' type.
arl_status linear_entry(arl_ctx* ctx, float* y, const float* x, const float* w, const float* bias,
                        int32_t m, int32_t n, int32_t k, int32_t accumulate) {
  return arl_linear_forward(ctx, y, x, w, bias, m, n, k, accumulate);
}
arl_status linear_entry(arl_ctx* ctx, float* y, const float* x, const uint16_t* w,
                        const float* bias, int32_t m, int32_t n, int32_t k, int32_t accumulate) {
  return arl_linear_forward_bf16(ctx, y, x, w, bias, m, n, k, accumulate);
}

// rmsnorm(x) into temporary rows, then the linear entry point on them.
template <typename W>
arl_status rmsnorm_linear(arl_ctx* ctx, const char* fn, float* y, const float* x,
                          const float* norm_weight, const W* w, const float* bias, int32_t m,
                          int32_t n, int32_t k, float eps) {
  std::vector<float> h, rstd;
  if (arl_status s = arl::guarded(ctx, fn, [&] {
        h.resize(size_t(m) * size_t(k));
        rstd.resize(size_t(m));
      }))
    return s;
  if (arl_status s = arl_rmsnorm_forward(ctx, h.data(), rstd.data(), x, norm_weight, m, k, eps))
    return s;
  return linear_entry(ctx, y, h.data(), w, bias, m, n, k, 0);
}

// silu(gate) * up into temporary rows, then the linear entry point on them.
template <typename W>
arl_status swiglu_linear(arl_ctx* ctx, const char* fn, float* y, const float* gate,
                         const float* up, const W* w, const float* bias, int32_t m, int32_t n,
                         int32_t k, int32_t accumulate) {
  std::vector<float> s;
  if (arl_status st = arl::guarded(ctx, fn, [&] { s.resize(size_t(m) * size_t(k)); })) return st;
  if (arl_status st = arl_swiglu_forward(ctx, s.data(), gate, up, int64_t(m) * k)) return st;
  return linear_entry(ctx, y, s.data(), w, bias, m, n, k, accumulate);
}

}  // namespace

extern "C" {

arl_status arl_rmsnorm_linear_forward(arl_ctx* ctx, float* y, const float* x,
                                      const float* norm_weight, const float* w, const float* bias,
                                      int32_t m, int32_t n, int32_t k, float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, n, k, eps);
  return rmsnorm_linear(ctx, __func__, y, x, norm_weight, w, bias, m, n, k, eps);
}

arl_status arl_rmsnorm_linear_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                           const float* norm_weight, const uint16_t* w,
                                           const float* bias, int32_t m, int32_t n, int32_t k,
                                           float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, n, k, eps);
  return rmsnorm_linear(ctx, __func__, y, x, norm_weight, w, bias, m, n, k, eps);
}

arl_status arl_swiglu_linear_forward(arl_ctx* ctx, float* y, const float* gate, const float* up,
                                     const float* w, const float* bias, int32_t m, int32_t n,
                                     int32_t k, int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_SWIGLU_LINEAR_ARGS(ctx, y, gate, up, w, m, n, k);
  return swiglu_linear(ctx, __func__, y, gate, up, w, bias, m, n, k, accumulate);
}

arl_status arl_swiglu_linear_forward_bf16(arl_ctx* ctx, float* y, const float* gate,
                                          const float* up, const uint16_t* w, const float* bias,
                                          int32_t m, int32_t n, int32_t k, int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_SWIGLU_LINEAR_ARGS(ctx, y, gate, up, w, m, n, k);
  return swiglu_linear(ctx, __func__, y, gate, up, w, bias, m, n, k, accumulate);
}

arl_status arl_rope_kv_cache_write(arl_ctx* ctx, float* q, float* k, float* k_cache,
                                   float* v_cache, const float* v, const int32_t* slots,
                                   const int32_t* positions, int32_t n, int32_t hq, int32_t s,
                                   int32_t hkv, int32_t l, int32_t d, float theta) {
  ARL_CTX(ctx);
  ARL_ROPE_KV_ARGS(ctx, q, k, k_cache, v_cache, v, slots, positions, n, hq, s, hkv, l, d, theta);
  if (arl_status st = arl_rope(ctx, q, q, positions, n, hq, d, theta, 0)) return st;
  if (arl_status st = arl_rope(ctx, k, k, positions, n, hkv, d, theta, 0)) return st;
  return arl_kv_cache_write(ctx, k_cache, v_cache, k, v, slots, positions, n, s, hkv, l, d);
}

}  // extern "C"
