// The CUDA emulator's stand-in for <cuda_runtime.h>: compiles kernels/cuda/*.cu with the host
// C++ compiler (after kernels/emu_translate.ts rewrites each `k<<<...>>>(...)` launch) into a
// library that runs every kernel on the CPU. Each GPU thread is a fiber of one OS thread;
// barriers (__syncthreads, warp shuffles, __syncwarp) switch fibers, so the kernels' indexing,
// shared memory, reductions, barriers and the runtime calls around them (streams, graphs,
// errors) are checked without a GPU. Not checked: speed, data races between threads that a
// barrier does not order (see AGENTRL_CUDA_EMU_ORDER in emu.cpp), the memory model, and code
// that reads device memory from the host (both are plain host memory here).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#define AGENTRL_CUDA_EMU 1

// ---- the language ------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __constant__ static
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

// The running thread's coordinates (set by the emulator before each fiber runs).
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
constexpr int warpSize = 32;

namespace emu {
// Block-wide barrier; warp-wide barrier (the lanes of the calling thread's warp).
void sync_block();
void sync_warp();
// A thread waiting for a value another thread writes (__nanosleep in a spin loop): lets the
// others run. Only a cooperative launch runs its blocks together; in an ordinary one a spin on
// another block's write never ends and is reported as a deadlock.
void spin();
// %globaltimer's stand-in: the host's steady clock in ns, so that a kernel's wait with a time
// limit gives up (and reports) in the emulator as on a GPU.
unsigned long long global_ns();
// Thread-block clusters (a launch with a cluster dimension runs its blocks together, as a
// cooperative one): the cluster barrier's two halves (every thread of the cluster arrives, then
// waits for the others' arrivals), and the address of the same shared-memory byte in the
// cluster's block `rank`.
void cluster_arrive();
void cluster_wait();
void* cluster_map(const void* shared, unsigned rank);
// The calling lane (0..31) and a pointer to its warp's exchange slots (double-buffered by
// the warp's barrier count, so one barrier per exchange suffices).
uint64_t* warp_slots(int* lane);
// The current launch's dynamic shared memory.
void* dynamic_shared_bytes();
template <typename T>
T* dynamic_shared() {
  return static_cast<T*>(dynamic_shared_bytes());
}

template <typename T>
T exchange(T v, int src_of_lane(int lane, int arg, int width), int arg, int width) {
  static_assert(sizeof(T) <= 8, "shuffles of at most 8 bytes");
  int lane = 0;
  uint64_t* slots = warp_slots(&lane);
  uint64_t raw = 0;
  std::memcpy(&raw, &v, sizeof(T));
  slots[lane] = raw;
  sync_warp();
  const int src = src_of_lane(lane, arg, width);  // (a lane that wrote and then exited counts)
  if (src < 0) return v;
  T out;
  std::memcpy(&out, &slots[src], sizeof(T));
  return out;
}
inline int src_xor(int lane, int mask, int width) {
  const int s = lane ^ mask;
  return s / width == lane / width ? s : -1;
}
inline int src_index(int lane, int index, int width) {
  return lane / width * width + ((index % width) + width) % width;
}
inline int src_up(int lane, int delta, int width) {
  return lane % width >= delta ? lane - delta : -1;
}
inline int src_down(int lane, int delta, int width) {
  return lane % width + delta < width ? lane + delta : -1;
}
}  // namespace emu

inline void __syncthreads() { emu::sync_block(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu::sync_warp(); }
inline void __threadfence() {}
inline void __nanosleep(unsigned) { emu::spin(); }
inline void __threadfence_block() {}

template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  return emu::exchange(v, emu::src_xor, mask, width);
}
template <typename T>
T __shfl_sync(unsigned, T v, int lane, int width = 32) {
  return emu::exchange(v, emu::src_index, lane, width);
}
template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  return emu::exchange(v, emu::src_up, int(delta), width);
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  return emu::exchange(v, emu::src_down, int(delta), width);
}
unsigned __ballot_sync(unsigned mask, int predicate);
inline int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0; }
inline int __all_sync(unsigned mask, int p) { return __ballot_sync(mask, !p) == 0; }

