// The fused LM head + log-softmax + gather + entropy and its backward pass,
// chunked over token rows so that at most ~256 MB of logits exist at a time (a
// block reduces a whole vocabulary row), the full logits for sampling, and the
// value head.
#include <cmath>

#include "common.cuh"
#include "gemv.cuh"

namespace {

constexpr int kRowThreads = 512;
constexpr size_t kChunkBytes = size_t(256) << 20;

// Rows per chunk: the (rows, V) logits block stays within kChunkBytes (at least one row).
int32_t chunk_rows(int32_t t, int32_t v) {
  int64_t rows = int64_t(kChunkBytes / sizeof(float)) / v;
  if (rows < 1) rows = 1;
  return int32_t(rows < t ? rows : t);
}

// One block: found[0] = the lowest row whose target is outside [0, V) (INT32_MAX if none),
// found[1] = that target.
__global__ void first_bad_target_kernel(int32_t* found, const int32_t* targets, int32_t t,
                                        int32_t v) {
  __shared__ int32_t red[32];
  int32_t first = INT32_MAX;
  for (int64_t i = threadIdx.x; i < t; i += blockDim.x) {
    const int32_t id = targets[i];
    if (id < 0 || id >= v) {
      first = int32_t(i);
      break;
    }
  }
  for (int o = 16; o > 0; o >>= 1) first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = first;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < int(blockDim.x >> 5); w++) first = min(first, red[w]);
    found[0] = first;
    found[1] = first < t ? targets[first] : 0;
  }
}

// Takes scratch for `rows` logits rows (plus the target check's result) and checks the
// temperature and the targets before anything is written, with the CPU library's messages.
// The check synchronizes, so errors that earlier calls deferred are reported here too.
arl_status prepare(arl_ctx* ctx, const char* fn, float** z, const int32_t* targets, int32_t t,
                   int32_t v, int32_t rows, float temperature) {
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: temperature must be a positive number, got %g", fn,
                     double(temperature));
  const size_t logits_bytes = sizeof(float) * size_t(rows) * size_t(v);
  auto* base = static_cast<char*>(arl::scratch(ctx, fn, logits_bytes + 64));
  if (base == nullptr) return ARL_ERR_ALLOC;
  auto* host = static_cast<int32_t*>(arl::host_scratch(ctx, fn, 2 * sizeof(int32_t)));
  if (host == nullptr) return ARL_ERR_ALLOC;
  auto* found = reinterpret_cast<int32_t*>(base + logits_bytes);
  first_bad_target_kernel<<<1, 1024, 0, ctx->stream>>>(found, targets, t, v);
  if (arl_status s = arl::check_launch(ctx, fn)) return s;
  cudaError_t err =
      cudaMemcpyAsync(host, found, 2 * sizeof(int32_t), cudaMemcpyDeviceToHost, ctx->stream);
  if (err == cudaSuccess) err = arl::queue_flag_read(ctx);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, fn, err);
  if (arl_status s = arl::report_flag(ctx, fn, "a kernel flagged a bad value")) return s;
  if (host[0] < t)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: target id %d at row %d is outside [0, %d)", fn,
                     host[1], host[0], v);
  *z = reinterpret_cast<float*>(base);
  return ARL_OK;
}

// Running softmax statistics of a set of logits x, relative to their max m:
// s = sum exp(x - m), a = sum exp(x - m) (x - m).
struct Stats {
  float m, s, a;
};

__device__ inline Stats merge(Stats p, Stats q) {
  if (q.m > p.m) {
    const Stats t = p;
    p = q;
    q = t;
  }
  if (q.s == 0.0f) return p;  // empty (or all -inf): nothing to add
  const float d = q.m - p.m;  // <= 0
  const float f = expf(d);
  p.s = fmaf(q.s, f, p.s);
  p.a = fmaf(f, fmaf(q.s, d, q.a), p.a);
  return p;
}

// Moves st's reference max up to mx (when larger), rescaling s and a to it.
__device__ inline void raise_max(Stats& st, float mx) {
  if (!(mx > st.m)) return;  // (NaN: unchanged, as a plain comparison)
  if (st.s != 0.0f) {
    const float d = st.m - mx, f = expf(d);
    st.a = f * fmaf(st.s, d, st.a);
    st.s *= f;
  }
  st.m = mx;
}

