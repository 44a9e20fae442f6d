// Causal grouped-query attention over packed variable-length sequences, its
// backward pass (scores recomputed from the saved log-sum-exp), and attention
// of new tokens against a KV cache, on a CUDA device.
//
// Layout of the packed kernels: a block of kWarps warps takes kWarps
// consecutive rows (query rows forward and for dq, key rows for dk/dv) of one
// head; each warp finds its row's sequence in cu_seqlens. Tiles of 32 rows of
// the other side go through shared memory; in a tile, lane j owns row j for the
// dot products, and the head dimension is split over the lanes (DPL values
// each) for the accumulations. Softmax is online (running max and sum).
#include <cuda_bf16.h>
#include <mma.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "../common/attention_checks.h"
#include "common.cuh"
#include "decode_chain.cuh"
#include "env_switch.h"

namespace {

constexpr int kWarps = 8;    // rows per block
constexpr int kTileRows = 32;
constexpr int kMaxHeadDim = 256;

arl_status check_heads(arl_ctx* ctx, const char* fn, int32_t hq, int32_t hkv, int32_t d) {
  if (hq % hkv != 0)
    return arl::fail(ctx, ARL_ERR_SIZE, "%s: query heads %d must be a multiple of kv heads %d",
                     fn, hq, hkv);
  if (d > kMaxHeadDim)
    return arl::fail(ctx, ARL_ERR_SIZE, "%s: head dim %d is larger than the CUDA kernels' %d", fn,
                     d, kMaxHeadDim);
  return ARL_OK;
}

// The sequence of packed row r: the largest s with cu[s] <= r (then cu[s] <= r < cu[s+1]).
__device__ inline int32_t sequence_of(const int32_t* cu, int32_t b, int32_t r) {
  int32_t lo = 0, hi = b;
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) >> 1;
    if (cu[mid] <= r) lo = mid;
    else hi = mid;
  }
  return lo;
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Loads rows [r0, r0 + 32) (those <= last) of x (rows of `stride` floats, head offset applied)
// into tile (32 x ld); rows past `last` become zeros.
__device__ inline void load_tile(float* tile, int ld, const float* x, int64_t stride, int32_t r0,
                                 int32_t last, int32_t d) {
  for (int e = threadIdx.x; e < kTileRows * d; e += blockDim.x) {
    const int j = e / d, c = e - j * d;
    const int32_t r = r0 + j;
    tile[j * ld + c] = r <= last ? x[int64_t(r) * stride + c] : 0.0f;
  }
}

// Each warp's sequence bounds, and the block's union: rows [*lo, *hi] of the other side.
struct RowInfo {
  int32_t row, start, end;  // end exclusive
  bool valid;
};

__device__ inline RowInfo row_info(const int32_t* cu, int32_t b, int32_t t) {
  RowInfo ri;
  ri.row = blockIdx.x * kWarps + (threadIdx.x >> 5);
  ri.valid = ri.row < t;
  if (ri.valid) {
    const int32_t s = sequence_of(cu, b, ri.row);
    ri.start = cu[s];
    ri.end = cu[s + 1];
  } else {
    ri.start = t;
    ri.end = t;
  }
  return ri;
}

template <int DPL>
__global__ void __launch_bounds__(kWarps * 32)
    attention_forward_kernel(float* __restrict__ out, float* __restrict__ lse,
                             const float* __restrict__ q, const float* __restrict__ k,
                             const float* __restrict__ v, const int32_t* __restrict__ cu,
                             int32_t b, int32_t t, int32_t hq, int32_t hkv, int32_t d,
                             float scale) {
  extern __shared__ float smem[];
  const int ld = d + 1;
  float* ks = smem;                       // 32 x (d + 1)
  float* vs = ks + kTileRows * ld;        // 32 x d
  float* qs = vs + kTileRows * d;         // kWarps x d
  __shared__ int32_t key_lo, key_hi;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t h = blockIdx.y, kvh = h / (hq / hkv);
  const RowInfo ri = row_info(cu, b, t);
  if (threadIdx.x == 0) {
    key_lo = INT32_MAX;
    key_hi = -1;
  }
  __syncthreads();
  if (lane == 0 && ri.valid) {
    atomicMin(&key_lo, ri.start);
    atomicMax(&key_hi, ri.row);
  }
  const int64_t ldq = int64_t(hq) * d, ldkv = int64_t(hkv) * d;
  float* qw = qs + warp * d;
  if (ri.valid)
    for (int c = lane; c < d; c += 32) qw[c] = q[ri.row * ldq + int64_t(h) * d + c] * scale;
  __syncthreads();
  const int32_t lo = key_lo, hi = key_hi;
  float m = -INFINITY, l = 0.0f, acc[DPL];
#pragma unroll
  for (int i = 0; i < DPL; i++) acc[i] = 0.0f;
  for (int32_t k0 = lo; k0 <= hi; k0 += kTileRows) {
    load_tile(ks, ld, k + int64_t(kvh) * d, ldkv, k0, hi, d);
    load_tile(vs, d, v + int64_t(kvh) * d, ldkv, k0, hi, d);
    __syncthreads();
    if (ri.valid && k0 <= ri.row && k0 + kTileRows > ri.start) {
      const int32_t key = k0 + lane;
      float s = -INFINITY;
      if (key >= ri.start && key <= ri.row) {
        const float* kr = ks + lane * ld;
        float dot = 0.0f;
        for (int c = 0; c < d; c++) dot = fmaf(qw[c], kr[c], dot);
        s = dot;
      }
      const float mt = warp_max(s);
      const float m_new = fmaxf(m, mt);
      const float corr = __expf(m - m_new);
      const float p = s == -INFINITY ? 0.0f : __expf(s - m_new);
      l = l * corr + warp_sum(p);
#pragma unroll
      for (int i = 0; i < DPL; i++) acc[i] *= corr;
      for (int j = 0; j < kTileRows; j++) {
        const float pj = __shfl_sync(0xffffffffu, p, j);
        if (pj == 0.0f) continue;  // uniform across the warp
        const float* vr = vs + j * d;
#pragma unroll
        for (int i = 0; i < DPL; i++) {
          const int c = lane + 32 * i;
          if (c < d) acc[i] = fmaf(pj, vr[c], acc[i]);
        }
      }
      m = m_new;
    }
    __syncthreads();
  }
  if (ri.valid) {
    const float inv = 1.0f / l;
    float* o = out + ri.row * ldq + int64_t(h) * d;
#pragma unroll
    for (int i = 0; i < DPL; i++) {
      const int c = lane + 32 * i;
      if (c < d) o[c] = acc[i] * inv;
    }
    if (lane == 0) lse[int64_t(h) * t + ri.row] = m + logf(l);
  }
}

