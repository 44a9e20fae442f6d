// AdamW, gradient norms and scaling on a CUDA device.
#include <cmath>

#include "common.cuh"

namespace {

// Blocks of the sum-of-squares pass (each writes one double partial sum).
constexpr int kSumBlocks = 1024;

// Block-wide double sum (blockDim.x a multiple of 32); every thread gets the result.
__device__ inline double block_sum_d(double v, double* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? shared[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// partial[block] = sum of x^2 over the block's grid-stride share, in double (float squares
// are exact in double). Four loads in flight per thread.
__global__ void sum_squares_kernel(double* partial, const float* x, int64_t n) {
  __shared__ double shared[32];
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const double a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += d * d;
  }
  for (; i < n; i += stride) {
    const double a = x[i];
    s0 += a * a;
  }
  const double s = block_sum_d((s0 + s1) + (s2 + s3), shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// One block: out[0] = sum of partial (n), in a fixed order.
__global__ void sum_partials_kernel(double* out, const double* partial, int n) {
  __shared__ double shared[32];
  double s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
  s = block_sum_d(s, shared);
  if (threadIdx.x == 0) out[0] = s;
}

__global__ void scale_kernel(float* x, float s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] *= s;
}

// The CPU's update, term by term (bias corrections folded into step_size and inv_c2).
__global__ void adamw_kernel(float* params, float* m, float* v, const float* grads, int64_t n,
                             float beta1, float beta2, float eps, float step_size, float inv_c2,
                             float decay, float grad_scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = grads[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float p = params[i];
    params[i] = p - (step_size * mi / (sqrtf(vi * inv_c2) + eps) + decay * p);
  }
}

}  // namespace

extern "C" {

arl_status arl_sum_squares(arl_ctx* ctx, double* out, const float* x, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, x);
  ARL_COUNT(ctx, n);
  const unsigned grid = arl::grid_for(n);
  const int blocks = int(grid < unsigned(kSumBlocks) ? grid : unsigned(kSumBlocks));
  auto* partial =
      static_cast<double*>(arl::scratch(ctx, __func__, size_t(blocks + 1) * sizeof(double)));
  if (partial == nullptr) return ARL_ERR_ALLOC;
  sum_squares_kernel<<<blocks, arl::kBlock, 0, ctx->stream>>>(partial, x, n);
  ARL_LAUNCHED(ctx);
  sum_partials_kernel<<<1, 1024, 0, ctx->stream>>>(partial + blocks, partial, blocks);
  ARL_LAUNCHED(ctx);
  double result = 0;
  cudaError_t err = cudaMemcpyAsync(&result, partial + blocks, sizeof(double),
                                    cudaMemcpyDeviceToHost, ctx->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, __func__, err);
  *out = result;
  return ARL_OK;
}

arl_status arl_scale(arl_ctx* ctx, float* x, float s, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, x);
  ARL_COUNT(ctx, n);
  scale_kernel<<<arl::grid_for(n), arl::kBlock, 0, ctx->stream>>>(x, s, n);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_adamw(arl_ctx* ctx, float* params, float* m, float* v, const float* grads,
                     int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                     int32_t step, float grad_scale) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, params);
  ARL_NOT_NULL(ctx, m);
  ARL_NOT_NULL(ctx, v);
  ARL_NOT_NULL(ctx, grads);
  ARL_COUNT(ctx, n);
  if (step < 1)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: step must be >= 1, got %d", __func__, step);
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: betas must be in [0, 1), got %g and %g", __func__,
                     double(beta1), double(beta2));
  if (!(eps > 0) || !(lr >= 0) || !(weight_decay >= 0) || !std::isfinite(eps) ||
      !std::isfinite(lr) || !std::isfinite(weight_decay) || !std::isfinite(grad_scale))
    return arl::fail(ctx, ARL_ERR_VALUE,
                     "%s: need finite eps > 0, lr >= 0, weight_decay >= 0 and grad_scale",
                     __func__);
  const double c1 = 1.0 - std::pow(double(beta1), step);
  const double c2 = 1.0 - std::pow(double(beta2), step);
  const float step_size = float(lr / c1);
  const float inv_c2 = float(1.0 / c2);
  const float decay = lr * weight_decay;
  adamw_kernel<<<arl::grid_for(n), arl::kBlock, 0, ctx->stream>>>(
      params, m, v, grads, n, beta1, beta2, eps, step_size, inv_c2, decay, grad_scale);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

}  // extern "C"
