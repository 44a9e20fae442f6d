// Sampling from logits with temperature, top-k and top-p: one block per row,
// the CPU library's counter-based random stream, its candidate order (logit
// descending, lower id first on ties; id order when neither top-k nor top-p is
// on) and its cumulative rules, without sorting the vocabulary.
//
// Each token's weight is w_j = exp(z_j - max z) (z = logit / temperature, in
// double as on the CPU), held as a 64-bit fixed-point integer q_j (w_j 2^kq,
// kq such that V 2^kq <= 2^63). Integer sums do not depend on their order, so
// every cumulative mass below is exact and deterministic. The kept set of top-k
// or top-p and the sampled token are each "the first token, in candidate
// order, where the running weight reaches a target", found by a radix select
// over the order-preserving bits of the logit (levels of 10, 11 and 11 bits;
// the first level's histogram comes from the pass that sums the softmax), and
// among tied logits by a count over ids. Candidate sets of any size work.
//
// Versus the CPU (sequential double sums): a boundary (top-p cut, sampled
// token) can differ only when the CPU's running sum lands within the
// fixed-point rounding (about V 2^-kq of the mass, ~1e-9 for V = 151936) of the
// target; tokens with w_j < 2^-(kq+1) have q_j = 0 and are never sampled (the
// CPU picks them with that probability). Exact logit ties are ordered as on the
// CPU; -0 and +0 count as equal, as they compare on the CPU.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "../common/sample_slots.h"
#include "common.cuh"
#include "env_switch.h"
#include "tail_times.cuh"

