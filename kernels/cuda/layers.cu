// Token embedding, RMSNorm, RoPE, SwiGLU and the residual add on a CUDA device.
#include <cmath>
#include <climits>
#include <initializer_list>

#include "common.cuh"
#include "rope.cuh"
#include "tail_times.cuh"

namespace {

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

// One block: found[0] = the lowest i with ids[i] outside [lo, hi] (n if none), found[1] = ids[i].
__global__ void first_bad_id_kernel(int32_t* found, const int32_t* ids, int32_t n, int32_t lo,
                                    int32_t hi) {
  __shared__ int32_t best;
  if (threadIdx.x == 0) best = n;
  __syncthreads();
  for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int32_t id = ids[i];
    if (id < lo || id > hi) {
      atomicMin(&best, i);
      break;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    found[0] = best;
    found[1] = best < n ? ids[best] : 0;
  }
}

// Checks ids (n, device) against [lo, hi]: *index = the first bad row (-1 if none), *value its id.
arl_status find_bad_id(arl_ctx* ctx, const char* fn, const int32_t* ids, int32_t n, int32_t lo,
                       int32_t hi, int32_t* index, int32_t* value) {
  auto* found = static_cast<int32_t*>(arl::scratch(ctx, fn, 2 * sizeof(int32_t)));
  if (found == nullptr) return ARL_ERR_ALLOC;
  first_bad_id_kernel<<<1, 1024, 0, ctx->stream>>>(found, ids, n, lo, hi);
  if (arl_status s = arl::check_launch(ctx, fn)) return s;
  int32_t host[2] = {0, 0};
  cudaError_t err = cudaMemcpyAsync(host, found, sizeof(host), cudaMemcpyDeviceToHost,
                                    ctx->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(ctx->stream);
  if (err != cudaSuccess) return arl::cuda_fail(ctx, fn, err);
  *index = host[0] < n ? host[0] : -1;
  *value = host[1];
  return ARL_OK;
}

arl_status check_tokens(arl_ctx* ctx, const char* fn, const int32_t* tokens, int32_t t,
                        int32_t v) {
  int32_t row = -1, id = 0;
  if (arl_status s = find_bad_id(ctx, fn, tokens, t, 0, v - 1, &row, &id)) return s;
  if (row >= 0)
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: token id %d at row %d is outside [0, %d)", fn, id,
                     row, v);
  return ARL_OK;
}

// One block per row: out (T, C) = wte[tokens]. A token id outside [0, V) writes zeros and is a
// deferred error (no synchronize here: a decode step's embedding does not stall the host).
// (times: the decode chain's stamps, tail_times.cuh; null unless timed)
__global__ void embedding_forward_kernel(float* out, const int32_t* tokens, const float* wte,
                                         int32_t v, int32_t c, int* flag, int64_t* flag_index,
                                         unsigned long long* times) {
  arl::tail_stamp_start(times, arl::kTailEmbedStart);
  arl::pdl_trigger();  // a GEMV after it may start streaming its weights
  const int64_t row = blockIdx.x;
  const int32_t id = tokens[row];
  float* dst = out + row * c;
  if (id < 0 || id >= v) {
    if (threadIdx.x == 0)
      arl_set_flag(flag, flag_index, arl::kDeferredEmbeddingToken, (row << 32) | uint32_t(id));
    for (int32_t j = threadIdx.x; j < c; j += blockDim.x) dst[j] = 0.0f;
  } else {
    const float* src = wte + int64_t(id) * c;
    for (int32_t j = threadIdx.x; j < c; j += blockDim.x) dst[j] = src[j];
  }
  arl::tail_stamp_end(times, arl::kTailEmbedEnd);
}

// One block per row: dwte[tokens[row]] += dout[row] (atomics: tokens may repeat).
__global__ void embedding_backward_kernel(float* dwte, const float* dout, const int32_t* tokens,
                                          int32_t c) {
  const int64_t row = blockIdx.x;
  float* dst = dwte + int64_t(tokens[row]) * c;
  const float* src = dout + row * c;
  for (int32_t j = threadIdx.x; j < c; j += blockDim.x) atomicAdd(dst + j, src[j]);
}

// One block per row, sum of squares in double as on the CPU.
// (times: the decode chain's stamps, tail_times.cuh; null unless timed)
__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* x,
                                       const float* weight, int32_t c, float eps,
                                       unsigned long long* times) {
  __shared__ double shared[32];
  arl::tail_stamp_start(times, arl::kTailNormStart);
  arl::pdl_trigger();  // a GEMV after it may start streaming its weights
  const int64_t row = blockIdx.x;
  const float* xi = x + row * c;
  float* oi = out + row * c;
  double ss = 0;
  for (int32_t j = threadIdx.x; j < c; j += blockDim.x) ss += double(xi[j]) * xi[j];
  ss = block_sum_d(ss, shared);
  const float r = float(1.0 / sqrt(ss / c + eps));
  if (threadIdx.x == 0) rstd[row] = r;
  for (int32_t j = threadIdx.x; j < c; j += blockDim.x) oi[j] = xi[j] * r * weight[j];
  arl::tail_stamp_end(times, arl::kTailNormEnd);
}

