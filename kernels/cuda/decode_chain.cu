// arl_decode_layer_bf16's default path on the GPU: one token through a decoder layer as four
// kernels chained by programmatic dependent launch, each loading its weights before it waits
// for the kernel before it, so that a layer's weight stream runs under its kernels' latencies:
//   1  x's RMSNorm, q|k|v, RoPE and the cache write: a warp per RoPE pair of rows (or, for
//      shapes it does not take, the fused GEMV of arl_rmsnorm_qkv_rope_forward_bf16)
//   2  attention and the o projection: block (h, r) takes query head h's key split r (online
//      softmax; a record of its max, sum and unnormalized output), waits for the head's other
//      splits, merges the records, and writes its share r of head h's o-projection partial,
//      part[h] = attn_h . w_o[:, h D ..)^T
//   3  r = x + sum_h part[h], its RMSNorm and act = silu(gate) * up (decode_chain_mlp.cuh):
//      block b copies its slice of the gate and up rows to shared memory before it waits
//   4  x = r + act . w_down^T: block b copies its rows of w_down before it waits (kernel 3 lets
//      it start once kernel 3's own rows are in)
// Kernel 2 also asks L2 for its split's keys and values before its wait. Where the device
// launches thread-block clusters (Hopper), a head's 8 splits are one cluster: the records stay in
// shared memory and the splits meet at the cluster's barrier. Elsewhere (and with
// AGENTRL_CUDA_DECODE_ATTN_CLUSTER=0) the blocks publish their records to global memory and wait
// for each other, so the grid (about one block per SM) must be resident at once: the launch checks
// that it fits, and a wait of 5 s (the device ran part of the grid only, e.g. under an MPS limit
// on SMs) raises a deferred error instead of hanging.
// With AGENTRL_CUDA_DECODE_QKV_IN_ATTN=1 (head dim 64, clusters) kernel 2 does kernel 1's work
// itself (decode_chain_qkv.cuh), and the chain is three kernels.
// Every sum has a fixed order, so x is the same from run to run.
// AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 prints where the kernels' blocks spent their time.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common.cuh"
#include "block_copy.cuh"
#include "decode_chain.cuh"
#include "decode_chain_mlp.cuh"
#include "decode_chain_qkv.cuh"
#include "decode_split.cuh"
#include "env_switch.h"
#include "gemv.cuh"
#include "grid_barrier.cuh"
#include "tail_times.cuh"
#include "time_sums.cuh"

