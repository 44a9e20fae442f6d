// arl_decode_layer_bf16 (ABI version 6) on the GPU: the choice of its path (layer_path below:
// the four chained kernels of decode_chain.cu by default), and the path `coop`, one token
// through a whole decoder layer in one cooperative kernel. Batch-1 decode is a chain of small
// steps, each too little work to hide a kernel boundary; here one block per SM runs the layer's
// steps as phases separated by grid-wide barriers:
//   A  x's RMSNorm; qkv = norm(x) . w_qkv^T + b_qkv                     (rows over blocks)
//   B  attention partial sums (online softmax) per (query head, split of the keys), a warp
//      each, with q and the new key roped in registers (the new key and value come from qkv,
//      not the cache); the last split of a head to finish merges its records into attn; one
//      block writes the new keys and values to the cache
//   C  x += attn . w_o^T; q and k roped into qkv (the calls' output)
//   D  x's RMSNorm; act = silu(norm(x) . w_gate^T) * (norm(x) . w_up^T)
//   E  x += act . w_down^T
// Every block first asks L2 to prefetch its rows of the layer's weights (all of them when the
// layer takes at most 3/4 of the L2, else each phase's during the phase before), so that the
// weight stream (the layer's real cost) runs at full bandwidth under the phases' latencies.
// Shapes it does not take run as the calls the layer stands for (common/decode_layer.h).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "common.cuh"
#include "block_copy.cuh"
// (after common.cuh: the checks need its context)
#include "../common/decode_layer.h"
#include "decode_chain.cuh"
#include "env_switch.h"
#include "gemv.cuh"
#include "grid_barrier.cuh"
#include "time_sums.cuh"
#include "rope.cuh"

namespace {

constexpr int kLayerWarps = 16;
constexpr int kLayerThreads = kLayerWarps * 32;
constexpr int kLayerMaxSplits = 16;       // key splits per head (at most 32: a lane each)
constexpr int kLayerMinKeysPerSplit = 32;
constexpr int kLayerMinRows = 16;         // rows of the widest step per block, at least
constexpr int kLayerBatch = 4;            // 16-byte weight loads per lane and row in flight
constexpr int kMergeBatch = 8;            // split records a lane reads at once
constexpr int kMaxHalf = 64;              // RoPE pairs per head (head dim 128)
enum Prefetch { kPrefetchNone, kPrefetchPhase, kPrefetchAll };
// Shared memory: kLayerWarps doubles (norms), 2 kLayerWarps floats (GEMV slices), the RoPE
// table (cos, then sin, kMaxHalf each), then the phases' input vector.
constexpr int kPartAt = kLayerWarps * 8, kTrigAt = kPartAt + kLayerWarps * 8;
constexpr int kSharedHeader = kTrigAt + 2 * kMaxHalf * 4;

struct LayerArgs {
  float* x;
  float* qkv;
  float* attn;
  float* act;
  const float* ln1;
  const uint16_t* w_qkv;
  const float* b_qkv;
  const uint16_t* w_o;
  const float* ln2;
  const uint16_t* w_gu;
  const uint16_t* w_down;
  float* k_cache;
  float* v_cache;
  const int32_t* slot;
  const int32_t* position;
  const int32_t* len;
  float* partial;     // (HQ, splits) records of D + 2 floats: sums, running max, softmax sum
  int* done;          // per head: its splits finished (0 between calls)
  unsigned* barrier;  // grid_barrier's word (its low 31 bits 0 between calls)
  int32_t c, f, hq, hkv, d, s, l, splits;
  int prefetch;       // weights to L2: kPrefetchAll at the start, kPrefetchPhase a phase ahead
  unsigned long long* times;  // null, or phase_times' sums (AGENTRL_CUDA_DECODE_LAYER_TIMES=1)
  float eps, theta, scale;
  int* flag;
  int64_t* flag_index;
};


using arl::global_ns;

// v (n floats, shared) = x * rstd * g, rstd = 1 / sqrt(mean(x^2) + eps) summed in double as
// the CPU library does; x is read past L1 (other blocks of this kernel wrote it).
__device__ void norm_to_shared(float* v, const float* x, const float* __restrict__ g, int32_t n,
                               float eps, double* red) {
  double ss = 0.0;
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float xi = __ldcg(x + i);
    v[i] = xi;
    ss += double(xi) * xi;
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kLayerWarps; w++) total += red[w];
  const float rstd = float(1.0 / sqrt(total / n + eps));
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) v[i] = v[i] * rstd * __ldg(g + i);
  __syncthreads();
}

