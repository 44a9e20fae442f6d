// Sampling from logits with temperature, top-k and top-p, driven by a
// counter-based random stream so that results never depend on threads or batch.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "../common/sample_slots.h"
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

// Samples rows 0..n-1 (arguments checked by the caller).
arl_status sample_rows(arl_ctx* ctx, const char* fn, int32_t* tokens, float* logprobs,
                       const float* logits, const float* temperature, const int32_t* top_k,
                       const float* top_p, const uint64_t* seeds, const uint64_t* counters,
                       int32_t n, int32_t v) {
  return arl::guarded(ctx, fn, [&] {
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
            // by_logit is a strict total order: either way gives the prefix a full sort would.
            // A selection then a sort is faster when k is a large share of the vocabulary (a
            // tiny model's), the heap when most logits fall below its smallest member at once.
            if (v <= 32 * int64_t(k)) {
              std::nth_element(order, order + k, order + v, by_logit);
              std::sort(order, order + k, by_logit);
            } else {
              std::partial_sort(order, order + k, order + v, by_logit);
            }
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

}  // namespace

extern "C" {

arl_status arl_sample(arl_ctx* ctx, int32_t* tokens, float* logprobs, const float* logits,
                      const float* temperature, const int32_t* top_k, const float* top_p,
                      const uint64_t* seeds, const uint64_t* counters, int32_t n, int32_t v) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, tokens);
  ARL_SAMPLE_ARGS(ctx, logits, temperature, top_k, top_p, seeds, counters, n, v);
  return sample_rows(ctx, __func__, tokens, logprobs, logits, temperature, top_k, top_p, seeds,
                     counters, n, v);
}

// The CPU library samples at once: the slot keeps the results until arl_sample_finish.
arl_status arl_sample_start(arl_ctx* ctx, int64_t* ticket, int32_t* ids, const float* logits,
                            const float* temperature, const int32_t* top_k, const float* top_p,
                            const uint64_t* seeds, const uint64_t* counters, int32_t n,
                            int32_t v) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, ticket);
  ARL_SAMPLE_ARGS(ctx, logits, temperature, top_k, top_p, seeds, counters, n, v);
  int at = 0;
  if (arl_status s = arl::claim_sample_slot(ctx, __func__, ctx->samples, &at)) return s;
  arl::SampleSlot& slot = ctx->samples[at];
  arl_status s = arl::guarded(ctx, __func__, [&] {
    slot.tokens.resize(size_t(n));
    slot.logprobs.resize(size_t(n));
  });
  if (s == ARL_OK)
    s = sample_rows(ctx, __func__, slot.tokens.data(), slot.logprobs.data(), logits, temperature,
                    top_k, top_p, seeds, counters, n, v);
  if (s != ARL_OK) return s;
  if (ids != nullptr) std::copy(slot.tokens.begin(), slot.tokens.end(), ids);
  slot.n = n;
  slot.ticket = ++ctx->sample_tickets;
  *ticket = slot.ticket;
  return ARL_OK;
}

arl_status arl_sample_finish(arl_ctx* ctx, int32_t* tokens, float* logprobs, int64_t ticket,
                             int32_t n) {
  ARL_CTX(ctx);
  int at = 0;
  if (arl_status s =
          arl::find_sample_slot(ctx, __func__, ctx->samples, ARL_SAMPLE_PENDING, ticket, n, &at))
    return s;
  arl::SampleSlot& slot = ctx->samples[at];
  slot.ticket = 0;
  if (tokens != nullptr) std::copy(slot.tokens.begin(), slot.tokens.end(), tokens);
  if (tokens != nullptr && logprobs != nullptr)
    std::copy(slot.logprobs.begin(), slot.logprobs.end(), logprobs);
  return ARL_OK;
}

}  // extern "C"