namespace {

using namespace arl::chain;  // kernels 3 and 4, the time spans

constexpr int kAttnThreads = 256;
constexpr int kAttnWarps = kAttnThreads / 32;
constexpr int kKeysPerStep = 4;       // keys a warp loads at once
constexpr int kMaxSplitRows = 128;    // o-projection rows a key split writes at most
constexpr int kAttnMaxSplits = 16;    // key splits a head (their records fit shared memory)
// Kernel 2's shared memory for head dim d, in bytes: q, 32 slots (the warps' maxima and sums),
// the warps' partial outputs, the head's output, a flag, the head's records and (as a cluster)
// the block's own record.
constexpr size_t attn_smem_floats(int d) {
  return d + 32 + kAttnWarps * d + d + 4 + (kAttnMaxSplits + 1) * (d + 2);
}
constexpr size_t attn_smem_bytes(int d) { return 4 * attn_smem_floats(d); }
// With q|k|v in kernel 2, then (16-byte aligned) x and the block's share of q.
constexpr size_t attn_qkv_smem_floats(int d) { return (attn_smem_floats(d) + 3) / 4 * 4; }
constexpr size_t attn_qkv_smem_bytes(int d, int c) {
  return 4 * (attn_qkv_smem_floats(d) + c + d);
}
constexpr int kAttnClusterSplits = 8;  // a head's splits as one thread-block cluster (portable)
// When kernel 2 lets kernel 3 start (and copy its gate and up rows):
// AGENTRL_CUDA_DECODE_ATTN_TRIGGER=start (the default), wait (once kernel 4 of the layer before
// has finished, so that its copy of the down rows does not share the memory system with kernel
// 3's) or merge (once the head's records are merged).
enum AttnTrigger { kAttnTriggerStart, kAttnTriggerWait, kAttnTriggerMerge };
constexpr const char* kAttnTriggerNames[] = {"start", "wait", "merge"};

// Thread-block clusters (Hopper): the head's splits share their records through distributed
// shared memory and meet at the cluster's hardware barrier. arrive and wait are split so that a
// block can work between them; no block may leave while another may still read its records.
// (The CUDA emulator has both, for cluster launches; older GPUs never take this path.)
__device__ inline void cluster_arrive() {
#ifdef AGENTRL_CUDA_EMU
  emu::cluster_arrive();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
__device__ inline void cluster_wait() {
#ifdef AGENTRL_CUDA_EMU
  emu::cluster_wait();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
// The float at the same shared-memory address in the cluster's block `rank`.
__device__ inline float cluster_load(const float* p, int rank) {
#ifdef AGENTRL_CUDA_EMU
  return *static_cast<const float*>(emu::cluster_map(p, unsigned(rank)));
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(p)), remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
#else
  (void)rank;
  return *p;
#endif
}
// Kernel 1 (when C <= kQkvMaxC and a warp's one RoPE pair fits the grid): a warp per pair
// (c, c + d/2) of a head's rows of w_qkv, its two rows held in registers (loaded before pdl_wait,
// with the bias). After the wait each warp loads x and the norm weight, finds the norm itself (no
// block barrier), dots both rows, and lane 0 ropes the pair and writes it and its cache rows
// (rope_pair_store_row, as the fused GEMV does); its position, slot and rotation load before the
// wait.
constexpr int kQkvThreads = 256;
constexpr int kQkvWarps = kQkvThreads / 32;
constexpr int kQkvSteps = 4;  // 16-byte weight loads a lane and row: C <= 32 * 8 * kQkvSteps
constexpr int kQkvMaxC = 32 * 8 * kQkvSteps;

struct QkvArgs {
  float* y;
  const float* x;
  const float* ln1;
  const uint16_t* w;
  const float* bias;
  arl::GemvRope rope;  // the cache, slot, position, heads and flag (one row)
  int32_t c;
  int64_t pairs;
  float eps;
  unsigned long long* times;  // null, or AGENTRL_CUDA_DECODE_CHAIN_TIMES's sums
};

// Kernel 1's time spans (thread 0 of each block, at its end).
__device__ void qkv_spans(unsigned long long* times, unsigned long long t0, unsigned long long t1,
                          unsigned long long t_dot, unsigned long long t2) {
  atomicAdd(times + kSpanQkvEarlyAll, t1 - t0);
  atomicAdd(times + kSpanQkvWorkAll, t2 - t1);
  atomicMax(times + kStampQkvEndMax, t2);
  if (blockIdx.x != 0) return;
  atomicAdd(times + kSpanQkvEarly, t1 - t0);
  atomicAdd(times + kSpanQkvDot, t_dot - t1);
  atomicAdd(times + kSpanQkvWork, t2 - t1);
  const unsigned long long down_last = times[kStampDownEndMax], down0 = times[kStampDownEnd];
  if (down_last != 0 && t1 > down_last && t1 - down_last < 20000) {  // (not across tokens)
    atomicAdd(times + kSpanQkvGap, t1 - down_last);
    atomicAdd(times + kSpanQkvGaps, 1ull);
    if (down_last > down0 && down0 != 0) atomicAdd(times + kSpanDownSpread, down_last - down0);
  }
  times[kStampQkvEnd] = t2;
  times[kSpanQkvBlocks] = gridDim.x;
}

__global__ void __launch_bounds__(kQkvThreads) decode_qkv_kernel(QkvArgs a) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t pair = arl::share_begin(a.pairs) + warp;
  const bool active = pair < arl::share_end(a.pairs);
  const bool all = a.times != nullptr && threadIdx.x == 0;  // (warp 0 always has a pair)
  __shared__ unsigned long long stamps[3];  // (thread 0's start, wait and dot stamps: no registers)
  if (all) stamps[0] = arl::global_ns();
  arl::pdl_trigger();
  const int32_t half = a.rope.d / 2, head = int32_t(active ? pair / half : 0);
  const int32_t o = int32_t(active ? pair % half : 0);
  const int64_t j0 = int64_t(head) * a.rope.d + o, j1 = j0 + half;
  const int32_t chunks = a.c / 8;
  uint4 w0[kQkvSteps], w1[kQkvSteps];
#pragma unroll
  for (int t = 0; t < kQkvSteps; t++) {
    const int32_t i = lane + 32 * t;
    const bool in = active && i < chunks;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    w0[t] = in ? __ldg(reinterpret_cast<const uint4*>(a.w + j0 * a.c) + i) : zero;
    w1[t] = in ? __ldg(reinterpret_cast<const uint4*>(a.w + j1 * a.c) + i) : zero;
  }
  const float b0 = active && a.bias != nullptr ? __ldg(a.bias + j0) : 0.0f;
  const float b1 = active && a.bias != nullptr ? __ldg(a.bias + j1) : 0.0f;
  // The position, the slot and the rotation (lane 0) before the wait too: no kernel of the chain
  // writes positions or slots (the caller's copies, or kernels launched without PDL that have
  // finished), so they are final already.
  arl::RopeRow rope_row{0, 0, 1.0f, 0.0f};
  if (active && lane == 0) {
    const double inv_freq = pow(double(a.rope.theta), -2.0 * o / a.rope.d);  // as rope_trig
    rope_row = arl::rope_row(a.rope, 0, head, inv_freq);
  }
  arl::pdl_wait();
  if (all) stamps[1] = arl::global_ns();
  if (!active) return;
  float4 xv[kQkvSteps][2];
#pragma unroll
  for (int t = 0; t < kQkvSteps; t++) {
    const int32_t i = lane + 32 * t;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    xv[t][0] = i < chunks ? __ldcg(reinterpret_cast<const float4*>(a.x) + 2 * i) : zero;
    xv[t][1] = i < chunks ? __ldcg(reinterpret_cast<const float4*>(a.x) + 2 * i + 1) : zero;
  }
  double ss = 0.0;
  float d0 = 0.0f, d1 = 0.0f;
#pragma unroll
  for (int t = 0; t < kQkvSteps; t++) {
    const int32_t i = lane + 32 * t;
    if (i >= chunks) break;
    const float4 g[2] = {__ldg(reinterpret_cast<const float4*>(a.ln1) + 2 * i),
                         __ldg(reinterpret_cast<const float4*>(a.ln1) + 2 * i + 1)};
    arl::Wide16<uint16_t> u0, u1;
    u0.set(w0[t]);
    u1.set(w1[t]);
    const float xs[8] = {xv[t][0].x, xv[t][0].y, xv[t][0].z, xv[t][0].w,
                         xv[t][1].x, xv[t][1].y, xv[t][1].z, xv[t][1].w};
    const float gs[8] = {g[0].x, g[0].y, g[0].z, g[0].w, g[1].x, g[1].y, g[1].z, g[1].w};
#pragma unroll
    for (int e = 0; e < 8; e++) {
      ss += double(xs[e]) * xs[e];
      const float xn = xs[e] * gs[e];
      d0 = fmaf(u0.v[e], xn, d0);
      d1 = fmaf(u1.v[e], xn, d1);
    }
  }
  for (int s = 16; s > 0; s >>= 1) {
    ss += __shfl_xor_sync(0xffffffffu, ss, s);
    d0 += __shfl_xor_sync(0xffffffffu, d0, s);
    d1 += __shfl_xor_sync(0xffffffffu, d1, s);
  }
  if (all) stamps[2] = arl::global_ns();
  if (lane != 0) return;
  const float rstd = float(1.0 / sqrt(ss / a.c + a.eps));
  arl::rope_pair_store_row(a.y + j0, d0 * rstd + b0, d1 * rstd + b1, head, o, 0,
                           blockIdx.x == 0 && warp == 0, a.rope, rope_row);
  if (all) qkv_spans(a.times, stamps[0], stamps[1], stamps[2], arl::global_ns());
}

struct AttnOArgs {
  float* part;  // (hq, c): each head's o-projection partial
  float* attn;
  float* qkv;   // (written by kernel 2 itself with kQkv)
  const float* k_cache;
  const float* v_cache;
  const uint16_t* w_o;
  const int32_t* slot;
  const int32_t* len;
  float* records;  // (hq, splits) records of D + 2 floats: output, max, sum
  unsigned* barriers;  // per head: its splits' barrier word
  unsigned long long* times;  // null, or AGENTRL_CUDA_DECODE_CHAIN_TIMES's sums
  int32_t c, hq, hkv, s, l, splits;
  float scale;
  int* flag;
  int64_t* flag_index;
  int kv_prefetch;  // ask L2 for the split's keys and values before the wait
  int trigger_at;   // when kernel 3 may start: an AttnTrigger
  // kQkv only: kernel 1's inputs, and a barrier word a kv head (its group_blocks blocks)
  const float* x;
  const float* ln1;
  const uint16_t* w_qkv;
  const float* b_qkv;
  arl::GemvRope rope;
  float eps;
  unsigned* kv_barriers;
};

// The step's tail before a token's first layer (tail_times.cuh), where its stamps came in order
// after the last layer's kernel 4 (down_last: its last block's end) and before t1 (kernel 2's
// wait returns): each span's sum, and a token counted.
__device__ inline void tail_spans(unsigned long long* times, unsigned long long down_last,
                                  unsigned long long t1) {
  using namespace arl;
  const unsigned long long at[8] = {down_last,
                                    times[kTailNormStart],
                                    times[kTailNormEnd],
                                    times[kTailGreedyWait],
                                    times[kTailGreedyEnd],
                                    times[kTailEmbedStart],
                                    times[kTailEmbedEnd],
                                    t1};
#pragma unroll
  for (int i = 1; i < 8; i++)
    if (at[i - 1] == 0 || at[i] < at[i - 1]) return;
#pragma unroll
  for (int i = 0; i < 7; i++) atomicAdd(times + kTailSpanToNorm + i, at[i + 1] - at[i]);
  atomicAdd(times + kTailSpanTokens, 1ull);
}

// Kernel 2: block h * splits + r. Keys as arl_attention_decode splits them; o rows
// [r c / splits, (r + 1) c / splits), D / 8 threads a row (a 16-byte load each). kCluster: the
// head's splits are one cluster (rank r), sharing records in shared memory; else they publish them
// to global memory and meet at group_barrier. (At head dim 64, 64 registers: four blocks an SM,
// as kernel 2 of the next layer must start beside kernels 3 and 4; the stamps would take more.)
template <int D, bool kCluster, bool kQkv = false>
__global__ void __launch_bounds__(kAttnThreads, D == 64 ? (kQkv ? 3 : 4) : 1)
    decode_attn_o_kernel(AttnOArgs a) {
  static_assert(!kQkv || (kCluster && D == kQkvInAttnD &&
                          kAttnWarps == kQkvInAttnQWarps + kQkvInAttnKvWarps),
                "q|k|v in kernel 2: head dim 64, as a cluster, a pair a warp");
  constexpr int kTpr = D / 8, kRowsPerPass = kAttnThreads / kTpr;
  constexpr int kMaxPasses = kMaxSplitRows / kRowsPerPass;  // rows a thread (a 16-byte load each)
  // (dynamic shared memory: the CUDA emulator runs a cooperative launch's blocks at once, and
  // its static __shared__ arrays would be one for all of them)
  extern __shared__ float4 attn_smem[];
  float* qs = reinterpret_cast<float*>(attn_smem);
  float* red = qs + D;
  float(*partial)[D] = reinterpret_cast<float(*)[D]>(red + 32);
  float* head_out = red + 32 + kAttnWarps * D;
  int& passed = *reinterpret_cast<int*>(head_out + D);  // (the barrier's outcome)
  int& len_early = *reinterpret_cast<int*>(head_out + D + 1);  // (kQkv: len, read before the wait)
  float* merged = head_out + D + 4;  // the head's records (splits of D + 2)
  float* own = merged + kAttnMaxSplits * (D + 2);  // (as a cluster: this block's record)
  float* xs = reinterpret_cast<float*>(attn_smem) + attn_qkv_smem_floats(D);  // (kQkv: x ln1)
  float* qsh = xs + a.c;  // (kQkv: this block's share of the head's q)
  const int tid = threadIdx.x;
  const bool timing = a.times != nullptr && blockIdx.x == 0 && tid == 0;
  const unsigned long long t0 = a.times != nullptr && tid == 0 ? arl::global_ns() : 0;
  const int h = int(blockIdx.x) / a.splits, r = int(blockIdx.x) % a.splits;
  const int32_t row0 = int32_t(int64_t(r) * a.c / a.splits);
  const int32_t row1 = int32_t(int64_t(r + 1) * a.c / a.splits);
  if (a.trigger_at == kAttnTriggerStart) arl::pdl_trigger();
  // The split's keys and values into L2 before the wait (a hint): the slot and the length are
  // final already (the caller's copies), and L2 sees kernel 1's write of the new row anyway.
  if (a.kv_prefetch && tid == 0) {
    const int32_t slot = a.slot[0], len = a.len[0];
    if (slot >= 0 && slot < a.s && len >= 1 && len <= a.l) {
      const int32_t share = (len + a.splits - 1) / a.splits;
      const int32_t j_begin = min(len, r * share), j_end = min(len, j_begin + share);
      const int64_t at = ((int64_t(slot) * a.hkv + h / (a.hq / a.hkv)) * a.l + j_begin) * D;
      arl::prefetch_l2(a.k_cache + at, int64_t(j_end - j_begin) * D * 4);
      arl::prefetch_l2(a.v_cache + at, int64_t(j_end - j_begin) * D * 4);
    }
  }
  // This split's rows of head h's columns of w_o (weights: before pdl_wait).
  // (with kQkv, after the q|k|v rows: their weights come first, in the same registers)
  const int sub = tid % kTpr, group = tid / kTpr;
  const int64_t hd = int64_t(a.hq) * D;
  uint4 wreg[kMaxPasses];
  const auto load_w_o = [&] {
#pragma unroll
    for (int p = 0; p < kMaxPasses; p++) {
      const int32_t row = row0 + p * kRowsPerPass + group;
      wreg[p] = row < row1
                    ? __ldg(reinterpret_cast<const uint4*>(a.w_o + row * hd + h * D) + sub)
                    : make_uint4(0, 0, 0, 0);
    }
  };
  [[maybe_unused]] QkvPair pair;
  // (kQkv: the warps' rotations, in the head records' space, unused as a cluster)
  arl::RopeRow* rotations = reinterpret_cast<arl::RopeRow*>(merged);
  if constexpr (kQkv) {
    const int32_t group_size = a.hq / a.hkv, kv_head = h / group_size;
    const int32_t group_block = (h % group_size) * a.splits + r;
    const int32_t group_blocks = group_size * a.splits;
    // The length before the wait too, as the slot and the position in the rotations: no kernel of
    // the chain writes them (the caller's copies, or kernels without PDL that have finished), so
    // after the wait the block reads all three from shared memory, not L2.
    if (tid == 0) len_early = a.len[0];
    qkv_pair_rotations<kAttnWarps>(rotations, h, r, group_block, group_blocks, kv_head, a.rope);
    qkv_pair_rows(tid >> 5, h, r, group_block, group_blocks, a.hq, a.hkv, kv_head, pair.head,
                  pair.o);
    qkv_pair_load(pair, a.w_qkv, a.b_qkv, a.c, tid & 31);
  } else {
    load_w_o();
  }
  arl::pdl_wait();
  if (a.trigger_at == kAttnTriggerWait) arl::pdl_trigger();
  const bool all = a.times != nullptr && tid == 0;
  const unsigned long long t1 = all ? arl::global_ns() : 0;
  if (all) atomicAdd(a.times + kSpanAttnEarlyAll, t1 - t0);
  float qv;
  [[maybe_unused]] unsigned kv_before = 0;  // (kQkv, thread 0: the kv head's word as found)
  if constexpr (kQkv) {
    // kernel 1's part: x in shared memory, the block's pairs, its k and v rows counted in on
    // the kv head's word, and q from the cluster's blocks
    const float rstd = qkv_norm_input<kAttnWarps>(xs, reinterpret_cast<double*>(partial), a.x,
                                                  a.ln1, a.c, a.eps);
    // (block 0's q phase split, only where the block goes on to count the layer at its end:
    // a good slot and length, known before the wait)
    // (every block's thread 0: its pairs, and its time from the cluster's arrival to passing its
    // barrier, which holds its kv word's atomic, as -arrive + passed so that no stamp is held)
    const bool split_q = all && rotations[0].slot >= 0 && rotations[0].slot < a.s &&
                         len_early >= 1 && len_early <= a.l;
    if (split_q && timing) atomicAdd(a.times + kSpanAttnNormed, arl::global_ns() - t1);
    qkv_pair_store(pair, rotations[tid >> 5], xs, rstd, a.c, a.qkv, qsh,
                   blockIdx.x == 0 && tid < 32, a.rope, tid & 31);
    load_w_o();
    __syncthreads();
    if (split_q) {
      const unsigned long long now = arl::global_ns();
      if (timing) atomicAdd(a.times + kSpanAttnPairs, now - t1);
      atomicAdd(a.times + kSpanAttnPairsAll, now - t1);
      atomicAdd(a.times + kSpanAttnClusterAll, 0ull - now);
    }
    // The cluster's arrival first, so that the kv head's fence and atomic overlap its barrier;
    // only the split that holds the new position waits for the kv word, so only it needs the word
    // as found (the others signal with a release reduction).
    cluster_arrive();
    if (tid == 0) {
      const int32_t group_size = a.hq / a.hkv, pos = rotations[0].pos, n = len_early;
      // (the wait's key range below, in arithmetic that cannot overflow on a bad len; a bad
      // len or position only decides which of the two counts the block in)
      const int32_t share = n >= 1 ? (n - 1) / a.splits + 1 : 0, j0 = min(n, r * share);
      unsigned* word = a.kv_barriers + h / group_size;
      const unsigned count = unsigned(group_size * a.splits);
      const bool leader = h % group_size == 0 && r == 0;
      if (n >= 1 && pos >= j0 && pos - j0 < min(share, n - j0))
        kv_before = arl::group_arrive(word, count, leader);
      else
        arl::group_signal(word, count, leader);
    }
    cluster_wait();
    if (split_q) atomicAdd(a.times + kSpanAttnClusterAll, arl::global_ns());
    qv = tid < D ? cluster_load(qsh + tid, q_owner(tid)) * a.scale : 0.0f;
  } else {
    // q goes with the slot and the length (one round trip), before they are checked
    qv = tid < D ? a.qkv[h * D + tid] * a.scale : 0.0f;
  }
  // (kQkv: warp 0 always has a q pair, so its rotation holds the slot and the position)
  const int32_t slot = kQkv ? rotations[0].slot : a.slot[0], len = kQkv ? len_early : a.len[0];
  if (slot < 0 || slot >= a.s || len < 1 || len > a.l) {  // every block returns (no waits)
    if (tid == 0 && blockIdx.x == 0) {
      const bool bad_slot = slot < 0 || slot >= a.s;
      arl_set_flag(a.flag, a.flag_index,
                   bad_slot ? arl::kDeferredDecodeSlot : arl::kDeferredDecodeLen,
                   int64_t(uint32_t(bad_slot ? slot : len)));
    }
    // no attention: its rows of the head's partial are 0 (kernel 3 adds them)
    for (int32_t row = row0 + tid; row < row1; row += kAttnThreads)
      a.part[int64_t(h) * a.c + row] = 0.0f;
    if constexpr (kQkv) {  // (the cluster's blocks have read this one's q)
      cluster_arrive();
      cluster_wait();
    }
    return;
  }
  if (tid < D) qs[tid] = qv;
  const int32_t kvh = h / (a.hq / a.hkv);
  const float* kb = a.k_cache + (int64_t(slot) * a.hkv + kvh) * a.l * D;
  const float* vb = a.v_cache + (int64_t(slot) * a.hkv + kvh) * a.l * D;
  __syncthreads();
  // (block 0's phase ends go to memory, not registers; the spans are summed at its end)
  const auto phase = [&](Span stamp) {
    if (timing) a.times[stamp] = arl::global_ns();
  };
  phase(kStampAttnQ);
  // The warps' online softmax over the split's keys (kernel 1 wrote the new row: read through
  // L2), then the split's record.
  const int32_t share = (len + a.splits - 1) / a.splits;
  const int32_t j_begin = min(len, r * share), j_end = min(len, j_begin + share);
  if constexpr (kQkv) {
    // the split that holds the new position waits until its kv head's rows are in the cache
    const int32_t pos = rotations[0].pos;
    if (pos >= j_begin && pos < j_end) {
      if (tid == 0 && !arl::group_wait(a.kv_barriers + kvh, kv_before, arl::kGridStallNs))
        arl_set_flag(a.flag, a.flag_index, arl::kDeferredDecodeStall, h);
      __syncthreads();
    }
  }
  arl::split_softmax<D, kAttnWarps, kKeysPerStep>(qs, kb, vb, j_begin, j_end, partial, red);
  phase(kStampAttnKv);
  // (every block: its barrier's wait, as -start + end, so that no stamp is held)
  if (all) atomicAdd(a.times + kSpanAttnBarrierAll, 0ull - arl::global_ns());
  float* rec = kCluster ? own : a.records + int64_t(blockIdx.x) * (D + 2);
  arl::split_record<D, kAttnWarps>(partial, red, rec);
  // Both merges below: each of the first D threads weighs its element of every split's record
  // by exp(max_q - max), q in order, and stores num / den here.
  const auto merge = [&](float num, float den) {
    head_out[tid] = num / den;
    if (r == 0) a.attn[h * D + tid] = num / den;
  };
  if constexpr (kCluster) {
    // Wait for the cluster's records and read what this thread needs of each straight from its
    // block's shared memory (one round trip), then let the others go (each waits for that at
    // its end, before it leaves).
    cluster_arrive();
    cluster_wait();
    if (all) atomicAdd(a.times + kSpanAttnBarrierAll, arl::global_ns());
    phase(kStampAttnBarrier);
    if (tid < D) {
      float o[kAttnClusterSplits], m[kAttnClusterSplits], l[kAttnClusterSplits];
#pragma unroll
      for (int q = 0; q < kAttnClusterSplits; q++) {
        o[q] = cluster_load(own + tid, q);
        m[q] = cluster_load(own + D, q);
        l[q] = cluster_load(own + D + 1, q);
      }
      float mx = -INFINITY;
#pragma unroll
      for (int q = 0; q < kAttnClusterSplits; q++) mx = fmaxf(mx, m[q]);
      float num = 0.0f, den = 0.0f;
#pragma unroll
      for (int q = 0; q < kAttnClusterSplits; q++) {
        const float wq = __expf(m[q] - mx);
        den = fmaf(wq, l[q], den);
        num = fmaf(wq, o[q], num);
      }
      merge(num, den);
    }
    cluster_arrive();
  } else {
    // Publish the record and wait for the head's other splits (split 0 leads their barrier).
    if (!arl::group_barrier(a.barriers + h, a.splits, r == 0, arl::kGridStallNs, &passed)) {
      if (tid == 0) arl_set_flag(a.flag, a.flag_index, arl::kDeferredDecodeStall, h);
      return;
    }
    if (all) atomicAdd(a.times + kSpanAttnBarrierAll, arl::global_ns());
    phase(kStampAttnBarrier);
    // the head's records, all loaded at once (one round trip), then merged
    const float* recs = a.records + int64_t(h) * a.splits * (D + 2);
    for (int i = tid; i < a.splits * (D + 2); i += kAttnThreads) merged[i] = __ldcg(recs + i);
    __syncthreads();
    if (tid < D) {
      float mx = -INFINITY;
      for (int q = 0; q < a.splits; q++) mx = fmaxf(mx, merged[q * (D + 2) + D]);
      float num = 0.0f, den = 0.0f;
      for (int q = 0; q < a.splits; q++) {
        const float* rq = merged + q * (D + 2);
        const float wq = __expf(rq[D] - mx);
        den = fmaf(wq, rq[D + 1], den);
        num = fmaf(wq, rq[tid], num);
      }
      merge(num, den);
    }
  }
  __syncthreads();
  phase(kStampAttnMerge);
  if (a.trigger_at == kAttnTriggerMerge) arl::pdl_trigger();
  float hv[8];
#pragma unroll
  for (int e = 0; e < 8; e++) hv[e] = head_out[sub * 8 + e];
  float* part = a.part + int64_t(h) * a.c;
#pragma unroll
  for (int p = 0; p < kMaxPasses; p++) {
    if (row0 + p * kRowsPerPass >= row1) break;  // (the same for the whole block)
    const int32_t row = row0 + p * kRowsPerPass + group;
    arl::Wide16<uint16_t> wv;
    wv.set(wreg[p]);
    float v = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; e++) v = fmaf(wv.v[e], hv[e], v);
    for (int o = kTpr / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (sub == 0 && row < row1) part[row] = v;
  }
  if constexpr (kCluster) cluster_wait();  // (the cluster's blocks have copied this one's record)
  if (timing) {
    const unsigned long long t2 = arl::global_ns(), down_end = a.times[kStampDownEnd];
    atomicAdd(a.times + kSpanAttnEarly, t1 - t0);
    atomicAdd(a.times + kSpanAttnWork, t2 - t1);
    const unsigned long long* at = a.times;
    atomicAdd(a.times + kSpanAttnQ, at[kStampAttnQ] - t1);
    atomicAdd(a.times + kSpanAttnKv, at[kStampAttnKv] - at[kStampAttnQ]);
    atomicAdd(a.times + kSpanAttnBarrier, at[kStampAttnBarrier] - at[kStampAttnKv]);
    atomicAdd(a.times + kSpanAttnMerge, at[kStampAttnMerge] - at[kStampAttnBarrier]);
    const unsigned long long qkv_last = a.times[kStampQkvEndMax], qkv0 = a.times[kStampQkvEnd];
    if (qkv_last != 0 && t1 > qkv_last && t1 - qkv_last < 20000) {
      atomicAdd(a.times + kSpanAttnAfterQkv, t1 - qkv_last);
      if (qkv_last > qkv0 && qkv0 != 0) atomicAdd(a.times + kSpanQkvSpread, qkv_last - qkv0);
    }
    // kernel 4 of the layer before: its last block's end to this wait, and its blocks' spread
    const unsigned long long down_last = a.times[kStampDownEndMax];
    if (kQkv && down_last != 0 && t1 > down_last && t1 - down_last < 20000 &&
        down_last >= down_end) {
      atomicAdd(a.times + kSpanAttnAfterDown, t1 - down_last);
      atomicAdd(a.times + kSpanAttnDownSpread, down_last - down_end);
      atomicAdd(a.times + kSpanAttnDownGaps, 1ull);
    }
    // (20 us or more: across tokens; 2 ms or more: between runs, not counted)
    if (down_end != 0 && t1 > down_end && t1 - down_end < 2000000) {
      const bool token = t1 - down_end >= 20000;
      atomicAdd(a.times + (token ? kSpanTokenGap : kSpanAttnGap), t1 - down_end);
      if (token) {
        atomicAdd(a.times + kSpanTokens, 1ull);
        tail_spans(a.times, down_last, t1);
      }
    }
    a.times[kStampAttnEnd] = t2;
    a.times[kSpanAttnBlocks] = gridDim.x;
    if (kQkv) {
      atomicAdd(a.times + kSpanQkvInAttn, 1ull);
      atomicAdd(a.times + kSpanAttnQInAttn, at[kStampAttnQ] - t1);
    }
  }
}

// The weights a kernel of the chain reads (for its L2 window: launch_pdl_reading).
struct WeightsRead {
  const void* w;
  size_t bytes;
};

// Launches kernel 2. Its blocks wait for each other: in the CUDA emulator (which otherwise runs a
// launch's blocks one at a time) a cooperative launch runs them together.
template <typename... P, typename... A>
void launch_waiting(arl_ctx* ctx, WeightsRead read, void (*kernel)(P...), dim3 grid, dim3 block,
                    size_t shared, A... args) {
#ifdef AGENTRL_CUDA_EMU
  (void)read;
  arl::launch_cooperative(ctx, kernel, grid, block, shared, args...);
#else
  arl::launch_pdl_reading(ctx, read.w, read.bytes, kernel, grid, block, shared, args...);
#endif
}

// The launch attribute of clusters of `cluster_x` blocks (along x).
cudaLaunchAttribute cluster_attribute(int cluster_x) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = unsigned(cluster_x);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  return attribute;
}