// For rows r in [r0, r1) of a bf16 weight w (rows of k, k % 8 == 0, 16-byte aligned): the dot
// of row r (and with R = 2 of row r + up too) with v (k floats, shared), handed to
// out(r, sums) by one thread. With few rows a row is split over S warps (slices of k summed
// through `part`, 2 kLayerWarps floats); each lane keeps kLayerBatch loads per row in flight.
template <int R, typename Out>
__device__ void block_gemv(const uint16_t* __restrict__ w, int64_t up, const float* v, int32_t k,
                           int32_t r0, int32_t r1, float* part, Out out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int32_t rows = r1 - r0, kv = k / 8;
  int split = 1;
  while (split < kLayerWarps && rows * split * 2 <= kLayerWarps && kv / (split * 2) >= 32)
    split *= 2;
  const int32_t units = rows * split, per = (kv + split - 1) / split;
  const float4* v4 = reinterpret_cast<const float4*>(v);
  for (int32_t u = warp; u < units; u += kLayerWarps) {
    const int32_t r = r0 + u / split, begin = (u % split) * per, end = min(kv, begin + per);
    const uint16_t* wr = w + int64_t(r) * k;
    float acc[R];
#pragma unroll
    for (int h = 0; h < R; h++) acc[h] = 0.0f;
    for (int32_t i0 = begin + lane; i0 < end; i0 += 32 * kLayerBatch) {
      uint4 raw[kLayerBatch][R] = {};
#pragma unroll
      for (int b = 0; b < kLayerBatch; b++)
#pragma unroll
        for (int h = 0; h < R; h++)
          if (i0 + 32 * b < end)
            raw[b][h] =
                __ldg(reinterpret_cast<const uint4*>(wr + h * up + int64_t(i0 + 32 * b) * 8));
#pragma unroll
      for (int b = 0; b < kLayerBatch; b++) {
        const int32_t i = i0 + 32 * b;
        if (i >= end) break;
        const float4 x0 = v4[2 * i], x1 = v4[2 * i + 1];
#pragma unroll
        for (int h = 0; h < R; h++) {
          arl::Wide16<uint16_t> a;
          a.set(raw[b][h]);
          acc[h] = fmaf(a.v[0], x0.x, fmaf(a.v[1], x0.y, fmaf(a.v[2], x0.z, fmaf(a.v[3], x0.w,
                   fmaf(a.v[4], x1.x, fmaf(a.v[5], x1.y, fmaf(a.v[6], x1.z, fmaf(a.v[7], x1.w,
                   acc[h]))))))));
        }
      }
    }
#pragma unroll
    for (int h = 0; h < R; h++)
      for (int o = 16; o > 0; o >>= 1) acc[h] += __shfl_xor_sync(0xffffffffu, acc[h], o);
    if (lane != 0) continue;
    if (split == 1) {
      out(r, acc);
    } else {
#pragma unroll
      for (int h = 0; h < R; h++) part[u * R + h] = acc[h];
    }
  }
  if (split == 1) return;
  __syncthreads();
  if (int32_t(threadIdx.x) < rows) {
    float sum[R];
#pragma unroll
    for (int h = 0; h < R; h++) {
      sum[h] = 0.0f;
      for (int t = 0; t < split; t++) sum[h] += part[(int32_t(threadIdx.x) * split + t) * R + h];
    }
    out(r0 + int32_t(threadIdx.x), sum);
  }
  __syncthreads();  // part is used again
}

// Rotates the pair (a, b) by the angle whose cos and sin are cs, sn.
__device__ inline void rotate(float& a, float& b, float cs, float sn) {
  const float ra = a * cs - b * sn, rb = b * cs + a * sn;
  a = ra;
  b = rb;
}

