// Barriers among the blocks of a grid that runs at once (every thread of those blocks calls
// them): the writes before one are visible to every block after it. One word, 0 in its low 31
// bits between barriers: each block adds 1, one block (the leader) adds 2^31 - (count - 1), so
// the last arrival flips the top bit and leaves the low bits as they were; the blocks wait for
// the flip. Used by the decode layer kernels and timed by bench/gpu/primitives.cu.
#pragma once

#include "common.cuh"

namespace arl {

// A barrier's two halves, for one thread of a block that has finished its writes (after a
// block barrier): group_arrive counts the block in and returns the word as it found it, which
// group_wait takes to wait for the flip (a block may arrive and never wait). group_wait gives
// up after timeout_ns (of the GPU's global timer; 0: never) and returns whether it passed.
__device__ inline unsigned group_arrive(unsigned* word, unsigned count, bool leader) {
  __threadfence();
  return atomicAdd(word, leader ? 0x80000000u - (count - 1) : 1u);
}
// group_arrive for a block that will not wait (the word as found is not needed): a release
// reduction, so the thread does not wait for the atomic's round trip.
__device__ inline void group_signal(unsigned* word, unsigned count, bool leader) {
  const unsigned add = leader ? 0x80000000u - (count - 1) : 1u;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700 && !defined(AGENTRL_CUDA_EMU)
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(word), "r"(add) : "memory");
#else
  __threadfence();
  atomicAdd(word, add);
#endif
}
__device__ inline bool group_wait(const unsigned* word, unsigned before,
                                  unsigned long long timeout_ns = 0) {
  const volatile unsigned* w = word;
  const unsigned long long start = timeout_ns != 0 ? global_ns() : 0;
  bool ok = true;
  while (((before ^ *w) & 0x80000000u) == 0) {
    __nanosleep(20);
    if (timeout_ns != 0 && global_ns() - start > timeout_ns) {
      ok = false;
      break;
    }
  }
  __threadfence();
  return ok;
}

// A barrier among `count` blocks on `word` (one of them the leader). With a timeout (ns of the
// GPU's global timer; 0: none), a wait past it returns false in every thread of the block
// (`passed`, a shared int, carries thread 0's outcome); the word still comes right once every
// block has arrived.
__device__ inline bool group_barrier(unsigned* word, unsigned count, bool leader,
                                     unsigned long long timeout_ns = 0, int* passed = nullptr) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const bool ok = group_wait(word, group_arrive(word, count, leader), timeout_ns);
    if (passed != nullptr) *passed = ok ? 1 : 0;
  }
  __syncthreads();
  return passed == nullptr || *passed != 0;
}

// The whole grid, block 0 leading, no timeout.
__device__ inline void grid_barrier(unsigned* barrier) {
  group_barrier(barrier, gridDim.x, blockIdx.x == 0);
}

}  // namespace arl
