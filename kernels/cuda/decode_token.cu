// arl_decode_layers_bf16 on the GPU: one token through every decoder layer in one persistent
// cooperative kernel, a block an SM. Each block streams its share of every layer's weights
// through a ring of shared-memory slots, in the order its steps use them and across the layers'
// boundaries, so that the weight stream never waits for the steps' dependencies unless the ring
// is full. The steps of a layer, each block taking its even share of the units:
//   q|k|v   x's RMSNorm, a RoPE pair of rows a unit, rotated and cached (as kernel 1 of the chain)
//   attn    block (h, r) < HQ x splits: query head h over key split r (online softmax; a record
//           of its max, sum and output); the head's last split to finish merges the records
//   o       a row of w_o a unit: x += attn . w_o^T (x becomes the residual r)
//   gate|up r's RMSNorm, a unit a gate and an up row: act = silu(gate) * up
//   down    a row of w_down a unit: x = r + act . w_down^T
// A step that needs another block's output waits on a counter (a release add after the writes,
// an acquire poll before the reads): the attention splits for the q|k|v count, o for the merged
// heads, gate|up for the o rows, down for the act units, the next layer's q|k|v for x. Every
// sum has a fixed order, so x is the same from run to run. The last block to leave zeroes the
// counters for the next launch. A wait of 5 s (the grid was not resident) raises a deferred
// error and lets every wait go, instead of hanging.
// Hopper issues the ring's copies as bulk copies on a barrier a slot; other GPUs (and the CUDA
// emulator) copy with cp.async and wait for all of them at each wave (correct, not overlapped).
// Opt-in (AGENTRL_CUDA_DECODE_TOKEN=1): on an H100 it is 0.55-0.62x the chain a layer
// (bench/results/gpu/DECODE_NOTES.md, session 15).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "block_copy.cuh"
#include "common.cuh"
#include "decode_split.cuh"
#include "env_switch.h"
#include "gemv.cuh"
#include "time_sums.cuh"
#include "../common/decode_layer.h"

