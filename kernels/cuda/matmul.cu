// GEMM entry points: arl_sgemm, arl_linear_forward/backward and their bf16-weight forms.
#include <cmath>

#include "common.cuh"
#include "gemv.cuh"

namespace {

arl_status check_ld(arl_ctx* ctx, const char* fn, const char* name, int32_t ld, int32_t cols) {
  if (ld < cols || ld <= 0)
    return arl::fail(ctx, ARL_ERR_SIZE, "%s: %s = %d is smaller than its row length %d", fn,
                     name, ld, cols);
  return ARL_OK;
}

__global__ void add_bias_kernel(float* y, const float* bias, int32_t m, int32_t n) {
  int64_t total = int64_t(m) * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] += bias[i % n];
}

// dbias (N) += column sums of dy (M, N): a block of 32 x 8 threads per 32 columns and
// kBiasRows rows; the blocks of a column add their sums atomically.
constexpr int32_t kBiasRows = 256;

__global__ void bias_grad_kernel(float* dbias, const float* dy, int32_t m, int32_t n) {
  __shared__ float part[8][33];
  const int32_t j = blockIdx.x * 32 + threadIdx.x;
  const int32_t i0 = blockIdx.y * kBiasRows, i1 = min(m, i0 + kBiasRows);
  float s = 0;
  if (j < n)
    for (int32_t i = i0 + threadIdx.y; i < i1; i += 8) s += dy[int64_t(i) * n + j];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    float total = 0;
    for (int r = 0; r < 8; r++) total += part[r][threadIdx.x];
    atomicAdd(&dbias[j], total);
  }
}

// y (M, N) += bias (N) on every row.
arl_status add_bias(arl_ctx* ctx, const char* fn, float* y, const float* bias, int32_t m,
                    int32_t n) {
  add_bias_kernel<<<arl::grid_for(int64_t(m) * n), arl::kBlock, 0, ctx->stream>>>(y, bias, m, n);
  return arl::check_launch(ctx, fn);
}

// dbias (N) += the column sums of dy (M, N).
arl_status bias_grad(arl_ctx* ctx, const char* fn, float* dbias, const float* dy, int32_t m,
                     int32_t n) {
  const dim3 grid((n + 31) / 32, (m + kBiasRows - 1) / kBiasRows);
  bias_grad_kernel<<<grid, dim3(32, 8), 0, ctx->stream>>>(dbias, dy, m, n);
  return arl::check_launch(ctx, fn);
}

}  // namespace

// m, n, k positive and their products within range (every linear entry point).
#define ARL_LINEAR_SIZES()  \
  ARL_POSITIVE(ctx, m);     \
  ARL_POSITIVE(ctx, n);     \
  ARL_POSITIVE(ctx, k);     \
  ARL_PRODUCT(ctx, m, n);   \
  ARL_PRODUCT(ctx, m, k);   \
  ARL_PRODUCT(ctx, n, k)

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
  return arl::gemm(ctx, __func__, trans_a != 0, trans_b != 0, m, n, k, alpha, a, lda, b, ldb,
                   beta, c, ldc);
}

arl_status arl_linear_forward(arl_ctx* ctx, float* y, const float* x, const float* w,
                              const float* bias, int32_t m, int32_t n, int32_t k,
                              int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, y);
  ARL_NOT_NULL(ctx, x);
  ARL_NOT_NULL(ctx, w);
  ARL_LINEAR_SIZES();
  if (m <= arl::kGemvRows) {
    arl::gemv_rows(ctx, y, x, w, bias, m, n, k, accumulate != 0);
    ARL_LAUNCHED(ctx);
    return ARL_OK;
  }
  if (arl_status s = arl::gemm(ctx, __func__, false, true, m, n, k, 1.0f, x, k, w, k,
                               accumulate ? 1.0f : 0.0f, y, n))
    return s;
  return bias != nullptr ? add_bias(ctx, __func__, y, bias, m, n) : ARL_OK;
}