// Rows blockIdx.x, +gridDim.x, ...: dx written. With partial non-null, each thread sums
// g x r (double) for the columns it owns over its block's rows, in shared memory when
// acc_in_shared (C doubles) or else directly in partial; partial (gridDim.x, C) gets the sums.
__global__ void rmsnorm_backward_kernel(float* dx, double* partial, const float* dout,
                                        const float* x, const float* rstd, const float* weight,
                                        int32_t t, int32_t c, int acc_in_shared) {
  extern __shared__ double acc_shared[];
  __shared__ double red[32];
  double* acc = nullptr;
  if (partial != nullptr) {
    acc = acc_in_shared ? acc_shared : partial + int64_t(blockIdx.x) * c;
    for (int32_t j = threadIdx.x; j < c; j += blockDim.x) acc[j] = 0.0;
  }
  for (int32_t i = blockIdx.x; i < t; i += gridDim.x) {
    const float* xi = x + int64_t(i) * c;
    const float* gi = dout + int64_t(i) * c;
    float* di = dx + int64_t(i) * c;
    const float r = rstd[i];
    // y = x r w; dx = r (g w) - r^3 x mean(g w x)
    double dot = 0;
    for (int32_t j = threadIdx.x; j < c; j += blockDim.x)
      dot += double(gi[j]) * weight[j] * xi[j];
    dot = block_sum_d(dot, red);
    const float k = float(dot / c) * r * r * r;
    for (int32_t j = threadIdx.x; j < c; j += blockDim.x) {
      const float g = gi[j], xv = xi[j];
      di[j] = r * g * weight[j] - k * xv;
      if (acc != nullptr) acc[j] += double(g) * xv * r;
    }
  }
  if (acc != nullptr && acc_in_shared)
    for (int32_t j = threadIdx.x; j < c; j += blockDim.x)
      partial[int64_t(blockIdx.x) * c + j] = acc[j];
}

// dweight (C) += sums over the nb rows of partial (nb, C): a (32, 8) block per 32 columns.
__global__ void rmsnorm_dweight_kernel(float* dweight, const double* partial, int32_t nb,
                                       int32_t c) {
  __shared__ double part[8][33];
  const int32_t j = blockIdx.x * 32 + threadIdx.x;
  double s = 0;
  if (j < c)
    for (int32_t b = threadIdx.y; b < nb; b += 8) s += partial[int64_t(b) * c + j];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < c) {
    double total = 0;
    for (int r = 0; r < 8; r++) total += part[r][threadIdx.x];
    dweight[j] += float(total);
  }
}