// Launches kernel 2 as clusters of `cluster_x` blocks (with programmatic dependent launch as
// launch_pdl would, and the L2 window of what it reads as launch_pdl_reading would).
template <typename... P, typename... A>
void launch_cluster(arl_ctx* ctx, WeightsRead read, void (*kernel)(P...), dim3 grid, dim3 block,
                    size_t shared, int cluster_x, A... args) {
  cudaLaunchAttribute attributes[3] = {cluster_attribute(cluster_x)};
  unsigned count = 1;
  if (ctx->pdl && ctx->capturing) attributes[count++] = arl::pdl_attribute();
  if (arl::l2_window_attribute(ctx, read.w, read.bytes, &attributes[count])) count++;
  arl::launch_attributes(ctx, kernel, grid, block, shared, attributes, count, args...);
}

// Once per (device, what): an attribute of a kernel set, or its occupancy asked of the runtime
// (-1 when that fails).
std::mutex g_chain_lock;
std::map<std::pair<int, std::string>, int> g_chain_cache;

template <typename F>
int cached(int device, const std::string& key, F ask) {
  std::lock_guard<std::mutex> guard(g_chain_lock);
  const auto it = g_chain_cache.find({device, key});
  if (it != g_chain_cache.end()) return it->second;
  const int value = ask();
  g_chain_cache[{device, key}] = value;
  return value;
}