arl_status arl_linear_backward(arl_ctx* ctx, float* dx, float* dw, float* dbias, const float* dy,
                               const float* x, const float* w, int32_t m, int32_t n, int32_t k,
                               int32_t accumulate_dx) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dy);
  ARL_LINEAR_SIZES();
  if (dx != nullptr) ARL_NOT_NULL(ctx, w);
  if (dw != nullptr) ARL_NOT_NULL(ctx, x);
  if (dx != nullptr) {
    if (arl_status s = arl::gemm(ctx, __func__, false, false, m, k, n, 1.0f, dy, n, w, k,
                                 accumulate_dx ? 1.0f : 0.0f, dx, k))
      return s;
  }
  if (dw != nullptr) {
    if (arl_status s = arl::gemm(ctx, __func__, true, false, n, k, m, 1.0f, dy, n, x, k, 1.0f, dw,
                                 k))
      return s;
  }
  return dbias != nullptr ? bias_grad(ctx, __func__, dbias, dy, m, n) : ARL_OK;
}

arl_status arl_linear_forward_bf16(arl_ctx* ctx, float* y, const float* x, const uint16_t* w,
                                   const float* bias, int32_t m, int32_t n, int32_t k,
                                   int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, y);
  ARL_NOT_NULL(ctx, x);
  ARL_NOT_NULL(ctx, w);
  ARL_LINEAR_SIZES();
  if (m <= arl::kGemvRows) {  // decode: fp32 x against the bf16 rows, no rounding of x
    arl::gemv_rows(ctx, y, x, w, bias, m, n, k, accumulate != 0);
    ARL_LAUNCHED(ctx);
    return ARL_OK;
  }
  const uint16_t* x16 = nullptr;
  if (arl_status s = arl::to_bf16(ctx, __func__, 0, x, int64_t(m) * k, &x16)) return s;
  if (arl_status s = arl::gemm_bf16(ctx, __func__, false, true, m, n, k, 1.0f, x16, k, w, k,
                                    accumulate ? 1.0f : 0.0f, y, n))
    return s;
  return bias != nullptr ? add_bias(ctx, __func__, y, bias, m, n) : ARL_OK;
}

arl_status arl_linear_backward_bf16(arl_ctx* ctx, float* dx, float* dw, float* dbias,
                                    const float* dy, const float* x, const uint16_t* w,
                                    int32_t m, int32_t n, int32_t k, int32_t accumulate_dx) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dy);
  ARL_LINEAR_SIZES();
  if (dx != nullptr) ARL_NOT_NULL(ctx, w);
  if (dw != nullptr) ARL_NOT_NULL(ctx, x);
  if (dx == nullptr && dw == nullptr)  // dbias alone
    return arl_linear_backward(ctx, dx, dw, dbias, dy, x, nullptr, m, n, k, accumulate_dx);
  const uint16_t* dy16 = nullptr;
  if (arl_status s = arl::to_bf16(ctx, __func__, 0, dy, int64_t(m) * n, &dy16)) return s;
  if (dx != nullptr) {
    if (arl_status s = arl::gemm_bf16(ctx, __func__, false, false, m, k, n, 1.0f, dy16, n, w, k,
                                      accumulate_dx ? 1.0f : 0.0f, dx, k))
      return s;
  }
  if (dw != nullptr) {
    const uint16_t* x16 = nullptr;
    if (arl_status s = arl::to_bf16(ctx, __func__, 1, x, int64_t(m) * k, &x16)) return s;
    if (arl_status s = arl::gemm_bf16(ctx, __func__, true, false, n, k, m, 1.0f, dy16, n, x16, k,
                                      1.0f, dw, k))
      return s;
  }
  return dbias != nullptr ? bias_grad(ctx, __func__, dbias, dy, m, n) : ARL_OK;
}

}  // extern "C"