// The merge of a head's split records (splits <= 32) into out (d = 32 D floats): a lane per
// record for the weights, a lane's dims for the sums.
template <int D>
__device__ void merge_head(float* out, const float* recs, int32_t splits) {
  const int lane = threadIdx.x & 31;
  const int32_t d = 32 * D;
  const float mp = lane < splits ? __ldcg(recs + int64_t(lane) * (d + 2) + d) : -INFINITY;
  const float lp = lane < splits ? __ldcg(recs + int64_t(lane) * (d + 2) + d + 1) : 0.0f;
  float mx = mp;
  for (int s = 16; s > 0; s >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, s));
  const float weight = lane < splits ? __expf(mp - mx) : 0.0f;
  float total = lp * weight;
  for (int s = 16; s > 0; s >>= 1) total += __shfl_xor_sync(0xffffffffu, total, s);
  float o[D];
#pragma unroll
  for (int t = 0; t < D; t++) o[t] = 0.0f;
  for (int32_t s0 = 0; s0 < splits; s0 += kMergeBatch) {
    float r[kMergeBatch][D];
#pragma unroll
    for (int b = 0; b < kMergeBatch; b++)
#pragma unroll
      for (int t = 0; t < D; t++)
        r[b][t] = s0 + b < splits ? __ldcg(recs + int64_t(s0 + b) * (d + 2) + lane + 32 * t)
                                  : 0.0f;
#pragma unroll
    for (int b = 0; b < kMergeBatch; b++) {
      const float wb = __shfl_sync(0xffffffffu, weight, (s0 + b) & 31);
      if (s0 + b >= splits) break;
#pragma unroll
      for (int t = 0; t < D; t++) o[t] = fmaf(r[b][t], wb, o[t]);
    }
  }
  const float inv = 1.0f / total;
#pragma unroll
  for (int t = 0; t < D; t++) out[lane + 32 * t] = o[t] * inv;
}

// Phase B for one warp: query head h's split p of the first `len` keys, as a record of
// unnormalized sums, running max and softmax sum; the last of the head's splits to finish
// merges them into attn. Lane dims are lane + 32 t (t < D); the RoPE pair of dim t is
// t + D/2 (cos and sin from the table, when roped). The new key and value (position pos) come
// from qkv, not the cache.
template <int D>
__device__ void attention_split(const LayerArgs& a, const float* trig, bool roped, int32_t h,
                                int32_t p, int32_t splits, int32_t slot, int32_t pos,
                                int32_t len) {
  constexpr int kKeys = 32 / D;  // keys per step (their rows in flight together)
  const int lane = threadIdx.x & 31;
  const int32_t d = 32 * D, kvh = h / (a.hq / a.hkv);
  const float* qh = a.qkv + int64_t(h) * d;
  const float* kh = a.qkv + int64_t(a.hq + kvh) * d;
  const float* vh = a.qkv + int64_t(a.hq + a.hkv + kvh) * d;
  float q[D], kn[D], vn[D];
#pragma unroll
  for (int t = 0; t < D; t++) {
    q[t] = __ldcg(qh + lane + 32 * t);
    kn[t] = __ldcg(kh + lane + 32 * t);
    vn[t] = __ldcg(vh + lane + 32 * t);
  }
  if (roped) {
#pragma unroll
    for (int t = 0; t < D / 2; t++) {
      const float cs = trig[lane + 32 * t], sn = trig[kMaxHalf + lane + 32 * t];
      rotate(q[t], q[t + D / 2], cs, sn);
      rotate(kn[t], kn[t + D / 2], cs, sn);
    }
  }
#pragma unroll
  for (int t = 0; t < D; t++) q[t] *= a.scale;
  const int64_t base = ((int64_t(slot) * a.hkv + kvh) * a.l) * d;
  const float* kb = a.k_cache + base;
  const float* vb = a.v_cache + base;
  const int32_t share = (len + splits - 1) / splits;
  const int32_t j_begin = min(len, p * share), j_end = min(len, j_begin + share);
  float m = -INFINITY, lsum = 0.0f, acc[D];
#pragma unroll
  for (int t = 0; t < D; t++) acc[t] = 0.0f;
  for (int32_t j0 = j_begin; j0 < j_end; j0 += kKeys) {
    float kr[kKeys][D], vr[kKeys][D];
#pragma unroll
    for (int u = 0; u < kKeys; u++) {
      const int32_t j = min(j0 + u, j_end - 1);
#pragma unroll
      for (int t = 0; t < D; t++) {  // (the cache row of pos is written in this kernel)
        kr[u][t] = j == pos ? kn[t] : __ldcg(kb + int64_t(j) * d + lane + 32 * t);
        vr[u][t] = j == pos ? vn[t] : __ldcg(vb + int64_t(j) * d + lane + 32 * t);
      }
    }
    float dot[kKeys];
    float mx = m;
#pragma unroll
    for (int u = 0; u < kKeys; u++) {
      dot[u] = 0.0f;
#pragma unroll
      for (int t = 0; t < D; t++) dot[u] = fmaf(q[t], kr[u][t], dot[u]);
      for (int o = 16; o > 0; o >>= 1) dot[u] += __shfl_xor_sync(0xffffffffu, dot[u], o);
      if (j0 + u < j_end) mx = fmaxf(mx, dot[u]);
    }
    const float corr = __expf(m - mx);
    lsum *= corr;
#pragma unroll
    for (int t = 0; t < D; t++) acc[t] *= corr;
#pragma unroll
    for (int u = 0; u < kKeys; u++) {
      if (j0 + u >= j_end) break;
      const float pu = __expf(dot[u] - mx);
      lsum += pu;
#pragma unroll
      for (int t = 0; t < D; t++) acc[t] = fmaf(pu, vr[u][t], acc[t]);
    }
    m = mx;
  }
  float* recs = a.partial + int64_t(h) * a.splits * (d + 2);
  float* rec = recs + int64_t(p) * (d + 2);
#pragma unroll
  for (int t = 0; t < D; t++) rec[lane + 32 * t] = acc[t];
  if (lane == 0) {
    rec[d] = m;  // -inf for a split with no keys (its sums are 0)
    rec[d + 1] = lsum;
  }
  // The head's last split to finish merges (its records visible device-wide before the count
  // that admits it); it sets the count back to 0 for the next call.
  __threadfence();
  __syncwarp();
  int last = 0;
  if (lane == 0) last = atomicAdd(&a.done[h], 1) == splits - 1;
  last = __shfl_sync(0xffffffffu, last, 0);
  if (!last) return;
  if (lane == 0) a.done[h] = 0;
  __threadfence();
  __syncwarp();  // lane 0's fence (after its count) before every lane's reads
  merge_head<D>(a.attn + int64_t(h) * d, recs, splits);
}

