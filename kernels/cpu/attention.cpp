// Causal grouped-query attention over packed variable-length sequences, its
// backward pass (scores recomputed from the saved log-sum-exp), and attention
// of new tokens against a KV cache.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "../common/attention_checks.h"
#include "common.h"
#include "sgemm.h"
#include "vec_math.h"

namespace {

// Query rows per attention block (the GEMMs' M).
constexpr int32_t kBlockRows = 64;

arl_status check_heads(arl_ctx* ctx, const char* fn, int32_t hq, int32_t hkv) {
  if (hq % hkv != 0)
    return arl::fail(ctx, ARL_ERR_SIZE, "%s: query heads %d must be a multiple of kv heads %d",
                     fn, hq, hkv);
  return ARL_OK;
}

// The most query heads a kv head takes grouped (attend_group's softmax sums)
constexpr int32_t kMaxGroup = 64;

// Decode attention for the query heads h0 .. h0+group-1 of one query, which share one kv head's
// keys and values (grouped-query attention; group 1: one head): out (group x D) =
// softmax(scale q.K^T) V over n keys. The keys go in chunks that stay in L1 while every head uses
// them, so they and the values are read once for the group, not once a head. A head's bits do not
// depend on the group or the chunks: vdot_keys' keys are independent (chunks of a multiple of 4
// keys) and vaxpy_keys adds key after key into out. scores has room for group x n.
void attend_group(float* out, float* scores, const float* q, const float* k, const float* v,
                  int32_t group, int32_t n, int32_t d, float scale) {
  const int32_t chunk = std::max(4, (4096 / std::max(d, 1)) & ~3);  // 16 KB of keys
  for (int32_t j0 = 0; j0 < n; j0 += chunk) {
    const int32_t m = std::min(chunk, n - j0);
    for (int32_t h = 0; h < group; h++) {
      arl::vdot_keys(scores + size_t(h) * n + j0, q + size_t(h) * d, k + int64_t(j0) * d, d, m, d,
                     scale);
    }
  }
  float inv_sums[kMaxGroup];
  for (int32_t h = 0; h < group; h++) {
    float* sh = scores + size_t(h) * n;
    const float mx = arl::vmax(sh, n);
    inv_sums[h] = float(1.0 / arl::vexp_store(sh, sh, n, mx));
    std::memset(out + size_t(h) * d, 0, sizeof(float) * size_t(d));
  }
  for (int32_t j0 = 0; j0 < n; j0 += chunk) {
    const int32_t m = std::min(chunk, n - j0);
    for (int32_t h = 0; h < group; h++) {
      arl::vaxpy_keys(out + size_t(h) * d, scores + size_t(h) * n + j0, inv_sums[h],
                      v + int64_t(j0) * d, d, m, d);
    }
  }
}

}  // namespace

