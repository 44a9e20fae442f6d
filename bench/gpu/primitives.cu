// The ceilings of a one-block-per-SM decode kernel's building blocks, measured on this GPU:
//   - streaming a buffer far larger than L2 with one 512-thread block per SM, three ways (loads
//     into registers; cp.async into a ring of shared-memory slots; Hopper bulk copies into such
//     a ring), against many blocks per SM reading the same bytes (the reference);
//   - one-shot copies of 32-200 KiB a block into shared memory, launch after launch (plain, and
//     as programmatic dependent launches), as the decode chain's kernels 3 and 4 copy weights;
//   - one grid-wide barrier of that grid (a one-word barrier as the decode layer kernel's, and
//     cooperative_groups' grid sync);
//   - one dependent read from L2 and from DRAM (a single thread chasing pointers; the DRAM one
//     hops to random 64-byte lines of 1 GiB, so it includes the TLB misses such hops take).
// Every streaming variant sums the words it read; a sum that differs from the reference's is
// reported as wrong (and its rate is not printed as a ceiling).
//
// Usage (bench/gpu/run.sh's part `primitives` does this):
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/gpu/primitives.cu -o /tmp/primitives
//   /tmp/primitives [--json FILE]
// Prints one line per measurement, "name: value unit", and rates also as a fraction of the
// reference's. With --json, writes {name: value} too.
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../kernels/cuda/grid_barrier.cuh"
#include "bench_util.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 512;
constexpr size_t kRingBytes = 192 * 1024;  // the ring variants' shared memory, at most

using bench::add_sum;
using bench::words_sum;

// One block per SM, block b reading its contiguous share, Batch 16-byte loads per thread in
// flight (the decode layer kernel's committed way).
template <int Batch>
__global__ void __launch_bounds__(kThreads, 1)
    read_regs(const uint4* __restrict__ p, int64_t per_block, unsigned long long* total) {
  const uint4* q = p + blockIdx.x * per_block;
  uint64_t s = 0;
  for (int64_t i0 = threadIdx.x; i0 < per_block; i0 += int64_t(Batch) * kThreads) {
    uint4 v[Batch];
#pragma unroll
    for (int b = 0; b < Batch; b++) {
      const int64_t i = i0 + int64_t(b) * kThreads;
      v[b] = i < per_block ? __ldg(q + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < Batch; b++) s += words_sum(v[b]);
  }
  add_sum(s, total);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ inline uint32_t smem(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

__device__ inline void wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
}
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Thread 0's part of a bulk copy: the bytes that `bar` (shared) is to expect, and one copy of
// `bytes` from src (global) to dst (shared) that completes on it.
__device__ inline void expect_bytes(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ inline void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
      ::"r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar)
      : "memory");
}
#endif

// One block per SM streaming its share through `slots` shared-memory slots of `slot` bytes:
// a slot is refilled with the next chunk once the block has read it. Bulk: thread 0 issues
// one bulk copy per chunk (Hopper's copy engine); else every thread issues cp.async for its
// 16-byte words and arrives on the slot's mbarrier when they land.
template <bool Bulk>
__global__ void __launch_bounds__(kThreads, 1)
    read_ring(const uint4* __restrict__ p, int64_t per_block, int slots, int slot,
              unsigned long long* total) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) uint8_t shared[];
  uint64_t* bars = reinterpret_cast<uint64_t*>(shared);
  uint8_t* ring = shared + 1024;
  const uint4* q = p + blockIdx.x * per_block;
  const int words = slot / 16;
  const int64_t chunks = (per_block + words - 1) / words;
  if (threadIdx.x == 0)
    for (int i = 0; i < slots; i++)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bars + i)),
                   "r"(Bulk ? 1u : unsigned(kThreads))
                   : "memory");
  if (Bulk && threadIdx.x == 0)  // the copy engine (async proxy) sees the initialised barriers
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  auto issue = [&](int64_t c) {
    const int s = int(c % slots);
    const int n = int(min(int64_t(words), per_block - c * words));
    const uint32_t bar = smem(bars + s), dst = smem(ring + int64_t(s) * slot);
    if (Bulk) {
      if (threadIdx.x == 0) {
        expect_bytes(bar, uint32_t(n) * 16u);
        bulk_copy(dst, q + c * words, uint32_t(n) * 16u, bar);
      }
    } else {
      for (int t = threadIdx.x; t < n; t += kThreads)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + uint32_t(t) * 16u),
                     "l"(__cvta_generic_to_global(q + c * words + t))
                     : "memory");
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
    }
  };
  for (int64_t c = 0; c < min(int64_t(slots), chunks); c++) issue(c);
  uint64_t s = 0;
  for (int64_t c = 0; c < chunks; c++) {
    const int k = int(c % slots);
    wait_parity(smem(bars + k), uint32_t(c / slots) & 1u);
    const int n = int(min(int64_t(words), per_block - c * words));
    const uint4* v = reinterpret_cast<const uint4*>(ring + int64_t(k) * slot);
    for (int t = threadIdx.x; t < n; t += kThreads) s += words_sum(v[t]);
    __syncthreads();  // the slot is read
    if (c + slots < chunks) issue(c + slots);
  }
  add_sum(s, total);
