// arl_l2_persist: an L2 set-aside for weights that every decode step reads once (ABI version 11).
// The kernels whose weights overlap a kept region launch with that region's access-policy window
// (launch_pdl_reading), so that their reads there are "persisting" lines, which the stream of
// other weights through the rest of the L2 does not evict.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common.cuh"
#include "env_switch.h"

namespace {

// AGENTRL_CUDA_L2_PERSIST: the most bytes the regions keep. Unset, "" or "0": none (the default
// until a GPU times it); "max": the device's persisting maximum (-1 here); N: N MiB. Anything
// else is reported once and read as 0.
int64_t persist_cap() {
  static const int64_t cap = [] {
    const char* e = std::getenv("AGENTRL_CUDA_L2_PERSIST");
    if (e == nullptr || *e == '\0') return int64_t(0);
    if (std::strcmp(e, "max") == 0) return int64_t(-1);
    char* end = nullptr;
    const long long mib = std::strtoll(e, &end, 10);
    if (*end == '\0' && mib >= 0 && mib <= (1 << 20)) return int64_t(mib) << 20;
    std::fprintf(stderr, "AGENTRL_CUDA_L2_PERSIST=%s: expected max or a MiB count; ignored\n", e);
    return int64_t(0);
  }();
  return cap;
}

// AGENTRL_CUDA_L2_PERSIST_FIRST=1: a region's window is its first kept bytes (hit ratio 1), not
// the whole region at a hit ratio of kept / bytes (its kept lines spread over the region).
bool persist_first() {
  static const bool first = arl::env_flag("AGENTRL_CUDA_L2_PERSIST_FIRST", false);
  return first;
}

// An attribute of the device, 0 where the runtime does not say.
int64_t device_attribute(const arl_ctx* ctx, cudaDeviceAttr attribute) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attribute, ctx->device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return value;
}

}  // namespace

namespace arl {

void l2_window_release(arl_ctx* ctx) {
  ctx->l2_count = 0;
  if (ctx->l2_aside == 0) return;
  ctx->l2_aside = 0;
  // (graphs recorded with the windows keep them; their reads are then ordinary ones)
  const cudaError_t reset = cudaCtxResetPersistingL2Cache();
  const cudaError_t limit = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
  if (reset != cudaSuccess || limit != cudaSuccess) cudaGetLastError();
}

}  // namespace arl

extern "C" {

arl_status arl_l2_persist(arl_ctx* ctx, const void* const* bases, const int64_t* bytes,
                          int32_t count, int64_t* kept) {
  ARL_CTX(ctx);
  if (arl_status s = arl::l2_regions_args(ctx, __func__, bases, bytes, count, kept)) return s;
  if (ctx->capturing)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: a graph recording cannot change the L2 regions",
                     __func__);
  for (int32_t i = 0; i < count; i++) kept[i] = 0;
  arl::l2_window_release(ctx);
  const int64_t cap = persist_cap();
  if (count == 0 || cap == 0) return ARL_OK;
  const int64_t most = device_attribute(ctx, cudaDevAttrMaxPersistingL2CacheSize);
  const int64_t widest = device_attribute(ctx, cudaDevAttrMaxAccessPolicyWindowSize);
  int64_t total = 0;
  for (int32_t i = 0; i < count; i++) total += bytes[i];
  int64_t aside = std::min(total, most);
  if (cap > 0) aside = std::min(aside, cap);
  cudaError_t err = cudaSuccess;
  size_t granted = 0;
  if (aside > 0 && widest > 0) {
    err = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(aside));
    if (err == cudaSuccess) ctx->l2_aside = aside;  // (released even if the next call fails)
    if (err == cudaSuccess) err = cudaDeviceGetLimit(&granted, cudaLimitPersistingL2CacheSize);
  }
  if (err != cudaSuccess) cudaGetLastError();  // (e.g. a GPU shared through MPS: no set-aside)
  if (err != cudaSuccess || granted == 0) {
    // Asked for and not given: said (every time, as the regions are set rarely), nothing kept.
    std::fprintf(stderr, "arl_l2_persist: nothing kept of %lld bytes in %d regions (persisting "
                 "maximum %lld bytes, widest window %lld, set-aside %s)\n", (long long)total,
                 count, (long long)most, (long long)widest,
                 err != cudaSuccess ? cudaGetErrorString(err) : "0");
    arl::l2_window_release(ctx);
    return ARL_OK;
  }
  // The regions in their order, each kept whole while the set-aside lasts; a region's window is
  // the region (at most the widest window) at a hit ratio of its kept bytes over the window's,
  // so its kept lines spread over it, or with AGENTRL_CUDA_L2_PERSIST_FIRST=1 its kept bytes.
  int64_t left = std::min(aside, int64_t(granted));
  for (int32_t i = 0; i < count && left > 0; i++) {
    const int64_t keep = std::min(bytes[i], left);
    const int64_t window = persist_first() ? std::min(keep, widest) : std::min(bytes[i], widest);
    const int64_t held = std::min(keep, window);
    left -= held;
    ctx->l2_windows[ctx->l2_count++] = {static_cast<const char*>(bases[i]), bytes[i], window,
                                        float(double(held) / double(window))};
    kept[i] = held;
  }
  // Said on stderr (the regions are set rarely), so that a benchmark's log shows what was kept.
  int64_t sum = 0;
  for (int32_t i = 0; i < ctx->l2_count; i++) sum += kept[i];
  std::fprintf(stderr, "arl_l2_persist: %lld of %lld bytes kept in L2 (set-aside %lld, persisting "
               "maximum %lld, widest window %lld): %d of %d regions%s\n", (long long)sum,
               (long long)total, (long long)granted, (long long)most, (long long)widest,
               ctx->l2_count, count, persist_first() ? ", their first bytes" : ", spread");
  return ARL_OK;
}

}  // extern "C"
