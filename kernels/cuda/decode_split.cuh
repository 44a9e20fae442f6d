// One key split of a query head in batch-1 decode attention, shared by kernel 2 of the decode
// chain (decode_chain.cu) and the whole-token kernel (decode_token.cu): the warps' online
// softmax over the split's keys, and the split's record from the warps' results.
#pragma once

#include "common.cuh"

namespace arl {

// Each of kWarps warps runs an online softmax over its keys of [j_begin, j_end) (kSteps keys at a
// time, keys and values loaded together: one round trip a step), its lanes the head dims: then
// partial[warp] holds its unnormalized output, red[warp] its max and red[kWarps + warp] its sum
// (after the block barrier this ends with). qs: the scaled query (shared memory); kb, vb: the
// head's keys and values (D floats a position, read through L2: the new row was written in the
// same launch or by the kernel before).
template <int D, int kWarps, int kSteps>
__device__ inline void split_softmax(const float* qs, const float* kb, const float* vb,
                                     int32_t j_begin, int32_t j_end, float (*partial)[D],
                                     float* red) {
  constexpr int kDpl = D / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float acc[kDpl];
#pragma unroll
  for (int t = 0; t < kDpl; t++) acc[t] = 0.0f;
  float m = -INFINITY, lsum = 0.0f;
  for (int32_t j = j_begin + warp * kSteps; j < j_end; j += kWarps * kSteps) {
    float kreg[kSteps][kDpl], vreg[kSteps][kDpl];
#pragma unroll
    for (int u = 0; u < kSteps; u++) {
      const int64_t at = int64_t(min(j + u, j_end - 1)) * D + lane;
#pragma unroll
      for (int t = 0; t < kDpl; t++) {
        kreg[u][t] = __ldcg(kb + at + 32 * t);
        vreg[u][t] = __ldcg(vb + at + 32 * t);
      }
    }
    float score[kSteps], mt = -INFINITY;
#pragma unroll
    for (int u = 0; u < kSteps; u++) {
      float dot = 0.0f;
#pragma unroll
      for (int t = 0; t < kDpl; t++) dot = fmaf(qs[lane + 32 * t], kreg[u][t], dot);
      for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      score[u] = j + u < j_end ? dot : -INFINITY;
      mt = fmaxf(mt, score[u]);
    }
    const float m_new = fmaxf(m, mt), corr = __expf(m - m_new);  // (key j is real: m_new too)
    lsum *= corr;
#pragma unroll
    for (int t = 0; t < kDpl; t++) acc[t] *= corr;
#pragma unroll
    for (int u = 0; u < kSteps; u++) {
      const float p = __expf(score[u] - m_new);
      lsum += p;
#pragma unroll
      for (int t = 0; t < kDpl; t++) acc[t] = fmaf(p, vreg[u][t], acc[t]);
    }
    m = m_new;
  }
#pragma unroll
  for (int t = 0; t < kDpl; t++) partial[warp][lane + 32 * t] = acc[t];
  if (lane == 0) {
    red[warp] = m;
    red[kWarps + warp] = lsum;
  }
  __syncthreads();
}

// The split's record from split_softmax's results, by the first D threads: rec[0, D) the
// unnormalized output, rec[D] the max, rec[D + 1] the sum (-inf, 0, 0 when it had no keys).
template <int D, int kWarps>
__device__ inline void split_record(const float (*partial)[D], const float* red, float* rec) {
  const int tid = threadIdx.x;
  if (tid >= D) return;
  float mx = -INFINITY;
  for (int w = 0; w < kWarps; w++) mx = fmaxf(mx, red[w]);
  float o = 0.0f, l = 0.0f;
  if (mx != -INFINITY) {
    for (int w = 0; w < kWarps; w++) {
      const float scale = __expf(red[w] - mx);
      o = fmaf(scale, partial[w][tid], o);
      l = fmaf(scale, red[kWarps + w], l);
    }
  }
  rec[tid] = o;
  if (tid == 0) {
    rec[D] = mx;
    rec[D + 1] = l;
  }
}

}  // namespace arl