// delta (HQ, T) = rowsum(dout * out) per query row and head: one warp each.
__global__ void attention_delta_kernel(float* delta, const float* dout, const float* out,
                                       int32_t t, int32_t hq, int32_t d) {
  const int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (w >= int64_t(t) * hq) return;
  const int64_t row = w / hq, h = w - row * hq;
  const float* a = dout + (row * hq + h) * d;
  const float* o = out + (row * hq + h) * d;
  float s = 0.0f;
  for (int c = lane; c < d; c += 32) s = fmaf(a[c], o[c], s);
  s = warp_sum(s);
  if (lane == 0) delta[h * t + row] = s;
}

// dq for kWarps query rows of head h: dq = sum_j ds_ij k_j, ds = p (dp - delta) scale.
template <int DPL>
__global__ void __launch_bounds__(kWarps * 32)
    attention_dq_kernel(float* __restrict__ dq, const float* __restrict__ dout,
                        const float* __restrict__ q, const float* __restrict__ k,
                        const float* __restrict__ v, const float* __restrict__ lse,
                        const float* __restrict__ delta, const int32_t* __restrict__ cu, int32_t b,
                        int32_t t, int32_t hq, int32_t hkv, int32_t d, float scale) {
  extern __shared__ float smem[];
  const int ld = d + 1;
  float* ks = smem;                   // 32 x (d + 1)
  float* vs = ks + kTileRows * ld;    // 32 x (d + 1)
  float* qs = vs + kTileRows * ld;    // kWarps x d
  float* gs = qs + kWarps * d;        // kWarps x d (dout rows)
  __shared__ int32_t key_lo, key_hi;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t h = blockIdx.y, kvh = h / (hq / hkv);
  const RowInfo ri = row_info(cu, b, t);
  if (threadIdx.x == 0) {
    key_lo = INT32_MAX;
    key_hi = -1;
  }
  __syncthreads();
  if (lane == 0 && ri.valid) {
    atomicMin(&key_lo, ri.start);
    atomicMax(&key_hi, ri.row);
  }
  const int64_t ldq = int64_t(hq) * d, ldkv = int64_t(hkv) * d;
  float* qw = qs + warp * d;
  float* gw = gs + warp * d;
  float row_lse = 0.0f, row_delta = 0.0f;
  if (ri.valid) {
    for (int c = lane; c < d; c += 32) {
      qw[c] = q[ri.row * ldq + int64_t(h) * d + c] * scale;
      gw[c] = dout[ri.row * ldq + int64_t(h) * d + c];
    }
    row_lse = lse[int64_t(h) * t + ri.row];
    row_delta = delta[int64_t(h) * t + ri.row];
  }
  __syncthreads();
  const int32_t lo = key_lo, hi = key_hi;
  float acc[DPL];
#pragma unroll
  for (int i = 0; i < DPL; i++) acc[i] = 0.0f;
  for (int32_t k0 = lo; k0 <= hi; k0 += kTileRows) {
    load_tile(ks, ld, k + int64_t(kvh) * d, ldkv, k0, hi, d);
    load_tile(vs, ld, v + int64_t(kvh) * d, ldkv, k0, hi, d);
    __syncthreads();
    if (ri.valid && k0 <= ri.row && k0 + kTileRows > ri.start) {
      const int32_t key = k0 + lane;
      float ds = 0.0f;
      if (key >= ri.start && key <= ri.row) {
        const float* kr = ks + lane * ld;
        const float* vr = vs + lane * ld;
        float s = 0.0f, dp = 0.0f;
        for (int c = 0; c < d; c++) {
          s = fmaf(qw[c], kr[c], s);
          dp = fmaf(gw[c], vr[c], dp);
        }
        const float p = __expf(s - row_lse);
        ds = p * (dp - row_delta) * scale;
      }
      for (int j = 0; j < kTileRows; j++) {
        const float dsj = __shfl_sync(0xffffffffu, ds, j);
        if (dsj == 0.0f) continue;
        const float* kr = ks + j * ld;
#pragma unroll
        for (int i = 0; i < DPL; i++) {
          const int c = lane + 32 * i;
          if (c < d) acc[i] = fmaf(dsj, kr[c], acc[i]);
        }
      }
    }
    __syncthreads();
  }
  if (ri.valid) {
    float* o = dq + ri.row * ldq + int64_t(h) * d;
#pragma unroll
    for (int i = 0; i < DPL; i++) {
      const int c = lane + 32 * i;
      if (c < d) o[c] = acc[i];
    }
  }
}