template <int D>
int attn_blocks_per_sm() {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_attn_o_kernel<D, false>,
                                                    kAttnThreads, attn_smem_bytes(D)) !=
      cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return per_sm;
}


// AGENTRL_CUDA_DECODE_CHAIN_QKV=gemv: kernel 1 is the fused GEMV of
// arl_rmsnorm_qkv_rope_forward_bf16 (288 blocks for Qwen2.5-0.5B) instead of decode_qkv_kernel
// (a warp a RoPE pair, a block per SM): a baseline for benchmarks.
bool qkv_gemv() {
  static const bool value =
      arl::env_choice("AGENTRL_CUDA_DECODE_CHAIN_QKV", {"pairs", "gemv"}) == 1;
  return value;
}

// Whether kernel 2 runs a head's splits as a thread-block cluster: the device launches clusters
// (Hopper and later, and the CUDA emulator) and AGENTRL_CUDA_DECODE_ATTN_CLUSTER is not 0.
bool attn_cluster(arl_ctx* ctx) {
  static const bool allowed = arl::env_flag("AGENTRL_CUDA_DECODE_ATTN_CLUSTER", true);
  return allowed && cached(ctx->device, "cluster launch", [ctx] {
    int yes = 0;
    if (cudaDeviceGetAttribute(&yes, cudaDevAttrClusterLaunch, ctx->device) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return yes;
  }) != 0;
}

// Kernels 1 and 2 ask for the largest shared-memory carveout, as kernels 3 and 4 need it: an SM
// configured for less could not take their blocks (and start their copies) while 1 and 2 run.
template <typename K>
int prefer_shared(K kernel) {
#ifndef AGENTRL_CUDA_EMU
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                           int(cudaSharedmemCarveoutMaxShared)) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
#else
  (void)kernel;
#endif
  return 1;
}

