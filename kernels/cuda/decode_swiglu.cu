// Decode fusion (ABI version 4): RMSNorm, the stacked gate|up GEMV and SwiGLU in one kernel
// where the rows are few (see agentrl.h).
#include "common.cuh"
#include "gemv.cuh"
#include "../common/typed_entries.h"

namespace {

// [g | u] = rmsnorm(x) . w^T + bias (w: F gate rows, then F up rows); y = silu(g) * u: the
// fused GEMV for few rows, else the rmsnorm, the gate and up linears and SwiGLU through
// scratch memory.
template <typename W>
arl_status rmsnorm_linear_swiglu(arl_ctx* ctx, const char* fn, float* y, const float* x,
                                 const float* norm_weight, const W* w, const float* bias,
                                 int32_t m, int32_t f, int32_t k, float eps) {
  if (m <= arl::kGemvRows) {
    arl::gemv_rows<arl::kGemvNormSwiglu>(ctx, y, x, w, bias, m, f, k, false, norm_weight, eps);
    return arl::check_launch(ctx, fn);
  }
  // h (M, K), rstd (M), g (M, F), u (M, F), each 256-byte aligned
  const auto padded = [](size_t n) { return (n + 63) & ~size_t(63); };
  const size_t hk = padded(size_t(m) * size_t(k)), mf = padded(size_t(m) * size_t(f));
  const size_t floats = hk + padded(size_t(m)) + 2 * mf;
  auto* h = static_cast<float*>(arl::scratch(ctx, fn, floats * sizeof(float)));
  if (h == nullptr) return ARL_ERR_ALLOC;
  float *rstd = h + hk, *g = rstd + padded(size_t(m)), *u = g + mf;
  if (arl_status s = arl_rmsnorm_forward(ctx, h, rstd, x, norm_weight, m, k, eps)) return s;
  if (arl_status s = arl::linear_entry(ctx, g, h, w, bias, m, f, k, 0)) return s;
  const float* bias_up = bias != nullptr ? bias + f : nullptr;
  if (arl_status s = arl::linear_entry(ctx, u, h, w + int64_t(f) * k, bias_up, m, f, k, 0))
    return s;
  return arl_swiglu_forward(ctx, y, g, u, int64_t(m) * f);
}

}  // namespace

extern "C" {

arl_status arl_rmsnorm_linear_swiglu_forward(arl_ctx* ctx, float* y, const float* x,
                                             const float* norm_weight, const float* w,
                                             const float* bias, int32_t m, int32_t f, int32_t k,
                                             float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_SWIGLU_ARGS(ctx, y, x, norm_weight, w, m, f, k, eps);
  return rmsnorm_linear_swiglu(ctx, __func__, y, x, norm_weight, w, bias, m, f, k, eps);
}

arl_status arl_rmsnorm_linear_swiglu_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                                  const float* norm_weight, const uint16_t* w,
                                                  const float* bias, int32_t m, int32_t f,
                                                  int32_t k, float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_SWIGLU_ARGS(ctx, y, x, norm_weight, w, m, f, k, eps);
  return rmsnorm_linear_swiglu(ctx, __func__, y, x, norm_weight, w, bias, m, f, k, eps);
}

}  // extern "C"