// One block per row: the pairs (j, j + half) of every head. With in_shared, the row's cos/sin
// are computed once into shared memory (d floats); else each pair computes its own.
// out may equal x (each pair is read, then written, by one thread). inv_freq (d/2), when given,
// replaces theta's frequencies (arl_rope_freqs); an entry that is not finite is flagged
// (kDeferredRopeFreq) and its rows (in shared memory: the whole row) are left unwritten.
__global__ void rope_kernel(float* out, const float* x, const int32_t* positions,
                            const float* inv_freq, int32_t h, int32_t d, float theta, double sign,
                            int in_shared, int* flag, int64_t* flag_index) {
  extern __shared__ float trig[];
  const int32_t half = d / 2;
  const int64_t row = blockIdx.x;
  if (positions[row] < 0) {  // reported at the next synchronizing call (see DeferredCode)
    if (threadIdx.x == 0) arl_set_flag(flag, flag_index, arl::kDeferredNegativePosition, row);
    return;
  }
  const double pos = double(positions[row]);
  if (in_shared) {
    __shared__ int bad;  // a table entry that is not finite: the row is flagged and skipped
    if (inv_freq) {
      if (threadIdx.x == 0) bad = 0;
      __syncthreads();
    }
    for (int32_t j = threadIdx.x; j < half; j += blockDim.x) {
      if (!inv_freq) {
        rope_trig(j, pos, theta, d, sign, &trig[j], &trig[half + j]);
        continue;
      }
      if (!isfinite(inv_freq[j])) {
        bad = 1;
        arl_set_flag(flag, flag_index, arl::kDeferredRopeFreq, j);
      }
      rope_trig_freq(pos, inv_freq[j], sign, &trig[j], &trig[half + j]);
    }
    __syncthreads();
    if (inv_freq && bad) return;
  }
  // Pair p = hh * half + j, advanced by blockDim.x without a division per step.
  const int32_t step_h = blockDim.x / half, step_j = blockDim.x % half;
  int64_t hh = threadIdx.x / half;
  int32_t j = threadIdx.x % half;
  for (; hh < h; hh += step_h, j += step_j) {
    if (j >= half) {
      j -= half;
      hh++;
      if (hh >= h) break;
    }
    float cs, sn;
    if (in_shared) {
      cs = trig[j];
      sn = trig[half + j];
    } else if (inv_freq) {
      if (!isfinite(inv_freq[j])) {
        arl_set_flag(flag, flag_index, arl::kDeferredRopeFreq, j);
        continue;
      }
      rope_trig_freq(pos, inv_freq[j], sign, &cs, &sn);
    } else {
      rope_trig(j, pos, theta, d, sign, &cs, &sn);
    }
    const int64_t base = (row * h + hh) * d;
    const float a = x[base + j], b = x[base + j + half];
    out[base + j] = a * cs - b * sn;
    out[base + j + half] = b * cs + a * sn;
  }
}

// The elementwise kernels below take four values a step (16-byte loads and stores) when every
// pointer is 16-byte aligned (vec), then the rest one by one; launched with vec_grid(n) blocks.
// Each value is computed as in the one-by-one loop, so results do not depend on the path.
bool aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

unsigned vec_grid(int64_t n) { return arl::grid_for((n + 3) / 4); }

__device__ inline float4 load4(const float* p, int64_t i) {
  return __ldg(reinterpret_cast<const float4*>(p) + i);
}

__device__ inline void store4(float* p, int64_t i, float4 v) {
  reinterpret_cast<float4*>(p)[i] = v;
}

__device__ inline float silu_of(float g) { return g / (1.0f + expf(-g)); }

__global__ void swiglu_forward_kernel(float* out, const float* gate, const float* up, int64_t n,
                                      bool vec) {
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t done = vec ? n / 4 * 4 : 0;
  if (vec)
    for (int64_t i = first; i < n / 4; i += stride) {
      const float4 g = load4(gate, i), u = load4(up, i);
      store4(out, i,
             make_float4(silu_of(g.x) * u.x, silu_of(g.y) * u.y, silu_of(g.z) * u.z,
                         silu_of(g.w) * u.w));
    }
  for (int64_t i = done + first; i < n; i += stride) out[i] = silu_of(gate[i]) * up[i];
}

// dgate, dup of one value.
__device__ inline void swiglu_grad(float& dgate, float& dup, float go, float g, float u) {
  const float s = 1.0f / (1.0f + expf(-g));
  dup = go * (g * s);
  dgate = go * u * s * (1.0f + g * (1.0f - s));
}

