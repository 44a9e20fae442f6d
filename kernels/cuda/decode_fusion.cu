// Decode fusions (ABI version 4): calls that a decode step makes back to back, in one kernel
// where the rows are few (see agentrl.h).
#include "common.cuh"
#include "gemv.cuh"

namespace {

// The unfused path (more than kGemvRows rows): rmsnorm into scratch, then the linear entry.
template <class Linear>
arl_status rmsnorm_then_linear(arl_ctx* ctx, const char* fn, const float* x,
                               const float* norm_weight, int32_t m, int32_t k, float eps,
                               Linear&& linear) {
  const size_t rows = size_t(m) * size_t(k);
  auto* h = static_cast<float*>(arl::scratch(ctx, fn, (rows + size_t(m)) * sizeof(float)));
  if (h == nullptr) return ARL_ERR_ALLOC;
  if (arl_status s = arl_rmsnorm_forward(ctx, h, h + rows, x, norm_weight, m, k, eps)) return s;
  return linear(h);
}

// The unfused path: silu(gate) * up into scratch, then the linear entry.
template <class Linear>
arl_status swiglu_then_linear(arl_ctx* ctx, const char* fn, const float* gate, const float* up,
                              int32_t m, int32_t k, Linear&& linear) {
  const int64_t count = int64_t(m) * k;
  auto* s = static_cast<float*>(arl::scratch(ctx, fn, size_t(count) * sizeof(float)));
  if (s == nullptr) return ARL_ERR_ALLOC;
  if (arl_status st = arl_swiglu_forward(ctx, s, gate, up, count)) return st;
  return linear(s);
}

}  // namespace

extern "C" {

arl_status arl_rmsnorm_linear_forward(arl_ctx* ctx, float* y, const float* x,
                                      const float* norm_weight, const float* w, const float* bias,
                                      int32_t m, int32_t n, int32_t k, float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, n, k, eps);
  if (m <= arl::kGemvRows) {
    arl::gemv_rows(ctx, y, x, w, bias, m, n, k, false, norm_weight, eps);
    ARL_LAUNCHED(ctx);
    return ARL_OK;
  }
  return rmsnorm_then_linear(ctx, __func__, x, norm_weight, m, k, eps, [&](const float* h) {
    return arl_linear_forward(ctx, y, h, w, bias, m, n, k, 0);
  });
}

arl_status arl_rmsnorm_linear_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                           const float* norm_weight, const uint16_t* w,
                                           const float* bias, int32_t m, int32_t n, int32_t k,
                                           float eps) {
  ARL_CTX(ctx);
  ARL_RMSNORM_LINEAR_ARGS(ctx, y, x, norm_weight, w, m, n, k, eps);
  if (m <= arl::kGemvRows) {
    arl::gemv_rows(ctx, y, x, w, bias, m, n, k, false, norm_weight, eps);
    ARL_LAUNCHED(ctx);
    return ARL_OK;
  }
  return rmsnorm_then_linear(ctx, __func__, x, norm_weight, m, k, eps, [&](const float* h) {
    return arl_linear_forward_bf16(ctx, y, h, w, bias, m, n, k, 0);
  });
}

arl_status arl_swiglu_linear_forward(arl_ctx* ctx, float* y, const float* gate, const float* up,
                                     const float* w, const float* bias, int32_t m, int32_t n,
                                     int32_t k, int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_SWIGLU_LINEAR_ARGS(ctx, y, gate, up, w, m, n, k);
  if (m <= arl::kGemvRows) {
    arl::gemv_rows(ctx, y, gate, w, bias, m, n, k, accumulate != 0, nullptr, 0.0f, up);
    ARL_LAUNCHED(ctx);
    return ARL_OK;
  }
  return swiglu_then_linear(ctx, __func__, gate, up, m, k, [&](const float* s) {
    return arl_linear_forward(ctx, y, s, w, bias, m, n, k, accumulate);
  });
}

arl_status arl_swiglu_linear_forward_bf16(arl_ctx* ctx, float* y, const float* gate,
                                          const float* up, const uint16_t* w, const float* bias,
                                          int32_t m, int32_t n, int32_t k, int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_SWIGLU_LINEAR_ARGS(ctx, y, gate, up, w, m, n, k);
  if (m <= arl::kGemvRows) {
    arl::gemv_rows(ctx, y, gate, w, bias, m, n, k, accumulate != 0, nullptr, 0.0f, up);
    ARL_LAUNCHED(ctx);
    return ARL_OK;
  }
  return swiglu_then_linear(ctx, __func__, gate, up, m, k, [&](const float* s) {
    return arl_linear_forward_bf16(ctx, y, s, w, bias, m, n, k, accumulate);
  });
}

}  // extern "C"