// dk, dv for kWarps key rows of kv head blockIdx.y, summed over the query heads of its group
// and the queries i >= j of its sequence: dv_j = sum p_ij dout_i, dk_j = sum ds_ij q_i.
template <int DPL>
__global__ void __launch_bounds__(kWarps * 32)
    attention_dkdv_kernel(float* __restrict__ dk, float* __restrict__ dv,
                          const float* __restrict__ dout, const float* __restrict__ q,
                          const float* __restrict__ k, const float* __restrict__ v,
                          const float* __restrict__ lse, const float* __restrict__ delta,
                          const int32_t* __restrict__ cu, int32_t b, int32_t t, int32_t hq,
                          int32_t hkv, int32_t d, float scale) {
  extern __shared__ float smem[];
  const int ld = d + 1;
  float* qs = smem;                   // 32 x (d + 1) query rows (scaled)
  float* gs = qs + kTileRows * ld;    // 32 x (d + 1) dout rows
  float* ls = gs + kTileRows * ld;    // 32 lse
  float* es = ls + kTileRows;         // 32 delta
  float* kw_all = es + kTileRows;     // kWarps x d key rows
  float* vw_all = kw_all + kWarps * d;  // kWarps x d value rows
  __shared__ int32_t q_lo, q_hi;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t kvh = blockIdx.y, group = hq / hkv;
  const RowInfo ri = row_info(cu, b, t);  // ri.row is a key row here
  if (threadIdx.x == 0) {
    q_lo = INT32_MAX;
    q_hi = -1;
  }
  __syncthreads();
  if (lane == 0 && ri.valid) {
    atomicMin(&q_lo, ri.row);
    atomicMax(&q_hi, ri.end - 1);
  }
  const int64_t ldq = int64_t(hq) * d, ldkv = int64_t(hkv) * d;
  float* kw = kw_all + warp * d;
  float* vw = vw_all + warp * d;
  if (ri.valid)
    for (int c = lane; c < d; c += 32) {
      kw[c] = k[ri.row * ldkv + int64_t(kvh) * d + c];
      vw[c] = v[ri.row * ldkv + int64_t(kvh) * d + c];
    }
  __syncthreads();
  const int32_t lo = q_lo, hi = q_hi;
  float acc_k[DPL], acc_v[DPL];
#pragma unroll
  for (int i = 0; i < DPL; i++) acc_k[i] = acc_v[i] = 0.0f;
  for (int32_t h = kvh * group; h < (kvh + 1) * group; h++) {
    for (int32_t r0 = lo; r0 <= hi; r0 += kTileRows) {
      for (int e = threadIdx.x; e < kTileRows * d; e += blockDim.x) {
        const int j = e / d, c = e - j * d;
        const int32_t r = r0 + j;
        const bool in = r <= hi;
        qs[j * ld + c] = in ? q[int64_t(r) * ldq + int64_t(h) * d + c] * scale : 0.0f;
        gs[j * ld + c] = in ? dout[int64_t(r) * ldq + int64_t(h) * d + c] : 0.0f;
      }
      if (threadIdx.x < kTileRows) {
        const int32_t r = r0 + threadIdx.x;
        ls[threadIdx.x] = r <= hi ? lse[int64_t(h) * t + r] : 0.0f;
        es[threadIdx.x] = r <= hi ? delta[int64_t(h) * t + r] : 0.0f;
      }
      __syncthreads();
      if (ri.valid && r0 < ri.end && r0 + kTileRows > ri.row) {
        const int32_t qi = r0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (qi >= ri.row && qi < ri.end) {
          const float* qr = qs + lane * ld;
          const float* gr = gs + lane * ld;
          float s = 0.0f, dp = 0.0f;
          for (int c = 0; c < d; c++) {
            s = fmaf(qr[c], kw[c], s);
            dp = fmaf(gr[c], vw[c], dp);
          }
          p = __expf(s - ls[lane]);
          ds = p * (dp - es[lane]);  // times scale: folded into the scaled q rows below
        }
        for (int j = 0; j < kTileRows; j++) {
          const float pj = __shfl_sync(0xffffffffu, p, j);
          if (pj == 0.0f) continue;
          const float dsj = __shfl_sync(0xffffffffu, ds, j);
          const float* qr = qs + j * ld;
          const float* gr = gs + j * ld;
#pragma unroll
          for (int i = 0; i < DPL; i++) {
            const int c = lane + 32 * i;
            if (c < d) {
              acc_v[i] = fmaf(pj, gr[c], acc_v[i]);
              acc_k[i] = fmaf(dsj, qr[c], acc_k[i]);  // qr is q * scale
            }
          }
        }
      }
      __syncthreads();
    }
  }
  if (ri.valid) {
    float* ok = dk + ri.row * ldkv + int64_t(kvh) * d;
    float* ov = dv + ri.row * ldkv + int64_t(kvh) * d;
#pragma unroll
    for (int i = 0; i < DPL; i++) {
      const int c = lane + 32 * i;
      if (c < d) {
        ok[c] = acc_k[i];
        ov[c] = acc_v[i];
      }
    }
  }
}

// Copies N tokens' keys and values into the cache; bad slots or positions are flagged.
__global__ void kv_cache_write_kernel(float* k_cache, float* v_cache, const float* k,
                                      const float* v, const int32_t* slots,
                                      const int32_t* positions, int32_t s, int32_t hkv, int32_t l,
                                      int32_t d, int* flag, int64_t* flag_index) {
  const int32_t i = blockIdx.x;
  const int32_t slot = slots[i], pos = positions[i];
  if (slot < 0 || slot >= s || pos < 0 || pos >= l) {
    if (threadIdx.x == 0) {
      const bool bad_slot = slot < 0 || slot >= s;
      arl_set_flag(flag, flag_index,
                   bad_slot ? arl::kDeferredCacheSlot : arl::kDeferredCachePosition,
                   (int64_t(i) << 32) | uint32_t(bad_slot ? slot : pos));
    }
    return;
  }
  for (int e = threadIdx.x; e < hkv * d; e += blockDim.x) {
    const int h = e / d, c = e - h * d;
    const int64_t dst = ((int64_t(slot) * hkv + h) * l + pos) * d + c;
    const int64_t src = (int64_t(i) * hkv + h) * d + c;
    k_cache[dst] = k[src];
    v_cache[dst] = v[src];
  }
}

constexpr int kDecodeChunk = 1024;
constexpr int kKeysPerWarpStep = 8;  // keys a warp reads at once (independent loads in flight)
constexpr int kDecodeMaxSplits = 16;
constexpr int kDecodeMinKeysPerSplit = 32;

