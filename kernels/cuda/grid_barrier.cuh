// Grid-wide barrier for a cooperative grid (every thread of the grid calls it): the writes
// before it are visible to every block after it. One word, 0 in its low 31 bits between
// barriers: each block adds 1, block 0 adds 2^31 - (G - 1), so the last arrival flips the top
// bit and leaves the low bits as they were; the blocks wait for the flip. Used by the decode
// layer kernel and timed by bench/gpu/primitives.cu.
#pragma once

namespace arl {

__device__ inline void grid_barrier(unsigned* barrier) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
    __threadfence();
    const unsigned before = atomicAdd(barrier, add);
    const volatile unsigned* word = barrier;
    while (((before ^ *word) & 0x80000000u) == 0) __nanosleep(20);
    __threadfence();
  }
  __syncthreads();
}

}  // namespace arl
