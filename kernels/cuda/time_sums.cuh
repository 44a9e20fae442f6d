// Device sums of a kernel's time stamps for a diagnostic switch (an environment variable set to
// 1): a few counters on the device that the kernel adds to, printed by the switch's own function
// at exit. Used by the decode layer kernels (AGENTRL_CUDA_DECODE_LAYER_TIMES,
// AGENTRL_CUDA_DECODE_CHAIN_TIMES).
#pragma once

#include <atomic>

#include "common.cuh"

namespace arl {

constexpr int kTimeSumsMaxWords = 96;

struct TimeSums {
  const char* env;  // the switch
  int words;        // counters (at most kTimeSumsMaxWords)
  void (*print)(const unsigned long long* host);  // at exit, given the counters' values
  unsigned long long* sums;  // (set by time_sums)
  int device;
  std::atomic<int> on{-1};  // whether the switch is 1 (read once by time_sums; -1: not yet)
};

// The switch's counters (zeroed once), or null when the switch is off, on another device, or
// while a graph is recorded before the first direct call (the pointer must outlive the graph).
unsigned long long* time_sums(arl_ctx* ctx, TimeSums& sums);

}  // namespace arl
