// Contexts, errors, memory and dtype conversion.
#include <omp.h>

#include <cstdlib>
#include <cstring>

#include "common.h"
#include "cpu_features.h"

namespace arl {

arl_status fail(arl_ctx* ctx, arl_status status, const char* fmt, ...) {
  if (ctx != nullptr) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(ctx->last_error, sizeof(ctx->last_error), fmt, args);
    va_end(args);
  }
  return status;
}

arl_status check_cu_seqlens(arl_ctx* ctx, const char* fn, const int32_t* cu, int32_t b,
                            int32_t t) {
  if (cu[0] != 0)
    return fail(ctx, ARL_ERR_VALUE, "%s: cu_seqlens[0] must be 0, got %d", fn, cu[0]);
  for (int32_t s = 0; s < b; s++)
    if (cu[s + 1] < cu[s])
      return fail(ctx, ARL_ERR_VALUE, "%s: cu_seqlens must not decrease (index %d: %d < %d)", fn,
                  s + 1, cu[s + 1], cu[s]);
  if (cu[b] != t)
    return fail(ctx, ARL_ERR_VALUE, "%s: cu_seqlens[%d] = %d must equal T = %d", fn, b, cu[b], t);
  return ARL_OK;
}

arl_status check_cache_rows(arl_ctx* ctx, const char* fn, const int32_t* slots,
                            const int32_t* positions, int64_t n, int32_t s, int32_t l,
                            bool negative_positions_ok) {
  for (int64_t i = 0; i < n; i++) {
    if (slots[i] < 0 || slots[i] >= s)
      return fail(ctx, ARL_ERR_VALUE, "%s: slot %d of token %lld is outside [0, %d)", fn,
                  slots[i], (long long)i, s);
    if (positions[i] >= l || (positions[i] < 0 && !negative_positions_ok))
      return fail(ctx, ARL_ERR_VALUE, "%s: position %d of token %lld is outside [0, %d)", fn,
                  positions[i], (long long)i, l);
  }
  return ARL_OK;
}

arl_status check_inv_freq(arl_ctx* ctx, const char* fn, const float* inv_freq, int32_t d) {
  for (int32_t j = 0; j < d / 2; j++)
    if (!std::isfinite(inv_freq[j]))
      return fail(ctx, ARL_ERR_VALUE, "%s: inv_freq[%d] is not finite", fn, j);
  return ARL_OK;
}

arl_status check_decode_token(arl_ctx* ctx, const char* fn, const int32_t* slot,
                              const int32_t* position, const int32_t* len, int32_t s, int32_t l) {
  if (arl_status st = check_cache_rows(ctx, fn, slot, position, 1, s, l, false)) return st;
  if (*len < 1 || *len > l)
    return fail(ctx, ARL_ERR_VALUE, "%s: length %d of query 0 is outside [1, %d]", fn, *len, l);
  return ARL_OK;
}

int default_threads() {
  int n = omp_get_num_procs();
  return n > 0 ? n : 1;
}

}  // namespace arl

extern "C" {

arl_ctx* arl_ctx_create(int32_t num_threads) {
  auto* ctx = new (std::nothrow) arl_ctx();
  if (ctx == nullptr) return nullptr;
  ctx->num_threads = num_threads > 0 ? num_threads : arl::default_threads();
  ctx->last_error[0] = '\0';
  return ctx;
}

void arl_ctx_destroy(arl_ctx* ctx) { delete ctx; }

const char* arl_last_error(const arl_ctx* ctx) {
  return ctx == nullptr ? "the context is null" : ctx->last_error;
}

arl_status arl_set_num_threads(arl_ctx* ctx, int32_t num_threads) {
  ARL_CTX(ctx);
  if (num_threads > 1024)
    return arl::fail(ctx, ARL_ERR_VALUE, "arl_set_num_threads: %d threads is too many",
                     num_threads);
  ctx->num_threads = num_threads > 0 ? num_threads : arl::default_threads();
  return ARL_OK;
}

int32_t arl_num_threads(const arl_ctx* ctx) { return ctx == nullptr ? 0 : ctx->num_threads; }

const char* arl_backend_name(void) { return arl::has_avx2_fma() ? "cpu-avx2" : "cpu-portable"; }

int32_t arl_abi_version(void) { return ARL_ABI_VERSION; }

void* arl_alloc(arl_ctx* ctx, int64_t bytes) {
  if (ctx == nullptr) return nullptr;
  arl::clear(ctx);
  if (bytes <= 0 || bytes > arl::kMaxElements * 4) {
    arl::fail(ctx, ARL_ERR_SIZE, "arl_alloc: bytes must be in 1..2^42, got %lld",
              (long long)bytes);
    return nullptr;
  }
  size_t size = (size_t(bytes) + 63) & ~size_t(63);
  // A block past the memory available would be committed page by page by the zero-fill below,
  // and the kernel's out-of-memory killer would end the process instead of this error.
  if (bytes >= (int64_t(1) << 26)) {
    const int64_t available = arl::available_memory_bytes();
    if (available >= 0 && int64_t(size) > available) {
      arl::fail(ctx, ARL_ERR_ALLOC,
                "arl_alloc: out of memory allocating %lld bytes: the system has %lld bytes "
                "available (MemAvailable and SwapFree, within the memory cgroup's limit)",
                (long long)bytes, (long long)available);
      return nullptr;
    }
  }
  void* p = std::aligned_alloc(64, size);
  if (p == nullptr) {
    arl::fail(ctx, ARL_ERR_ALLOC, "arl_alloc: out of memory allocating %lld bytes",
              (long long)bytes);
    return nullptr;
  }
  std::memset(p, 0, size);
  return p;
}

arl_status arl_free(arl_ctx* ctx, void* ptr) {
  // ctx may be null here, so memory can be released after its context is gone.
  if (ctx != nullptr) arl::clear(ctx);
  std::free(ptr);
  return ARL_OK;
}

arl_status arl_copy(arl_ctx* ctx, void* dst, const void* src, int64_t bytes) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dst);
  ARL_NOT_NULL(ctx, src);
  ARL_COUNT(ctx, bytes);
  std::memmove(dst, src, size_t(bytes));
  return ARL_OK;
}

