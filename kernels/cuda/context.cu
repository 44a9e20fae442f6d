// Contexts, errors, memory and dtype conversion on a CUDA device.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "common.cuh"
#include "cublas_loader.h"
#include "env_switch.h"
#include "time_sums.cuh"

namespace {

// Why the last arl_ctx_create failed (read by arl_last_error(NULL)).
char g_create_error[512] = "";

__global__ void fill_kernel(float* dst, float value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = value;
}

// Round to nearest even; NaNs stay quiet NaNs.
__device__ inline uint32_t bf16_bits(float f) {
  const uint32_t bits = __float_as_uint(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits >> 16) | 0x40u;
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

// Four values a step (16 bytes in, 8 out) when x and out allow it, then the rest one by one;
// launched with f32_to_bf16_grid(n) blocks.
__global__ void f32_to_bf16_kernel(uint16_t* __restrict__ out, const float* __restrict__ x,
                                   int64_t n) {
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t done = 0;
  if (((reinterpret_cast<uintptr_t>(x) & 15) | (reinterpret_cast<uintptr_t>(out) & 7)) == 0) {
    done = n / 4 * 4;
    for (int64_t i = first; i < n / 4; i += stride) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(x) + i);
      uint2 o;
      o.x = bf16_bits(v.x) | (bf16_bits(v.y) << 16);
      o.y = bf16_bits(v.z) | (bf16_bits(v.w) << 16);
      reinterpret_cast<uint2*>(out)[i] = o;
    }
  }
  for (int64_t i = done + first; i < n; i += stride) out[i] = uint16_t(bf16_bits(x[i]));
}

inline unsigned f32_to_bf16_grid(int64_t n) { return arl::grid_for((n + 3) / 4); }

__global__ void bf16_to_f32_kernel(float* out, const uint16_t* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __uint_as_float(uint32_t(x[i]) << 16);
}

// Independent FMA chains (no memory traffic but the final store).
__global__ void fma_peak_kernel(float* sink, int64_t iterations) {
  float a0 = threadIdx.x * 1e-7f, a1 = a0 + 1e-7f, a2 = a0 + 2e-7f, a3 = a0 + 3e-7f;
  float a4 = a0 + 4e-7f, a5 = a0 + 5e-7f, a6 = a0 + 6e-7f, a7 = a0 + 7e-7f;
  const float m = 0.999999f, c = 1e-7f;
  for (int64_t i = 0; i < iterations; i++) {
#pragma unroll
    for (int u = 0; u < 16; u++) {
      a0 = fmaf(a0, m, c); a1 = fmaf(a1, m, c); a2 = fmaf(a2, m, c); a3 = fmaf(a3, m, c);
      a4 = fmaf(a4, m, c); a5 = fmaf(a5, m, c); a6 = fmaf(a6, m, c); a7 = fmaf(a7, m, c);
    }
  }
  float s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  if (s == 12345.0f) sink[threadIdx.x] = s;  // keeps the loop alive
}

}  // namespace

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

arl_status enter(arl_ctx* ctx) {
  ctx->last_error[0] = '\0';
  cudaError_t err = cudaSetDevice(ctx->device);
  if (err != cudaSuccess) return cuda_fail(ctx, "arl (selecting the device)", err);
  return ARL_OK;
}

arl_status cuda_fail(arl_ctx* ctx, const char* fn, cudaError_t err) {
  return fail(ctx, ARL_ERR_DEVICE, "%s: CUDA error %d (%s): %s%s", fn, int(err),
              cudaGetErrorName(err), cudaGetErrorString(err),
              ctx->capturing ? " (while recording a graph: calls that wait for the GPU cannot be "
                               "recorded)"
                             : "");
}

arl_status check_launch(arl_ctx* ctx, const char* fn) {
  cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? ARL_OK : cuda_fail(ctx, fn, err);
}

void* scratch(arl_ctx* ctx, const char* fn, size_t bytes) {
  if (ctx->capturing) {  // a graph would keep a pointer that a later call may free
    fail(ctx, ARL_ERR_VALUE, "%s: needs scratch memory, which a graph cannot record", fn);
    return nullptr;
  }
  if (bytes <= ctx->scratch_bytes) return ctx->scratch;
  if (ctx->scratch != nullptr) {
    cudaStreamSynchronize(ctx->stream);
    cudaFree(ctx->scratch);
    ctx->scratch = nullptr;
    ctx->scratch_bytes = 0;
  }
  size_t size = bytes + bytes / 4;
  if (cudaMalloc(&ctx->scratch, size) != cudaSuccess) {
    cudaGetLastError();
    ctx->scratch = nullptr;
    fail(ctx, ARL_ERR_ALLOC, "%s: out of device memory for %zu bytes of scratch", fn, bytes);
    return nullptr;
  }
  ctx->scratch_bytes = size;
  return ctx->scratch;
}

