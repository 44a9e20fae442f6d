// arl_l2_persist: an L2 set-aside for weights that every decode step reads once (ABI version 11).
// The few-row linears whose weights overlap the window launch with an access-policy window
// (launch_pdl_reading), so that their reads there are "persisting" lines, which the stream of
// other weights through the rest of the L2 does not evict.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common.cuh"

namespace {

// AGENTRL_CUDA_L2_PERSIST: the most bytes a window keeps. Unset, "" or "0": none (the default
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

// AGENTRL_CUDA_L2_PERSIST_FIRST=1: the window is the first kept bytes of the region (hit ratio
// 1), not the whole region at a hit ratio of kept / bytes (its lines spread over the region).
bool persist_first() {
  static const bool first = [] {
    const char* e = std::getenv("AGENTRL_CUDA_L2_PERSIST_FIRST");
    return e != nullptr && std::strcmp(e, "1") == 0;
  }();
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
  if (ctx->l2_window == nullptr) return;
  ctx->l2_window = nullptr;
  ctx->l2_window_bytes = 0;
  ctx->l2_hit_ratio = 0.0f;
  // (graphs recorded with the window keep it; their reads are then ordinary ones)
  if (cudaCtxResetPersistingL2Cache() != cudaSuccess ||
      cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0) != cudaSuccess)
    cudaGetLastError();
}

}  // namespace arl

extern "C" {

arl_status arl_l2_persist(arl_ctx* ctx, const void* base, int64_t bytes, int64_t* kept) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, kept);
  *kept = 0;
  if (arl_status s = arl::l2_window_args(ctx, __func__, base, bytes)) return s;
  if (ctx->capturing)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: a graph recording cannot change the L2 window",
                     __func__);
  const int64_t cap = persist_cap();
  const int64_t most = device_attribute(ctx, cudaDevAttrMaxPersistingL2CacheSize);
  const int64_t widest = device_attribute(ctx, cudaDevAttrMaxAccessPolicyWindowSize);
  int64_t aside = std::min(bytes, most);
  if (cap > 0) aside = std::min(aside, cap);
  if (base == nullptr || cap == 0 || aside <= 0 || widest <= 0) {
    arl::l2_window_release(ctx);
    return ARL_OK;
  }
  cudaError_t err = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(aside));
  size_t granted = 0;
  if (err == cudaSuccess) err = cudaDeviceGetLimit(&granted, cudaLimitPersistingL2CacheSize);
  if (err != cudaSuccess) {  // (e.g. a GPU shared through MPS): said once, nothing kept
    static bool said = false;
    if (!said)
      std::fprintf(stderr, "arl_l2_persist: the device refused an L2 set-aside of %lld bytes "
                   "(%s); nothing is kept\n", (long long)aside, cudaGetErrorString(err));
    said = true;
    cudaGetLastError();
    arl::l2_window_release(ctx);
    return ARL_OK;
  }
  const int64_t window = persist_first() ? aside : std::min(bytes, widest);
  const int64_t held = std::min(aside, int64_t(granted));
  ctx->l2_window = static_cast<const char*>(base);
  ctx->l2_window_bytes = window;
  ctx->l2_hit_ratio = float(std::min(1.0, double(held) / double(window)));
  *kept = std::min(held, window);
  return ARL_OK;
}

}  // extern "C"
