// Micro-kernels of the GEMM: C (mr x nr) = alpha * Ap Bp + beta * C, where Ap is
// a packed (kc x MR) panel and Bp a packed (kc x NR) panel.
#pragma once

namespace arl {

constexpr int MR = 6;
constexpr int NR = 16;

using MicroKernel = void (*)(int kc, const float* ap, const float* bp, float* c, int ldc,
                             float alpha, float beta, int mr, int nr);

void micro_kernel_portable(int kc, const float* ap, const float* bp, float* c, int ldc,
                           float alpha, float beta, int mr, int nr);
void micro_kernel_avx2(int kc, const float* ap, const float* bp, float* c, int ldc, float alpha,
                       float beta, int mr, int nr);
// The same with A read in place: mr rows of kc floats, lda apart (no packed panel). Each
// element of C sums its products in the same order as micro_kernel_avx2, so the bits match.
void micro_kernel_avx2_rows(int kc, const float* a, int lda, const float* bp, float* c, int ldc,
                            float alpha, float beta, int mr, int nr);

}  // namespace arl
