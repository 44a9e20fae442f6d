// GEMM entry points: arl_sgemm, arl_linear_forward/backward.
#include "common.cuh"

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

// Few-row linear (decode): y (M, N) = x (M, K) . w (N, K)^T + bias [+ y], M <= kGemvRows.
// Memory-bound on w: each output column's row of w is streamed once (16-byte loads when
// every row is 16-byte aligned) and dotted with the M rows of x (small, served from cache);
// exact fp32 products, no tensor-core rounding. A block of kGemvWarps warps covers
// kGemvWarps / S columns with S warps per column (each a slice of K, summed in shared
// memory), S chosen so that narrow layers still put enough loads in flight.
constexpr int32_t kGemvRows = 8;
constexpr int kGemvWarps = 8;

template <int M, bool kVec>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_rows_kernel(float* __restrict__ y, const float* __restrict__ x,
                     const float* __restrict__ w, const float* __restrict__ bias, int32_t n,
                     int32_t k, int split, bool accumulate) {
  __shared__ float part[kGemvWarps][M];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cols = kGemvWarps / split, slice = warp % split;
  const int64_t j = int64_t(blockIdx.x) * cols + warp / split;
  float acc[M];
#pragma unroll
  for (int r = 0; r < M; r++) acc[r] = 0.0f;
  if (j < n) {
    const float* wj = w + j * k;
    if (kVec) {
      const int32_t k4 = k >> 2;
      const float4* w4 = reinterpret_cast<const float4*>(wj);
#pragma unroll 4
      for (int32_t i = slice * 32 + lane; i < k4; i += 32 * split) {
        const float4 a = __ldg(&w4[i]);
#pragma unroll
        for (int r = 0; r < M; r++) {
          const float4 b = __ldg(reinterpret_cast<const float4*>(x + int64_t(r) * k) + i);
          acc[r] = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, acc[r]))));
        }
      }
    } else {
      for (int32_t i = slice * 32 + lane; i < k; i += 32 * split) {
        const float a = __ldg(&wj[i]);
#pragma unroll
        for (int r = 0; r < M; r++) acc[r] = fmaf(a, __ldg(&x[int64_t(r) * k + i]), acc[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < M; r++)
    for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < M; r++) part[warp][r] = acc[r];
  }
  __syncthreads();
  if (slice != 0 || lane != 0 || j >= n) return;
  const float b = bias != nullptr ? bias[j] : 0.0f;
#pragma unroll
  for (int r = 0; r < M; r++) {
    float sum = 0.0f;
    for (int t = 0; t < split; t++) sum += part[warp + t][r];
    float* out = &y[int64_t(r) * n + j];
    *out = accumulate ? *out + sum + b : sum + b;
  }
}

template <int M>
void launch_gemv(arl_ctx* ctx, float* y, const float* x, const float* w, const float* bias,
                 int32_t n, int32_t k, bool accumulate) {
  // Warps per column: enough warps in all (~16 per SM) without slices under 128 floats.
  int split = 1;
  while (split < kGemvWarps && int64_t(n) * split < int64_t(ctx->num_sms) * 16 &&
         k / (split * 2) >= 128)
    split *= 2;
  const int cols = kGemvWarps / split;
  const unsigned blocks = unsigned((int64_t(n) + cols - 1) / cols);
  const bool vec = k % 4 == 0 && ((reinterpret_cast<uintptr_t>(x) |
                                   reinterpret_cast<uintptr_t>(w)) & 15) == 0;
  if (vec)
    gemv_rows_kernel<M, true><<<blocks, kGemvWarps * 32, 0, ctx->stream>>>(y, x, w, bias, n, k,
                                                                          split, accumulate);
  else
    gemv_rows_kernel<M, false><<<blocks, kGemvWarps * 32, 0, ctx->stream>>>(y, x, w, bias, n, k,
                                                                           split, accumulate);
}

void gemv_rows(arl_ctx* ctx, float* y, const float* x, const float* w, const float* bias,
               int32_t m, int32_t n, int32_t k, bool accumulate) {
  switch (m) {
    case 1: return launch_gemv<1>(ctx, y, x, w, bias, n, k, accumulate);
    case 2: return launch_gemv<2>(ctx, y, x, w, bias, n, k, accumulate);
    case 3: return launch_gemv<3>(ctx, y, x, w, bias, n, k, accumulate);
    case 4: return launch_gemv<4>(ctx, y, x, w, bias, n, k, accumulate);
    case 5: return launch_gemv<5>(ctx, y, x, w, bias, n, k, accumulate);
    case 6: return launch_gemv<6>(ctx, y, x, w, bias, n, k, accumulate);
    case 7: return launch_gemv<7>(ctx, y, x, w, bias, n, k, accumulate);
    default: return launch_gemv<8>(ctx, y, x, w, bias, n, k, accumulate);
  }
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
  ARL_POSITIVE(ctx, m);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, k);
  ARL_PRODUCT(ctx, m, n);
  ARL_PRODUCT(ctx, m, k);
  ARL_PRODUCT(ctx, n, k);
  if (m <= kGemvRows) {
    gemv_rows(ctx, y, x, w, bias, m, n, k, accumulate != 0);
    ARL_LAUNCHED(ctx);
    return ARL_OK;
  }
  if (arl_status s = arl::gemm(ctx, __func__, false, true, m, n, k, 1.0f, x, k, w, k,
                               accumulate ? 1.0f : 0.0f, y, n))
    return s;
  if (bias != nullptr) {
    add_bias_kernel<<<arl::grid_for(int64_t(m) * n), arl::kBlock, 0, ctx->stream>>>(y, bias, m,
                                                                                    n);
    ARL_LAUNCHED(ctx);
  }
  return ARL_OK;
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
  if (dbias != nullptr) {
    const dim3 grid((n + 31) / 32, (m + kBiasRows - 1) / kBiasRows);
    bias_grad_kernel<<<grid, dim3(32, 8), 0, ctx->stream>>>(dbias, dy, m, n);
    ARL_LAUNCHED(ctx);
  }
  return ARL_OK;
}

}  // extern "C"