#else
  (void)p;
  (void)per_block;
  (void)slots;
  (void)slot;
  (void)total;
#endif
}

// One-shot copies, as the decode chain's kernels 3 and 4 make them: each launch, block b copies
// the next `shot_words` 16-byte words of its share (from word `at`) into shared memory at once
// (bulk copies of 32 KiB on one mbarrier), waits for them and sums them. With Pdl the launches
// are programmatic dependents: each lets the next start at once, and the next issues its copies
// before its griddepcontrol.wait, while this one may still run (where both fit an SM).
template <bool Pdl>
__global__ void __launch_bounds__(kThreads, 1)
    read_oneshot(const uint4* __restrict__ p, int64_t per_block, int64_t at, int shot_words,
                 unsigned long long* total) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) uint8_t shared[];
  uint64_t* bar = reinterpret_cast<uint64_t*>(shared);
  uint8_t* buf = shared + 1024;
  if (Pdl) asm volatile("griddepcontrol.launch_dependents;");
  const uint4* q = p + blockIdx.x * per_block + at;
  const int n = int(min(int64_t(shot_words), per_block - at));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(bar)) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0 && n > 0) {
    expect_bytes(smem(bar), uint32_t(n) * 16u);
    constexpr int kPieceWords = 32 * 1024 / 16;
    for (int w = 0; w < n; w += kPieceWords)
      bulk_copy(smem(buf + int64_t(w) * 16), q + w, uint32_t(min(kPieceWords, n - w)) * 16u,
                smem(bar));
  }
  if (Pdl) asm volatile("griddepcontrol.wait;" ::: "memory");
  uint64_t s = 0;
  if (n > 0) {
    wait_parity(smem(bar), 0);
    const uint4* v = reinterpret_cast<const uint4*>(buf);
    for (int t = threadIdx.x; t < n; t += kThreads) s += words_sum(v[t]);
  }
  add_sum(s, total);
#else
  (void)p;
  (void)per_block;
  (void)at;
  (void)shot_words;
  (void)total;
#endif
}

// Grid-wide barriers, n of them: the decode layer kernel's (grid_barrier.cuh), or cg's.
template <bool Groups>
__global__ void __launch_bounds__(kThreads, 1) barriers(unsigned* word, int n) {
  for (int i = 0; i < n; i++) {
    if (Groups) {
      cg::this_grid().sync();
      continue;
    }
    arl::grid_barrier(word);
  }
}