namespace {

constexpr int kTokThreads = 256;
constexpr int kTokWarps = kTokThreads / 32;
// Thread 0 issues the ring's bulk copies; the block's waits, signals and atomics are another
// warp's (a fence in the thread that issued copies may wait for them).
constexpr int kTokLeader = 32;
constexpr int kTokMaxLayers = 48;  // layers a launch (their pointers are kernel parameters)
constexpr int kTokMaxHeads = 128;
constexpr int kTokMaxSplits = 16;  // key splits a head (its merge holds their records in registers)
constexpr int kTokMaxSlots = 8;
constexpr int kTokSlotBytes = 29 * 1024;  // 8 gate|up units, or 3 down rows, at Qwen2.5-0.5B
constexpr int kTokRotUnits = 32;   // q|k|v units a block keeps its rotations for (in shared memory)
constexpr int kTokOwnRows = 64;    // x rows a block keeps (its o and down rows)
constexpr int kTokChunkUnits = 32;  // units a chunk at most
constexpr int kTokLaneGroups = 4;   // 8-wide column groups of the step's vector a lane holds
constexpr int kTokMaxChunks = 64;   // chunks a layer at most (a block's table of them)
// Shared memory before the step's vector (offsets in bytes): the slots' barriers and the norms'
// partial sums (256 bytes), the rotations, the block's rows of x, the units' partial dots (a
// wave of the ring's chunks), the table of a layer's chunks.
constexpr int kTokRotAt = 256;
constexpr int kTokOwnAt = kTokRotAt + kTokRotUnits * 16;
constexpr int kTokDotsAt = kTokOwnAt + kTokOwnRows * 4;
constexpr int kTokTableAt = kTokDotsAt + kTokMaxSlots * kTokChunkUnits * 8;
constexpr int kTokHeaderBytes = kTokTableAt + kTokMaxChunks * 16;
// Counters a layer: q|k|v rows done (blocks), heads merged, o rows done (blocks), act units
// done (blocks), x rows done (blocks), then each head's splits done.
enum : int { kCntQkv, kCntAttn, kCntR, kCntAct, kCntX, kCntHeads };
// The steps with weights, in the ring's order within a layer.
enum : int { kStepQkv, kStepO, kStepGu, kStepDown, kWeightSteps };
// The waits for other blocks, in a layer's order.
enum : int { kWaitX, kWaitQkv, kWaitAttn, kWaitR, kWaitAct, kWaits };
// AGENTRL_CUDA_DECODE_TOKEN_TIMES=1's sums (ns; the leader thread of block 0, or of every
// block: All).
enum : int {
  kTmLayers,
  kTmLaunches,
  kTmKernel,
  kTmBlocks,
  kTmAttn,
  kTmWait,                            // kWaits words
  kTmWaitAll = kTmWait + kWaits,      // kWaits words
  kTmRing = kTmWaitAll + kWaits,      // kWeightSteps words: waits for a slot's bytes
  kTmRingAll = kTmRing + kWeightSteps,
  kTmStep = kTmRingAll + kWeightSteps,  // kWeightSteps words: a step's whole time
  kTmDots = kTmStep + kWeightSteps,     // kWeightSteps words: to the leader's last dot
  kTmIssue = kTmDots + kWeightSteps,    // kWeightSteps words: the barrier and the refills
  kTmWords = kTmIssue + kWeightSteps
};
static_assert(kTmWords <= arl::kTimeSumsMaxWords, "the token kernel's time sums need more words");

// The leader's clock where the sums are on (else 0).
__device__ inline unsigned long long tick(const unsigned long long* times) {
  return times != nullptr && threadIdx.x == kTokLeader ? arl::global_ns() : 0ull;
}
// Adds `since`'s span to word w (block 0) and to word w_all (every block; -1: none).
__device__ inline void tock(unsigned long long* times, unsigned long long since, int w,
                            int w_all) {
  if (times == nullptr || threadIdx.x != kTokLeader) return;
  const unsigned long long span = arl::global_ns() - since;
  if (blockIdx.x == 0 && w >= 0) atomicAdd(times + w, span);
  if (w_all >= 0) atomicAdd(times + w_all, span);
}

struct TokenArgs {
  arl_decode_layer_ptrs layer[kTokMaxLayers];
  float* x;
  float* qkv;
  float* attn;
  float* act;
  float* records;      // (hq, splits) records of d + 2 floats: output, max, sum
  unsigned* counters;  // n_layers x (kCntHeads + hq), then the exit count and the abort word
  const int32_t* slot;
  const int32_t* position;
  const int32_t* len;
  int* flag;
  int64_t* flag_index;
  unsigned long long* times;  // null, or AGENTRL_CUDA_DECODE_TOKEN_TIMES's sums
  int poll_ns;      // a waiting thread's sleep between polls (AGENTRL_CUDA_DECODE_TOKEN_POLL_NS)
  int no_wait;  // AGENTRL_CUDA_DECODE_TOKEN_NO_WAIT=1: no wait waits (wrong results; a measurement
                // of the blocks' own work without the dependencies between them)
  int32_t n_layers, c, f, hq, hkv, s, l, splits, slots, vec_floats;
  float eps, theta, scale;
};
static_assert(sizeof(TokenArgs) <= 4000, "the kernel's parameters must fit 4 KB");

// A block's share of one weight step: units [u0, u1), per_chunk of them a ring slot.
struct Share {
  int32_t u0, u1, per_chunk, chunks;
};

// A weight step's units: how many, the matrix's row length, and whether a unit is two rows.
struct StepShape {
  int32_t units, cols;
  bool two_rows;
};

template <int D>
__device__ StepShape step_shape(const TokenArgs& a, int step) {
  switch (step) {
    case kStepQkv: return {(a.hq + 2 * a.hkv) * D / 2, a.c, true};
    case kStepO: return {a.c, a.hq * D, false};
    case kStepGu: return {a.f, a.c, true};
    default: return {a.c, a.f, false};
  }
}

// Units a chunk of a step takes (rows of `cols` columns, two a unit or one): as many as fit a
// slot, at most kTokChunkUnits, a multiple of kTokWarps where that is at least one (every warp
// busy in a full chunk).
__host__ __device__ inline int32_t chunk_units(int64_t cols, bool two_rows) {
  int64_t most = kTokSlotBytes / ((two_rows ? 4 : 2) * cols);
  most = most < kTokChunkUnits ? most : kTokChunkUnits;
  if (most >= kTokWarps) most -= most % kTokWarps;
  return int32_t(most);
}

__device__ Share share_of(const StepShape& sh) {
  Share p;
  p.u0 = arl::share_begin(sh.units);
  p.u1 = arl::share_end(sh.units);
  const int32_t most = chunk_units(sh.cols, sh.two_rows);
  p.per_chunk = most;
  p.chunks = (p.u1 - p.u0 + most - 1) / most;
  return p;
}

// Unit u's two row indices (the second -1 for one-row units).
template <int D>
__device__ inline void unit_rows(const TokenArgs& a, int step, int32_t u, int32_t* r0,
                                 int32_t* r1) {
  if (step == kStepQkv) {
    *r0 = (u / (D / 2)) * D + u % (D / 2);
    *r1 = *r0 + D / 2;
  } else if (step == kStepGu) {
    *r0 = u;
    *r1 = a.f + u;
  } else {
    *r0 = u;
    *r1 = -1;
  }
}

__device__ inline const uint16_t* step_matrix(const arl_decode_layer_ptrs& p, int step) {
  return step == kStepQkv ? p.w_qkv : step == kStepO ? p.w_o : step == kStepGu ? p.w_gu : p.w_down;
}

// A chunk of a layer: its step, first unit and units.
struct Chunk {
  int32_t step, first, n, pad;
};

// The block's ring: slots of kTokSlotBytes, a barrier each (Hopper), and its table of a layer's
// chunks (the same for every layer).
struct Ring {
  char* base;
  uint64_t* bars;
  const Chunk* table;
  int slots;
  int per_layer;  // chunks a layer
};

__device__ inline const uint16_t* slot_rows(const Ring& ring, int32_t k) {
  return reinterpret_cast<const uint16_t*>(ring.base + (k % ring.slots) * kTokSlotBytes);
}

// The bytes that a slot's copies will bring on its barrier (thread 0 on Hopper): a relaxed
// arrive, as a release one would wait for this thread's earlier copies.
__device__ inline void ring_arm(uint64_t* bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.expect_tx.relaxed.cta.shared::cta.b64 _, [%0], %1;" ::"r"(b),
               "r"(bytes)
               : "memory");
#else
  (void)bar;
  (void)bytes;
#endif
}

