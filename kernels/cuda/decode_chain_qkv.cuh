// Kernel 1's work inside kernel 2 (decode_chain.cu, AGENTRL_CUDA_DECODE_QKV_IN_ATTN=1): with head
// dim 64 and a head's 8 key splits as one thread-block cluster, block (h, r) finds the RoPE pairs
// r * 4 .. r * 4 + 3 of head h's q rows itself (warps 0-3), and the cluster shares them through
// distributed shared memory. The k and v rows of a kv head (64 pairs) are spread over the warps
// 4-7 of the blocks of the heads that read them (group_blocks of them); each block counts itself
// in on its kv head's barrier word once its pairs are in the cache, and only the split that holds
// the new position waits for the word. One kernel boundary and q's trip through global memory
// less a layer.
#pragma once

#include <cstdint>

#include "common.cuh"
#include "gemv.cuh"

namespace arl {
namespace chain {

constexpr int kQkvInAttnD = 64;        // head dim
constexpr int kQkvInAttnQWarps = 4;    // warps a block with q pairs (D / 2 pairs over 8 splits)
constexpr int kQkvInAttnKvWarps = 4;   // warps a block with k or v pairs
constexpr int kQkvInAttnSteps = 4;     // 16-byte weight loads a lane and row
constexpr int kQkvInAttnMaxC = 32 * 8 * kQkvInAttnSteps;

// A warp's RoPE pair (rows j and j + D/2 of w_qkv, head `head` of q|k|v, offset o), loaded
// before the kernel's wait with its bias.
struct QkvPair {
  uint4 w0[kQkvInAttnSteps], w1[kQkvInAttnSteps];
  float b0, b1;
  int32_t head, o;  // head < 0: this warp has no pair
};

// Block (h, r)'s pair for warp `warp` (of 8): q pair 4r + warp for warps 0-3; for warps 4-7 the
// k|v pair (group_block + group_blocks * (warp - 4)) of kv head h / group, if under D (pairs
// 0..D/2-1 are k's, the rest v's). group_block: the block's index among its kv head's blocks.
__device__ inline void qkv_pair_rows(int warp, int32_t h, int r, int32_t group_block,
                                     int32_t group_blocks, int32_t hq, int32_t hkv, int32_t kvh,
                                     int32_t& head, int32_t& o) {
  constexpr int32_t half = kQkvInAttnD / 2;
  if (warp < kQkvInAttnQWarps) {
    head = h;
    o = r * kQkvInAttnQWarps + warp;
    return;
  }
  const int32_t p = group_block + group_blocks * (warp - kQkvInAttnQWarps);
  head = p < half ? hq + kvh : p < kQkvInAttnD ? hq + hkv + kvh : -1;
  o = p % half;
}

// The position, slot and rotation of each warp's pair (qkv_pair_rows' head and o), found by the
// first kWarps threads into rows[warp] before the weights load (a block barrier between): the
// double math's registers are free again before the weights land.
template <int kWarps>
__device__ inline void qkv_pair_rotations(RopeRow* rows, int32_t h, int r, int32_t group_block,
                                          int32_t group_blocks, int32_t kvh,
                                          const GemvRope& rope) {
  const int warp = threadIdx.x;  // (thread w finds warp w's)
  if (warp < kWarps) {
    int32_t head, o;
    qkv_pair_rows(warp, h, r, group_block, group_blocks, rope.hq, rope.hkv, kvh, head, o);
    const double inv_freq = pow(double(rope.theta), -2.0 * o / kQkvInAttnD);  // as rope_trig
    rows[warp] = head >= 0 ? rope_row(rope, 0, head, inv_freq) : RopeRow{0, 0, 1.0f, 0.0f};
  }
  __syncthreads();
}

__device__ inline void qkv_pair_load(QkvPair& p, const uint16_t* w, const float* bias, int32_t c,
                                     int lane) {
  const int64_t j0 = int64_t(p.head) * kQkvInAttnD + p.o, j1 = j0 + kQkvInAttnD / 2;
  const int32_t chunks = c / 8;
#pragma unroll
  for (int t = 0; t < kQkvInAttnSteps; t++) {
    const int32_t i = lane + 32 * t;
    const bool in = p.head >= 0 && i < chunks;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    p.w0[t] = in ? __ldg(reinterpret_cast<const uint4*>(w + j0 * c) + i) : zero;
    p.w1[t] = in ? __ldg(reinterpret_cast<const uint4*>(w + j1 * c) + i) : zero;
  }
  p.b0 = p.head >= 0 && bias != nullptr ? __ldg(bias + j0) : 0.0f;
  p.b1 = p.head >= 0 && bias != nullptr ? __ldg(bias + j1) : 0.0f;
}

// After the wait, the whole block: x * ln1 into xg (shared memory, c floats, its 8-column chunks'
// halves apart as chunk_halves_at lays them out for qkv_pair_store) and x's RMSNorm factor,
// returned to every thread (red: kWarps doubles of shared memory).
template <int kWarps>
__device__ inline float qkv_norm_input(float* xg, double* red, const float* x, const float* ln1,
                                       int32_t c, float eps) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  double ss = 0.0;
  for (int i = tid; i < c / 4; i += kWarps * 32) {
    const float4 v = __ldcg(reinterpret_cast<const float4*>(x) + i);
    const float4 g = __ldg(reinterpret_cast<const float4*>(ln1) + i);
    ss += double(v.x) * v.x + double(v.y) * v.y + double(v.z) * v.z + double(v.w) * v.w;
    reinterpret_cast<float4*>(xg)[chunk_halves_at(i, c)] =
        make_float4(v.x * g.x, v.y * g.y, v.z * g.z, v.w * g.w);
  }
  for (int s = 16; s > 0; s >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, s);
  if (lane == 0) red[warp] = ss;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kWarps; w++) total += red[w];
  return float(1.0 / sqrt(total / c + eps));
}