__global__ void chase(const uint32_t* __restrict__ next, uint32_t at, int n, uint32_t* out) {
  for (int i = 0; i < n; i++) at = __ldcg(next + at);
  *out = at;
}

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: primitives [--json FILE]\n");
      return 2;
    }
  }
  int sms = 0, major = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);

  // 1 GiB: 20 times an H100's or H200's L2; split evenly over one block per SM
  const int64_t per_block = (int64_t(1) << 30) / 16 / sms;
  const int64_t n = per_block * sms;
  const double bytes = double(n) * 16;
  uint4* buffer;
  unsigned long long* total;
  CHECK(cudaMalloc(&buffer, size_t(n) * 16));
  CHECK(cudaMalloc(&total, sizeof(unsigned long long)));
  bench::fill<<<sms * 8, 256>>>(buffer, n);
  CHECK(cudaGetLastError());
  bench::Timer timer;
  bench::Results results;

  // best of 5 (after one warm-up): GB/s; `same` stays true while every run's checksum equals
  // the first run's (the reference's, for the variants)
  unsigned long long want = 0;
  bool same = true;
  auto stream = [&](auto launch) {
    float best = 1e30f;
    same = true;
    for (int rep = 0; rep < 6; rep++) {
      CHECK(cudaMemset(total, 0, sizeof(unsigned long long)));
      timer.start();
      launch();
      const float ms = timer.stop_ms();
      CHECK(cudaGetLastError());
      if (rep > 0 && ms < best) best = ms;
      unsigned long long sum = 0;
      CHECK(cudaMemcpy(&sum, total, sizeof(sum), cudaMemcpyDeviceToHost));
      if (want == 0) want = sum;
      if (sum != want) {
        std::printf("  (run %d summed %llu, want %llu)\n", rep, sum, want);
        same = false;
      }
    }
    return bytes / (best * 1e-3) / 1e9;
  };

  const double reference = stream([&] { bench::read_many<<<sms * 4, 512>>>(buffer, n, total); });
  results.report("read, many blocks (the reference)", reference, "GB/s");
  auto check = [&](const std::string& name, double rate) {
    if (!same) {
      results.mark_wrong(name);
    } else {
      results.report(name, rate, "GB/s", reference);
    }
  };
  // more than half an SM's shared memory: one block per SM, as the decode layer kernel
  const size_t big = std::min<size_t>(200 * 1024, prop.sharedMemPerBlockOptin);
  const size_t ring_bytes = std::min<size_t>(kRingBytes, prop.sharedMemPerBlockOptin - 1024);
  CHECK(cudaFuncSetAttribute(read_regs<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(big)));
  CHECK(cudaFuncSetAttribute(read_regs<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(big)));
  check("read, 1 block/SM, 4 loads in flight per thread",
        stream([&] { read_regs<4><<<sms, kThreads, big>>>(buffer, per_block, total); }));
  check("read, 1 block/SM, 8 loads in flight per thread",
        stream([&] { read_regs<8><<<sms, kThreads, big>>>(buffer, per_block, total); }));
  if (major >= 9) {
    const size_t shared = 1024 + ring_bytes;
    CHECK(cudaFuncSetAttribute(read_ring<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(shared)));
    CHECK(cudaFuncSetAttribute(read_ring<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(shared)));
    for (const int slot_kb : {16, 32, 48, 64}) {
      for (const int slots : {2, 3, 4, 6, 8, 12}) {
        if (size_t(slots) * slot_kb * 1024 > ring_bytes) continue;
        const int slot = slot_kb * 1024;
        const std::string ring = std::to_string(slots) + " x " + std::to_string(slot_kb) + " KiB";
        check("read, 1 block/SM, cp.async ring " + ring,
              stream([&] {
                read_ring<false><<<sms, kThreads, shared>>>(buffer, per_block, slots, slot, total);
              }));
        check("read, 1 block/SM, bulk-copy ring " + ring,
              stream([&] {
                read_ring<true><<<sms, kThreads, shared>>>(buffer, per_block, slots, slot, total);
              }));
      }
    }
  }

  // one-shot copies of 32-200 KiB a block, launch after launch over the whole buffer, plain and
  // as programmatic dependents (the chain's kernels copy 68 KiB and 137 KiB a block)
  if (major >= 9) {
    const size_t most = std::min<size_t>(200 * 1024, prop.sharedMemPerBlockOptin - 1024);
    // (a blocking stream of its own: programmatic launches on the legacy stream may serialize,
    // and the timer's events on the legacy stream still bracket this stream's work)
    cudaStream_t own;
    CHECK(cudaStreamCreate(&own));
    for (const bool pdl : {false, true}) {
      const auto kernel = pdl ? read_oneshot<true> : read_oneshot<false>;
      CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 int(1024 + most)));
      for (const int shot_kb : {32, 68, 132, 200}) {
        const size_t shot = std::min<size_t>(size_t(shot_kb) * 1024, most);
        const int shot_words = int(shot / 16);
        cudaLaunchAttribute attribute = {};
        attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute.val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(unsigned(sms));
        config.blockDim = dim3(kThreads);
        config.dynamicSmemBytes = 1024 + shot;
        config.stream = own;
        config.attrs = pdl ? &attribute : nullptr;
        config.numAttrs = pdl ? 1 : 0;
        check("read, 1 block/SM, one-shot copies of " + std::to_string(shot / 1024) + " KiB" +
                  (pdl ? ", programmatic dependent launches" : ", launch after launch"),
              stream([&] {
                for (int64_t at = 0; at < per_block; at += shot_words)
                  CHECK(cudaLaunchKernelEx(&config, kernel, (const uint4*)buffer, per_block, at,
                                           shot_words, total));
              }));
      }
    }
    CHECK(cudaStreamDestroy(own));
  }

  // grid barriers: a cooperative grid of one block per SM
  unsigned* word;
  CHECK(cudaMalloc(&word, 64));
  CHECK(cudaMemset(word, 0, 64));
  CHECK(cudaFuncSetAttribute(barriers<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(big)));
  CHECK(cudaFuncSetAttribute(barriers<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(big)));
  for (const bool groups : {false, true}) {
    int count = 2000;
    void* args[2] = {&word, &count};
    float best = 1e30f;
    for (int rep = 0; rep < 4; rep++) {
      timer.start();
      CHECK(cudaLaunchCooperativeKernel(groups ? (void*)barriers<true> : (void*)barriers<false>,
                                        sms, kThreads, args, big, 0));
      const float ms = timer.stop_ms();
      if (rep > 0 && ms < best) best = ms;
    }
    results.report(groups ? "grid barrier, cooperative_groups" : "grid barrier, one word",
           best * 1e3 / count, "us");
  }

  // dependent reads: a 4 MiB ring 4160 bytes a step (L2, warm after the first run), and a random
  // cycle through the 64-byte lines of 1 GiB, each run starting elsewhere (DRAM: a hop misses L2)
  const int hops = 20000;
  for (const bool dram : {false, true}) {
    const int64_t ring = dram ? int64_t(1) << 30 : int64_t(4) << 20;
    const int64_t words = ring / 4;
    std::vector<uint32_t> next(static_cast<size_t>(words), 0);
    if (dram) {
      const int64_t lines = ring / 64;
      std::vector<uint32_t> order(static_cast<size_t>(lines));
      for (int64_t i = 0; i < lines; i++) order[size_t(i)] = uint32_t(i);
      uint64_t state = 88172645463325252ull;  // xorshift; Sattolo's shuffle: one cycle
      for (int64_t i = lines - 1; i > 0; i--) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        std::swap(order[size_t(i)], order[size_t(state % uint64_t(i))]);
      }
      for (int64_t i = 0; i < lines; i++)
        next[size_t(order[size_t(i)]) * 16] = order[size_t((i + 1) % lines)] * 16u;
    } else {
      for (int64_t i = 0; i < words; i++) next[size_t(i)] = uint32_t((i + 1040) % words);
    }
    uint32_t *d_next, *out;
    CHECK(cudaMalloc(&d_next, size_t(ring)));
    CHECK(cudaMalloc(&out, 4));
    CHECK(cudaMemcpy(d_next, next.data(), size_t(ring), cudaMemcpyHostToDevice));
    float best = 1e30f;
    for (int rep = 0; rep < 3; rep++) {
      // (the cycle's hop rep * hops on: lines no earlier run touched)
      uint32_t start = 0;
      for (int h = 0; dram && h < rep * hops; h++) start = next[start];
      timer.start();
      chase<<<1, 1>>>(d_next, start, hops, out);
      const float ms = timer.stop_ms();
      CHECK(cudaGetLastError());
      if ((dram || rep > 0) && ms < best) best = ms;
    }
    results.report(dram ? "dependent read, DRAM" : "dependent read, L2", best * 1e3 / hops, "us");
    CHECK(cudaFree(d_next));
    CHECK(cudaFree(out));
  }

  if (json != nullptr && !results.write_json(json)) return 1;
  return 0;
}
