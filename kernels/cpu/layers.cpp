// Token embedding, RMSNorm, RoPE, SwiGLU, residual add and the value head.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <omp.h>

#include "common.h"
#include "vec_math.h"

namespace {

arl_status check_tokens(arl_ctx* ctx, const char* fn, const int32_t* tokens, int32_t t,
                        int32_t v) {
  for (int32_t i = 0; i < t; i++) {
    if (tokens[i] < 0 || tokens[i] >= v)
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: token id %d at row %d is outside [0, %d)", fn,
                       tokens[i], i, v);
  }
  return ARL_OK;
}

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
  if (arl_status s = check_tokens(ctx, __func__, tokens, t, v)) return s;
#pragma omp parallel for num_threads(ctx->num_threads) if (int64_t(t) * c > (1 << 15))
  for (int32_t i = 0; i < t; i++)
    std::memcpy(out + int64_t(i) * c, wte + int64_t(tokens[i]) * c, sizeof(float) * size_t(c));
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
  // Threads own disjoint column ranges, so repeated tokens never race.
#pragma omp parallel num_threads(ctx->num_threads) if (int64_t(t) * c > (1 << 15))
  {
    const int nth = omp_get_num_threads(), id = omp_get_thread_num();
    const int32_t c0 = int32_t(int64_t(c) * id / nth), c1 = int32_t(int64_t(c) * (id + 1) / nth);
    for (int32_t i = 0; i < t; i++) {
      float* dst = dwte + int64_t(tokens[i]) * c;
      const float* src = dout + int64_t(i) * c;
      for (int32_t j = c0; j < c1; j++) dst[j] += src[j];
    }
  }
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
#pragma omp parallel for num_threads(ctx->num_threads) if (int64_t(t) * c > (1 << 14))
  for (int32_t i = 0; i < t; i++) {
    const float* xi = x + int64_t(i) * c;
    float* oi = out + int64_t(i) * c;
    double ss = 0;
    for (int32_t j = 0; j < c; j++) ss += double(xi[j]) * xi[j];
    const float r = float(1.0 / std::sqrt(ss / c + eps));
    rstd[i] = r;
    for (int32_t j = 0; j < c; j++) oi[j] = xi[j] * r * weight[j];
  }
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
  return arl::guarded(ctx, __func__, [&] {
    const int nth = ctx->num_threads;
    std::vector<double> partial(dweight != nullptr ? size_t(nth) * c : 0, 0.0);
#pragma omp parallel num_threads(nth) if (int64_t(t) * c > (1 << 14))
    {
      const int id = omp_get_thread_num();
      double* dw = dweight != nullptr ? partial.data() + size_t(id) * c : nullptr;
#pragma omp for schedule(static)
      for (int32_t i = 0; i < t; i++) {
        const float* xi = x + int64_t(i) * c;
        const float* gi = dout + int64_t(i) * c;
        float* di = dx + int64_t(i) * c;
        const float r = rstd[i];
        // y = x r w; dx = r (g w) - r^3 x mean(g w x)
        double dot = 0;
        for (int32_t j = 0; j < c; j++) dot += double(gi[j]) * weight[j] * xi[j];
        const float k = float(dot / c) * r * r * r;
        for (int32_t j = 0; j < c; j++) di[j] = r * gi[j] * weight[j] - k * xi[j];
        if (dw != nullptr)
          for (int32_t j = 0; j < c; j++) dw[j] += double(gi[j]) * xi[j] * r;
      }
    }
    if (dweight != nullptr) {
      for (int32_t j = 0; j < c; j++) {
        double s = 0;
        for (int id = 0; id < nth; id++) s += partial[size_t(id) * c + j];
        dweight[j] += float(s);
      }
    }
  });
}

