// The fused LM head + log-softmax + gather + entropy, chunked over the
// vocabulary so no (T, V) logits matrix is ever stored, and its backward pass.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common.h"
#include "sgemm.h"
#include "vec_math.h"

namespace {

// Vocabulary columns per chunk: the (T, chunk) logits block stays near 8 MB.
int32_t chunk_size(int32_t t, int32_t v) {
  int64_t vc = (int64_t(2) << 20) / std::max(t, 1);
  vc = std::max<int64_t>(256, std::min<int64_t>(4096, vc));
  vc = (vc + 15) / 16 * 16;
  return int32_t(std::min<int64_t>(vc, v));
}

arl_status check_common(arl_ctx* ctx, const char* fn, const int32_t* targets, int32_t t,
                        int32_t v, float temperature) {
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: temperature must be a positive number, got %g", fn,
                     double(temperature));
  for (int32_t i = 0; i < t; i++)
    if (targets[i] < 0 || targets[i] >= v)
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: target id %d at row %d is outside [0, %d)", fn,
                       targets[i], i, v);
  return ARL_OK;
}

}  // namespace

extern "C" {

arl_status arl_logprob_forward(arl_ctx* ctx, float* logp, float* entropy, float* lse,
                               const float* h, const int32_t* targets, const float* w, int32_t t,
                               int32_t v, int32_t c, float temperature) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, logp);
  ARL_NOT_NULL(ctx, lse);
  ARL_NOT_NULL(ctx, h);
  ARL_NOT_NULL(ctx, targets);
  ARL_NOT_NULL(ctx, w);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  ARL_PRODUCT(ctx, v, c);
  if (arl_status s = check_common(ctx, __func__, targets, t, v, temperature)) return s;
  return arl::guarded(ctx, __func__, [&] {
    const int32_t vc = chunk_size(t, v);
    std::vector<float> block(size_t(t) * vc);
    std::vector<double> run_m(size_t(t), -INFINITY), run_s(size_t(t), 0.0), run_sz(size_t(t), 0.0);
    std::vector<float> target_logit(size_t(t), 0.0f);
    const float inv_temp = 1.0f / temperature;
    for (int32_t v0 = 0; v0 < v; v0 += vc) {
      const int32_t n = std::min(vc, v - v0);
      arl::sgemm(ctx->num_threads, false, true, t, n, c, inv_temp, h, c, w + int64_t(v0) * c, c,
                 0.0f, block.data(), n);
#pragma omp parallel for num_threads(ctx->num_threads) schedule(static) if (int64_t(t) * n > 8192)
      for (int32_t i = 0; i < t; i++) {
        const float* row = block.data() + int64_t(i) * n;
        const double m_new = std::max(run_m[i], double(arl::vmax(row, n)));
        double se, sez;
        arl::vexp_sums(row, n, float(m_new), &se, &sez);
        const double decay = std::exp(run_m[i] - m_new);
        run_s[i] = run_s[i] * decay + se;
        run_sz[i] = run_sz[i] * decay + sez;
        run_m[i] = m_new;
        const int32_t tgt = targets[i];
        if (tgt >= v0 && tgt < v0 + n) target_logit[i] = row[tgt - v0];
      }
    }
    for (int32_t i = 0; i < t; i++) {
      const double l = run_m[i] + std::log(run_s[i]);
      lse[i] = float(l);
      logp[i] = float(target_logit[i] - l);
      if (entropy != nullptr) entropy[i] = float(l - run_sz[i] / run_s[i]);
    }
  });
}

arl_status arl_logprob_backward(arl_ctx* ctx, float* dh, float* dw, const float* dlogp,
                                const float* dentropy, const float* h, const int32_t* targets,
                                const float* w, const float* lse, const float* entropy,
                                int32_t t, int32_t v, int32_t c, float temperature) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dh);
  ARL_NOT_NULL(ctx, dlogp);
  ARL_NOT_NULL(ctx, h);
  ARL_NOT_NULL(ctx, targets);
  ARL_NOT_NULL(ctx, w);
  ARL_NOT_NULL(ctx, lse);
  if (dentropy != nullptr) ARL_NOT_NULL(ctx, entropy);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  ARL_PRODUCT(ctx, v, c);
  if (arl_status s = check_common(ctx, __func__, targets, t, v, temperature)) return s;
  return arl::guarded(ctx, __func__, [&] {
    const int32_t vc = chunk_size(t, v);
    std::vector<float> block(size_t(t) * vc);
    const float inv_temp = 1.0f / temperature;
    for (int32_t v0 = 0; v0 < v; v0 += vc) {
      const int32_t n = std::min(vc, v - v0);
      const float* wc = w + int64_t(v0) * c;
      arl::sgemm(ctx->num_threads, false, true, t, n, c, inv_temp, h, c, wc, c, 0.0f,
                 block.data(), n);
      // dz_j = dlogp (1[j = target] - p_j) - dH p_j (log p_j + H), then / temperature.
#pragma omp parallel for num_threads(ctx->num_threads) schedule(static) if (int64_t(t) * n > 8192)
      for (int32_t i = 0; i < t; i++) {
        float* row = block.data() + int64_t(i) * n;
        const float l = lse[i];
        const float g = dlogp[i];
        const float ge = dentropy != nullptr ? dentropy[i] : 0.0f;
        const float hi = dentropy != nullptr ? entropy[i] : 0.0f;
        if (ge == 0.0f) {
          arl::vexp_store(row, row, n, l);  // row now holds p_j
          for (int32_t j = 0; j < n; j++) row[j] = -g * row[j] * inv_temp;
        } else {
          for (int32_t j = 0; j < n; j++) {
            const float logpj = row[j] - l;
            const float p = std::exp(logpj);
            row[j] = (-g * p - ge * p * (logpj + hi)) * inv_temp;
          }
        }
        const int32_t tgt = targets[i];
        if (tgt >= v0 && tgt < v0 + n) row[tgt - v0] += g * inv_temp;
      }
      arl::sgemm(ctx->num_threads, false, false, t, c, n, 1.0f, block.data(), n, wc, c,
                 v0 == 0 ? 0.0f : 1.0f, dh, c);
      if (dw != nullptr)
        arl::sgemm(ctx->num_threads, true, false, n, c, t, 1.0f, block.data(), n, h, c, 1.0f,
                   dw + int64_t(v0) * c, c);
    }
  });
}

arl_status arl_lm_head(arl_ctx* ctx, float* logits, const float* h, const float* w, int32_t t,
                       int32_t v, int32_t c) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, logits);
  ARL_NOT_NULL(ctx, h);
  ARL_NOT_NULL(ctx, w);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  ARL_PRODUCT(ctx, v, c);
  ARL_PRODUCT(ctx, t, v);
  return arl::guarded(ctx, __func__, [&] { arl::sgemm(ctx->num_threads, false, true, t, v, c, 1.0f, h, c, w, c, 0.0f, logits, v); });
}

}  // extern "C"
