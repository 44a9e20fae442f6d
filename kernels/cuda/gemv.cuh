// Few-row linear (decode): y (M, N) = x (M, K) . w (N, K)^T + bias [+ y], M <= kGemvRows,
// with w in fp32 or bf16 (x, y, bias fp32; fp32 products and sums).
// Memory-bound on w: each output column's row of w is streamed once (16-byte loads when
// every row is 16-byte aligned) and dotted with the M rows of x (small, served from cache).
// A block of kGemvWarps warps covers kGemvWarps / S columns with S warps per column (each a
// slice of K, summed in shared memory), S chosen so that narrow layers still put enough
// loads in flight. Decode fusions change the input rows on the way in: kInNorm RMS-normalizes
// them (the weights are scaled by the norm weight as they stream, each sum by its row's rstd,
// which every block finds after its stream, x being small); kInSwiglu reads silu(x) * up.
#pragma once

#include "common.cuh"

namespace arl {

constexpr int32_t kGemvRows = 8;
constexpr int kGemvWarps = 8;

__device__ inline float widen(float v) { return v; }
__device__ inline float widen(uint16_t v) { return __uint_as_float(uint32_t(v) << 16); }

// 16 bytes of weights as fp32: 4 fp32 or 8 bf16 values.
template <typename W>
struct Wide16 {
  static constexpr int kCount = 16 / sizeof(W);
  float v[kCount];
  __device__ inline void load(const W* p) {
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
    if constexpr (sizeof(W) == 4) {
#pragma unroll
      for (int i = 0; i < 4; i++) v[i] = __uint_as_float(words[i]);
    } else {
#pragma unroll
      for (int i = 0; i < 4; i++) {
        v[2 * i] = __uint_as_float(words[i] << 16);
        v[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
      }
    }
  }
};

// 1 / sqrt(mean(x_r^2) + eps) of each of the M rows of x (M, K), in every thread (double
// sums, as the CPU library's arl_rmsnorm_forward).
template <int M>
__device__ inline void rows_rstd(float (&rstd)[M], const float* __restrict__ x, int32_t k,
                                 float eps) {
  __shared__ double sums[kGemvWarps][M];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  double ss[M];
#pragma unroll
  for (int r = 0; r < M; r++) ss[r] = 0.0;
  for (int32_t i = threadIdx.x; i < k; i += blockDim.x) {
#pragma unroll
    for (int r = 0; r < M; r++) {
      const float v = __ldg(&x[int64_t(r) * k + i]);
      ss[r] += double(v) * v;
    }
  }
#pragma unroll
  for (int r = 0; r < M; r++) {
    for (int o = 16; o > 0; o >>= 1) ss[r] += __shfl_xor_sync(0xffffffffu, ss[r], o);
    if (lane == 0) sums[warp][r] = ss[r];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < M; r++) {
    double t = 0.0;
    for (int v = 0; v < kGemvWarps; v++) t += sums[v][r];
    rstd[r] = float(1.0 / sqrt(t / k + eps));
  }
}

enum GemvInput { kInPlain, kInNorm, kInSwiglu };

__device__ inline float silu(float g) { return g / (1.0f + expf(-g)); }

template <int M, typename W, bool kVec, int kIn>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_rows_kernel(float* __restrict__ y, const float* __restrict__ x,
                     const W* __restrict__ w, const float* __restrict__ bias, int32_t n,
                     int32_t k, int split, bool accumulate, const float* __restrict__ norm_weight,
                     float eps, const float* __restrict__ up) {
  constexpr bool kNorm = kIn == kInNorm;
  __shared__ float part[kGemvWarps][M];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cols = kGemvWarps / split, slice = warp % split;
  const int64_t j = int64_t(blockIdx.x) * cols + warp / split;
  float acc[M];
#pragma unroll
  for (int r = 0; r < M; r++) acc[r] = 0.0f;
  if (j < n) {
    const W* wj = w + j * k;
    if (kVec) {
      constexpr int E = Wide16<W>::kCount;
      const int32_t kv = k / E;
#pragma unroll 4
      for (int32_t i = slice * 32 + lane; i < kv; i += 32 * split) {
        Wide16<W> a;
        a.load(wj + int64_t(i) * E);
        if (kNorm) {
          const float4* g = reinterpret_cast<const float4*>(norm_weight + int64_t(i) * E);
#pragma unroll
          for (int q = 0; q < E / 4; q++) {
            const float4 gq = __ldg(g + q);
            a.v[4 * q] *= gq.x;
            a.v[4 * q + 1] *= gq.y;
            a.v[4 * q + 2] *= gq.z;
            a.v[4 * q + 3] *= gq.w;
          }
        }
#pragma unroll
        for (int r = 0; r < M; r++) {
          const int64_t at = int64_t(r) * k + int64_t(i) * E;
          const float4* xr = reinterpret_cast<const float4*>(x + at);
#pragma unroll
          for (int q = 0; q < E / 4; q++) {
            float4 b = __ldg(xr + q);
            if (kIn == kInSwiglu) {
              const float4 u = __ldg(reinterpret_cast<const float4*>(up + at) + q);
              b = make_float4(silu(b.x) * u.x, silu(b.y) * u.y, silu(b.z) * u.z, silu(b.w) * u.w);
            }
            acc[r] = fmaf(a.v[4 * q], b.x, fmaf(a.v[4 * q + 1], b.y,
                     fmaf(a.v[4 * q + 2], b.z, fmaf(a.v[4 * q + 3], b.w, acc[r]))));
          }
        }
      }
    } else {
      for (int32_t i = slice * 32 + lane; i < k; i += 32 * split) {
        const float a = widen(__ldg(&wj[i])) * (kNorm ? __ldg(&norm_weight[i]) : 1.0f);
#pragma unroll
        for (int r = 0; r < M; r++) {
          float xv = __ldg(&x[int64_t(r) * k + i]);
          if (kIn == kInSwiglu) xv = silu(xv) * __ldg(&up[int64_t(r) * k + i]);
          acc[r] = fmaf(a, xv, acc[r]);
        }
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
  // rstd only scales the sums, so it is found after the weights streamed, not before (its
  // barrier, which every thread reaches, also publishes part).
  float rstd[M];
#pragma unroll
  for (int r = 0; r < M; r++) rstd[r] = 1.0f;
  if (kNorm) rows_rstd<M>(rstd, x, k, eps);
  else __syncthreads();
  if (slice != 0 || lane != 0 || j >= n) return;
  const float b = bias != nullptr ? bias[j] : 0.0f;
#pragma unroll
  for (int r = 0; r < M; r++) {
    float sum = 0.0f;
    for (int t = 0; t < split; t++) sum += part[warp + t][r];
    sum *= rstd[r];
    float* out = &y[int64_t(r) * n + j];
    *out = accumulate ? *out + sum + b : sum + b;
  }
}

template <int M, typename W>
void launch_gemv(arl_ctx* ctx, float* y, const float* x, const W* w, const float* bias,
                 int32_t n, int32_t k, bool accumulate, const float* norm_weight, float eps,
                 const float* up) {
  // Warps per column: enough warps in all (~16 per SM) without slices under 128 values.
  int split = 1;
  while (split < kGemvWarps && int64_t(n) * split < int64_t(ctx->num_sms) * 16 &&
         k / (split * 2) >= 128)
    split *= 2;
  const int cols = kGemvWarps / split;
  const unsigned blocks = unsigned((int64_t(n) + cols - 1) / cols);
  constexpr int E = Wide16<W>::kCount;
  const bool vec = k % E == 0 && ((reinterpret_cast<uintptr_t>(x) |
                                   reinterpret_cast<uintptr_t>(w) |
                                   reinterpret_cast<uintptr_t>(norm_weight) |
                                   reinterpret_cast<uintptr_t>(up)) & 15) == 0;
  const unsigned threads = kGemvWarps * 32;
#define ARL_GEMV(VEC, IN)                                                     \
  gemv_rows_kernel<M, W, VEC, IN><<<blocks, threads, 0, ctx->stream>>>(       \
      y, x, w, bias, n, k, split, accumulate, norm_weight, eps, up)
  if (norm_weight != nullptr) {
    if (vec) ARL_GEMV(true, kInNorm);
    else ARL_GEMV(false, kInNorm);
  } else if (up != nullptr) {
    if (vec) ARL_GEMV(true, kInSwiglu);
    else ARL_GEMV(false, kInSwiglu);
  } else {
    if (vec) ARL_GEMV(true, kInPlain);
    else ARL_GEMV(false, kInPlain);
  }
#undef ARL_GEMV
}

// Launches the GEMV for m in 1..kGemvRows (the caller checks the launch). With norm_weight,
// x's rows are RMS-normalized first (eps) and scaled by it; with up, the rows read are
// silu(x) * up (x the gate).
template <typename W>
void gemv_rows(arl_ctx* ctx, float* y, const float* x, const W* w, const float* bias, int32_t m,
               int32_t n, int32_t k, bool accumulate, const float* norm_weight = nullptr,
               float eps = 0.0f, const float* up = nullptr) {
  switch (m) {
    case 1: return launch_gemv<1>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, up);
    case 2: return launch_gemv<2>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, up);
    case 3: return launch_gemv<3>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, up);
    case 4: return launch_gemv<4>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, up);
    case 5: return launch_gemv<5>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, up);
    case 6: return launch_gemv<6>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, up);
    case 7: return launch_gemv<7>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, up);
    default: return launch_gemv<8>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, up);
  }
}

}  // namespace arl