namespace {

using u64 = unsigned long long;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kBins1 = 1024;  // level 1: key bits 31..22 (sign, exponent, 1 mantissa bit)
constexpr int kBins2 = 2048;  // levels 2 and 3: key bits 21..11 and 10..0

__device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform double in [0, 1) from (seed, counter), as on the CPU.
__device__ inline double uniform(uint64_t seed, uint64_t counter) {
  const uint64_t bits = splitmix64(splitmix64(seed) ^ (counter * 0xd1b54a32d192ed03ULL));
  return double(bits >> 11) * (1.0 / 9007199254740992.0);
}

// Order-preserving map of a float to uint32 (larger float, larger key); -0 maps as +0.
__device__ inline uint32_t key_of(float x) {
  const uint32_t b = x == 0.0f ? 0u : __float_as_uint(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ inline float value_of(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// Per-row constants: z = x * inv_t (double, rounded as on the CPU), m = max z.
struct Row {
  const float* x;
  uint32_t v;
  double inv_t, m, scale;  // scale = 2^kq

  __device__ double weight(float xj) const {  // exp(z - m), no contraction (as on the CPU)
    return exp(__dsub_rn(__dmul_rn(double(xj), inv_t), m));
  }
  __device__ u64 q(float xj) const { return __double2ull_rn(weight(xj) * scale); }
};

struct Shared {
  u64 mass1[kBins1];  // level-1 histogram of the whole row (pass B)
  u64 mass[kBins2];   // levels 2 and 3
  uint32_t cnt1[kBins1];
  uint32_t cnt[kBins2];
  uint32_t idmin[kBins2];  // level 3: the lowest id of each key
  u64 wsum[kWarps];        // per-warp values: reductions, scans, segment totals
  double dsum[kWarps];
  float wmax[kWarps];
  uint32_t warg[kWarps];
  u64 sel_before_w, sel_before_m;  // select_bin's answer
  uint32_t sel_bin, result;
};

// The row is split into 32 contiguous warp segments (multiples of 32 ids), so that
// warp order is id order and every pass reads 128 contiguous bytes per warp load.
struct Segments {
  uint32_t len;
  __device__ explicit Segments(uint32_t v) {
    len = ((v + kWarps - 1) / kWarps + 31) / 32 * 32;
  }
  __device__ uint32_t lo(uint32_t w, uint32_t v) const { return min(v, w * len); }
  __device__ uint32_t hi(uint32_t w, uint32_t v) const { return min(v, (w + 1) * len); }
};

__device__ inline double warp_sum_d(double x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

__device__ inline u64 warp_sum_u(u64 x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Block sum: warp butterflies, then the 32 warp values in a fixed order (deterministic).
__device__ double block_sum_d(double x, Shared& sh) {
  x = warp_sum_d(x);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.dsum[threadIdx.x >> 5] = x;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kWarps; w++) total += sh.dsum[w];
  return total;
}

// Exclusive prefix sum of x over threads in thread order; *total = the sum of all.
__device__ u64 block_exclusive(u64 x, Shared& sh, u64* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  u64 inc = x;
  for (int o = 1; o < 32; o <<= 1) {
    const u64 y = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += y;
  }
  __syncthreads();
  if (lane == 31) sh.wsum[warp] = inc;
  __syncthreads();
  u64 before = 0, all = 0;
  for (int w = 0; w < kWarps; w++) {
    const u64 s = sh.wsum[w];
    if (w < warp) before += s;
    all += s;
  }
  *total = all;
  return before + inc - x;
}

// In a histogram read from the top bin down, the bin where the running weight (counts when
// by_count, else masses) first reaches target. Sets sh.sel_bin and the weights of the bins
// above it: sh.sel_before_w (the selected weight) and sh.sel_before_m (mass).
__device__ void select_bin(const uint32_t* cnt, const u64* mass, int nbins, bool by_count,
                           u64 target, Shared& sh) {
  const int per = nbins / kThreads;  // bins per thread, in descending order
  __syncthreads();
  if (threadIdx.x == 0) {  // fallback (not reached when target <= the total weight)
    sh.sel_bin = 0;
    sh.sel_before_w = 0;
    sh.sel_before_m = 0;
  }
  u64 ws = 0, ms = 0;
  for (int i = 0; i < per; i++) {
    const int b = nbins - 1 - (int(threadIdx.x) * per + i);
    ws += by_count ? u64(cnt[b]) : mass[b];
    ms += mass[b];
  }
  u64 total;
  u64 before_w = block_exclusive(ws, sh, &total);
  u64 before_m = by_count ? block_exclusive(ms, sh, &total) : before_w;
  if (before_w < target && before_w + ws >= target) {
    for (int i = 0; i < per; i++) {
      const int b = nbins - 1 - (int(threadIdx.x) * per + i);
      const u64 w = by_count ? u64(cnt[b]) : mass[b];
      if (before_w + w >= target) {
        sh.sel_bin = uint32_t(b);
        sh.sel_before_w = before_w;
        sh.sel_before_m = before_m;
        break;
      }
      before_w += w;
      before_m += mass[b];
    }
  }
  __syncthreads();
}

// The first id j in [lo, hi) where the running sum of weight(j) from lo reaches target
// (hi - 1 if none). Threads take contiguous runs; an exclusive scan finds the run.
template <class F>
__device__ uint32_t find_in_range(uint32_t lo, uint32_t hi, u64 target, F weight, Shared& sh) {
  __syncthreads();
  if (threadIdx.x == 0) sh.result = hi > lo ? hi - 1 : lo;
  const uint32_t len = hi - lo, run = (len + kThreads - 1) / kThreads;
  const uint32_t a = lo + min(len, threadIdx.x * run), b = lo + min(len, (threadIdx.x + 1) * run);
  u64 s = 0;
  for (uint32_t j = a; j < b; j++) s += weight(j);
  u64 total;
  u64 acc = block_exclusive(s, sh, &total);
  if (acc < target && acc + s >= target) {
    for (uint32_t j = a; j < b; j++) {
      acc += weight(j);
      if (acc >= target) {
        sh.result = j;
        break;
      }
    }
  }
  __syncthreads();
  return sh.result;
}

// Given per-warp segment totals in sh.wsum, the warp segment where the running total reaches
// target; then the id inside it. weight(j) must be the function the totals summed.
template <class F>
__device__ uint32_t find_by_segments(const Row& row, const Segments& seg, u64 target, F weight,
                                     Shared& sh) {
  __syncthreads();
  if (threadIdx.x == 0) {
    u64 before = 0;
    uint32_t w = kWarps - 1;
    for (uint32_t i = 0; i < kWarps; i++) {
      if (before + sh.wsum[i] >= target) {
        w = i;
        break;
      }
      before += sh.wsum[i];
    }
    sh.sel_bin = w;
    sh.sel_before_w = target > before ? target - before : 1;
  }
  __syncthreads();
  const uint32_t w = sh.sel_bin;
  const u64 rest = sh.sel_before_w;
  return find_in_range(seg.lo(w, row.v), seg.hi(w, row.v), rest, weight, sh);
}

struct Found {
  u64 prefix_mass;  // the mass of all candidates up to and including the token
  uint32_t id;      // the token (only when asked for)
};

// The first token in candidate order (key descending, id ascending) where the running count
// (by_count) or mass reaches target (1 <= target <= the total). sh.cnt1 / sh.mass1 hold the
// level-1 histogram of the row.
__device__ Found search(const Row& row, const Segments& seg, bool by_count, u64 target,
                        bool need_id, Shared& sh) {
  const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint32_t lo = seg.lo(warp, row.v), hi = seg.hi(warp, row.v);
  select_bin(sh.cnt1, sh.mass1, kBins1, by_count, target, sh);
  uint32_t prefix = sh.sel_bin;  // the key bits found so far
  u64 before_w = sh.sel_before_w, before_m = sh.sel_before_m;
  for (int level = 2; level <= 3; level++) {
    const int shift = level == 2 ? 11 : 0;  // bits below this level's digit
    const int match_shift = level == 2 ? 22 : 11;
    for (int i = threadIdx.x; i < kBins2; i += kThreads) {
      sh.cnt[i] = 0;
      sh.mass[i] = 0;
      sh.idmin[i] = 0xffffffffu;
    }
    __syncthreads();
    for (uint32_t j = lo + lane; j < hi; j += 32) {
      const float x = row.x[j];
      const uint32_t k = key_of(x);
      if ((k >> match_shift) != prefix) continue;
      const uint32_t d = (k >> shift) & (kBins2 - 1);
      if (by_count) atomicAdd(&sh.cnt[d], 1u);
      const u64 q = row.q(x);
      if (q != 0) atomicAdd(&sh.mass[d], q);
      if (level == 3 && need_id) atomicMin(&sh.idmin[d], j);
    }
    select_bin(sh.cnt, sh.mass, kBins2, by_count, target - before_w, sh);
    prefix = (prefix << 11) | sh.sel_bin;
    before_w += sh.sel_before_w;
    before_m += sh.sel_before_m;
  }
  // prefix is now the boundary token's key; its ties (equal keys) have equal weights.
  const uint32_t tau = prefix;
  const u64 omega = row.q(value_of(tau));
  u64 c = 1;  // how many of the ties, in id order, reach the target
  if (by_count) {
    c = target - before_w;
  } else if (omega != 0) {
    c = (target - before_m + omega - 1) / omega;
  }
  Found f;
  f.prefix_mass = before_m + c * omega;
  f.id = 0;
  if (need_id) {
    const uint32_t first = sh.idmin[sh.sel_bin];
    if (c == 1 && first != 0xffffffffu) {
      f.id = first;
    } else {
      // The c-th id with key tau: per-warp counts, then a search inside one segment.
      u64 n = 0;
      for (uint32_t j = lo + lane; j < hi; j += 32) n += key_of(row.x[j]) == tau;
      n = warp_sum_u(n);
      __syncthreads();
      if (lane == 0) sh.wsum[warp] = n;
      f.id = find_by_segments(row, seg, c, [&](uint32_t j) { return u64(key_of(row.x[j]) == tau); },
                              sh);
    }
  }
  return f;
}

// (mx, arg) := (om, oa) if that is a larger max, or the same max at a lower id.
__device__ inline void take_max(float& mx, uint32_t& arg, float om, uint32_t oa) {
  if (om > mx || (om == mx && oa < arg)) {
    mx = om;
    arg = oa;
  }
}

// (mx, arg) of every lane of a warp := the largest mx, and the lowest arg among its holders.
__device__ inline void warp_argmax(float& mx, uint32_t& arg) {
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, mx, o);
    take_max(mx, arg, om, __shfl_xor_sync(0xffffffffu, arg, o));
  }
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(int32_t* tokens, float* logprobs, int32_t* ids, const float* logits,
                  const float* temperature, const int32_t* top_k, const float* top_p,
                  const uint64_t* seeds, const uint64_t* counters, int32_t v, double scale) {
  __shared__ Shared sh;
  const int32_t r = blockIdx.x;
  const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  Row row;
  row.x = logits + int64_t(r) * v;
  row.v = uint32_t(v);
  row.scale = scale;
  const bool greedy = temperature[r] == 0.0f;
  row.inv_t = greedy ? 1.0 : 1.0 / double(temperature[r]);
  const Segments seg(row.v);
  const uint32_t lo = seg.lo(warp, row.v), hi = seg.hi(warp, row.v);
  const int32_t k = top_k[r];
  const bool use_k = !greedy && k > 0 && k < v, use_p = !greedy && top_p[r] < 1.0f;
  const bool sorted = use_k || use_p;

  // Pass A: max and the first id that holds it (as the CPU's scan).
  float mx = -INFINITY;
  uint32_t arg = 0xffffffffu;
  for (uint32_t j = lo + lane; j < hi; j += 32) {
    const float x = row.x[j];
    if (x > mx) {
      mx = x;
      arg = j;
    }
  }
  warp_argmax(mx, arg);
  if (lane == 0) {
    sh.wmax[warp] = mx;
    sh.warg[warp] = arg;
  }
  if (sorted) {
    for (int i = threadIdx.x; i < kBins1; i += kThreads) {
      sh.cnt1[i] = 0;
      sh.mass1[i] = 0;
    }
  }
  __syncthreads();
  mx = sh.wmax[0];
  arg = sh.warg[0];
  for (int w = 1; w < kWarps; w++) take_max(mx, arg, sh.wmax[w], sh.warg[w]);
  const uint32_t best = arg < row.v ? arg : 0;  // all -inf or NaN: 0, as on the CPU
  row.m = __dmul_rn(double(mx), row.inv_t);

  // Pass B: sum of exp(z - m) (double); fixed-point masses: the level-1 histogram (sorted
  // order) or the warp segments' totals (id order).
  double s = 0.0;
  u64 qs = 0;
  if (greedy) {
    // Only the argmax's log-prob needs the sum: exp in float (relative error ~1e-7 per term),
    // summed in double; a tenth of the double-exp pass's time on a large vocabulary.
    const float mf = mx;
    for (uint32_t j = lo + lane; j < hi; j += 32) s += double(expf(row.x[j] - mf));
  }
  for (uint32_t j = lo + lane; !greedy && j < hi; j += 32) {
    const float x = row.x[j];
    const double e = row.weight(x);
    s += e;
    const u64 q = __double2ull_rn(e * row.scale);
    qs += q;
    if (sorted) {
      const uint32_t b = key_of(x) >> 22;
      if (use_k) atomicAdd(&sh.cnt1[b], 1u);
      if (q != 0) atomicAdd(&sh.mass1[b], q);
    }
  }
  const double sum = block_sum_d(s, sh);
  const double lse = __dadd_rn(row.m, log(sum));

  uint32_t chosen = best;
  if (!greedy) {
    const double u01 = uniform(seeds[r], counters[r]);
    qs = warp_sum_u(qs);
    __syncthreads();
    if (lane == 0) sh.wsum[warp] = qs;
    __syncthreads();
    u64 q_kept = 0;  // the mass of the candidates
    for (int w = 0; w < kWarps; w++) q_kept += sh.wsum[w];
    // NaN or infinite logits (lse or m not finite; NaN masses convert to anything): keep the
    // argmax, as the CPU library does
    if (q_kept != 0 && isfinite(lse) && isfinite(row.m)) {
      if (!sorted) {
        // Inverse CDF in id order: the first id where the running mass exceeds u01 * mass.
        const u64 u = __double2ull_rz(u01 * double(q_kept));
        const u64 target = u < q_kept ? u + 1 : q_kept;
        chosen = find_by_segments(row, seg, target, [&](uint32_t j) { return row.q(row.x[j]); },
                                  sh);
      } else {
        if (use_k) q_kept = search(row, seg, true, u64(k), false, sh).prefix_mass;
        if (use_p) {
          // The smallest prefix whose mass reaches top_p of the kept mass.
          u64 target = u64(ceil(double(top_p[r]) * double(q_kept)));
          target = target < 1 ? 1 : (target > q_kept ? q_kept : target);
          q_kept = search(row, seg, false, target, false, sh).prefix_mass;
        }
        const u64 u = __double2ull_rz(u01 * double(q_kept));
        const u64 target = u < q_kept ? u + 1 : q_kept;
        chosen = search(row, seg, false, target, true, sh).id;
      }
    }
    if (chosen >= row.v) chosen = best;
  }
  if (threadIdx.x == 0) {
    tokens[r] = int32_t(chosen);
    if (ids != nullptr) ids[r] = int32_t(chosen);
    logprobs[r] = float(__dsub_rn(__dmul_rn(double(row.x[chosen]), row.inv_t), lse));
  }
}

// Greedy rows split across blocks (few rows, so that the whole GPU reads the logits): block
// (r, b) scans its share of row r for the max and its first id and sums exp(x - its max) (float
// exp, double sum, as sample_kernel's greedy pass); the row's last block to finish resets the
// row's counter, merges the records and writes the token and its log-prob, and row 0's also
// copies the deferred-error flag. tokens, logprobs and flag_out are pinned host memory (written
// through the mapping: no copy after the kernel); ids (device memory) may be null. times: the
// decode chain's stamps (tail_times.cuh), null unless timed.
struct GreedyPart {
  double sum;
  float max;
  uint32_t arg;
};

constexpr int kGreedyThreads = 256;

// AGENTRL_CUDA_GREEDY_PDL=0: greedy_split_kernel is launched without programmatic dependent
// launch (a baseline for benchmarks).
bool greedy_pdl() {
  static const bool value = arl::env_flag("AGENTRL_CUDA_GREEDY_PDL", true);
  return value;
}

__global__ void __launch_bounds__(kGreedyThreads)
    greedy_split_kernel(int32_t* tokens, float* logprobs, int32_t* ids, const float* logits,
                        int32_t v,
                        GreedyPart* parts, int* done, const int64_t* flag, int64_t* flag_out,
                        unsigned long long* times) {
  __shared__ float wmax[kGreedyThreads / 32];
  __shared__ uint32_t warg[kGreedyThreads / 32];
  __shared__ double wsum[kGreedyThreads / 32];
  __shared__ bool last;
  arl::pdl_wait();  // (launched early behind the LM head: see start_sample)
  arl::tail_stamp_start(times, arl::kTailGreedyWait);
  const int32_t r = blockIdx.x, b = blockIdx.y, splits = gridDim.y;
  const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const float* x = logits + int64_t(r) * v;
  const uint32_t share = (uint32_t(v) + splits - 1) / splits;
  const uint32_t lo = min(uint32_t(v), b * share), hi = min(uint32_t(v), lo + share);
  float mx = -INFINITY;
  uint32_t arg = 0xffffffffu;
  for (uint32_t j = lo + threadIdx.x; j < hi; j += kGreedyThreads) {
    const float xj = x[j];
    if (xj > mx) {
      mx = xj;
      arg = j;
    }
  }
  warp_argmax(mx, arg);
  if (lane == 0) {
    wmax[warp] = mx;
    warg[warp] = arg;
  }
  __syncthreads();
  mx = wmax[0];
  arg = warg[0];
  for (int w = 1; w < kGreedyThreads / 32; w++) take_max(mx, arg, wmax[w], warg[w]);
  double s = 0.0;
  for (uint32_t j = lo + threadIdx.x; j < hi; j += kGreedyThreads) s += double(expf(x[j] - mx));
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) wsum[warp] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < kGreedyThreads / 32; w++) total += wsum[w];
    parts[int64_t(r) * splits + b] = GreedyPart{total, mx, arg};
    __threadfence();
    last = atomicAdd(&done[r], 1) == splits - 1;
    if (last) done[r] = 0;  // (every block of the row has counted: ready for the next call)
  }
  __syncthreads();
  if (!last || warp != 0) return;  // the last block's first warp merges the records
  __threadfence();
  const GreedyPart* p = parts + int64_t(r) * splits;
  float m = -INFINITY;
  uint32_t best = 0xffffffffu;
  for (int i = lane; i < splits; i += 32) take_max(m, best, __ldcg(&p[i].max), __ldcg(&p[i].arg));
  warp_argmax(m, best);
  double sum = 0.0;  // the blocks' sums, rescaled from their maxima to the row's
  for (int i = lane; i < splits; i += 32) {
    const float pm = __ldcg(&p[i].max);
    if (pm != -INFINITY) sum += __ldcg(&p[i].sum) * exp(double(pm) - double(m));
  }
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane != 0) return;
  if (!(m > -INFINITY)) sum = __ldcg(&p[0].sum);  // all -inf or NaN: as sample_kernel
  const uint32_t chosen = best < uint32_t(v) ? best : 0;  // all -inf or NaN: 0, as on the CPU
  const double lse = __dadd_rn(double(m), log(sum));
  tokens[r] = int32_t(chosen);
  if (ids != nullptr) ids[r] = int32_t(chosen);
  logprobs[r] = float(__dsub_rn(double(x[chosen]), lse));
  if (r == 0) {  // (the kernels before this one on the stream have finished)
    flag_out[0] = __ldcg(flag);
    flag_out[1] = __ldcg(flag + 1);
  }
  arl::tail_stamp_end(times, arl::kTailGreedyEnd);
}