template <int D>
__global__ void __launch_bounds__(kLayerThreads, 1) decode_layer_kernel(const LayerArgs a) {
  extern __shared__ __align__(16) uint8_t layer_shared[];
  double* red = reinterpret_cast<double*>(layer_shared);
  float* part = reinterpret_cast<float*>(layer_shared + kPartAt);
  float* trig = reinterpret_cast<float*>(layer_shared + kTrigAt);
  float* vec = reinterpret_cast<float*>(layer_shared + kSharedHeader);
  const int32_t d = 32 * D, half = d / 2, nq = (a.hq + 2 * a.hkv) * d, qd = a.hq * d;
  const int32_t q0 = arl::share_begin(nq), q1 = arl::share_end(nq);
  const int32_t c0 = arl::share_begin(a.c), c1 = arl::share_end(a.c);
  const int32_t f0 = arl::share_begin(a.f), f1 = arl::share_end(a.f);
  // This block's weight rows to L2, in the order the phases read them.
  auto prefetch_gate_up = [&] {
    arl::prefetch_l2(a.w_gu + int64_t(f0) * a.c, int64_t(f1 - f0) * a.c * 2);
    arl::prefetch_l2(a.w_gu + (int64_t(a.f) + f0) * a.c, int64_t(f1 - f0) * a.c * 2);
  };
  auto prefetch_down = [&] {
    arl::prefetch_l2(a.w_down + int64_t(c0) * a.f, int64_t(c1 - c0) * a.f * 2);
  };
  if (a.prefetch != kPrefetchNone) {
    arl::prefetch_l2(a.w_qkv + int64_t(q0) * a.c, int64_t(q1 - q0) * a.c * 2);
    arl::prefetch_l2(a.w_o + int64_t(c0) * qd, int64_t(c1 - c0) * qd * 2);
  }
  if (a.prefetch == kPrefetchAll) {
    prefetch_gate_up();
    prefetch_down();
  }
  // With a.times, block 0 stamps the phases' ends as it sees them (after each barrier).
  const bool timing = a.times != nullptr && blockIdx.x == 0 && threadIdx.x == 0;
  unsigned long long stamp[6] = {};
  if (timing) stamp[0] = global_ns();
  const int32_t slot = *a.slot, pos = *a.position, len = *a.len;
  const bool slot_ok = slot >= 0 && slot < a.s, roped = pos >= 0;
  const bool cached = roped && slot_ok && pos < a.l, attend = slot_ok && len >= 1 && len <= a.l;
  if (blockIdx.x == 0 && threadIdx.x == 0) {  // the calls' deferred errors, the first wins
    if (!roped)
      arl_set_flag(a.flag, a.flag_index, arl::kDeferredNegativePosition, 0);
    else if (!cached)
      arl_set_flag(a.flag, a.flag_index,
                   slot_ok ? arl::kDeferredCachePosition : arl::kDeferredCacheSlot,
                   slot_ok ? uint32_t(pos) : uint32_t(slot));
    else if (!attend)
      arl_set_flag(a.flag, a.flag_index, arl::kDeferredDecodeLen, uint32_t(len));
  }
  // A: qkv = norm(x) . w_qkv^T + b
  norm_to_shared(vec, a.x, a.ln1, a.c, a.eps, red);
  block_gemv<1>(a.w_qkv, 0, vec, a.c, q0, q1, part, [&](int32_t r, const float (&sum)[1]) {
    a.qkv[r] = sum[0] + (a.b_qkv != nullptr ? a.b_qkv[r] : 0.0f);
  });
  // The RoPE angles of this position, for phases B and C (in double: off the weight stream's
  // path, while the other blocks finish A).
  if (roped)
    for (int32_t j = threadIdx.x; j < half; j += blockDim.x)
      rope_trig(j, double(pos), a.theta, d, 1.0, &trig[j], &trig[kMaxHalf + j]);
  arl::grid_barrier(a.barrier);
  if (timing) stamp[1] = global_ns();
  // B: attention, a warp per (head, split), spread over the blocks; one block caches the new
  // keys (roped) and values
  if (a.prefetch == kPrefetchPhase) prefetch_gate_up();
  const int32_t splits =
      min(a.splits, max(1, (len + kLayerMinKeysPerSplit - 1) / kLayerMinKeysPerSplit));
  if (attend) {
    const int32_t unit = int32_t(threadIdx.x >> 5) * int32_t(gridDim.x) + int32_t(blockIdx.x);
    const int32_t h = unit / a.splits, p = unit % a.splits;
    if (h < a.hq && p < splits) attention_split<D>(a, trig, roped, h, p, splits, slot, pos, len);
  }
  if (cached && blockIdx.x == gridDim.x - 1) {
    const int64_t at = (int64_t(slot) * a.hkv * a.l + pos) * d, stride = int64_t(a.l) * d;
    for (int32_t i = threadIdx.x; i < a.hkv * half; i += blockDim.x) {
      const int32_t kvh = i / half, j = i % half;
      const float* kr = a.qkv + int64_t(a.hq + kvh) * d;
      const float* vr = a.qkv + int64_t(a.hq + a.hkv + kvh) * d;
      float k0 = __ldcg(kr + j), k1 = __ldcg(kr + j + half);
      rotate(k0, k1, trig[j], trig[kMaxHalf + j]);
      float* kc = a.k_cache + at + kvh * stride;
      float* vc = a.v_cache + at + kvh * stride;
      kc[j] = k0;
      kc[j + half] = k1;
      vc[j] = __ldcg(vr + j);
      vc[j + half] = __ldcg(vr + j + half);
    }
  }
  arl::grid_barrier(a.barrier);
  if (timing) stamp[2] = global_ns();
  // C: x += attn . w_o^T (attn as the heads' last splits merged it; zeros for a bad row), and
  // each block's share of q and k roped into qkv
  for (int32_t i = threadIdx.x; i < qd; i += blockDim.x)
    vec[i] = attend ? __ldcg(a.attn + i) : 0.0f;
  __syncthreads();
  block_gemv<1>(a.w_o, 0, vec, qd, c0, c1, part,
                [&](int32_t r, const float (&sum)[1]) { a.x[r] = __ldcg(a.x + r) + sum[0]; });
  if (roped) {
    const int32_t pairs = (a.hq + a.hkv) * half;
    const int32_t end = arl::share_end(pairs);
    for (int32_t i = arl::share_begin(pairs) + threadIdx.x; i < end; i += blockDim.x) {
      const int32_t head = i / half, j = i % half;
      float* row = a.qkv + int64_t(head) * d;
      float x0 = __ldcg(row + j), x1 = __ldcg(row + j + half);
      rotate(x0, x1, trig[j], trig[kMaxHalf + j]);
      row[j] = x0;
      row[j + half] = x1;
    }
  }
  if (a.prefetch == kPrefetchPhase) prefetch_down();
  arl::grid_barrier(a.barrier);
  if (timing) stamp[3] = global_ns();
  // D: act = silu(gate) * up of norm(x)
  norm_to_shared(vec, a.x, a.ln2, a.c, a.eps, red);
  block_gemv<2>(a.w_gu, int64_t(a.f) * a.c, vec, a.c, f0, f1, part,
                [&](int32_t r, const float (&sum)[2]) { a.act[r] = arl::silu(sum[0]) * sum[1]; });
  arl::grid_barrier(a.barrier);
  if (timing) stamp[4] = global_ns();
  // E: x += act . w_down^T
  for (int32_t i = threadIdx.x; i < a.f; i += blockDim.x) vec[i] = __ldcg(a.act + i);
  __syncthreads();
  block_gemv<1>(a.w_down, 0, vec, a.f, c0, c1, part,
                [&](int32_t r, const float (&sum)[1]) { a.x[r] = __ldcg(a.x + r) + sum[0]; });
  if (timing) {
    stamp[5] = global_ns();
    for (int i = 0; i < 5; i++) atomicAdd(&a.times[i], stamp[i + 1] - stamp[i]);
    atomicAdd(&a.times[5], 1ull);
  }
}