// Kernel 2 finds the q|k|v rows itself (decode_chain_qkv.cuh) where it fits, and kernel 1 is not
// launched: the default since session 18 (1.020x batch-1 decode on an H100);
// AGENTRL_CUDA_DECODE_QKV_IN_ATTN=0 keeps kernel 1 (a baseline).
bool qkv_in_attn_asked() {
  static const bool value = arl::env_flag("AGENTRL_CUDA_DECODE_QKV_IN_ATTN", true);
  return value;
}

// Whether `clusters` clusters of kernel 2 with q|k|v (its blocks wait for other clusters' k and v
// rows) can all be resident at once on the device, for x of c floats.
bool qkv_in_attn_resident(arl_ctx* ctx, int c, int clusters) {
#ifdef AGENTRL_CUDA_EMU
  (void)ctx, (void)c, (void)clusters;
  return true;  // (the emulator runs a cluster launch's blocks together)
#else
  const int most = cached(ctx->device, "clusters qkv in attn " + std::to_string(c), [ctx, c] {
    auto kernel = decode_attn_o_kernel<64, true, true>;
    prefer_shared(kernel);  // (as launched)
    const size_t shared = attn_qkv_smem_bytes(64, c);  // (under 48 KB: no attribute to set)
    cudaLaunchAttribute attribute = cluster_attribute(kAttnClusterSplits);
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(unsigned(kAttnClusterSplits));
    config.blockDim = dim3(kAttnThreads);
    config.dynamicSmemBytes = shared;
    config.attrs = &attribute;
    config.numAttrs = 1;
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &config) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  });
  return clusters <= most;
#endif
}

// AGENTRL_CUDA_DECODE_KV_PREFETCH=0: kernel 2 does not ask L2 for its keys and values before its
// wait (a baseline for benchmarks).
bool kv_prefetch() {
  static const bool value = arl::env_flag("AGENTRL_CUDA_DECODE_KV_PREFETCH", true);
  return value;
}

// AGENTRL_CUDA_DECODE_NEXT_QKV=1: kernel 4 asks L2 for the next layer's q|k|v rows (when the
// layers come in one arl_decode_layers_bf16 call), so that kernel 1 of that layer finds them
// there (off by default until a GPU times it).
bool next_qkv_asked() {
  static const bool value = arl::env_flag("AGENTRL_CUDA_DECODE_NEXT_QKV", false);
  return value;
}

// Kernel 3 lets kernel 4 start (and copy its weights) only once its own gate and up rows are in,
// so that their copies do not share the memory system (1-5% faster on the H100);
// AGENTRL_CUDA_DECODE_MLP_TRIGGER=early lets it start at kernel 3's start (a baseline).
bool mlp_late_trigger() {
  static const bool value =
      arl::env_choice("AGENTRL_CUDA_DECODE_MLP_TRIGGER", {"late", "early"}) == 0;
  return value;
}

int attn_trigger_at() {
  static const int value = arl::env_choice("AGENTRL_CUDA_DECODE_ATTN_TRIGGER", kAttnTriggerNames,
                                           int(std::size(kAttnTriggerNames)));
  return value;
}

// AGENTRL_CUDA_DECODE_DOWN_TRIGGER=rows: kernel 4 lets kernel 2 of the next layer start only once
// its own down rows are in (default start: at its start).
bool down_late_trigger() {
  static const bool value =
      arl::env_choice("AGENTRL_CUDA_DECODE_DOWN_TRIGGER", {"start", "rows"}) == 1;
  return value;
}

// AGENTRL_CUDA_DECODE_MLP_PIECES=2|4: kernel 3's rows come in that many pieces, each on its own
// mbarrier, and its warps dot each piece as it lands (an experiment; 1 by default).
int mlp_pieces() {
  static const int value =
      1 << arl::env_choice("AGENTRL_CUDA_DECODE_MLP_PIECES", {"1", "2", "4"});
  return value;
}

// Kernel 3's warps dot 5 rows at once (1 or 2 pieces only): one pass for Qwen2.5-0.5B's 74 rows
// a block, x read once; 1.019x and 1.023x batch-1 decode over 4 rows on the H100 (session 25).
// AGENTRL_CUDA_DECODE_MLP_DOT_ROWS=4 dots 4 rows at once, as before.
bool mlp_wide_dots() {
  static const bool value =
      arl::env_choice("AGENTRL_CUDA_DECODE_MLP_DOT_ROWS", {"4", "5"}, 1) == 1;
  return value;
}

// Kernel 3 for rows in `pieces` pieces (1, 2 or 4), its warps at kDotRowsWide rows at once where
// `wide` (not with 4 pieces, which would spill).
using GateUpKernel = void (*)(MlpArgs);
GateUpKernel gate_up_kernel(int pieces, bool wide) {
  if (pieces == 4) return decode_gate_up_kernel<4, kDotRows>;
  if (pieces == 2)
    return wide ? decode_gate_up_kernel<2, kDotRowsWide> : decode_gate_up_kernel<2, kDotRows>;
  return wide ? decode_gate_up_kernel<1, kDotRowsWide> : decode_gate_up_kernel<1, kDotRows>;
}

// AGENTRL_CUDA_DECODE_MLP_PACE=1|2|3 (with _MLP_PIECES=2|4, on Hopper): kernel 3 keeps only that
// many of its pieces in flight before its wait, issuing each next one as one lands (an
// experiment, off: does its 17 MB one-shot copy delay the other kernels' loads?).
int mlp_pace() {
  static const int value = arl::env_int("AGENTRL_CUDA_DECODE_MLP_PACE", 0, kMlpMaxPieces - 1, 0);
  return value;
}

// AGENTRL_CUDA_DECODE_MLP_PER_SM=1..4 (default 2): the most blocks an SM kernels 3 and 4 may
// take, where a block's weights do not fit in one SM's shared memory (wider MLPs); a layer that
// needs more takes the separate calls. Past one, the blocks run in waves, each copying its rows
// only once the wave before has left. On an H100 (bench/results/gpu/h100_run29): two waves of
// kernel 3 (Qwen2.5-1.5B) decode 1.022-1.025x as fast as the separate calls, three of kernel 3
// and two of kernel 4 (Llama-3.2-1B) 0.83x, four and two (Qwen2.5-3B) 0.88x. (Past 2, an
// experiment: three and two waves are checked against the CPU library in the emulator only.)
int mlp_per_sm_cap() {
  static const int value = arl::env_int("AGENTRL_CUDA_DECODE_MLP_PER_SM", 1, kMlpMaxPerSm, 2);
  return value;
}

