#include "sgemm_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>

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

// Writes the twelve accumulators (rows 0-5; columns 0-7 and 8-15) into C.
__attribute__((target("avx2,fma"), always_inline)) static inline void store_acc(
    __m256 c00, __m256 c01, __m256 c10, __m256 c11, __m256 c20, __m256 c21, __m256 c30,
    __m256 c31, __m256 c40, __m256 c41, __m256 c50, __m256 c51, float* c, int ldc, float alpha,
    float beta, int mr, int nr) {
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
  store_acc(c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c, ldc, alpha, beta, mr,
            nr);
}

__attribute__((target("avx2,fma"))) void micro_kernel_avx2_rows(int kc, const float* a, int lda,
                                                                const float* bp, float* c, int ldc,
                                                                float alpha, float beta, int mr,
                                                                int nr) {
  // Rows past mr read the last row (their sums are not stored). Two row pointers and one stride
  // reach all six rows through the addressing modes (r0, r0+s, r0+2s; r3, r3+s, r3+2s).
  const size_t s = size_t(lda);
  const size_t last = size_t(mr - 1);
  const float* r0 = a;
  const float* r3 = a + std::min<size_t>(3, last) * s;
  const size_t s1 = mr > 1 ? s : 0;
  const size_t s2 = mr > 2 ? 2 * s : s1;
  const size_t t1 = mr > 4 ? s : 0;
  const size_t t2 = mr > 5 ? 2 * s : t1;
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
#define ARL_STEP(P)                                      \
  {                                                      \
    const __m256 b0 = _mm256_load_ps(bp + (P) * NR);     \
    const __m256 b1 = _mm256_load_ps(bp + (P) * NR + 8); \
    __m256 x = _mm256_broadcast_ss(r0 + (P));            \
    c00 = _mm256_fmadd_ps(x, b0, c00);                   \
    c01 = _mm256_fmadd_ps(x, b1, c01);                   \
    x = _mm256_broadcast_ss(r0 + s1 + (P));              \
    c10 = _mm256_fmadd_ps(x, b0, c10);                   \
    c11 = _mm256_fmadd_ps(x, b1, c11);                   \
    x = _mm256_broadcast_ss(r0 + s2 + (P));              \
    c20 = _mm256_fmadd_ps(x, b0, c20);                   \
    c21 = _mm256_fmadd_ps(x, b1, c21);                   \
    x = _mm256_broadcast_ss(r3 + (P));                   \
    c30 = _mm256_fmadd_ps(x, b0, c30);                   \
    c31 = _mm256_fmadd_ps(x, b1, c31);                   \
    x = _mm256_broadcast_ss(r3 + t1 + (P));              \
    c40 = _mm256_fmadd_ps(x, b0, c40);                   \
    c41 = _mm256_fmadd_ps(x, b1, c41);                   \
    x = _mm256_broadcast_ss(r3 + t2 + (P));              \
    c50 = _mm256_fmadd_ps(x, b0, c50);                   \
    c51 = _mm256_fmadd_ps(x, b1, c51);                   \
  }
  int p = 0;
  for (; p + 4 <= kc; p += 4) {
    __builtin_prefetch(bp + 8 * NR, 0, 3);
    ARL_STEP(0) ARL_STEP(1) ARL_STEP(2) ARL_STEP(3)
    bp += 4 * NR;
    r0 += 4;
    r3 += 4;
  }
  for (; p < kc; p++) {
    ARL_STEP(0)
    bp += NR;
    r0 += 1;
    r3 += 1;
  }
#undef ARL_STEP
  store_acc(c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c, ldc, alpha, beta, mr,
            nr);
}

}  // namespace arl
