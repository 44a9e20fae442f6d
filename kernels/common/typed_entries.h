// The ABI's entry points overloaded on the weights' type (fp32 or bf16), for fusions whose
// unfused path is the calls they stand for (both libraries compile it against their own).
#pragma once

#include "../include/agentrl.h"

namespace arl {

inline arl_status linear_entry(arl_ctx* ctx, float* y, const float* x, const float* w,
                               const float* bias, int32_t m, int32_t n, int32_t k,
                               int32_t accumulate) {
  return arl_linear_forward(ctx, y, x, w, bias, m, n, k, accumulate);
}
inline arl_status linear_entry(arl_ctx* ctx, float* y, const float* x, const uint16_t* w,
                               const float* bias, int32_t m, int32_t n, int32_t k,
                               int32_t accumulate) {
  return arl_linear_forward_bf16(ctx, y, x, w, bias, m, n, k, accumulate);
}

inline arl_status rmsnorm_linear_entry(arl_ctx* ctx, float* y, const float* x,
                                       const float* norm_weight, const float* w,
                                       const float* bias, int32_t m, int32_t n, int32_t k,
                                       float eps) {
  return arl_rmsnorm_linear_forward(ctx, y, x, norm_weight, w, bias, m, n, k, eps);
}
inline arl_status rmsnorm_linear_entry(arl_ctx* ctx, float* y, const float* x,
                                       const float* norm_weight, const uint16_t* w,
                                       const float* bias, int32_t m, int32_t n, int32_t k,
                                       float eps) {
  return arl_rmsnorm_linear_forward_bf16(ctx, y, x, norm_weight, w, bias, m, n, k, eps);
}

}  // namespace arl