// AGENTRL_CUDA_DECODE_MLP_FUSED=1: kernels 3 and 4 as one (decode_mlp_fused_kernel), where a block
// an SM holds its gate|up rows and its down columns (an experiment, off).
bool mlp_fused_asked() {
  static const bool value = arl::env_flag("AGENTRL_CUDA_DECODE_MLP_FUSED", false);
  return value;
}

// AGENTRL_CUDA_DECODE_DOWN_PIECES=1: kernel 4's rows come by each warp's columns, each on its
// own mbarrier, and each warp starts once its own columns are in (an experiment, off).
bool down_pieces_asked() {
  static const bool value = arl::env_flag("AGENTRL_CUDA_DECODE_DOWN_PIECES", false);
  return value;
}

// AGENTRL_CUDA_DECODE_CHAIN_TIMES=1: the device sums of Span, printed as means at exit (null when
// off).
void print_chain_times(const unsigned long long* host) {
  if (host[kSpanCount] == 0) return;
  const double n = double(host[kSpanCount]) * 1e3;
  const double na = n * double(host[kSpanAttnBlocks]), nm = n * double(host[kSpanMlpBlocks]);
  const double nd = n * double(host[kSpanDownBlocks]);
  std::fprintf(stderr,
               "decode chain, means over all blocks, us: attention early %.2f; MLP early %.2f, "
               "gate|up in %.2f, act %.2f; down early %.2f, work %.2f\n",
               host[kSpanAttnEarlyAll] / na, host[kSpanMlpEarlyAll] / nm,
               host[kSpanMlpGateUpAll] / nm, host[kSpanMlpActAll] / nm,
               host[kSpanDownEarlyAll] / nd, host[kSpanDownWorkAll] / nd);
  std::fprintf(stderr,
               "decode chain, mean of %llu layers, us (block 0): attention early %.2f, work %.2f, "
               "after the layer before %.2f; MLP early %.2f, after attention %.2f, gate|up in "
               "%.2f, act %.2f; down early %.2f, after act %.2f, work %.2f\n",
               host[kSpanCount], host[kSpanAttnEarly] / n, host[kSpanAttnWork] / n,
               host[kSpanAttnGap] / n, host[kSpanMlpEarly] / n, host[kSpanMlpGap] / n,
               host[kSpanMlpGateUp] / n, host[kSpanMlpAct] / n, host[kSpanDownEarly] / n,
               host[kSpanDownGap] / n, host[kSpanDownWork] / n);
  if (host[kSpanQkvBlocks] != 0) {
    const double nq = n * double(host[kSpanQkvBlocks]);
    const double ng = 1e3 * double(std::max(1ull, host[kSpanQkvGaps]));
    std::fprintf(stderr,
                 "decode chain, kernel 1, us: early %.2f (block 0), %.2f (mean); after kernel 4's "
                 "last block %.2f (kernel 4's last block ends %.2f after its block 0); dots "
                 "summed %.2f, rows stored %.2f (block 0), %.2f (mean); its last block ends %.2f "
                 "after block 0; kernel 2's wait returns %.2f after that\n",
                 host[kSpanQkvEarly] / n, host[kSpanQkvEarlyAll] / nq, host[kSpanQkvGap] / ng,
                 host[kSpanDownSpread] / ng, host[kSpanQkvDot] / n, host[kSpanQkvWork] / n,
                 host[kSpanQkvWorkAll] / nq, host[kSpanQkvSpread] / n,
                 host[kSpanAttnAfterQkv] / n);
  }
  if (host[kSpanQkvInAttn] != 0) {
    // (kernel 2's q, slot and length span, split, over the layers with q|k|v in kernel 2)
    const double nk = 1e3 * double(host[kSpanQkvInAttn]);
    const double nkb = nk * double(host[kSpanAttnBlocks]);
    std::fprintf(stderr,
                 "decode chain, q|k|v rows found by kernel 2 (no kernel 1): %llu layers; from "
                 "its wait, us (block 0): x and its norm %.2f, then its pairs dotted and stored "
                 "%.2f, then the cluster's barrier and q %.2f; means over blocks: pairs stored "
                 "%.2f from the wait, at the cluster's barrier (arrive to passed, thread 0's kv "
                 "word between) %.2f\n",
                 host[kSpanQkvInAttn], host[kSpanAttnNormed] / nk,
                 (host[kSpanAttnPairs] - host[kSpanAttnNormed]) / nk,
                 (host[kSpanAttnQInAttn] - host[kSpanAttnPairs]) / nk,
                 host[kSpanAttnPairsAll] / nkb, host[kSpanAttnClusterAll] / nkb);
  }
  std::fprintf(stderr,
               "decode chain, kernel 3, us from its wait: r and its norm's sum %.2f (block 0), "
               "%.2f (mean), then its %s in by %.2f (block 0), %.2f (mean), every warp's dots "
               "done by %.2f (block 0); kernel 4: act's first pairs and %s in %.2f (block 0), "
               "%.2f (mean)\n",
               host[kSpanMlpResidual] / n, host[kSpanMlpResidualAll] / nm,
               host[kSpanMlpPieced] != 0 ? "rows' first piece" : "rows", host[kSpanMlpGateUp] / n,
               host[kSpanMlpGateUpAll] / nm, host[kSpanMlpDots] / n,
               host[kSpanDownPieced] != 0 ? "warp 0's columns" : "its rows",
               host[kSpanDownLanded] / n,
               host[kSpanDownLandedAll] / nd);
  if (host[kSpanDownPieced] != 0)
    std::fprintf(stderr, "decode chain, kernel 4's rows by its warps' columns: %llu layers\n",
                 host[kSpanDownPieced]);
  if (host[kSpanMlpPieced] != 0)
    std::fprintf(stderr, "decode chain, kernel 3's rows in %llu pieces: %llu layers\n",
                 host[kSpanMlpPieces], host[kSpanMlpPieced]);
  if (host[kSpanMlpPaced] != 0)
    std::fprintf(stderr,
                 "decode chain, kernel 3 kept %llu of its pieces in flight before its wait: %llu "
                 "layers\n",
                 host[kSpanMlpPace], host[kSpanMlpPaced]);
  if (host[kSpanMlpWide] != 0)
    std::fprintf(stderr, "decode chain, kernel 3's warps dot %d rows at once: %llu layers\n",
                 kDotRowsWide, host[kSpanMlpWide]);
  if (host[kSpanAttnDownGaps] != 0) {
    const double nk = 1e3 * double(host[kSpanAttnDownGaps]);
    std::fprintf(stderr,
                 "decode chain, kernel 4's last block ends %.2f us after its block 0, and the "
                 "next kernel 2's wait returns %.2f us after that (mean of %llu; kernel 2 lets "
                 "kernel 3 start at its %s, kernel 4 lets kernel 2 start at its %s)\n",
                 host[kSpanAttnDownSpread] / nk, host[kSpanAttnAfterDown] / nk,
                 host[kSpanAttnDownGaps], kAttnTriggerNames[attn_trigger_at()],
                 down_late_trigger() ? "rows' landing" : "start");
  }
  std::fprintf(stderr,
               "decode chain, kernel 2, us (block 0, from its wait): q, slot and length %.2f; "
               "keys and values %.2f; the head's barrier %.2f (mean over blocks %.2f); records "
               "merged %.2f; o rows written %.2f\n",
               host[kSpanAttnQ] / n, host[kSpanAttnKv] / n, host[kSpanAttnBarrier] / n,
               host[kSpanAttnBarrierAll] / na, host[kSpanAttnMerge] / n,
               (host[kSpanAttnWork] - host[kSpanAttnQ] - host[kSpanAttnKv] -
                host[kSpanAttnBarrier] - host[kSpanAttnMerge]) / n);
  if (host[kSpanTokens] != 0)
    std::fprintf(stderr,
                 "decode chain, between tokens (the last layer's end to the first layer's "
                 "attention): %.1f us, mean of %llu\n",
                 host[kSpanTokenGap] / (1e3 * double(host[kSpanTokens])), host[kSpanTokens]);
  if (host[arl::kTailSpanTokens] != 0) {
    const double nt = 1e3 * double(host[arl::kTailSpanTokens]);
    const auto span = [&](arl::TailWord w) { return host[w] / nt; };
    std::fprintf(stderr,
                 "decode chain, between tokens, us (mean of %llu): the last layer's last block "
                 "-> the final norm %.2f, the norm %.2f; -> the sampling's wait (the LM head) "
                 "%.2f; the sampling %.2f; -> the embedding (the ids' copy, the graph's launch) "
                 "%.2f; the embedding %.2f; -> the first layer's attention wait %.2f\n",
                 host[arl::kTailSpanTokens], span(arl::kTailSpanToNorm),
                 span(arl::kTailSpanNorm), span(arl::kTailSpanHead), span(arl::kTailSpanGreedy),
                 span(arl::kTailSpanToEmbed), span(arl::kTailSpanEmbed),
                 span(arl::kTailSpanToAttn));
  }
}