namespace {

// One row's cosines (cs[0, half)) and sines (cs[half, d)) at a position.
inline void rope_trig(float* cs, int32_t position, const double* inv_freq, int32_t half,
                      double sign) {
  for (int32_t j = 0; j < half; j++) {
    const double angle = double(position) * inv_freq[j];
    cs[j] = float(std::cos(angle));
    cs[half + j] = float(sign * std::sin(angle));
  }
}

// Rotates one row's h heads by the cosines and sines at cs.
inline void rope_row(float* out, const float* x, const float* cs, int32_t h, int32_t d) {
  const int32_t half = d / 2;
  const float* sn = cs + half;
  for (int32_t hh = 0; hh < h; hh++) {
    const float* xi = x + int64_t(hh) * d;
    float* oi = out + int64_t(hh) * d;
    for (int32_t j = 0; j < half; j++) {
      const float a = xi[j], b = xi[j + half];
      oi[j] = a * cs[j] - b * sn[j];
      oi[j + half] = b * cs[j] + a * sn[j];
    }
  }
}

// The rows of arl_rope and arl_rope_freqs: pair (j, j + half) rotated by positions[i] times
// table[j], or theta^(-2j/d) without a table (arguments checked by the caller). When the rows
// repeat positions (packed sequences, decode steps at one length), each position's cosines and
// sines are computed once; the values are the same either way.
arl_status rope_rows(arl_ctx* ctx, const char* fn, float* out, const float* x,
                     const int32_t* positions, const float* table, float theta, int32_t t,
                     int32_t h, int32_t d, int32_t inverse) {
  int32_t lo = INT32_MAX, hi = 0;
  for (int32_t i = 0; i < t; i++) {
    if (positions[i] < 0)
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: position %d at row %d is negative", fn,
                       positions[i], i);
    lo = std::min(lo, positions[i]);
    hi = std::max(hi, positions[i]);
  }
  const int32_t half = d / 2;
  const double sign = inverse ? -1.0 : 1.0;
  const int64_t span = t > 0 ? int64_t(hi) - lo + 1 : 0;
  const int64_t row = int64_t(h) * d;
  const bool parallel = int64_t(t) * row > (1 << 14);
  return arl::guarded(ctx, fn, [&] {
    std::vector<double> inv_freq(static_cast<size_t>(half));
    for (int32_t j = 0; j < half; j++)
      inv_freq[j] = table ? double(table[j]) : std::pow(double(theta), -2.0 * j / d);
    if (span < t) {  // fewer distinct positions than rows: a table of the span's
      std::vector<float> trig(size_t(span) * size_t(d));
#pragma omp parallel num_threads(ctx->num_threads) if (parallel)
      {
#pragma omp for
        for (int64_t p = 0; p < span; p++)
          rope_trig(trig.data() + p * d, int32_t(lo + p), inv_freq.data(), half, sign);
#pragma omp for
        for (int32_t i = 0; i < t; i++)
          rope_row(out + i * row, x + i * row, trig.data() + int64_t(positions[i] - lo) * d, h, d);
      }
      return;
    }
    std::vector<float> trig(size_t(d) * size_t(ctx->num_threads));
#pragma omp parallel for num_threads(ctx->num_threads) if (parallel)
    for (int32_t i = 0; i < t; i++) {
      float* cs = trig.data() + size_t(d) * size_t(omp_get_thread_num());
      rope_trig(cs, positions[i], inv_freq.data(), half, sign);
      rope_row(out + i * row, x + i * row, cs, h, d);
    }
  });
}

}  // namespace

arl_status arl_rope(arl_ctx* ctx, float* out, const float* x, const int32_t* positions,
                    int32_t t, int32_t h, int32_t d, float theta, int32_t inverse) {
  ARL_CTX(ctx);
  ARL_ROPE_ARGS(ctx, out, x, positions, t, h, d);
  if (!(theta > 0.0f) || !std::isfinite(theta))
    return arl::fail(ctx, ARL_ERR_VALUE, "%s: theta must be finite and > 0", __func__);
  return rope_rows(ctx, __func__, out, x, positions, nullptr, theta, t, h, d, inverse);
}

arl_status arl_rope_freqs(arl_ctx* ctx, float* out, const float* x, const int32_t* positions,
                          const float* inv_freq, int32_t t, int32_t h, int32_t d,
                          int32_t inverse) {
  ARL_CTX(ctx);
  ARL_ROPE_ARGS(ctx, out, x, positions, t, h, d);
  ARL_NOT_NULL(ctx, inv_freq);
  if (arl_status st = arl::check_inv_freq(ctx, __func__, inv_freq, d)) return st;
  return rope_rows(ctx, __func__, out, x, positions, inv_freq, 0.0f, t, h, d, inverse);
}

arl_status arl_swiglu_forward(arl_ctx* ctx, float* out, const float* gate, const float* up,
                              int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, gate);
  ARL_NOT_NULL(ctx, up);
  ARL_COUNT(ctx, n);
#pragma omp parallel for num_threads(ctx->num_threads) if (n > (1 << 15)) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
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
#pragma omp parallel for num_threads(ctx->num_threads) if (n > (1 << 15)) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    const float g = gate[i];
    const float s = 1.0f / (1.0f + std::exp(-g));
    const float silu = g * s;
    dup[i] = dout[i] * silu;
    dgate[i] = dout[i] * up[i] * s * (1.0f + g * (1.0f - s));
  }
  return ARL_OK;
}

arl_status arl_add(arl_ctx* ctx, float* out, const float* a, const float* b, int64_t n) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, a);
  ARL_NOT_NULL(ctx, b);
  ARL_COUNT(ctx, n);
#pragma omp parallel for num_threads(ctx->num_threads) if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
  return ARL_OK;
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
#pragma omp parallel for num_threads(ctx->num_threads) if (int64_t(t) * c > (1 << 15))
  for (int32_t i = 0; i < t; i++) values[i] = arl::vdot(h + int64_t(i) * c, w, c) + bias;
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
#pragma omp parallel for num_threads(ctx->num_threads) if (int64_t(t) * c > (1 << 15))
    for (int32_t i = 0; i < t; i++)
      for (int32_t j = 0; j < c; j++) dh[int64_t(i) * c + j] = dvalues[i] * w[j];
  }
  if (dw != nullptr) {
#pragma omp parallel for num_threads(ctx->num_threads) if (int64_t(t) * c > (1 << 15))
    for (int32_t j = 0; j < c; j++) {
      double s = 0;
      for (int32_t i = 0; i < t; i++) s += double(dvalues[i]) * h[int64_t(i) * c + j];
      dw[j] += float(s);
    }
  }
  if (dbias != nullptr) {
    double s = 0;
    for (int32_t i = 0; i < t; i++) s += dvalues[i];
    *dbias += float(s);
  }
  return ARL_OK;
}

}  // extern "C"
