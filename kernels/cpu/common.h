// Shared internals of the CPU library: the context, error reporting, argument
// checks and the thread pool (OpenMP).
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <new>

#include "../include/agentrl.h"

struct arl_ctx {
  int32_t num_threads;
  char last_error[512];
};

namespace arl {

// Records a message on the context and returns the status.
arl_status fail(arl_ctx* ctx, arl_status status, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

// Clears the context's last error (at the start of every entry point).
inline void clear(arl_ctx* ctx) { ctx->last_error[0] = '\0'; }

// Largest element count an int64 size may describe here (2^40 floats = 4 TiB).
constexpr int64_t kMaxElements = int64_t(1) << 40;

int default_threads();

// Checks packed-sequence offsets: cu (B + 1) starts at 0, never decreases, ends at T.
arl_status check_cu_seqlens(arl_ctx* ctx, const char* fn, const int32_t* cu, int32_t b,
                            int32_t t);

}  // namespace arl

// Argument checks: each returns from the calling entry point with a status.
#define ARL_CTX(ctx)                  \
  do {                                \
    if ((ctx) == nullptr) return ARL_ERR_NULL; \
    arl::clear(ctx);                  \
  } while (0)

#define ARL_NOT_NULL(ctx, p)                                                        \
  do {                                                                              \
    if ((p) == nullptr)                                                             \
      return arl::fail(ctx, ARL_ERR_NULL, "%s: %s must not be null", __func__, #p); \
  } while (0)

#define ARL_POSITIVE(ctx, x)                                                          \
  do {                                                                                \
    if ((x) <= 0)                                                                     \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: %s must be positive, got %lld", __func__, \
                       #x, (long long)(x));                                           \
  } while (0)

#define ARL_COUNT(ctx, x)                                                                \
  do {                                                                                   \
    if ((x) <= 0 || (int64_t)(x) > arl::kMaxElements)                                    \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: %s must be in 1..2^40, got %lld", __func__, \
                       #x, (long long)(x));                                              \
  } while (0)

// Checks that the product of sizes fits the element limit.
#define ARL_PRODUCT(ctx, a, b)                                                          \
  do {                                                                                  \
    if ((int64_t)(a) * (int64_t)(b) > arl::kMaxElements)                                \
      return arl::fail(ctx, ARL_ERR_SIZE, "%s: %s x %s = %lld elements is too large",    \
                       __func__, #a, #b, (long long)((int64_t)(a) * (int64_t)(b)));     \
  } while (0)

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