__global__ void swiglu_backward_kernel(float* dgate, float* dup, const float* dout,
                                       const float* gate, const float* up, int64_t n, bool vec) {
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t done = vec ? n / 4 * 4 : 0;
  if (vec)
    for (int64_t i = first; i < n / 4; i += stride) {
      const float4 go = load4(dout, i), g = load4(gate, i), u = load4(up, i);
      float4 dg, du;
      swiglu_grad(dg.x, du.x, go.x, g.x, u.x);
      swiglu_grad(dg.y, du.y, go.y, g.y, u.y);
      swiglu_grad(dg.z, du.z, go.z, g.z, u.z);
      swiglu_grad(dg.w, du.w, go.w, g.w, u.w);
      store4(dgate, i, dg);
      store4(dup, i, du);
    }
  for (int64_t i = done + first; i < n; i += stride)
    swiglu_grad(dgate[i], dup[i], dout[i], gate[i], up[i]);
}

// out may alias a or b.
__global__ void add_kernel(float* out, const float* a, const float* b, int64_t n, bool vec) {
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t done = vec ? n / 4 * 4 : 0;
  if (vec)
    for (int64_t i = first; i < n / 4; i += stride) {
      const float4 x = reinterpret_cast<const float4*>(a)[i];
      const float4 y = reinterpret_cast<const float4*>(b)[i];
      store4(out, i, make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
    }
  for (int64_t i = done + first; i < n; i += stride) out[i] = a[i] + b[i];
}

// Threads per block for the per-row kernels.
constexpr int kRowBlock = 256;

}  // namespace

extern "C" {

arl_status arl_embedding_forward(arl_ctx* ctx, float* out, const int32_t* tokens,
                                 const float* wte, int32_t t, int32_t v, int32_t c) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, tokens);
  ARL_NOT_NULL(ctx, wte);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, v, c);
  ARL_PRODUCT(ctx, t, c);
  embedding_forward_kernel<<<t, kRowBlock, 0, ctx->stream>>>(
      out, tokens, wte, v, c, ctx->flag, ctx->flag_index, arl::decode_chain_times(ctx));
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_embedding_backward(arl_ctx* ctx, float* dwte, const float* dout,
                                  const int32_t* tokens, int32_t t, int32_t v, int32_t c) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dwte);
  ARL_NOT_NULL(ctx, dout);
  ARL_NOT_NULL(ctx, tokens);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, v);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, v, c);
  ARL_PRODUCT(ctx, t, c);
  if (arl_status s = check_tokens(ctx, __func__, tokens, t, v)) return s;
  embedding_backward_kernel<<<t, kRowBlock, 0, ctx->stream>>>(dwte, dout, tokens, c);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_rmsnorm_forward(arl_ctx* ctx, float* out, float* rstd, const float* x,
                               const float* weight, int32_t t, int32_t c, float eps) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, rstd);
  ARL_NOT_NULL(ctx, x);
  ARL_NOT_NULL(ctx, weight);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  if (!(eps >= 0.0f) || !std::isfinite(eps))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: eps must be finite and >= 0, got %g", __func__,
                     double(eps));
  rmsnorm_forward_kernel<<<t, kRowBlock, 0, ctx->stream>>>(out, rstd, x, weight, c, eps,
                                                            arl::decode_chain_times(ctx));
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_rmsnorm_backward(arl_ctx* ctx, float* dx, float* dweight, const float* dout,
                                const float* x, const float* rstd, const float* weight,
                                int32_t t, int32_t c) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dx);
  ARL_NOT_NULL(ctx, dout);
  ARL_NOT_NULL(ctx, x);
  ARL_NOT_NULL(ctx, rstd);
  ARL_NOT_NULL(ctx, weight);
  ARL_POSITIVE(ctx, t);
  ARL_POSITIVE(ctx, c);
  ARL_PRODUCT(ctx, t, c);
  // A few blocks per SM, each over many rows, so that dweight's partial sums stay small.
  const int32_t per_sm = dweight != nullptr ? 4 : 8;
  int64_t nb = int64_t(ctx->num_sms) * per_sm;
  if (dweight != nullptr && nb * c > (int64_t(1) << 22)) nb = (int64_t(1) << 22) / c;  // 32 MiB
  nb = nb < 1 ? 1 : (nb > t ? t : nb);
  double* partial = nullptr;
  if (dweight != nullptr) {
    partial = static_cast<double*>(
        arl::scratch(ctx, __func__, size_t(nb) * size_t(c) * sizeof(double)));
    if (partial == nullptr) return ARL_ERR_ALLOC;
  }
  // Per-thread column sums in shared memory when C doubles fit the default 48 KiB (less the
  // kernel's static 256 bytes).
  const int in_shared = dweight != nullptr && size_t(c) * sizeof(double) <= 46 * 1024;
  const size_t smem = in_shared ? size_t(c) * sizeof(double) : 0;
  rmsnorm_backward_kernel<<<unsigned(nb), kRowBlock, smem, ctx->stream>>>(
      dx, partial, dout, x, rstd, weight, t, c, in_shared);
  ARL_LAUNCHED(ctx);
  if (dweight != nullptr) {
    rmsnorm_dweight_kernel<<<(c + 31) / 32, dim3(32, 8), 0, ctx->stream>>>(
        dweight, partial, int32_t(nb), c);
    ARL_LAUNCHED(ctx);
  }
  return ARL_OK;
}