// One block per row of z (rows, V) (already divided by the temperature), one pass over the
// row: lse = m + log s; logp = z[target] - lse; entropy = lse - sum p z = log s - a / s.
__global__ void __launch_bounds__(kRowThreads)
    logprob_rows_kernel(float* logp, float* entropy, float* lse, const float* z,
                        const int32_t* targets, int32_t v) {
  __shared__ Stats red[kRowThreads / 32];
  const int64_t r = blockIdx.x;
  const float* row = z + r * v;
  Stats st = {-INFINITY, 0.0f, 0.0f};
  const uint32_t stride = kRowThreads, n = uint32_t(v);  // unsigned: j + 4 stride cannot wrap
  uint32_t j = threadIdx.x;
  // Four loads in flight per step; one rescale per step when the max grows.
  for (; j + 3 * stride < n; j += 4 * stride) {
    const float x0 = row[j], x1 = row[j + stride], x2 = row[j + 2 * stride],
                x3 = row[j + 3 * stride];
    const float mx = fmaxf(fmaxf(x0, x1), fmaxf(x2, x3));
    raise_max(st, mx);
    const float d0 = x0 - st.m, d1 = x1 - st.m, d2 = x2 - st.m, d3 = x3 - st.m;
    const float e0 = expf(d0), e1 = expf(d1), e2 = expf(d2), e3 = expf(d3);
    st.s += (e0 + e1) + (e2 + e3);
    st.a += fmaf(e0, d0, e1 * d1) + fmaf(e2, d2, e3 * d3);
  }
  for (; j < n; j += stride) {
    const float x = row[j];
    raise_max(st, x);
    const float d = x - st.m, e = expf(d);
    st.s += e;
    st.a = fmaf(e, d, st.a);
  }
  for (int o = 16; o > 0; o >>= 1) {
    Stats other;
    other.m = __shfl_xor_sync(0xffffffffu, st.m, o);
    other.s = __shfl_xor_sync(0xffffffffu, st.s, o);
    other.a = __shfl_xor_sync(0xffffffffu, st.a, o);
    st = merge(st, other);
  }
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = st;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kRowThreads / 32; w++) st = merge(st, red[w]);
    const float log_s = logf(st.s), l = st.m + log_s;
    lse[r] = l;
    logp[r] = row[targets[r]] - l;
    if (entropy != nullptr) entropy[r] = log_s - st.a / st.s;
  }
}

// In place: z (rows, V) -> dz, the gradient w.r.t. the un-tempered logits, as on the CPU:
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
  if (ge == 0.0f) {
    for (uint32_t j = threadIdx.x; j < uint32_t(v); j += kRowThreads)
      row[j] = -g * expf(row[j] - l) * inv_temp;
  } else {
    for (uint32_t j = threadIdx.x; j < uint32_t(v); j += kRowThreads) {
      const float logpj = row[j] - l;
      const float p = expf(logpj);
      row[j] = (-g * p - ge * p * (logpj + hr)) * inv_temp;
    }
  }
  __syncthreads();  // the target's element may belong to another thread
  if (threadIdx.x == 0) row[targets[r]] += g * inv_temp;
}

// values (T) = h (T, C) . w (C) + bias: a warp per row.
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

// dh (T, C) = dvalues (T) w (C): blocks stride over rows, threads over columns.
__global__ void value_head_dh_kernel(float* dh, const float* dvalues, const float* w, int32_t t,
                                     int32_t c) {
  for (int64_t i = blockIdx.x; i < t; i += gridDim.x) {
    const float g = dvalues[i];
    float* out = dh + i * c;
    for (int32_t j = threadIdx.x; j < c; j += blockDim.x) out[j] = g * w[j];
  }
}

// Partial column sums in double: part (R, C) with part[y][j] = sum over the rows of row block
// y of dvalues[i] h[i, j]. Block (32, 8): 32 columns, 8 row strides.
__global__ void value_head_dw_partial_kernel(double* part, const float* dvalues, const float* h,
                                             int32_t t, int32_t c, int32_t rows_per_block) {
  __shared__ double red[8][33];
  const int32_t j = blockIdx.x * 32 + threadIdx.x;
  const int64_t i0 = int64_t(blockIdx.y) * rows_per_block;
  const int64_t i1 = min(int64_t(t), i0 + rows_per_block);
  double s = 0.0;
  if (j < c)
    for (int64_t i = i0 + threadIdx.y; i < i1; i += 8) s += double(dvalues[i]) * h[i * c + j];
  red[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < c) {
    double total = 0.0;
    for (int y = 0; y < 8; y++) total += red[y][threadIdx.x];
    part[int64_t(blockIdx.y) * c + j] = total;
  }
}

