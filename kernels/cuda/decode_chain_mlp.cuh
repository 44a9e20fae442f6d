// The decode chain's MLP (decode_chain.cu): kernel 3 (r = x + the heads' o partials, its RMSNorm,
// gate|up and act = silu(gate) * up) and kernel 4 (x = r + act . w_down^T). Each copies its
// weights to shared memory before its PDL wait. For Qwen2.5-0.5B they take about 137 KB and 68 KB
// of an SM's shared memory, so kernel 3 of layer l + 1 can start its copies beside kernel 4 of
// layer l (and kernel 4 beside kernel 3): the MLP's 26 MB stream runs under the layer's latencies.
// Kernel 3 lets kernel 4 start only once its own rows are in (unless
// AGENTRL_CUDA_DECODE_MLP_TRIGGER=early), so that the two copies do not compete.
// Sums have a fixed order: x is the same bits whatever order the blocks run in.
#pragma once

#include <cstdint>

#include "block_copy.cuh"
#include "common.cuh"
#include "gemv.cuh"
#include "time_sums.cuh"

namespace arl {
namespace chain {

constexpr int kGateUpThreads = 512;
constexpr int kGateUpWarps = kGateUpThreads / 32;
constexpr int kDownThreads = 256;
constexpr int kDownWarps = kDownThreads / 32;
constexpr int kResidualElems = 2;  // r elements a thread of kernel 3 loads at once
constexpr int kResidualHeads = 16;  // and heads' partials of each
constexpr int kDownPairs = 10;     // act column pairs a lane of kernel 4 holds at once
constexpr int kDownRows = 8;       // x rows kernel 4's warps add up at once
constexpr int kMlpMaxPerSm = 4;    // blocks an SM at most, where a block's weights do not fit
constexpr int kDotRows = 4;        // gate|up rows a warp of kernel 3 dots at once (52 registers;
                                   // one row at a time fits 40, but was 5% slower on the H100)
constexpr int kDotRowsWide = 5;    // AGENTRL_CUDA_DECODE_MLP_DOT_ROWS=5 (56 registers)
constexpr int kGateUpRegisters = 56;  // (so that kernel 2 of the next layer fits beside 3 and 4)

// AGENTRL_CUDA_DECODE_CHAIN_TIMES: sums (ns) of spans, and a count of layers. "Block 0" spans
// are block 0's (thread 0); the *All spans are summed over every block (thread 0).
enum Span {
  kSpanAttnEarly,     // kernel 2, block 0: from its start to pdl_wait's return (launched early)
  kSpanAttnWork,      // kernel 2, block 0: from pdl_wait's return to its end
  kSpanAttnGap,       // kernel 4 of the layer before ends -> kernel 2's pdl_wait returns
  kSpanMlpEarly,      // kernel 3, block 0: start -> pdl_wait returns
  kSpanMlpGap,        // kernel 2 (block 0) ends -> kernel 3's pdl_wait returns
  kSpanMlpGateUp,     // kernel 3, block 0: pdl_wait returns -> gate and up rows in shared memory
  kSpanMlpAct,        // kernel 3, block 0: pdl_wait returns -> its act slice written
  kSpanDownEarly,     // kernel 4, block 0: start -> pdl_wait returns
  kSpanDownGap,       // kernel 3 (block 0) ends -> kernel 4's pdl_wait returns
  kSpanDownWork,      // kernel 4, block 0: pdl_wait returns -> its x rows written
  kSpanAttnEarlyAll,  // the sum over kernel 2's blocks of kSpanAttnEarly
  kSpanMlpEarlyAll,   // ... over kernel 3's, of kSpanMlpEarly
  kSpanMlpGateUpAll,  // ... of kSpanMlpGateUp
  kSpanMlpActAll,     // ... of kSpanMlpAct
  kSpanDownEarlyAll,  // ... over kernel 4's, of kSpanDownEarly
  kSpanDownWorkAll,   // ... of kSpanDownWork
  kSpanAttnBlocks,    // kernel 2's grid size (the last one)
  kSpanMlpBlocks,     // kernel 3's
  kSpanDownBlocks,    // kernel 4's
  kSpanTokenGap,      // kernel 4 of a token's last layer ends -> kernel 2 of the next's first
                      // layer returns from its wait (the LM head, sampling, the host, kernel 1)
  kSpanTokens,        // how many of those
  kSpanCount,         // layers timed
  kSpanQkvEarly,      // kernel 1, block 0: start -> pdl_wait returns
  kSpanQkvGap,        // kernel 4 of the layer before (its last block) ends -> kernel 1's wait
  kSpanQkvDot,        // kernel 1, block 0 (thread 0): pdl_wait returns -> its dots summed
  kSpanQkvWork,       // kernel 1, block 0 (thread 0): pdl_wait returns -> its rows stored
  kSpanQkvEarlyAll,   // the sum over kernel 1's blocks of kSpanQkvEarly
  kSpanQkvWorkAll,    // ... of kSpanQkvWork
  kSpanQkvBlocks,     // kernel 1's grid size
  kSpanQkvSpread,     // kernel 1: block 0 ends -> its last block ends
  kSpanAttnAfterQkv,  // kernel 1's last block ends -> kernel 2 (block 0) returns from its wait
  kSpanDownSpread,    // kernel 4: block 0 ends -> its last block ends
  kSpanQkvGaps,       // how many kSpanQkvGap (and kSpanDownSpread) were added (within a token)
  kSpanAttnQ,         // kernel 2, block 0 (thread 0): its wait returns -> q, slot and length in
  kSpanAttnKv,        //   -> its split's keys and values done (the warps merged)
  kSpanAttnBarrier,   //   -> the head's barrier passed
  kSpanAttnMerge,     //   -> the head's records merged
  kSpanAttnBarrierAll,  // the sum over kernel 2's blocks of kSpanAttnBarrier
  kStampAttnEnd,      // (the last end times, for the gaps)
  kStampMlpEnd,
  kStampDownEnd,
  kStampQkvEnd,
  kStampQkvEndMax,    // (the latest end of any block: atomicMax)
  kStampAttnQ,        // (kernel 2's phase ends, block 0)
  kStampAttnKv,
  kStampAttnBarrier,
  kStampAttnMerge,
  kStampDownEndMax,
  kSpanQkvInAttn,     // layers whose q|k|v rows kernel 2 found (AGENTRL_CUDA_DECODE_QKV_IN_ATTN)
  kSpanAttnAfterDown,   // kernel 4 (its last block) ends -> kernel 2 (block 0) returns from its
                        // wait (kernel 2 right after kernel 4: no kernel 1; within a token)
  kSpanAttnDownSpread,  // kernel 4: block 0 ends -> its last block ends (the same layers)
  kSpanAttnDownGaps,    // how many of those
  kSpanMlpResidual,     // kernel 3, block 0: pdl_wait returns -> r and its square sum found
                        // (before the wait for its gate and up rows)
  kSpanMlpResidualAll,  // ... summed over kernel 3's blocks
  kSpanDownLanded,      // kernel 4, block 0: pdl_wait returns -> act's first pairs loaded and its
                        // down rows in
  kSpanDownLandedAll,   // ... summed over kernel 4's blocks
  kSpanMlpPieced,       // layers whose kernel 3 took its rows in pieces
  kSpanMlpPieces,       // (how many pieces, the last time)
  kSpanDownPieced,      // layers whose kernel 4 took its rows by its warps' columns
  kSpanMlpDots,         // kernel 3, block 0: pdl_wait returns -> every warp's dots done
  kSpanMlpWide,         // layers whose kernel 3 dotted kDotRowsWide rows at once
  kSpanAttnNormed,      // kernel 2 with q|k|v, block 0 (thread 0): its wait returns -> x and its
                        // norm in shared memory
  kSpanAttnPairs,       //   -> its pairs dotted and stored (a block barrier: the cluster's next)
  kSpanAttnQInAttn,     //   -> q, slot and length in (kSpanAttnQ over those layers only)
  kSpanAttnPairsAll,    // kSpanAttnPairs summed over kernel 2's blocks (each from its own wait)
  kSpanAttnClusterAll,  // ... their cluster arrival -> its barrier passed (the kv word between)
  kSpanMlpPaced,        // layers whose kernel 3 kept only some pieces in flight before its wait
  kSpanMlpPace,         // (how many, the last time)
  kTimesWords
};

struct MlpArgs {
  float* x;
  float* act;
  float* res;         // (c) r, written by kernel 3 for kernel 4
  const float* part;  // (hq, c) from kernel 2
  const float* ln2;
  const uint16_t* w_gu;
  const uint16_t* w_down;
  unsigned long long* times;  // null, or AGENTRL_CUDA_DECODE_CHAIN_TIMES's sums
  int32_t c, f, hq;
  int32_t wmax;  // act columns of kernel 3's widest slice (even)
  int32_t rmax;  // x rows of the most that a block of kernel 4 takes
  float eps;
  int late_trigger;  // kernel 3 lets kernel 4 start only once its own gate and up rows are in
  int down_late_trigger;  // kernel 4 lets the next kernel start only once its down rows are in
  int pace;  // kernel 3's pieces in flight before its wait (0: all at once; Hopper, > 1 piece)
  const uint16_t* next_qkv;  // null, or the next layer's q|k|v rows for kernel 4 to ask L2 for
  int64_t next_qkv_bytes;    // (a multiple of 16)
  // the fused MLP's (kernels 3 and 4 as one): x's int64 sums, its blocks' count, its range flag
  long long* acc;
  unsigned* done;
  int* bad;
  int* flag;  // the context's deferred-error flag and index (kDeferredFusedRange)
  int64_t* flag_index;
};

// A kernel's spans, summed by thread 0 of each block at its end: its early (start -> pdl_wait
// returns) and work (-> end) spans into the all-block sums; block 0 also into its own, with the
// gap from the kernel before's end stamp to its wait, its own end stamp and the grid's size.
struct KernelSpans {
  Span early_all, work_all, early, work, gap, before_end, end, blocks;
};
__device__ inline void add_spans(unsigned long long* times, const KernelSpans& s, bool block0,
                                 unsigned long long t0, unsigned long long t1,
                                 unsigned long long t2) {
  atomicAdd(times + s.early_all, t1 - t0);
  atomicAdd(times + s.work_all, t2 - t1);
  if (!block0) return;
  const unsigned long long before = times[s.before_end];
  atomicAdd(times + s.early, t1 - t0);
  atomicAdd(times + s.work, t2 - t1);
  if (before != 0 && t1 > before) atomicAdd(times + s.gap, t1 - before);
  times[s.end] = t2;
  times[s.blocks] = gridDim.x;
}

constexpr int kMlpMaxPieces = 4;  // kernel 3's rows in up to 4 pieces, an mbarrier each

// Kernel 3's shared memory, in bytes: gate then up rows (2 wmax rows of c bf16), x * ln2 (c), the
// dots (2 wmax), 16 doubles and kMlpMaxPieces mbarriers.
inline size_t gate_up_smem_bytes(int64_t c, int64_t wmax) {
  return size_t(4 * wmax * c + 4 * c + 8 * wmax + 16 * 8 + 8 * kMlpMaxPieces);
}

// Waits for piece k of kPieces: piece 0 with a block barrier (block_copy_wait_all), the later
// ones in each thread alone on Hopper (block_copy_wait_own). Off Hopper each block_copy is a
// commit group, two a piece, so piece k is in once at most 2 (kPieces - 1 - k) newer groups are
// pending.
template <int kPending>
__device__ inline void block_copy_wait_piece_at(uint64_t* bar, int k) {
  if (k == 0)
    block_copy_wait_all<kPending>(bar);
  else
    block_copy_wait_own<kPending>(bar);
}
template <int kPieces>
__device__ inline void block_copy_wait_piece(uint64_t* bars, int k) {
  switch (kPieces - 1 - k) {
    case 0: block_copy_wait_piece_at<0>(bars + k, k); break;
    case 1: block_copy_wait_piece_at<2>(bars + k, k); break;
    case 2: block_copy_wait_piece_at<4>(bars + k, k); break;
    default: block_copy_wait_piece_at<6>(bars + k, k); break;
  }
}
// How many of kernel 3's kPieces pieces it issues before its wait at once, given MlpArgs::pace.
template <int kPieces>
__device__ inline int pieces_at_once(int pace) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  (void)pace;
  return kPieces;  // (cp.async's groups are counted over all pieces: never paced)
#else
  return pace > 0 && pace < kPieces ? pace : kPieces;
#endif
}

// Kernel 4's: rmax rows of w_down (f bf16 each), the warps' row sums, a stamp and an mbarrier
// a warp.
inline size_t down_smem_bytes(int64_t f, int64_t rmax) {
  return size_t(2 * rmax * f + 4 * kDownWarps * kDownRows + 8 + 8 * kDownWarps);
}

// Kernel 3: block b takes act's units (column pairs) [b U / G, (b + 1) U / G) of U = f / 2, and
// writes r's rows [b c / G, (b + 1) c / G) for kernel 4. kPieces > 1
// (AGENTRL_CUDA_DECODE_MLP_PIECES=2|4): its gate and up rows come in pieces of its columns, each
// on its own mbarrier, and the warps dot each piece as it lands, while the next ones land.
// a.pace (AGENTRL_CUDA_DECODE_MLP_PACE, Hopper): only the first pace pieces are issued at once;
// thread 0 issues piece k once piece k - pace is in, before its own wait, so that fewer bytes
// queue in the memory system ahead of the other kernels' loads (the block waits for thread 0 at
// piece 0's barrier: at worst until piece kPieces - 1 - pace is in).
// kRows: the rows a warp dots at once; kDotRowsWide (AGENTRL_CUDA_DECODE_MLP_DOT_ROWS=5) takes
// Qwen2.5-0.5B's 74 rows a block in one pass of the warps instead of two (x read from shared
// memory once instead of twice), with the same bits (each row is still one warp's, in the same
// order).
template <int kPieces, int kRows>
__global__ void ARL_MAX_REGISTERS(kGateUpThreads, kGateUpRegisters)
    decode_gate_up_kernel(MlpArgs a) {
  static_assert(kPieces == 1 || kPieces == 2 || kPieces == 4, "the rows in 1, 2 or 4 pieces");
  extern __shared__ uint4 mlp_smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const bool all = a.times != nullptr && tid == 0;
  const bool timing = all && blockIdx.x == 0;
  const unsigned long long t0 = all ? global_ns() : 0;
  const int32_t j0 = 2 * share_begin(a.f / 2), w = 2 * share_end(a.f / 2) - j0;
  const int32_t r0 = share_begin(a.c), r1 = share_end(a.c);
  uint16_t* gu = reinterpret_cast<uint16_t*>(mlp_smem);
  // x * ln2 (then / rms), its 8-column chunks' halves apart (chunk_halves_at)
  float* xn = reinterpret_cast<float*>(gu + int64_t(2) * a.wmax * a.c);
  const auto xn_at = [c = a.c](int32_t i) { return 4 * chunk_halves_at(i / 4, c) + (i & 3); };
  float* dots = xn + a.c;
  double* red = reinterpret_cast<double*>(dots + 2 * a.wmax);
  uint64_t* bar = reinterpret_cast<uint64_t*>(red + 16);
  if (!a.late_trigger) pdl_trigger();
  // The block's gate and up rows and the norm's weight (no kernel's output) before pdl_wait;
  // piece k: columns [cut(k), cut(k + 1)) of its w (none, where w < kPieces), its gate rows then
  // its up rows, from shared row 2 cut(k) on (one piece: the w gate rows, then the w up rows).
  const auto cut = [w](int k) { return w * k / kPieces; };
  for (int k = 0; k < kPieces; k++) block_copy_init(bar + k);
  __syncthreads();
  // (paced: thread 0, which issues the bulk copies, issues each piece k >= early once piece
  // k - early is in; the other threads go on)
  const int early = pieces_at_once<kPieces>(a.pace);
  for (int k = 0; k < kPieces; k++) {
    if (k >= early && tid == 0) block_copy_wait<0>(bar + k - early);
    const int64_t slice = int64_t(cut(k + 1) - cut(k)) * a.c * 2;
    block_copy_arm(bar + k, 2 * slice);
    uint16_t* at = gu + int64_t(2 * cut(k)) * a.c;
    block_copy(at, a.w_gu + int64_t(j0 + cut(k)) * a.c, slice, bar + k);
    block_copy(at + slice / 2, a.w_gu + (int64_t(a.f) + j0 + cut(k)) * a.c, slice, bar + k);
  }
  for (int32_t i = tid; i < a.c; i += kGateUpThreads) xn[xn_at(i)] = __ldg(a.ln2 + i);
  pdl_wait();
  const unsigned long long t1 = all ? global_ns() : 0;
  // r = x + the heads' o partials, added in head order; kResidualElems elements of a thread
  // and kResidualHeads heads at a time, all loaded before they are added (one round trip for
  // Qwen2.5-0.5B).
  double ss = 0.0;
  for (int32_t base = tid; base < a.c; base += kGateUpThreads * kResidualElems) {
    float v[kResidualElems];
#pragma unroll
    for (int e = 0; e < kResidualElems; e++) {
      const int32_t i = base + e * kGateUpThreads;
      v[e] = i < a.c ? __ldcg(a.x + i) : 0.0f;
    }
    for (int32_t h0 = 0; h0 < a.hq; h0 += kResidualHeads) {
      float p[kResidualElems][kResidualHeads];
#pragma unroll
      for (int e = 0; e < kResidualElems; e++) {
        const int32_t i = base + e * kGateUpThreads;
#pragma unroll
        for (int k = 0; k < kResidualHeads; k++)
          p[e][k] = i < a.c && h0 + k < a.hq ? __ldcg(a.part + int64_t(h0 + k) * a.c + i) : 0.0f;
      }
#pragma unroll
      for (int e = 0; e < kResidualElems; e++)
#pragma unroll
        for (int k = 0; k < kResidualHeads; k++) v[e] += p[e][k];
    }
#pragma unroll
    for (int e = 0; e < kResidualElems; e++) {
      const int32_t i = base + e * kGateUpThreads;
      if (i >= a.c) continue;
      ss += double(v[e]) * v[e];
      xn[xn_at(i)] *= v[e];
      if (i >= r0 && i < r1) a.res[i] = v[e];
    }
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (lane == 0) red[warp] = ss;
  if (all) {  // (thread 0's r and sum: the residual's span, before the rows' wait)
    const unsigned long long t_res = global_ns();
    atomicAdd(a.times + kSpanMlpResidualAll, t_res - t1);
    if (timing) atomicAdd(a.times + kSpanMlpResidual, t_res - t1);
  }
  block_copy_wait_piece<kPieces>(bar, 0);  // (and a block barrier: every thread's xn, red)
  if (a.late_trigger && kPieces == 1) pdl_trigger();
  const unsigned long long t_gu = all ? global_ns() : 0;  // (with pieces: the first one in)
  double total = 0.0;
  for (int v = 0; v < kGateUpWarps; v++) total += red[v];
  const float rstd = float(1.0 / sqrt(total / a.c + a.eps));
  // Piece by piece, warp v dots the piece's rows v, v + W, v + 2 W, ... (W warps; n of them: the
  // piece's gate rows, then its up rows), kRows of them at a time, 8 columns a lane and load
  // (c % 8 == 0: the rows and xn are 16-byte aligned).
  const int32_t chunks = a.c / 8;
  const float4* xn4 = reinterpret_cast<const float4*>(xn);  // (chunks' first halves)
  const float4* xn4_hi = xn4 + chunks;                      // (their second halves)
#pragma unroll
  for (int k = 0; k < kPieces; k++) {
    if (k > 0) block_copy_wait_piece<kPieces>(bar, k);
    if (k == kPieces - 1 && k > 0 && a.late_trigger) pdl_trigger();
    const int32_t from = cut(k), cols = cut(k + 1) - from, n = 2 * cols;
    const uint16_t* rows = gu + int64_t(2 * from) * a.c;  // the piece's n rows
    // the dot of the piece's t-th row: gate column from + t, or up column from + t - cols
    const auto dot_of = [&](int32_t t) { return t < cols ? from + t : w + from + t - cols; };
    for (int32_t q0 = warp; q0 < n; q0 += kGateUpWarps * kRows) {
      float sum[kRows];
#pragma unroll
      for (int r = 0; r < kRows; r++) sum[r] = 0.0f;
      for (int32_t i = lane; i < chunks; i += 32) {
        const float4 x0 = xn4[i], x1 = xn4_hi[i];
#pragma unroll
        for (int r = 0; r < kRows; r++) {
          const int32_t t = q0 + r * kGateUpWarps;  // (the same for the whole warp)
          if (t < n)
            sum[r] = dot8(reinterpret_cast<const uint4*>(rows + int64_t(t) * a.c)[i], x0, x1,
                          sum[r]);
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; r++) {
        const int32_t t = q0 + r * kGateUpWarps;
        for (int o = 16; o > 0; o >>= 1) sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], o);
        if (lane == 0 && t < n) dots[dot_of(t)] = sum[r] * rstd;
      }
    }
  }
  __syncthreads();
  if (timing) atomicAdd(a.times + kSpanMlpDots, global_ns() - t1);
  for (int32_t q = tid; q < w; q += kGateUpThreads) a.act[j0 + q] = silu(dots[q]) * dots[w + q];
  if (all) {
    add_spans(a.times,
              {kSpanMlpEarlyAll, kSpanMlpActAll, kSpanMlpEarly, kSpanMlpAct, kSpanMlpGap,
               kStampAttnEnd, kStampMlpEnd, kSpanMlpBlocks},
              timing, t0, t1, global_ns());
    atomicAdd(a.times + kSpanMlpGateUpAll, t_gu - t1);
    if (timing) atomicAdd(a.times + kSpanMlpGateUp, t_gu - t1);
    if (timing && kRows != kDotRows) atomicAdd(a.times + kSpanMlpWide, 1ull);
    if (timing && kPieces > 1) {
      atomicAdd(a.times + kSpanMlpPieced, 1ull);
      a.times[kSpanMlpPieces] = kPieces;
    }
    if (timing && pieces_at_once<kPieces>(a.pace) < kPieces) {  // (from the parameter again)
      atomicAdd(a.times + kSpanMlpPaced, 1ull);
      a.times[kSpanMlpPace] = pieces_at_once<kPieces>(a.pace);
    }
  }
}

// Kernel 4: block b takes x's rows [b c / G, (b + 1) c / G) (rows <= rmax). Warp v takes act's
// column pairs [v P / W, (v + 1) P / W) of P = f / 2 for all the block's rows (kDownPairs pairs a
// lane held at once, kDownRows rows at a time); the warps' sums are added in warp order.
// kWarpPieces (AGENTRL_CUDA_DECODE_DOWN_PIECES=1, where P is a multiple of 4 W): on Hopper each
// warp's columns of the rows come on its own mbarrier, in warp order, and each warp starts once
// its own columns are in.
template <bool kWarpPieces>
__global__ void __launch_bounds__(kDownThreads) decode_down_kernel(MlpArgs a) {
  extern __shared__ uint4 mlp_smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const bool all = a.times != nullptr && tid == 0;
  const bool timing = all && blockIdx.x == 0;
  const unsigned long long t0 = all ? global_ns() : 0;
  const int32_t r0 = share_begin(a.c), rows = share_end(a.c) - r0;
  uint16_t* down = reinterpret_cast<uint16_t*>(mlp_smem);
  float* sums = reinterpret_cast<float*>(down + int64_t(a.rmax) * a.f);
  unsigned long long* landed_at =  // (a stamp)
      reinterpret_cast<unsigned long long*>(sums + kDownWarps * kDownRows);
  uint64_t* bars = reinterpret_cast<uint64_t*>(landed_at + 1);  // (one, or one a warp)
  const int32_t fpairs = a.f / 2;
  // waits for this warp's rows (with warp pieces, its own columns of them)
  const auto wait_rows = [&] {
    if constexpr (kWarpPieces)
      block_copy_wait_own(bars + warp);
    else
      block_copy_wait_all<0>(bars);
  };
  if (!a.down_late_trigger) pdl_trigger();
  for (int v = 0; v < (kWarpPieces ? kDownWarps : 1); v++) block_copy_init(bars + v);
  __syncthreads();
  if constexpr (kWarpPieces) {
    // warp v's columns [2 v P / W, 2 (v + 1) P / W) of each row (16-byte aligned: 4 W | P)
    for (int v = 0; v < kDownWarps; v++) {
      const int64_t c0 = 2 * (int64_t(v) * fpairs / kDownWarps);
      const int64_t bytes = 2 * (2 * (int64_t(v + 1) * fpairs / kDownWarps) - c0);
      block_copy_arm(bars + v, bytes * rows);
      for (int32_t row = 0; row < rows; row++)
        block_copy(down + int64_t(row) * a.f + c0, a.w_down + int64_t(r0 + row) * a.f + c0, bytes,
                   bars + v);
    }
  } else {
    const int64_t down_bytes = int64_t(rows) * a.f * 2;
    block_copy_arm(bars, down_bytes);
    block_copy(down, a.w_down + int64_t(r0) * a.f, down_bytes, bars);
  }
  if (a.next_qkv != nullptr) {  // (AGENTRL_CUDA_DECODE_NEXT_QKV: this block's share, to L2)
    const int64_t units = a.next_qkv_bytes / 16;
    const int64_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
    prefetch_l2(reinterpret_cast<const char*>(a.next_qkv) + u0 * 16, (u1 - u0) * 16);
  }
  pdl_wait();
  const unsigned long long t1 = all ? global_ns() : 0;
  const int32_t p0 = int32_t(int64_t(warp) * fpairs / kDownWarps);
  const int32_t p1 = int32_t(int64_t(warp + 1) * fpairs / kDownWarps);
  const float2* act2 = reinterpret_cast<const float2*>(a.act);
  const int32_t chunks = ((fpairs + kDownWarps - 1) / kDownWarps + 32 * kDownPairs - 1) /
                         (32 * kDownPairs);  // (the same for every warp)
  bool landed = false;
  for (int32_t g0 = 0; g0 < rows; g0 += kDownRows) {
    // r's row for the thread that writes it, loaded with act's first pairs
    const bool writer = tid < kDownRows && g0 + tid < rows;
    const float resv = writer ? __ldcg(a.res + r0 + g0 + tid) : 0.0f;
    float acc[kDownRows];
#pragma unroll
    for (int k = 0; k < kDownRows; k++) acc[k] = 0.0f;
    for (int32_t chunk = 0; chunk < chunks; chunk++) {
      const int32_t c0 = p0 + chunk * 32 * kDownPairs;
      float2 av[kDownPairs];  // act's pairs c0 + lane + 32 t, all loaded at once
#pragma unroll
      for (int t = 0; t < kDownPairs; t++) {
        const int32_t i = c0 + lane + 32 * t;
        av[t] = i < p1 ? __ldcg(act2 + i) : make_float2(0.0f, 0.0f);
      }
      if (!landed) {  // (every thread at once: the chunk count is the block's)
        wait_rows();
        if (a.down_late_trigger) pdl_trigger();
        landed = true;
        if (all) *landed_at = global_ns();
      }
#pragma unroll
      for (int k = 0; k < kDownRows; k++) {
        if (g0 + k >= rows) break;
        const uint32_t* wr = reinterpret_cast<const uint32_t*>(down + int64_t(g0 + k) * a.f);
#pragma unroll
        for (int t = 0; t < kDownPairs; t++) {
          const int32_t i = c0 + lane + 32 * t;
          if (i < p1) {
            const uint32_t wv = wr[i];
            acc[k] = fmaf(bf16_lo(wv), av[t].x, fmaf(bf16_hi(wv), av[t].y, acc[k]));
          }
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kDownRows; k++) {
      for (int o = 16; o > 0; o >>= 1) acc[k] += __shfl_xor_sync(0xffffffffu, acc[k], o);
      if (lane == 0) sums[warp * kDownRows + k] = acc[k];
    }
    __syncthreads();
    if (writer) {
      float sum = 0.0f;
      for (int v = 0; v < kDownWarps; v++) sum += sums[v * kDownRows + tid];
      a.x[r0 + g0 + tid] = resv + sum;
    }
    __syncthreads();  // (sums is used again)
  }
  if (!landed) wait_rows();  // (no copy outlives the block; exiting triggers)
  if (all && landed) {
    atomicAdd(a.times + kSpanDownLandedAll, *landed_at - t1);
    if (timing) atomicAdd(a.times + kSpanDownLanded, *landed_at - t1);
  }
  if (all) {
    add_spans(a.times,
              {kSpanDownEarlyAll, kSpanDownWorkAll, kSpanDownEarly, kSpanDownWork, kSpanDownGap,
               kStampMlpEnd, kStampDownEnd, kSpanDownBlocks},
              timing, t0, t1, global_ns());
    if (timing) atomicAdd(a.times + kSpanCount, 1ull);  // (a layer timed)
    if (timing && kWarpPieces) atomicAdd(a.times + kSpanDownPieced, 1ull);
    atomicMax(a.times + kStampDownEndMax, global_ns());
  }
}

// Kernels 3 and 4 as one (AGENTRL_CUDA_DECODE_MLP_FUSED=1, an experiment). Block b takes act's
// columns [8 b F / G, 8 (b + 1) F / G) of F = f / 8 eight-column chunks: their gate and up rows
// and the same columns of every w_down row, all in shared memory. It adds its columns' share of
// every x row, and its r rows [b c / G, (b + 1) c / G), into an int64 fixed-point sum a row (at
// 2^31; integer sums give the same bits in any order); the last block to finish writes x from
// the sums and zeroes them. A partial must be finite and below 2^24 in size (then the grid's
// partials and r, under 255 blocks, add up within an int64); one that is not sets the kernel's
// flag and the context's deferred error (kDeferredFusedRange) instead, and x becomes NaN. wmax:
// the widest block's columns. AGENTRL_CUDA_DECODE_CHAIN_TIMES: it stamps kernel 3's spans up to
// act, and kernel 4's from act to each block's end (the down dots, the sums and, for the last
// block, x).
constexpr double kFusedScale = 2147483648.0;
constexpr float kFusedMax = 16777216.0f;

// The fused kernel's shared memory, in bytes: gate then up rows (2 wmax rows of c bf16), the down
// columns (c rows of wmax bf16), x * ln2 (c), the dots (2 wmax), act (wmax), 16 doubles, an
// mbarrier and the last block's flag.
inline size_t fused_mlp_smem_bytes(int64_t c, int64_t wmax) {
  return size_t(4 * wmax * c + 2 * c * wmax + 4 * c + 8 * wmax + 4 * wmax + 16 * 8 + 8 + 8);
}

// Adds v to row i's int64 fixed-point sum, or flags it (the kernel's flag, and the context's
// deferred error).
__device__ inline void fused_add(const MlpArgs& a, int32_t i, float v) {
  if (!(fabsf(v) < kFusedMax)) {
    atomicAdd(a.bad, 1);
    arl_set_flag(a.flag, a.flag_index, kDeferredFusedRange, i);
    return;
  }
  atomicAdd(reinterpret_cast<unsigned long long*>(a.acc + i),
            static_cast<unsigned long long>(llrint(double(v) * kFusedScale)));
}

__global__ void ARL_MAX_REGISTERS(kGateUpThreads, kGateUpRegisters)
    decode_mlp_fused_kernel(MlpArgs a) {
  extern __shared__ uint4 mlp_smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // (time stamps as kernel 3's up to act, then as kernel 4's from act to the block's end)
  const bool all = a.times != nullptr && tid == 0;
  const bool timing = all && blockIdx.x == 0;
  const unsigned long long t0 = all ? global_ns() : 0;
  const int32_t chunks8 = a.f / 8;
  const int32_t j0 = 8 * share_begin(chunks8), w = 8 * share_end(chunks8) - j0;
  const int32_t r0 = share_begin(a.c), r1 = share_end(a.c);
  uint16_t* gu = reinterpret_cast<uint16_t*>(mlp_smem);
  uint16_t* dn = gu + int64_t(2) * a.wmax * a.c;
  float* xn = reinterpret_cast<float*>(dn + int64_t(a.c) * a.wmax);
  const auto xn_at = [c = a.c](int32_t i) { return 4 * chunk_halves_at(i / 4, c) + (i & 3); };
  float* dots = xn + a.c;
  float* actv = dots + 2 * a.wmax;
  double* red = reinterpret_cast<double*>(actv + a.wmax);
  uint64_t* bar = reinterpret_cast<uint64_t*>(red + 16);
  int* last = reinterpret_cast<int*>(bar + 1);
  pdl_trigger();
  // the block's gate and up rows (w of c each) and its columns of every down row (c of w), on one
  // barrier, before pdl_wait: every thread issues its down rows' copies
  const int64_t rows_bytes = int64_t(w) * a.c * 2;
  block_copy_init(bar);
  __syncthreads();
  block_copy_arm(bar, 2 * rows_bytes + int64_t(a.c) * w * 2);
  __syncthreads();  // (armed before any copy lands)
  block_copy(gu, a.w_gu + int64_t(j0) * a.c, rows_bytes, bar);
  block_copy(gu + int64_t(w) * a.c, a.w_gu + (int64_t(a.f) + j0) * a.c, rows_bytes, bar);
  for (int32_t i = tid; i < a.c; i += kGateUpThreads)
    thread_copy(dn + int64_t(i) * a.wmax, a.w_down + int64_t(i) * a.f + j0, int64_t(w) * 2, bar);
  thread_copy_commit();
  for (int32_t i = tid; i < a.c; i += kGateUpThreads) xn[xn_at(i)] = __ldg(a.ln2 + i);
  pdl_wait();
  const unsigned long long t1 = all ? global_ns() : 0;
  // r = x + the heads' o partials in head order (as kernel 3); the block's r rows into the sums
  double ss = 0.0;
  for (int32_t i = tid; i < a.c; i += kGateUpThreads) {
    float v = __ldcg(a.x + i);
    for (int32_t h = 0; h < a.hq; h++) v += __ldcg(a.part + int64_t(h) * a.c + i);
    ss += double(v) * v;
    xn[xn_at(i)] *= v;
    if (i >= r0 && i < r1) fused_add(a, i, v);
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (lane == 0) red[warp] = ss;
  const unsigned long long t_res = all ? global_ns() : 0;
  block_copy_wait_all<0>(bar);  // (and a block barrier: every thread's xn, red)
  const unsigned long long t_gu = all ? global_ns() : 0;
  double total = 0.0;
  for (int v = 0; v < kGateUpWarps; v++) total += red[v];
  const float rstd = float(1.0 / sqrt(total / a.c + a.eps));
  // the 2 w gate and up rows, kDotRowsWide a warp at once (as kernel 3's)
  const int32_t chunks = a.c / 8, n = 2 * w;
  const float4* xn4 = reinterpret_cast<const float4*>(xn);
  const float4* xn4_hi = xn4 + chunks;
  for (int32_t q0 = warp; q0 < n; q0 += kGateUpWarps * kDotRowsWide) {
    float sum[kDotRowsWide];
#pragma unroll
    for (int r = 0; r < kDotRowsWide; r++) sum[r] = 0.0f;
    for (int32_t i = lane; i < chunks; i += 32) {
      const float4 x0 = xn4[i], x1 = xn4_hi[i];
#pragma unroll
      for (int r = 0; r < kDotRowsWide; r++) {
        const int32_t t = q0 + r * kGateUpWarps;
        if (t < n)
          sum[r] = dot8(reinterpret_cast<const uint4*>(gu + int64_t(t) * a.c)[i], x0, x1, sum[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kDotRowsWide; r++) {
      const int32_t t = q0 + r * kGateUpWarps;
      for (int o = 16; o > 0; o >>= 1) sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], o);
      if (lane == 0 && t < n) dots[t] = sum[r] * rstd;
    }
  }
  __syncthreads();
  for (int32_t q = tid; q < w; q += kGateUpThreads) {
    const float v = silu(dots[q]) * dots[w + q];
    actv[q] = v;
    a.act[j0 + q] = v;
  }
  __syncthreads();
  const unsigned long long t_act = all ? global_ns() : 0;
  if (all) {
    add_spans(a.times,
              {kSpanMlpEarlyAll, kSpanMlpActAll, kSpanMlpEarly, kSpanMlpAct, kSpanMlpGap,
               kStampAttnEnd, kStampMlpEnd, kSpanMlpBlocks},
              timing, t0, t1, t_act);
    atomicAdd(a.times + kSpanMlpResidualAll, t_res - t1);
    atomicAdd(a.times + kSpanMlpGateUpAll, t_gu - t1);
    if (timing) {
      atomicAdd(a.times + kSpanMlpResidual, t_res - t1);
      atomicAdd(a.times + kSpanMlpGateUp, t_gu - t1);
      atomicAdd(a.times + kSpanMlpWide, 1ull);
    }
  }
  // the block's columns' share of every x row: act . its down columns, into the sums
  for (int32_t i = tid; i < a.c; i += kGateUpThreads) {
    const uint4* row = reinterpret_cast<const uint4*>(dn + int64_t(i) * a.wmax);
    float sum = 0.0f;
    for (int32_t k = 0; k < w / 8; k++) {
      const float4 a0 = reinterpret_cast<const float4*>(actv)[2 * k];
      const float4 a1 = reinterpret_cast<const float4*>(actv)[2 * k + 1];
      sum = dot8(row[k], a0, a1, sum);
    }
    fused_add(a, i, sum);
  }
  // the last block to finish: x from the sums, which it zeroes (with the count and the flag)
  __threadfence();
  __syncthreads();
  if (tid == 0) *last = atomicAdd(a.done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (*last) {
    __threadfence();
    const bool flagged = __ldcg(a.bad) != 0;
    __syncthreads();  // (every thread has read the flag before thread 0 clears it)
    for (int32_t i = tid; i < a.c; i += kGateUpThreads) {
      const long long v = __ldcg(a.acc + i);
      a.x[i] = flagged ? __int_as_float(0x7fc00000) : float(double(v) / kFusedScale);
      a.acc[i] = 0;
    }
    if (tid == 0) {
      *a.done = 0;
      *a.bad = 0;
    }
  }
  if (all) {  // (kernel 4's spans from act: the down dots, the sums, the last block's x)
    const unsigned long long t_end = global_ns();
    add_spans(a.times,
              {kSpanDownEarlyAll, kSpanDownWorkAll, kSpanDownEarly, kSpanDownWork, kSpanDownGap,
               kStampMlpEnd, kStampDownEnd, kSpanDownBlocks},
              timing, t_act, t_act, t_end);
    if (timing) atomicAdd(a.times + kSpanCount, 1ull);  // (a layer timed)
    atomicMax(a.times + kStampDownEndMax, t_end);
  }
}

}  // namespace chain
}  // namespace arl