// out (d) = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s over a row's split records
// (read past L1: other blocks wrote them).
__device__ void combine_splits(float* __restrict__ out, const float* recs, int32_t d,
                               int splits) {
  float mx = -INFINITY;
  for (int sp = 0; sp < splits; sp++) mx = fmaxf(mx, __ldcg(recs + sp * (d + 2) + d));
  float total = 0.0f;
  for (int sp = 0; sp < splits; sp++) {
    const float* r = recs + sp * (d + 2);
    total += __ldcg(r + d + 1) * __expf(__ldcg(r + d) - mx);
  }
  const float inv = 1.0f / total;
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    float a = 0.0f;
    for (int sp = 0; sp < splits; sp++) {
      const float* r = recs + sp * (d + 2);
      a += __ldcg(r + c) * __expf(__ldcg(r + d) - mx);
    }
    out[c] = a * inv;
  }
}

// One block per (query i, head h, split sp): online softmax over chunks of split sp's share
// of the slot's first lens[i] keys (all of them when splits = 1). Each warp takes
// kKeysPerWarpStep keys at a time and its lanes split the head dimension (coalesced rows):
// for scores a butterfly sums the lanes' products; for values each lane keeps its dims'
// sums, and the warps' sums are added at the end. With splits > 1 (flash-decoding: more
// blocks than heads when few tokens decode) each block writes its running max, sum and
// unnormalized output to `partial` (row-major (N, HQ, splits) records of D + 2 floats), counts
// itself in done[row], and the row's last block merges the records.
template <int kThreads, int kDpl>
__global__ void __launch_bounds__(kThreads)
    attention_decode_kernel(float* __restrict__ out, float* __restrict__ partial,
                            const float* __restrict__ q,
                            const float* __restrict__ k_cache, const float* __restrict__ v_cache,
                            const int32_t* __restrict__ slots, const int32_t* __restrict__ lens,
                            int32_t s, int32_t hq, int32_t hkv, int32_t l, int32_t d, float scale,
                            int splits, int* __restrict__ done, int* flag, int64_t* flag_index) {
  constexpr int kDecodeWarps = kThreads / 32;
  __shared__ float qs[kMaxHeadDim];
  __shared__ float ps[kDecodeChunk];
  __shared__ float red[32];
  __shared__ float part[kDecodeWarps * kMaxHeadDim];
  arl::pdl_trigger();  // the o-projection GEMV after it may start streaming its weights
  arl::pdl_wait();     // q and the cache rows come from the kernels before (launch_pdl)
  const int32_t i = blockIdx.x, h = blockIdx.y, sp = blockIdx.z;
  const int32_t slot = slots[i], len = lens[i];
  if (slot < 0 || slot >= s || len < 1 || len > l) {
    if (threadIdx.x == 0 && h == 0 && sp == 0) {
      const bool bad_slot = slot < 0 || slot >= s;
      arl_set_flag(flag, flag_index, bad_slot ? arl::kDeferredDecodeSlot : arl::kDeferredDecodeLen,
                   (int64_t(i) << 32) | uint32_t(bad_slot ? slot : len));
    }
    return;
  }
  const int32_t kvh = h / (hq / hkv);
  const float* kb = k_cache + (int64_t(slot) * hkv + kvh) * l * d;
  const float* vb = v_cache + (int64_t(slot) * hkv + kvh) * l * d;
  const int64_t row = int64_t(i) * hq + h;
  for (int c = threadIdx.x; c < d; c += blockDim.x) qs[c] = q[row * d + c] * scale;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // Lane dims c = lane + 32 t (t < kDpl, kDpl = dims_per_lane(d)) of the values this warp
  // accumulates. Every load of a warp step is issued before any is used (row indices
  // clamped, masked afterwards): one memory round trip per step, not one per key.
  float acc[kDpl];
#pragma unroll
  for (int t = 0; t < kDpl; t++) acc[t] = 0.0f;
  float m = -INFINITY, lsum = 0.0f;
  __syncthreads();
  const int32_t share = (len + splits - 1) / splits;
  const int32_t j_begin = min(len, sp * share), j_end = min(len, j_begin + share);
  for (int32_t j0 = j_begin; j0 < j_end; j0 += kDecodeChunk) {
    const int32_t n = min(kDecodeChunk, j_end - j0);
    float mt = -INFINITY;
    for (int j = warp * kKeysPerWarpStep; j < n; j += kDecodeWarps * kKeysPerWarpStep) {
      float kreg[kKeysPerWarpStep][kDpl];
#pragma unroll
      for (int u = 0; u < kKeysPerWarpStep; u++) {
        const float* kr = kb + int64_t(j0 + min(j + u, n - 1)) * d;
#pragma unroll
        for (int t = 0; t < kDpl; t++)
          kreg[u][t] = lane + 32 * t < d ? __ldg(kr + lane + 32 * t) : 0.0f;
      }
      float dot[kKeysPerWarpStep];
#pragma unroll
      for (int u = 0; u < kKeysPerWarpStep; u++) {
        dot[u] = 0.0f;
#pragma unroll
        for (int t = 0; t < kDpl; t++)
          if (lane + 32 * t < d) dot[u] = fmaf(qs[lane + 32 * t], kreg[u][t], dot[u]);
      }
#pragma unroll
      for (int u = 0; u < kKeysPerWarpStep; u++)
        for (int o = 16; o > 0; o >>= 1) dot[u] += __shfl_xor_sync(0xffffffffu, dot[u], o);
#pragma unroll
      for (int u = 0; u < kKeysPerWarpStep; u++) {
        if (j + u < n) {
          mt = fmaxf(mt, dot[u]);
          if (lane == u) ps[j + u] = dot[u];
        }
      }
    }
    mt = arl_block_max(mt, red);  // its barriers also publish ps
    const float m_new = fmaxf(m, mt);
    const float corr = __expf(m - m_new);
    float st = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float p = __expf(ps[j] - m_new);
      ps[j] = p;
      st += p;
    }
    st = arl_block_sum(st, red);  // its barriers also publish ps
    lsum = lsum * corr + st;
#pragma unroll
    for (int t = 0; t < kDpl; t++) acc[t] *= corr;
    // Values: warp w takes keys w, w + kDecodeWarps, ... (kKeysPerWarpStep rows in flight).
    for (int j = warp * kKeysPerWarpStep; j < n; j += kDecodeWarps * kKeysPerWarpStep) {
      float vreg[kKeysPerWarpStep][kDpl];
      float p[kKeysPerWarpStep];
#pragma unroll
      for (int u = 0; u < kKeysPerWarpStep; u++) {
        const float* vr = vb + int64_t(j0 + min(j + u, n - 1)) * d;
        p[u] = j + u < n ? ps[j + u] : 0.0f;
#pragma unroll
        for (int t = 0; t < kDpl; t++)
          vreg[u][t] = lane + 32 * t < d ? __ldg(vr + lane + 32 * t) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kKeysPerWarpStep; u++)
#pragma unroll
        for (int t = 0; t < kDpl; t++) acc[t] = fmaf(p[u], vreg[u][t], acc[t]);
    }
    m = m_new;
    __syncthreads();
  }
  // Sum the warps' accumulators (part: kDecodeWarps rows of d).