// How arl_decode_layer_bf16 runs (AGENTRL_CUDA_DECODE_LAYER): the four chained kernels of
// decode_chain.cu (`chain`, the default), this file's one cooperative kernel (`coop`), or the
// separate calls (`steps`, or `0`: a baseline for benchmarks). Shapes a path does not take run
// as the separate calls. An unknown value is reported once and ignored.
enum LayerPath { kPathChain, kPathCoop, kPathSteps };

LayerPath layer_path() {
  static const LayerPath value = [] {
    const int i = arl::env_choice("AGENTRL_CUDA_DECODE_LAYER", {"chain", "coop", "steps", "0"});
    return i == 0 ? kPathChain : i == 1 ? kPathCoop : kPathSteps;
  }();
  return value;
}

// AGENTRL_CUDA_DECODE_PREFETCH: the Prefetch it names, or -1 (unset: chosen by size).
int prefetch_override() {
  static const int value = [] {
    const int i = arl::env_choice("AGENTRL_CUDA_DECODE_PREFETCH", {"all", "phase", "none"}, -1);
    constexpr Prefetch kByName[] = {kPrefetchAll, kPrefetchPhase, kPrefetchNone};
    return i < 0 ? -1 : int(kByName[i]);
  }();
  return value;
}

// AGENTRL_CUDA_DECODE_LAYER_TIMES=1: device sums of the phases' times (ns) and a call count,
// printed as means at exit (null when off).
void print_phase_times(const unsigned long long* host) {
  if (host[5] == 0) return;
  const double n = double(host[5]);
  std::fprintf(stderr,
               "arl_decode_layer_bf16 phases, mean of %llu calls, us (block 0's view; E its "
               "own): A %.2f B %.2f C %.2f D %.2f E %.2f\n",
               host[5], host[0] / n / 1e3, host[1] / n / 1e3, host[2] / n / 1e3,
               host[3] / n / 1e3, host[4] / n / 1e3);
}