// dw (C) += the partial sums (R, C), added in a fixed order (deterministic).
__global__ void value_head_dw_finish_kernel(float* dw, const double* part, int32_t r,
                                            int32_t c) {
  const int32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= c) return;
  double s = 0.0;
  for (int32_t y = 0; y < r; y++) s += part[int64_t(y) * c + j];
  dw[j] += float(s);
}

// dbias (1) += sum of dvalues (T), in double (one block of 1024).
__global__ void value_head_dbias_kernel(float* dbias, const float* dvalues, int32_t t) {
  __shared__ double red[32];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < t; i += blockDim.x) s += dvalues[i];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < int(blockDim.x >> 5); w++) s += red[w];
    *dbias += float(s);
  }
}

// The LM head's GEMMs over one chunk of rows, with fp32 weights (TF32 tensor cores) or bf16
// weights (h and the logit gradients rounded to bf16 for bf16 tensor cores).
struct HeadF32 {
  const float* h;
  const float* w;
  int32_t v, c;
  arl_status prepare(arl_ctx*, const char*, int32_t) { return ARL_OK; }
  // z (n, V) = h[r0:r0+n] w^T * inv_temp
  arl_status logits(arl_ctx* ctx, const char* fn, int32_t r0, int32_t n, float inv_temp,
                    float* z) const {
    return arl::gemm(ctx, fn, false, true, n, v, c, inv_temp, h + int64_t(r0) * c, c, w, c, 0.0f,
                     z, v);
  }
  // dh[r0:r0+n] = dz w; dw += dz^T h[r0:r0+n] (dw may be null)
  arl_status backward(arl_ctx* ctx, const char* fn, int32_t r0, int32_t n, const float* dz,
                      float* dh, float* dw) const {
    if (arl_status s = arl::gemm(ctx, fn, false, false, n, c, v, 1.0f, dz, v, w, c, 0.0f,
                                 dh + int64_t(r0) * c, c))
      return s;
    if (dw == nullptr) return ARL_OK;
    return arl::gemm(ctx, fn, true, false, v, c, n, 1.0f, dz, v, h + int64_t(r0) * c, c, 1.0f, dw,
                     c);
  }
};

struct HeadBf16 {
  const float* h;
  const uint16_t* w;
  int32_t v, c;
  const uint16_t* h16 = nullptr;
  arl_status prepare(arl_ctx* ctx, const char* fn, int32_t t) {
    return arl::to_bf16(ctx, fn, 1, h, int64_t(t) * c, &h16);
  }
  arl_status logits(arl_ctx* ctx, const char* fn, int32_t r0, int32_t n, float inv_temp,
                    float* z) const {
    return arl::gemm_bf16(ctx, fn, false, true, n, v, c, inv_temp, h16 + int64_t(r0) * c, c, w,
                          c, 0.0f, z, v);
  }
  arl_status backward(arl_ctx* ctx, const char* fn, int32_t r0, int32_t n, const float* dz,
                      float* dh, float* dw) const {
    const uint16_t* dz16 = nullptr;
    if (arl_status s = arl::to_bf16(ctx, fn, 0, dz, int64_t(n) * v, &dz16)) return s;
    if (arl_status s = arl::gemm_bf16(ctx, fn, false, false, n, c, v, 1.0f, dz16, v, w, c, 0.0f,
                                      dh + int64_t(r0) * c, c))
      return s;
    if (dw == nullptr) return ARL_OK;
    return arl::gemm_bf16(ctx, fn, true, false, v, c, n, 1.0f, dz16, v, h16 + int64_t(r0) * c, c,
                          1.0f, dw, c);
  }
};

