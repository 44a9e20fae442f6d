// Row-major GEMM for the CUDA library: cuBLAS (dlopen'ed) with tensor-core
// compute, or a tiled fallback kernel when cuBLAS is absent.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "common.cuh"
#include "cublas_loader.h"
#include "env_switch.h"

namespace {

// The slice of cublas_api.h we use (values from the cuBLAS documentation).
typedef void* cublasHandle_t;
typedef int cublasStatus_t;
enum { kOpN = 0, kOpT = 1 };
enum { kR32F = 0, kR16BF = 14 };  // cudaDataType CUDA_R_32F, CUDA_R_16BF
enum {
  kCompute32F = 68,
  kCompute32FFast16BF = 75,
  kCompute32FFastTF32 = 77,
};
enum { kGemmDefault = -1 };
constexpr size_t kCublasWorkspace = size_t(32) << 20;  // NVIDIA's advice for Hopper

using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using SetWorkspaceFn = cublasStatus_t (*)(cublasHandle_t, void*, size_t);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, int, int, int, int, int, const void*,
                                    const void*, int, int, const void*, int, int, const void*,
                                    void*, int, int, int, int);
using GemmBatchedFn = cublasStatus_t (*)(cublasHandle_t, int, int, int, int, int, const void*,
                                         const void*, int, int, long long, const void*, int, int,
                                         long long, const void*, void*, int, int, long long, int,
                                         int, int);

struct Cublas {
  bool tried = false;
  void* lib = nullptr;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn set_stream = nullptr;
  SetWorkspaceFn set_workspace = nullptr;  // optional (cuBLAS >= 11)
  GemmExFn gemm = nullptr;
  GemmBatchedFn gemm_batched = nullptr;
  int compute = kCompute32FFastTF32;
  char status[256] = "";
};

Cublas g_cublas;

void* sym(void* lib, const char* a, const char* b) {
  void* p = dlsym(lib, a);
  return p != nullptr || b == nullptr ? p : dlsym(lib, b);
}

void load_cublas() {
  Cublas& c = g_cublas;
  if (c.tried) return;
  c.tried = true;
  const char* names[] = {std::getenv("AGENTRL_CUBLAS"), "libcublas.so.13", "libcublas.so.12",
                         "libcublas.so"};
  for (const char* name : names) {
#ifdef AGENTRL_CUDA_EMU
    break;  // the CPU emulator (kernels/emu/) cannot run cuBLAS
#endif
    if (name == nullptr || name[0] == '\0') continue;
    c.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (c.lib != nullptr) break;
  }
  if (c.lib == nullptr) {
    snprintf(c.status, sizeof(c.status),
             "libcublas was not found (set AGENTRL_CUBLAS to its path); using the fallback GEMM");
    return;
  }
  c.create = reinterpret_cast<CreateFn>(sym(c.lib, "cublasCreate_v2", "cublasCreate"));
  c.destroy = reinterpret_cast<DestroyFn>(sym(c.lib, "cublasDestroy_v2", "cublasDestroy"));
  c.set_stream =
      reinterpret_cast<SetStreamFn>(sym(c.lib, "cublasSetStream_v2", "cublasSetStream"));
  c.set_workspace = reinterpret_cast<SetWorkspaceFn>(
      sym(c.lib, "cublasSetWorkspace_v2", "cublasSetWorkspace"));
  c.gemm = reinterpret_cast<GemmExFn>(sym(c.lib, "cublasGemmEx", nullptr));
  c.gemm_batched =
      reinterpret_cast<GemmBatchedFn>(sym(c.lib, "cublasGemmStridedBatchedEx", nullptr));
  if (!c.create || !c.destroy || !c.set_stream || !c.gemm || !c.gemm_batched) {
    snprintf(c.status, sizeof(c.status), "libcublas lacks cublasGemmEx or its companions");
    c.gemm = nullptr;
    return;
  }
  const int mode = arl::env_choice("AGENTRL_CUDA_MATMUL", {"tf32", "fp32", "bf16"});
  if (mode == 1) c.compute = kCompute32F;
  if (mode == 2) c.compute = kCompute32FFast16BF;
}

// Fallback: C = alpha op(A) op(B) + beta C, row-major, 32x32 tiles in shared memory.
constexpr int kTile = 32;

__device__ inline float load_f32(const float* p) { return *p; }
__device__ inline float load_f32(const uint16_t* p) { return __uint_as_float(uint32_t(*p) << 16); }

