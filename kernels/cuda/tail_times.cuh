// A decode step's tail in the decode chain's time sums (AGENTRL_CUDA_DECODE_CHAIN_TIMES=1): the
// kernels between one token's last layer and the next token's first (the final norm, the LM
// head's GEMV, greedy sampling, the embedding) stamp their starts and ends in the chain's
// counters, from word kTailBase on; kernel 2 of the next token's first layer turns them into
// spans. The chain's own words come before kTailBase.
#pragma once

#include "common.cuh"

namespace arl {

constexpr int kTailBase = 72;
enum TailWord {
  kTailNormStart = kTailBase,  // the final norm (arl_rmsnorm_forward), block 0's start
  kTailNormEnd,                // its last block's end (atomicMax)
  kTailGreedyWait,             // greedy sampling, block (0, 0): its pdl_wait returns
  kTailGreedyEnd,              // the end of its merge (the token written)
  kTailEmbedStart,             // the embedding (arl_embedding_forward), block 0's start
  kTailEmbedEnd,               // its last block's end (atomicMax)
  // sums over tokens, by kernel 2 of the first layer
  kTailSpanToNorm,    // the last layer's kernel 4, its last block's end -> the norm's start
  kTailSpanNorm,      // the norm
  kTailSpanHead,      // the norm's end -> the sampling's wait returns (the LM head's GEMV)
  kTailSpanGreedy,    // the sampling's wait -> its end
  kTailSpanToEmbed,   // -> the embedding's start (the step's ids copy, the graph's launch)
  kTailSpanEmbed,     // the embedding
  kTailSpanToAttn,    // the embedding's end -> kernel 2's wait returns
  kTailSpanTokens,    // tokens whose stamps came in that order
  kTailEnd
};

// The chain's counters (null unless AGENTRL_CUDA_DECODE_CHAIN_TIMES=1; see time_sums).
unsigned long long* decode_chain_times(arl_ctx* ctx);

// Stamps: block 0's start, or a block's end (the latest kept).
__device__ inline void tail_stamp_start(unsigned long long* times, TailWord word) {
  if (times != nullptr && threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0)
    times[word] = global_ns();
}
__device__ inline void tail_stamp_end(unsigned long long* times, TailWord word) {
  if (times != nullptr && threadIdx.x == 0) atomicMax(times + word, global_ns());
}

}  // namespace arl