arl_status to_bf16(arl_ctx* ctx, const char* fn, int slot, const float* x, int64_t n,
                   const uint16_t** out) {
  *out = nullptr;
  const size_t bytes = size_t(n) * sizeof(uint16_t);
  if (bytes > ctx->half_scratch_bytes[slot]) {
    // A graph can record the buffer it finds (below), not a new one.
    if (ctx->capturing)
      return fail(ctx, ARL_ERR_VALUE, "%s: needs more scratch memory than a graph can record",
                  fn);
    if (ctx->half_scratch[slot] != nullptr) {
      cudaStreamSynchronize(ctx->stream);
      if (ctx->half_scratch_recorded) {  // a recorded graph may still use it: keep it
        if (ctx->num_retired == int(sizeof(ctx->retired) / sizeof(ctx->retired[0])))
          return fail(ctx, ARL_ERR_ALLOC, "%s: bf16 scratch regrown too often under graphs", fn);
        ctx->retired[ctx->num_retired++] = ctx->half_scratch[slot];
      } else {
        cudaFree(ctx->half_scratch[slot]);
      }
      ctx->half_scratch[slot] = nullptr;
      ctx->half_scratch_bytes[slot] = 0;
    }
    const size_t size = bytes + bytes / 4;
    if (cudaMalloc(&ctx->half_scratch[slot], size) != cudaSuccess) {
      cudaGetLastError();
      ctx->half_scratch[slot] = nullptr;
      return fail(ctx, ARL_ERR_ALLOC, "%s: out of device memory for %zu bytes of bf16 scratch",
                  fn, bytes);
    }
    ctx->half_scratch_bytes[slot] = size;
  }
  if (ctx->capturing) ctx->half_scratch_recorded = true;
  auto* half = static_cast<uint16_t*>(ctx->half_scratch[slot]);
  f32_to_bf16_kernel<<<f32_to_bf16_grid(n), kBlock, 0, ctx->stream>>>(half, x, n);
  if (arl_status s = check_launch(ctx, fn)) return s;
  *out = half;
  return ARL_OK;
}

void* host_scratch(arl_ctx* ctx, const char* fn, size_t bytes) {
  if (ctx->capturing) {  // a graph would keep a pointer that a later call may free
    fail(ctx, ARL_ERR_VALUE, "%s: needs pinned host memory, which a graph cannot record", fn);
    return nullptr;
  }
  if (bytes <= ctx->host_scratch_bytes) return ctx->host_scratch;
  if (ctx->host_scratch != nullptr) {
    cudaStreamSynchronize(ctx->stream);
    cudaFreeHost(ctx->host_scratch);
    ctx->host_scratch = nullptr;
    ctx->host_scratch_bytes = 0;
  }
  size_t size = bytes < 4096 ? 4096 : bytes + bytes / 4;
  if (cudaMallocHost(&ctx->host_scratch, size) != cudaSuccess) {
    cudaGetLastError();
    ctx->host_scratch = nullptr;
    fail(ctx, ARL_ERR_ALLOC, "%s: out of pinned host memory for %zu bytes", fn, bytes);
    return nullptr;
  }
  ctx->host_scratch_bytes = size;
  return ctx->host_scratch;
}

