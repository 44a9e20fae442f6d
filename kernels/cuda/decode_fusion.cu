// Decode fusions (ABI version 4): calls that a decode step makes back to back, in one kernel
// where the rows are few (see agentrl.h).
#include "common.cuh"
#include "gemv.cuh"
#include "rope.cuh"

namespace {

// One block per token: RoPE of its q and k heads in place (k's rotated pairs go to the cache
// as well), then its v rows into the cache. Bad positions and slots are flagged as arl_rope
// and arl_kv_cache_write flag them (see arl::DeferredCode). With in_shared, the token's
// cos/sin are computed once into shared memory (d floats).
__global__ void rope_kv_cache_write_kernel(float* q, float* k, float* k_cache, float* v_cache,
                                           const float* v, const int32_t* slots,
                                           const int32_t* positions, int32_t hq, int32_t s,
                                           int32_t hkv, int32_t l, int32_t d, float theta,
                                           int in_shared, int* flag, int64_t* flag_index) {
  extern __shared__ float trig[];
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
    float* row = is_k ? k + (int64_t(i) * hkv + (hh - hq)) * d : q + (int64_t(i) * hq + hh) * d;
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
    v_cache[((int64_t(slot) * hkv + h) * l + pos) * d + c] = v[(int64_t(i) * hkv + h) * d + c];
  }
}

// The linear entry point for the weights' type.
arl_status linear_entry(arl_ctx* ctx, float* y, const float* x, const float* w, const float* bias,
                        int32_t m, int32_t n, int32_t k, int32_t accumulate) {
  return arl_linear_forward(ctx, y, x, w, bias, m, n, k, accumulate);
}
arl_status linear_entry(arl_ctx* ctx, float* y, const float* x, const uint16_t* w,
                        const float* bias, int32_t m, int32_t n, int32_t k, int32_t accumulate) {
  return arl_linear_forward_bf16(ctx, y, x, w, bias, m, n, k, accumulate);
}

// y = rmsnorm(x) . w^T + bias: the fused GEMV for few rows, else rmsnorm into scratch and the
// linear entry point.
template <typename W>
arl_status rmsnorm_linear(arl_ctx* ctx, const char* fn, float* y, const float* x,
                          const float* norm_weight, const W* w, const float* bias, int32_t m,
                          int32_t n, int32_t k, float eps) {
  if (m <= arl::kGemvRows) {
    arl::gemv_rows(ctx, y, x, w, bias, m, n, k, false, norm_weight, eps);
    return arl::check_launch(ctx, fn);
  }
  const size_t rows = size_t(m) * size_t(k);
  auto* h = static_cast<float*>(arl::scratch(ctx, fn, (rows + size_t(m)) * sizeof(float)));
  if (h == nullptr) return ARL_ERR_ALLOC;
  if (arl_status s = arl_rmsnorm_forward(ctx, h, h + rows, x, norm_weight, m, k, eps)) return s;
  return linear_entry(ctx, y, h, w, bias, m, n, k, 0);
}

// y (+)= (silu(gate) * up) . w^T + bias: the fused GEMV for few rows, else SwiGLU into scratch
// and the linear entry point.
template <typename W>
arl_status swiglu_linear(arl_ctx* ctx, const char* fn, float* y, const float* gate,
                         const float* up, const W* w, const float* bias, int32_t m, int32_t n,
                         int32_t k, int32_t accumulate) {
  if (m <= arl::kGemvRows) {
    arl::gemv_rows(ctx, y, gate, w, bias, m, n, k, accumulate != 0, nullptr, 0.0f, up);
    return arl::check_launch(ctx, fn);
  }
  const int64_t count = int64_t(m) * k;
  auto* s = static_cast<float*>(arl::scratch(ctx, fn, size_t(count) * sizeof(float)));
  if (s == nullptr) return ARL_ERR_ALLOC;
  if (arl_status st = arl_swiglu_forward(ctx, s, gate, up, count)) return st;
  return linear_entry(ctx, y, s, w, bias, m, n, k, accumulate);
}

}  // namespace

extern "C" {

arl_status arl_rmsnorm_linear_forward(arl_ctx* ctx, float* y, const float* x,
                                      const float* norm_weight, const float* w, const float* bias,
                                      int32_t m, int32_t n, int32_t k, float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, n, k, eps);
  return rmsnorm_linear(ctx, __func__, y, x, norm_weight, w, bias, m, n, k, eps);
}

arl_status arl_rmsnorm_linear_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                           const float* norm_weight, const uint16_t* w,
                                           const float* bias, int32_t m, int32_t n, int32_t k,
                                           float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, n, k, eps);
  return rmsnorm_linear(ctx, __func__, y, x, norm_weight, w, bias, m, n, k, eps);
}

arl_status arl_swiglu_linear_forward(arl_ctx* ctx, float* y, const float* gate, const float* up,
                                     const float* w, const float* bias, int32_t m, int32_t n,
                                     int32_t k, int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_SWIGLU_LINEAR_ARGS(ctx, y, gate, up, w, m, n, k);
  return swiglu_linear(ctx, __func__, y, gate, up, w, bias, m, n, k, accumulate);
}

arl_status arl_swiglu_linear_forward_bf16(arl_ctx* ctx, float* y, const float* gate,
                                          const float* up, const uint16_t* w, const float* bias,
                                          int32_t m, int32_t n, int32_t k, int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_SWIGLU_LINEAR_ARGS(ctx, y, gate, up, w, m, n, k);
  return swiglu_linear(ctx, __func__, y, gate, up, w, bias, m, n, k, accumulate);
}

arl_status arl_rope_kv_cache_write(arl_ctx* ctx, float* q, float* k, float* k_cache,
                                   float* v_cache, const float* v, const int32_t* slots,
                                   const int32_t* positions, int32_t n, int32_t hq, int32_t s,
                                   int32_t hkv, int32_t l, int32_t d, float theta) {
  ARL_CTX(ctx);
  ARL_ROPE_KV_ARGS(ctx, q, k, k_cache, v_cache, v, slots, positions, n, hq, s, hkv, l, d, theta);
  // Positions and slots are flagged by the kernel (reported at the next synchronizing call).
  const int in_shared = size_t(d) * sizeof(float) <= 48 * 1024;
  rope_kv_cache_write_kernel<<<n, 256, in_shared ? size_t(d) * sizeof(float) : 0, ctx->stream>>>(
      q, k, k_cache, v_cache, v, slots, positions, hq, s, hkv, l, d, theta, in_shared, ctx->flag,
      ctx->flag_index);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

}  // extern "C"
