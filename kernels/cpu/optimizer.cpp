// AdamW, gradient norms and scaling.
#include <cmath>

#include "common.h"
#include "vec_math.h"

extern "C" {

arl_status arl_sum_squares(arl_ctx* ctx, double* out, const float* x, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, x);
  ARL_COUNT(ctx, n);
  // Vectorized double accumulation over chunks (fast enough to run at memory
  // bandwidth; float squares are exact in double).
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  double s = 0;
#pragma omp parallel for num_threads(ctx->num_threads) reduction(+ : s) if (n > (1 << 16)) schedule(static)
  for (int64_t c = 0; c < chunks; c++) {
    const int64_t i0 = c * kChunk;
    const int len = int(n - i0 < kChunk ? n - i0 : kChunk);
    s += arl::vsumsq(x + i0, len);
  }
  *out = s;
  return ARL_OK;
}

arl_status arl_scale(arl_ctx* ctx, float* x, float s, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, x);
  ARL_COUNT(ctx, n);
#pragma omp parallel for num_threads(ctx->num_threads) if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; i++) x[i] *= s;
  return ARL_OK;
}

arl_status arl_adamw(arl_ctx* ctx, float* params, float* m, float* v, const float* grads,
                     int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                     int32_t step, float grad_scale) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, params);
  ARL_NOT_NULL(ctx, m);
  ARL_NOT_NULL(ctx, v);
  ARL_NOT_NULL(ctx, grads);
  ARL_COUNT(ctx, n);
  if (step < 1) return arl::fail(ctx, ARL_ERR_VALUE, "%s: step must be >= 1, got %d", __func__, step);
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: betas must be in [0, 1), got %g and %g", __func__,
                     double(beta1), double(beta2));
  if (!(eps > 0) || !(lr >= 0) || !(weight_decay >= 0) || !std::isfinite(eps) ||
      !std::isfinite(lr) || !std::isfinite(weight_decay) || !std::isfinite(grad_scale))
    return arl::fail(ctx, ARL_ERR_VALUE,
                     "%s: need finite eps > 0, lr >= 0, weight_decay >= 0 and grad_scale",
                     __func__);
  const double c1 = 1.0 - std::pow(double(beta1), step);
  const double c2 = 1.0 - std::pow(double(beta2), step);
  const float step_size = float(lr / c1);
  const float inv_c2 = float(1.0 / c2);
  const float decay = lr * weight_decay;
#pragma omp parallel for num_threads(ctx->num_threads) if (n > (1 << 15)) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float g = grads[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    params[i] -= step_size * mi / (std::sqrt(vi * inv_c2) + eps) + decay * params[i];
  }
  return ARL_OK;
}

}  // extern "C"