template <typename T>
__global__ void gemm_fallback_kernel(bool ta, bool tb, int m, int n, int k, float alpha,
                                     const T* __restrict__ a, int lda, int64_t sa,
                                     const T* __restrict__ b, int ldb, int64_t sb, float beta,
                                     float* __restrict__ c, int ldc, int64_t sc) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  a += blockIdx.z * sa;
  b += blockIdx.z * sb;
  c += blockIdx.z * sc;
  int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  int tx = threadIdx.x, ty = threadIdx.y;  // 32 x 8 threads: 4 rows each
  float acc[4] = {0, 0, 0, 0};
  for (int k0 = 0; k0 < k; k0 += kTile) {
    for (int r = ty; r < kTile; r += 8) {
      int i = row0 + r, kk = k0 + tx;  // A (i, kk)
      float av = 0;
      if (i < m && kk < k)
        av = load_f32(ta ? &a[int64_t(kk) * lda + i] : &a[int64_t(i) * lda + kk]);
      as[r][tx] = av;
      int kb = k0 + r, j = col0 + tx;  // B (kb, j)
      float bv = 0;
      if (kb < k && j < n)
        bv = load_f32(tb ? &b[int64_t(j) * ldb + kb] : &b[int64_t(kb) * ldb + j]);
      bs[r][tx] = bv;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < kTile; kk++) {
      float bv = bs[kk][tx];
#pragma unroll
      for (int q = 0; q < 4; q++) acc[q] = fmaf(as[ty + 8 * q][kk], bv, acc[q]);
    }
    __syncthreads();
  }
  for (int q = 0; q < 4; q++) {
    int i = row0 + ty + 8 * q, j = col0 + tx;
    if (i < m && j < n) {
      float* out = &c[int64_t(i) * ldc + j];
      *out = beta == 0.0f ? alpha * acc[q] : alpha * acc[q] + beta * *out;
    }
  }
}

}  // namespace

namespace arl {

void* cublas_create(cudaStream_t stream, void** workspace) {
  *workspace = nullptr;
  load_cublas();
  if (g_cublas.gemm == nullptr) return nullptr;
  cublasHandle_t h = nullptr;
  if (g_cublas.create(&h) != 0 || h == nullptr) {
    snprintf(g_cublas.status, sizeof(g_cublas.status), "cublasCreate failed");
    return nullptr;
  }
  g_cublas.set_stream(h, stream);
  // A workspace of our own, so that GEMMs recorded in a graph never allocate.
  if (g_cublas.set_workspace != nullptr && cudaMalloc(workspace, kCublasWorkspace) == cudaSuccess) {
    if (g_cublas.set_workspace(h, *workspace, kCublasWorkspace) != 0) {
      cudaFree(*workspace);
      *workspace = nullptr;
    }
  } else {
    cudaGetLastError();
    *workspace = nullptr;
  }
  return h;
}

void cublas_destroy(void* handle) {
  if (handle != nullptr && g_cublas.destroy != nullptr) g_cublas.destroy(handle);
}

const char* cublas_status() { return g_cublas.status; }

bool have_cublas(const arl_ctx* ctx) { return ctx->cublas != nullptr; }

arl_status gemm_batched(arl_ctx* ctx, const char* fn, bool trans_a, bool trans_b, int m, int n,
                        int k, float alpha, const float* a, int lda, int64_t stride_a,
                        const float* b, int ldb, int64_t stride_b, float beta, float* c, int ldc,
                        int64_t stride_c, int count) {
  if (ctx->cublas != nullptr) {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
    int st = g_cublas.gemm_batched(ctx->cublas, trans_b ? kOpT : kOpN, trans_a ? kOpT : kOpN, n,
                                   m, k, &alpha, b, kR32F, ldb, stride_b, a, kR32F, lda, stride_a,
                                   &beta, c, kR32F, ldc, stride_c, count, g_cublas.compute,
                                   kGemmDefault);
    if (st != 0) return fail(ctx, ARL_ERR_DEVICE, "%s: cuBLAS GEMM failed (status %d)", fn, st);
    return ARL_OK;
  }
  dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile, count);
  gemm_fallback_kernel<float><<<grid, dim3(32, 8), 0, ctx->stream>>>(
      trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc,
      stride_c);
  return check_launch(ctx, fn);
}

arl_status gemm(arl_ctx* ctx, const char* fn, bool trans_a, bool trans_b, int m, int n, int k,
                float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
                int ldc) {
  if (ctx->cublas != nullptr) {
    int st = g_cublas.gemm(ctx->cublas, trans_b ? kOpT : kOpN, trans_a ? kOpT : kOpN, n, m, k,
                           &alpha, b, kR32F, ldb, a, kR32F, lda, &beta, c, kR32F, ldc,
                           g_cublas.compute, kGemmDefault);
    if (st != 0) return fail(ctx, ARL_ERR_DEVICE, "%s: cuBLAS GEMM failed (status %d)", fn, st);
    return ARL_OK;
  }
  return gemm_batched(ctx, fn, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c,
                      ldc, 0, 1);
}

arl_status gemm_bf16(arl_ctx* ctx, const char* fn, bool trans_a, bool trans_b, int m, int n,
                     int k, float alpha, const uint16_t* a, int lda, const uint16_t* b, int ldb,
                     float beta, float* c, int ldc) {
  if (ctx->cublas != nullptr) {
    int st = g_cublas.gemm(ctx->cublas, trans_b ? kOpT : kOpN, trans_a ? kOpT : kOpN, n, m, k,
                           &alpha, b, kR16BF, ldb, a, kR16BF, lda, &beta, c, kR32F, ldc,
                           kCompute32F, kGemmDefault);
    if (st != 0)
      return fail(ctx, ARL_ERR_DEVICE, "%s: cuBLAS bf16 GEMM failed (status %d)", fn, st);
    return ARL_OK;
  }
  dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile, 1);
  gemm_fallback_kernel<uint16_t><<<grid, dim3(32, 8), 0, ctx->stream>>>(
      trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0);
  return check_launch(ctx, fn);
}

}  // namespace arl