arl_status fetch_i32(arl_ctx* ctx, const char* fn, std::vector<int32_t>& out, const int32_t* src,
                     int64_t n) {
  out.resize(size_t(n));
  cudaError_t err = cudaMemcpyAsync(out.data(), src, size_t(n) * 4, cudaMemcpyDefault, ctx->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  return err == cudaSuccess ? ARL_OK : cuda_fail(ctx, fn, err);
}

arl_status fetch_cu_seqlens(arl_ctx* ctx, const char* fn, std::vector<int32_t>& cu,
                            const int32_t* src, int32_t b, int32_t t) {
  if (arl_status s = fetch_i32(ctx, fn, cu, src, int64_t(b) + 1)) return s;
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

cudaError_t queue_flag_read(arl_ctx* ctx) {
  return cudaMemcpyAsync(ctx->flag_host, ctx->flag, 16, cudaMemcpyDeviceToHost, ctx->stream);
}

arl_status report_flag(arl_ctx* ctx, const char* fn, const char* what) {
  return report_flag_copy(ctx, fn, what, ctx->flag_host);
}

arl_status report_flag_copy(arl_ctx* ctx, const char* fn, const char* what, int64_t* copy) {
  const int code = int(copy[0] & 0xffffffff);
  const long long index = (long long)copy[1];
  if (code == 0) return ARL_OK;
  copy[0] = 0;
  cudaMemsetAsync(ctx->flag, 0, 16, ctx->stream);
  // Samplings queued before this clear copied the same flag: they do not report it again.
  ctx->sample_flag_reported = ctx->sample_tickets;
  switch (code) {
    case kDeferredNegativePosition:
      return fail(ctx, ARL_ERR_VALUE,
                  "%s: an earlier arl_rope (or arl_rope_freqs, arl_rope_kv_cache_write, arl_decode_layer_bf16) "
                  "call was given a negative position at row %lld (its kernel skipped that row; "
                  "CUDA kernels report bad values at the next call that synchronizes)",
                  fn, index);
    case kDeferredCacheSlot:
    case kDeferredCachePosition:
    case kDeferredDecodeSlot:
    case kDeferredDecodeLen: {
      static const char* what_of[] = {
          "arl_kv_cache_write (or arl_rope_kv_cache_write, arl_decode_layer_bf16): slot %d of "
          "token %d is outside [0, S)",
          "arl_kv_cache_write (or arl_rope_kv_cache_write, arl_decode_layer_bf16): position %d of "
          "token %d is outside [0, L)",
          "arl_attention_decode: slot %d of query %d is outside [0, S)",
          "arl_attention_decode (or arl_decode_layer_bf16): length %d of query %d is outside "
          "[1, L]",
      };
      char detail[160];
      snprintf(detail, sizeof(detail), what_of[code - kDeferredCacheSlot],
               int32_t(uint32_t(index & 0xffffffff)), int32_t(index >> 32));
      return fail(ctx, ARL_ERR_VALUE,
                  "%s: an earlier call failed: %s (its kernel skipped that row; CUDA kernels "
                  "report bad values at the next call that synchronizes)",
                  fn, detail);
    }
    case kDeferredEmbeddingToken:
      return fail(ctx, ARL_ERR_VALUE,
                  "%s: an earlier arl_embedding_forward call failed: token id %d at row %d is "
                  "outside [0, V) (its kernel wrote zeros for that row; CUDA kernels report bad "
                  "values at the next call that synchronizes)",
                  fn, int32_t(uint32_t(index & 0xffffffff)), int32_t(index >> 32));
    case kDeferredRopeFreq:
      return fail(ctx, ARL_ERR_VALUE,
                  "%s: an earlier arl_rope_freqs (or arl_norm_rope_kv_cache_write, "
                  "arl_decode_layer_norms_bf16) call was given a RoPE frequency table whose entry "
                  "inv_freq[%lld] is not finite (its kernel skipped the rows; CUDA kernels report "
                  "bad values at the next call that synchronizes)",
                  fn, index);
    case kDeferredFusedRange:
      return fail(ctx, ARL_ERR_VALUE,
                  "%s: an earlier arl_decode_layer_bf16 call with AGENTRL_CUDA_DECODE_MLP_FUSED=1 "
                  "met a value of x's row %lld that is not finite or not below 2^24 in size, past "
                  "its fixed-point sums (it wrote NaN for x; CUDA kernels report bad values at the "
                  "next call that synchronizes); unset AGENTRL_CUDA_DECODE_MLP_FUSED",
                  fn, index);
    case kDeferredDecodeTokenStall:
      return fail(ctx, ARL_ERR_DEVICE,
                  "%s: an earlier arl_decode_layers_bf16 call failed: its persistent kernel's "
                  "blocks waited 5 s for each other, so the device did not run the grid at once "
                  "(e.g. an MPS limit on SMs); unset AGENTRL_CUDA_DECODE_TOKEN to run the layers "
                  "one call each",
                  fn);
    case kDeferredDecodeStall:
      return fail(ctx, ARL_ERR_DEVICE,
                  "%s: an earlier arl_decode_layer_bf16 call failed: the attention blocks of a "
                  "head waited 5 s for the rest of their grid, so the device did not run the "
                  "grid at once (e.g. an MPS limit on SMs); set AGENTRL_CUDA_DECODE_LAYER=steps "
                  "to run the layer as separate calls",
                  fn);
    default:
      return fail(ctx, ARL_ERR_VALUE, "%s: %s (index %lld)", fn, what, index);
  }
}

namespace {
std::mutex g_time_sums_lock;
std::vector<arl::TimeSums*> g_time_sums;  // the switches with counters, printed at exit

void print_time_sums() {
  for (arl::TimeSums* t : g_time_sums) {
    unsigned long long host[arl::kTimeSumsMaxWords] = {};
    if (cudaSetDevice(t->device) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpy(host, t->sums, size_t(t->words) * sizeof(host[0]), cudaMemcpyDeviceToHost) !=
            cudaSuccess)
      continue;
    t->print(host);
  }
}
}  // namespace

unsigned long long* time_sums(arl_ctx* ctx, TimeSums& t) {
  // (the switch is read once: the final norm and the embedding ask on every call)
  if (t.on.load(std::memory_order_relaxed) < 0) {
    const char* e = std::getenv(t.env);
    t.on.store(e != nullptr && std::strcmp(e, "1") == 0 ? 1 : 0, std::memory_order_relaxed);
  }
  if (t.on.load(std::memory_order_relaxed) == 0 || t.words > kTimeSumsMaxWords) return nullptr;
  std::lock_guard<std::mutex> guard(g_time_sums_lock);
  if (t.sums == nullptr && !ctx->capturing) {
    const size_t bytes = size_t(t.words) * sizeof(unsigned long long);
    if (cudaMalloc(&t.sums, bytes) != cudaSuccess ||
        cudaMemsetAsync(t.sums, 0, bytes, ctx->stream) != cudaSuccess ||
        cudaStreamSynchronize(ctx->stream) != cudaSuccess) {
      cudaGetLastError();
      t.sums = nullptr;
      return nullptr;
    }
    t.device = ctx->device;
    if (g_time_sums.empty()) std::atexit(print_time_sums);
    g_time_sums.push_back(&t);
  }
  return t.sums != nullptr && t.device == ctx->device ? t.sums : nullptr;
}

arl_status check_flag(arl_ctx* ctx, const char* fn, const char* what) {
  cudaError_t err = queue_flag_read(ctx);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) return cuda_fail(ctx, fn, err);
  return report_flag(ctx, fn, what);
}

}  // namespace arl

