// The LM head + log-softmax + gather + entropy and its backward pass, chunked
// over token rows so that at most ~256 MB of logits exist at a time (the
// vocabulary is never split: one block reduces a whole row), and the full
// logits for sampling.
#include <cmath>

#include "common.cuh"

namespace {

constexpr int kRowThreads = 256;
constexpr size_t kChunkBytes = size_t(256) << 20;

// Rows per chunk: the (rows, V) logits block stays within kChunkBytes.
int32_t chunk_rows(int32_t t, int32_t v) {
  int64_t rows = int64_t(kChunkBytes / sizeof(float)) / v;
  if (rows < 1) rows = 1;
  return int32_t(rows < t ? rows : t);
}

arl_status check_common(arl_ctx* ctx, const char* fn, const int32_t* targets, int32_t t,
                        int32_t v, float temperature) {
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: temperature must be a positive number, got %g", fn,
                     double(temperature));
  std::vector<int32_t> host;
  if (arl_status s = arl::fetch_i32(ctx, fn, host, targets, t)) return s;
  for (int32_t i = 0; i < t; i++)
    if (host[i] < 0 || host[i] >= v)
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: target id %d at row %d is outside [0, %d)", fn,
                       host[i], i, v);
  return ARL_OK;
}

// One block per row of z (rows, V) (already divided by the temperature):
// lse, logp of the target, entropy = lse - sum p z.
__global__ void __launch_bounds__(kRowThreads)
    logprob_rows_kernel(float* logp, float* entropy, float* lse, const float* z,
                        const int32_t* targets, int32_t v) {
  __shared__ float red[32];
  const int64_t r = blockIdx.x;
  const float* row = z + r * v;
  float m = -INFINITY;
  for (int32_t j = threadIdx.x; j < v; j += blockDim.x) m = fmaxf(m, row[j]);
  m = arl_block_max(m, red);
  float se = 0.0f, sez = 0.0f;
  for (int32_t j = threadIdx.x; j < v; j += blockDim.x) {
    const float x = row[j];
    const float e = __expf(x - m);
    se += e;
    sez = fmaf(e, x, sez);
  }
  se = arl_block_sum(se, red);
  sez = arl_block_sum(sez, red);
  if (threadIdx.x == 0) {
    const float l = m + logf(se);
    lse[r] = l;
    logp[r] = row[targets[r]] - l;
    if (entropy != nullptr) entropy[r] = l - sez / se;
  }
}

// In place: z (rows, V) -> dz, the gradient w.r.t. the un-tempered logits:
// dz_j = (dlogp (1[j = target] - p_j) - dH p_j (log p_j + H)) / temperature.
__global__ void __launch_bounds__(kRowThreads)
    logprob_grad_rows_kernel(float* z, const float* dlogp, const float* dentropy,
                             const float* entropy, const float* lse, const int32_t* targets,
                             int32_t v, float inv_temp) {
  const int64_t r = blockIdx.x;
  float* row = z + r * v;
  const float l = lse[r], g = dlogp[r];
  const float ge = dentropy != nullptr ? dentropy[r] : 0.0f;
  const float hr = dentropy != nullptr ? entropy[r] : 0.0f;
  const int32_t tgt = targets[r];
  for (int32_t j = threadIdx.x; j < v; j += blockDim.x) {
    const float logpj = row[j] - l;
    const float p = __expf(logpj);
    float d = ge == 0.0f ? -g * p : -g * p - ge * p * (logpj + hr);
    if (j == tgt) d += g;
    row[j] = d * inv_temp;
  }
}

__global__ void value_head_forward_kernel(float* values, const float* h, const float* w,
                                          float bias, int32_t t, int32_t c) {
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (row >= t) return;
  const float* x = h + row * c;
  float s = 0.0f;
  for (int32_t j = lane; j < c; j += 32) s = fmaf(x[j], w[j], s);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) values[row] = s + bias;
}

__global__ void value_head_dh_kernel(float* dh, const float* dvalues, const float* w, int32_t t,
                                     int32_t c) {
  const int64_t n = int64_t(t) * c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dh[i] = dvalues[i / c] * w[i % c];
}

// dw (C) += sum_t dvalues[t] h[t, :], in double; 32 columns x 8 row-strides per block.
__global__ void value_head_dw_kernel(float* dw, const float* dvalues, const float* h, int32_t t,
                                     int32_t c) {
  __shared__ double part[8][33];
  const int32_t j = blockIdx.x * 32 + threadIdx.x;
  double s = 0.0;
  if (j < c)
    for (int32_t i = threadIdx.y; i < t; i += 8) s += double(dvalues[i]) * h[int64_t(i) * c + j];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < c) {
    double total = 0.0;
    for (int r = 0; r < 8; r++) total += part[r][threadIdx.x];
    dw[j] += float(total);
  }
}

__global__ void value_head_dbias_kernel(float* dbias, const float* dvalues, int32_t t) {
  __shared__ float red[32];
  double s = 0.0;
  for (int32_t i = threadIdx.x; i < t; i += blockDim.x) s += dvalues[i];
  const float total = arl_block_sum(float(s), red);
  if (threadIdx.x == 0) *dbias += total;
}

}  // namespace

