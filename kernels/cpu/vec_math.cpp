#include "vec_math.h"

#include <immintrin.h>

#include <cmath>

#include "cpu_features.h"

namespace arl {
namespace {

__attribute__((target("avx2,fma"))) inline __m256 exp256(__m256 x) {
  // exp(x) = 2^n * exp(r), r = x - n ln2 in [-ln2/2, ln2/2]; degree-6 polynomial.
  const __m256 hi = _mm256_set1_ps(88.3762626647949f);
  const __m256 lo = _mm256_set1_ps(-103.0f);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // Scale by 2^n in two steps so that n down to -149 (subnormals) stays exact enough.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256i rest = _mm256_sub_epi32(ni, half);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(rest, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) float vmax_avx2(const float* x, int n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  float best = _mm_cvtss_f32(s);
  for (; i < n; i++) best = x[i] > best ? x[i] : best;
  return best;
}

__attribute__((target("avx2,fma"))) void vexp_sums_avx2(const float* x, int n, float m,
                                                        double* sum_e, double* sum_ex) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 se = _mm256_setzero_ps(), sex = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 e = exp256(_mm256_sub_ps(v, vm));
    se = _mm256_add_ps(se, e);
    sex = _mm256_fmadd_ps(e, v, sex);
  }
  double a = hsum(se), b = hsum(sex);
  for (; i < n; i++) {
    const double e = std::exp(double(x[i]) - m);
    a += e;
    b += e * x[i];
  }
  *sum_e = a;
  *sum_ex = b;
}

__attribute__((target("avx2,fma"))) double vexp_store_avx2(float* out, const float* x, int n,
                                                           float m) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 se = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(out + i, e);
    se = _mm256_add_ps(se, e);
  }
  double s = hsum(se);
  for (; i < n; i++) {
    out[i] = std::exp(x[i] - m);
    s += out[i];
  }
  return s;
}

__attribute__((target("avx2,fma"))) float vdot_avx2(const float* a, const float* b, int n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

// Each row's sum runs in the same order whatever `rows` is, so a row's result
// does not depend on how many rows share the call (batch-invariant decoding).
template <int R>
__attribute__((target("avx2,fma"))) inline void dot_rows_fixed(const float* a, size_t lda,
                                                               const float* b, int n, float* out) {
  __m256 s[R];
  for (int r = 0; r < R; r++) s[r] = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 vb = _mm256_loadu_ps(b + i);  // one read of b serves every row
    for (int r = 0; r < R; r++) s[r] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + i), vb, s[r]);
  }
  for (int r = 0; r < R; r++) {
    float v = hsum(s[r]);
    for (int j = i; j < n; j++) v += a[r * lda + j] * b[j];
    out[r] = v;
  }
}

__attribute__((target("avx2,fma"))) void vdot_rows_avx2(const float* a, int lda, int rows,
                                                        const float* b, int n, float* out) {
  switch (rows) {
    case 4: return dot_rows_fixed<4>(a, size_t(lda), b, n, out);
    case 3: return dot_rows_fixed<3>(a, size_t(lda), b, n, out);
    case 2: return dot_rows_fixed<2>(a, size_t(lda), b, n, out);
    default: return dot_rows_fixed<1>(a, size_t(lda), b, n, out);
  }
}

__attribute__((target("avx2,fma"))) void vaxpy_avx2(float* y, float alpha, const float* x, int n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; i++) y[i] += alpha * x[i];
}

// The keys' dots of vdot_keys, K at a time: each key's sum runs exactly as vdot_avx2's does.
template <int K>
__attribute__((target("avx2,fma"))) inline void dot_keys_fixed(float* out, const float* q,
                                                               const float* k, int64_t stride,
                                                               int d, float scale) {
  __m256 s0[K], s1[K];
  for (int r = 0; r < K; r++) s0[r] = s1[r] = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= d; i += 16) {
    const __m256 qa = _mm256_loadu_ps(q + i), qb = _mm256_loadu_ps(q + i + 8);
    for (int r = 0; r < K; r++) {
      s0[r] = _mm256_fmadd_ps(qa, _mm256_loadu_ps(k + r * stride + i), s0[r]);
      s1[r] = _mm256_fmadd_ps(qb, _mm256_loadu_ps(k + r * stride + i + 8), s1[r]);
    }
  }
  for (; i + 8 <= d; i += 8) {
    const __m256 qa = _mm256_loadu_ps(q + i);
    for (int r = 0; r < K; r++) s0[r] = _mm256_fmadd_ps(qa, _mm256_loadu_ps(k + r * stride + i), s0[r]);
  }
  for (int r = 0; r < K; r++) {
    float s = hsum(_mm256_add_ps(s0[r], s1[r]));
    for (int j = i; j < d; j++) s += q[j] * k[r * stride + j];
    out[r] = scale * s;
  }
}

__attribute__((target("avx2,fma"))) void vdot_keys_avx2(float* out, const float* q,
                                                        const float* k, int64_t stride, int n,
                                                        int d, float scale) {
  int j = 0;
  for (; j + 4 <= n; j += 4) dot_keys_fixed<4>(out + j, q, k + j * stride, stride, d, scale);
  switch (n - j) {
    case 3: return dot_keys_fixed<3>(out + j, q, k + j * stride, stride, d, scale);
    case 2: return dot_keys_fixed<2>(out + j, q, k + j * stride, stride, d, scale);
    case 1: return dot_keys_fixed<1>(out + j, q, k + j * stride, stride, d, scale);
    default: return;
  }
}