extern "C" {

arl_ctx* arl_ctx_create(int32_t num_threads) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    snprintf(g_create_error, sizeof(g_create_error),
             "no CUDA device: %s (a CUDA driver and an NVIDIA GPU are needed for device "
             "'cuda'; the CPU backend works without them)",
             err != cudaSuccess ? cudaGetErrorString(err) : "the driver reports 0 devices");
    cudaGetLastError();
    return nullptr;
  }
  auto* ctx = new (std::nothrow) arl_ctx();
  if (ctx == nullptr) return nullptr;
  std::memset(ctx, 0, sizeof(*ctx));
  const char* env = std::getenv("AGENTRL_CUDA_DEVICE");
  ctx->device = env != nullptr ? std::atoi(env) : 0;
  if (ctx->device < 0 || ctx->device >= count) {
    snprintf(g_create_error, sizeof(g_create_error),
             "AGENTRL_CUDA_DEVICE=%s is not a device index in 0..%d", env, count - 1);
    delete ctx;
    return nullptr;
  }
  ctx->num_threads = num_threads > 0 ? num_threads : 1;
  err = cudaSetDevice(ctx->device);
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking);
  // the flag (code, index) and arl_sample's greedy row counters, zeroed
  const size_t flag_bytes = 16 + sizeof(int) * kArlGreedyMaxRows;
  if (err == cudaSuccess) err = cudaMalloc(&ctx->flag, flag_bytes);
  if (err == cudaSuccess) err = cudaMemset(ctx->flag, 0, flag_bytes);
  if (err == cudaSuccess) err = cudaMallocHost(&ctx->flag_host, 16);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&ctx->num_sms, cudaDevAttrMultiProcessorCount, ctx->device);
  int major = 0, max_smem = 0;
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx->device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx->device);
  // The kernels' griddepcontrol instructions exist from PTX 9.0 on: a GPU newer than the
  // build's targets runs the sm_80 PTX, which has none.
  cudaFuncAttributes probe{};
  if (err == cudaSuccess) err = cudaFuncGetAttributes(&probe, fill_kernel);
  if (err != cudaSuccess) {
    snprintf(g_create_error, sizeof(g_create_error), "no usable CUDA device: %s",
             cudaGetErrorString(err));
    cudaGetLastError();
    if (ctx->flag != nullptr) cudaFree(ctx->flag);
    if (ctx->flag_host != nullptr) cudaFreeHost(ctx->flag_host);
    if (ctx->stream != nullptr) cudaStreamDestroy(ctx->stream);
    delete ctx;
    return nullptr;
  }
  static const bool pdl_allowed = arl::env_flag("AGENTRL_CUDA_PDL", true);
  ctx->pdl = major >= 9 && probe.ptxVersion >= 90 && pdl_allowed;
  ctx->max_smem = max_smem;
  ctx->cc_major = major;
  int cooperative = 0, l2 = 0;  // (0 when the runtime does not say)
  if (cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, ctx->device) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx->device) != cudaSuccess)
    cudaGetLastError();
  ctx->cooperative = cooperative != 0;
  ctx->l2_bytes = l2;
  ctx->flag_index = reinterpret_cast<int64_t*>(reinterpret_cast<char*>(ctx->flag) + 8);
  ctx->greedy_done = reinterpret_cast<int*>(reinterpret_cast<char*>(ctx->flag) + 16);
  ctx->cublas = arl::cublas_create(ctx->stream, &ctx->cublas_workspace);
  g_create_error[0] = '\0';
  return ctx;
}