// arl_rope's and arl_rope_freqs' kernel (arguments checked): the row's cos/sin in shared memory
// where d floats fit. Negative positions are flagged by the kernel, not checked here: a
// synchronize per call would stall decoding (see arl::DeferredCode).
static arl_status launch_rope(arl_ctx* ctx, float* out, const float* x, const int32_t* positions,
                              const float* inv_freq, int32_t t, int32_t h, int32_t d,
                              float theta, int32_t inverse) {
  const int in_shared = size_t(d) * sizeof(float) <= 48 * 1024;
  rope_kernel<<<t, kRowBlock, in_shared ? size_t(d) * sizeof(float) : 0, ctx->stream>>>(
      out, x, positions, inv_freq, h, d, theta, inverse ? -1.0 : 1.0, in_shared, ctx->flag,
      ctx->flag_index);
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_rope(arl_ctx* ctx, float* out, const float* x, const int32_t* positions,
                    int32_t t, int32_t h, int32_t d, float theta, int32_t inverse) {
  ARL_CTX(ctx);
  ARL_ROPE_ARGS(ctx, out, x, positions, t, h, d);
  if (!(theta > 0.0f) || !std::isfinite(theta))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: theta must be finite and > 0", __func__);
  return launch_rope(ctx, out, x, positions, nullptr, t, h, d, theta, inverse);
}

arl_status arl_rope_freqs(arl_ctx* ctx, float* out, const float* x, const int32_t* positions,
                          const float* inv_freq, int32_t t, int32_t h, int32_t d,
                          int32_t inverse) {
  ARL_CTX(ctx);
  ARL_ROPE_ARGS(ctx, out, x, positions, t, h, d);
  ARL_NOT_NULL(ctx, inv_freq);
  // (the table is in device memory: the kernel flags an entry that is not finite, a deferred
  // error, and skips the rows)
  return launch_rope(ctx, out, x, positions, inv_freq, t, h, d, 0.0f, inverse);
}

arl_status arl_swiglu_forward(arl_ctx* ctx, float* out, const float* gate, const float* up,
                              int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, gate);
  ARL_NOT_NULL(ctx, up);
  ARL_COUNT(ctx, n);
  swiglu_forward_kernel<<<vec_grid(n), arl::kBlock, 0, ctx->stream>>>(
      out, gate, up, n, aligned16({out, gate, up}));
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_swiglu_backward(arl_ctx* ctx, float* dgate, float* dup, const float* dout,
                               const float* gate, const float* up, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, dgate);
  ARL_NOT_NULL(ctx, dup);
  ARL_NOT_NULL(ctx, dout);
  ARL_NOT_NULL(ctx, gate);
  ARL_NOT_NULL(ctx, up);
  ARL_COUNT(ctx, n);
  swiglu_backward_kernel<<<vec_grid(n), arl::kBlock, 0, ctx->stream>>>(
      dgate, dup, dout, gate, up, n, aligned16({dgate, dup, dout, gate, up}));
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

arl_status arl_add(arl_ctx* ctx, float* out, const float* a, const float* b, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, a);
  ARL_NOT_NULL(ctx, b);
  ARL_COUNT(ctx, n);
  add_kernel<<<vec_grid(n), arl::kBlock, 0, ctx->stream>>>(out, a, b, n, aligned16({out, a, b}));
  ARL_LAUNCHED(ctx);
  return ARL_OK;
}

}  // extern "C"