#pragma unroll
  for (int t = 0; t < kDpl; t++)
    if (lane + 32 * t < d) part[warp * kMaxHeadDim + lane + 32 * t] = acc[t];
  __syncthreads();
  if (splits == 1) {
    const float inv = 1.0f / lsum;
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
      float a = 0.0f;
      for (int w = 0; w < kDecodeWarps; w++) a += part[w * kMaxHeadDim + c];
      out[row * d + c] = a * inv;
    }
    return;
  }
  float* rec = partial + (row * splits + sp) * (d + 2);
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    float a = 0.0f;
    for (int w = 0; w < kDecodeWarps; w++) a += part[w * kMaxHeadDim + c];
    rec[c] = a;
  }
  if (threadIdx.x == 0) {
    rec[d] = m;  // -inf for a split with no keys (its sum and output are 0)
    rec[d + 1] = lsum;
  }
  // The last of the row's splits to finish merges the records (no second kernel): its
  // records are visible device-wide before the count that admits the merging block.
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(&done[row], 1) == splits - 1;
    if (last) done[row] = 0;  // ready for the next call (or graph replay)
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  combine_splits(out + row * d, partial + row * splits * (d + 2), d, splits);
}

}  // namespace

namespace arl {

size_t decode_records_bytes(const arl_ctx* ctx) {
  return size_t(3) * ctx->num_sms * (kMaxHeadDim + 2) * sizeof(float);
}

// Where the decode layer's partials start: after the records and counters, 256-byte aligned.
static size_t partials_offset(const arl_ctx* ctx) {
  const size_t end = decode_records_bytes(ctx) + decode_counter_ints(ctx) * sizeof(int);
  return (end + 255) / 256 * 256;
}

int* decode_counters(arl_ctx* ctx) {
  return reinterpret_cast<int*>(static_cast<char*>(ctx->decode_partial) +
                                decode_records_bytes(ctx));
}

float* decode_partials(arl_ctx* ctx) {
  return reinterpret_cast<float*>(static_cast<char*>(ctx->decode_partial) +
                                  partials_offset(ctx));
}

bool decode_buffers(arl_ctx* ctx) {
  if (ctx->decode_partial != nullptr) return true;
  if (ctx->capturing) return false;
  const size_t bytes = decode_records_bytes(ctx);
  const size_t counters = decode_counter_ints(ctx) * sizeof(int);
  // zeroed on the context's stream (a non-blocking one, which a plain cudaMemset on the legacy
  // stream would not order before the first kernel), once
  if (cudaMalloc(&ctx->decode_partial, partials_offset(ctx) + kDecodePartFloats * 4) !=
          cudaSuccess ||
      cudaMemsetAsync(static_cast<char*>(ctx->decode_partial) + bytes, 0, counters,
                      ctx->stream) != cudaSuccess ||
      cudaStreamSynchronize(ctx->stream) != cudaSuccess) {
    cudaGetLastError();
    if (ctx->decode_partial != nullptr) cudaFree(ctx->decode_partial);
    ctx->decode_partial = nullptr;
    return false;
  }
  return true;
}

}  // namespace arl

namespace {

using arl::decode_records_bytes;

// Splits per (token, head) for n tokens of hq heads over caches of l positions: enough
// blocks for every SM twice over, at most kDecodeMaxSplits, at least kDecodeMinKeysPerSplit
// positions each (of the cache's length: the real lengths are on the device), and within
// the context's fixed buffer of split records (arl::decode_buffers). 1 when no buffer can be
// had.
int decode_splits(arl_ctx* ctx, int32_t n, int32_t hq, int32_t l, int32_t d) {
  const int64_t rows = int64_t(n) * hq;
  if (rows >= ctx->num_sms) return 1;
  int64_t splits = (2 * int64_t(ctx->num_sms) + rows - 1) / rows;
  splits = min(splits, int64_t(kDecodeMaxSplits));
  splits = min(splits, int64_t((l + kDecodeMinKeysPerSplit - 1) / kDecodeMinKeysPerSplit));
  if (splits < 2) return 1;
  // records for up to 2 * num_sms + rows blocks (< 3 * num_sms) of kMaxHeadDim + 2 floats
  if (!arl::decode_buffers(ctx)) return 1;
  if (size_t(rows * splits) * (d + 2) * sizeof(float) > decode_records_bytes(ctx)) return 1;
  return int(splits);
}

// Dynamic shared memory above 48 KB needs an opt-in per kernel (once).
template <class K>
arl_status allow_smem(arl_ctx* ctx, const char* fn, K kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return ARL_OK;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(bytes));
  return err == cudaSuccess ? ARL_OK : arl::cuda_fail(ctx, fn, err);
}

// Dims per lane for a head dim: 1, 2, 4 or 8 (d <= 256).
inline int dims_per_lane(int32_t d) { return d <= 32 ? 1 : d <= 64 ? 2 : d <= 128 ? 4 : 8; }