arl::TimeSums g_phase_times{"AGENTRL_CUDA_DECODE_LAYER_TIMES", 6, print_phase_times, nullptr, -1};

unsigned long long* phase_times(arl_ctx* ctx) { return arl::time_sums(ctx, g_phase_times); }

// Whether `blocks` blocks of the kernel with `shared` bytes fit the device at once (a
// cooperative launch's condition), asked once per (device, head dim, shared bytes). The
// kernel's shared memory limit only ever rises (a recorded graph may hold a launch with more).
template <int D>
bool layer_grid_fits(arl_ctx* ctx, int blocks, size_t shared) {
  static std::mutex lock;
  static std::map<std::pair<int, size_t>, int> per_sm_known;
  static std::map<int, size_t> limit;  // per device: the shared memory limit set
  std::lock_guard<std::mutex> guard(lock);
  const auto key = std::make_pair(ctx->device, shared);
  auto it = per_sm_known.find(key);
  if (it == per_sm_known.end()) {
    int per_sm = 0;
    size_t& set = limit[ctx->device];
    if (shared > 48 * 1024 && shared > set) {
      if (cudaFuncSetAttribute(decode_layer_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(shared)) == cudaSuccess)
        set = shared;
      else
        cudaGetLastError();
    }
    if ((shared > 48 * 1024 && shared > set) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_layer_kernel<D>,
                                                      kLayerThreads, shared) != cudaSuccess) {
      cudaGetLastError();
      per_sm = 0;
    }
    it = per_sm_known.emplace(key, per_sm).first;
  }
  return int64_t(it->second) * ctx->num_sms >= blocks;
}

