// Decode fusions (ABI version 5): RoPE with the KV cache write, and the q|k|v GEMV that also
// RMS-normalizes its input and ropes and caches its outputs (see agentrl.h).
#include "common.cuh"
#include "gemv.cuh"
#include "../common/typed_entries.h"
#include "rope.cuh"
#include "decode_chain.cuh"

namespace {

// One block per token: RoPE of its q and k heads in place (k's rotated pairs go to the cache
// as well), then its v rows into the cache. Bad positions and slots are flagged as arl_rope
// and arl_kv_cache_write flag them (see arl::DeferredCode). With in_shared, the token's
// cos/sin are computed once into shared memory (d floats).
__global__ void rope_kv_cache_write_kernel(float* q, float* k, float* k_cache, float* v_cache,
                                           const float* v, const int32_t* slots,
                                           const int32_t* positions, int32_t hq, int32_t s,
                                           int32_t hkv, int32_t l, int32_t d, float theta,
                                           int in_shared, int* flag, int64_t* flag_index,
                                           int64_t q_stride, int64_t kv_stride) {
  extern __shared__ float trig[];
  arl::pdl_trigger();
  arl::pdl_wait();  // q, k and v come from the GEMV before (launch_pdl)
  const int32_t half = d / 2, i = blockIdx.x;
  const int32_t pos = positions[i], slot = slots[i];
  if (pos < 0) {
    if (threadIdx.x == 0) arl_set_flag(flag, flag_index, arl::kDeferredNegativePosition, i);
    return;
  }
  const bool bad_slot = slot < 0 || slot >= s, cached = !bad_slot && pos < l;
  if (!cached && threadIdx.x == 0)
    arl_set_flag(flag, flag_index, bad_slot ? arl::kDeferredCacheSlot : arl::kDeferredCachePosition,
                 (int64_t(i) << 32) | uint32_t(bad_slot ? slot : pos));
  if (in_shared) {
    for (int32_t j = threadIdx.x; j < half; j += blockDim.x)
      rope_trig(j, double(pos), theta, d, 1.0, &trig[j], &trig[half + j]);
    __syncthreads();
  }
  const int64_t pairs = int64_t(hq + hkv) * half;
  for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int32_t hh = int32_t(p / half), j = int32_t(p - int64_t(hh) * half);
    float cs, sn;
    if (in_shared) {
      cs = trig[j];
      sn = trig[half + j];
    } else {
      rope_trig(j, double(pos), theta, d, 1.0, &cs, &sn);
    }
    const bool is_k = hh >= hq;
    float* row = is_k ? k + i * kv_stride + int64_t(hh - hq) * d
                      : q + i * q_stride + int64_t(hh) * d;
    const float a = row[j], b = row[j + half];
    const float ra = a * cs - b * sn, rb = b * cs + a * sn;
    row[j] = ra;
    row[j + half] = rb;
    if (is_k && cached) {
      float* dst = k_cache + ((int64_t(slot) * hkv + (hh - hq)) * l + pos) * d;
      dst[j] = ra;
      dst[j + half] = rb;
    }
  }
  if (!cached) return;
  for (int32_t e = threadIdx.x; e < hkv * d; e += blockDim.x) {
    const int32_t h = e / d, c = e - h * d;
    v_cache[((int64_t(slot) * hkv + h) * l + pos) * d + c] = v[i * kv_stride + int64_t(h) * d + c];
  }
}

// rope_kv_cache_write_kernel over n rows of q, k and v that start q_stride and kv_stride
// floats apart (the caller checks the launch).
void launch_rope_kv(arl_ctx* ctx, float* q, float* k, float* k_cache, float* v_cache,
                    const float* v, const int32_t* slots, const int32_t* positions, int32_t n,
                    int32_t hq, int32_t s, int32_t hkv, int32_t l, int32_t d, float theta,
                    int64_t q_stride, int64_t kv_stride) {
  const int in_shared = size_t(d) * sizeof(float) <= 48 * 1024;
  arl::launch_pdl(ctx, rope_kv_cache_write_kernel, dim3(unsigned(n)), dim3(256),
                  in_shared ? size_t(d) * sizeof(float) : 0, q, k, k_cache, v_cache, v, slots,
                  positions, hq, s, hkv, l, d, theta, in_shared, ctx->flag, ctx->flag_index,
                  q_stride, kv_stride);
}