// The decode kernel for kDpl dims per lane: 512 threads per (token, head) unsplit, 128 per
// split (a split holds few keys).
template <int kDpl>
void launch_decode(arl_ctx* ctx, float* out, float* partial, const float* q, const float* k_cache,
                   const float* v_cache, const int32_t* slots, const int32_t* lens, int32_t n,
                   int32_t s, int32_t hq, int32_t hkv, int32_t l, int32_t d, float scale,
                   int splits) {
  if (splits == 1)
    arl::launch_pdl(ctx, attention_decode_kernel<512, kDpl>, dim3(n, hq, 1), dim3(512), 0, out,
                    static_cast<float*>(nullptr), q, k_cache, v_cache, slots, lens, s, hq, hkv, l,
                    d, scale, 1, static_cast<int*>(nullptr), ctx->flag, ctx->flag_index);
  else
    arl::launch_pdl(
        ctx, attention_decode_kernel<128, kDpl>, dim3(n, hq, splits), dim3(128), 0, out, partial,
        q, k_cache, v_cache, slots, lens, s, hq, hkv, l, d, scale, splits,
        reinterpret_cast<int*>(reinterpret_cast<char*>(partial) + decode_records_bytes(ctx)),
        ctx->flag, ctx->flag_index);
}

#include "attention_d64.cuh"
#include "attention_tc.cuh"

// AGENTRL_CUDA_ATTENTION: "generic" runs the generic fp32 kernels for every call, "fp32" the
// fp32 kernels for the _bf16 calls too (baselines for comparing kernels); unset, the best.
enum AttentionOverride { kAttentionBest = -1, kAttentionGeneric, kAttentionFp32 };
AttentionOverride attention_override() {
  static const AttentionOverride value =
      AttentionOverride(arl::env_choice("AGENTRL_CUDA_ATTENTION", {"generic", "fp32"}, -1));
  return value;
}

// The head-dim-64 fp32 kernels, unless AGENTRL_CUDA_ATTENTION=generic.
bool use_d64(int32_t d) { return d == d64::D && attention_override() != kAttentionGeneric; }