// Launches the cooperative grid: ARL_OK, an error, or (when the device refuses a grid this
// size, e.g. under MPS limits, outside a recording) ARL_ERR_UNSUPPORTED with nothing run.
template <int D>
arl_status launch_layer(arl_ctx* ctx, const char* fn, const LayerArgs& args, int blocks,
                        size_t shared) {
  const cudaError_t err = arl::launch_cooperative(ctx, decode_layer_kernel<D>,
                                                  dim3(unsigned(blocks)), dim3(kLayerThreads),
                                                  shared, args);
  if (err == cudaErrorCooperativeLaunchTooLarge && !ctx->capturing) {
    cudaGetLastError();
    return ARL_ERR_UNSUPPORTED;
  }
  return arl::check_launch(ctx, fn);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

extern "C" {

arl_status arl_decode_layer_bf16(arl_ctx* ctx, float* x, float* qkv, float* attn, float* act,
                                 const float* ln1, const uint16_t* w_qkv, const float* b_qkv,
                                 const uint16_t* w_o, const float* ln2, const uint16_t* w_gu,
                                 const uint16_t* w_down, float* k_cache, float* v_cache,
                                 const int32_t* slot, const int32_t* position, const int32_t* len,
                                 int32_t c, int32_t f, int32_t hq, int32_t hkv, int32_t d,
                                 int32_t s, int32_t l, float eps, float theta, float scale) {
  ARL_CTX(ctx);
  ARL_DECODE_LAYER_ARGS(ctx);
  if (layer_path() == kPathChain) {
    const arl_status st = arl::decode_layer_chain(
        ctx, __func__, x, qkv, attn, act, ln1, w_qkv, b_qkv, w_o, ln2, w_gu, w_down, k_cache,
        v_cache, slot, position, len, c, f, hq, hkv, d, s, l, eps, theta, scale);
    if (st != ARL_ERR_UNSUPPORTED) return st;
  }
  // The one-kernel layer where it can run: its shapes, a grid that fits the device at once,
  // the shared memory, and the context's decode buffer (split records, a counter per head, the
  // barrier's word); else the separate calls.
  const int64_t nq = (int64_t(hq) + 2 * hkv) * d, widest = std::max({nq, int64_t(c), int64_t(f)});
  const int blocks =
      int(std::min(int64_t(ctx->num_sms), (widest + kLayerMinRows - 1) / kLayerMinRows));
  const size_t shared =
      kSharedHeader + size_t(std::max({int64_t(c), int64_t(f), int64_t(hq) * d})) * 4;
  const int64_t records = int64_t(arl::decode_records_bytes(ctx) / sizeof(float)) / (d + 2);
  const bool shapes = (d == 64 || d == 128) && c % 8 == 0 && f % 8 == 0 && aligned16(w_qkv) &&
                      aligned16(w_o) && aligned16(w_gu) && aligned16(w_down) && aligned16(x) &&
                      aligned16(qkv) && aligned16(attn) && aligned16(act) &&
                      aligned16(k_cache) && aligned16(v_cache) &&
                      int64_t(hq) <= int64_t(blocks) * kLayerWarps && hq <= ctx->num_sms &&
                      records >= hq && shared <= size_t(ctx->max_smem);
  const bool fits = shapes && layer_path() == kPathCoop && ctx->cooperative &&
                    (d == 64 ? layer_grid_fits<2>(ctx, blocks, shared)
                             : layer_grid_fits<4>(ctx, blocks, shared)) &&
                    arl::decode_buffers(ctx);
  if (fits) {
    const int splits = int(std::min(
        {int64_t(kLayerMaxSplits), records / hq, int64_t(blocks) * kLayerWarps / hq}));
    // The whole layer's weights to L2 at once when they take at most 3/4 of it, else a phase
    // ahead (AGENTRL_CUDA_DECODE_PREFETCH=all|phase|none chooses, for comparing them).
    const int64_t layer_bytes = 2 * (nq * c + int64_t(c) * hq * d + 3 * int64_t(f) * c);
    const int prefetch = prefetch_override() >= 0          ? prefetch_override()
                         : 4 * layer_bytes <= 3 * ctx->l2_bytes ? kPrefetchAll
                                                                 : kPrefetchPhase;
    char* buffer = static_cast<char*>(ctx->decode_partial);
    int* counters = arl::decode_counters(ctx);
    LayerArgs args{x,      qkv,    attn,     act,
                   ln1,    w_qkv,  b_qkv,    w_o,
                   ln2,    w_gu,   w_down,   k_cache,
                   v_cache, slot,  position, len,
                   reinterpret_cast<float*>(buffer),
                   counters,
                   reinterpret_cast<unsigned*>(counters + ctx->num_sms),
                   c,      f,      hq,       hkv,
                   d,      s,      l,        splits,
                   prefetch,
                   phase_times(ctx),
                   eps,    theta,  scale,    ctx->flag,
                   ctx->flag_index};
    const arl_status launched = d == 64 ? launch_layer<2>(ctx, __func__, args, blocks, shared)
                                        : launch_layer<4>(ctx, __func__, args, blocks, shared);
    if (launched != ARL_ERR_UNSUPPORTED) return launched;  // (else the device refused the grid)
  }
  return arl::decode_layer_steps(ctx, x, qkv, attn, act, ln1, w_qkv, b_qkv, w_o, ln2, w_gu,
                                 w_down, k_cache, v_cache, slot, position, len, c, f, hq, hkv, d,
                                 s, l, eps, theta, scale);
}

// arl_decode_layer_norms_bf16 (optional): the chain with its GEMV and norm-and-RoPE kernel
// where the shapes fit it, else the calls.
arl_status arl_decode_layer_norms_bf16(
    arl_ctx* ctx, float* x, float* qkv, float* attn, float* act, const float* ln1,
    const uint16_t* w_qkv, const float* b_qkv, const uint16_t* w_o, const float* ln2,
    const uint16_t* w_gu, const uint16_t* w_down, float* k_cache, float* v_cache,
    const float* q_norm, const float* k_norm, const float* inv_freq, const int32_t* slot,
    const int32_t* position, const int32_t* len, int32_t c, int32_t f, int32_t hq, int32_t hkv,
    int32_t d, int32_t s, int32_t l, float eps, float theta, float scale) {
  ARL_CTX(ctx);
  ARL_DECODE_LAYER_ARGS(ctx);  // (a table entry that is not finite: flagged by the kernel)
  const arl::DecodeNorms norms{q_norm, k_norm, inv_freq};
  // (the chain's path only: the one-kernel layer, `coop`, takes no norms)
  if (layer_path() == kPathChain) {
    const arl_status st = arl::decode_layer_chain(
        ctx, __func__, x, qkv, attn, act, ln1, w_qkv, b_qkv, w_o, ln2, w_gu, w_down, k_cache,
        v_cache, slot, position, len, c, f, hq, hkv, d, s, l, eps, theta, scale, norms);
    if (st != ARL_ERR_UNSUPPORTED) return st;
  }
  return arl::decode_layer_norm_steps(ctx, x, qkv, attn, act, ln1, w_qkv, b_qkv, w_o, ln2, w_gu,
                                      w_down, k_cache, v_cache, q_norm, k_norm, inv_freq, slot,
                                      position, len, c, f, hq, hkv, d, s, l, eps, theta, scale);
}

}  // extern "C"