// arl_norm_rope_kv_cache_write: a one-warp block per head of each token (blockIdx.x = token *
// (hq + hkv) + head; q's heads, then k's), so that the heads' norms run side by side (a block a
// token took as long as the separate calls on an H100). The warp sums its head's squares (double,
// as arl_rmsnorm_forward), scales by the norm weight where given, and ropes its pairs in place
// (cos/sin from the table's frequencies or theta's, in double); a k head's block also writes its
// rotated row and its v row into the cache. Bad positions and slots are flagged as in
// rope_kv_cache_write_kernel (by each token's first block), and a table entry that is not
// finite as kDeferredRopeFreq (the head is then left as it was).
__global__ void __launch_bounds__(32) norm_rope_kv_cache_write_kernel(
    float* q, float* k, float* k_cache, float* v_cache, const float* v, const float* q_norm,
    const float* k_norm, const float* inv_freq, const int32_t* slots, const int32_t* positions,
    int32_t hq, int32_t s, int32_t hkv, int32_t l, int32_t d, float eps, float theta, int* flag,
    int64_t* flag_index) {
  arl::pdl_trigger();
  arl::pdl_wait();  // q, k and v come from the GEMV before (launch_pdl)
  const int32_t heads = hq + hkv, half = d / 2, lane = int32_t(threadIdx.x);
  const int64_t i = blockIdx.x / heads;
  const int32_t hh = int32_t(blockIdx.x - i * heads);
  const int32_t pos = positions[i], slot = slots[i];
  if (pos < 0) {
    if (hh == 0 && lane == 0) arl_set_flag(flag, flag_index, arl::kDeferredNegativePosition, i);
    return;
  }
  const bool bad_slot = slot < 0 || slot >= s, cached = !bad_slot && pos < l;
  if (!cached && hh == 0 && lane == 0)
    arl_set_flag(flag, flag_index, bad_slot ? arl::kDeferredCacheSlot : arl::kDeferredCachePosition,
                 (i << 32) | uint32_t(bad_slot ? slot : pos));
  if (inv_freq != nullptr) {  // a table entry that is not finite: flagged, the head skipped
    bool bad = false;
    for (int32_t j = lane; j < half; j += 32) {
      if (!isfinite(inv_freq[j])) {
        bad = true;
        arl_set_flag(flag, flag_index, arl::kDeferredRopeFreq, j);
      }
    }
    if (__any_sync(0xffffffffu, bad)) return;
  }
  const bool is_k = hh >= hq;
  const int32_t kh = hh - hq;
  float* row = is_k ? k + (i * hkv + kh) * d : q + (i * hq + hh) * d;
  const float* weight = is_k ? k_norm : q_norm;
  float r = 1.0f;
  if (weight != nullptr) {
    double ss = 0.0;
    for (int32_t j = lane; j < d; j += 32) ss += double(row[j]) * row[j];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    r = float(1.0 / sqrt(ss / d + eps));
  }
  const int64_t at = ((int64_t(slot) * hkv + kh) * l + pos) * d;
  float* dst = is_k && cached ? k_cache + at : nullptr;
  for (int32_t j = lane; j < half; j += 32) {
    float a = row[j], b = row[j + half];
    if (weight != nullptr) {
      a = a * r * weight[j];
      b = b * r * weight[j + half];
    }
    float cs, sn;
    if (inv_freq) rope_trig_freq(double(pos), inv_freq[j], 1.0, &cs, &sn);
    else rope_trig(j, double(pos), theta, d, 1.0, &cs, &sn);
    const float ra = a * cs - b * sn, rb = b * cs + a * sn;
    row[j] = ra;
    row[j + half] = rb;
    if (dst != nullptr) {
      dst[j] = ra;
      dst[j + half] = rb;
    }
  }
  if (!is_k || !cached) return;
  const float* vi = v + (i * hkv + kh) * d;
  for (int32_t j = lane; j < d; j += 32) v_cache[at + j] = vi[j];
}

// y = rmsnorm(x) . w^T + bias for a stacked q|k|v weight, then RoPE and the cache write of each
// row's parts: the fused GEMV for few rows, else the unfused norm and GEMV and the RoPE kernel
// on y's rows.
template <typename W>
arl_status rmsnorm_qkv_rope(arl_ctx* ctx, const char* fn, float* y, const float* x,
                            const float* norm_weight, const W* w, const float* bias, int32_t m,
                            int32_t k, float eps, float* k_cache, float* v_cache,
                            const int32_t* slots, const int32_t* positions, int32_t hq, int32_t s,
                            int32_t hkv, int32_t l, int32_t d, float theta) {
  const int32_t n = (hq + 2 * hkv) * d;
  if (m <= arl::kGemvRows) {
    const arl::GemvRope rope{k_cache, v_cache, slots,    positions, hq,      hkv,
                             d,       s,       l,        theta,     ctx->flag, ctx->flag_index};
    arl::gemv_rows<arl::kGemvNormRope>(ctx, y, x, w, bias, m, n, k, false, norm_weight, eps,
                                       &rope);
    return arl::check_launch(ctx, fn);
  }
  if (arl_status st = arl::rmsnorm_linear_entry(ctx, y, x, norm_weight, w, bias, m, n, k, eps))
    return st;
  launch_rope_kv(ctx, y, y + int64_t(hq) * d, k_cache, v_cache, y + int64_t(hq + hkv) * d, slots,
                 positions, m, hq, s, hkv, l, d, theta, n, n);
  return arl::check_launch(ctx, fn);
}

}  // namespace

