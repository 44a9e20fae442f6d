// Decode fusion (ABI version 4): RMSNorm riding in the GEMV that reads its rows (see agentrl.h).
// Each decode fusion has its own file: their GEMV instantiations compile in parallel.
#include "common.cuh"
#include "gemv.cuh"
#include "../common/typed_entries.h"

namespace {

// y = rmsnorm(x) . w^T + bias: the fused GEMV for few rows, else rmsnorm into scratch and the
// linear entry point.
template <typename W>
arl_status rmsnorm_linear(arl_ctx* ctx, const char* fn, float* y, const float* x,
                          const float* norm_weight, const W* w, const float* bias, int32_t m,
                          int32_t n, int32_t k, float eps) {
  if (m <= arl::kGemvRows) {
    arl::gemv_rows<arl::kGemvNorm>(ctx, y, x, w, bias, m, n, k, false, norm_weight, eps);
    return arl::check_launch(ctx, fn);
  }
  const size_t rows = size_t(m) * size_t(k);
  auto* h = static_cast<float*>(arl::scratch(ctx, fn, (rows + size_t(m)) * sizeof(float)));
  if (h == nullptr) return ARL_ERR_ALLOC;
  if (arl_status s = arl_rmsnorm_forward(ctx, h, h + rows, x, norm_weight, m, k, eps)) return s;
  return arl::linear_entry(ctx, y, h, w, bias, m, n, k, 0);
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

}  // extern "C"