// y += (w[j] * w_scale) x_j key after key, as vaxpy_avx2 would add them, with y's lanes held
// in registers across the keys.
__attribute__((target("avx2,fma"))) void vaxpy_keys_avx2(float* y, const float* w, float w_scale,
                                                         const float* x, int64_t stride, int n,
                                                         int d) {
  int i = 0;
  for (; i + 32 <= d; i += 32) {
    __m256 y0 = _mm256_loadu_ps(y + i), y1 = _mm256_loadu_ps(y + i + 8);
    __m256 y2 = _mm256_loadu_ps(y + i + 16), y3 = _mm256_loadu_ps(y + i + 24);
    for (int j = 0; j < n; j++) {
      const __m256 a = _mm256_set1_ps(w[j] * w_scale);
      const float* xj = x + j * stride + i;
      y0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(xj), y0);
      y1 = _mm256_fmadd_ps(a, _mm256_loadu_ps(xj + 8), y1);
      y2 = _mm256_fmadd_ps(a, _mm256_loadu_ps(xj + 16), y2);
      y3 = _mm256_fmadd_ps(a, _mm256_loadu_ps(xj + 24), y3);
    }
    _mm256_storeu_ps(y + i, y0);
    _mm256_storeu_ps(y + i + 8, y1);
    _mm256_storeu_ps(y + i + 16, y2);
    _mm256_storeu_ps(y + i + 24, y3);
  }
  for (; i + 8 <= d; i += 8) {
    __m256 y0 = _mm256_loadu_ps(y + i);
    for (int j = 0; j < n; j++)
      y0 = _mm256_fmadd_ps(_mm256_set1_ps(w[j] * w_scale), _mm256_loadu_ps(x + j * stride + i), y0);
    _mm256_storeu_ps(y + i, y0);
  }
  // the tail as vaxpy_avx2 writes it, so that it compiles to the same operations
  for (int j = 0; j < n && i < d; j++) {
    const float alpha = w[j] * w_scale;
    const float* xj = x + j * stride;
    for (int r = i; r < d; r++) y[r] += alpha * xj[r];
  }
}

__attribute__((target("avx2,fma"))) double vsumsq_avx2(const float* x, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    a0 = _mm256_fmadd_pd(lo, lo, a0);
    a1 = _mm256_fmadd_pd(hi, hi, a1);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(a0, a1));
  double s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; i++) s += double(x[i]) * x[i];
  return s;
}

}  // namespace

double vsumsq(const float* x, int64_t n) {
  if (has_avx2_fma()) return vsumsq_avx2(x, n);
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += double(x[i]) * x[i];
  return s;
}

float vmax(const float* x, int n) {
  if (has_avx2_fma()) return vmax_avx2(x, n);
  float best = -INFINITY;
  for (int i = 0; i < n; i++) best = x[i] > best ? x[i] : best;
  return best;
}

void vexp_sums(const float* x, int n, float m, double* sum_e, double* sum_ex) {
  if (has_avx2_fma()) return vexp_sums_avx2(x, n, m, sum_e, sum_ex);
  double a = 0, b = 0;
  for (int i = 0; i < n; i++) {
    const double e = std::exp(double(x[i]) - m);
    a += e;
    b += e * x[i];
  }
  *sum_e = a;
  *sum_ex = b;
}

double vexp_store(float* out, const float* x, int n, float m) {
  if (has_avx2_fma()) return vexp_store_avx2(out, x, n, m);
  double s = 0;
  for (int i = 0; i < n; i++) {
    out[i] = std::exp(x[i] - m);
    s += out[i];
  }
  return s;
}

float vdot(const float* a, const float* b, int n) {
  if (has_avx2_fma()) return vdot_avx2(a, b, n);
  float s = 0;
  for (int i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

void vdot_rows(const float* a, int lda, int rows, const float* b, int n, float* out) {
  if (has_avx2_fma()) return vdot_rows_avx2(a, lda, rows, b, n, out);
  for (int r = 0; r < rows; r++) out[r] = vdot(a + size_t(r) * lda, b, n);
}

void vaxpy(float* y, float alpha, const float* x, int n) {
  if (has_avx2_fma()) return vaxpy_avx2(y, alpha, x, n);
  for (int i = 0; i < n; i++) y[i] += alpha * x[i];
}

void vdot_keys(float* out, const float* q, const float* k, int64_t stride, int n, int d,
               float scale) {
  if (has_avx2_fma()) return vdot_keys_avx2(out, q, k, stride, n, d, scale);
  for (int j = 0; j < n; j++) out[j] = scale * vdot(q, k + j * stride, d);
}

void vaxpy_keys(float* y, const float* w, float w_scale, const float* x, int64_t stride, int n,
                int d) {
  if (has_avx2_fma()) return vaxpy_keys_avx2(y, w, w_scale, x, stride, n, d);
  for (int j = 0; j < n; j++) vaxpy(y, w[j] * w_scale, x + j * stride, d);
}

}  // namespace arl
