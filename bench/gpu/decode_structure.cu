// Batch-1 decode's structure floors: how fast one token of the benchmark model (Qwen2.5-0.5B's
// shapes, bf16) can go if its kernels did nothing but read their bytes, for each way of cutting
// the token into kernels. The real decode path does more (a GEMV's arithmetic, norms, RoPE,
// softmax), so its time can only be higher than its structure's floor here: a structure whose
// floor misses 0.6 of the bandwidth bound cannot reach it.
//
// A token reads, for each of 24 layers, q|k|v (2.1 MB), the KV cache (160 positions), o (1.6 MB),
// gate|up (17.4 MB) and down (8.7 MB), then the LM head (272 MB): 988 MB of weights, each region
// its own memory, so the token is as cold in L2 as a real one. The structures:
//   - a chain of kernels, each kernel's result needed by the next, captured in a CUDA graph, with
//     programmatic dependent launch (PDL: a kernel loads its first weights before it waits for
//     the one before) or without. 5 a layer: one a phase, as the default decode path; 3: q|k|v,
//     then attention with o, then gate|up with down; 2: q|k|v to o, then gate|up with down; 1;
//   - one cooperative kernel for the whole token, one block per SM, with a grid barrier where
//     those kernels would end (5 a layer, as the decode layer kernel; 3; 2) or none; each block
//     loading the next phase's first weights before the barrier, or after it;
//   - one kernel of many blocks reading the whole token's bytes (the bound as a kernel sees it).
// Threads keep 4 16-byte loads in flight (8 while they sum the last batch); the variants named
// "8 loads" keep 8, to show whether loading more ahead of a wait pays.
// Every variant sums the words it read, in its chain of results; a sum that differs from the
// reference's is reported as wrong and its time is not printed as a floor.
//
// Usage (bench/gpu/run.sh's part `decode_structure` does this):
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/gpu/decode_structure.cu -o /tmp/decode_structure
//   /tmp/decode_structure [--json FILE] [--shrink K]
// --shrink K makes every region K times smaller and times each variant once: a check of the
// sums, not a measurement (tests/bench/decode_structure.test.ts runs it so in the CUDA emulator).
// Prints "name: value unit" lines: each structure's µs a token, and the fraction of the bound
// (the weights' bytes over the device-to-device copy bandwidth, counting bytes read and written,
// as bench.ts's bound from PyTorch's copy) that it reaches.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/cuda/grid_barrier.cuh"
#include "bench_util.cuh"