// The tensor-core kernels: head dims 64 and 128, every row 16-byte aligned, shared memory for
// the pass (backward needs the most: head dim 128 takes 119 KB, more than GPUs of compute
// capability 8.6/8.9/12.x give a block), and no AGENTRL_CUDA_ATTENTION override.
bool tensor_core_shape(const arl_ctx* ctx, bool backward, int32_t d,
                       std::initializer_list<const float*> rows) {
  if (d != 64 && d != 128) return false;
  const size_t need =
      d == 64 ? (backward ? std::max(tc::Shape<64>::kDqBytes, tc::Shape<64>::kDkdvBytes)
                          : tc::Shape<64>::kForwardBytes)
              : (backward ? std::max(tc::Shape<128>::kDqBytes, tc::Shape<128>::kDkdvBytes)
                          : tc::Shape<128>::kForwardBytes);
  if (need + 64 > size_t(ctx->max_smem)) return false;  // 64: the kernels' static variables
  if (attention_override() != kAttentionBest) return false;
  for (const float* p : rows)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

template <int D>
arl_status tc_forward(arl_ctx* ctx, const char* fn, float* out, float* lse, const float* q,
                      const float* k, const float* v, const int32_t* cu_seqlens, int32_t b,
                      int32_t t, int32_t hq, int32_t hkv, float scale) {
  constexpr size_t bytes = tc::Shape<D>::kForwardBytes;
  if (arl_status s = allow_smem(ctx, fn, tc::forward<D>, bytes)) return s;
  tc::forward<D><<<dim3((t + tc::kBlock - 1) / tc::kBlock, hq), tc::kWarps * 32, bytes,
                   ctx->stream>>>(out, lse, q, k, v, cu_seqlens, b, t, hq, hkv, scale);
  return arl::check_launch(ctx, fn);
}

// dq, then dk and dv (per query head into `part` when kv heads are shared, then summed).
template <int D>
arl_status tc_backward(arl_ctx* ctx, const char* fn, float* dq, float* dk, float* dv,
                       float* part, const float* dout, const float* q, const float* k,
                       const float* v, const float* lse, const float* delta,
                       const int32_t* cu_seqlens, int32_t b, int32_t t, int32_t hq, int32_t hkv,
                       float scale) {
  using S = tc::Shape<D>;
  const dim3 grid((t + tc::kBlock - 1) / tc::kBlock, hq);
  if (arl_status s = allow_smem(ctx, fn, tc::backward_dq<D>, S::kDqBytes)) return s;
  if (arl_status s = allow_smem(ctx, fn, tc::backward_dkdv<D>, S::kDkdvBytes)) return s;
  tc::backward_dq<D><<<grid, tc::kWarps * 32, S::kDqBytes, ctx->stream>>>(
      dq, dout, q, k, v, lse, delta, cu_seqlens, b, t, hq, hkv, scale);
  if (arl_status s = arl::check_launch(ctx, fn)) return s;
  const bool shared_kv = hq != hkv;
  float* pk = shared_kv ? part : dk;
  float* pv = shared_kv ? part + int64_t(hq) * t * D : dv;
  // per query head: rows D apart, head h at h * T * D; else the kv head's columns
  const int64_t stride = shared_kv ? D : int64_t(hkv) * D;
  const int64_t off_h = shared_kv ? int64_t(t) * D : 0, off_kvh = shared_kv ? 0 : D;
  tc::backward_dkdv<D><<<grid, tc::kWarps * 32, S::kDkdvBytes, ctx->stream>>>(
      pk, pv, stride, off_h, off_kvh, dout, q, k, v, lse, delta, cu_seqlens, b, t, hq, hkv,
      scale);
  if (arl_status s = arl::check_launch(ctx, fn)) return s;
  if (!shared_kv) return ARL_OK;
  const int64_t n = int64_t(t) * hkv * D;
  tc::sum_heads<<<unsigned(std::min<int64_t>((n + 255) / 256, 65535)), 256, 0, ctx->stream>>>(
      dk, dv, pk, pv, t, hq, hkv, D);
  return arl::check_launch(ctx, fn);
}

arl_status attention_forward(arl_ctx* ctx, const char* fn, bool tensor_cores, float* out,
                             float* lse, const float* q, const float* k, const float* v,
                             const int32_t* cu_seqlens, int32_t b, int32_t t, int32_t hq,
                             int32_t hkv, int32_t d, float scale) {
  if (arl_status s = check_heads(ctx, fn, hq, hkv, d)) return s;
  std::vector<int32_t> cu;
  if (arl_status s = arl::fetch_cu_seqlens(ctx, fn, cu, cu_seqlens, b, t)) return s;
  if (tensor_cores && tensor_core_shape(ctx, false, d, {q, k, v}))
    return d == 64 ? tc_forward<64>(ctx, fn, out, lse, q, k, v, cu_seqlens, b, t, hq, hkv, scale)
                   : tc_forward<128>(ctx, fn, out, lse, q, k, v, cu_seqlens, b, t, hq, hkv, scale);
  if (use_d64(d)) {
    d64::forward<<<dim3((t + d64::kBlockRows - 1) / d64::kBlockRows, hq), d64::kWarps * 32, 0,
                   ctx->stream>>>(out, lse, q, k, v, cu_seqlens, b, t, hq, hkv, scale);
    return arl::check_launch(ctx, fn);
  }
  const dim3 grid((t + kWarps - 1) / kWarps, hq);
  const size_t smem = sizeof(float) * (size_t(kTileRows) * (2 * d + 1) + size_t(kWarps) * d);
#define ARL_FWD(DPL)                                                                     \
  if (arl_status s = allow_smem(ctx, fn, attention_forward_kernel<DPL>, smem)) return s; \
  attention_forward_kernel<DPL><<<grid, kWarps * 32, smem, ctx->stream>>>(               \
      out, lse, q, k, v, cu_seqlens, b, t, hq, hkv, d, scale)
  switch (dims_per_lane(d)) {
    case 1: ARL_FWD(1); break;
    case 2: ARL_FWD(2); break;
    case 4: ARL_FWD(4); break;
    default: ARL_FWD(8); break;
  }
#undef ARL_FWD
  return arl::check_launch(ctx, fn);
}

arl_status attention_backward(arl_ctx* ctx, const char* fn, bool tensor_cores, float* dq,
                              float* dk, float* dv, const float* dout, const float* q,
                              const float* k, const float* v, const float* out, const float* lse,
                              const int32_t* cu_seqlens, int32_t b, int32_t t, int32_t hq,
                              int32_t hkv, int32_t d, float scale) {
  if (arl_status s = check_heads(ctx, fn, hq, hkv, d)) return s;
  std::vector<int32_t> cu;
  if (arl_status s = arl::fetch_cu_seqlens(ctx, fn, cu, cu_seqlens, b, t)) return s;
  bool tc = tensor_cores && tensor_core_shape(ctx, true, d, {dout, q, k, v});
  // delta (HQ, T), then with the tensor cores and shared kv heads dk and dv per query head
  // (group-size times dk and dv: when that does not fit, the fp32 kernels, which need none)
  const size_t parts = tc && hq != hkv ? 2 * size_t(hq) * t * d : 0;
  float* delta = nullptr;
  if (parts != 0) {
    delta = static_cast<float*>(arl::scratch(ctx, fn, sizeof(float) * (size_t(t) * hq + parts)));
    if (delta == nullptr) {
      ctx->last_error[0] = '\0';
      tc = false;
    }
  }
  if (delta == nullptr)
    delta = static_cast<float*>(arl::scratch(ctx, fn, sizeof(float) * size_t(t) * hq));
  if (delta == nullptr) return ARL_ERR_ALLOC;
  const int64_t warps = int64_t(t) * hq;
  attention_delta_kernel<<<unsigned((warps * 32 + 255) / 256), 256, 0, ctx->stream>>>(
      delta, dout, out, t, hq, d);
  if (arl_status s = arl::check_launch(ctx, fn)) return s;
  if (tc) {
    float* part = delta + size_t(t) * hq;
    return d == 64 ? tc_backward<64>(ctx, fn, dq, dk, dv, part, dout, q, k, v, lse, delta,
                                     cu_seqlens, b, t, hq, hkv, scale)
                   : tc_backward<128>(ctx, fn, dq, dk, dv, part, dout, q, k, v, lse, delta,
                                      cu_seqlens, b, t, hq, hkv, scale);
  }
  if (use_d64(d)) {
    const dim3 grid_q((t + d64::kBlockRows - 1) / d64::kBlockRows, hq);
    const dim3 grid_kv((t + d64::kBlockRows - 1) / d64::kBlockRows, hkv);
    d64::backward_dq<<<grid_q, d64::kWarps * 32, 0, ctx->stream>>>(
        dq, dout, q, k, v, lse, delta, cu_seqlens, b, t, hq, hkv, scale);
    if (arl_status s = arl::check_launch(ctx, fn)) return s;
    d64::backward_dkdv<<<grid_kv, d64::kWarps * 32, 0, ctx->stream>>>(
        dk, dv, dout, q, k, v, lse, delta, cu_seqlens, b, t, hq, hkv, scale);
    return arl::check_launch(ctx, fn);
  }
  const size_t smem_dq = sizeof(float) * (size_t(kTileRows) * 2 * (d + 1) + size_t(kWarps) * 2 * d);
  const size_t smem_kv =
      sizeof(float) * (size_t(kTileRows) * (2 * (d + 1) + 2) + size_t(kWarps) * 2 * d);
  const dim3 grid_q((t + kWarps - 1) / kWarps, hq), grid_kv((t + kWarps - 1) / kWarps, hkv);
#define ARL_BWD(DPL)                                                                     \
  if (arl_status s = allow_smem(ctx, fn, attention_dq_kernel<DPL>, smem_dq)) return s;  \
  if (arl_status s = allow_smem(ctx, fn, attention_dkdv_kernel<DPL>, smem_kv)) return s; \
  attention_dq_kernel<DPL><<<grid_q, kWarps * 32, smem_dq, ctx->stream>>>(              \
      dq, dout, q, k, v, lse, delta, cu_seqlens, b, t, hq, hkv, d, scale);               \
  attention_dkdv_kernel<DPL><<<grid_kv, kWarps * 32, smem_kv, ctx->stream>>>(           \
      dk, dv, dout, q, k, v, lse, delta, cu_seqlens, b, t, hq, hkv, d, scale)
  switch (dims_per_lane(d)) {
    case 1: ARL_BWD(1); break;
    case 2: ARL_BWD(2); break;
    case 4: ARL_BWD(4); break;
    default: ARL_BWD(8); break;
  }
#undef ARL_BWD
  return arl::check_launch(ctx, fn);
}

}  // namespace

