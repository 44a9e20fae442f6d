// Shared internals of the CPU library: the context, error reporting, argument
// checks and the thread pool (OpenMP).
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <new>
#include <vector>

#include "../include/agentrl.h"

namespace arl {
// A sampling of arl_sample_start whose results wait for arl_sample_finish (ticket 0: free).
struct SampleSlot {
  int64_t ticket = 0;
  int32_t n = 0;
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
};
}  // namespace arl

struct arl_ctx {
  int32_t num_threads;
  char last_error[512];
  arl::SampleSlot samples[ARL_SAMPLE_PENDING];
  int64_t sample_tickets;  // tickets handed out so far
};

#include "../common/checks.h"

namespace arl {

// Clears the context's last error (at the start of every entry point).
inline void clear(arl_ctx* ctx) { ctx->last_error[0] = '\0'; }

inline arl_status enter(arl_ctx* ctx) {
  clear(ctx);
  return ARL_OK;
}

int default_threads();

// Bytes of memory the system can give: Linux's MemAvailable plus SwapFree from /proc/meminfo
// (or from the file AGENTRL_MEMINFO names, for tests), at most what the process's memory cgroup
// leaves (v2 memory.max or v1 memory.limit_in_bytes, less the usage); -1 where unknown.
int64_t available_memory_bytes();

// Checks packed-sequence offsets: cu (B + 1) starts at 0, never decreases, ends at T.
arl_status check_cu_seqlens(arl_ctx* ctx, const char* fn, const int32_t* cu, int32_t b,
                            int32_t t);

// Checks a RoPE frequency table (d / 2 floats, host memory): each entry finite.
arl_status check_inv_freq(arl_ctx* ctx, const char* fn, const float* inv_freq, int32_t d);

// Checks one decode token's values (arl_decode_layer_bf16 and its norms entry), before anything
// is written: its cache slot and position, and its length in [1, l].
arl_status check_decode_token(arl_ctx* ctx, const char* fn, const int32_t* slot,
                              const int32_t* position, const int32_t* len, int32_t s, int32_t l);

// Checks the KV cache rows of n tokens: each slot in [0, s), each position under l and, unless
// negative_positions_ok (for callers where arl_rope reports them first), not negative.
arl_status check_cache_rows(arl_ctx* ctx, const char* fn, const int32_t* slots,
                            const int32_t* positions, int64_t n, int32_t s, int32_t l,
                            bool negative_positions_ok);

}  // namespace arl

namespace arl {

// Runs fn, turning C++ exceptions (allocation failures) into statuses. A lambda
// rather than a macro, so that OpenMP pragmas can appear in the body.
template <class F>
arl_status guarded(arl_ctx* ctx, const char* fn_name, F&& fn) {
  try {
    fn();
    return ARL_OK;
  } catch (const std::bad_alloc&) {
    return fail(ctx, ARL_ERR_ALLOC, "%s: out of memory", fn_name);
  } catch (...) {
    return fail(ctx, ARL_ERR_INTERNAL, "%s: unexpected internal error", fn_name);
  }
}

}  // namespace arl