void arl_ctx_destroy(arl_ctx* ctx) {
  if (ctx == nullptr) return;
  cudaSetDevice(ctx->device);
  if (ctx->capturing) {  // a recording left open: end it and drop what it recorded
    cudaGraph_t g = nullptr;
    if (cudaStreamEndCapture(ctx->stream, &g) == cudaSuccess && g != nullptr) cudaGraphDestroy(g);
    cudaGetLastError();
  }
  cudaStreamSynchronize(ctx->stream);
  arl::l2_window_release(ctx);
  if (ctx->cublas != nullptr) arl::cublas_destroy(ctx->cublas);
  if (ctx->cublas_workspace != nullptr) cudaFree(ctx->cublas_workspace);
  if (ctx->scratch != nullptr) cudaFree(ctx->scratch);
  if (ctx->decode_partial != nullptr) cudaFree(ctx->decode_partial);
  if (ctx->decode_sync != nullptr) cudaFree(ctx->decode_sync);
  for (void* p : ctx->half_scratch)
    if (p != nullptr) cudaFree(p);
  for (int i = 0; i < ctx->num_retired; i++) cudaFree(ctx->retired[i]);
  if (ctx->host_scratch != nullptr) cudaFreeHost(ctx->host_scratch);
  if (ctx->upload_host != nullptr) {
    for (cudaEvent_t e : ctx->upload_done) cudaEventDestroy(e);
    cudaFreeHost(ctx->upload_host);
  }
  if (ctx->alt_host != nullptr) {
    cudaStreamSynchronize(ctx->alt_stream);
    for (int i = 0; i < 2; i++) {
      cudaEventDestroy(ctx->alt_done[i]);
      cudaEventDestroy(ctx->alt_passed[i]);
    }
    cudaStreamDestroy(ctx->alt_stream);
    cudaFreeHost(ctx->alt_host);
  }
  for (arl::SampleSlot& slot : ctx->samples) {
    if (slot.done != nullptr) cudaEventDestroy(slot.done);
    if (slot.host != nullptr) cudaFreeHost(slot.host);
  }
  cudaFree(ctx->flag);
  cudaFreeHost(ctx->flag_host);
  cudaStreamDestroy(ctx->stream);
  delete ctx;
}

const char* arl_last_error(const arl_ctx* ctx) {
  if (ctx != nullptr) return ctx->last_error;
  return g_create_error[0] != '\0' ? g_create_error : "the context is null";
}

arl_status arl_set_num_threads(arl_ctx* ctx, int32_t num_threads) {
  ARL_CTX(ctx);
  if (num_threads > 1024)
    return arl::fail(ctx, ARL_ERR_VALUE, "arl_set_num_threads: %d threads is too many",
                     num_threads);
  ctx->num_threads = num_threads > 0 ? num_threads : 1;
  return ARL_OK;
}

int32_t arl_num_threads(const arl_ctx* ctx) { return ctx == nullptr ? 0 : ctx->num_threads; }

const char* arl_backend_name(void) {
#ifdef AGENTRL_CUDA_EMU
  return "cuda-emulated";  // kernels/emu/: the CUDA code run on the CPU
#else
  return "cuda";
#endif
}

int32_t arl_abi_version(void) { return ARL_ABI_VERSION; }