// Copies chunk k (counted over all layers) into its slot: thread 0 on Hopper (bulk copies),
// every thread elsewhere (each calls it). Past the last chunk nothing is copied.
template <int D>
__device__ void ring_issue(const TokenArgs& a, const Ring& ring, int32_t k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x != 0) return;
#endif
  if (ring.per_layer == 0 || k >= a.n_layers * ring.per_layer) return;
  const int layer = k / ring.per_layer;
  const Chunk ch = ring.table[k % ring.per_layer];
  const StepShape sh = step_shape<D>(a, ch.step);
  const uint16_t* m = step_matrix(a.layer[layer], ch.step);
  const int64_t row_bytes = int64_t(sh.cols) * 2;
  char* dst = ring.base + (k % ring.slots) * kTokSlotBytes;
  uint64_t* bar = ring.bars + k % ring.slots;
  // (no proxy fence: the slot's last reads were generic loads whose values were used before the
  // block barrier that precedes this call)
  ring_arm(bar, uint32_t((sh.two_rows ? 2 : 1) * ch.n * row_bytes));
  if (ch.step == kStepQkv) {  // a pair's rows are d / 2 apart: a copy a row
    for (int32_t i = 0; i < ch.n; i++) {
      int32_t r0, r1;
      unit_rows<D>(a, ch.step, ch.first + i, &r0, &r1);
      arl::block_copy(dst + i * row_bytes, m + int64_t(r0) * sh.cols, row_bytes, bar);
      arl::block_copy(dst + (ch.n + i) * row_bytes, m + int64_t(r1) * sh.cols, row_bytes, bar);
    }
  } else {
    arl::block_copy(dst, m + int64_t(ch.first) * sh.cols, ch.n * row_bytes, bar);
    if (sh.two_rows)
      arl::block_copy(dst + ch.n * row_bytes, m + (int64_t(a.f) + ch.first) * sh.cols,
                      ch.n * row_bytes, bar);
  }
}

// Waits until chunk k is in its slot: the calling thread (Hopper's barrier a slot).
__device__ inline void chunk_wait(const Ring& ring, int32_t k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(ring.bars + k % ring.slots));
  const unsigned parity = unsigned(k / ring.slots) & 1u;
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(b), "r"(parity)
        : "memory");
#else
  (void)ring;
  (void)k;
#endif
}

// The leader waits until *counter >= target (the others at the barrier after it); a wait of
// arl::kGridStallNs sets the abort word and the deferred error, and every later wait passes.
__device__ void wait_count(const TokenArgs& a, const unsigned* counter, unsigned target,
                           int which) {
  const unsigned long long t0 = tick(a.times);
  if (threadIdx.x == kTokLeader) {
    const volatile unsigned* c = counter;
    volatile unsigned* abort_word = a.counters + int64_t(a.n_layers) * (kCntHeads + a.hq) + 1;
    if (*c < target && !a.no_wait) {
      const unsigned long long start = arl::global_ns();
      for (unsigned spins = 1; *c < target && *abort_word == 0; spins++) {
        __nanosleep(unsigned(a.poll_ns));
        if ((spins & 255u) == 0 && arl::global_ns() - start > arl::kGridStallNs) {
          *abort_word = 1;
          arl_set_flag(a.flag, a.flag_index, arl::kDeferredDecodeTokenStall, -1);
        }
      }
    }
    __threadfence();
  }
  __syncthreads();
  tock(a.times, t0, kTmWait + which, kTmWaitAll + which);
}

// After the block's writes: counter += 1, released to the other blocks.
__device__ inline void signal(unsigned* counter) {
  __syncthreads();
  if (threadIdx.x == kTokLeader) {
    __threadfence();
    atomicAdd(counter, 1u);
  }
}

// vec = src * g (g may be null: src); returns rstd = 1 / sqrt(mean(src^2) + eps) (src written
// by other blocks in this launch: read through L2). red: a word a warp.
__device__ float load_vec(float* vec, const float* src, const float* g, int32_t n, float eps,
                          float* red) {
  float ss = 0.0f;
  for (int32_t i = threadIdx.x; i < n; i += kTokThreads) {
    const float v = __ldcg(src + i);
    ss = fmaf(v, v, ss);
    vec[i] = g != nullptr ? v * __ldg(g + i) : v;
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();  // (red's next writer comes after other barriers)
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kTokWarps; w++) total += red[w];
  return rsqrtf(total / n + eps);
}

// A lane's part of the step's vector, in registers: its 8-wide column groups q0 + lane + 32 g.
struct Slice {
  float4 x[kTokLaneGroups][2];
};

__device__ inline void load_slice(Slice& s, const float* vec, int32_t q0, int32_t q1) {
  const int lane = threadIdx.x & 31;
  const float4* v = reinterpret_cast<const float4*>(vec);
#pragma unroll
  for (int g = 0; g < kTokLaneGroups; g++) {
    const int32_t q = q0 + lane + 32 * g;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    s.x[g][0] = q < q1 ? v[2 * q] : zero;
    s.x[g][1] = q < q1 ? v[2 * q + 1] : zero;
  }
}