namespace {

using bench::add_sum;
using bench::words_sum;

// Qwen2.5-0.5B: hidden 896, intermediate 4864, 14 query heads and 2 KV heads of 64, vocabulary
// 151,936, 24 layers; the KV cache as the benchmark's batch-1 decode sees it on average (prompt
// 128 and 64 new tokens: about 160 positions, bf16 keys and values)
constexpr int64_t kHidden = 896, kInter = 4864, kQkv = 896 + 2 * 128, kVocab = 151936;
constexpr int kLayers = 24, kContext = 160, kPhases = 5;
constexpr int64_t kPhaseBytes[kPhases] = {
    kHidden * kQkv * 2,        // q|k|v
    2 * 128 * kContext * 2,    // attention: the layer's cache rows (not weights)
    kHidden * kHidden * 2,     // o
    kHidden * 2 * kInter * 2,  // gate|up
    kInter * kHidden * 2,      // down
};
constexpr int64_t kHeadBytes = kVocab * kHidden * 2;
constexpr int kChainThreads = 256, kThreads = 512;

__device__ inline void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

__device__ inline void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Batch words of a thread's strided run from i on, zeros past n.
template <int Batch>
__device__ inline void load_batch(uint4 (&v)[Batch], const uint4* __restrict__ w, int64_t i,
                                  int64_t stride, int64_t n) {
#pragma unroll
  for (int b = 0; b < Batch; b++) {
    const int64_t j = i + b * stride;
    v[b] = j < n ? __ldg(w + j) : make_uint4(0, 0, 0, 0);
  }
}

template <int Batch>
__device__ inline uint64_t batch_sum(const uint4 (&v)[Batch]) {
  uint64_t s = 0;
#pragma unroll
  for (int b = 0; b < Batch; b++) s += words_sum(v[b]);
  return s;
}

// One kernel of a chain: *next = *prev + the sum of w's n words, Batch 16-byte loads a thread
// in flight (twice that while it sums). It loads its first batch before pdl_wait (weights are
// no kernel's output) and reads *prev after it.
template <int Batch>
__global__ void __launch_bounds__(kChainThreads)
    chain_kernel(const uint4* __restrict__ w, int64_t n, const unsigned long long* prev,
                 unsigned long long* next) {
  pdl_trigger();
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  uint4 v[Batch];
  load_batch(v, w, i, stride, n);
  pdl_wait();
  uint64_t s = blockIdx.x == 0 && threadIdx.x == 0 ? __ldcg(prev) : 0;
  for (;;) {
    i += Batch * stride;
    const bool more = i < n;
    uint4 u[Batch];
    if (more) load_batch(u, w, i, stride, n);  // the next batch in flight while summing
    s += batch_sum(v);
    if (!more) break;
#pragma unroll
    for (int b = 0; b < Batch; b++) v[b] = u[b];
  }
  add_sum(s, next);
}

// The whole token in one cooperative kernel of one block per SM: range r is words
// [bounds[r], bounds[r + 1]), split evenly over the blocks; a grid barrier follows range r
// where barrier_after[r]. Each thread keeps Batch 16-byte loads in flight (twice that while it
// sums). Prefetch: each block loads its first batch of the next range before that barrier.
// The block sums go to *total.
template <bool Prefetch, int Batch>
__global__ void __launch_bounds__(kThreads, 1)
    token_kernel(const uint4* __restrict__ w, const int64_t* bounds, const uint8_t* barrier_after,
                 int ranges, unsigned* barrier, unsigned long long* total) {
  uint64_t s = 0;
  uint4 v[Batch];
  auto share = [&](int r, int64_t& lo, int64_t& hi) {
    const int64_t len = bounds[r + 1] - bounds[r];
    const int64_t per = (len + gridDim.x - 1) / gridDim.x;
    lo = bounds[r] + min(len, per * blockIdx.x);
    hi = bounds[r] + min(len, per * (blockIdx.x + 1));
  };
  int64_t lo, hi;
  share(0, lo, hi);
  load_batch(v, w, lo + threadIdx.x, kThreads, hi);
  for (int r = 0; r < ranges; r++) {
    // v holds this thread's first batch of range r
    for (int64_t i = lo + threadIdx.x + Batch * kThreads;; i += Batch * kThreads) {
      uint4 u[Batch];
      const bool more = i < hi;
      if (more) load_batch(u, w, i, kThreads, hi);
      s += batch_sum(v);
      if (!more) break;
#pragma unroll
      for (int b = 0; b < Batch; b++) v[b] = u[b];
    }
    const bool last = r + 1 == ranges;
    if (!last) share(r + 1, lo, hi);
    if (Prefetch && !last) load_batch(v, w, lo + threadIdx.x, kThreads, hi);
    if (barrier_after[r]) arl::grid_barrier(barrier);
    if (!Prefetch && !last) load_batch(v, w, lo + threadIdx.x, kThreads, hi);
  }
  add_sum(s, total);
}

// The token's regions as word offsets, each `shrink` times smaller: 5 phases a layer, then the
// LM head (kPhases * kLayers + 2 bounds).
std::vector<int64_t> phase_bounds(int64_t shrink) {
  const auto words = [&](int64_t bytes) { return std::max<int64_t>(1, bytes / 16 / shrink); };
  std::vector<int64_t> b{0};
  for (int l = 0; l < kLayers; l++)
    for (int p = 0; p < kPhases; p++) b.push_back(b.back() + words(kPhaseBytes[p]));
  b.push_back(b.back() + words(kHeadBytes));
  return b;
}

// Whether a layer cut into `pieces` (5, 3, 2, 1 or 0) ends a piece after phase p: 5 after every
// phase; 3 after q|k|v, o and down (attention fused with o, SwiGLU with down); 2 after o and
// down; 1 after down; 0 never.
bool ends_piece(int pieces, int p) {
  switch (pieces) {
    case 5: return true;
    case 3: return p == 0 || p == 2 || p == kPhases - 1;
    case 2: return p == 2 || p == kPhases - 1;
    case 1: return p == kPhases - 1;
    default: return false;
  }
}

// The bounds of the kernels of a token whose layers are cut into `pieces`, the LM head alone.
std::vector<int64_t> cut(const std::vector<int64_t>& phases, int pieces) {
  std::vector<int64_t> b{0};
  for (int l = 0; l < kLayers; l++)
    for (int p = 0; p < kPhases; p++)
      if (ends_piece(pieces, p)) b.push_back(phases[size_t(l * kPhases + p + 1)]);
  b.push_back(phases.back());
  return b;
}

// Median of `batches` timed batches of `reps` calls of run(), in µs a call.
template <typename Run>
double median_us(bench::Timer& timer, cudaStream_t stream, int batches, int reps, Run run) {
  std::vector<double> us;
  for (int batch = 0; batch < batches; batch++) {
    timer.start(stream);
    for (int i = 0; i < reps; i++) run();
    us.push_back(timer.stop_ms(stream) * 1e3 / reps);
    CHECK(cudaGetLastError());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  int64_t shrink = 1;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json = argv[++i];
    } else if (std::strcmp(argv[i], "--shrink") == 0 && i + 1 < argc &&
               (shrink = std::atoll(argv[i + 1])) >= 1) {
      i++;
    } else {
      std::fprintf(stderr, "usage: decode_structure [--json FILE] [--shrink K (K >= 1)]\n");
      return 2;
    }
  }
  const int batches = shrink > 1 ? 1 : 7, reps = shrink > 1 ? 1 : 10;
  int sms = 0, major = 0, cooperative = 0, l2 = 0, smem_optin = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  std::printf("device: %d SMs, L2 %d MB, regions %lld times smaller\n", sms, l2 >> 20,
              (long long)shrink);