// Atomics: fibers switch only at barriers, so a read-modify-write is never interleaved.
template <typename T, typename U>
T atomicAdd(T* p, U v) {
  const T old = *p;
  *p = T(old + v);
  return old;
}
template <typename T, typename U>
T atomicSub(T* p, U v) {
  const T old = *p;
  *p = T(old - v);
  return old;
}
template <typename T, typename U>
T atomicMax(T* p, U v) {
  const T old = *p;
  if (T(v) > old) *p = T(v);
  return old;
}
template <typename T, typename U>
T atomicMin(T* p, U v) {
  const T old = *p;
  if (T(v) < old) *p = T(v);
  return old;
}
template <typename T, typename U>
T atomicExch(T* p, U v) {
  const T old = *p;
  *p = T(v);
  return old;
}
template <typename T, typename U, typename V>
T atomicCAS(T* p, U compare, V value) {
  const T old = *p;
  if (old == T(compare)) *p = T(value);
  return old;
}

template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcg(const T* p) {
  return *p;
}
template <typename T>
inline T __ldcv(const T* p) {
  return *p;
}

inline float __uint_as_float(unsigned v) {
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned v;
  std::memcpy(&v, &f, 4);
  return v;
}
inline float __int_as_float(int v) {
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
inline int __float_as_int(float f) {
  int v;
  std::memcpy(&v, &f, 4);
  return v;
}
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double __dmul_rn(double a, double b) {
  volatile double p = a * b;  // no contraction into a neighbouring add
  return p;
}
inline double __dadd_rn(double a, double b) {
  volatile double s = a + b;
  return s;
}
inline double __dsub_rn(double a, double b) {
  volatile double s = a - b;
  return s;
}
inline unsigned long long __double2ull_rz(double x) { return (unsigned long long)x; }
inline unsigned long long __double2ull_rn(double x) {
  return (unsigned long long)std::nearbyint(x);
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(unsigned(v)); }
inline int __ffs(int v) { return __builtin_ffs(v); }

// CUDA's min / max take mixed integer types (the usual arithmetic conversions).
template <typename A, typename B>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(b) < C(a) ? C(b) : C(a);
}
template <typename A, typename B>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(a) < C(b) ? C(b) : C(a);
}
using std::isfinite;
using std::isinf;
using std::isnan;

// ---- the runtime API -----------------------------------------------------------------------

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorLaunchFailure = 719,
  cudaErrorCooperativeLaunchTooLarge = 720,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureUnmatched = 903,
  cudaErrorStreamCaptureImplicit = 906,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaDeviceAttr {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrCooperativeLaunch = 95,
  cudaDevAttrClusterLaunch = 120,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxPersistingL2CacheSize = 108,
  cudaDevAttrMaxAccessPolicyWindowSize = 109,
};
// The L2 set-aside for persisting lines (arl_l2_persist): kept and checked, no cache behind it.
enum cudaLimit { cudaLimitPersistingL2CacheSize = 6 };
enum cudaAccessProperty {
  cudaAccessPropertyNormal = 0,
  cudaAccessPropertyStreaming = 1,
  cudaAccessPropertyPersisting = 2,
};
struct cudaAccessPolicyWindow {
  void* base_ptr;
  size_t num_bytes;
  float hitRatio;
  cudaAccessProperty hitProp;
  cudaAccessProperty missProp;
};
struct cudaFuncAttributes {
  int binaryVersion;
  int ptxVersion;
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
constexpr unsigned cudaStreamNonBlocking = 1;

typedef struct emu_stream* cudaStream_t;
typedef struct emu_event* cudaEvent_t;
typedef struct emu_graph* cudaGraph_t;
typedef struct emu_graph* cudaGraphExec_t;

const char* cudaGetErrorString(cudaError_t err);
const char* cudaGetErrorName(cudaError_t err);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value);
cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit);
cudaError_t cudaCtxResetPersistingL2Cache();
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
cudaError_t cudaFreeHost(void* ptr);
template <typename T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
template <typename T>
cudaError_t cudaMallocHost(T** ptr, size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* dst, int value, size_t bytes);
cudaError_t cudaEventCreate(cudaEvent_t* event);
constexpr unsigned cudaEventDisableTiming = 2;
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned /*flags*/) {
  return cudaEventCreate(event);
}
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
// (every stream runs its work as it is queued here: a wait has nothing to wait for)
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value);
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func);
template <typename F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, F* func) {
  return cudaFuncGetAttributes(attr, reinterpret_cast<const void*>(func));
}
template <typename F>
cudaError_t cudaFuncSetAttribute(F* func, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(func), attr, value);
}
// Blocks of `threads` (and `shared` dynamic bytes, within the kernel's limit) an SM holds: an
// H100's 2048 threads and 227 KiB of shared memory (registers are not modelled).
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func,
                                                          int threads, size_t shared);