extern "C" {

arl_status arl_attention_forward(arl_ctx* ctx, float* out, float* lse, const float* q,
                                 const float* k, const float* v, const int32_t* cu_seqlens,
                                 int32_t b, int32_t t, int32_t hq, int32_t hkv, int32_t d,
                                 float scale) {
  ARL_ATTENTION_FORWARD_CHECKS;
  if (arl_status s = check_heads(ctx, __func__, hq, hkv)) return s;
  if (arl_status s = arl::check_cu_seqlens(ctx, __func__, cu_seqlens, b, t)) return s;
  const int32_t group = hq / hkv;
  const int64_t kv_stride = int64_t(hkv) * d;
  return arl::guarded(ctx, __func__, [&] {
    // Tasks: (sequence, query head, block of BR rows). Each block is two GEMMs on
    // the calling thread: S = scale Q K^T over the keys it can see, then O = P V.
    struct Task { int32_t s, h, r0, r1; };
    std::vector<Task> tasks;
    int32_t max_len = 1;
    for (int32_t s = 0; s < b; s++) {
      const int32_t len = cu_seqlens[s + 1] - cu_seqlens[s];
      max_len = std::max(max_len, len);
      for (int32_t h = 0; h < hq; h++)
        for (int32_t r0 = 0; r0 < len; r0 += kBlockRows)
          tasks.push_back({s, h, r0, std::min(len, r0 + kBlockRows)});
    }
    // Scratch is allocated here, outside the parallel region, so that running out
    // of memory becomes ARL_ERR_ALLOC instead of terminating the process.
    const size_t room = size_t(kBlockRows) * size_t(max_len) + arl::sgemm_serial_scratch_floats();
    std::vector<float> scratch(room * size_t(ctx->num_threads));
    const int ldq = hq * d;
#pragma omp parallel num_threads(ctx->num_threads) if (int64_t(t) * hq * d > (1 << 14))
    {
      float* sbuf = scratch.data() + room * size_t(omp_get_thread_num());
      float* gemm_scratch = sbuf + size_t(kBlockRows) * size_t(max_len);
#pragma omp for schedule(dynamic, 1)
      for (size_t ti = 0; ti < tasks.size(); ti++) {
        const Task task = tasks[ti];
        const int32_t base = cu_seqlens[task.s];
        const int32_t kvh = task.h / group;
        const int32_t nr = task.r1 - task.r0, nk = task.r1;
        const float* qb = q + (int64_t(base + task.r0) * hq + task.h) * d;
        const float* kb = k + int64_t(base) * kv_stride + int64_t(kvh) * d;
        const float* vb = v + int64_t(base) * kv_stride + int64_t(kvh) * d;
        arl::sgemm_serial(false, true, nr, nk, d, scale, qb, ldq, kb, int(kv_stride), 0.0f, sbuf,
                          nk, gemm_scratch);
        for (int32_t i = 0; i < nr; i++) {
          float* row = sbuf + int64_t(i) * nk;
          const int32_t valid = task.r0 + i + 1;
          const float m = arl::vmax(row, valid);
          const double sum = arl::vexp_store(row, row, valid, m);
          const float inv = float(1.0 / sum);
          for (int32_t j = 0; j < valid; j++) row[j] *= inv;
          for (int32_t j = valid; j < nk; j++) row[j] = 0.0f;
          lse[int64_t(task.h) * t + base + task.r0 + i] = m + float(std::log(sum));
        }
        float* ob = out + (int64_t(base + task.r0) * hq + task.h) * d;
        arl::sgemm_serial(false, false, nr, d, nk, 1.0f, sbuf, nk, vb, int(kv_stride), 0.0f, ob,
                          ldq, gemm_scratch);
      }
    }
  });
}

arl_status arl_attention_backward(arl_ctx* ctx, float* dq, float* dk, float* dv,
                                  const float* dout, const float* q, const float* k,
                                  const float* v, const float* out, const float* lse,
                                  const int32_t* cu_seqlens, int32_t b, int32_t t, int32_t hq,
                                  int32_t hkv, int32_t d, float scale) {
  ARL_ATTENTION_BACKWARD_CHECKS;
  if (arl_status s = check_heads(ctx, __func__, hq, hkv)) return s;
  if (arl_status s = arl::check_cu_seqlens(ctx, __func__, cu_seqlens, b, t)) return s;
  const int32_t group = hq / hkv;
  const int64_t kv_stride = int64_t(hkv) * d;
  return arl::guarded(ctx, __func__, [&] {
    // A task owns one (sequence, kv head): its dk/dv rows are touched by no other
    // task. Per block of query rows: recompute P from the saved log-sum-exp, then
    // dV += P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO O)) scale, dQ = dS K,
    // dK += dS^T Q, all as GEMMs on the calling thread.
    int32_t max_len = 1;
    for (int32_t s = 0; s < b; s++) max_len = std::max(max_len, cu_seqlens[s + 1] - cu_seqlens[s]);
    const size_t block = size_t(kBlockRows) * size_t(max_len);
    const size_t room = 2 * block + arl::sgemm_serial_scratch_floats();
    std::vector<float> scratch(room * size_t(ctx->num_threads));
    const int ldq = hq * d;
#pragma omp parallel num_threads(ctx->num_threads) if (int64_t(t) * hq * d > (1 << 12))
    {
      float* pbuf = scratch.data() + room * size_t(omp_get_thread_num());
      float* dpbuf = pbuf + block;
      float* gemm_scratch = dpbuf + block;
#pragma omp for schedule(dynamic, 1) collapse(2)
      for (int32_t s = 0; s < b; s++) {
        for (int32_t kvh = 0; kvh < hkv; kvh++) {
          const int32_t base = cu_seqlens[s];
          const int32_t len = cu_seqlens[s + 1] - base;
          if (len == 0) continue;
          const float* kb = k + int64_t(base) * kv_stride + int64_t(kvh) * d;
          const float* vb = v + int64_t(base) * kv_stride + int64_t(kvh) * d;
          float* dkb = dk + int64_t(base) * kv_stride + int64_t(kvh) * d;
          float* dvb = dv + int64_t(base) * kv_stride + int64_t(kvh) * d;
          for (int32_t j = 0; j < len; j++) {
            std::memset(dkb + j * kv_stride, 0, sizeof(float) * size_t(d));
            std::memset(dvb + j * kv_stride, 0, sizeof(float) * size_t(d));
          }
          for (int32_t h = kvh * group; h < (kvh + 1) * group; h++) {
            for (int32_t r0 = 0; r0 < len; r0 += kBlockRows) {
              const int32_t r1 = std::min(len, r0 + kBlockRows);
              const int32_t nr = r1 - r0, nk = r1;
              const int64_t row0 = int64_t(base + r0) * hq + h;
              const float* qb = q + row0 * d;
              const float* gb = dout + row0 * d;
              const float* ob = out + row0 * d;
              float* dqb = dq + row0 * d;
              arl::sgemm_serial(false, true, nr, nk, d, scale, qb, ldq, kb, int(kv_stride), 0.0f,
                                pbuf, nk, gemm_scratch);
              for (int32_t i = 0; i < nr; i++) {
                float* row = pbuf + int64_t(i) * nk;
                const int32_t valid = r0 + i + 1;
                arl::vexp_store(row, row, valid, lse[int64_t(h) * t + base + r0 + i]);
                for (int32_t j = valid; j < nk; j++) row[j] = 0.0f;
              }
              arl::sgemm_serial(true, false, nk, d, nr, 1.0f, pbuf, nk, gb, ldq, 1.0f, dvb,
                                int(kv_stride), gemm_scratch);
              arl::sgemm_serial(false, true, nr, nk, d, 1.0f, gb, ldq, vb, int(kv_stride), 0.0f,
                                dpbuf, nk, gemm_scratch);
              for (int32_t i = 0; i < nr; i++) {
                const float di = arl::vdot(gb + int64_t(i) * ldq, ob + int64_t(i) * ldq, d);
                float* prow = pbuf + int64_t(i) * nk;
                const float* dprow = dpbuf + int64_t(i) * nk;
                for (int32_t j = 0; j < nk; j++) prow[j] = prow[j] * (dprow[j] - di) * scale;
              }
              arl::sgemm_serial(false, false, nr, d, nk, 1.0f, pbuf, nk, kb, int(kv_stride), 0.0f,
                                dqb, ldq, gemm_scratch);
              arl::sgemm_serial(true, false, nk, d, nr, 1.0f, pbuf, nk, qb, ldq, 1.0f, dkb,
                                int(kv_stride), gemm_scratch);
            }
          }
        }
      }
    }
  });
}

// The bf16 calls compute exactly as the fp32 ones here (the CPU has no bf16 products); they
// check their arguments under their own names first.
arl_status arl_attention_forward_bf16(arl_ctx* ctx, float* out, float* lse, const float* q,
                                      const float* k, const float* v, const int32_t* cu_seqlens,
                                      int32_t b, int32_t t, int32_t hq, int32_t hkv, int32_t d,
                                      float scale) {
  ARL_ATTENTION_FORWARD_CHECKS;
  if (arl_status s = check_heads(ctx, __func__, hq, hkv)) return s;
  if (arl_status s = arl::check_cu_seqlens(ctx, __func__, cu_seqlens, b, t)) return s;
  return arl_attention_forward(ctx, out, lse, q, k, v, cu_seqlens, b, t, hq, hkv, d, scale);
}

arl_status arl_attention_backward_bf16(arl_ctx* ctx, float* dq, float* dk, float* dv,
                                       const float* dout, const float* q, const float* k,
                                       const float* v, const float* out, const float* lse,
                                       const int32_t* cu_seqlens, int32_t b, int32_t t,
                                       int32_t hq, int32_t hkv, int32_t d, float scale) {
  ARL_ATTENTION_BACKWARD_CHECKS;
  if (arl_status s = check_heads(ctx, __func__, hq, hkv)) return s;
  if (arl_status s = arl::check_cu_seqlens(ctx, __func__, cu_seqlens, b, t)) return s;
  return arl_attention_backward(ctx, dq, dk, dv, dout, q, k, v, out, lse, cu_seqlens, b, t, hq,
                                hkv, d, scale);
}

arl_status arl_kv_cache_write(arl_ctx* ctx, float* k_cache, float* v_cache, const float* k,
                              const float* v, const int32_t* slots, const int32_t* positions,
                              int32_t n, int32_t s, int32_t hkv, int32_t l, int32_t d) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, k_cache);
  ARL_NOT_NULL(ctx, v_cache);
  ARL_NOT_NULL(ctx, k);
  ARL_NOT_NULL(ctx, v);
  ARL_NOT_NULL(ctx, slots);
  ARL_NOT_NULL(ctx, positions);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, s);
  ARL_POSITIVE(ctx, hkv);
  ARL_POSITIVE(ctx, l);
  ARL_POSITIVE(ctx, d);
  ARL_PRODUCT(ctx, int64_t(s) * hkv * l, d);
  // (checked before anything is written: a bad row changes no output)
  if (arl_status st = arl::check_cache_rows(ctx, __func__, slots, positions, n, s, l, false))
    return st;
  for (int32_t i = 0; i < n; i++) {
    for (int32_t h = 0; h < hkv; h++) {
      const int64_t dst = ((int64_t(slots[i]) * hkv + h) * l + positions[i]) * d;
      const int64_t src = (int64_t(i) * hkv + h) * d;
      std::memcpy(k_cache + dst, k + src, sizeof(float) * size_t(d));
      std::memcpy(v_cache + dst, v + src, sizeof(float) * size_t(d));
    }
  }
  return ARL_OK;
}