// The host memory of a sampling, in its slot's pinned buffer: results first (written by the
// kernels or copied back), then the flag's copy, then the settings (copied to the device).
struct SampleLayout {
  size_t tok, lp, flag, seed, counter, temp, k, p, bytes;
  explicit SampleLayout(size_t rows) {
    size_t off = 0;
    auto place = [&](size_t size) {
      const size_t at = off;
      off += (size + 15) & ~size_t(15);
      return at;
    };
    tok = place(rows * 4);
    lp = place(rows * 4);
    flag = place(16);
    seed = place(rows * 8);
    counter = place(rows * 8);
    temp = place(rows * 4);
    k = place(rows * 4);
    p = place(rows * 4);
    bytes = off;
  }
};

// The slot's pinned buffer with room for `bytes`, and its event (the slot is free).
arl_status prepare_slot(arl_ctx* ctx, const char* fn, arl::SampleSlot& slot, size_t bytes) {
  if (slot.done == nullptr) {
    if (cudaError_t err = cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming)) {
      slot.done = nullptr;
      return arl::cuda_fail(ctx, fn, err);
    }
  }
  if (bytes <= slot.host_bytes) return ARL_OK;
  if (slot.host != nullptr) cudaFreeHost(slot.host);
  slot.host = nullptr;
  slot.host_bytes = 0;
  const size_t size = bytes < 4096 ? 4096 : bytes + bytes / 4;
  if (cudaMallocHost(&slot.host, size) != cudaSuccess) {
    cudaGetLastError();
    slot.host = nullptr;
    return arl::fail(ctx, ARL_ERR_ALLOC, "%s: out of pinned host memory for %zu bytes", fn,
                     bytes);
  }
  slot.host_bytes = size;
  return ARL_OK;
}