template <typename F>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F* func, int threads,
                                                          size_t shared) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      blocks, reinterpret_cast<const void*>(func), threads, shared);
}

// ---- launches ------------------------------------------------------------------------------

namespace emu {

struct Config {
  dim3 grid, block;
  size_t shared;
  cudaStream_t stream;
  bool cooperative = false;  // all blocks run together (a block may wait for another's write)
  unsigned cluster = 1;      // blocks a cluster (consecutive x); more than 1 runs them together
  Config(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = nullptr)
      : grid(g), block(b), shared(s), stream(st) {}
};

// A launch's per-thread body: runs the kernel once for the current coordinates.
struct Body {
  virtual ~Body() = default;
  virtual void run() = 0;
};

template <typename... P>
struct KernelBody final : Body {
  void (*kernel)(P...);
  std::tuple<std::decay_t<P>...> args;
  template <typename... A>
  KernelBody(void (*k)(P...), A&&... a) : kernel(k), args(std::forward<A>(a)...) {}
  void run() override { std::apply(kernel, args); }
};

// Runs (or, while its stream is being captured, records) a launch; takes the body.
void submit(const void* kernel, const char* name, const Config& config, Body* body);

template <typename... P, typename... A>
void launch(void (*kernel)(P...), const char* name, const Config& config, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "a kernel launch with the wrong argument count");
  submit(reinterpret_cast<const void*>(kernel), name, config,
         new KernelBody<P...>(kernel, std::forward<A>(args)...));
}

}  // namespace emu

// cudaLaunchKernelEx with the four attributes the library uses: programmatic dependent launch
// (kernels run one after the other here, so it changes nothing), cooperative launch (the
// grid's blocks run together, as fibers of one scheduler, so that one can spin on another's
// write), a cluster dimension (along x only; the blocks run together too) and an L2
// access-policy window (checked, then ignored: the emulator has no cache).
enum cudaLaunchAttributeID {
  cudaLaunchAttributeAccessPolicyWindow = 1,
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeClusterDimension = 4,
  cudaLaunchAttributeProgrammaticStreamSerialization = 5,
};
union cudaLaunchAttributeValue {
  cudaAccessPolicyWindow accessPolicyWindow;
  int cooperative;
  int programmaticStreamSerializationAllowed;
  struct {
    unsigned x, y, z;
  } clusterDim;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim, blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned numAttrs;
};

namespace emu {
// Records cudaErrorInvalidValue as the last error (a launch attribute the emulator lacks).
cudaError_t refuse_launch_attribute();
// Whether an access-policy window is one CUDA accepts (said on stderr the first time).
bool access_policy_window_valid(const cudaAccessPolicyWindow& window);
}  // namespace emu

template <typename... P, typename... A>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(P...),
                               A&&... args) {
  ::emu::Config c(config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream);
  for (unsigned i = 0; i < config->numAttrs; i++) {
    const cudaLaunchAttribute& a = config->attrs[i];
    if (a.id == cudaLaunchAttributeCooperative) {
      c.cooperative = a.val.cooperative != 0;
    } else if (a.id == cudaLaunchAttributeClusterDimension) {
      if (a.val.clusterDim.y != 1 || a.val.clusterDim.z != 1 || a.val.clusterDim.x == 0 ||
          a.val.clusterDim.x > 8 || config->gridDim.x % a.val.clusterDim.x != 0)
        return ::emu::refuse_launch_attribute();
      c.cluster = a.val.clusterDim.x;
    } else if (a.id == cudaLaunchAttributeAccessPolicyWindow) {
      if (!::emu::access_policy_window_valid(a.val.accessPolicyWindow))
        return ::emu::refuse_launch_attribute();
    } else if (a.id != cudaLaunchAttributeProgrammaticStreamSerialization) {
      return ::emu::refuse_launch_attribute();
    }
  }
  ::emu::launch(kernel, "(a kernel launched by cudaLaunchKernelEx)", c, std::forward<A>(args)...);
  return cudaPeekAtLastError();
}