arl_status arl_attention_decode(arl_ctx* ctx, float* out, const float* q, const float* k_cache,
                                const float* v_cache, const int32_t* slots, const int32_t* lens,
                                int32_t n, int32_t s, int32_t hq, int32_t hkv, int32_t l,
                                int32_t d, float scale) {
  ARL_CTX(ctx);
  ARL_NOT_NULL(ctx, out);
  ARL_NOT_NULL(ctx, q);
  ARL_NOT_NULL(ctx, k_cache);
  ARL_NOT_NULL(ctx, v_cache);
  ARL_NOT_NULL(ctx, slots);
  ARL_NOT_NULL(ctx, lens);
  ARL_POSITIVE(ctx, n);
  ARL_POSITIVE(ctx, s);
  ARL_POSITIVE(ctx, hq);
  ARL_POSITIVE(ctx, hkv);
  ARL_POSITIVE(ctx, l);
  ARL_POSITIVE(ctx, d);
  ARL_PRODUCT(ctx, int64_t(s) * hkv * l, d);
  ARL_PRODUCT(ctx, int64_t(n) * hq, d);
  if (arl_status st = check_heads(ctx, __func__, hq, hkv)) return st;
  int32_t max_len = 0;
  for (int32_t i = 0; i < n; i++) {
    if (slots[i] < 0 || slots[i] >= s)
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: slot %d of query %d is outside [0, %d)", __func__,
                       slots[i], i, s);
    if (lens[i] < 1 || lens[i] > l)
      return arl::fail(ctx, ARL_ERR_VALUE, "%s: length %d of query %d is outside [1, %d]",
                       __func__, lens[i], i, l);
    max_len = std::max(max_len, lens[i]);
  }
  const int32_t group = hq / hkv;
  // A kv head's query heads in one task where that leaves a task for every thread, else a head a
  // task (the same bits either way)
  const bool grouped = group > 1 && group <= kMaxGroup && int64_t(n) * hkv >= ctx->num_threads;
  const int32_t heads = grouped ? group : 1;
  // scores for the longest query (not the cache's capacity), left uninitialised: every score is
  // written before it is read
  const size_t room = size_t(max_len) * size_t(heads);
  return arl::guarded(ctx, __func__, [&] {
    std::unique_ptr<float[]> scratch(new float[room * size_t(ctx->num_threads)]);
#pragma omp parallel num_threads(ctx->num_threads) if (int64_t(n) * hq * max_len * d > (1 << 15))
    {
      float* scores = scratch.get() + room * size_t(omp_get_thread_num());
#pragma omp for schedule(dynamic, 1) collapse(2)
      for (int32_t i = 0; i < n; i++) {
        for (int32_t h = 0; h < hq; h += heads) {
          const int64_t base = (int64_t(slots[i]) * hkv + h / group) * l * d;
          const int64_t row = int64_t(i) * hq + h;
          attend_group(out + row * d, scores, q + row * d, k_cache + base, v_cache + base, heads,
                       lens[i], d, scale);
        }
      }
    }
  });
}

}  // extern "C"