// A unit's dots over the slice's columns (rows r0 and r1; r1 null: a one-row unit), summed
// over the warp. (Four units a warp at once, as independent chains, was slower on an H200:
// session 15, call 7.)
__device__ inline float2 dot_unit(const Slice& s, const uint16_t* r0, const uint16_t* r1,
                                  int32_t q0, int32_t q1) {
  const int lane = threadIdx.x & 31;
  float d0 = 0.0f, d1 = 0.0f;
#pragma unroll
  for (int g = 0; g < kTokLaneGroups; g++) {
    const int32_t q = q0 + lane + 32 * g;
    if (q < q1) {
      d0 = arl::dot8(reinterpret_cast<const uint4*>(r0)[q], s.x[g][0], s.x[g][1], d0);
      if (r1 != nullptr)
        d1 = arl::dot8(reinterpret_cast<const uint4*>(r1)[q], s.x[g][0], s.x[g][1], d1);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    d0 += __shfl_xor_sync(0xffffffffu, d0, o);
    d1 += __shfl_xor_sync(0xffffffffu, d1, o);
  }
  return make_float2(d0, d1);
}

// Column parts a row of `groups` 8-wide groups takes (a power of 2, at most kTokWarps) so that
// a lane holds its part of the vector in registers; 0 when the row is too long.
__host__ __device__ inline int column_parts(int32_t groups) {
  for (int parts = 1; parts <= kTokWarps; parts *= 2)
    if ((groups + parts - 1) / parts <= 32 * kTokLaneGroups) return parts;
  return 0;
}

// What a weight step does with a unit's dots, and the block's state it uses.
struct Finish {
  int step, layer;
  float rstd;
  const arl::RopeRow* rot;  // the rotations of q|k|v units [rot0, rot0 + kTokRotUnits)
  int32_t rot0;
  float* own;  // x's rows [own0, own0 + kTokOwnRows) as this block last wrote them, or null
  int32_t own0;
};

// The rotation of q|k|v unit u (a RoPE pair of `head`).
template <int D>
__device__ arl::RopeRow unit_rotation(const TokenArgs& a, const arl::GemvRope& r, int32_t u) {
  const int32_t head = u / (D / 2), o = u % (D / 2);
  const double inv_freq = pow(double(a.theta), -2.0 * o / D);  // as rope_trig
  return arl::rope_row(r, 0, head, inv_freq);
}

template <int D>
__device__ arl::GemvRope unit_rope(const TokenArgs& a, const arl_decode_layer_ptrs& p) {
  return arl::GemvRope{p.k_cache, p.v_cache, a.slot, a.position, a.hq,   a.hkv,
                       D,         a.s,       a.l,    a.theta,    a.flag, a.flag_index};
}

template <int D>
__device__ void finish_unit(const TokenArgs& a, const Finish& fin, int32_t u, float d0,
                            float d1) {
  const arl_decode_layer_ptrs& p = a.layer[fin.layer];
  switch (fin.step) {
    case kStepQkv: {
      const int32_t head = u / (D / 2), o = u % (D / 2), j0 = head * D + o;
      const float b0 = p.b_qkv != nullptr ? __ldg(p.b_qkv + j0) : 0.0f;
      const float b1 = p.b_qkv != nullptr ? __ldg(p.b_qkv + j0 + D / 2) : 0.0f;
      const arl::GemvRope r = unit_rope<D>(a, p);
      const int32_t at = u - fin.rot0;
      arl::rope_pair_store_row(a.qkv + j0, d0 * fin.rstd + b0, d1 * fin.rstd + b1, head, o, 0,
                               u == 0, r,
                               at < kTokRotUnits ? fin.rot[at] : unit_rotation<D>(a, r, u));
      break;
    }
    case kStepO:
    case kStepDown: {  // (the residual: this block wrote x's row u last, in its step before)
      const float v = (fin.own != nullptr ? fin.own[u - fin.own0] : __ldcg(a.x + u)) + d0;
      if (fin.own != nullptr) fin.own[u - fin.own0] = v;
      a.x[u] = v;
      break;
    }
    default: a.act[u] = arl::silu(d0 * fin.rstd) * (d1 * fin.rstd); break;
  }
}

// One weight step's chunks (the block's share p of its units), from the ring (k: the next chunk
// to consume; advanced), in waves of at most a ring's worth: each warp takes its share of the
// wave's (unit, column part) items, waiting for each item's chunk alone; after one block barrier
// thread 0 refills the wave's slots while the first threads finish a unit each.
template <int D>
__device__ void run_step(const TokenArgs& a, const Ring& ring, const Share& p, int32_t* k,
                         const float* vec, float2* dots, const Finish& fin) {
  if (p.chunks == 0) return;
  const StepShape sh = step_shape<D>(a, fin.step);
  const int32_t per_chunk = p.per_chunk, units = p.u1 - p.u0;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, groups = sh.cols / 8;
  const unsigned long long t_step = tick(a.times);
  // Warp w takes column part w % parts of the rows (that part of the vector in its registers)
  // and every (kTokWarps / parts)-th unit of a wave.
  const int parts = column_parts(groups), part = warp % parts, streams = kTokWarps / parts;
  const int32_t q0 = int32_t(int64_t(groups) * part / parts);
  const int32_t q1 = int32_t(int64_t(groups) * (part + 1) / parts);
  Slice slice;
  load_slice(slice, vec, q0, q1);
  for (int32_t c0 = 0; c0 < p.chunks; c0 += ring.slots) {
    const int32_t nc = min(ring.slots, p.chunks - c0);
    const int32_t wu = min(units - c0 * per_chunk, nc * per_chunk);  // the wave's units
#if !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
    arl::async_wait<0>();  // (each thread's own copies: then the block's barrier)
    __syncthreads();
#endif
    for (int32_t i = warp / parts; i < wu; i += streams) {
      const int32_t c = i / per_chunk, j = i % per_chunk;
      const int32_t n = min(per_chunk, wu - c * per_chunk);  // (chunk c's units)
      const unsigned long long t_wait = tick(a.times);
      chunk_wait(ring, *k + c);
      tock(a.times, t_wait, kTmRing + fin.step, kTmRingAll + fin.step);
      const uint16_t* rows = slot_rows(ring, *k + c);
      const float2 d = dot_unit(slice, rows + int64_t(j) * sh.cols,
                                sh.two_rows ? rows + int64_t(n + j) * sh.cols : nullptr, q0, q1);
      if (lane == 0) dots[i * parts + part] = d;
    }
    tock(a.times, t_step, kTmDots + fin.step, -1);
    const unsigned long long t_issue = tick(a.times);
    __syncthreads();  // (the wave's slots are read: refill them)
    for (int32_t c = 0; c < nc; c++) ring_issue<D>(a, ring, *k + c + ring.slots);
    tock(a.times, t_issue, kTmIssue + fin.step, -1);
    for (int32_t t = threadIdx.x; t < wu; t += kTokThreads) {
      float d0 = 0.0f, d1 = 0.0f;
      for (int q = 0; q < parts; q++) {
        d0 += dots[t * parts + q].x;
        d1 += dots[t * parts + q].y;
      }
      finish_unit<D>(a, fin, p.u0 + c0 * per_chunk + t, d0, d1);
    }
    *k += nc;
    if (c0 + nc < p.chunks) __syncthreads();  // (dots is the next wave's)
  }
  tock(a.times, t_step, kTmStep + fin.step, -1);
}

// Block (h, r)'s split of head h's keys, its record, and (the head's last split) the merge.
template <int D>
__device__ void attend(const TokenArgs& a, int layer, float* smem) {
  const int h = int(blockIdx.x) / a.splits, r = int(blockIdx.x) % a.splits;
  const int tid = threadIdx.x;
  float* qs = smem;
  float* wred = qs + D;                                                // maxima, sums
  float(*partial)[D] = reinterpret_cast<float(*)[D]>(wred + 2 * kTokWarps);
  int* last = reinterpret_cast<int*>(partial[kTokWarps]);
  const arl_decode_layer_ptrs& p = a.layer[layer];
  unsigned* counters = a.counters + int64_t(layer) * (kCntHeads + a.hq);
  wait_count(a, counters + kCntQkv, gridDim.x, kWaitQkv);
  const unsigned long long t_attn = tick(a.times);
  const int32_t slot = a.slot[0], len = a.len[0];
  const bool bad = slot < 0 || slot >= a.s || len < 1 || len > a.l;
  if (bad && blockIdx.x == 0 && tid == 0) {
    const bool bad_slot = slot < 0 || slot >= a.s;
    arl_set_flag(a.flag, a.flag_index,
                 bad_slot ? arl::kDeferredDecodeSlot : arl::kDeferredDecodeLen,
                 int64_t(uint32_t(bad_slot ? slot : len)));
  }
  if (tid < D) qs[tid] = __ldcg(a.qkv + h * D + tid) * a.scale;
  __syncthreads();
  // (a bad slot or length: no keys, so an empty record)
  const int32_t kvh = h / (a.hq / a.hkv), kv_slot = bad ? 0 : slot;
  const float* kb = p.k_cache + (int64_t(kv_slot) * a.hkv + kvh) * a.l * D;
  const float* vb = p.v_cache + (int64_t(kv_slot) * a.hkv + kvh) * a.l * D;
  const int32_t share = bad ? 0 : (len + a.splits - 1) / a.splits;
  const int32_t j_begin = bad ? 0 : min(len, r * share);
  const int32_t j_end = bad ? 0 : min(len, j_begin + share);
  arl::split_softmax<D, kTokWarps, 4>(qs, kb, vb, j_begin, j_end, partial, wred);
  float* rec = a.records + (int64_t(h) * a.splits + r) * (D + 2);
  arl::split_record<D, kTokWarps>(partial, wred, rec);
  __syncthreads();
  if (tid == kTokLeader) {
    __threadfence();
    *last = atomicAdd(counters + kCntHeads + h, 1u) == unsigned(a.splits - 1) ? 1 : 0;
    __threadfence();
  }
  __syncthreads();
  tock(a.times, t_attn, kTmAttn, -1);
  if (!*last) return;
  if (tid < D) {  // the head's records, all loaded at once (one round trip), merged in order
    const float* recs = a.records + int64_t(h) * a.splits * (D + 2);
    float m[kTokMaxSplits], l[kTokMaxSplits], o[kTokMaxSplits];
    float mx = -INFINITY;
#pragma unroll
    for (int q = 0; q < kTokMaxSplits; q++) {
      const bool on = q < a.splits;
      m[q] = on ? __ldcg(recs + q * (D + 2) + D) : -INFINITY;
      l[q] = on ? __ldcg(recs + q * (D + 2) + D + 1) : 0.0f;
      o[q] = on ? __ldcg(recs + q * (D + 2) + tid) : 0.0f;
    }
#pragma unroll
    for (int q = 0; q < kTokMaxSplits; q++) mx = fmaxf(mx, m[q]);
    float num = 0.0f, den = 0.0f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int q = 0; q < kTokMaxSplits; q++) {
        const float wq = q < a.splits ? __expf(m[q] - mx) : 0.0f;
        den = fmaf(wq, l[q], den);
        num = fmaf(wq, o[q], num);
      }
    }
    a.attn[h * D + tid] = den > 0.0f ? num / den : 0.0f;
  }
  signal(counters + kCntAttn);
}