template <typename Head>
arl_status logprob_forward(arl_ctx* ctx, const char* fn, Head head, float* logp, float* entropy,
                           float* lse, const int32_t* targets, int32_t t, float temperature) {
  const int32_t v = head.v, rows = chunk_rows(t, v);
  float* z = nullptr;
  if (arl_status s = prepare(ctx, fn, &z, targets, t, v, rows, temperature)) return s;
  if (arl_status s = head.prepare(ctx, fn, t)) return s;
  const float inv_temp = 1.0f / temperature;
  for (int32_t r0 = 0; r0 < t; r0 += rows) {
    const int32_t n = rows < t - r0 ? rows : t - r0;
    if (arl_status s = head.logits(ctx, fn, r0, n, inv_temp, z)) return s;
    logprob_rows_kernel<<<n, kRowThreads, 0, ctx->stream>>>(
        logp + r0, entropy != nullptr ? entropy + r0 : nullptr, lse + r0, z, targets + r0, v);
    if (arl_status s = arl::check_launch(ctx, fn)) return s;
  }
  return ARL_OK;
}

template <typename Head>
arl_status logprob_backward(arl_ctx* ctx, const char* fn, Head head, float* dh, float* dw,
                            const float* dlogp, const float* dentropy, const int32_t* targets,
                            const float* lse, const float* entropy, int32_t t,
                            float temperature) {
  const int32_t v = head.v, rows = chunk_rows(t, v);
  float* z = nullptr;
  if (arl_status s = prepare(ctx, fn, &z, targets, t, v, rows, temperature)) return s;
  if (arl_status s = head.prepare(ctx, fn, t)) return s;
  const float inv_temp = 1.0f / temperature;
  for (int32_t r0 = 0; r0 < t; r0 += rows) {
    const int32_t n = rows < t - r0 ? rows : t - r0;
    if (arl_status s = head.logits(ctx, fn, r0, n, inv_temp, z)) return s;
    logprob_grad_rows_kernel<<<n, kRowThreads, 0, ctx->stream>>>(
        z, dlogp + r0, dentropy != nullptr ? dentropy + r0 : nullptr,
        dentropy != nullptr ? entropy + r0 : nullptr, lse + r0, targets + r0, v, inv_temp);
    if (arl_status s = arl::check_launch(ctx, fn)) return s;
    // dh rows of this chunk written; dw (V, C) += dz^T h.
    if (arl_status s = head.backward(ctx, fn, r0, n, z, dh, dw)) return s;
  }
  return ARL_OK;
}

}  // namespace

// The argument checks of the forward and backward entry points (fp32 and bf16 weights).
#define ARL_HEAD_SIZES()    \
  ARL_POSITIVE(ctx, t);     \
  ARL_POSITIVE(ctx, v);     \
  ARL_POSITIVE(ctx, c);     \
  ARL_PRODUCT(ctx, t, c);   \
  ARL_PRODUCT(ctx, v, c)

#define ARL_LOGPROB_FORWARD_CHECKS()  \
  do {                                \
    ARL_CTX(ctx);                     \
    ARL_NOT_NULL(ctx, logp);          \
    ARL_NOT_NULL(ctx, lse);           \
    ARL_NOT_NULL(ctx, h);             \
    ARL_NOT_NULL(ctx, targets);       \
    ARL_NOT_NULL(ctx, w);             \
    ARL_HEAD_SIZES();                 \
  } while (0)

#define ARL_LOGPROB_BACKWARD_CHECKS()                  \
  do {                                                 \
    ARL_CTX(ctx);                                      \
    ARL_NOT_NULL(ctx, dh);                             \
    ARL_NOT_NULL(ctx, dlogp);                          \
    ARL_NOT_NULL(ctx, h);                              \
    ARL_NOT_NULL(ctx, targets);                        \
    ARL_NOT_NULL(ctx, w);                              \
    ARL_NOT_NULL(ctx, lse);                            \
    if (dentropy != nullptr) ARL_NOT_NULL(ctx, entropy); \
    ARL_HEAD_SIZES();                                  \
  } while (0)

#define ARL_LM_HEAD_CHECKS()   \
  do {                         \
    ARL_CTX(ctx);              \
    ARL_NOT_NULL(ctx, logits); \
    ARL_NOT_NULL(ctx, h);      \
    ARL_NOT_NULL(ctx, w);      \
    ARL_HEAD_SIZES();          \
    ARL_PRODUCT(ctx, t, v);    \
  } while (0)

