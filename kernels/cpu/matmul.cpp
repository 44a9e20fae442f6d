// GEMM entry points: arl_sgemm, arl_linear_forward/backward.
#include <cmath>
#include <cstring>

#include "common.h"
#include "sgemm.h"

namespace {

// Checks an (rows, cols) operand's leading dimension: at least cols.
arl_status check_ld(arl_ctx* ctx, const char* fn, const char* name, int32_t ld, int32_t cols) {
  if (ld < cols || ld <= 0)
    return arl::fail(ctx, ARL_ERR_SIZE, "%s: %s = %d is smaller than its row length %d", fn,
                     name, ld, cols);
  return ARL_OK;
}

}  // namespace

extern "C" {

arl_status arl_sgemm(arl_ctx* ctx, float* c, const float* a, const float* b, int32_t trans_a,
                     int32_t trans_b, int32_t m, int32_t n, int32_t k, float alpha, float beta,
                     int32_t lda, int32_t ldb, int32_t ldc) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, c);
  ARL_NOT_NULL(ctx, a);
  ARL_NOT_NULL(ctx, b);
  ARL_POSITIVE(ctx, m);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, k);
  if (arl_status s = check_ld(ctx, __func__, "lda", lda, trans_a ? m : k)) return s;
  if (arl_status s = check_ld(ctx, __func__, "ldb", ldb, trans_b ? k : n)) return s;
  if (arl_status s = check_ld(ctx, __func__, "ldc", ldc, n)) return s;
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: alpha and beta must be finite, got %g and %g",
                     __func__, double(alpha), double(beta));
  ARL_PRODUCT(ctx, m, ldc);
  return arl::guarded(ctx, __func__, [&] { arl::sgemm(ctx->num_threads, trans_a != 0, trans_b != 0, m, n, k, alpha, a, lda,
                            b, ldb, beta, c, ldc); });
}

arl_status arl_linear_forward(arl_ctx* ctx, float* y, const float* x, const float* w,
                              const float* bias, int32_t m, int32_t n, int32_t k,
                              int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, y);
  ARL_NOT_NULL(ctx, x);
  ARL_NOT_NULL(ctx, w);
  ARL_POSITIVE(ctx, m);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, k);
  ARL_PRODUCT(ctx, m, n);
  ARL_PRODUCT(ctx, m, k);
  ARL_PRODUCT(ctx, n, k);
  return arl::guarded(ctx, __func__, [&] {
    arl::sgemm(ctx->num_threads, false, true, m, n, k, 1.0f, x, k, w, k, accumulate ? 1.0f : 0.0f,
               y, n);
    if (bias != nullptr) {
#pragma omp parallel for num_threads(ctx->num_threads) if (int64_t(m) * n > (1 << 16))
      for (int32_t i = 0; i < m; i++) {
        float* row = y + int64_t(i) * n;
        for (int32_t j = 0; j < n; j++) row[j] += bias[j];
      }
    }
  });
}

arl_status arl_linear_backward(arl_ctx* ctx, float* dx, float* dw, float* dbias, const float* dy,
                               const float* x, const float* w, int32_t m, int32_t n, int32_t k,
                               int32_t accumulate_dx) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dy);
  ARL_POSITIVE(ctx, m);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, k);
  ARL_PRODUCT(ctx, m, n);
  ARL_PRODUCT(ctx, m, k);
  ARL_PRODUCT(ctx, n, k);
  if (dx != nullptr) ARL_NOT_NULL(ctx, w);
  if (dw != nullptr) ARL_NOT_NULL(ctx, x);
  return arl::guarded(ctx, __func__, [&] {
    if (dx != nullptr)
      arl::sgemm(ctx->num_threads, false, false, m, k, n, 1.0f, dy, n, w, k,
                 accumulate_dx ? 1.0f : 0.0f, dx, k);
    if (dw != nullptr) arl::sgemm(ctx->num_threads, true, false, n, k, m, 1.0f, dy, n, x, k, 1.0f, dw, k);
    if (dbias != nullptr) {
#pragma omp parallel for num_threads(ctx->num_threads) if (int64_t(m) * n > (1 << 16))
      for (int32_t j = 0; j < n; j++) {
        double s = 0;
        for (int32_t i = 0; i < m; i++) s += dy[int64_t(i) * n + j];
        dbias[j] += float(s);
      }
    }
  });
}

}  // extern "C"
