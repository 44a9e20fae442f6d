// Decode fusions (ABI versions 4 and 5). On the CPU they are the unfused calls in sequence,
// with the intermediate rows in temporary memory: the CUDA library fuses them to save kernel
// launches.
#include <algorithm>
#include <cmath>
#include <vector>

#include "../common/typed_entries.h"
#include "common.h"

namespace {

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
  return arl::linear_entry(ctx, y, h.data(), w, bias, m, n, k, 0);
}

// rmsnorm(x) into temporary rows, the linear entry point on the gate rows of w (the first F)
// and on the up rows, then SwiGLU of the two into y.
template <typename W>
arl_status rmsnorm_linear_swiglu(arl_ctx* ctx, const char* fn, float* y, const float* x,
                                 const float* norm_weight, const W* w, const float* bias,
                                 int32_t m, int32_t f, int32_t k, float eps) {
  std::vector<float> h, rstd, g, u;
  if (arl_status s = arl::guarded(ctx, fn, [&] {
        h.resize(size_t(m) * size_t(k));
        rstd.resize(size_t(m));
        g.resize(size_t(m) * size_t(f));
        u.resize(size_t(m) * size_t(f));
      }))
    return s;
  if (arl_status s = arl_rmsnorm_forward(ctx, h.data(), rstd.data(), x, norm_weight, m, k, eps))
    return s;
  if (arl_status s = arl::linear_entry(ctx, g.data(), h.data(), w, bias, m, f, k, 0)) return s;
  const float* bias_up = bias != nullptr ? bias + f : nullptr;
  if (arl_status s =
          arl::linear_entry(ctx, u.data(), h.data(), w + int64_t(f) * k, bias_up, m, f, k, 0))
    return s;
  return arl_swiglu_forward(ctx, y, g.data(), u.data(), int64_t(m) * f);
}

// rmsnorm_linear into y, then arl_rope_kv_cache_write on copies of each row's q, k and v
// parts (the call takes them contiguous), the rotated q and k copied back into y.
template <typename W>
arl_status rmsnorm_qkv_rope(arl_ctx* ctx, const char* fn, float* y, const float* x,
                            const float* norm_weight, const W* w, const float* bias, int32_t m,
                            int32_t k, float eps, float* k_cache, float* v_cache,
                            const int32_t* slots, const int32_t* positions, int32_t hq, int32_t s,
                            int32_t hkv, int32_t l, int32_t d, float theta) {
  const int64_t qd = int64_t(hq) * d, kvd = int64_t(hkv) * d, n = qd + 2 * kvd;
  if (arl_status st = arl::check_cache_rows(ctx, "arl_kv_cache_write", slots, positions, m, s, l,
                                            true))
    return st;
  if (arl_status st = rmsnorm_linear(ctx, fn, y, x, norm_weight, w, bias, m, int32_t(n), k, eps))
    return st;
  std::vector<float> q, kk, v;
  if (arl_status st = arl::guarded(ctx, fn, [&] {
        q.resize(size_t(m * qd));
        kk.resize(size_t(m * kvd));
        v.resize(size_t(m * kvd));
      }))
    return st;
  for (int64_t r = 0; r < m; r++) {
    std::copy_n(y + r * n, qd, q.data() + r * qd);
    std::copy_n(y + r * n + qd, kvd, kk.data() + r * kvd);
    std::copy_n(y + r * n + qd + kvd, kvd, v.data() + r * kvd);
  }
  if (arl_status st = arl_rope_kv_cache_write(ctx, q.data(), kk.data(), k_cache, v_cache,
                                              v.data(), slots, positions, m, hq, s, hkv, l, d,
                                              theta))
    return st;
  for (int64_t r = 0; r < m; r++) {
    std::copy_n(q.data() + r * qd, qd, y + r * n);
    std::copy_n(kk.data() + r * kvd, kvd, y + r * n + qd);
  }
  return ARL_OK;
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

arl_status arl_rmsnorm_linear_swiglu_forward(arl_ctx* ctx, float* y, const float* x,
                                             const float* norm_weight, const float* w,
                                             const float* bias, int32_t m, int32_t f, int32_t k,
                                             float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_SWIGLU_ARGS(ctx, y, x, norm_weight, w, m, f, k, eps);
  return rmsnorm_linear_swiglu(ctx, __func__, y, x, norm_weight, w, bias, m, f, k, eps);
}

arl_status arl_rmsnorm_linear_swiglu_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                                  const float* norm_weight, const uint16_t* w,
                                                  const float* bias, int32_t m, int32_t f,
                                                  int32_t k, float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_SWIGLU_ARGS(ctx, y, x, norm_weight, w, m, f, k, eps);
  return rmsnorm_linear_swiglu(ctx, __func__, y, x, norm_weight, w, bias, m, f, k, eps);
}

