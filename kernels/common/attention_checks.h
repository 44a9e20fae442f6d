// Argument checks of the packed attention entry points (fp32 and bf16), shared by the CPU and
// CUDA libraries. Macros, so that each expands in its entry point and messages name it.
#pragma once

#include "checks.h"

#define ARL_ATTENTION_SHAPE_CHECKS \
  ARL_NOT_NULL(ctx, q);            \
  ARL_NOT_NULL(ctx, k);            \
  ARL_NOT_NULL(ctx, v);            \
  ARL_NOT_NULL(ctx, cu_seqlens);   \
  ARL_POSITIVE(ctx, b);            \
  ARL_POSITIVE(ctx, t);            \
  ARL_POSITIVE(ctx, hq);           \
  ARL_POSITIVE(ctx, hkv);          \
  ARL_POSITIVE(ctx, d);            \
  ARL_PRODUCT(ctx, int64_t(t) * hq, d)

#define ARL_ATTENTION_FORWARD_CHECKS \
  ARL_CTX(ctx);                      \
  ARL_NOT_NULL(ctx, out);            \
  ARL_NOT_NULL(ctx, lse);            \
  ARL_ATTENTION_SHAPE_CHECKS

#define ARL_ATTENTION_BACKWARD_CHECKS \
  ARL_CTX(ctx);                       \
  ARL_NOT_NULL(ctx, dq);              \
  ARL_NOT_NULL(ctx, dk);              \
  ARL_NOT_NULL(ctx, dv);              \
  ARL_NOT_NULL(ctx, dout);            \
  ARL_NOT_NULL(ctx, q);               \
  ARL_NOT_NULL(ctx, k);               \
  ARL_NOT_NULL(ctx, v);               \
  ARL_NOT_NULL(ctx, out);             \
  ARL_NOT_NULL(ctx, lse);             \
  ARL_ATTENTION_SHAPE_CHECKS