// The warp's pair dotted with xg and scaled by rstd (qkv_norm_input's), and lane 0 writes them as
// kernel 1 does (q|k|v rows, k and v cache rows); q pairs also go to qsh (this block's share of
// the head's q, as roped). `report`: this warp raises the step's deferred errors.
__device__ inline void qkv_pair_store(const QkvPair& p, const RopeRow& row, const float* xg,
                                      float rstd, int32_t c, float* qkv, float* qsh, bool report,
                                      const GemvRope& rope, int lane) {
  if (p.head < 0) return;
  const int32_t chunks = c / 8;
  float d0 = 0.0f, d1 = 0.0f;
#pragma unroll
  for (int t = 0; t < kQkvInAttnSteps; t++) {
    const int32_t i = lane + 32 * t;
    if (i >= chunks) break;
    const float4 xv[2] = {reinterpret_cast<const float4*>(xg)[i],
                          reinterpret_cast<const float4*>(xg)[chunks + i]};
    Wide16<uint16_t> u0, u1;
    u0.set(p.w0[t]);
    u1.set(p.w1[t]);
    const float xe[8] = {xv[0].x, xv[0].y, xv[0].z, xv[0].w, xv[1].x, xv[1].y, xv[1].z, xv[1].w};
#pragma unroll
    for (int e = 0; e < 8; e++) {
      d0 = fmaf(u0.v[e], xe[e], d0);
      d1 = fmaf(u1.v[e], xe[e], d1);
    }
  }
  for (int s = 16; s > 0; s >>= 1) {
    d0 += __shfl_xor_sync(0xffffffffu, d0, s);
    d1 += __shfl_xor_sync(0xffffffffu, d1, s);
  }
  if (lane != 0) return;
  const float2 v = rope_pair_store_row(qkv + int64_t(p.head) * kQkvInAttnD + p.o,
                                       d0 * rstd + p.b0, d1 * rstd + p.b1, p.head, p.o, 0, report,
                                       rope, row);
  if (p.head < rope.hq) {
    qsh[p.o] = v.x;
    qsh[p.o + kQkvInAttnD / 2] = v.y;
  }
}

// The cluster's block holding element e of the head's q (after qkv_pair_store).
__device__ inline int q_owner(int e) {
  return (e % (kQkvInAttnD / 2)) / kQkvInAttnQWarps;
}

}  // namespace chain
}  // namespace arl