arl_status arl_fma_peak(arl_ctx* ctx, double* gflops, int64_t iterations) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, gflops);
  ARL_COUNT(ctx, iterations);
  float* sink = static_cast<float*>(arl::scratch(ctx, __func__, 1024 * sizeof(float)));
  if (sink == nullptr) return ARL_ERR_ALLOC;
  int blocks = ctx->num_sms * 8;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, ctx->stream);
  fma_peak_kernel<<<blocks, 256, 0, ctx->stream>>>(sink, iterations);
  cudaEventRecord(stop, ctx->stream);
  cudaError_t err = cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, __func__, err);
  ARL_LAUNCHED(ctx);
  double flops = 2.0 * 8 * 16 * double(iterations) * blocks * 256;
  *gflops = ms > 0 ? flops / (ms * 1e6) : 0;
  return ARL_OK;
}

void* arl_alloc(arl_ctx* ctx, int64_t bytes) {
  if (ctx == nullptr) return nullptr;
  if (arl::enter(ctx) != ARL_OK) return nullptr;
  if (bytes <= 0 || bytes > arl::kMaxElements * 4) {
    arl::fail(ctx, ARL_ERR_SIZE, "arl_alloc: bytes must be in 1..2^42, got %lld",
              (long long)bytes);
    return nullptr;
  }
  size_t size = (size_t(bytes) + 255) & ~size_t(255);
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  if (err != cudaSuccess) {
    cudaGetLastError();
    arl::fail(ctx, ARL_ERR_ALLOC, "arl_alloc: out of device memory allocating %lld bytes (%s)",
              (long long)bytes, cudaGetErrorString(err));
    return nullptr;
  }
  err = cudaMemsetAsync(p, 0, size, ctx->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) {
    cudaFree(p);
    arl::cuda_fail(ctx, "arl_alloc", err);
    return nullptr;
  }
  return p;
}

arl_status arl_free(arl_ctx* ctx, void* ptr) {
  // ctx may be null here, so memory can be released after its context is gone.
  if (ctx != nullptr) ctx->last_error[0] = '\0';
  if (ptr == nullptr) return ARL_OK;
  // Work queued on any stream that still reads ptr must finish first.
  cudaDeviceSynchronize();
  cudaError_t err = cudaFree(ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return ctx != nullptr ? arl::cuda_fail(ctx, "arl_free", err) : ARL_ERR_DEVICE;
  }
  return ARL_OK;
}

// Host or device memory on either side (unified addressing); returns when done.
arl_status arl_copy(arl_ctx* ctx, void* dst, const void* src, int64_t bytes) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dst);
  ARL_NOT_NULL(ctx, src);
  ARL_COUNT(ctx, bytes);
  cudaError_t err = cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDefault, ctx->stream);
  if (err == cudaSuccess) err = arl::queue_flag_read(ctx);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, __func__, err);
  return arl::report_flag(ctx, __func__, "a kernel of an earlier call flagged a bad value");
}

