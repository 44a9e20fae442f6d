// What the GPU check's standalone microbenchmarks (primitives.cu, decode_structure.cu) share:
// CUDA error checks, an event timer, checksummed reads of 16-byte words, and the results,
// printed as "name: value unit" lines and written as one JSON object.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    const cudaError_t e_ = (call);                                                    \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,               \
                   cudaGetErrorString(e_));                                           \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace bench {

__device__ inline uint64_t words_sum(uint4 v) {
  return uint64_t(v.x) + v.y + v.z + v.w;
}

// The block's sum into *total (one atomic per warp).
__device__ inline void add_sum(uint64_t s, unsigned long long* total) {
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(total, (unsigned long long)s);
}

// A pattern no two neighbouring words share (never zeros: those can read faster).
__global__ void fill(uint4* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t a = uint32_t(i) * 2654435761u;
    p[i] = make_uint4(a, a ^ 0x9e3779b9u, a + 7u, ~a);
  }
}

// Many blocks, grid-stride, 4 loads in flight per thread: the streaming reference.
__global__ void read_many(const uint4* __restrict__ p, int64_t n, unsigned long long* total) {
  uint64_t s = 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                d = __ldg(p + i + 3 * stride);
    s += words_sum(a) + words_sum(b) + words_sum(c) + words_sum(d);
  }
  for (; i < n; i += stride) s += words_sum(__ldg(p + i));
  add_sum(s, total);
}

struct Timer {
  cudaEvent_t a, b;
  Timer() {
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
  }
  void start(cudaStream_t s = 0) { CHECK(cudaEventRecord(a, s)); }
  float stop_ms(cudaStream_t s = 0) {
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms;
  }
};

// The measurements, and the names of those whose checksum was wrong.
struct Results {
  std::vector<std::pair<std::string, double>> values;
  std::vector<std::string> wrong;

  // Prints "name: value unit", with "(r of the <of>)" when reference > 0.
  void report(const std::string& name, double value, const char* unit, double reference = 0,
              const char* of = "reference") {
    values.emplace_back(name, value);
    if (reference > 0)
      std::printf("%s: %.1f %s (%.2f of the %s)\n", name.c_str(), value, unit,
                  value / reference, of);
    else
      std::printf("%s: %.3f %s\n", name.c_str(), value, unit);
  }

  void mark_wrong(const std::string& name) {
    std::printf("%s: WRONG SUM\n", name.c_str());
    wrong.push_back(name);
  }

  // {name: value, ..., "wrong": [names]}; false if the file cannot be written.
  bool write_json(const char* path) const {
    FILE* f = std::fopen(path, "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cannot write %s\n", path);
      return false;
    }
    std::fprintf(f, "{");
    for (size_t i = 0; i < values.size(); i++)
      std::fprintf(f, "%s\"%s\": %.6g", i ? ", " : "", values[i].first.c_str(),
                   values[i].second);
    std::fprintf(f, "%s\"wrong\": [", values.empty() ? "" : ", ");
    for (size_t i = 0; i < wrong.size(); i++)
      std::fprintf(f, "%s\"%s\"", i ? ", " : "", wrong[i].c_str());
    std::fprintf(f, "]}\n");
    return std::fclose(f) == 0;
  }
};

}  // namespace bench
