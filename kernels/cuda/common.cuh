// Shared internals of the CUDA library: the context (device, stream, cuBLAS
// handle, scratch memory, the device-side error flag), error reporting and
// launch helpers. Pointers to tensors are device pointers (from arl_alloc);
// the small host-side arguments the header marks "host" stay in host memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "../include/agentrl.h"

// arl_sample's greedy rows split across blocks: at most this many rows a call (counters a row).
constexpr int kArlGreedyMaxRows = 128;

namespace arl {
// A sampling of arl_sample_start until arl_sample_finish (ticket 0: free). Its pinned memory
// holds the results (tokens, logprobs), the flag's copy and the settings; `done` is recorded
// after the sampling's last copy.
struct SampleSlot {
  int64_t ticket;
  int32_t n;
  bool greedy;     // ran greedy_split_kernel (which uses the context's greedy_done)
  char* host;      // pinned, grown on demand while the slot is free
  size_t host_bytes;
  cudaEvent_t done;  // created with the slot's first use
};
// A region that arl_l2_persist keeps: the access-policy window of the kernels that read it.
struct L2Window {
  const char* base;   // the region
  int64_t bytes;
  int64_t window;     // the window's bytes from base (the region, or its part that is kept)
  float hit_ratio;    // the window's share of persisting lines
};
}  // namespace arl

struct arl_ctx {
  int device;
  cudaStream_t stream;
  void* cublas;           // cublasHandle_t, or null when cuBLAS is not available
  void* cublas_workspace; // its device workspace (null: cuBLAS's own)
  int* flag;              // device: first bad-value code a kernel found (0 = none)
  int64_t* flag_index;    // device: the element index that code refers to
  int64_t* flag_host;     // pinned host copy of (code, index), read after a synchronize
  int* greedy_done;       // device: arl_sample's greedy row counters (after the flag; each
                          // reset by the block that finishes its row)
  bool greedy_dirty;      // a greedy launch may have left counters set: zero them first
  arl::SampleSlot samples[ARL_SAMPLE_PENDING + 1];  // the last for arl_sample's own
  int64_t sample_tickets;         // tickets handed out so far
  int64_t sample_flag_reported;   // samplings up to this ticket copied a flag already reported
  void* scratch;          // device scratch memory, grown on demand
  size_t scratch_bytes;
  void* decode_partial;   // split decode attention's records (fixed size, allocated once)
  void* decode_sync;      // arl_decode_layers_bf16's counters (decode_token.cu; allocated once)
  void* half_scratch[2];  // bf16 copies of fp32 GEMM operands (two at a time), grown on demand
  size_t half_scratch_bytes[2];
  bool half_scratch_recorded;  // a graph recorded a half_scratch pointer
  void* retired[16];           // half_scratch buffers outgrown after that, freed with the context
  int num_retired;
  void* host_scratch;     // pinned host memory for small results, grown on demand
  size_t host_scratch_bytes;
  int32_t num_threads;    // kept for the ABI; the GPU ignores it
  int32_t num_sms;
  bool pdl;               // launch_pdl may use programmatic dependent launch (see below)
  int32_t max_smem;       // dynamic shared memory a block may opt in to, in bytes
  bool cooperative;       // the device launches cooperative grids
  int64_t l2_bytes;       // its L2 cache
  bool capturing;         // between arl_graph_begin and arl_graph_end (see graph.cu)
  void* upload_host;      // arl_upload_async's pinned slots (one a copy, its largest size each)
  cudaEvent_t upload_done[4];  // each slot's copy, recorded on the stream
  bool upload_pending[4];
  int upload_next;
  // arl_upload_alternating's: its stream, pinned slot a parity, each slot's copy (recorded on
  // that stream), and where the context's stream was at the last call for each parity
  cudaStream_t alt_stream;
  void* alt_host;
  cudaEvent_t alt_done[2];
  bool alt_pending[2];
  cudaEvent_t alt_passed[2];
  bool alt_passed_set[2];
  int alt_last;  // the last call's parity (-1: none)
  int cc_major;  // the device's compute capability, major (9: Hopper)
  const uint16_t* decode_next_qkv;  // the next layer's q|k|v rows while arl_decode_layers_bf16
                                    // runs a layer (null: none; AGENTRL_CUDA_DECODE_NEXT_QKV)
  arl::L2Window l2_windows[ARL_L2_MAX_REGIONS];  // arl_l2_persist's kept regions
  int l2_count;
  int64_t l2_aside;        // the set-aside this context asked for (0: none)
  char last_error[512];
};

#include "../common/checks.h"

