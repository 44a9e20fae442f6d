// The FMA peak probe benchmarks compare against.
#include <immintrin.h>
#include <omp.h>

#include <chrono>

#include "common.h"
#include "cpu_features.h"

namespace {

// 12 independent 8-wide FMA chains: enough to cover FMA latency x throughput.
__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps(0.001f * float(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; it++) {
    for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

float fma_loop_portable(int64_t iterations) {
  float acc[96];
  for (int i = 0; i < 96; i++) acc[i] = 0.001f * float(i);
  for (int64_t it = 0; it < iterations; it++)
    for (int i = 0; i < 96; i++) acc[i] = acc[i] * 0.999999f + 1e-7f;
  float s = 0;
  for (int i = 0; i < 96; i++) s += acc[i];
  return s;
}

}  // namespace

extern "C" arl_status arl_fma_peak(arl_ctx* ctx, double* gflops, int64_t iterations) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, gflops);
  ARL_COUNT(ctx, iterations);
  const bool avx2 = arl::has_avx2_fma();
  volatile float sink = 0;
  const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(ctx->num_threads)
  {
    const float r = avx2 ? fma_loop_avx2(iterations) : fma_loop_portable(iterations);
#pragma omp atomic
    sink += r;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  (void)sink;
  // Each iteration is 96 lanes x 2 flops per thread.
  *gflops = 192.0 * double(iterations) * ctx->num_threads / seconds / 1e9;
  return ARL_OK;
}
