#include "sgemm_kernels.h"

#include <immintrin.h>

namespace arl {

// Writes an accumulator tile into C, honouring partial edges and beta == 0.
static inline void store_tile(const float* acc, float* c, int ldc, float alpha, float beta,
                              int mr, int nr) {
  for (int i = 0; i < mr; i++) {
    for (int j = 0; j < nr; j++) {
      float v = alpha * acc[i * NR + j];
      c[i * ldc + j] = beta == 0.0f ? v : v + beta * c[i * ldc + j];
    }
  }
}

void micro_kernel_portable(int kc, const float* ap, const float* bp, float* c, int ldc,
                           float alpha, float beta, int mr, int nr) {
  float acc[MR * NR] = {};
  for (int p = 0; p < kc; p++) {
    for (int i = 0; i < MR; i++) {
      const float a = ap[p * MR + i];
      for (int j = 0; j < NR; j++) acc[i * NR + j] += a * bp[p * NR + j];
    }
  }
  store_tile(acc, c, ldc, alpha, beta, mr, nr);
}

__attribute__((target("avx2,fma"))) void micro_kernel_avx2(int kc, const float* ap,
                                                           const float* bp, float* c, int ldc,
                                                           float alpha, float beta, int mr,
                                                           int nr) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
#define ARL_STEP(P)                                             \
  {                                                             \
    const __m256 b0 = _mm256_load_ps(bp + (P) * NR);            \
    const __m256 b1 = _mm256_load_ps(bp + (P) * NR + 8);        \
    __m256 a = _mm256_broadcast_ss(ap + (P) * MR + 0);          \
    c00 = _mm256_fmadd_ps(a, b0, c00);                          \
    c01 = _mm256_fmadd_ps(a, b1, c01);                          \
    a = _mm256_broadcast_ss(ap + (P) * MR + 1);                 \
    c10 = _mm256_fmadd_ps(a, b0, c10);                          \
    c11 = _mm256_fmadd_ps(a, b1, c11);                          \
    a = _mm256_broadcast_ss(ap + (P) * MR + 2);                 \
    c20 = _mm256_fmadd_ps(a, b0, c20);                          \
    c21 = _mm256_fmadd_ps(a, b1, c21);                          \
    a = _mm256_broadcast_ss(ap + (P) * MR + 3);                 \
    c30 = _mm256_fmadd_ps(a, b0, c30);                          \
    c31 = _mm256_fmadd_ps(a, b1, c31);                          \
    a = _mm256_broadcast_ss(ap + (P) * MR + 4);                 \
    c40 = _mm256_fmadd_ps(a, b0, c40);                          \
    c41 = _mm256_fmadd_ps(a, b1, c41);                          \
    a = _mm256_broadcast_ss(ap + (P) * MR + 5);                 \
    c50 = _mm256_fmadd_ps(a, b0, c50);                          \
    c51 = _mm256_fmadd_ps(a, b1, c51);                          \
  }
  int p = 0;
  for (; p + 4 <= kc; p += 4) {
    __builtin_prefetch(ap + 8 * MR, 0, 3);
    __builtin_prefetch(bp + 8 * NR, 0, 3);
    ARL_STEP(0) ARL_STEP(1) ARL_STEP(2) ARL_STEP(3)
    ap += 4 * MR;
    bp += 4 * NR;
  }
  for (; p < kc; p++) {
    ARL_STEP(0)
    ap += MR;
    bp += NR;
  }
#undef ARL_STEP
  const __m256 va = _mm256_set1_ps(alpha);
  if (mr == MR && nr == NR) {
    __m256 rows[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    if (beta == 0.0f) {
      for (int i = 0; i < MR; i++) {
        _mm256_storeu_ps(c + i * ldc, _mm256_mul_ps(va, rows[i][0]));
        _mm256_storeu_ps(c + i * ldc + 8, _mm256_mul_ps(va, rows[i][1]));
      }
    } else {
      const __m256 vb = _mm256_set1_ps(beta);
      for (int i = 0; i < MR; i++) {
        float* ci = c + i * ldc;
        _mm256_storeu_ps(ci, _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci), _mm256_mul_ps(va, rows[i][0])));
        _mm256_storeu_ps(ci + 8,
                         _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci + 8), _mm256_mul_ps(va, rows[i][1])));
      }
    }
    return;
  }
  alignas(32) float acc[MR * NR];
  _mm256_store_ps(acc + 0 * NR, c00);
  _mm256_store_ps(acc + 0 * NR + 8, c01);
  _mm256_store_ps(acc + 1 * NR, c10);
  _mm256_store_ps(acc + 1 * NR + 8, c11);
  _mm256_store_ps(acc + 2 * NR, c20);
  _mm256_store_ps(acc + 2 * NR + 8, c21);
  _mm256_store_ps(acc + 3 * NR, c30);
  _mm256_store_ps(acc + 3 * NR + 8, c31);
  _mm256_store_ps(acc + 4 * NR, c40);
  _mm256_store_ps(acc + 4 * NR + 8, c41);
  _mm256_store_ps(acc + 5 * NR, c50);
  _mm256_store_ps(acc + 5 * NR + 8, c51);
  store_tile(acc, c, ldc, alpha, beta, mr, nr);
}

}  // namespace arl
