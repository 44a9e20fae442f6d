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

}  // namespace arl