// Whether a greedy sampling is queued and not finished (its kernel resets the row counters).
bool greedy_queued(const arl_ctx* ctx) {
  for (const arl::SampleSlot& slot : ctx->samples)
    if (slot.ticket != 0 && slot.greedy) return true;
  return false;
}

// Queues the sampling (arguments checked) into a free slot (arl_sample's own: `own`); *ticket
// names it.
arl_status start_sample(arl_ctx* ctx, const char* fn, bool own, int64_t* ticket, int32_t* ids,
                        const float* logits, const float* temperature, const int32_t* top_k,
                        const float* top_p, const uint64_t* seeds, const uint64_t* counters,
                        int32_t n, int32_t v) {
  if (ctx->capturing)
    return arl::fail(ctx, ARL_ERR_UNSUPPORTED,
                     "%s: sampling returns host results, which a graph cannot record", fn);
  int at = ARL_SAMPLE_PENDING;
  if (!own) {
    if (arl_status s = arl::claim_sample_slot(ctx, fn, ctx->samples, &at)) return s;
  }
  arl::SampleSlot& slot = ctx->samples[at];
  const size_t rows = size_t(n);
  const SampleLayout host(rows);
  if (arl_status s = prepare_slot(ctx, fn, slot, host.bytes)) return s;
  // Fixed-point scale 2^kq with V 2^kq <= 2^63, so that no sum of masses overflows.
  int bits = 0;
  while ((int64_t(1) << bits) < int64_t(v)) bits++;
  const double scale = std::ldexp(1.0, 63 - bits);
  // All rows greedy and too few to fill the GPU: each row split across blocks (their records in
  // device scratch, the rows' counters in ctx->greedy_done).
  bool all_greedy = true;
  for (int32_t i = 0; i < n && all_greedy; i++) all_greedy = temperature[i] == 0.0f;
  int64_t splits = 1;
  if (all_greedy && int64_t(n) * 2 < ctx->num_sms && n <= kArlGreedyMaxRows) {
    splits = (2 * int64_t(ctx->num_sms) + n - 1) / n;
    splits = min(splits, int64_t((v + 1023) / 1024));  // at least 1024 logits a block
  }
  // Device scratch: the settings (as in host memory, from seed on), then the results, or the
  // greedy records. Samplings queued one after another share it in stream order.
  const size_t settings = host.bytes - host.seed, o_res = (settings + 255) & ~size_t(255);
  const size_t dev_bytes =
      o_res + (splits > 1 ? rows * size_t(splits) * sizeof(GreedyPart) : host.seed);
  auto* dev = static_cast<char*>(arl::scratch(ctx, fn, dev_bytes));
  if (dev == nullptr) return ARL_ERR_ALLOC;
  char* h = slot.host;
  cudaError_t err = cudaSuccess;
  if (splits > 1) {
    // Greedy rows need no settings on the device; the kernel writes its results and the flag
    // into pinned host memory, so a step is the kernel and a wait.
    if (ctx->greedy_dirty && !greedy_queued(ctx))
      err = cudaMemsetAsync(ctx->greedy_done, 0, sizeof(int) * kArlGreedyMaxRows, ctx->stream);
    if (err != cudaSuccess) return arl::cuda_fail(ctx, fn, err);
    ctx->greedy_dirty = true;  // (until a finished sampling shows the kernels ran through)
    // With programmatic dependent launch (outside graphs too: the kernel reads nothing before
    // its pdl_wait), its blocks are resident and waiting as the LM head's GEMV ends, instead of
    // being launched after it.
    err = arl::launch_with(
        ctx, greedy_split_kernel, dim3(unsigned(n), unsigned(splits)), dim3(kGreedyThreads), 0,
        arl::pdl_attribute(), ctx->pdl && greedy_pdl(), reinterpret_cast<int32_t*>(h + host.tok),
        reinterpret_cast<float*>(h + host.lp), ids, logits, v,
        reinterpret_cast<GreedyPart*>(dev + o_res), ctx->greedy_done,
        reinterpret_cast<const int64_t*>(ctx->flag), reinterpret_cast<int64_t*>(h + host.flag),
        arl::decode_chain_times(ctx));
    if (err == cudaSuccess) err = cudaGetLastError();
  } else {
    std::memcpy(h + host.seed, seeds, rows * 8);
    std::memcpy(h + host.counter, counters, rows * 8);
    std::memcpy(h + host.temp, temperature, rows * 4);
    std::memcpy(h + host.k, top_k, rows * 4);
    std::memcpy(h + host.p, top_p, rows * 4);
    auto at_dev = [&](size_t host_offset) { return dev + (host_offset - host.seed); };
    err = cudaMemcpyAsync(dev, h + host.seed, settings, cudaMemcpyHostToDevice, ctx->stream);
    if (err == cudaSuccess) {
      sample_kernel<<<unsigned(n), kThreads, 0, ctx->stream>>>(
          reinterpret_cast<int32_t*>(dev + o_res + host.tok),
          reinterpret_cast<float*>(dev + o_res + host.lp), ids, logits,
          reinterpret_cast<const float*>(at_dev(host.temp)),
          reinterpret_cast<const int32_t*>(at_dev(host.k)),
          reinterpret_cast<const float*>(at_dev(host.p)),
          reinterpret_cast<const uint64_t*>(at_dev(host.seed)),
          reinterpret_cast<const uint64_t*>(at_dev(host.counter)), v, scale);
      err = cudaGetLastError();
    }
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(h, dev + o_res, host.flag, cudaMemcpyDeviceToHost, ctx->stream);
    if (err == cudaSuccess)
      err = cudaMemcpyAsync(h + host.flag, ctx->flag, 16, cudaMemcpyDeviceToHost, ctx->stream);
  }
  if (err == cudaSuccess) err = cudaEventRecord(slot.done, ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, fn, err);
  slot.greedy = splits > 1;
  slot.n = n;
  slot.ticket = ++ctx->sample_tickets;
  *ticket = slot.ticket;
  return ARL_OK;
}

