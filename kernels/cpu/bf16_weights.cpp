// Mixed-precision entry points (bf16 weights): the CPU library widens the
// weights to fp32 and runs the fp32 kernel, so its results are the exact fp32
// math on the bf16-rounded weights (the reference the CUDA library is checked
// against).
#include <cstring>
#include <vector>

#include "common.h"

namespace {

// w (rows, cols) in bf16 -> fp32 (bf16 is the high half of an fp32 word).
std::vector<float> widen(const uint16_t* w, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    const uint32_t bits = uint32_t(w[i]) << 16;
    std::memcpy(&out[size_t(i)], &bits, sizeof(bits));
  }
  return out;
}

// Widens w (rows, cols) and runs call(widened weights) (a status), or fails when out of memory.
template <class F>
arl_status with_widened(arl_ctx* ctx, const char* fn, const uint16_t* w, int64_t rows,
                        int64_t cols, F&& call) {
  std::vector<float> w32;
  if (arl_status s = arl::guarded(ctx, fn, [&] { w32 = widen(w, rows, cols); })) return s;
  return call(w32.data());
}

}  // namespace

// Checks the weights before widening them (the fp32 entry point checks the rest).
#define ARL_BF16_WEIGHTS(ctx, w, rows, cols) \
  do {                                       \
    ARL_NOT_NULL(ctx, w);                    \
    ARL_POSITIVE(ctx, rows);                 \
    ARL_POSITIVE(ctx, cols);                 \
    ARL_PRODUCT(ctx, rows, cols);            \
  } while (0)

extern "C" {

arl_status arl_linear_forward_bf16(arl_ctx* ctx, float* y, const float* x, const uint16_t* w,
                                   const float* bias, int32_t m, int32_t n, int32_t k,
                                   int32_t accumulate) {
  ARL_CTX(ctx);
  ARL_BF16_WEIGHTS(ctx, w, n, k);
  return with_widened(ctx, __func__, w, n, k, [&](const float* w32) {
    return arl_linear_forward(ctx, y, x, w32, bias, m, n, k, accumulate);
  });
}

arl_status arl_linear_backward_bf16(arl_ctx* ctx, float* dx, float* dw, float* dbias,
                                    const float* dy, const float* x, const uint16_t* w,
                                    int32_t m, int32_t n, int32_t k, int32_t accumulate_dx) {
  ARL_CTX(ctx);
  if (dx == nullptr)  // w is only read for dx
    return arl_linear_backward(ctx, dx, dw, dbias, dy, x, nullptr, m, n, k, accumulate_dx);
  ARL_BF16_WEIGHTS(ctx, w, n, k);
  return with_widened(ctx, __func__, w, n, k, [&](const float* w32) {
    return arl_linear_backward(ctx, dx, dw, dbias, dy, x, w32, m, n, k, accumulate_dx);
  });
}

arl_status arl_logprob_forward_bf16(arl_ctx* ctx, float* logp, float* entropy, float* lse,
                                    const float* h, const int32_t* targets, const uint16_t* w,
                                    int32_t t, int32_t v, int32_t c, float temperature) {
  ARL_CTX(ctx);
  ARL_BF16_WEIGHTS(ctx, w, v, c);
  return with_widened(ctx, __func__, w, v, c, [&](const float* w32) {
    return arl_logprob_forward(ctx, logp, entropy, lse, h, targets, w32, t, v, c, temperature);
  });
}

arl_status arl_logprob_backward_bf16(arl_ctx* ctx, float* dh, float* dw, const float* dlogp,
                                     const float* dentropy, const float* h,
                                     const int32_t* targets, const uint16_t* w, const float* lse,
                                     const float* entropy, int32_t t, int32_t v, int32_t c,
                                     float temperature) {
  ARL_CTX(ctx);
  ARL_BF16_WEIGHTS(ctx, w, v, c);
  return with_widened(ctx, __func__, w, v, c, [&](const float* w32) {
    return arl_logprob_backward(ctx, dh, dw, dlogp, dentropy, h, targets, w32, lse, entropy, t,
                                v, c, temperature);
  });
}

arl_status arl_lm_head_bf16(arl_ctx* ctx, float* logits, const float* h, const uint16_t* w,
                            int32_t t, int32_t v, int32_t c) {
  ARL_CTX(ctx);
  ARL_BF16_WEIGHTS(ctx, w, v, c);
  return with_widened(ctx, __func__, w, v, c, [&](const float* w32) {
    return arl_lm_head(ctx, logits, h, w32, t, v, c);
  });
}

}  // extern "C"
