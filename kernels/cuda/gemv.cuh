// Few-row linear (decode): y (M, N) = x (M, K) . w (N, K)^T + bias [+ y], M <= kGemvRows,
// with w in fp32 or bf16 (x, y, bias fp32; fp32 products and sums).
// Memory-bound on w: each output column's row of w is streamed once (16-byte loads when
// every row is 16-byte aligned) and dotted with the M rows of x (small, served from cache).
// A block of kGemvWarps warps covers kGemvWarps / S columns with S warps per column (each a
// slice of K, summed in shared memory), S chosen so that narrow layers still put enough
// loads in flight. Decode fusions: kGemvNorm RMS-normalizes the input rows (the weights are
// scaled by the norm weight as they stream, each sum by its row's rstd, which every block
// finds after its stream, x being small); kGemvNormSwiglu also applies SwiGLU to the outputs
// of a stacked gate|up weight (each column's warps stream its gate and its up row).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.cuh"
#include "env_switch.h"

namespace arl {

constexpr int32_t kGemvRows = 8;
constexpr int kGemvWarps = 8;
constexpr int kGemvPrefetch = 4;  // 16-byte weight loads per lane (and weight row) before pdl_wait

__device__ inline float widen(float v) { return v; }
__device__ inline float widen(uint16_t v) { return __uint_as_float(uint32_t(v) << 16); }

// 16 bytes of weights as fp32: 4 fp32 or 8 bf16 values.
template <typename W>
struct Wide16 {
  static constexpr int kCount = 16 / sizeof(W);
  float v[kCount];
  __device__ inline void load(const W* p) { set(__ldg(reinterpret_cast<const uint4*>(p))); }
  __device__ inline void set(const uint4 raw) {
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

// What the GEMV fuses: nothing; the RMSNorm of its input rows; that norm and SwiGLU of its
// outputs (w holds 2N rows, gate then up; column j dots rows j and N + j, and y (M, N) gets
// silu(g_j) * u_j).
enum GemvMode { kGemvPlain, kGemvNorm, kGemvNormSwiglu, kGemvNormRope };

// bf16 weights unpacked from a 32-bit pair (the low half first).
__device__ inline float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ inline float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// acc + the dot of 8 bf16 weights (w, the first in the low half of w.x) with x0 and x1, in order.
__device__ inline float dot8(uint4 w, float4 x0, float4 x1, float acc) {
  acc = fmaf(bf16_lo(w.x), x0.x, acc);
  acc = fmaf(bf16_hi(w.x), x0.y, acc);
  acc = fmaf(bf16_lo(w.y), x0.z, acc);
  acc = fmaf(bf16_hi(w.y), x0.w, acc);
  acc = fmaf(bf16_lo(w.z), x1.x, acc);
  acc = fmaf(bf16_hi(w.z), x1.y, acc);
  acc = fmaf(bf16_lo(w.w), x1.z, acc);
  return fmaf(bf16_hi(w.w), x1.w, acc);
}

// Where float4 j of a c-float vector goes in shared memory when lanes read it as dot8's 8-column
// chunks: chunk q's first half (x0) at float4 q, its second half (x1) at float4 c / 8 + q, so
// that consecutive lanes' 16-byte loads hit distinct banks.
__device__ inline int32_t chunk_halves_at(int32_t j, int32_t c) {
  return (j & 1) * (c / 8) + j / 2;
}

// kGemvNormRope: w is a stacked q|k|v weight, N = (hq + 2 hkv) d rows. A block's columns are
// whole RoPE pairs (c, c + d/2) of a head; each row's q and k outputs are rotated at its
// position, and its rotated k and its v go to the KV cache at (slot, position), with
// arl_rope_kv_cache_write's checks and deferred errors (rows past a bad position are neither
// rotated nor cached).
struct GemvRope {
  float* k_cache;
  float* v_cache;
  const int32_t* slots;
  const int32_t* positions;
  int32_t hq, hkv, d, s, l;
  float theta;
  int* flag;
  int64_t* flag_index;
};

__device__ inline float silu(float g) { return g / (1.0f + expf(-g)); }

// Row r's position and slot, and the rotation's cosine and sine for pair o of `head` (q and k
// heads; none for v; inv_freq: theta^(-2 o / d)), as rope_pair_store_row takes them.
struct RopeRow {
  int32_t pos, slot;
  float cs, sn;
};
__device__ inline RopeRow rope_row(const GemvRope& rope, int r, int32_t head, double inv_freq) {
  RopeRow row{rope.positions[r], rope.slots[r], 1.0f, 0.0f};
  if (head < rope.hq + rope.hkv && row.pos >= 0) {
    double sn, cs;
    sincos(double(row.pos) * inv_freq, &sn, &cs);
    row.cs = float(cs);
    row.sn = float(sn);
  }
  return row;
}

// Row r's RoPE pair of head `head` after the projection (a at offset o, b at o + d/2): q and k
// pairs roped (row: rope_row's), written to out[0] and out[d/2], and k and v pairs written to the
// cache at (slot, position), with arl_rope_kv_cache_write's checks; `report` raises the row's
// deferred errors (one thread a row). Rows past a bad position are neither rotated nor cached.
// Returns the pair as written to out.
__device__ inline float2 rope_pair_store_row(float* out, float a, float b, int32_t head,
                                             int32_t o, int r, bool report, const GemvRope& rope,
                                             const RopeRow& row) {
  const int32_t half = rope.d / 2, pos = row.pos, slot = row.slot;
  const bool rotated = head < rope.hq + rope.hkv, is_k = rotated && head >= rope.hq;
  if (pos < 0) {
    if (report) arl_set_flag(rope.flag, rope.flag_index, kDeferredNegativePosition, r);
    out[0] = a;
    out[half] = b;
    return make_float2(a, b);
  }
  const bool bad_slot = slot < 0 || slot >= rope.s, cached = !bad_slot && pos < rope.l;
  if (!cached && report)
    arl_set_flag(rope.flag, rope.flag_index, bad_slot ? kDeferredCacheSlot : kDeferredCachePosition,
                 (int64_t(r) << 32) | uint32_t(bad_slot ? slot : pos));
  if (rotated) {
    const float ra = a * row.cs - b * row.sn, rb = b * row.cs + a * row.sn;
    a = ra;
    b = rb;
  }
  out[0] = a;
  out[half] = b;
  if (!cached || !(is_k || !rotated)) return make_float2(a, b);
  const int32_t kvh = is_k ? head - rope.hq : head - rope.hq - rope.hkv;
  float* cache = (is_k ? rope.k_cache : rope.v_cache) +
                 ((int64_t(slot) * rope.hkv + kvh) * rope.l + pos) * rope.d + o;
  cache[0] = a;
  cache[half] = b;
  return make_float2(a, b);
}

// The same, finding the row's position, slot and rotation itself.
__device__ inline void rope_pair_store(float* out, float a, float b, int32_t head, int32_t o,
                                       double inv_freq, int r, bool report, const GemvRope& rope) {
  rope_pair_store_row(out, a, b, head, o, r, report, rope, rope_row(rope, r, head, inv_freq));
}

// kGemvNormRope's end (every thread of the block calls it): the columns' sums (rstd, bias) go
// through shared memory so that the thread of each pair's first column rotates both halves and
// writes them, and the cache rows.
template <int M>
__device__ inline void rope_epilogue(float* __restrict__ y, const float (&part)[kGemvWarps][1][M],
                                     const float (&rstd)[M], const float* __restrict__ bias,
                                     int32_t n, int64_t j, int split, int col, int32_t half,
                                     double inv_freq, const GemvRope& rope) {
  __shared__ float fin[kGemvWarps][M];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool owner = warp % split == 0 && lane == 0 && j < n;  // of column j's sums
  if (owner) {
    const float b = bias != nullptr ? bias[j] : 0.0f;
#pragma unroll
    for (int r = 0; r < M; r++) {
      float sum = 0.0f;
      for (int t = 0; t < split; t++) sum += part[warp + t][0][r];
      fin[col][r] = sum * rstd[r] + b;
    }
  }
  __syncthreads();
  if (!owner || col % 2 != 0) return;
  const int32_t head = int32_t(j / rope.d), o = int32_t(j % rope.d);
  for (int r = 0; r < M; r++) {
    const bool first = blockIdx.x == 0 && col == 0;  // flags each row's bad values once
    rope_pair_store(y + int64_t(r) * n + j, fin[col][r], fin[col + 1][r], head, o, inv_freq, r,
                    first, rope);
  }
}

template <int M, typename W, bool kVec, int kMode>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_rows_kernel(float* __restrict__ y, const float* __restrict__ x,
                     const W* __restrict__ w, const float* __restrict__ bias, int32_t n,
                     int32_t k, int split, bool accumulate, const float* __restrict__ norm_weight,
                     float eps, GemvRope rope) {
  constexpr bool kNorm = kMode != kGemvPlain;
  constexpr bool kRope = kMode == kGemvNormRope;
  constexpr int R = kMode == kGemvNormSwiglu ? 2 : 1;  // weight rows per column
  __shared__ float part[kGemvWarps][R][M];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cols = kGemvWarps / split, slice = warp % split, col = warp / split;
  int64_t j = int64_t(blockIdx.x) * cols + col;
  int32_t half = 0;
  double inv_freq = 0.0;  // theta^(-2 o / d) of the pair's offset o, as rope_trig finds it
  if (kRope) {  // local columns 2p and 2p + 1: pair p's halves
    half = rope.d / 2;
    const int64_t pair = int64_t(blockIdx.x) * (cols / 2) + col / 2;
    const int32_t o = int32_t(pair % half);
    j = pair < n / 2 ? pair / half * rope.d + o + (col % 2) * half : n;
    if (lane == 0) inv_freq = pow(double(rope.theta), -2.0 * o / rope.d);  // the epilogue's lane
  }
  float acc[R][M];
#pragma unroll
  for (int h = 0; h < R; h++)
#pragma unroll
    for (int r = 0; r < M; r++) acc[h][r] = 0.0f;
  pdl_trigger();
  const W* wj = w + j * k;
  const int64_t up = int64_t(n) * k;  // from row j to row N + j
  constexpr int E = Wide16<W>::kCount;
  const int32_t kv = kVec ? k / E : 0, first = slice * 32 + lane, step = 32 * split;
  // Weights are no kernel's output: the first kGemvPrefetch steps' loads go out before
  // pdl_wait, overlapping the kernel before this one (under programmatic dependent launch).
  uint4 pre[kGemvPrefetch][R];
  if (kVec && j < n) {
#pragma unroll
    for (int p = 0; p < kGemvPrefetch; p++)
#pragma unroll
      for (int h = 0; h < R; h++)
        if (first + p * step < kv)
          pre[p][h] = __ldg(reinterpret_cast<const uint4*>(wj + h * up +
                                                           int64_t(first + p * step) * E));
  }
  pdl_wait();
  if (j < n) {
    if (kVec) {
      // One step: the 16 weight bytes a[h] at i (scaled by the norm weight) against x's rows.
      auto dot_step = [&](Wide16<W> (&a)[R], int32_t i) {
        if (kNorm) {
          const float4* g = reinterpret_cast<const float4*>(norm_weight + int64_t(i) * E);
#pragma unroll
          for (int q = 0; q < E / 4; q++) {
            const float4 gq = __ldg(g + q);
#pragma unroll
            for (int h = 0; h < R; h++) {
              a[h].v[4 * q] *= gq.x;
              a[h].v[4 * q + 1] *= gq.y;
              a[h].v[4 * q + 2] *= gq.z;
              a[h].v[4 * q + 3] *= gq.w;
            }
          }
        }
#pragma unroll
        for (int r = 0; r < M; r++) {
          const float4* xr = reinterpret_cast<const float4*>(x + int64_t(r) * k + int64_t(i) * E);
#pragma unroll
          for (int q = 0; q < E / 4; q++) {
            const float4 b = __ldg(xr + q);
#pragma unroll
            for (int h = 0; h < R; h++) {
              const float* v = &a[h].v[4 * q];
              acc[h][r] = fmaf(v[0], b.x, fmaf(v[1], b.y, fmaf(v[2], b.z, fmaf(v[3], b.w,
                          acc[h][r]))));
            }
          }
        }
      };
#pragma unroll
      for (int p = 0; p < kGemvPrefetch; p++) {
        if (first + p * step >= kv) break;
        Wide16<W> a[R];
#pragma unroll
        for (int h = 0; h < R; h++) a[h].set(pre[p][h]);
        dot_step(a, first + p * step);
      }
#pragma unroll 4
      for (int32_t i = first + kGemvPrefetch * step; i < kv; i += step) {
        Wide16<W> a[R];
#pragma unroll
        for (int h = 0; h < R; h++) a[h].load(wj + h * up + int64_t(i) * E);
        dot_step(a, i);
      }
    } else {
      for (int32_t i = slice * 32 + lane; i < k; i += 32 * split) {
        const float g = kNorm ? __ldg(&norm_weight[i]) : 1.0f;
        float a[R];
#pragma unroll
        for (int h = 0; h < R; h++) a[h] = widen(__ldg(&wj[h * up + i])) * g;
#pragma unroll
        for (int r = 0; r < M; r++) {
          const float xv = __ldg(&x[int64_t(r) * k + i]);
#pragma unroll
          for (int h = 0; h < R; h++) acc[h][r] = fmaf(a[h], xv, acc[h][r]);
        }
      }
    }
  }
#pragma unroll
  for (int h = 0; h < R; h++)
#pragma unroll
    for (int r = 0; r < M; r++)
      for (int o = 16; o > 0; o >>= 1) acc[h][r] += __shfl_xor_sync(0xffffffffu, acc[h][r], o);
  if (lane == 0) {
#pragma unroll
    for (int h = 0; h < R; h++)
#pragma unroll
      for (int r = 0; r < M; r++) part[warp][h][r] = acc[h][r];
  }
  // rstd only scales the sums, so it is found after the weights streamed, not before (its
  // barrier, which every thread reaches, also publishes part).
  float rstd[M];
#pragma unroll
  for (int r = 0; r < M; r++) rstd[r] = 1.0f;
  if (kNorm) rows_rstd<M>(rstd, x, k, eps);
  else __syncthreads();
  if constexpr (kRope) {
    rope_epilogue<M>(y, part, rstd, bias, n, j, split, col, half, inv_freq, rope);
    return;
  }
  if (slice != 0 || lane != 0 || j >= n) return;
  float b[R];
#pragma unroll
  for (int h = 0; h < R; h++) b[h] = bias != nullptr ? bias[h * int64_t(n) + j] : 0.0f;
#pragma unroll
  for (int r = 0; r < M; r++) {
    float sum[R];
#pragma unroll
    for (int h = 0; h < R; h++) {
      sum[h] = 0.0f;
      for (int t = 0; t < split; t++) sum[h] += part[warp + t][h][r];
      sum[h] *= rstd[r];
    }
    float* out = &y[int64_t(r) * n + j];
    if (R == 2) *out = silu(sum[0] + b[0]) * (sum[R - 1] + b[R - 1]);
    else *out = accumulate ? *out + sum[0] + b[0] : sum[0] + b[0];
  }
}

// The streaming variant for one input row (AGENTRL_CUDA_GEMV_STREAM=1, an experiment timed by
// bench/gpu/run.sh's decode_stream part): a grid of at most 2 blocks per SM, each block taking
// column groups b, b + G, ... (a group is what a gemv_rows_kernel block covers: kGemvWarps /
// split columns, split warps each). A warp holds its whole slice of a group's weight rows in
// registers (at most gemv_stream_steps 16-byte loads per lane and row) and loads the next group's
// before it reduces this one's, so a block keeps a group's weights in flight throughout.
// Once per block, while the first group's weights stream: x times the norm weight into shared
// memory (k floats, dynamic) and the norm's rstd.
// 16-byte loads per lane and row of one group (two groups' worth are held in registers).
template <int kMode>
constexpr int gemv_stream_steps() {
  return kMode == kGemvPlain ? 8 : 4;
}

template <typename W, int kMode>
__global__ void __launch_bounds__(kGemvWarps * 32, 2)
    gemv_stream_kernel(float* __restrict__ y, const float* __restrict__ x,
                       const W* __restrict__ w, const float* __restrict__ bias, int32_t n,
                       int32_t k, int split, bool accumulate, const float* __restrict__ norm_weight,
                       float eps) {
  constexpr bool kNorm = kMode != kGemvPlain;
  constexpr int R = kMode == kGemvNormSwiglu ? 2 : 1;
  constexpr int S = gemv_stream_steps<kMode>();
  constexpr int E = Wide16<W>::kCount;
  __shared__ float part[2][kGemvWarps][R];
  extern __shared__ float4 gemv_stream_xg[];  // x * norm weight (k floats)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int cols = kGemvWarps / split, slice = warp % split, col = warp / split;
  const int64_t groups = (int64_t(n) + cols - 1) / cols, up = int64_t(n) * k;
  const int32_t kv = k / E, first = slice * 32 + lane, step = 32 * split;
  pdl_trigger();
  // the loads of group g's column of this warp (nothing past n or kv)
  auto load = [&](uint4 (&buf)[S][R], int64_t g) {
    const int64_t j = g * cols + col;
#pragma unroll
    for (int p = 0; p < S; p++)
#pragma unroll
      for (int h = 0; h < R; h++)
        if (j < n && first + p * step < kv)
          buf[p][h] = __ldg(reinterpret_cast<const uint4*>(w + (h * up + j * k)) + first +
                            p * step);
  };
  float rstd[1] = {1.0f};
  // group g from buf: the slice's dot with x (scaled by the norm weight), summed over the
  // column's warps through part[parity], and its output
  auto finish = [&](const uint4 (&buf)[S][R], int64_t g, int parity) {
    const int64_t j = g * cols + col;
    float acc[R];
#pragma unroll
    for (int h = 0; h < R; h++) acc[h] = 0.0f;
#pragma unroll
    for (int p = 0; p < S; p++) {
      const int32_t i = first + p * step;
      if (j >= n || i >= kv) break;
      Wide16<W> a[R];
#pragma unroll
      for (int h = 0; h < R; h++) a[h].set(buf[p][h]);
#pragma unroll
      for (int q = 0; q < E / 4; q++) {
        const float4 b = gemv_stream_xg[int64_t(i) * (E / 4) + q];
#pragma unroll
        for (int h = 0; h < R; h++) {
          const float* v = &a[h].v[4 * q];
          acc[h] = fmaf(v[0], b.x, fmaf(v[1], b.y, fmaf(v[2], b.z, fmaf(v[3], b.w, acc[h]))));
        }
      }
    }
#pragma unroll
    for (int h = 0; h < R; h++)
      for (int o = 16; o > 0; o >>= 1) acc[h] += __shfl_xor_sync(0xffffffffu, acc[h], o);
    if (lane == 0)
#pragma unroll
      for (int h = 0; h < R; h++) part[parity][warp][h] = acc[h];
    __syncthreads();  // (part[parity] is written again two groups on, past the next barrier)
    if (slice != 0 || lane != 0 || j >= n) return;
    float sum[R];
#pragma unroll
    for (int h = 0; h < R; h++) {
      sum[h] = 0.0f;
      for (int t = 0; t < split; t++) sum[h] += part[parity][warp + t][h];
      sum[h] = sum[h] * rstd[0] + (bias != nullptr ? bias[h * int64_t(n) + j] : 0.0f);
    }
    if (R == 2) y[j] = silu(sum[0]) * sum[R - 1];
    else y[j] = accumulate ? y[j] + sum[0] : sum[0];
  };
  uint4 even[S][R] = {}, odd[S][R] = {};
  int64_t g = blockIdx.x;
  load(even, g);  // weights are no kernel's output: before pdl_wait
  pdl_wait();
  float* xg = reinterpret_cast<float*>(gemv_stream_xg);
  for (int32_t i = threadIdx.x; i < k; i += blockDim.x)
    xg[i] = kNorm ? __ldg(x + i) * __ldg(norm_weight + i) : __ldg(x + i);
  if (kNorm) rows_rstd<1>(rstd, x, k, eps);  // (its barrier publishes xg too)
  else __syncthreads();
  // two groups an iteration, so that both buffers stay in registers
  for (; g < groups; g += 2 * int64_t(gridDim.x)) {
    if (g + gridDim.x < groups) load(odd, g + gridDim.x);
    finish(even, g, 0);
    if (g + gridDim.x >= groups) break;
    if (g + 2 * int64_t(gridDim.x) < groups) load(even, g + 2 * int64_t(gridDim.x));
    finish(odd, g + gridDim.x, 1);
  }
}

// AGENTRL_CUDA_GEMV_STREAM: 1, one-row GEMVs take gemv_stream_kernel where it fits; 2, only
// those with at least two column groups a block (where loading the next group can overlap);
// else 0 (an unknown value is reported once and ignored).
inline int gemv_stream_mode() {
  static const int mode = env_choice("AGENTRL_CUDA_GEMV_STREAM", {"0", "1", "2"});
  return mode;
}

template <int M, typename W, int kMode>
void launch_gemv(arl_ctx* ctx, float* y, const float* x, const W* w, const float* bias,
                 int32_t n, int32_t k, bool accumulate, const float* norm_weight, float eps,
                 const GemvRope* rope) {
  // Warps per column: enough warps in all (~16 per SM) without slices under 128 values (with
  // RoPE at most 4, so that a block holds whole pairs).
  const int max_split = kMode == kGemvNormRope ? kGemvWarps / 2 : kGemvWarps;
  int split = 1;
  while (split < max_split && int64_t(n) * split < int64_t(ctx->num_sms) * 16 &&
         k / (split * 2) >= 128)
    split *= 2;
  const int cols = kGemvWarps / split;
  const unsigned blocks = unsigned((int64_t(n) + cols - 1) / cols);  // n even with RoPE
  constexpr int E = Wide16<W>::kCount;
  const bool vec = k % E == 0 && ((reinterpret_cast<uintptr_t>(x) |
                                   reinterpret_cast<uintptr_t>(w) |
                                   reinterpret_cast<uintptr_t>(norm_weight)) & 15) == 0;
  const GemvRope args = rope != nullptr ? *rope : GemvRope{};
  const dim3 grid(blocks), block(kGemvWarps * 32);
  const size_t w_bytes = size_t(n) * size_t(k) * sizeof(W) * (kMode == kGemvNormSwiglu ? 2 : 1);
  if constexpr (M == 1 && kMode != kGemvNormRope) {
    const size_t xg_bytes = size_t(k) * 4;
    const int64_t grid_cap = int64_t(ctx->num_sms) * 2;
    const int stream = gemv_stream_mode();
    if (vec && stream != 0 && k / E <= 32 * split * gemv_stream_steps<kMode>() &&
        xg_bytes <= 48 * 1024 && (stream == 1 || int64_t(blocks) >= 2 * grid_cap)) {
      const dim3 persistent(unsigned(std::min<int64_t>(blocks, grid_cap)));
      launch_pdl_reading(ctx, w, w_bytes, gemv_stream_kernel<W, kMode>, persistent, block,
                         xg_bytes, y, x, w, bias, n, k, split, accumulate, norm_weight, eps);
      return;
    }
  }
  if (vec)
    launch_pdl_reading(ctx, w, w_bytes, gemv_rows_kernel<M, W, true, kMode>, grid, block, 0, y,
                       x, w, bias, n, k, split, accumulate, norm_weight, eps, args);
  else
    launch_pdl_reading(ctx, w, w_bytes, gemv_rows_kernel<M, W, false, kMode>, grid, block, 0,
                       y, x, w, bias, n, k, split, accumulate, norm_weight, eps, args);
}

// Launches the GEMV for m in 1..kGemvRows (the caller checks the launch); kMode says what it
// fuses (each call site compiles only its mode's kernels). kGemvNorm: x's rows are
// RMS-normalized first (norm_weight, eps); kGemvNormSwiglu: also w and bias hold 2n rows (gate,
// up) and y (m, n) = silu(gate) * up, not accumulated; kGemvNormRope: w is a stacked q|k|v
// weight and the outputs are roped and cached (rope).
template <int kMode = kGemvPlain, typename W>
void gemv_rows(arl_ctx* ctx, float* y, const float* x, const W* w, const float* bias, int32_t m,
               int32_t n, int32_t k, bool accumulate, const float* norm_weight = nullptr,
               float eps = 0.0f, const GemvRope* rope = nullptr) {
#define ARL_GEMV_ROWS(M) \
  launch_gemv<M, W, kMode>(ctx, y, x, w, bias, n, k, accumulate, norm_weight, eps, rope)
  switch (m) {
    case 1: return ARL_GEMV_ROWS(1);
    case 2: return ARL_GEMV_ROWS(2);
    case 3: return ARL_GEMV_ROWS(3);
    case 4: return ARL_GEMV_ROWS(4);
    case 5: return ARL_GEMV_ROWS(5);
    case 6: return ARL_GEMV_ROWS(6);
    case 7: return ARL_GEMV_ROWS(7);
    default: return ARL_GEMV_ROWS(8);
  }
#undef ARL_GEMV_ROWS
}

}  // namespace arl