// Waits for a sampling's event and reads its results (tokens null: dropped).
arl_status finish_sample(arl_ctx* ctx, const char* fn, int32_t* tokens, float* logprobs,
                         int64_t ticket, int32_t n) {
  int at = 0;
  if (arl_status s =
          arl::find_sample_slot(ctx, fn, ctx->samples, ARL_SAMPLE_PENDING + 1, ticket, n, &at))
    return s;
  arl::SampleSlot& slot = ctx->samples[at];
  const cudaError_t err = cudaEventSynchronize(slot.done);
  slot.ticket = 0;
  if (err != cudaSuccess) return arl::cuda_fail(ctx, fn, err);
  if (slot.greedy && !greedy_queued(ctx)) ctx->greedy_dirty = false;
  const SampleLayout host{size_t(n)};
  auto* flag = reinterpret_cast<int64_t*>(slot.host + host.flag);
  if (ticket > ctx->sample_flag_reported) {
    if (arl_status s = arl::report_flag_copy(ctx, fn, "a kernel flagged a bad value", flag))
      return s;
  }
  if (tokens == nullptr) return ARL_OK;
  std::memcpy(tokens, slot.host + host.tok, size_t(n) * 4);
  if (logprobs != nullptr) std::memcpy(logprobs, slot.host + host.lp, size_t(n) * 4);
  return ARL_OK;
}

}  // namespace