extern "C" {

arl_status arl_logprob_forward(arl_ctx* ctx, float* logp, float* entropy, float* lse,
                               const float* h, const int32_t* targets, const float* w, int32_t t,
                               int32_t v, int32_t c, float temperature) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, logp);
  ARL_NOT_NULL(ctx, lse);
  ARL_NOT_NULL(ctx, h);
  ARL_NOT_NULL(ctx, targets);
  ARL_NOT_NULL(ctx, w);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  ARL_PRODUCT(ctx, v, c);
  if (arl_status s = check_common(ctx, __func__, targets, t, v, temperature)) return s;
  const int32_t rows = chunk_rows(t, v);
  auto* z = static_cast<float*>(arl::scratch(ctx, __func__, sizeof(float) * size_t(rows) * v));
  if (z == nullptr) return ARL_ERR_ALLOC;
  for (int32_t r0 = 0; r0 < t; r0 += rows) {
    const int32_t n = rows < t - r0 ? rows : t - r0;
    if (arl_status s = arl::gemm(ctx, __func__, false, true, n, v, c, 1.0f / temperature,
                                 h + int64_t(r0) * c, c, w, c, 0.0f, z, v))
      return s;
    logprob_rows_kernel<<<n, kRowThreads, 0, ctx->stream>>>(
        logp + r0, entropy != nullptr ? entropy + r0 : nullptr, lse + r0, z, targets + r0, v);
    ARL_LAUNCHED(ctx);
  }
  return ARL_OK;
}

arl_status arl_logprob_backward(arl_ctx* ctx, float* dh, float* dw, const float* dlogp,
                                const float* dentropy, const float* h, const int32_t* targets,
                                const float* w, const float* lse, const float* entropy,
                                int32_t t, int32_t v, int32_t c, float temperature) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dh);
  ARL_NOT_NULL(ctx, dlogp);
  ARL_NOT_NULL(ctx, h);
  ARL_NOT_NULL(ctx, targets);
  ARL_NOT_NULL(ctx, w);
  ARL_NOT_NULL(ctx, lse);
  if (dentropy != nullptr) ARL_NOT_NULL(ctx, entropy);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  ARL_PRODUCT(ctx, v, c);
  if (arl_status s = check_common(ctx, __func__, targets, t, v, temperature)) return s;
  const int32_t rows = chunk_rows(t, v);
  auto* z = static_cast<float*>(arl::scratch(ctx, __func__, sizeof(float) * size_t(rows) * v));
  if (z == nullptr) return ARL_ERR_ALLOC;
  const float inv_temp = 1.0f / temperature;
  for (int32_t r0 = 0; r0 < t; r0 += rows) {
    const int32_t n = rows < t - r0 ? rows : t - r0;
    const float* hc = h + int64_t(r0) * c;
    if (arl_status s =
            arl::gemm(ctx, __func__, false, true, n, v, c, inv_temp, hc, c, w, c, 0.0f, z, v))
      return s;
    logprob_grad_rows_kernel<<<n, kRowThreads, 0, ctx->stream>>>(
        z, dlogp + r0, dentropy != nullptr ? dentropy + r0 : nullptr,
        dentropy != nullptr ? entropy + r0 : nullptr, lse + r0, targets + r0, v, inv_temp);
    ARL_LAUNCHED(ctx);
    if (arl_status s = arl::gemm(ctx, __func__, false, false, n, c, v, 1.0f, z, v, w, c, 0.0f,
                                 dh + int64_t(r0) * c, c))
      return s;
    if (dw != nullptr) {
      if (arl_status s =
              arl::gemm(ctx, __func__, true, false, v, c, n, 1.0f, z, v, hc, c, 1.0f, dw, c))
        return s;
    }
  }
  return ARL_OK;
}

arl_status arl_lm_head(arl_ctx* ctx, float* logits, const float* h, const float* w, int32_t t,
                       int32_t v, int32_t c) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, logits);
  ARL_NOT_NULL(ctx, h);
  ARL_NOT_NULL(ctx, w);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  ARL_PRODUCT(ctx, v, c);
  ARL_PRODUCT(ctx, t, v);
  return arl::gemm(ctx, __func__, false, true, t, v, c, 1.0f, h, c, w, c, 0.0f, logits, v);
}

arl_status arl_value_head_forward(arl_ctx* ctx, float* values, const float* h, const float* w,
                                  float bias, int32_t t, int32_t c) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, values);
  ARL_NOT_NULL(ctx, h);
  ARL_NOT_NULL(ctx, w);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  value_head_forward_kernel<<<unsigned((int64_t(t) * 32 + 255) / 256), 256, 0, ctx->stream>>>(
      values, h, w, bias, t, c);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_value_head_backward(arl_ctx* ctx, float* dh, float* dw, float* dbias,
                                   const float* dvalues, const float* h, const float* w,
                                   int32_t t, int32_t c) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dvalues);
  ARL_NOT_NULL(ctx, h);
  ARL_NOT_NULL(ctx, w);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  if (dh != nullptr) {
    value_head_dh_kernel<<<arl::grid_for(int64_t(t) * c), arl::kBlock, 0, ctx->stream>>>(
        dh, dvalues, w, t, c);
    ARL_LAUNCHED(ctx);
  }
  if (dw != nullptr) {
    value_head_dw_kernel<<<(c + 31) / 32, dim3(32, 8), 0, ctx->stream>>>(dw, dvalues, h, t, c);
    ARL_LAUNCHED(ctx);
  }
  if (dbias != nullptr) {
    value_head_dbias_kernel<<<1, 256, 0, ctx->stream>>>(dbias, dvalues, t);
    ARL_LAUNCHED(ctx);
  }
  return ARL_OK;
}

}  // extern "C"
