// Vectorized reductions used by softmax-like kernels (AVX2 where available).
#pragma once

#include <cstdint>

namespace arl {

// Largest value of x (n); -inf for n == 0.
float vmax(const float* x, int n);
// sum exp(x - m) over x (n), and sum exp(x - m) * x into *sum_ex.
void vexp_sums(const float* x, int n, float m, double* sum_e, double* sum_ex);
// out[i] = exp(x[i] - m) for i < n; returns their sum.
double vexp_store(float* out, const float* x, int n, float m);
// dot product of a and b (n), accumulated in float lanes.
float vdot(const float* a, const float* b, int n);
// out[r] = dot(a + r * lda, b) for r < rows (rows <= 4): b is read once for all rows.
void vdot_rows(const float* a, int lda, int rows, const float* b, int n, float* out);
// sum of x[i]^2 (n), products and sums in double (float squares are exact in double).
double vsumsq(const float* x, int64_t n);
// y += alpha * x (n)
void vaxpy(float* y, float alpha, const float* x, int n);
// out[j] = scale * vdot(q, k + j * stride, d) for j < n, the same bits as one vdot a key.
void vdot_keys(float* out, const float* q, const float* k, int64_t stride, int n, int d,
               float scale);
// vaxpy(y, w[j] * w_scale, x + j * stride, d) for j = 0..n-1 in turn, the same bits, with y
// read and written once.
void vaxpy_keys(float* y, const float* w, float w_scale, const float* x, int64_t stride, int n,
                int d);

}  // namespace arl
