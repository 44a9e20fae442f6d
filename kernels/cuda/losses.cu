// PPO-family token loss, clipped value loss and the full-distribution KL on a CUDA device.
//
// The token losses fetch cu_seqlens to the host (validated as on the CPU), then run:
// per-sequence mask sums (one block per sequence), the sequence totals (one block), a
// per-token kernel (gradients written, block partial sums of the metrics in double) and a
// final reduction (one block per metric) whose few doubles are copied to the host.
#include <cmath>
#include <vector>

#include "common.cuh"

namespace {

// Blocks of the per-token kernels (at most; each writes one partial per metric).
constexpr int kTokenBlocks = 1024;

struct SumOp {
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct MinOp {
  __device__ double operator()(double a, double b) const { return fmin(a, b); }
};
struct MaxOp {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

// Block-wide reduction of v (blockDim.x a multiple of 32); every thread gets the result.
// `shared` holds at least 32 doubles; consecutive calls may share it.
template <class Op>
__device__ inline double block_reduce(double v, double* shared, Op op, double identity) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline double block_sum_d(double v, double* shared) {
  return block_reduce(v, shared, SumOp(), 0.0);
}

// std::min / std::max semantics (the first argument wins unless the second compares below /
// above it), so NaNs propagate exactly as in the CPU code.
__device__ inline double std_min(double a, double b) { return b < a ? b : a; }
__device__ inline double std_max(double a, double b) { return a < b ? b : a; }

// seq_mask[s] = sum of mask over sequence s, seq_bad[s] = its entries that are not finite
// weights >= 0 (one block per sequence).
__global__ void seq_mask_kernel(double* seq_mask, double* seq_bad, const float* mask,
                                const int32_t* cu) {
  __shared__ double shared[32];
  const int32_t s = blockIdx.x, begin = cu[s], end = cu[s + 1];
  double m = 0, bad = 0;
  for (int32_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    m += mask[i];
    bad += (mask[i] >= 0.0f && !isinf(mask[i])) ? 0.0 : 1.0;
  }
  m = block_sum_d(m, shared);
  bad = block_sum_d(bad, shared);
  if (threadIdx.x == 0) {
    seq_mask[s] = m;
    seq_bad[s] = bad;
  }
}

// One block: agg[0] = total mask, agg[1] = number of sequences with a positive mask sum,
// agg[2] = bad mask entries.
__global__ void seq_totals_kernel(double* agg, const double* seq_mask, const double* seq_bad,
                                  int32_t b) {
  __shared__ double shared[32];
  double total = 0, seqs = 0, bad = 0;
  for (int32_t s = threadIdx.x; s < b; s += blockDim.x) {
    total += seq_mask[s];
    seqs += seq_mask[s] > 0 ? 1.0 : 0.0;
    bad += seq_bad[s];
  }
  total = block_sum_d(total, shared);
  seqs = block_sum_d(seqs, shared);
  bad = block_sum_d(bad, shared);
  if (threadIdx.x == 0) {
    agg[0] = total;
    agg[1] = seqs;
    agg[2] = bad;
  }
}

// The sequence holding token i: the last s with cu[s] <= i (cu[0] = 0 <= i < cu[b] = T).
__device__ inline int32_t sequence_of(const int32_t* cu, int32_t b, int32_t i) {
  int32_t lo = 0, hi = b;
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (cu[mid] <= i) lo = mid;
    else hi = mid;
  }
  return lo;
}

// The CPU's agg_weights for token i: d(aggregated loss) / d(token loss).
__device__ inline double token_weight(int32_t i, float mask_i, int32_t mode, float norm_len,
                                      const double* agg, const double* seq_mask,
                                      const int32_t* cu, int32_t b) {
  const double total = agg[0];
  const int32_t seqs = int32_t(agg[1]);
  double w = 0;
  switch (mode) {
    case ARL_AGG_TOKEN_MEAN: w = total > 0 ? 1.0 / total : 0; break;
    case ARL_AGG_SEQ_MEAN_TOKEN_SUM: w = seqs > 0 ? 1.0 / seqs : 0; break;
    case ARL_AGG_SEQ_MEAN_TOKEN_MEAN: {
      const double m = seq_mask[sequence_of(cu, b, i)];
      w = (seqs > 0 && m > 0) ? 1.0 / (seqs * m) : 0;
      break;
    }
    case ARL_AGG_SEQ_MEAN_TOKEN_SUM_NORM: w = 1.0 / norm_len; break;
    default: break;
  }
  return w * mask_i;
}

// Slots of the PPO partial sums (then ratio min and max).
enum {
  kLoss, kPg, kKl, kEnt, kSft, kCount, kClipped, kDual, kApprox, kRatioSum, kRatioMin, kRatioMax,
  kPpoSlots
};

struct PpoArgs {
  double* partial;  // (kPpoSlots, gridDim.x)
  float* dlogp;
  float* dentropy;  // may be null
  const float* logp;
  const float* old_logp;
  const float* ref_logp;
  const float* advantages;
  const float* entropy;
  const float* mask;
  const float* sft_mask;
  const int32_t* cu;
  const double* seq_mask;
  const double* agg;
  // segment ratios (null per token): each token's log-ratio for its ratio, and the parts of
  // its dlogp kept apart until segment_spread_kernel shares the policy part over the segment
  const double* seg_lr;
  double* pg_grad;
  double* rest;
  int32_t b, t;
  arl_ppo_params p;
};

// Segment ratios, one thread per sequence: seg_lr[i] is the mean log-ratio of the run of
// mask > 0 tokens holding i (its own log-ratio off the mask).
__global__ void segment_lr_kernel(double* seg_lr, const float* logp, const float* old_logp,
                                  const float* mask, const int32_t* cu) {
  if (threadIdx.x != 0) return;
  const int32_t end = cu[blockIdx.x + 1];
  for (int32_t i = cu[blockIdx.x]; i < end;) {
    if (!(mask[i] > 0)) {
      seg_lr[i] = double(logp[i]) - old_logp[i];
      i++;
      continue;
    }
    int32_t e = i;
    double sum = 0;
    while (e < end && mask[e] > 0) {
      sum += double(logp[e]) - old_logp[e];
      e++;
    }
    const double mean = sum / (e - i);
    for (int32_t j = i; j < e; j++) seg_lr[j] = mean;
    i = e;
  }
}

// One thread per sequence: each segment's policy gradient, summed and shared evenly over its
// tokens (its ratio is exp of their mean log-ratio), plus each token's other terms.
__global__ void segment_spread_kernel(float* dlogp, const double* pg_grad, const double* rest,
                                      const float* mask, const int32_t* cu) {
  if (threadIdx.x != 0) return;
  const int32_t end = cu[blockIdx.x + 1];
  for (int32_t i = cu[blockIdx.x]; i < end;) {
    if (!(mask[i] > 0)) {
      i++;
      continue;
    }
    int32_t e = i;
    double sum = 0;
    while (e < end && mask[e] > 0) sum += pg_grad[e++];
    const double share = sum / (e - i);
    for (int32_t j = i; j < e; j++) dlogp[j] = float(rest[j] + share);
    i = e;
  }
}

// Per token, the CPU's arithmetic (in double): dlogp, dentropy written; block partial sums.
__global__ void ppo_token_kernel(PpoArgs args) {
  __shared__ double shared[32];
  const arl_ppo_params& p = args.p;
  double loss = 0, pg_sum = 0, kl_sum = 0, ent_sum = 0, sft_sum = 0;
  double n = 0, clipped = 0, dual = 0, approx = 0, ratio_sum = 0;
  float ratio_min = INFINITY, ratio_max = -INFINITY;
  for (int64_t i64 = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i64 < args.t;
       i64 += int64_t(gridDim.x) * blockDim.x) {
    const int32_t i = int32_t(i64);
    const float mask_i = args.mask[i];
    const double w =
        token_weight(i, mask_i, p.agg_mode, p.norm_len, args.agg, args.seq_mask, args.cu, args.b);
    const double a = args.advantages[i];
    const double lr = double(args.logp[i]) - args.old_logp[i];
    const double ratio = exp(args.seg_lr != nullptr ? args.seg_lr[i] : lr);
    // Policy gradient: the pessimistic (larger) of the unclipped and clipped losses.
    const double lo = 1.0 - p.clip_low, hi = 1.0 + p.clip_high;
    const double pg1 = -a * ratio;
    const double pg2 = -a * std_min(std_max(ratio, lo), hi);
    double pg = std_max(pg1, pg2);
    double dpg = pg2 > pg1 ? 0.0 : -a * ratio;  // d pg / d logp
    const bool was_clipped = pg2 > pg1;
    bool dual_clipped = false;
    if (p.dual_clip > 1.0f && a < 0 && pg > -a * p.dual_clip) {
      pg = -a * p.dual_clip;
      dpg = 0.0;
      dual_clipped = true;
    }
    double kl = 0, dkl = 0;
    if (p.kl_coef != 0.0f) {
      const double d = double(args.logp[i]) - args.ref_logp[i];
      switch (p.kl_kind) {
        case ARL_KL_KL: kl = d; dkl = 1; break;
        case ARL_KL_ABS: kl = fabs(d); dkl = d > 0 ? 1 : (d < 0 ? -1 : 0); break;
        case ARL_KL_MSE: kl = 0.5 * d * d; dkl = d; break;
        case ARL_KL_K3: kl = exp(-d) + d - 1; dkl = 1 - exp(-d); break;
        default: break;
      }
      if (p.kl_clamp > 0 && fabs(kl) > p.kl_clamp) {
        kl = kl > 0 ? p.kl_clamp : -p.kl_clamp;
        dkl = 0;
      }
    }
    const double ent = p.entropy_coef != 0.0f ? args.entropy[i] : 0.0;
    const bool sft_on = p.sft_coef != 0.0f && args.sft_mask[i] > 0;
    const double sft = sft_on ? -double(args.logp[i]) : 0.0;
    const double dsft = sft_on ? -1.0 : 0.0;
    const double token_loss = pg + p.kl_coef * kl - p.entropy_coef * ent + p.sft_coef * sft;
    loss += w * token_loss;
    pg_sum += w * pg;
    kl_sum += w * kl;
    ent_sum += w * ent;
    sft_sum += w * sft;
    if (args.seg_lr != nullptr && mask_i > 0) {
      args.pg_grad[i] = w * dpg;
      args.rest[i] = w * (p.kl_coef * dkl + p.sft_coef * dsft);
    } else {
      args.dlogp[i] = float(w * (dpg + p.kl_coef * dkl + p.sft_coef * dsft));
    }
    if (args.dentropy != nullptr) args.dentropy[i] = float(-w * p.entropy_coef);
    if (mask_i > 0) {
      const double m = mask_i;  // a weight: a merged duplicate counts as its copies
      n += m;
      clipped += was_clipped ? m : 0;
      dual += dual_clipped ? m : 0;
      approx += m * 0.5 * lr * lr;
      ratio_sum += m * ratio;
      ratio_min = fminf(ratio_min, float(ratio));  // NaN ratios are skipped, as by std::min
      ratio_max = fmaxf(ratio_max, float(ratio));
    }
  }
  const double sums[kRatioMin] = {loss, pg_sum, kl_sum, ent_sum, sft_sum,
                                  n,    clipped, dual,  approx,  ratio_sum};
  double* out = args.partial + blockIdx.x;
#pragma unroll
  for (int k = 0; k < kRatioMin; k++) {
    const double s = block_sum_d(sums[k], shared);
    if (threadIdx.x == 0) out[int64_t(k) * gridDim.x] = s;
  }
  const double mn = block_reduce(double(ratio_min), shared, MinOp(), INFINITY);
  const double mx = block_reduce(double(ratio_max), shared, MaxOp(), -INFINITY);
  if (threadIdx.x == 0) {
    out[int64_t(kRatioMin) * gridDim.x] = mn;
    out[int64_t(kRatioMax) * gridDim.x] = mx;
  }
}

// Block k: out[k] = the reduction of partial row k (nb values): a sum for k < sums, then
// (for the PPO slots) a min and a max.
__global__ void final_reduce_kernel(double* out, const double* partial, int32_t nb,
                                    int32_t sums) {
  __shared__ double shared[32];
  const int k = blockIdx.x;
  const double* row = partial + int64_t(k) * nb;
  double v;
  if (k < sums) {
    v = 0;
    for (int32_t i = threadIdx.x; i < nb; i += blockDim.x) v += row[i];
    v = block_sum_d(v, shared);
  } else if (k == sums) {
    v = INFINITY;
    for (int32_t i = threadIdx.x; i < nb; i += blockDim.x) v = fmin(v, row[i]);
    v = block_reduce(v, shared, MinOp(), INFINITY);
  } else {
    v = -INFINITY;
    for (int32_t i = threadIdx.x; i < nb; i += blockDim.x) v = fmax(v, row[i]);
    v = block_reduce(v, shared, MaxOp(), -INFINITY);
  }
  if (threadIdx.x == 0) out[k] = v;
}

// Per token, the CPU's value-loss arithmetic: dvalues written; partial (3, gridDim.x) gets
// the weighted loss, the masked token count and the clipped count.
__global__ void value_token_kernel(double* partial, float* dvalues, const float* values,
                                   const float* old_values, const float* returns,
                                   const float* mask, const int32_t* cu, const double* seq_mask,
                                   const double* agg, int32_t b, int32_t t, float value_clip,
                                   int32_t mode, float norm_len) {
  __shared__ double shared[32];
  double total = 0, n = 0, clipped = 0;
  for (int64_t i64 = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i64 < t;
       i64 += int64_t(gridDim.x) * blockDim.x) {
    const int32_t i = int32_t(i64);
    const float mask_i = mask[i];
    const double w = token_weight(i, mask_i, mode, norm_len, agg, seq_mask, cu, b);
    const double v = values[i], r = returns[i];
    const double l1 = (v - r) * (v - r);
    double li = l1, dv = v - r;
    bool was_clipped = false;
    if (value_clip > 0) {
      const double old = old_values[i];
      const double delta = std_min(std_max(v - old, -double(value_clip)), double(value_clip));
      const double vc = old + delta;
      const double l2 = (vc - r) * (vc - r);
      if (l2 > l1) {
        li = l2;
        const bool inside = fabs(v - old) < value_clip;
        dv = inside ? vc - r : 0.0;
        was_clipped = true;
      }
    }
    total += w * 0.5 * li;
    dvalues[i] = float(w * dv);
    if (mask_i > 0) {
      n += 1;
      clipped += was_clipped ? 1 : 0;
    }
  }
  total = block_sum_d(total, shared);
  n = block_sum_d(n, shared);
  clipped = block_sum_d(clipped, shared);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = total;
    partial[gridDim.x + blockIdx.x] = n;
    partial[2 * gridDim.x + blockIdx.x] = clipped;
  }
}

// One block per row of (T, V) logits: KL(p || p_ref) in double. One pass keeps online
// (max, sum exp, sum exp * (z - z_ref)) for both rows, then
// kl = E_p[z - z_ref] - (lse - lse_ref), which equals the CPU's sum p (log p - log q).
// A second pass writes dlogits = dkl p (log p - log q - kl) as the CPU does.
__global__ void kl_full_kernel(float* kl, float* dlogits, const float* logits,
                               const float* ref_logits, const float* dkl, int32_t v) {
  __shared__ double shared[32];
  const int64_t row = blockIdx.x;
  const float* z = logits + row * v;
  const float* zr = ref_logits + row * v;
  double m = -INFINITY, s = 0, a = 0, mr = -INFINITY, sr = 0;
  for (int32_t j = threadIdx.x; j < v; j += blockDim.x) {
    const double x = z[j], xr = zr[j];
    if (x > m) {
      const double f = exp(m - x);
      s *= f;
      a *= f;
      m = x;
    }
    const double e = exp(x - m);
    s += e;
    a += e * (x - xr);
    if (xr > mr) {
      sr *= exp(mr - xr);
      mr = xr;
    }
    sr += exp(xr - mr);
  }
  // Combine the threads: rescale to the row maxima, then sum.
  const double row_m = block_reduce(m, shared, MaxOp(), -INFINITY);
  const double row_mr = block_reduce(mr, shared, MaxOp(), -INFINITY);
  const double f = exp(m - row_m), fr = exp(mr - row_mr);
  const double row_s = block_sum_d(s * f, shared);
  const double row_a = block_sum_d(a * f, shared);
  const double row_sr = block_sum_d(sr * fr, shared);
  const double lse = row_m + log(row_s), lser = row_mr + log(row_sr);
  const double k = row_a / row_s - (lse - lser);
  if (threadIdx.x == 0) kl[row] = float(k);
  if (dlogits == nullptr) return;
  float* d = dlogits + row * v;
  const double g = dkl[row];
  for (int32_t j = threadIdx.x; j < v; j += blockDim.x) {
    const double lp = z[j] - lse, lq = zr[j] - lser;
    d[j] = float(g * exp(lp) * (lp - lq - k));
  }
}

arl_status check_agg(arl_ctx* ctx, const char* fn, int32_t mode, float norm_len) {
  if (mode < ARL_AGG_TOKEN_MEAN || mode > ARL_AGG_SEQ_MEAN_TOKEN_SUM_NORM)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: unknown loss_agg_mode %d (expected 0..3)", fn, mode);
  if (mode == ARL_AGG_SEQ_MEAN_TOKEN_SUM_NORM && !(norm_len > 0.0f))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: seq-mean-token-sum-norm needs norm_len > 0", fn);
  return ARL_OK;
}

// Scratch of a token loss: seq_mask (B), seq_bad (B), agg (3), partial (slots, nb),
// result (slots), then per_token rows of T.
struct TokenScratch {
  double* seq_mask;
  double* seq_bad;
  double* agg;
  double* partial;
  double* result;
  double* per_token;
  int32_t nb;
};

// Validates cu_seqlens (on the host), takes scratch and runs the per-sequence kernels; a mask
// entry that is not a finite weight >= 0 fails here, before any output is written.
arl_status token_setup(arl_ctx* ctx, const char* fn, TokenScratch& ts, const float* mask,
                       const int32_t* cu_seqlens, int32_t b, int32_t t, int32_t slots,
                       int32_t per_token = 0) {
  std::vector<int32_t> cu;
  if (arl_status s = arl::fetch_cu_seqlens(ctx, fn, cu, cu_seqlens, b, t)) return s;
  const unsigned grid = arl::grid_for(t);
  ts.nb = int32_t(grid < unsigned(kTokenBlocks) ? grid : unsigned(kTokenBlocks));
  const size_t count =
      2 * size_t(b) + 3 + size_t(slots) * (size_t(ts.nb) + 1) + size_t(per_token) * size_t(t);
  auto* base = static_cast<double*>(arl::scratch(ctx, fn, count * sizeof(double)));
  if (base == nullptr) return ARL_ERR_ALLOC;
  ts.seq_mask = base;
  ts.seq_bad = base + b;
  ts.agg = ts.seq_bad + b;
  ts.partial = ts.agg + 3;
  ts.result = ts.partial + size_t(slots) * ts.nb;
  ts.per_token = ts.result + slots;
  seq_mask_kernel<<<b, 512, 0, ctx->stream>>>(ts.seq_mask, ts.seq_bad, mask, cu_seqlens);
  if (arl_status s = arl::check_launch(ctx, fn)) return s;
  seq_totals_kernel<<<1, 1024, 0, ctx->stream>>>(ts.agg, ts.seq_mask, ts.seq_bad, b);
  if (arl_status s = arl::check_launch(ctx, fn)) return s;
  double bad = 0;
  cudaError_t err =
      cudaMemcpyAsync(&bad, ts.agg + 2, sizeof(double), cudaMemcpyDeviceToHost, ctx->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, fn, err);
  if (bad > 0)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: mask has %.0f entries that are negative or not "
                     "finite (expected a finite weight >= 0 per token)", fn, bad);
  return ARL_OK;
}