namespace arl {

// Threads per block for the simple elementwise kernels.
constexpr int kBlock = 256;

// This block's share [begin, end) of n items, the grid's blocks splitting them as evenly as they
// can.
__device__ inline int32_t share_begin(int64_t n) { return int32_t(n * blockIdx.x / gridDim.x); }
__device__ inline int32_t share_end(int64_t n) { return int32_t(n * (blockIdx.x + 1) / gridDim.x); }

// Blocks for n elements at kBlock threads each, capped (grid-stride loops cover the rest).
inline unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kBlock - 1) / kBlock;
  return unsigned(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

// Programmatic dependent launch (Hopper and later, kernels built for it; AGENTRL_CUDA_PDL=0
// turns it off; only while a graph is recorded, i.e. in the model's decode replays, so that a
// direct call never reads weights that the call before it is still writing): a kernel
// launched by launch_pdl may start while the kernel before it on the stream is still running
// (once that kernel's blocks have all started and called pdl_trigger, or finished). Such a
// kernel may read memory that no kernel writes (weights) at once, but calls pdl_wait() before
// it reads anything the kernels before it wrote, or writes anything they read: pdl_wait
// returns when they have finished and their writes are visible. Outside such a launch, and on
// older GPUs (and in the CUDA emulator, which runs kernels one after the other), both are
// no-ops.
__device__ inline void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// A kernel's register cap on Hopper and later, where it decides which kernels share an SM:
// __maxnreg__ (CUDA 12.4 and later). Elsewhere, and with an older nvcc, launch bounds of its
// thread count (no cap under 128 registers for 512 threads).
#if defined(__CUDACC_VER_MAJOR__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define ARL_MAX_REGISTERS(threads, registers) __maxnreg__(registers)
#else
#define ARL_MAX_REGISTERS(threads, registers) __launch_bounds__(threads)
#endif

// How long a wait among a grid's blocks may spin before it means the grid is not resident at
// once (a deferred error, and the wait passes): 5 s of the global timer, 60 s in the CUDA
// emulator, whose kernels are slow.
#ifdef AGENTRL_CUDA_EMU
constexpr unsigned long long kGridStallNs = 60000000000ull;
#else
constexpr unsigned long long kGridStallNs = 5000000000ull;
#endif

// The GPU's global timer in ns (the host's steady clock in the CUDA emulator).
__device__ inline unsigned long long global_ns() {
#if defined(__CUDA_ARCH__)
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#elif defined(AGENTRL_CUDA_EMU)
  return emu::global_ns();
#else
  return 0;
#endif
}

// Lets a successor launched by launch_pdl start (it still waits in pdl_wait for this kernel).
// A kernel that writes weights must not call it: the GEMVs read their weights before pdl_wait,
// which is safe because every kernel that can run before them without finishing (one that
// calls this, or one such a kernel follows) writes activations only.
__device__ inline void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// *out = the launch attribute that marks reads of an arl_l2_persist region persisting, for the
// first kept region that [p, p + bytes) overlaps; false (and *out untouched) if none.
inline bool l2_window_attribute(const arl_ctx* ctx, const void* p, size_t bytes,
                                cudaLaunchAttribute* out) {
  const char* c = static_cast<const char*>(p);
  for (int i = 0; i < ctx->l2_count; i++) {
    const L2Window& w = ctx->l2_windows[i];
    if (c >= w.base + w.bytes || c + bytes <= w.base) continue;
    *out = {};
    out->id = cudaLaunchAttributeAccessPolicyWindow;
    out->val.accessPolicyWindow.base_ptr = const_cast<char*>(w.base);
    out->val.accessPolicyWindow.num_bytes = size_t(w.window);
    out->val.accessPolicyWindow.hitRatio = w.hit_ratio;
    out->val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    out->val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    return true;
  }
  return false;
}

// Launches kernel on the context's stream with `count` launch attributes; the launch's error,
// which check_launch also finds.
template <typename... P, typename... A>
cudaError_t launch_attributes(arl_ctx* ctx, void (*kernel)(P...), dim3 grid, dim3 block,
                              size_t shared, cudaLaunchAttribute* attributes, unsigned count,
                              A... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = ctx->stream;
  config.attrs = attributes;
  config.numAttrs = count;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

// Launches kernel on the context's stream with one launch attribute (none when !use).
template <typename... P, typename... A>
cudaError_t launch_with(arl_ctx* ctx, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared,
                        cudaLaunchAttribute attribute, bool use, A... args) {
  return launch_attributes(ctx, kernel, grid, block, shared, &attribute, use ? 1u : 0u,
                           args...);
}

// The launch attribute of programmatic dependent launch.
inline cudaLaunchAttribute pdl_attribute() {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  return attribute;
}

// Launches kernel on the context's stream, with programmatic dependent launch when ctx->pdl
// (the kernel must call pdl_wait as above). Check it with check_launch.
template <typename... P, typename... A>
void launch_pdl(arl_ctx* ctx, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared,
                A... args) {
  launch_with(ctx, kernel, grid, block, shared, pdl_attribute(), ctx->pdl && ctx->capturing,
              args...);
}

// launch_pdl for a kernel that reads [read, read + read_bytes) (its weights): its reads there
// are persisting in L2 where that overlaps a region arl_l2_persist keeps.
template <typename... P, typename... A>
void launch_pdl_reading(arl_ctx* ctx, const void* read, size_t read_bytes,
                        void (*kernel)(P...), dim3 grid, dim3 block, size_t shared, A... args) {
  cudaLaunchAttribute attributes[2];
  unsigned count = 0;
  if (ctx->pdl && ctx->capturing) attributes[count++] = pdl_attribute();
  if (l2_window_attribute(ctx, read, read_bytes, &attributes[count])) count++;
  launch_attributes(ctx, kernel, grid, block, shared, attributes, count, args...);
}

// Launches kernel as a cooperative grid (all its blocks resident at once, or an error).
template <typename... P, typename... A>
cudaError_t launch_cooperative(arl_ctx* ctx, void (*kernel)(P...), dim3 grid, dim3 block,
                               size_t shared, A... args) {
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  return launch_with(ctx, kernel, grid, block, shared, attribute, true, args...);
}

// Gives back arl_l2_persist's set-aside and persisting lines, if the context asked for any.
void l2_window_release(arl_ctx* ctx);

// Turns a CUDA error into ARL_ERR_DEVICE with the runtime's message.
arl_status cuda_fail(arl_ctx* ctx, const char* fn, cudaError_t err);

// Checks the last launch (and clears a sticky launch error); ARL_OK if none.
arl_status check_launch(arl_ctx* ctx, const char* fn);

// Device scratch of at least `bytes` on the context's stream (valid until the
// next call that asks for scratch). Null (with a message) when out of memory.
void* scratch(arl_ctx* ctx, const char* fn, size_t bytes);
// *out = x (n fp32) rounded to bf16 in bf16 scratch `slot` (0 or 1; valid until the next
// call that uses that slot). Fails when out of memory or while a graph is recorded.
arl_status to_bf16(arl_ctx* ctx, const char* fn, int slot, const float* x, int64_t n,
                   const uint16_t** out);
// The context's fixed decode buffer ctx->decode_partial, allocated on first use (outside graph
// recording, so that a recorded pointer stays valid): decode_records_bytes(ctx) of split
// attention records, then num_sms per-row (or per-head) counters, a grid barrier's word and a
// spare int (all zero between calls), then the decode layer's o-projection partials
// (decode_chain.cuh). False when it cannot be had.
bool decode_buffers(arl_ctx* ctx);
size_t decode_records_bytes(const arl_ctx* ctx);
// The decode buffer's counters (ints after the records): [0, num_sms) split decode attention's
// per-row counters, num_sms the cooperative layer kernel's barrier word, num_sms + 1 spare,
// [num_sms + 2, 2 num_sms + 2) the chained layer's per-head barrier words and
// [2 num_sms + 2, 3 num_sms + 2) its per-kv-head ones (decode_chain.cu).
// Barrier words may keep their top bit set between calls; the rest are 0. Then, 8-byte aligned,
// the fused MLP's (AGENTRL_CUDA_DECODE_MLP_FUSED): kDecodeFusedMaxC int64 sums of x, its blocks'
// count and its flag of a partial out of range; 0 between calls (its last block zeroes them).
constexpr int64_t kDecodeFusedMaxC = 4096;
inline size_t decode_fused_at(const arl_ctx* ctx) {
  return (3 * size_t(ctx->num_sms) + 3) & ~size_t(1);
}
inline size_t decode_counter_ints(const arl_ctx* ctx) {
  return decode_fused_at(ctx) + 2 * kDecodeFusedMaxC + 2;
}
// Where those counters start (after decode_buffers succeeded).
int* decode_counters(arl_ctx* ctx);
// Pinned host scratch of at least `bytes`.
void* host_scratch(arl_ctx* ctx, const char* fn, size_t bytes);

// Copies n int32 values from device (or host) memory to `out` (synchronous).
arl_status fetch_i32(arl_ctx* ctx, const char* fn, std::vector<int32_t>& out, const int32_t* src,
                     int64_t n);

// Copies cu_seqlens (B + 1) to the host and checks it: starts at 0, never
// decreases, ends at T.
arl_status fetch_cu_seqlens(arl_ctx* ctx, const char* fn, std::vector<int32_t>& host,
                            const int32_t* cu, int32_t b, int32_t t);

// Synchronizes the stream and reports what kernels flagged (see set_flag):
// ARL_ERR_VALUE with "<fn>: <what> (index i)" when a flag was raised. A
// deferred code (below) is reported with its own message instead.
arl_status check_flag(arl_ctx* ctx, const char* fn, const char* what);

// Codes of bad values that hot kernels flag without stopping to synchronize
// (a decode step would otherwise wait on the GPU several times per layer): the
// call returns ARL_OK, skips the bad rows, and the error surfaces at the next
// call that synchronizes (arl_copy, the losses, sampling, ...), naming the call
// that found it.
enum DeferredCode : int {
  kDeferredNegativePosition = 1000,  // arl_rope: a negative position (index: row)
  // index = (token or query << 32) | the bad value (as uint32)
  kDeferredCacheSlot = 1001,      // arl_kv_cache_write: slot outside [0, S)
  kDeferredCachePosition = 1002,  // arl_kv_cache_write: position outside [0, L)
  kDeferredDecodeSlot = 1003,     // arl_attention_decode: slot outside [0, S)
  kDeferredDecodeLen = 1004,      // arl_attention_decode: length outside [1, L]
  kDeferredDecodeStall = 1005,    // arl_decode_layer_bf16: its grid was not resident (index: head)
  kDeferredEmbeddingToken = 1006,  // arl_embedding_forward: a token id outside [0, V)
  kDeferredDecodeTokenStall = 1007,  // arl_decode_layers_bf16: the token kernel's grid not resident
  kDeferredRopeFreq = 1008,  // a RoPE frequency table entry not finite (index: the entry)
  kDeferredFusedRange = 1009,  // AGENTRL_CUDA_DECODE_MLP_FUSED: a sum out of range (index: row)
};

// Queues a copy of the flag to the host (before a synchronize that the caller does).
cudaError_t queue_flag_read(arl_ctx* ctx);
// After that synchronize: ARL_OK, or the deferred (or other) error the flag holds (then cleared).
arl_status report_flag(arl_ctx* ctx, const char* fn, const char* what);
// The same for another pinned copy of the flag (code, index), e.g. a sampling's.
arl_status report_flag_copy(arl_ctx* ctx, const char* fn, const char* what, int64_t* copy);

// Row-major GEMM with arl_sgemm's meaning: C (M, N; ldc) = alpha op(A) op(B) + beta C.
// Through cuBLAS (tensor cores, TF32 inputs, fp32 accumulation) when it loaded,
// else a tiled fallback kernel.
arl_status gemm(arl_ctx* ctx, const char* fn, bool trans_a, bool trans_b, int m, int n, int k,
                float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
                int ldc);

// The same GEMM batched over `count` matrices at fixed strides (elements).
arl_status gemm_batched(arl_ctx* ctx, const char* fn, bool trans_a, bool trans_b, int m, int n,
                        int k, float alpha, const float* a, int lda, int64_t stride_a,
                        const float* b, int ldb, int64_t stride_b, float beta, float* c, int ldc,
                        int64_t stride_c, int count);

// The same GEMM with bf16 operands (fp32 accumulation and output): cuBLAS's bf16
// tensor-core GEMM, or the fallback kernel reading bf16.
arl_status gemm_bf16(arl_ctx* ctx, const char* fn, bool trans_a, bool trans_b, int m, int n,
                     int k, float alpha, const uint16_t* a, int lda, const uint16_t* b, int ldb,
                     float beta, float* c, int ldc);

// Whether cuBLAS was loaded for this context (else GEMMs use the fallback kernel).
bool have_cublas(const arl_ctx* ctx);

}  // namespace arl

// Kernels raise a flag for bad input values (ids out of range, ...); the first
// code and its index win. Codes are the caller's own (non-zero).
__device__ inline void arl_set_flag(int* flag, int64_t* index, int code, int64_t i) {
  if (atomicCAS(flag, 0, code) == 0) *index = i;
}

// Block-wide sum of v over blockDim.x threads (a multiple of 32, at most 1024).
// Every thread gets the result. `shared` holds at least 32 floats.
__device__ inline float arl_block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block-wide max (same rules as arl_block_sum).
__device__ inline float arl_block_max(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Runs after a launch: returns from the entry point if the launch failed.
#define ARL_LAUNCHED(ctx)                                             \
  do {                                                                \
    if (arl_status s_ = arl::check_launch(ctx, __func__)) return s_;  \
  } while (0)