extern "C" {

arl_status arl_sample(arl_ctx* ctx, int32_t* tokens, float* logprobs, const float* logits,
                      const float* temperature, const int32_t* top_k, const float* top_p,
                      const uint64_t* seeds, const uint64_t* counters, int32_t n, int32_t v) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, tokens);
  ARL_SAMPLE_ARGS(ctx, logits, temperature, top_k, top_p, seeds, counters, n, v);
  int64_t ticket = 0;
  if (arl_status s = start_sample(ctx, __func__, true, &ticket, nullptr, logits, temperature,
                                  top_k, top_p, seeds, counters, n, v))
    return s;
  return finish_sample(ctx, __func__, tokens, logprobs, ticket, n);
}

arl_status arl_sample_start(arl_ctx* ctx, int64_t* ticket, int32_t* ids, const float* logits,
                            const float* temperature, const int32_t* top_k, const float* top_p,
                            const uint64_t* seeds, const uint64_t* counters, int32_t n,
                            int32_t v) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, ticket);
  ARL_SAMPLE_ARGS(ctx, logits, temperature, top_k, top_p, seeds, counters, n, v);
  return start_sample(ctx, __func__, false, ticket, ids, logits, temperature, top_k, top_p,
                      seeds, counters, n, v);
}

arl_status arl_sample_finish(arl_ctx* ctx, int32_t* tokens, float* logprobs, int64_t ticket,
                             int32_t n) {
  ARL_CTX(ctx);
  return finish_sample(ctx, __func__, tokens, logprobs, ticket, n);
}

}  // extern "C"