// Reduces the partial sums (`sums` sums, then min_max min/max rows) into host[slots].
arl_status token_finish(arl_ctx* ctx, const char* fn, const TokenScratch& ts, int32_t sums,
                        int32_t slots, double* host) {
  final_reduce_kernel<<<slots, arl::kBlock, 0, ctx->stream>>>(ts.result, ts.partial, ts.nb, sums);
  if (arl_status s = arl::check_launch(ctx, fn)) return s;
  cudaError_t err = cudaMemcpyAsync(host, ts.result, size_t(slots) * sizeof(double),
                                    cudaMemcpyDeviceToHost, ctx->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, fn, err);
  return ARL_OK;
}

}  // namespace

extern "C" {

arl_status arl_ppo_loss(arl_ctx* ctx, arl_ppo_metrics* metrics, float* dlogp, float* dentropy,
                        const float* logp, const float* old_logp, const float* ref_logp,
                        const float* advantages, const float* entropy, const float* mask,
                        const float* sft_mask, const int32_t* cu_seqlens, int32_t b, int32_t t,
                        const arl_ppo_params* params) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, metrics);
  ARL_NOT_NULL(ctx, dlogp);
  ARL_NOT_NULL(ctx, logp);
  ARL_NOT_NULL(ctx, old_logp);
  ARL_NOT_NULL(ctx, advantages);
  ARL_NOT_NULL(ctx, mask);
  ARL_NOT_NULL(ctx, cu_seqlens);
  ARL_NOT_NULL(ctx, params);
  ARL_POSITIVE(ctx, b);
  ARL_POSITIVE(ctx, t);
  const arl_ppo_params& p = *params;
  if (p.kl_coef != 0.0f) ARL_NOT_NULL(ctx, ref_logp);
  if (p.entropy_coef != 0.0f) {
    ARL_NOT_NULL(ctx, entropy);
    ARL_NOT_NULL(ctx, dentropy);
  }
  if (p.sft_coef != 0.0f) ARL_NOT_NULL(ctx, sft_mask);
  if (!(p.clip_low >= 0.0f && p.clip_low < 1.0f) || !(p.clip_high >= 0.0f))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: clip_low must be in [0, 1) and clip_high >= 0",
                     __func__);
  if (p.dual_clip != 0.0f && !(p.dual_clip > 1.0f))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: dual_clip must be > 1 (or 0 to disable), got %g",
                     __func__, double(p.dual_clip));
  if (p.kl_kind < ARL_KL_KL || p.kl_kind > ARL_KL_K3)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: unknown kl_kind %d (expected 0..3)", __func__,
                     p.kl_kind);
  if (p.ratio_type != ARL_RATIO_TOKEN && p.ratio_type != ARL_RATIO_SEGMENT)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: unknown ratio_type %d (expected 0 or 1)", __func__,
                     p.ratio_type);
  if (arl_status s = check_agg(ctx, __func__, p.agg_mode, p.norm_len)) return s;
  const bool segments = p.ratio_type == ARL_RATIO_SEGMENT;
  TokenScratch ts;
  if (arl_status s = token_setup(ctx, __func__, ts, mask, cu_seqlens, b, t, kPpoSlots,
                                 segments ? 3 : 0))
    return s;
  PpoArgs args;
  args.partial = ts.partial;
  args.dlogp = dlogp;
  args.dentropy = dentropy;
  args.logp = logp;
  args.old_logp = old_logp;
  args.ref_logp = ref_logp;
  args.advantages = advantages;
  args.entropy = entropy;
  args.mask = mask;
  args.sft_mask = sft_mask;
  args.cu = cu_seqlens;
  args.seq_mask = ts.seq_mask;
  args.agg = ts.agg;
  args.seg_lr = nullptr;
  args.pg_grad = nullptr;
  args.rest = nullptr;
  args.b = b;
  args.t = t;
  args.p = p;
  if (segments) {
    double* seg_lr = ts.per_token;
    args.seg_lr = seg_lr;
    args.pg_grad = ts.per_token + t;
    args.rest = ts.per_token + 2 * size_t(t);
    segment_lr_kernel<<<b, 32, 0, ctx->stream>>>(seg_lr, logp, old_logp, mask, cu_seqlens);
    ARL_LAUNCHED(ctx);
  }
  ppo_token_kernel<<<ts.nb, arl::kBlock, 0, ctx->stream>>>(args);
  ARL_LAUNCHED(ctx);
  if (segments) {
    segment_spread_kernel<<<b, 32, 0, ctx->stream>>>(dlogp, args.pg_grad, args.rest, mask,
                                                     cu_seqlens);
    ARL_LAUNCHED(ctx);
  }
  double r[kPpoSlots];
  if (arl_status s = token_finish(ctx, __func__, ts, kRatioMin, kPpoSlots, r)) return s;
  const double n = r[kCount];
  metrics->loss = float(r[kLoss]);
  metrics->pg_loss = float(r[kPg]);
  metrics->kl_loss = float(r[kKl]);
  metrics->entropy_loss = float(r[kEnt]);
  metrics->sft_loss = float(r[kSft]);
  metrics->clipfrac = n > 0 ? float(r[kClipped] / n) : 0.0f;
  metrics->dual_clipfrac = n > 0 ? float(r[kDual] / n) : 0.0f;
  metrics->approx_kl = n > 0 ? float(r[kApprox] / n) : 0.0f;
  metrics->ratio_mean = n > 0 ? float(r[kRatioSum] / n) : 0.0f;
  metrics->ratio_min = n > 0 ? float(r[kRatioMin]) : 0.0f;
  metrics->ratio_max = n > 0 ? float(r[kRatioMax]) : 0.0f;
  metrics->num_tokens = float(n);
  return ARL_OK;
}