namespace arl {

void launch_norm_rope_kv(arl_ctx* ctx, float* q, float* k, float* k_cache, float* v_cache,
                         const float* v, const float* q_norm, const float* k_norm,
                         const float* inv_freq, const int32_t* slots, const int32_t* positions,
                         int32_t n, int32_t hq, int32_t s, int32_t hkv, int32_t l, int32_t d,
                         float eps, float theta) {
  const int64_t blocks = int64_t(n) * (int64_t(hq) + hkv);
  launch_pdl(ctx, norm_rope_kv_cache_write_kernel, dim3(unsigned(blocks)), dim3(32), 0, q, k,
             k_cache, v_cache, v, q_norm, k_norm, inv_freq, slots, positions, hq, s, hkv, l, d, eps,
             theta, ctx->flag, ctx->flag_index);
}

int norm_rope_prefer_shared() {
#ifndef AGENTRL_CUDA_EMU
  if (cudaFuncSetAttribute(norm_rope_kv_cache_write_kernel,
                           cudaFuncAttributePreferredSharedMemoryCarveout,
                           int(cudaSharedmemCarveoutMaxShared)) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
#endif
  return 1;
}

}  // namespace arl

extern "C" {

arl_status arl_rope_kv_cache_write(arl_ctx* ctx, float* q, float* k, float* k_cache,
                                   float* v_cache, const float* v, const int32_t* slots,
                                   const int32_t* positions, int32_t n, int32_t hq, int32_t s,
                                   int32_t hkv, int32_t l, int32_t d, float theta) {
  ARL_CTX(ctx);
  ARL_ROPE_KV_ARGS(ctx, q, k, k_cache, v_cache, v, slots, positions, n, hq, s, hkv, l, d, theta);
  // Positions and slots are flagged by the kernel (reported at the next synchronizing call).
  launch_rope_kv(ctx, q, k, k_cache, v_cache, v, slots, positions, n, hq, s, hkv, l, d, theta,
                 int64_t(hq) * d, int64_t(hkv) * d);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_norm_rope_kv_cache_write(arl_ctx* ctx, float* q, float* k, float* k_cache,
                                        float* v_cache, const float* v, const float* q_norm,
                                        const float* k_norm, const float* inv_freq,
                                        const int32_t* slots, const int32_t* positions, int32_t n,
                                        int32_t hq, int32_t s, int32_t hkv, int32_t l, int32_t d,
                                        float eps, float theta) {
  ARL_CTX(ctx);
  ARL_NORM_ROPE_KV_ARGS(ctx);
  // Positions and slots are flagged by the kernel (reported at the next synchronizing call).
  arl::launch_norm_rope_kv(ctx, q, k, k_cache, v_cache, v, q_norm, k_norm, inv_freq, slots,
                           positions, n, hq, s, hkv, l, d, eps, theta);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_rmsnorm_qkv_rope_forward(arl_ctx* ctx, float* y, const float* x,
                                        const float* norm_weight, const float* w,
                                        const float* bias, int32_t m, int32_t k, float eps,
                                        float* k_cache, float* v_cache, const int32_t* slots,
                                        const int32_t* positions, int32_t hq, int32_t s,
                                        int32_t hkv, int32_t l, int32_t d, float theta) {
  ARL_CTX(ctx);
  ARL_RMSNORM_QKV_ROPE_ARGS(ctx, y, x, norm_weight, w, m, k, eps, k_cache, v_cache, slots,
                            positions, hq, s, hkv, l, d, theta);
  return rmsnorm_qkv_rope(ctx, __func__, y, x, norm_weight, w, bias, m, k, eps, k_cache, v_cache,
                          slots, positions, hq, s, hkv, l, d, theta);
}

arl_status arl_rmsnorm_qkv_rope_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                             const float* norm_weight, const uint16_t* w,
                                             const float* bias, int32_t m, int32_t k, float eps,
                                             float* k_cache, float* v_cache, const int32_t* slots,
                                             const int32_t* positions, int32_t hq, int32_t s,
                                             int32_t hkv, int32_t l, int32_t d, float theta) {
  ARL_CTX(ctx);
  ARL_RMSNORM_QKV_ROPE_ARGS(ctx, y, x, norm_weight, w, m, k, eps, k_cache, v_cache, slots,
                            positions, hq, s, hkv, l, d, theta);
  return rmsnorm_qkv_rope(ctx, __func__, y, x, norm_weight, w, bias, m, k, eps, k_cache, v_cache,
                          slots, positions, hq, s, hkv, l, d, theta);
}

}  // extern "C"