template <int D>
__global__ void __launch_bounds__(kTokThreads, 1)
    decode_token_kernel(const __grid_constant__ TokenArgs a) {
  extern __shared__ float4 token_smem[];
  char* smem = reinterpret_cast<char*>(token_smem);
  Ring ring;
  ring.bars = reinterpret_cast<uint64_t*>(smem);
  float* red = reinterpret_cast<float*>(smem + 128);
  arl::RopeRow* rot = reinterpret_cast<arl::RopeRow*>(smem + kTokRotAt);
  float* own_rows = reinterpret_cast<float*>(smem + kTokOwnAt);
  float2* dots = reinterpret_cast<float2*>(smem + kTokDotsAt);
  Chunk* table = reinterpret_cast<Chunk*>(smem + kTokTableAt);
  float* vec = reinterpret_cast<float*>(smem + kTokHeaderBytes);
  ring.base = smem + kTokHeaderBytes + int64_t(a.vec_floats) * 4;
  ring.table = table;
  ring.slots = a.slots;
  // The table of a layer's chunks (the launch checked that they fit), and the steps' shares.
  Share share[kWeightSteps];
  ring.per_layer = 0;
  for (int step = 0; step < kWeightSteps; step++) {
    share[step] = share_of(step_shape<D>(a, step));
    for (int32_t c = 0; c < share[step].chunks; c++, ring.per_layer++) {
      const int32_t first = share[step].u0 + c * share[step].per_chunk;
      if (threadIdx.x == 0)
        table[ring.per_layer] =
            Chunk{step, first, min(share[step].per_chunk, share[step].u1 - first), 0};
    }
  }
  for (int i = 0; i < a.slots; i++) arl::block_copy_init(ring.bars + i);
  __syncthreads();
  for (int i = 0; i < a.slots; i++) ring_issue<D>(a, ring, i);
  // The rotations of the block's q|k|v units (the same position in every layer) and its rows
  // of x (no block writes x before every block has passed layer 0's q|k|v step).
  const int32_t rot0 = share[kStepQkv].u0, own0 = share[kStepO].u0;
  const arl::GemvRope rope0 = unit_rope<D>(a, a.layer[0]);
  for (int32_t i = threadIdx.x; i < min(kTokRotUnits, share[kStepQkv].u1 - rot0);
       i += kTokThreads)
    rot[i] = unit_rotation<D>(a, rope0, rot0 + i);
  float* own = share[kStepO].u1 - own0 <= kTokOwnRows ? own_rows : nullptr;
  if (own != nullptr)
    for (int32_t i = threadIdx.x; i < share[kStepO].u1 - own0; i += kTokThreads)
      own[i] = __ldcg(a.x + own0 + i);
  __syncthreads();
  int32_t k = 0;  // the next chunk to consume
  const unsigned blocks = gridDim.x;
  const unsigned long long t_kernel = tick(a.times);
  for (int layer = 0; layer < a.n_layers; layer++) {
    const arl_decode_layer_ptrs& p = a.layer[layer];
    const auto step_of = [&](int step, float rstd) {
      return Finish{step, layer, rstd, rot, rot0, own, own0};
    };
    unsigned* counters = a.counters + int64_t(layer) * (kCntHeads + a.hq);
    if (layer > 0) wait_count(a, counters - (kCntHeads + a.hq) + kCntX, blocks, kWaitX);
    float rstd = load_vec(vec, a.x, p.ln1, a.c, a.eps, red);
    run_step<D>(a, ring, share[kStepQkv], &k, vec, dots, step_of(kStepQkv, rstd));
    signal(counters + kCntQkv);
    if (int(blockIdx.x) < a.hq * a.splits) attend<D>(a, layer, vec);
    wait_count(a, counters + kCntAttn, unsigned(a.hq), kWaitAttn);
    load_vec(vec, a.attn, nullptr, a.hq * D, 0.0f, red);
    run_step<D>(a, ring, share[kStepO], &k, vec, dots, step_of(kStepO, 1.0f));
    signal(counters + kCntR);
    wait_count(a, counters + kCntR, blocks, kWaitR);
    rstd = load_vec(vec, a.x, p.ln2, a.c, a.eps, red);
    run_step<D>(a, ring, share[kStepGu], &k, vec, dots, step_of(kStepGu, rstd));
    signal(counters + kCntAct);
    wait_count(a, counters + kCntAct, blocks, kWaitAct);
    load_vec(vec, a.act, nullptr, a.f, 0.0f, red);
    run_step<D>(a, ring, share[kStepDown], &k, vec, dots, step_of(kStepDown, 1.0f));
    signal(counters + kCntX);
  }
  tock(a.times, t_kernel, kTmKernel, -1);
  if (a.times != nullptr && threadIdx.x == kTokLeader && blockIdx.x == 0) {
    atomicAdd(a.times + kTmLayers, (unsigned long long)a.n_layers);
    atomicAdd(a.times + kTmLaunches, 1ull);
    a.times[kTmBlocks] = blocks;
  }
  // The last block out zeroes the counters (every other block has passed its last wait).
  __syncthreads();
  if (threadIdx.x == kTokLeader) {
    const int64_t words = int64_t(a.n_layers) * (kCntHeads + a.hq);
    __threadfence();
    if (atomicAdd(a.counters + words, 1u) == blocks - 1) {
      for (int64_t i = 0; i < words + 2; i++) a.counters[i] = 0;
      __threadfence();
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

void print_token_times(const unsigned long long* h) {
  if (h[kTmLayers] == 0) return;
  const double n = 1e3 * double(h[kTmLayers]), all = n * double(h[kTmBlocks]);
  const char* waits[kWaits] = {"x", "q|k|v", "heads", "o rows", "act"};
  const char* steps[kWeightSteps] = {"q|k|v", "o", "gate|up", "down"};
  std::fprintf(stderr,
               "decode token kernel: %llu launches, %llu layers; a layer %.2f us (block 0), "
               "attention %.2f\n",
               h[kTmLaunches], h[kTmLayers], h[kTmKernel] / n, h[kTmAttn] / n);
  for (int w = 0; w < kWaits; w++)
    std::fprintf(stderr, "  wait for %-7s %6.2f us (block 0) %6.2f (mean)\n", waits[w],
                 h[kTmWait + w] / n, h[kTmWaitAll + w] / all);
  for (int st = 0; st < kWeightSteps; st++)
    std::fprintf(stderr,
                 "  step %-8s %6.2f us (block 0): slot waits %.2f (mean %.2f), warp 1's dots "
                 "done %.2f, barrier and refills %.2f\n",
                 steps[st], h[kTmStep + st] / n, h[kTmRing + st] / n, h[kTmRingAll + st] / all,
                 h[kTmDots + st] / n, h[kTmIssue + st] / n);
}

arl::TimeSums g_token_times{"AGENTRL_CUDA_DECODE_TOKEN_TIMES", kTmWords, print_token_times,
                            nullptr, -1};

// AGENTRL_CUDA_DECODE_TOKEN=1 runs the layers as this kernel; by default (it is slower than the
// chain a layer on an H100: bench/results/gpu/DECODE_NOTES.md, session 15) one
// arl_decode_layer_bf16 call a layer.
bool token_kernel_enabled() {
  static const bool on = arl::env_flag("AGENTRL_CUDA_DECODE_TOKEN", false);
  return on;
}

// The counters' buffer (ctx->decode_sync), allocated and zeroed once, outside graph recording.
unsigned* sync_words(arl_ctx* ctx) {
  if (ctx->decode_sync != nullptr) return static_cast<unsigned*>(ctx->decode_sync);
  if (ctx->capturing) return nullptr;
  const size_t bytes = (size_t(kTokMaxLayers) * (kCntHeads + kTokMaxHeads) + 2) * 4;
  if (cudaMalloc(&ctx->decode_sync, bytes) != cudaSuccess ||
      cudaMemsetAsync(ctx->decode_sync, 0, bytes, ctx->stream) != cudaSuccess ||
      cudaStreamSynchronize(ctx->stream) != cudaSuccess) {
    cudaGetLastError();
    if (ctx->decode_sync != nullptr) cudaFree(ctx->decode_sync);
    ctx->decode_sync = nullptr;
  }
  return static_cast<unsigned*>(ctx->decode_sync);
}

// Whether one block of the kernel (with `shared` bytes) fits an SM of the context's device, the
// attribute set and the occupancy asked once a (device, size).
template <int D>
bool token_fits(arl_ctx* ctx, size_t shared) {
  static std::mutex lock;
  static std::map<std::pair<int, size_t>, bool> known;
  std::lock_guard<std::mutex> guard(lock);
  const auto key = std::make_pair(ctx->device, shared);
  if (auto it = known.find(key); it != known.end()) return it->second;
  int per_sm = 0;
  bool fits = cudaFuncSetAttribute(decode_token_kernel<D>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(shared)) == cudaSuccess &&
              cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, decode_token_kernel<D>,
                                                            kTokThreads, shared) == cudaSuccess;
  if (!fits) cudaGetLastError();
  fits = fits && per_sm >= 1;
  known.emplace(key, fits);
  return fits;
}

// The one-kernel path, or ARL_ERR_UNSUPPORTED (nothing run) where its shapes, the device or the
// buffers do not allow it.
arl_status decode_token(arl_ctx* ctx, const char* fn, float* x, float* qkv, float* attn,
                        float* act, const arl_decode_layer_ptrs* layers, int32_t n_layers,
                        const int32_t* slot, const int32_t* position, const int32_t* len,
                        int32_t c, int32_t f, int32_t hq, int32_t hkv, int32_t d, int32_t s,
                        int32_t l, float eps, float theta, float scale) {
  if (!token_kernel_enabled() || !ctx->cooperative || n_layers > kTokMaxLayers ||
      (d != 64 && d != 128) || c % 8 != 0 || f % 8 != 0 || (hq * d) % 8 != 0 ||
      hq > kTokMaxHeads || hq > ctx->num_sms || !aligned16(x))
    return ARL_ERR_UNSUPPORTED;
  // a unit must fit a slot: a pair of q|k|v rows or a gate and an up row (4C bytes), an o row
  // (2 HQ D), a down row (2F)
  if (4 * int64_t(c) > kTokSlotBytes || 2 * int64_t(hq) * d > kTokSlotBytes ||
      2 * int64_t(f) > kTokSlotBytes)
    return ARL_ERR_UNSUPPORTED;
  for (int32_t i = 0; i < n_layers; i++) {
    const arl_decode_layer_ptrs& p = layers[i];
    if (!aligned16(p.w_qkv) || !aligned16(p.w_o) || !aligned16(p.w_gu) || !aligned16(p.w_down))
      return ARL_ERR_UNSUPPORTED;
  }
  const int blocks = ctx->num_sms;
  const int splits = std::max(1, std::min(kTokMaxSplits, blocks / hq));
  // a block's chunks a layer must fit its table (its largest share of each step's units)
  int64_t chunks = 0;
  const int64_t step_units[kWeightSteps][3] = {{(int64_t(hq) + 2 * hkv) * d / 2, c, 1},
                                               {c, int64_t(hq) * d, 0},
                                               {f, c, 1},
                                               {c, f, 0}};
  for (const auto& [units, cols, two] : step_units) {
    const int64_t most = chunk_units(cols, two != 0);
    const int64_t widest = (units + blocks - 1) / blocks;
    chunks += (widest + most - 1) / most;
  }
  if (chunks > kTokMaxChunks) return ARL_ERR_UNSUPPORTED;
  for (const auto& [units, cols, two] : step_units)
    if (column_parts(int32_t(cols / 8)) == 0) return ARL_ERR_UNSUPPORTED;
  if (size_t(hq) * splits * (d + 2) * sizeof(float) > arl::decode_records_bytes(ctx) ||
      !arl::decode_buffers(ctx))
    return ARL_ERR_UNSUPPORTED;
  unsigned* counters = sync_words(ctx);
  if (counters == nullptr) return ARL_ERR_UNSUPPORTED;
  // shared memory: the header, the step's input vector (or attention's q, records, partials),
  // then as many slots as fit (at least 2)
  const int64_t attn_floats = int64_t(kTokWarps + 1) * d + 2 * kTokWarps + 4;
  const int64_t vec_floats =
      (std::max({int64_t(c), int64_t(f), int64_t(hq) * d, attn_floats}) + 31) / 32 * 32;
  const int64_t fixed = kTokHeaderBytes + vec_floats * 4;
  int slots =
      int(std::min<int64_t>(kTokMaxSlots, (int64_t(ctx->max_smem) - fixed) / kTokSlotBytes));
  if (slots < 2) return ARL_ERR_UNSUPPORTED;
  // AGENTRL_CUDA_DECODE_TOKEN_SLOTS=n: at most n slots (a measurement's switch)
  static const int most_slots =
      arl::env_int("AGENTRL_CUDA_DECODE_TOKEN_SLOTS", 2, 1 << 20, 1 << 20);
  slots = std::min(slots, most_slots);
  const size_t shared = size_t(fixed) + size_t(slots) * kTokSlotBytes;
  if (!(d == 64 ? token_fits<64>(ctx, shared) : token_fits<128>(ctx, shared)))
    return ARL_ERR_UNSUPPORTED;
  TokenArgs a{};
  std::copy(layers, layers + n_layers, a.layer);
  a.x = x;
  a.qkv = qkv;
  a.attn = attn;
  a.act = act;
  a.records = static_cast<float*>(ctx->decode_partial);
  a.counters = counters;
  a.slot = slot;
  a.position = position;
  a.len = len;
  a.flag = ctx->flag;
  a.flag_index = ctx->flag_index;
  a.times = arl::time_sums(ctx, g_token_times);
  static const bool no_wait = arl::env_flag("AGENTRL_CUDA_DECODE_TOKEN_NO_WAIT", false);
  static const int poll_ns = arl::env_int("AGENTRL_CUDA_DECODE_TOKEN_POLL_NS", 0, 100000, 20);
  a.no_wait = no_wait;
  a.poll_ns = poll_ns;
  a.n_layers = n_layers;
  a.c = c;
  a.f = f;
  a.hq = hq;
  a.hkv = hkv;
  a.s = s;
  a.l = l;
  a.splits = splits;
  a.slots = slots;
  a.vec_floats = int32_t(vec_floats);
  a.eps = eps;
  a.theta = theta;
  a.scale = scale;
  const cudaError_t err =
      d == 64 ? arl::launch_cooperative(ctx, decode_token_kernel<64>, dim3(unsigned(blocks)),
                                        dim3(kTokThreads), shared, a)
              : arl::launch_cooperative(ctx, decode_token_kernel<128>, dim3(unsigned(blocks)),
                                        dim3(kTokThreads), shared, a);
  if (err == cudaErrorCooperativeLaunchTooLarge && !ctx->capturing) {
    cudaGetLastError();
    return ARL_ERR_UNSUPPORTED;
  }
  return arl::check_launch(ctx, fn);
}

}  // namespace

extern "C" {

arl_status arl_decode_layers_bf16(arl_ctx* ctx, float* x, float* qkv, float* attn, float* act,
                                  const arl_decode_layer_ptrs* layers, int32_t n_layers,
                                  const int32_t* slot, const int32_t* position,
                                  const int32_t* len, int32_t c, int32_t f, int32_t hq,
                                  int32_t hkv, int32_t d, int32_t s, int32_t l, float eps,
                                  float theta, float scale) {
  ARL_CTX(ctx);
  ARL_DECODE_LAYERS_ARGS(ctx);
  // (more layers than a launch takes: a launch each kTokMaxLayers)
  for (int32_t first = 0; first < n_layers; first += kTokMaxLayers) {
    const int32_t n = std::min(kTokMaxLayers, n_layers - first);
    arl_status st = decode_token(ctx, __func__, x, qkv, attn, act, layers + first, n, slot,
                                 position, len, c, f, hq, hkv, d, s, l, eps, theta, scale);
    if (st == ARL_ERR_UNSUPPORTED) {
      // a call a layer, each told the next layer's q|k|v rows (so that the chain's kernel 4 can
      // ask L2 for them: AGENTRL_CUDA_DECODE_NEXT_QKV)
      st = arl::decode_layers_each(
          ctx, x, qkv, attn, act, layers + first, n, slot, position, len, c, f, hq, hkv, d, s, l,
          eps, theta, scale, [&](int32_t i) {
            const int32_t next = first + i + 1;
            ctx->decode_next_qkv = next < n_layers ? layers[next].w_qkv : nullptr;
          });
      ctx->decode_next_qkv = nullptr;
    }
    if (st != ARL_OK) return st;
  }
  return ARL_OK;
}

}  // extern "C"
