// Argument checks shared by the CPU and CUDA libraries. Each backend defines
// struct arl_ctx, arl::fail (records a message on the context) and arl::enter
// (clears the last error and makes the context's device current).
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>

#include "../include/agentrl.h"

namespace arl {

// Records a message on the context and returns the status.
arl_status fail(arl_ctx* ctx, arl_status status, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

// Clears the last error and selects the context's device; non-zero on failure.
arl_status enter(arl_ctx* ctx);

// Largest element count an int64 size may describe here (2^40 floats = 4 TiB).
constexpr int64_t kMaxElements = int64_t(1) << 40;

// arl_l2_persist's regions: count in 0..ARL_L2_MAX_REGIONS; the arrays given when count > 0;
// each region's base not null and its bytes in 1..2^42; no two regions overlapping.
inline arl_status l2_regions_args(arl_ctx* ctx, const char* fn, const void* const* bases,
                                  const int64_t* bytes, int32_t count, const int64_t* kept) {
  if (count < 0 || count > ARL_L2_MAX_REGIONS)
    return fail(ctx, ARL_ERR_SIZE, "%s: count must be in 0..%d, got %d", fn, ARL_L2_MAX_REGIONS,
                count);
  if (count == 0) return ARL_OK;
  if (bases == nullptr || bytes == nullptr || kept == nullptr)
    return fail(ctx, ARL_ERR_NULL, "%s: bases, bytes and kept must not be null when count is %d",
                fn, count);
  for (int32_t i = 0; i < count; i++) {
    if (bases[i] == nullptr)
      return fail(ctx, ARL_ERR_NULL, "%s: bases[%d] must not be null", fn, i);
    if (bytes[i] <= 0 || bytes[i] > kMaxElements * 4)
      return fail(ctx, ARL_ERR_SIZE, "%s: bytes[%d] must be in 1..2^42, got %lld", fn, i,
                  (long long)bytes[i]);
  }
  for (int32_t i = 0; i < count; i++)
    for (int32_t j = 0; j < i; j++) {
      const uintptr_t a = reinterpret_cast<uintptr_t>(bases[i]);
      const uintptr_t b = reinterpret_cast<uintptr_t>(bases[j]);
      if (a < b + uintptr_t(bytes[j]) && b < a + uintptr_t(bytes[i]))
        return fail(ctx, ARL_ERR_VALUE, "%s: regions %d and %d overlap", fn, j, i);
    }
  return ARL_OK;
}

// arl_upload_alternating's: bytes at most ARL_UPLOAD_ASYNC_BYTES, parity and fresh 0 or 1.
inline arl_status alternating_args(arl_ctx* ctx, const char* fn, int64_t bytes, int32_t parity,
                                   int32_t fresh) {
  if (bytes > ARL_UPLOAD_ASYNC_BYTES)
    return fail(ctx, ARL_ERR_SIZE, "%s: bytes must be at most %d, got %lld", fn,
                ARL_UPLOAD_ASYNC_BYTES, (long long)bytes);
  if (parity != 0 && parity != 1)
    return fail(ctx, ARL_ERR_VALUE, "%s: parity must be 0 or 1, got %d", fn, parity);
  if (fresh != 0 && fresh != 1)
    return fail(ctx, ARL_ERR_VALUE, "%s: fresh must be 0 or 1, got %d", fn, fresh);
  return ARL_OK;
}

}  // namespace arl

// Argument checks: each returns from the calling entry point with a status.
#define ARL_CTX(ctx)                                   \
  do {                                                 \
    if ((ctx) == nullptr) return ARL_ERR_NULL;         \
    if (arl_status s_ = arl::enter(ctx)) return s_;    \
  } while (0)

#define ARL_NOT_NULL(ctx, p)                                                        \
  do {                                                                              \
    if ((p) == nullptr)                                                             \
      return arl::fail(ctx, ARL_ERR_NULL, "%s: %s must not be null", __func__, #p); \
  } while (0)

#define ARL_POSITIVE(ctx, x)                                                          \
  do {                                                                                \
    if ((x) <= 0)                                                                     \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: %s must be positive, got %lld", __func__, \
                       #x, (long long)(x));                                           \
  } while (0)

#define ARL_COUNT(ctx, x)                                                                \
  do {                                                                                   \
    if ((x) <= 0 || (int64_t)(x) > arl::kMaxElements)                                    \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: %s must be in 1..2^40, got %lld", __func__, \
                       #x, (long long)(x));                                              \
  } while (0)

// Checks that the product of sizes fits the element limit.
#define ARL_PRODUCT(ctx, a, b)                                                          \
  do {                                                                                  \
    if ((int64_t)(a) * (int64_t)(b) > arl::kMaxElements)                                \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: %s x %s = %lld elements is too large",    \
                       __func__, #a, #b, (long long)((int64_t)(a) * (int64_t)(b)));     \
  } while (0)

// Sizes m, n, k of a product (M, K) x (K, N): positive, each pair within the element limit.
#define ARL_MNK(ctx, m, n, k) \
  do {                        \
    ARL_POSITIVE(ctx, m);     \
    ARL_POSITIVE(ctx, n);     \
    ARL_POSITIVE(ctx, k);     \
    ARL_PRODUCT(ctx, m, k);   \
    ARL_PRODUCT(ctx, m, n);   \
    ARL_PRODUCT(ctx, n, k);   \
  } while (0)

// The arguments of arl_rmsnorm_linear_forward[_bf16] (bias may be null).
#define ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, n, k, eps)                  \
  do {                                                                                  \
    ARL_NOT_NULL(ctx, y);                                                               \
    ARL_NOT_NULL(ctx, x);                                                               \
    ARL_NOT_NULL(ctx, norm_weight);                                                     \
    ARL_NOT_NULL(ctx, w);                                                               \
    ARL_MNK(ctx, m, n, k);                                                              \
    if (!((eps) >= 0.0f) || !std::isfinite(eps))                                        \
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: eps must be finite and >= 0, got %g",    \
                       __func__, double(eps));                                          \
  } while (0)

// The arguments of arl_rmsnorm_linear_swiglu_forward[_bf16] (bias may be null): w holds 2F
// rows of K.
#define ARL_RMSNORM_LINEAR_SWIGLU_ARGS(ctx, y, x, norm_weight, w, m, f, k, eps)          \
  do {                                                                                   \
    ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, f, k, eps);                    \
    if (2 * (int64_t)(f) * (int64_t)(k) > arl::kMaxElements)                             \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: w (2f x k) = %lld elements is too large", \
                       __func__, (long long)(2 * (int64_t)(f) * (int64_t)(k)));          \
  } while (0)

// The arguments of arl_rmsnorm_qkv_rope_forward[_bf16] (bias may be null).
#define ARL_RMSNORM_QKV_ROPE_ARGS(ctx, y, x, norm_weight, w, m, k, eps, k_cache, v_cache, slots, \
                                  positions, hq, s, hkv, l, d, theta)                           \
  do {                                                                                          \
    ARL_POSITIVE(ctx, hq);                                                                      \
    ARL_POSITIVE(ctx, hkv);                                                                     \
    ARL_POSITIVE(ctx, d);                                                                       \
    if (((int64_t)(hq) + 2 * (int64_t)(hkv)) * (d) > INT32_MAX)                                  \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: (hq + 2 hkv) x d = %lld columns is too many",     \
                       __func__, (long long)(((int64_t)(hq) + 2 * (int64_t)(hkv)) * (d)));      \
    ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, ((hq) + 2 * (hkv)) * (d), k, eps);   \
    ARL_ROPE_KV_ARGS(ctx, y, y, k_cache, v_cache, y, slots, positions, m, hq, s, hkv, l, d,     \
                     theta);                                                                    \
  } while (0)

// The arguments of arl_norm_rope_kv_cache_write: arl_rope_kv_cache_write's, k's size, the heads
// (rows of each norm) within an int32, and eps.
#define ARL_NORM_ROPE_KV_ARGS(ctx)                                                             \
  do {                                                                                         \
    ARL_ROPE_KV_ARGS(ctx, q, k, k_cache, v_cache, v, slots, positions, n, hq, s, hkv, l, d,    \
                     theta);                                                                   \
    ARL_PRODUCT(ctx, (int64_t)(n) * (hkv), d);                                                 \
    if ((int64_t)(n) * ((int64_t)(hq) + (hkv)) > INT32_MAX)                                    \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: n x (hq + hkv) = %lld heads is too many",       \
                       __func__, (long long)((int64_t)(n) * ((int64_t)(hq) + (hkv))));         \
    if (!(eps >= 0.0f) || !std::isfinite(eps))                                                 \
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: eps must be finite and >= 0, got %g", __func__, \
                       double(eps));                                                           \
  } while (0)

// The arguments arl_rope and arl_rope_freqs share: x and out (T, H, D), positions (T).
#define ARL_ROPE_ARGS(ctx, out, x, positions, t, h, d)                                         \
  do {                                                                                         \
    ARL_NOT_NULL(ctx, out);                                                                    \
    ARL_NOT_NULL(ctx, x);                                                                      \
    ARL_NOT_NULL(ctx, positions);                                                              \
    ARL_POSITIVE(ctx, t);                                                                      \
    ARL_POSITIVE(ctx, h);                                                                      \
    ARL_POSITIVE(ctx, d);                                                                      \
    ARL_PRODUCT(ctx, (int64_t)(t) * (h), d);                                                   \
    if ((d) % 2 != 0)                                                                          \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: head dim %d must be even", __func__, (int)(d)); \
  } while (0)

// The arguments of arl_rope_kv_cache_write.
#define ARL_ROPE_KV_ARGS(ctx, q, k, k_cache, v_cache, v, slots, positions, n, hq, s, hkv, l, d, \
                         theta)                                                              \
  do {                                                                                       \
    ARL_NOT_NULL(ctx, q);                                                                    \
    ARL_NOT_NULL(ctx, k);                                                                    \
    ARL_NOT_NULL(ctx, k_cache);                                                              \
    ARL_NOT_NULL(ctx, v_cache);                                                              \
    ARL_NOT_NULL(ctx, v);                                                                    \
    ARL_NOT_NULL(ctx, slots);                                                                \
    ARL_NOT_NULL(ctx, positions);                                                            \
    ARL_POSITIVE(ctx, n);                                                                    \
    ARL_POSITIVE(ctx, hq);                                                                   \
    ARL_POSITIVE(ctx, s);                                                                    \
    ARL_POSITIVE(ctx, hkv);                                                                  \
    ARL_POSITIVE(ctx, l);                                                                    \
    ARL_POSITIVE(ctx, d);                                                                    \
    ARL_PRODUCT(ctx, (int64_t)(n) * (hq), d);                                                \
    ARL_PRODUCT(ctx, (int64_t)(s) * (hkv) * (l), d);                                         \
    if (((int64_t)(hq) + (hkv)) * (d) > INT32_MAX)                                            \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: (hq + hkv) x d = %lld values a token is too "  \
                       "many", __func__, (long long)(((int64_t)(hq) + (hkv)) * (d)));         \
    if ((d) % 2 != 0)                                                                        \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: head dim %d must be even", __func__, (int)(d)); \
    if (!((theta) > 0.0f) || !std::isfinite(theta))                                          \
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: theta must be finite and > 0, got %g",        \
                       __func__, double(theta));                                             \
  } while (0)