static_assert(kTimesWords <= arl::kTailBase, "the chain's words overlap the tail's");
static_assert(arl::kTailEnd <= arl::kTimeSumsMaxWords, "the chain's time sums need more words");
arl::TimeSums g_chain_times{"AGENTRL_CUDA_DECODE_CHAIN_TIMES", arl::kTailEnd, print_chain_times,
                            nullptr, -1};

unsigned long long* chain_times(arl_ctx* ctx) { return arl::time_sums(ctx, g_chain_times); }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

namespace arl {

unsigned long long* decode_chain_times(arl_ctx* ctx) { return chain_times(ctx); }

arl_status decode_layer_chain(arl_ctx* ctx, const char* fn, float* x, float* qkv, float* attn,
                              float* act, const float* ln1, const uint16_t* w_qkv,
                              const float* b_qkv, const uint16_t* w_o, const float* ln2,
                              const uint16_t* w_gu, const uint16_t* w_down, float* k_cache,
                              float* v_cache, const int32_t* slot, const int32_t* position,
                              const int32_t* len, int32_t c, int32_t f, int32_t hq, int32_t hkv,
                              int32_t d, int32_t s, int32_t l, float eps, float theta,
                              float scale, const DecodeNorms& norms) {
  if ((d != 64 && d != 128) || c % 8 != 0 || f % 8 != 0 || !aligned16(x) || !aligned16(w_qkv) ||
      !aligned16(w_o) || !aligned16(w_gu) || !aligned16(w_down) || !aligned16(ln1) ||
      !aligned16(ln2) || (reinterpret_cast<uintptr_t>(act) & 7) != 0 ||  // (kernel 4: float2)
      // (rows and caches: whole tensors are; a view that is not takes the separate calls)
      !aligned16(qkv) || !aligned16(attn) || !aligned16(k_cache) || !aligned16(v_cache) ||
      int64_t(hq + 1) * c > kDecodePartFloats || hq + 1 > ctx->num_sms)
    return ARL_ERR_UNSUPPORTED;
  // Kernel 2: a head's splits as one cluster of kAttnClusterSplits where the device has clusters
  // and that many splits hold the o rows (no grid-wide residency needed: heads never wait for
  // each other, except with q|k|v in kernel 2, checked below); else about one block per SM, no
  // more o rows a split than its threads hold.
  const bool cluster = attn_cluster(ctx) && (c + kAttnClusterSplits - 1) / kAttnClusterSplits <=
                                                kMaxSplitRows;
  int splits = cluster ? kAttnClusterSplits : std::max(1, ctx->num_sms / hq);
  while ((c + splits - 1) / splits > kMaxSplitRows) splits++;
  if (splits > kAttnMaxSplits) {
    if ((c + kAttnMaxSplits - 1) / kAttnMaxSplits > kMaxSplitRows)
      return ARL_ERR_UNSUPPORTED;
    splits = kAttnMaxSplits;
  }
  const int64_t attn_blocks = int64_t(hq) * splits;
  if (!cluster) {
    const int attn_per_sm =
        d == 64 ? cached(ctx->device, "occupancy attn 64", attn_blocks_per_sm<64>)
                : cached(ctx->device, "occupancy attn 128", attn_blocks_per_sm<128>);
    if (attn_per_sm <= 0 || attn_blocks > int64_t(attn_per_sm) * ctx->num_sms ||
        size_t(attn_blocks) * (d + 2) * sizeof(float) > decode_records_bytes(ctx))
      return ARL_ERR_UNSUPPORTED;
  }
  // Kernels 3 and 4: a block per SM, or (AGENTRL_CUDA_DECODE_MLP_PER_SM) more, smaller ones
  // where a block's weights do not fit in shared memory (nothing waits for another block: any
  // grid runs); else the separate calls.
  const int max_smem = cached(ctx->device, "shared memory mlp", [ctx] {
    std::vector<const void*> kernels = {reinterpret_cast<const void*>(decode_down_kernel<false>),
                                        reinterpret_cast<const void*>(decode_down_kernel<true>)};
    for (const int pieces : {1, 2, 4})
      for (const bool wide : {false, true})
        kernels.push_back(reinterpret_cast<const void*>(gate_up_kernel(pieces, wide)));
    kernels.push_back(reinterpret_cast<const void*>(decode_mlp_fused_kernel));
    for (const void* kernel : kernels) {
      if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               ctx->max_smem) != cudaSuccess) {
        cudaGetLastError();
        return -1;
      }
    }
    return int(ctx->max_smem);
  });
  const int64_t units = f / 2;
  int64_t gu_blocks = 0, wmax = 0, down_blocks = 0, rmax = 0;
  for (int64_t per_sm = 1; per_sm <= mlp_per_sm_cap() && max_smem > 0; per_sm++) {
    const int64_t blocks = std::min<int64_t>(units, int64_t(ctx->num_sms) * per_sm);
    const int64_t widest = 2 * ((units + blocks - 1) / blocks);
    if (gu_blocks == 0 && gate_up_smem_bytes(c, widest) <= size_t(max_smem)) {
      gu_blocks = blocks;
      wmax = widest;
    }
    const int64_t row_blocks = std::min<int64_t>(c, int64_t(ctx->num_sms) * per_sm);
    const int64_t most = (c + row_blocks - 1) / row_blocks;
    if (down_blocks == 0 && down_smem_bytes(f, most) <= size_t(max_smem)) {
      down_blocks = row_blocks;
      rmax = most;
    }
  }
  if (gu_blocks == 0 || down_blocks == 0 || !decode_buffers(ctx)) return ARL_ERR_UNSUPPORTED;
  float* part = decode_partials(ctx);
  // Kernels 3 and 4 as one where asked and a block an SM holds its rows and columns
  const int64_t fused_blocks = std::min<int64_t>(f / 8, ctx->num_sms);
  const int64_t fused_wmax = 8 * ((f / 8 + fused_blocks - 1) / fused_blocks);
  // (under 255 blocks: their partials and r, each below 2^55 at 2^31, add up within an int64)
  const bool fused_mlp = mlp_fused_asked() && c <= kDecodeFusedMaxC && fused_blocks < 255 &&
                         fused_mlp_smem_bytes(c, fused_wmax) <= size_t(max_smem);
  // kernel 2's barrier words, one a head (see decode_counter_ints)
  unsigned* barriers = reinterpret_cast<unsigned*>(decode_counters(ctx)) + ctx->num_sms + 2;
  unsigned long long* times = chain_times(ctx);
  const int32_t nq = (hq + 2 * hkv) * d;
  cached(ctx->device, "carveout qkv", [] {
    return prefer_shared(gemv_rows_kernel<1, uint16_t, true, kGemvNormRope>);
  });
  if (d == 64)
    cached(ctx->device, "carveout attn 64", [] {
      return prefer_shared(decode_attn_o_kernel<64, false>) +
             prefer_shared(decode_attn_o_kernel<64, true>);
    });
  else
    cached(ctx->device, "carveout attn 128", [] {
      return prefer_shared(decode_attn_o_kernel<128, false>) +
             prefer_shared(decode_attn_o_kernel<128, true>);
    });
  const int64_t pairs = nq / 2;
  const int64_t qkv_blocks = std::min<int64_t>(ctx->num_sms, pairs);
  const GemvRope rope{k_cache, v_cache, slot, position, hq,        hkv,
                      d,       s,       l,    theta,    ctx->flag, ctx->flag_index};
  // q|k|v in kernel 2 (asked for, and not kernel 1 as the GEMV baseline): head dim 64, clusters,
  // a kv head's blocks enough for its pairs (a pair a warp), and every cluster resident at once
  const bool qkv_in_attn =
      !norms.any() && qkv_in_attn_asked() && !qkv_gemv() && cluster &&
      splits == kAttnClusterSplits &&
      d == kQkvInAttnD && c <= kQkvInAttnMaxC && hq % hkv == 0 && hkv <= ctx->num_sms &&
      int64_t(hq / hkv) * splits * kQkvInAttnKvWarps >= d &&
      attn_qkv_smem_bytes(d, c) <= size_t(ctx->max_smem) &&
      qkv_in_attn_resident(ctx, c, hq);
  // what each kernel reads, for the L2 regions of arl_l2_persist (kernel 2 with q|k|v: w_qkv)
  const WeightsRead qkv_read{w_qkv, size_t(nq) * size_t(c) * 2};
  const WeightsRead o_read{w_o, size_t(c) * size_t(hq) * size_t(d) * 2};
  const WeightsRead gu_read{w_gu, size_t(2) * size_t(f) * size_t(c) * 2};
  const WeightsRead down_read{w_down, size_t(c) * size_t(f) * 2};
  if (norms.any()) {
    // the rows as they come from the GEMV, then each head's norm and RoPE, the cache rows (both
    // with the largest carveout, as kernel 1's)
    cached(ctx->device, "carveout qkv norms", [] {
      return prefer_shared(gemv_rows_kernel<1, uint16_t, true, kGemvNorm>) +
             prefer_shared(gemv_rows_kernel<1, uint16_t, false, kGemvNorm>) +
             norm_rope_prefer_shared();
    });
    gemv_rows<kGemvNorm>(ctx, qkv, x, w_qkv, b_qkv, 1, nq, c, false, ln1, eps);
    launch_norm_rope_kv(ctx, qkv, qkv + int64_t(hq) * d, k_cache, v_cache,
                        qkv + (int64_t(hq) + hkv) * d, norms.q_norm, norms.k_norm, norms.inv_freq,
                        slot, position, 1, hq, s, hkv, l, d, eps, theta);
  } else if (qkv_in_attn) {
    // no kernel 1: kernel 2 does its work
  } else if (c <= kQkvMaxC && (pairs + qkv_blocks - 1) / qkv_blocks <= kQkvWarps && !qkv_gemv()) {
    QkvArgs qa{};
    qa.y = qkv;
    qa.x = x;
    qa.ln1 = ln1;
    qa.w = w_qkv;
    qa.bias = b_qkv;
    qa.rope = rope;
    qa.c = c;
    qa.pairs = pairs;
    qa.eps = eps;
    qa.times = times;
    cached(ctx->device, "carveout qkv chain", [] { return prefer_shared(decode_qkv_kernel); });
    // (as many warps a block as it has pairs: no idle warps holding registers)
    const int64_t warps = (pairs + qkv_blocks - 1) / qkv_blocks;
    launch_pdl_reading(ctx, qkv_read.w, qkv_read.bytes, decode_qkv_kernel,
                       dim3(unsigned(qkv_blocks)), dim3(unsigned(32 * warps)), 0, qa);
  } else {
    gemv_rows<kGemvNormRope>(ctx, qkv, x, w_qkv, b_qkv, 1, nq, c, false, ln1, eps, &rope);
  }
  if (arl_status st = check_launch(ctx, fn)) return st;
  AttnOArgs attn_args{};
  attn_args.part = part;
  attn_args.attn = attn;
  attn_args.qkv = qkv;
  attn_args.k_cache = k_cache;
  attn_args.v_cache = v_cache;
  attn_args.w_o = w_o;
  attn_args.slot = slot;
  attn_args.len = len;
  attn_args.records = static_cast<float*>(ctx->decode_partial);
  attn_args.barriers = barriers;
  attn_args.times = times;
  attn_args.c = c;
  attn_args.hq = hq;
  attn_args.hkv = hkv;
  attn_args.s = s;
  attn_args.l = l;
  attn_args.splits = splits;
  attn_args.scale = scale;
  attn_args.flag = ctx->flag;
  attn_args.flag_index = ctx->flag_index;
  attn_args.kv_prefetch = kv_prefetch() ? 1 : 0;
  attn_args.trigger_at = attn_trigger_at();
  attn_args.x = x;
  attn_args.ln1 = ln1;
  attn_args.w_qkv = w_qkv;
  attn_args.b_qkv = b_qkv;
  attn_args.rope = rope;
  attn_args.eps = eps;
  attn_args.kv_barriers = barriers + ctx->num_sms;
  if (qkv_in_attn) {
    launch_cluster(ctx, qkv_read, decode_attn_o_kernel<64, true, true>,
                   dim3(unsigned(attn_blocks)), dim3(kAttnThreads), attn_qkv_smem_bytes(64, c),
                   splits, attn_args);
  } else if (cluster) {
    launch_cluster(ctx, o_read,
                   d == 64 ? decode_attn_o_kernel<64, true> : decode_attn_o_kernel<128, true>,
                   dim3(unsigned(attn_blocks)), dim3(kAttnThreads), attn_smem_bytes(d), splits,
                   attn_args);
  } else if (d == 64) {
    launch_waiting(ctx, o_read, decode_attn_o_kernel<64, false>, dim3(unsigned(attn_blocks)),
                   dim3(kAttnThreads), attn_smem_bytes(64), attn_args);
  } else {
    launch_waiting(ctx, o_read, decode_attn_o_kernel<128, false>, dim3(unsigned(attn_blocks)),
                   dim3(kAttnThreads), attn_smem_bytes(128), attn_args);
  }
  if (arl_status st = check_launch(ctx, fn)) return st;
  MlpArgs mlp_args{};
  mlp_args.x = x;
  mlp_args.act = act;
  mlp_args.res = part + int64_t(hq) * c;
  mlp_args.part = part;
  mlp_args.ln2 = ln2;
  mlp_args.w_gu = w_gu;
  mlp_args.w_down = w_down;
  mlp_args.times = times;
  mlp_args.c = c;
  mlp_args.f = f;
  mlp_args.hq = hq;
  mlp_args.wmax = int32_t(wmax);
  mlp_args.rmax = int32_t(rmax);
  mlp_args.eps = eps;
  mlp_args.late_trigger = mlp_late_trigger() ? 1 : 0;
  mlp_args.down_late_trigger = down_late_trigger() ? 1 : 0;
  if (next_qkv_asked() && ctx->decode_next_qkv != nullptr) {
    mlp_args.next_qkv = ctx->decode_next_qkv;
    mlp_args.next_qkv_bytes = qkv_read.bytes / 16 * 16;  // (the next layer's shapes are these)
  }
  if (fused_mlp) {
    int* fused = decode_counters(ctx) + decode_fused_at(ctx);
    mlp_args.acc = reinterpret_cast<long long*>(fused);
    mlp_args.done = reinterpret_cast<unsigned*>(fused + 2 * kDecodeFusedMaxC);
    mlp_args.bad = fused + 2 * kDecodeFusedMaxC + 1;
    mlp_args.flag = ctx->flag;
    mlp_args.flag_index = ctx->flag_index;
    mlp_args.wmax = int32_t(fused_wmax);
    launch_pdl_reading(ctx, gu_read.w, gu_read.bytes, decode_mlp_fused_kernel,
                       dim3(unsigned(fused_blocks)), dim3(kGateUpThreads),
                       fused_mlp_smem_bytes(c, fused_wmax), mlp_args);
    return check_launch(ctx, fn);
  }
  // (pieces of at least one column pair each, in the widest block)
  const int pieces = wmax >= 2 * mlp_pieces() ? mlp_pieces() : 1;
  mlp_args.pace = ctx->cc_major >= 9 && mlp_pace() < pieces ? mlp_pace() : 0;
  launch_pdl_reading(ctx, gu_read.w, gu_read.bytes, gate_up_kernel(pieces, mlp_wide_dots()),
                     dim3(unsigned(gu_blocks)), dim3(kGateUpThreads), gate_up_smem_bytes(c, wmax),
                     mlp_args);
  if (arl_status st = check_launch(ctx, fn)) return st;
  // (each warp's columns on its own barrier where they start 16-byte aligned)
  // (Hopper only: elsewhere the pieces' cp.async groups are waited for together anyway)
  const bool down_pieces =
      down_pieces_asked() && (f / 2) % (4 * kDownWarps) == 0 && ctx->cc_major >= 9;
  launch_pdl_reading(ctx, down_read.w, down_read.bytes,
                     down_pieces ? decode_down_kernel<true> : decode_down_kernel<false>,
                     dim3(unsigned(down_blocks)), dim3(kDownThreads), down_smem_bytes(f, rmax),
                     mlp_args);
  return check_launch(ctx, fn);
}

}  // namespace arl
