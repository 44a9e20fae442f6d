// Sampling from logits with temperature, top-k and top-p, driven by a
// counter-based random stream so that results never depend on threads or batch.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common.h"

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform double in [0, 1) from (seed, counter).
double uniform(uint64_t seed, uint64_t counter) {
  const uint64_t bits = splitmix64(splitmix64(seed) ^ (counter * 0xd1b54a32d192ed03ULL));
  return double(bits >> 11) * (1.0 / 9007199254740992.0);
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
  return arl::guarded(ctx, __func__, [&] {
    // Per-thread scratch, allocated before the parallel region (see attention.cpp).
    const size_t nth = size_t(ctx->num_threads);
    std::vector<double> z_all(size_t(v) * nth);
    std::vector<int32_t> order_all(size_t(v) * nth);
#pragma omp parallel num_threads(ctx->num_threads) if (int64_t(n) * v > (1 << 16))
    {
      double* z = z_all.data() + size_t(v) * size_t(omp_get_thread_num());
      int32_t* order = order_all.data() + size_t(v) * size_t(omp_get_thread_num());
#pragma omp for schedule(dynamic, 1)
      for (int32_t i = 0; i < n; i++) {
        const float* row = logits + int64_t(i) * v;
        const bool greedy = temperature[i] == 0.0f;
        const double inv_t = greedy ? 1.0 : 1.0 / temperature[i];
        double m = -INFINITY;
        int32_t best = 0;
        for (int32_t j = 0; j < v; j++) {
          z[j] = row[j] * inv_t;
          if (z[j] > m) {
            m = z[j];
            best = j;
          }
        }
        double sum = 0;
        for (int32_t j = 0; j < v; j++) sum += std::exp(z[j] - m);
        const double lse = m + std::log(sum);
        int32_t chosen = best;
        // NaN or infinite logits (a diverged model): keep the argmax, as the CUDA library does
        // (the weights exp(z - m) would be NaN, and the draw would fall through to the last id)
        if (!greedy && std::isfinite(m) && std::isfinite(lse)) {
          // Candidates: all tokens, or the top-k by logit (ties broken by lower id).
          int32_t kept = v;
          std::iota(order, order + v, 0);
          auto by_logit = [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); };
          const int32_t k = top_k[i];
          const bool use_p = top_p[i] < 1.0f;
          if (k > 0 && k < v) {
            std::partial_sort(order, order + k, order + v, by_logit);
            kept = k;
          } else if (use_p) {
            std::sort(order, order + v, by_logit);
          }
          if (use_p) {
            // Smallest prefix (in logit order) whose probability reaches top_p.
            double kept_mass = 0;
            for (int32_t r = 0; r < kept; r++) kept_mass += std::exp(z[order[r]] - lse);
            double acc = 0;
            int32_t cut = kept;
            for (int32_t r = 0; r < kept; r++) {
              acc += std::exp(z[order[r]] - lse) / kept_mass;
              if (acc >= top_p[i]) {
                cut = r + 1;
                break;
              }
            }
            kept = cut;
          }
          double mass = 0;
          for (int32_t r = 0; r < kept; r++) mass += std::exp(z[order[r]] - m);
          const double u = uniform(seeds[i], counters[i]) * mass;
          double acc = 0;
          chosen = order[kept - 1];
          for (int32_t r = 0; r < kept; r++) {
            acc += std::exp(z[order[r]] - m);
            if (u < acc) {
              chosen = order[r];
              break;
            }
          }
        }
        tokens[i] = chosen;
        if (logprobs != nullptr) logprobs[i] = float(z[chosen] - lse);
      }
    }
  });
}

}  // extern "C"
