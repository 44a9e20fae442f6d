// Sampling from logits with temperature, top-k and top-p, one block per row,
// with the CPU library's counter-based random stream and candidate order, so
// that the same logits give the same token on both (up to the association of
// double-precision sums, which can only matter when u falls within rounding of
// a boundary between two tokens).
//
// Candidates for top-k / top-p are found without sorting the vocabulary: a
// radix select on the logits' bits finds the threshold, the candidates (at most
// kMaxCandidates) are compacted in id order and sorted in shared memory.
#include <cmath>
#include <cstring>

#include "common.cuh"

namespace {

constexpr int kThreads = 1024;
constexpr int kMaxCandidates = 1024;

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

// Order-preserving map of a float to uint32 (larger float, larger key).
__device__ inline uint32_t key_of(float x) {
  const uint32_t b = __float_as_uint(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

struct Shared {
  double d[32];
  long long i[32];
  double prefix[kThreads];
  float cand_x[kMaxCandidates];
  int32_t cand_id[kMaxCandidates];
  int32_t count;
};

__device__ double block_sum_d(double v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.d[threadIdx.x >> 5] = v;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kThreads / 32; w++) total += sh.d[w];  // fixed order
  return total;
}

__device__ long long block_sum_i(long long v, Shared& sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh.i[threadIdx.x >> 5] = v;
  __syncthreads();
  long long total = 0;
  for (int w = 0; w < kThreads / 32; w++) total += sh.i[w];
  return total;
}

// Exclusive prefix over threads of v (in thread order); sets *total.
__device__ double block_exclusive_d(double v, Shared& sh, double* total) {
  __syncthreads();
  sh.prefix[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    double run = 0.0;
    for (int t = 0; t < kThreads; t++) {
      const double x = sh.prefix[t];
      sh.prefix[t] = run;
      run += x;
    }
    sh.d[0] = run;
  }
  __syncthreads();
  *total = sh.d[0];
  return sh.prefix[threadIdx.x];
}

__global__ void __launch_bounds__(kThreads)
    sample_kernel(int32_t* tokens, float* logprobs, int* unsupported, const float* logits,
                  const float* temperature, const int32_t* top_k, const float* top_p,
                  const uint64_t* seeds, const uint64_t* counters, int32_t v) {
  __shared__ Shared sh;
  const int32_t r = blockIdx.x;
  const float* row = logits + int64_t(r) * v;
  const bool greedy = temperature[r] == 0.0f;
  const double inv_t = greedy ? 1.0 : 1.0 / double(temperature[r]);
  // Each thread owns a contiguous id segment [j0, j1), so thread order is id order.
  const int32_t seg = (v + kThreads - 1) / kThreads;
  const int32_t j0 = min(v, int32_t(threadIdx.x) * seg), j1 = min(v, j0 + seg);

  // Max (first id on ties) and the sum of exp(z - max).
  double m = -INFINITY;
  int32_t best = v;
  for (int32_t j = j0; j < j1; j++) {
    const double z = row[j] * inv_t;
    if (z > m) {
      m = z;
      best = j;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const double om = __shfl_xor_sync(0xffffffffu, m, o);
    const int32_t ob = __shfl_xor_sync(0xffffffffu, best, o);
    if (om > m || (om == m && ob < best)) {
      m = om;
      best = ob;
    }
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) {
    sh.d[threadIdx.x >> 5] = m;
    sh.i[threadIdx.x >> 5] = best;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double bm = -INFINITY;
    long long bb = v;
    for (int w = 0; w < kThreads / 32; w++)
      if (sh.d[w] > bm || (sh.d[w] == bm && sh.i[w] < bb)) {
        bm = sh.d[w];
        bb = sh.i[w];
      }
    sh.d[0] = bm;
    sh.i[0] = bb;
  }
  __syncthreads();
  m = sh.d[0];
  best = int32_t(sh.i[0]);
  double part = 0.0;
  for (int32_t j = j0; j < j1; j++) part += exp(row[j] * inv_t - m);
  const double sum = block_sum_d(part, sh);
  const double lse = m + log(sum);

  int32_t chosen = best;
  if (!greedy) {
    const int32_t k = top_k[r];
    const bool use_k = k > 0 && k < v, use_p = top_p[r] < 1.0f;
    const double u01 = uniform(seeds[r], counters[r]);
    if (!use_k && !use_p) {
      // Inverse CDF over the whole vocabulary in id order.
      double total;
      const double before = block_exclusive_d(part, sh, &total);
      const double u = u01 * sum;
      if (threadIdx.x == 0) sh.count = v - 1;
      __syncthreads();
      if (u >= before && u < before + part) {
        double acc = before;
        for (int32_t j = j0; j < j1; j++) {
          acc += exp(row[j] * inv_t - m);
          if (u < acc) {
            sh.count = j;
            break;
          }
        }
      }
      __syncthreads();
      chosen = sh.count;
    } else {
      // Threshold: the top-k's smallest key, or (top-p alone) the largest key whose
      // upper set holds at least top_p of the mass; then every key >= it is a candidate.
      const double target_mass = double(top_p[r]) * sum;
      uint32_t thr = 0;
      for (int bit = 31; bit >= 0; bit--) {
        const uint32_t cand = thr | (1u << bit);
        long long cnt = 0;
        double mass = 0.0;
        for (int32_t j = j0; j < j1; j++)
          if (key_of(row[j]) >= cand) {
            cnt++;
            if (!use_k) mass += exp(row[j] * inv_t - m);
          }
        const bool keep = use_k ? block_sum_i(cnt, sh) >= k : block_sum_d(mass, sh) >= target_mass;
        if (keep) thr = cand;
      }
      // Compact candidates in id order: all keys > thr, then keys == thr in id order
      // (for top-k, only as many as fill k).
      long long gt = 0, eq = 0;
      for (int32_t j = j0; j < j1; j++) {
        const uint32_t kj = key_of(row[j]);
        gt += kj > thr;
        eq += kj == thr;
      }
      double total_gt, total_eq;
      const int32_t gt_before = int32_t(block_exclusive_d(double(gt), sh, &total_gt));
      const int32_t eq_before = int32_t(block_exclusive_d(double(eq), sh, &total_eq));
      const int32_t n_gt = int32_t(total_gt);
      const int32_t want_eq = use_k ? k - n_gt : int32_t(total_eq);
      const int32_t n_cand = n_gt + min(want_eq, int32_t(total_eq));
      if (n_cand > kMaxCandidates) {
        if (threadIdx.x == 0) {
          atomicExch(unsupported, r + 1);
          tokens[r] = -1;
        }
        return;  // uniform across the block
      }
      int32_t gi = gt_before, ei = eq_before;
      for (int32_t j = j0; j < j1; j++) {
        const uint32_t kj = key_of(row[j]);
        if (kj > thr) {
          sh.cand_x[gi] = row[j];
          sh.cand_id[gi] = j;
          gi++;
        } else if (kj == thr) {
          if (ei < want_eq) {
            sh.cand_x[n_gt + ei] = row[j];
            sh.cand_id[n_gt + ei] = j;
          }
          ei++;
        }
      }
      // Bitonic sort of the candidates: logit descending, id ascending on ties.
      int32_t pow2 = 1;
      while (pow2 < n_cand) pow2 <<= 1;
      for (int32_t i = n_cand + threadIdx.x; i < pow2; i += kThreads) {
        sh.cand_x[i] = -INFINITY;
        sh.cand_id[i] = INT32_MAX;
      }
      __syncthreads();
      for (int32_t size = 2; size <= pow2; size <<= 1) {
        for (int32_t stride = size >> 1; stride > 0; stride >>= 1) {
          for (int32_t i = threadIdx.x; i < pow2; i += kThreads) {
            const int32_t jx = i ^ stride;
            if (jx > i) {
              const bool up = (i & size) == 0;  // this run sorts "first before second"
              const float xa = sh.cand_x[i], xb = sh.cand_x[jx];
              const int32_t ia = sh.cand_id[i], ib = sh.cand_id[jx];
              const bool a_first = xa > xb || (xa == xb && ia < ib);
              if (a_first != up) {
                sh.cand_x[i] = xb;
                sh.cand_x[jx] = xa;
                sh.cand_id[i] = ib;
                sh.cand_id[jx] = ia;
              }
            }
          }
          __syncthreads();
        }
      }
      // The CPU's top-p cut and inverse CDF over the sorted candidates (one thread).
      double all_mass = 0.0;
      if (use_p && !use_k) all_mass = block_sum_d(part * exp(m - lse), sh);
      if (threadIdx.x == 0) {
        int32_t kept = n_cand;
        if (use_p) {
          double kept_mass = all_mass;
          if (use_k) {
            kept_mass = 0.0;
            for (int32_t i = 0; i < kept; i++) kept_mass += exp(sh.cand_x[i] * inv_t - lse);
          }
          double acc = 0.0;
          for (int32_t i = 0; i < kept; i++) {
            acc += exp(sh.cand_x[i] * inv_t - lse) / kept_mass;
            if (acc >= top_p[r]) {
              kept = i + 1;
              break;
            }
          }
        }
        double mass = 0.0;
        for (int32_t i = 0; i < kept; i++) mass += exp(sh.cand_x[i] * inv_t - m);
        const double u = u01 * mass;
        double acc = 0.0;
        int32_t pick = sh.cand_id[kept - 1];
        for (int32_t i = 0; i < kept; i++) {
          acc += exp(sh.cand_x[i] * inv_t - m);
          if (u < acc) {
            pick = sh.cand_id[i];
            break;
          }
        }
        sh.count = pick;
      }
      __syncthreads();
      chosen = sh.count;
    }
  }
  if (threadIdx.x == 0) {
    tokens[r] = chosen;
    logprobs[r] = float(row[chosen] * inv_t - lse);
  }
}

}  // namespace

extern "C" {

arl_status arl_sample(arl_ctx* ctx, int32_t* tokens, float* logprobs, const float* logits,
                      const float* temperature, const int32_t* top_k, const float* top_p,
                      const uint64_t* seeds, const uint64_t* counters, int32_t n, int32_t v) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, tokens);
  ARL_NOT_NULL(ctx, logits);
  ARL_NOT_NULL(ctx, temperature);
  ARL_NOT_NULL(ctx, top_k);
  ARL_NOT_NULL(ctx, top_p);
  ARL_NOT_NULL(ctx, seeds);
  ARL_NOT_NULL(ctx, counters);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, v);
  ARL_PRODUCT(ctx, n, v);
  for (int32_t i = 0; i < n; i++) {
    if (!(temperature[i] >= 0.0f) || !std::isfinite(temperature[i]))
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: temperature of row %d must be >= 0, got %g",
                       __func__, i, double(temperature[i]));
    if (!(top_p[i] > 0.0f))
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: top_p of row %d must be > 0, got %g", __func__, i,
                       double(top_p[i]));
  }
  // The host arguments travel in one pinned buffer: settings in, tokens and logprobs out.
  const size_t rows = size_t(n);
  const size_t bytes = rows * (4 + 4 + 4 + 8 + 8 + 4 + 4) + 4 + 64;
  auto* host = static_cast<char*>(arl::host_scratch(ctx, __func__, bytes));
  if (host == nullptr) return ARL_ERR_ALLOC;
  auto* dev = static_cast<char*>(arl::scratch(ctx, __func__, bytes));
  if (dev == nullptr) return ARL_ERR_ALLOC;
  size_t off = 0;
  auto place = [&](size_t size) {
    const size_t at = off;
    off += (size + 7) & ~size_t(7);
    return at;
  };
  const size_t o_seed = place(rows * 8), o_counter = place(rows * 8), o_temp = place(rows * 4),
               o_k = place(rows * 4), o_p = place(rows * 4), o_tok = place(rows * 4),
               o_lp = place(rows * 4), o_flag = place(4);
  std::memcpy(host + o_seed, seeds, rows * 8);
  std::memcpy(host + o_counter, counters, rows * 8);
  std::memcpy(host + o_temp, temperature, rows * 4);
  std::memcpy(host + o_k, top_k, rows * 4);
  std::memcpy(host + o_p, top_p, rows * 4);
  std::memset(host + o_flag, 0, 4);
  cudaError_t err = cudaMemcpyAsync(dev, host, off, cudaMemcpyHostToDevice, ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, __func__, err);
  sample_kernel<<<n, kThreads, 0, ctx->stream>>>(
      reinterpret_cast<int32_t*>(dev + o_tok), reinterpret_cast<float*>(dev + o_lp),
      reinterpret_cast<int*>(dev + o_flag), logits, reinterpret_cast<float*>(dev + o_temp),
      reinterpret_cast<int32_t*>(dev + o_k), reinterpret_cast<float*>(dev + o_p),
      reinterpret_cast<uint64_t*>(dev + o_seed), reinterpret_cast<uint64_t*>(dev + o_counter), v);
  ARL_LAUNCHED(ctx);
  err = cudaMemcpyAsync(host + o_tok, dev + o_tok, off - o_tok, cudaMemcpyDeviceToHost,
                        ctx->stream);
  if (err == cudaSuccess) err = arl::queue_flag_read(ctx);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, __func__, err);
  if (arl_status s = arl::report_flag(ctx, __func__, "a kernel flagged a bad value")) return s;
  int32_t unsupported = 0;
  std::memcpy(&unsupported, host + o_flag, 4);
  if (unsupported != 0)
    return arl::fail(ctx, ARL_ERR_VALUE,
                     "%s: row %d keeps more than %d candidates after top-k / top-p; the CUDA "
                     "sampler supports at most %d (use top_k <= %d, or a smaller top_p)",
                     __func__, unsupported - 1, kMaxCandidates, kMaxCandidates, kMaxCandidates);
  std::memcpy(tokens, host + o_tok, rows * 4);
  if (logprobs != nullptr) std::memcpy(logprobs, host + o_lp, rows * 4);
  return ARL_OK;
}

}  // extern "C"
