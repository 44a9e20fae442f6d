// arl_sample_start / arl_sample_finish bookkeeping shared by the CPU and CUDA libraries: a
// pending sampling holds one of ARL_SAMPLE_PENDING slots, named by a ticket (a count per context
// that never repeats; 0 marks a free slot). Each library's Slot adds its own results storage. A
// library may keep one more slot after those, for arl_sample itself (always free between calls).
#pragma once

#include <cmath>
#include <cstdint>

#include "checks.h"

namespace arl {

// The per-row settings' checks of arl_sample and arl_sample_start.
inline arl_status check_sample_rows(arl_ctx* ctx, const char* fn, const float* temperature,
                                    const float* top_p, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    if (!(temperature[i] >= 0.0f) || !std::isfinite(temperature[i]))
      return fail(ctx, ARL_ERR_VALUE, "%s: temperature of row %d must be >= 0, got %g", fn, i,
                  double(temperature[i]));
    if (!(top_p[i] > 0.0f))
      return fail(ctx, ARL_ERR_VALUE, "%s: top_p of row %d must be > 0, got %g", fn, i,
                  double(top_p[i]));
  }
  return ARL_OK;
}

// *at = a free slot for a new sampling; an error when every slot is pending.
template <class Slot>
arl_status claim_sample_slot(arl_ctx* ctx, const char* fn, const Slot* slots, int* at) {
  for (int i = 0; i < ARL_SAMPLE_PENDING; i++) {
    if (slots[i].ticket != 0) continue;
    *at = i;
    return ARL_OK;
  }
  return fail(ctx, ARL_ERR_VALUE,
              "%s: %d samplings are pending on this context, the most it holds: finish one "
              "first (arl_sample_finish)",
              fn, ARL_SAMPLE_PENDING);
}

// *at = the slot (of `count`) pending under `ticket`, which must have sampled N rows.
template <class Slot>
arl_status find_sample_slot(arl_ctx* ctx, const char* fn, const Slot* slots, int count,
                            int64_t ticket, int32_t n, int* at) {
  for (int i = 0; i < count; i++) {
    if (ticket <= 0 || slots[i].ticket != ticket) continue;
    if (slots[i].n != n)
      return fail(ctx, ARL_ERR_SIZE, "%s: ticket %lld sampled %d rows, not n = %d", fn,
                  (long long)ticket, slots[i].n, n);
    *at = i;
    return ARL_OK;
  }
  return fail(ctx, ARL_ERR_VALUE,
              "%s: ticket %lld is not pending (finished already, or not from arl_sample_start "
              "on this context)",
              fn, (long long)ticket);
}

}  // namespace arl

// The arguments every sampling entry point checks (arl_sample, arl_sample_start).
#define ARL_SAMPLE_ARGS(ctx, logits, temperature, top_k, top_p, seeds, counters, n, v)    \
  do {                                                                                   \
    ARL_NOT_NULL(ctx, logits);                                                           \
    ARL_NOT_NULL(ctx, temperature);                                                      \
    ARL_NOT_NULL(ctx, top_k);                                                            \
    ARL_NOT_NULL(ctx, top_p);                                                            \
    ARL_NOT_NULL(ctx, seeds);                                                            \
    ARL_NOT_NULL(ctx, counters);                                                         \
    ARL_POSITIVE(ctx, n);                                                                \
    ARL_POSITIVE(ctx, v);                                                                \
    ARL_PRODUCT(ctx, n, v);                                                              \
    if (arl_status s_ = arl::check_sample_rows(ctx, __func__, temperature, top_p, n)) \
      return s_;                                                                         \
  } while (0)