arl_status arl_upload_async(arl_ctx* ctx, void* dst, const void* src, int64_t bytes) {
  ARL_CTX(ctx);  // (the CPU library copies at once: there is nothing to wait for)
  ARL_NOT_NULL(ctx, dst);
  ARL_NOT_NULL(ctx, src);
  ARL_COUNT(ctx, bytes);
  std::memmove(dst, src, size_t(bytes));
  return ARL_OK;
}

arl_status arl_upload_alternating(arl_ctx* ctx, void* dst, const void* src, int64_t bytes,
                                  int32_t parity, int32_t fresh) {
  ARL_CTX(ctx);  // (copied at once, as arl_upload_async does: nothing to order)
  ARL_NOT_NULL(ctx, dst);
  ARL_NOT_NULL(ctx, src);
  ARL_COUNT(ctx, bytes);
  if (arl_status s = arl::alternating_args(ctx, __func__, bytes, parity, fresh)) return s;
  std::memmove(dst, src, size_t(bytes));
  return ARL_OK;
}

arl_status arl_l2_persist(arl_ctx* ctx, const void* const* bases, const int64_t* bytes,
                          int32_t count, int64_t* kept) {
  ARL_CTX(ctx);  // (no cache to steer here: the arguments are checked, nothing is kept)
  if (arl_status s = arl::l2_regions_args(ctx, __func__, bases, bytes, count, kept)) return s;
  for (int32_t i = 0; i < count; i++) kept[i] = 0;
  return ARL_OK;
}

arl_status arl_fill_f32(arl_ctx* ctx, float* dst, float value, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dst);
  ARL_COUNT(ctx, n);
#pragma omp parallel for num_threads(ctx->num_threads) if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; i++) dst[i] = value;
  return ARL_OK;
}

arl_status arl_f32_to_bf16(arl_ctx* ctx, uint16_t* out, const float* x, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, x);
  ARL_COUNT(ctx, n);
#pragma omp parallel for num_threads(ctx->num_threads) if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
      out[i] = uint16_t((bits >> 16) | 0x40);  // quiet NaN
    } else {
      uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
      out[i] = uint16_t((bits + rounding) >> 16);
    }
  }
  return ARL_OK;
}

arl_status arl_bf16_to_f32(arl_ctx* ctx, float* out, const uint16_t* x, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, x);
  ARL_COUNT(ctx, n);
#pragma omp parallel for num_threads(ctx->num_threads) if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    uint32_t bits = uint32_t(x[i]) << 16;
    std::memcpy(&out[i], &bits, 4);
  }
  return ARL_OK;
}

// Graphs record CUDA streams; the CPU library runs every call as it is made.
arl_status arl_graph_begin(arl_ctx* ctx) {
  ARL_CTX(ctx);
  return arl::fail(ctx, ARL_ERR_UNSUPPORTED,
                   "arl_graph_begin: graphs are a CUDA feature; the CPU library runs each call "
                   "as it is made");
}

arl_status arl_graph_end(arl_ctx* ctx, arl_graph** out) {
  ARL_CTX(ctx);
  if (out != nullptr) *out = nullptr;
  return arl::fail(ctx, ARL_ERR_UNSUPPORTED, "arl_graph_end: no graph is being recorded");
}

arl_status arl_graph_launch(arl_ctx* ctx, const arl_graph* graph) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, graph);
  return arl::fail(ctx, ARL_ERR_UNSUPPORTED, "arl_graph_launch: graphs are a CUDA feature");
}

void arl_graph_destroy(arl_graph*) {}

}  // extern "C"