// arl_upload_async: the bytes go into the next of four pinned slots (waiting for that slot's
// copy of four calls ago, if it is still queued), and the copy from there is queued on the stream.
// AGENTRL_CUDA_UPLOAD=kernel (an experiment): up to kUploadParamBytes go in the parameters of a
// kernel that stores them, so that the stream holds no copy-engine transfer between kernels (a
// decode step's placement, between one step's sampling and the next step's graph).
extern "C++" {  // (templates, inside the file's extern "C" block)
namespace {
constexpr int kUploadSlots = int(sizeof(arl_ctx::upload_done) / sizeof(cudaEvent_t));
constexpr size_t kUploadSlotBytes = ARL_UPLOAD_ASYNC_BYTES;
constexpr int kUploadParamBytes = 1024;

template <int kBytes>  // (64, 256 or 1024: a launch carries no more parameter bytes than it needs)
struct UploadParams {
  uint32_t words[kBytes / 4];
};

template <int kBytes>
__global__ void upload_kernel(unsigned char* dst, UploadParams<kBytes> src, int32_t bytes) {
  const auto* from = reinterpret_cast<const unsigned char*>(src.words);
  if ((reinterpret_cast<uintptr_t>(dst) & 3) == 0) {  // (whole words, then the tail's bytes)
    for (int32_t i = threadIdx.x; i < bytes / 4; i += blockDim.x)
      reinterpret_cast<uint32_t*>(dst)[i] = src.words[i];
    for (int32_t i = bytes / 4 * 4 + threadIdx.x; i < bytes; i += blockDim.x) dst[i] = from[i];
  } else {
    for (int32_t i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = from[i];
  }
}

bool upload_by_kernel() {
  static const bool value = arl::env_choice("AGENTRL_CUDA_UPLOAD", {"copy", "kernel"}) == 1;
  return value;
}

template <int kBytes>
cudaError_t upload_launch(arl_ctx* ctx, void* dst, const void* src, int64_t bytes) {
  UploadParams<kBytes> params{};
  std::memcpy(params.words, src, size_t(bytes));
  upload_kernel<kBytes><<<1, 128, 0, ctx->stream>>>(static_cast<unsigned char*>(dst), params,
                                                    int32_t(bytes));
  return cudaGetLastError();
}
}  // namespace
}  // extern "C++"

arl_status arl_upload_async(arl_ctx* ctx, void* dst, const void* src, int64_t bytes) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dst);
  ARL_NOT_NULL(ctx, src);
  ARL_COUNT(ctx, bytes);
  if (ctx->capturing)
    return arl::fail(ctx, ARL_ERR_UNSUPPORTED,
                     "%s: a copy from host memory cannot be recorded in a graph", __func__);
  if (bytes == 0) return ARL_OK;
  if (bytes <= kUploadParamBytes && upload_by_kernel()) {
    const cudaError_t err = bytes <= 64    ? upload_launch<64>(ctx, dst, src, bytes)
                            : bytes <= 256 ? upload_launch<256>(ctx, dst, src, bytes)
                                           : upload_launch<kUploadParamBytes>(ctx, dst, src, bytes);
    if (err != cudaSuccess) return arl::cuda_fail(ctx, __func__, err);
    return ARL_OK;
  }
  if (size_t(bytes) > kUploadSlotBytes) return arl_copy(ctx, dst, src, bytes);
  if (ctx->upload_host == nullptr) {
    if (cudaMallocHost(&ctx->upload_host, kUploadSlots * kUploadSlotBytes) != cudaSuccess) {
      cudaGetLastError();
      ctx->upload_host = nullptr;
      return arl_copy(ctx, dst, src, bytes);  // (no pinned memory: the waiting copy)
    }
    for (int i = 0; i < kUploadSlots; i++) {
      if (cudaEventCreate(&ctx->upload_done[i]) != cudaSuccess) {
        cudaGetLastError();
        for (int j = 0; j < i; j++) cudaEventDestroy(ctx->upload_done[j]);
        cudaFreeHost(ctx->upload_host);
        ctx->upload_host = nullptr;
        return arl_copy(ctx, dst, src, bytes);
      }
      ctx->upload_pending[i] = false;
    }
  }
  const int slot = ctx->upload_next;
  ctx->upload_next = (slot + 1) % kUploadSlots;
  cudaError_t err = ctx->upload_pending[slot] ? cudaEventSynchronize(ctx->upload_done[slot])
                                              : cudaSuccess;
  ctx->upload_pending[slot] = false;
  char* staged = static_cast<char*>(ctx->upload_host) + size_t(slot) * kUploadSlotBytes;
  if (err == cudaSuccess) {
    std::memcpy(staged, src, size_t(bytes));
    err = cudaMemcpyAsync(dst, staged, size_t(bytes), cudaMemcpyDefault, ctx->stream);
  }
  if (err == cudaSuccess) err = cudaEventRecord(ctx->upload_done[slot], ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, __func__, err);
  ctx->upload_pending[slot] = true;
  return ARL_OK;
}

// arl_upload_alternating: the stream, the two pinned slots and the four events, made at the
// first call (a failure frees what was made and says so).
extern "C++" {
namespace {
cudaError_t alternating_init(arl_ctx* ctx) {
  if (ctx->alt_host != nullptr) return cudaSuccess;
  void* host = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t events[4] = {};
  int made = 0;
  cudaError_t err = cudaMallocHost(&host, 2 * kUploadSlotBytes);
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  for (; err == cudaSuccess && made < 4; made++) {
    err = cudaEventCreateWithFlags(&events[made], cudaEventDisableTiming);
    if (err != cudaSuccess) break;
  }
  if (err != cudaSuccess) {
    for (int i = 0; i < made; i++) cudaEventDestroy(events[i]);
    if (stream != nullptr) cudaStreamDestroy(stream);
    if (host != nullptr) cudaFreeHost(host);
    return err;
  }
  ctx->alt_host = host;
  ctx->alt_stream = stream;
  for (int i = 0; i < 2; i++) {
    ctx->alt_done[i] = events[i];
    ctx->alt_passed[i] = events[2 + i];
    ctx->alt_pending[i] = false;
    ctx->alt_passed_set[i] = false;
  }
  ctx->alt_last = -1;
  return cudaSuccess;
}
}  // namespace
}  // extern "C++"