extern "C" {

arl_status arl_attention_forward(arl_ctx* ctx, float* out, float* lse, const float* q,
                                 const float* k, const float* v, const int32_t* cu_seqlens,
                                 int32_t b, int32_t t, int32_t hq, int32_t hkv, int32_t d,
                                 float scale) {
  ARL_ATTENTION_FORWARD_CHECKS;
  return attention_forward(ctx, __func__, false, out, lse, q, k, v, cu_seqlens, b, t, hq, hkv, d,
                           scale);
}

arl_status arl_attention_forward_bf16(arl_ctx* ctx, float* out, float* lse, const float* q,
                                      const float* k, const float* v, const int32_t* cu_seqlens,
                                      int32_t b, int32_t t, int32_t hq, int32_t hkv, int32_t d,
                                      float scale) {
  ARL_ATTENTION_FORWARD_CHECKS;
  return attention_forward(ctx, __func__, true, out, lse, q, k, v, cu_seqlens, b, t, hq, hkv, d,
                           scale);
}

arl_status arl_attention_backward(arl_ctx* ctx, float* dq, float* dk, float* dv,
                                  const float* dout, const float* q, const float* k,
                                  const float* v, const float* out, const float* lse,
                                  const int32_t* cu_seqlens, int32_t b, int32_t t, int32_t hq,
                                  int32_t hkv, int32_t d, float scale) {
  ARL_ATTENTION_BACKWARD_CHECKS;
  return attention_backward(ctx, __func__, false, dq, dk, dv, dout, q, k, v, out, lse,
                            cu_seqlens, b, t, hq, hkv, d, scale);
}

arl_status arl_attention_backward_bf16(arl_ctx* ctx, float* dq, float* dk, float* dv,
                                       const float* dout, const float* q, const float* k,
                                       const float* v, const float* out, const float* lse,
                                       const int32_t* cu_seqlens, int32_t b, int32_t t,
                                       int32_t hq, int32_t hkv, int32_t d, float scale) {
  ARL_ATTENTION_BACKWARD_CHECKS;
  return attention_backward(ctx, __func__, true, dq, dk, dv, dout, q, k, v, out, lse,
                            cu_seqlens, b, t, hq, hkv, d, scale);
}

arl_status arl_kv_cache_write(arl_ctx* ctx, float* k_cache, float* v_cache, const float* k,
                              const float* v, const int32_t* slots, const int32_t* positions,
                              int32_t n, int32_t s, int32_t hkv, int32_t l, int32_t d) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, k_cache);
  ARL_NOT_NULL(ctx, v_cache);
  ARL_NOT_NULL(ctx, k);
  ARL_NOT_NULL(ctx, v);
  ARL_NOT_NULL(ctx, slots);
  ARL_NOT_NULL(ctx, positions);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, s);
  ARL_POSITIVE(ctx, hkv);
  ARL_POSITIVE(ctx, l);
  ARL_POSITIVE(ctx, d);
  ARL_PRODUCT(ctx, int64_t(s) * hkv * l, d);
  if (int64_t(hkv) * d > INT32_MAX)  // (the kernel's row loop is int32)
    return arl::fail(ctx, ARL_ERR_SIZE, "%s: hkv x d = %lld values a row is too many", __func__,
                     (long long)(int64_t(hkv) * d));
  // Slots and positions are checked by the kernel (reported at the next synchronizing call).
  kv_cache_write_kernel<<<n, 128, 0, ctx->stream>>>(k_cache, v_cache, k, v, slots, positions, s,
                                                    hkv, l, d, ctx->flag, ctx->flag_index);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_attention_decode(arl_ctx* ctx, float* out, const float* q, const float* k_cache,
                                const float* v_cache, const int32_t* slots, const int32_t* lens,
                                int32_t n, int32_t s, int32_t hq, int32_t hkv, int32_t l,
                                int32_t d, float scale) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, q);
  ARL_NOT_NULL(ctx, k_cache);
  ARL_NOT_NULL(ctx, v_cache);
  ARL_NOT_NULL(ctx, slots);
  ARL_NOT_NULL(ctx, lens);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, s);
  ARL_POSITIVE(ctx, hq);
  ARL_POSITIVE(ctx, hkv);
  ARL_POSITIVE(ctx, l);
  ARL_POSITIVE(ctx, d);
  ARL_PRODUCT(ctx, int64_t(s) * hkv * l, d);
  ARL_PRODUCT(ctx, int64_t(n) * hq, d);
  if (arl_status st = check_heads(ctx, __func__, hq, hkv, d)) return st;
  if (hq > 65535)
    return arl::fail(ctx, ARL_ERR_SIZE, "%s: %d query heads is more than 65535", __func__, hq);
  // Slots and lengths are checked by the kernel (reported at the next synchronizing call).
  const int splits = decode_splits(ctx, n, hq, l, d);
  auto* partial = splits > 1 ? static_cast<float*>(ctx->decode_partial) : nullptr;
#define ARL_LAUNCH_DECODE(P)                                                                 \
  launch_decode<P>(ctx, out, partial, q, k_cache, v_cache, slots, lens, n, s, hq, hkv, l, d, \
                   scale, splits)
  switch (dims_per_lane(d)) {
    case 1: ARL_LAUNCH_DECODE(1); break;
    case 2: ARL_LAUNCH_DECODE(2); break;
    case 4: ARL_LAUNCH_DECODE(4); break;
    default: ARL_LAUNCH_DECODE(8); break;
  }
#undef ARL_LAUNCH_DECODE
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

}  // extern "C"
