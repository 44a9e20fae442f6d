// Blocked, packed, register-tiled single-precision GEMM (BLIS-style).
#pragma once

#include <cstddef>
#include <cstdint>

namespace arl {

// C (m, n; ldc) = alpha * op(A) op(B) + beta * C, row-major; see arl_sgemm.
// Uses up to num_threads threads; with num_threads == 1 it may be called from
// inside a parallel region.
void sgemm(int num_threads, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
           const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Floats of scratch sgemm_serial needs.
size_t sgemm_serial_scratch_floats();

// The same product on the calling thread only, with caller-provided scratch of
// sgemm_serial_scratch_floats() floats: no allocation, so it is safe inside
// OpenMP parallel regions.
void sgemm_serial(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                  int lda, const float* b, int ldb, float beta, float* c, int ldc,
                  float* scratch);

}  // namespace arl
