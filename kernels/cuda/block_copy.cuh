// A block's copy of weights from global to shared memory, issued before a kernel's PDL wait and
// waited for after it (decode_chain.cu). On Hopper thread 0 issues bulk copies (the copy engine;
// no load instructions, so the SM's memory pipeline stays free for the latency-bound loads of
// kernels beside it) that complete on an mbarrier in shared memory; on Ampere every thread issues
// 16-byte cp.async in a commit group; elsewhere (and in the CUDA emulator) a plain copy.
#pragma once

#include <cstdint>

#include "common.cuh"

namespace arl {

#if !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)  // (Hopper takes bulk copies instead)
// cp.async (Ampere and later): 16 bytes from global to shared memory, in commit groups; a plain
// copy elsewhere (and in the CUDA emulator).
__device__ inline void copy16_async(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
#else
  *static_cast<uint4*>(smem) = __ldg(static_cast<const uint4*>(gmem));
#endif
}

__device__ inline void async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
#endif

// Waits until at most N of this thread's newest commit groups are still in flight.
template <int N>
__device__ inline void async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// Every thread of the block calls block_copy_init (once a barrier), block_copy_arm, block_copy
// and block_copy_wait. bytes: a multiple of 16, both addresses 16-byte aligned.
__device__ inline void block_copy_init(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
#else
  (void)bar;
#endif
}

// The bytes that the block_copy calls after it will bring on `bar` (each bar armed once).
__device__ inline void block_copy_arm(uint64_t* bar, int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x != 0) return;
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b),
               "r"(uint32_t(bytes))
               : "memory");
#else
  (void)bar;
  (void)bytes;
#endif
}

__device__ inline void block_copy(void* smem, const void* gmem, int64_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x != 0) return;
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  constexpr int64_t kPiece = 32 * 1024;
  for (int64_t at = 0; at < bytes; at += kPiece) {
    char* dst = static_cast<char*>(smem) + at;
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    const uint32_t n = uint32_t(bytes - at < kPiece ? bytes - at : kPiece);
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
        ::"r"(s), "l"(static_cast<const char*>(gmem) + at), "r"(n), "r"(b)
        : "memory");
  }
#else
  (void)bar;
  for (int64_t i = threadIdx.x; i < bytes / 16; i += blockDim.x)
    copy16_async(static_cast<char*>(smem) + i * 16, static_cast<const char*>(gmem) + i * 16);
  async_commit();
#endif
}

// One thread's own copy (any thread may call it; block_copy is every thread's): on Hopper a bulk
// copy onto `bar` (armed for it before, by block_copy_arm), elsewhere this thread's 16-byte
// cp.async pieces, in its current commit group (thread_copy_commit closes it). bytes: a multiple
// of 16, both addresses 16-byte aligned.
__device__ inline void thread_copy(void* smem, const void* gmem, int64_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
      ::"r"(s), "l"(gmem), "r"(uint32_t(bytes)), "r"(b)
      : "memory");
#else
  (void)bar;
  for (int64_t at = 0; at < bytes; at += 16)
    copy16_async(static_cast<char*>(smem) + at, static_cast<const char*>(gmem) + at);
#endif
}
__device__ inline void thread_copy_commit() {
#if !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
  async_commit();
#endif
}

// Waits for the bytes armed on `bar` (Hopper) or for all but the newest `later` commit groups
// (one a block_copy call).
template <int later>
__device__ inline void block_copy_wait(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned b = static_cast<unsigned>(__cvta_generic_to_shared(bar));
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(b)
        : "memory");
#else
  (void)bar;
  async_wait<later>();
#endif
}

// block_copy_wait, then a block barrier (every thread calls it): all the block's bytes are there
// for every thread (each thread's cp.async covers only its own pieces).
template <int later>
__device__ inline void block_copy_wait_all(uint64_t* bar) {
  block_copy_wait<later>(bar);
  __syncthreads();
}

// Waits for one mbarrier's bytes, for the waiting threads only on Hopper (the bytes are visible to
// each thread that saw the barrier complete); elsewhere for all but the newest `later` commit
// groups, with a block barrier (every thread calls it then).
template <int later = 0>
__device__ inline void block_copy_wait_own(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  block_copy_wait<0>(bar);
#else
  block_copy_wait_all<later>(bar);
#endif
}

// Asks L2 to fetch `bytes` (a multiple of 16) at p (16-byte aligned): a hint. Hopper: bulk
// prefetches of 16 KiB each; older GPUs: one prefetch per 32-byte sector. The emulator reads the
// range's first and last bytes, so that a range past its buffer faults there.
__device__ inline void prefetch_l2(const void* p, int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const char* base = static_cast<const char*>(p);
  constexpr int64_t kChunk = 16 * 1024;
  for (int64_t o = int64_t(threadIdx.x) * kChunk; o < bytes; o += int64_t(blockDim.x) * kChunk) {
    const unsigned n = unsigned(min(kChunk, bytes - o));
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(
                     __cvta_generic_to_global(base + o)),
                 "r"(n)
                 : "memory");
  }
#elif defined(__CUDA_ARCH__)
  const char* base = static_cast<const char*>(p);
  for (int64_t o = int64_t(threadIdx.x) * 32; o < bytes; o += int64_t(blockDim.x) * 32)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(__cvta_generic_to_global(base + o)));
#else
  if (bytes > 0) {
    const volatile char* c = static_cast<const volatile char*>(p);
    (void)c[0];
    (void)c[bytes - 1];
  }
#endif
}

}  // namespace arl