arl_status arl_value_loss(arl_ctx* ctx, float* loss, float* clipfrac, float* dvalues,
                          const float* values, const float* old_values, const float* returns,
                          const float* mask, const int32_t* cu_seqlens, int32_t b, int32_t t,
                          float value_clip, int32_t agg_mode, float norm_len) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, loss);
  ARL_NOT_NULL(ctx, clipfrac);
  ARL_NOT_NULL(ctx, dvalues);
  ARL_NOT_NULL(ctx, values);
  ARL_NOT_NULL(ctx, returns);
  ARL_NOT_NULL(ctx, mask);
  ARL_NOT_NULL(ctx, cu_seqlens);
  ARL_POSITIVE(ctx, b);
  ARL_POSITIVE(ctx, t);
  if (value_clip > 0) ARL_NOT_NULL(ctx, old_values);
  if (arl_status s = check_agg(ctx, __func__, agg_mode, norm_len)) return s;
  TokenScratch ts;
  if (arl_status s = token_setup(ctx, __func__, ts, mask, cu_seqlens, b, t, 3)) return s;
  value_token_kernel<<<ts.nb, arl::kBlock, 0, ctx->stream>>>(
      ts.partial, dvalues, values, old_values, returns, mask, cu_seqlens, ts.seq_mask, ts.agg, b,
      t, value_clip, agg_mode, norm_len);
  ARL_LAUNCHED(ctx);
  double r[3];
  if (arl_status s = token_finish(ctx, __func__, ts, 3, 3, r)) return s;
  *loss = float(r[0]);
  *clipfrac = r[1] > 0 ? float(r[2] / r[1]) : 0.0f;
  return ARL_OK;
}

arl_status arl_kl_full(arl_ctx* ctx, float* kl, float* dlogits, const float* logits,
                       const float* ref_logits, const float* dkl, int32_t t, int32_t v) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, kl);
  ARL_NOT_NULL(ctx, logits);
  ARL_NOT_NULL(ctx, ref_logits);
  if (dlogits != nullptr) ARL_NOT_NULL(ctx, dkl);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_PRODUCT(ctx, t, v);
  kl_full_kernel<<<t, 512, 0, ctx->stream>>>(kl, dlogits, logits, ref_logits, dkl, v);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

}  // extern "C"