arl_status arl_upload_alternating(arl_ctx* ctx, void* dst, const void* src, int64_t bytes,
                                  int32_t parity, int32_t fresh) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dst);
  ARL_NOT_NULL(ctx, src);
  ARL_COUNT(ctx, bytes);
  if (arl_status s = arl::alternating_args(ctx, __func__, bytes, parity, fresh)) return s;
  if (ctx->capturing)
    return arl::fail(ctx, ARL_ERR_UNSUPPORTED,
                     "%s: a copy from host memory cannot be recorded in a graph", __func__);
  if (bytes == 0) return ARL_OK;
  if (alternating_init(ctx) != cudaSuccess) {
    cudaGetLastError();  // (no pinned memory or stream to spare: the copy in the stream's order)
    return arl_upload_async(ctx, dst, src, bytes);
  }
  // The last work that read dst was queued before the last call for the other parity, where
  // the stream's point was recorded (alt_passed[parity]). Without that point (the first call,
  // fresh buffers, or the same parity twice: the last reader may be queued since), the copy
  // waits for everything queued so far.
  const bool anew = fresh != 0 || ctx->alt_last == parity || !ctx->alt_passed_set[parity];
  cudaError_t err = cudaSuccess;
  if (anew) err = cudaEventRecord(ctx->alt_passed[parity], ctx->stream);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(ctx->alt_stream, ctx->alt_passed[parity], 0);
  // this parity's pinned slot is free once its last copy (two calls ago) has run
  if (err == cudaSuccess && ctx->alt_pending[parity])
    err = cudaEventSynchronize(ctx->alt_done[parity]);
  if (err == cudaSuccess) ctx->alt_pending[parity] = false;
  if (err == cudaSuccess) {
    char* staged = static_cast<char*>(ctx->alt_host) + size_t(parity) * kUploadSlotBytes;
    std::memcpy(staged, src, size_t(bytes));
    err = cudaMemcpyAsync(dst, staged, size_t(bytes), cudaMemcpyHostToDevice, ctx->alt_stream);
  }
  if (err == cudaSuccess) err = cudaEventRecord(ctx->alt_done[parity], ctx->alt_stream);
  if (err == cudaSuccess) ctx->alt_pending[parity] = true;
  // the other buffer's last reader is queued by now; then the stream waits for this copy
  if (err == cudaSuccess) err = cudaEventRecord(ctx->alt_passed[1 - parity], ctx->stream);
  if (err == cudaSuccess) ctx->alt_passed_set[1 - parity] = true;
  if (err == cudaSuccess) err = cudaStreamWaitEvent(ctx->stream, ctx->alt_done[parity], 0);
  if (err != cudaSuccess) {
    // copies queued but not waited for: done before anything reuses their slots or reads dst
    cudaStreamSynchronize(ctx->alt_stream);
    ctx->alt_pending[0] = ctx->alt_pending[1] = false;
    ctx->alt_last = -1;  // (the next call starts anew)
    ctx->alt_passed_set[0] = ctx->alt_passed_set[1] = false;
    return arl::cuda_fail(ctx, __func__, err);
  }
  ctx->alt_last = parity;
  return ARL_OK;
}

arl_status arl_fill_f32(arl_ctx* ctx, float* dst, float value, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dst);
  ARL_COUNT(ctx, n);
  if (value == 0.0f && !std::signbit(value)) {  // +0: all zero bytes, the copy engine's memset
    const cudaError_t err = cudaMemsetAsync(dst, 0, size_t(n) * sizeof(float), ctx->stream);
    return err == cudaSuccess ? ARL_OK : arl::cuda_fail(ctx, __func__, err);
  }
  fill_kernel<<<arl::grid_for(n), arl::kBlock, 0, ctx->stream>>>(dst, value, n);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_f32_to_bf16(arl_ctx* ctx, uint16_t* out, const float* x, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, x);
  ARL_COUNT(ctx, n);
  f32_to_bf16_kernel<<<f32_to_bf16_grid(n), arl::kBlock, 0, ctx->stream>>>(out, x, n);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_bf16_to_f32(arl_ctx* ctx, float* out, const uint16_t* x, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, x);
  ARL_COUNT(ctx, n);
  bf16_to_f32_kernel<<<arl::grid_for(n), arl::kBlock, 0, ctx->stream>>>(out, x, n);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

}  // extern "C"