  const std::vector<int64_t> phases = phase_bounds(shrink);
  const int64_t words = phases.back();
  double weight_bytes = 0;  // every region but the KV cache's
  for (size_t r = 0; r + 1 < phases.size(); r++)
    if (r % kPhases != 1 || r + 2 == phases.size())
      weight_bytes += 16.0 * double(phases[r + 1] - phases[r]);
  uint4* buffer;
  unsigned long long* sums;  // [0, 128]: a chain's links; [129]: a one-kernel variant's total
  CHECK(cudaMalloc(&buffer, size_t(words) * 16));
  CHECK(cudaMalloc(&sums, 130 * sizeof(unsigned long long)));
  bench::fill<<<sms * 8, 256>>>(buffer, words);
  CHECK(cudaGetLastError());
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  bench::Timer timer;
  bench::Results results;
  unsigned long long* total = sums + 129;
  auto read_total = [&](const unsigned long long* at) {
    unsigned long long v = 0;
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(&v, at, sizeof(v), cudaMemcpyDeviceToHost));
    return v;
  };

  double floor_us = 0;
  // the bound: a device-to-device copy of 1 GiB (bytes read plus written), best of 5
  {
    const size_t half = (size_t(512) << 20) / size_t(shrink);
    uint8_t* copy;
    CHECK(cudaMalloc(&copy, 2 * half));
    double best = 1e30;
    for (int rep = 0; rep < 6; rep++) {
      timer.start(stream);
      CHECK(cudaMemcpyAsync(copy + half, copy, half, cudaMemcpyDeviceToDevice, stream));
      const double ms = timer.stop_ms(stream);
      if (rep > 0) best = std::min(best, ms);
    }
    CHECK(cudaFree(copy));
    const double gbs = 2.0 * double(half) / (best * 1e-3) / 1e9;
    results.report("copy bandwidth", gbs, "GB/s");
    results.report("weights a token", weight_bytes / 1e6, "MB");
    floor_us = weight_bytes / (gbs * 1e9) * 1e6;
    results.report("bound, us a token", floor_us, "us");
  }

  // the reference sum, and the whole token in one many-block kernel
  CHECK(cudaMemsetAsync(total, 0, sizeof(unsigned long long), stream));
  bench::read_many<<<sms * 4, 512, 0, stream>>>(buffer, words, total);
  CHECK(cudaGetLastError());
  const unsigned long long want = read_total(total);
  auto report_floor = [&](const std::string& name, double us, bool right) {
    if (!right) {
      results.mark_wrong(name);
      return;
    }
    results.report(name + ", us a token", us, "us");
    results.report(name + ", fraction of the bound", floor_us / us, "");
  };
  {
    const double us = median_us(timer, stream, batches, reps, [&] {
      bench::read_many<<<sms * 4, 512, 0, stream>>>(buffer, words, total);
    });
    report_floor("whole token, one kernel of many blocks", us, true);
  }

  // chains of kernels in a graph, one token a replay
  struct Chain {
    int per_layer;
    bool pdl;
    int batch;
  };
  for (const Chain c : {Chain{5, true, 4}, Chain{5, true, 8}, Chain{5, false, 4},
                        Chain{3, true, 4}, Chain{2, true, 4}, Chain{1, true, 4}}) {
    const std::vector<int64_t> kernels = cut(phases, c.per_layer);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMemsetAsync(sums, 0, 129 * sizeof(unsigned long long), stream));
    for (size_t k = 0; k + 1 < kernels.size(); k++) {
      const int64_t n = kernels[k + 1] - kernels[k];
      const int64_t per_block = int64_t(kChainThreads) * c.batch;
      cudaLaunchConfig_t config = {};
      config.gridDim =
          dim3(unsigned(std::clamp<int64_t>((n + per_block - 1) / per_block, 1, sms * 4)));
      config.blockDim = dim3(kChainThreads);
      config.stream = stream;
      cudaLaunchAttribute attribute;
      attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attribute.val.programmaticStreamSerializationAllowed = 1;
      config.attrs = &attribute;
      config.numAttrs = c.pdl && major >= 9 && k > 0 ? 1 : 0;  // (the first follows a memset)
      const uint4* w = buffer + kernels[k];
      const unsigned long long* prev = sums + k;
      CHECK(cudaLaunchKernelEx(&config, c.batch == 8 ? chain_kernel<8> : chain_kernel<4>, w, n,
                               prev, sums + k + 1));
    }
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    const size_t links = kernels.size() - 1;
    const double us = median_us(timer, stream, batches, reps,
                                [&] { CHECK(cudaGraphLaunch(exec, stream)); });
    // (each replay zeroes the links first: the last one's chain ends in the sum)
    const std::string name = "chain of " + std::to_string(c.per_layer) + " kernel" +
                             (c.per_layer > 1 ? "s" : "") + " a layer, " +
                             (c.pdl ? "PDL" : "no PDL") +
                             (c.batch != 4 ? ", " + std::to_string(c.batch) + " loads" : "");
    report_floor(name, us, read_total(sums + links) == want);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }

  // the whole token as one cooperative kernel, one block per SM
  if (cooperative) {
    // more than half an SM's shared memory: one block per SM
    const size_t big = std::min<size_t>(200 * 1024, size_t(smem_optin));
    for (auto* kernel : {token_kernel<true, 4>, token_kernel<true, 8>, token_kernel<false, 4>})
      CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(big)));
    int64_t* d_bounds;
    uint8_t* d_after;
    unsigned* word;
    const int ranges = int(phases.size()) - 1;
    CHECK(cudaMalloc(&d_bounds, phases.size() * sizeof(int64_t)));
    CHECK(cudaMalloc(&d_after, size_t(ranges)));
    CHECK(cudaMalloc(&word, 64));
    CHECK(cudaMemset(word, 0, 64));
    CHECK(cudaMemcpy(d_bounds, phases.data(), phases.size() * sizeof(int64_t),
                     cudaMemcpyHostToDevice));
    struct Token {
      int barriers;  // a layer: 5, 3, 2 or 0
      bool prefetch;
      int batch;
    };
    for (const Token t : {Token{5, true, 4}, Token{5, false, 4}, Token{3, true, 4},
                          Token{3, true, 8}, Token{3, false, 4}, Token{2, true, 4},
                          Token{2, true, 8}, Token{2, false, 4}, Token{0, true, 4}}) {
      std::vector<uint8_t> after(size_t(ranges), 0);
      for (int r = 0; r + 1 < ranges; r++) after[size_t(r)] = ends_piece(t.barriers, r % kPhases);
      CHECK(cudaMemcpy(d_after, after.data(), after.size(), cudaMemcpyHostToDevice));
      cudaLaunchConfig_t config = {};
      config.gridDim = dim3(unsigned(sms));
      config.blockDim = dim3(kThreads);
      config.dynamicSmemBytes = big;
      config.stream = stream;
      cudaLaunchAttribute attribute;
      attribute.id = cudaLaunchAttributeCooperative;
      attribute.val.cooperative = 1;
      config.attrs = &attribute;
      config.numAttrs = 1;
      const uint4* w = buffer;
      const int64_t* bounds = d_bounds;
      const uint8_t* after_d = d_after;
      auto* kernel = !t.prefetch ? token_kernel<false, 4>
                     : t.batch == 8 ? token_kernel<true, 8>
                                    : token_kernel<true, 4>;
      auto launch = [&] {
        CHECK(cudaLaunchKernelEx(&config, kernel, w, bounds, after_d, ranges, word, total));
      };
      CHECK(cudaMemsetAsync(total, 0, sizeof(unsigned long long), stream));
      const double us = median_us(timer, stream, batches, reps, launch);
      // every launch added the sum (modulo 2^64)
      const bool right = read_total(total) == want * unsigned(batches * reps);
      std::string name = t.barriers == 0 ? std::string("one kernel, one block/SM, no barriers")
                                         : "one kernel, " + std::to_string(t.barriers) +
                                               " grid barriers a layer, " +
                                               (t.prefetch ? "next phase loaded before"
                                                           : "loaded after");
      if (t.batch != 4) name += ", " + std::to_string(t.batch) + " loads";
      report_floor(name, us, right);
    }
    CHECK(cudaFree(d_bounds));
    CHECK(cudaFree(d_after));
    CHECK(cudaFree(word));
  } else {
    std::printf("one kernel: skipped (no cooperative launch on this device)\n");
  }

  if (json != nullptr && !results.write_json(json)) return 1;
  return results.wrong.empty() ? 0 : 1;
}