arl_status arl_rope_kv_cache_write(arl_ctx* ctx, float* q, float* k, float* k_cache,
                                   float* v_cache, const float* v, const int32_t* slots,
                                   const int32_t* positions, int32_t n, int32_t hq, int32_t s,
                                   int32_t hkv, int32_t l, int32_t d, float theta) {
  ARL_CTX(ctx);
  ARL_ROPE_KV_ARGS(ctx, q, k, k_cache, v_cache, v, slots, positions, n, hq, s, hkv, l, d, theta);
  if (arl_status st = arl::check_cache_rows(ctx, "arl_kv_cache_write", slots, positions, n, s, l,
                                            true))
    return st;
  if (arl_status st = arl_rope(ctx, q, q, positions, n, hq, d, theta, 0)) return st;
  if (arl_status st = arl_rope(ctx, k, k, positions, n, hkv, d, theta, 0)) return st;
  return arl_kv_cache_write(ctx, k_cache, v_cache, k, v, slots, positions, n, s, hkv, l, d);
}

arl_status arl_norm_rope_kv_cache_write(arl_ctx* ctx, float* q, float* k, float* k_cache,
                                        float* v_cache, const float* v, const float* q_norm,
                                        const float* k_norm, const float* inv_freq,
                                        const int32_t* slots, const int32_t* positions, int32_t n,
                                        int32_t hq, int32_t s, int32_t hkv, int32_t l, int32_t d,
                                        float eps, float theta) {
  ARL_CTX(ctx);
  ARL_NORM_ROPE_KV_ARGS(ctx);
  // every check before q or k changes (the calls below then cannot fail on their arguments)
  if (arl_status st = arl::check_cache_rows(ctx, __func__, slots, positions, n, s, l, false))
    return st;
  if (inv_freq != nullptr)
    if (arl_status st = arl::check_inv_freq(ctx, __func__, inv_freq, d)) return st;
  // the calls it stands for, in place: each is row-wise (a row read before it is written)
  std::vector<float> rstd;
  if (arl_status st = arl::guarded(ctx, __func__, [&] {
        rstd.resize(size_t(n) * size_t(std::max(hq, hkv)));
      }))
    return st;
  const auto norm_rope = [&](float* x, const float* weight, int32_t h) -> arl_status {
    if (weight != nullptr)
      if (arl_status st = arl_rmsnorm_forward(ctx, x, rstd.data(), x, weight, n * h, d, eps))
        return st;
    return inv_freq != nullptr ? arl_rope_freqs(ctx, x, x, positions, inv_freq, n, h, d, 0)
                               : arl_rope(ctx, x, x, positions, n, h, d, theta, 0);
  };
  if (arl_status st = norm_rope(q, q_norm, hq)) return st;
  if (arl_status st = norm_rope(k, k_norm, hkv)) return st;
  return arl_kv_cache_write(ctx, k_cache, v_cache, k, v, slots, positions, n, s, hkv, l, d);
}

arl_status arl_rmsnorm_qkv_rope_forward(arl_ctx* ctx, float* y, const float* x,
                                        const float* norm_weight, const float* w,
                                        const float* bias, int32_t m, int32_t k, float eps,
                                        float* k_cache, float* v_cache, const int32_t* slots,
                                        const int32_t* positions, int32_t hq, int32_t s,
                                        int32_t hkv, int32_t l, int32_t d, float theta) {
  ARL_CTX(ctx);
  ARL_RMSNORM_QKV_ROPE_ARGS(ctx, y, x, norm_weight, w, m, k, eps, k_cache, v_cache, slots,
                            positions, hq, s, hkv, l, d, theta);
  return rmsnorm_qkv_rope(ctx, __func__, y, x, norm_weight, w, bias, m, k, eps, k_cache, v_cache,
                          slots, positions, hq, s, hkv, l, d, theta);
}

arl_status arl_rmsnorm_qkv_rope_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                             const float* norm_weight, const uint16_t* w,
                                             const float* bias, int32_t m, int32_t k, float eps,
                                             float* k_cache, float* v_cache, const int32_t* slots,
                                             const int32_t* positions, int32_t hq, int32_t s,
                                             int32_t hkv, int32_t l, int32_t d, float theta) {
  ARL_CTX(ctx);
  ARL_RMSNORM_QKV_ROPE_ARGS(ctx, y, x, norm_weight, w, m, k, eps, k_cache, v_cache, slots,
                            positions, hq, s, hkv, l, d, theta);
  return rmsnorm_qkv_rope(ctx, __func__, y, x, norm_weight, w, bias, m, k, eps, k_cache, v_cache,
                          slots, positions, hq, s, hkv, l, d, theta);
}

}  // extern "C"