extern "C" {

arl_status arl_logprob_forward(arl_ctx* ctx, float* logp, float* entropy, float* lse,
                               const float* h, const int32_t* targets, const float* w, int32_t t,
                               int32_t v, int32_t c, float temperature) {
  ARL_LOGPROB_FORWARD_CHECKS();
  return logprob_forward(ctx, __func__, HeadF32{h, w, v, c}, logp, entropy, lse, targets, t,
                         temperature);
}

arl_status arl_logprob_forward_bf16(arl_ctx* ctx, float* logp, float* entropy, float* lse,
                                    const float* h, const int32_t* targets, const uint16_t* w,
                                    int32_t t, int32_t v, int32_t c, float temperature) {
  ARL_LOGPROB_FORWARD_CHECKS();
  return logprob_forward(ctx, __func__, HeadBf16{h, w, v, c}, logp, entropy, lse, targets, t,
                         temperature);
}

arl_status arl_logprob_backward(arl_ctx* ctx, float* dh, float* dw, const float* dlogp,
                                const float* dentropy, const float* h, const int32_t* targets,
                                const float* w, const float* lse, const float* entropy,
                                int32_t t, int32_t v, int32_t c, float temperature) {
  ARL_LOGPROB_BACKWARD_CHECKS();
  return logprob_backward(ctx, __func__, HeadF32{h, w, v, c}, dh, dw, dlogp, dentropy, targets,
                          lse, entropy, t, temperature);
}

arl_status arl_logprob_backward_bf16(arl_ctx* ctx, float* dh, float* dw, const float* dlogp,
                                     const float* dentropy, const float* h,
                                     const int32_t* targets, const uint16_t* w, const float* lse,
                                     const float* entropy, int32_t t, int32_t v, int32_t c,
                                     float temperature) {
  ARL_LOGPROB_BACKWARD_CHECKS();
  return logprob_backward(ctx, __func__, HeadBf16{h, w, v, c}, dh, dw, dlogp, dentropy, targets,
                          lse, entropy, t, temperature);
}

arl_status arl_lm_head(arl_ctx* ctx, float* logits, const float* h, const float* w, int32_t t,
                       int32_t v, int32_t c) {
  ARL_LM_HEAD_CHECKS();
  return arl::gemm(ctx, __func__, false, true, t, v, c, 1.0f, h, c, w, c, 0.0f, logits, v);
}

arl_status arl_lm_head_bf16(arl_ctx* ctx, float* logits, const float* h, const uint16_t* w,
                            int32_t t, int32_t v, int32_t c) {
  ARL_LM_HEAD_CHECKS();
  if (t <= arl::kGemvRows) {  // decode: a GEMV over the bf16 rows, h in fp32
    arl::gemv_rows(ctx, logits, h, w, nullptr, t, v, c, false);
    ARL_LAUNCHED(ctx);
    return ARL_OK;
  }
  const uint16_t* h16 = nullptr;
  if (arl_status s = arl::to_bf16(ctx, __func__, 0, h, int64_t(t) * c, &h16)) return s;
  return arl::gemm_bf16(ctx, __func__, false, true, t, v, c, 1.0f, h16, c, w, c, 0.0f, logits, v);
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
    const unsigned blocks = unsigned(t < 65535 * 4 ? t : 65535 * 4);
    value_head_dh_kernel<<<blocks, 256, 0, ctx->stream>>>(dh, dvalues, w, t, c);
    ARL_LAUNCHED(ctx);
  }
  if (dw != nullptr) {
    // Row blocks of >= 64 rows, at most 256 of them: (C / 32) x R blocks fill the device.
    int64_t r = (int64_t(t) + 63) / 64;
    if (r > 256) r = 256;
    const int32_t rows_per_block = int32_t((int64_t(t) + r - 1) / r);
    r = (int64_t(t) + rows_per_block - 1) / rows_per_block;
    auto* part = static_cast<double*>(arl::scratch(ctx, __func__, sizeof(double) * r * c));
    if (part == nullptr) return ARL_ERR_ALLOC;
    const dim3 grid(unsigned((c + 31) / 32), unsigned(r));
    value_head_dw_partial_kernel<<<grid, dim3(32, 8), 0, ctx->stream>>>(part, dvalues, h, t, c,
                                                                        rows_per_block);
    ARL_LAUNCHED(ctx);
    value_head_dw_finish_kernel<<<unsigned((c + 255) / 256), 256, 0, ctx->stream>>>(
        dw, part, int32_t(r), c);
    ARL_LAUNCHED(ctx);
  }
  if (dbias != nullptr) {
    value_head_dbias_kernel<<<1, 1024, 0, ctx->stream>>>(dbias, dvalues, t);
    ARL_LAUNCHED(ctx);
  }
  return ARL_OK;
}

}  // extern "C"
