/*
 * agentrl kernels: one C ABI for the CPU and CUDA libraries.
 *
 * Conventions (as in llm.c):
 * - Every entry point returns an arl_status; ARL_OK is 0. On failure the
 *   context keeps a message, read with arl_last_error(ctx).
 * - Arguments: the context, then outputs, then inputs, then weights, then sizes
 *   and scalars. Gradients are prefixed d.
 * - Shapes are given in comments: (T, C) is row-major with C contiguous.
 * - Activation gradients are written (=); parameter gradients accumulate (+=),
 *   so micro-batches can add into one gradient buffer.
 * - Sizes are int32 unless a count can exceed 2^31 (element counts: int64).
 * - Native code validates every argument (null pointers, non-positive or
 *   overflowing sizes, out-of-range ids) and never aborts the process.
 * - Memory: tensors are the library's own (arl_alloc): host memory for the CPU
 *   library, device memory for the CUDA one. A few small arguments are always
 *   host memory, marked [host] below: result structs and scalars, and
 *   arl_sample's per-row settings and results. arl_copy moves bytes between
 *   host and device memory in either direction.
 * - The CUDA library runs every call on its context's stream, in order; a call
 *   that returns host results (or arl_copy) waits for the stream first.
 */
#ifndef AGENTRL_H
#define AGENTRL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ARL_API __declspec(dllexport)
#else
#define ARL_API __attribute__((visibility("default")))
#endif

#define ARL_ABI_VERSION 11

typedef int32_t arl_status;
enum {
  ARL_OK = 0,
  ARL_ERR_NULL = 1,      /* a required pointer is null */
  ARL_ERR_SIZE = 2,      /* a size is non-positive, too large, or inconsistent */
  ARL_ERR_VALUE = 3,     /* an argument's value is out of range (ids, options) */
  ARL_ERR_ALLOC = 4,     /* out of memory */
  ARL_ERR_DEVICE = 5,    /* no usable device (CUDA) */
  ARL_ERR_INTERNAL = 6,  /* a bug: please report */
  ARL_ERR_UNSUPPORTED = 7, /* not available in this library (e.g. graphs on the CPU) */
};

/* ---- context ---------------------------------------------------------- */

typedef struct arl_ctx arl_ctx;

/* A context per device. num_threads <= 0 means all cores. NULL on failure. */
ARL_API arl_ctx* arl_ctx_create(int32_t num_threads);
ARL_API void arl_ctx_destroy(arl_ctx* ctx);
/* The message of the last failed call on this context ("" if none); with ctx NULL,
 * why the last arl_ctx_create failed (e.g. "no CUDA device: ..."). */
ARL_API const char* arl_last_error(const arl_ctx* ctx);
ARL_API arl_status arl_set_num_threads(arl_ctx* ctx, int32_t num_threads);
ARL_API int32_t arl_num_threads(const arl_ctx* ctx);
/* "cpu-avx2" or "cpu-portable" (the code path chosen at run time), or "cuda". */
ARL_API const char* arl_backend_name(void);
ARL_API int32_t arl_abi_version(void);

/*
 * Measures the device's fused multiply-add rate with a loop of independent
 * FMAs on all threads of the context (no memory traffic): gflops (1) written.
 * Benchmarks report their rates as fractions of this peak.
 */
ARL_API arl_status arl_fma_peak(arl_ctx* ctx, double* gflops /* [host] */, int64_t iterations);

/* ---- memory ----------------------------------------------------------- */

/* 64-byte aligned, zero-filled. NULL (and last_error) on failure. The CPU library refuses a
 * block of 64 MiB or more that is larger than the memory the system can give (MemAvailable plus
 * SwapFree in /proc/meminfo, or in the file AGENTRL_MEMINFO names; at most what the process's
 * memory cgroup, v2 or v1, leaves) with ARL_ERR_ALLOC. */
ARL_API void* arl_alloc(arl_ctx* ctx, int64_t bytes);
/* ctx may be NULL (memory outlives contexts). */
ARL_API arl_status arl_free(arl_ctx* ctx, void* ptr);
ARL_API arl_status arl_copy(arl_ctx* ctx, void* dst, const void* src, int64_t bytes);
/*
 * Copies `bytes` of host memory src [host] to dst (the library's memory) without waiting for the
 * copy (ABI version 8): src may be changed or freed once it returns. The CUDA library stages up
 * to ARL_UPLOAD_ASYNC_BYTES in pinned memory and queues the copy on the context's stream (a
 * larger copy waits, as arl_copy does); it fails while a graph is being recorded. The CPU
 * library copies at once.
 */
#define ARL_UPLOAD_ASYNC_BYTES 65536
ARL_API arl_status arl_upload_async(arl_ctx* ctx, void* dst, const void* src, int64_t bytes);
/*
 * arl_upload_async for one of two buffers that the context's stream reads in turn, such as a
 * decode step's placement (added without a new ABI version: optional). parity (0 or 1) names the
 * buffer dst is. The CUDA library copies on a second stream, once the first has passed the point
 * of the last call for the other parity (the last work that read this buffer was queued before
 * it), and the first stream waits for that copy: its work is not held up by a copy between two
 * steps, which is long done by the time it gets there. fresh = 1 (or the same parity twice in a
 * row) waits for all the work queued so far instead: pass it when the buffers are new. At most
 * ARL_UPLOAD_ASYNC_BYTES; it fails while a graph is being recorded. Without pinned memory or a
 * stream to spare it copies as arl_upload_async does. The CPU library copies at once.
 */
ARL_API arl_status arl_upload_alternating(arl_ctx* ctx, void* dst, const void* src, int64_t bytes,
                                          int32_t parity, int32_t fresh);
/*
 * Asks the GPU's L2 cache to keep `count` regions of device memory across kernels (ABI version
 * 11): region i is bytes[i] from bases[i] (both [host] arrays), such as weights that every decode
 * step reads once and that the stream of other weights would otherwise evict. The library sets
 * aside part of the L2 for "persisting" lines and fills it with the regions in their order; the
 * kernels that read a kept region's weights (the few-row linears, the decode chain's kernels)
 * mark their reads of it persisting. kept[i] [host] = the bytes of region i the L2 keeps (0:
 * none). Each call replaces the last call's regions; count 0 clears them. Regions must not
 * overlap. A graph keeps the windows of its recording, and a recording cannot change them. The
 * CPU library keeps nothing (kept all 0). The CUDA library keeps bytes only when
 * AGENTRL_CUDA_L2_PERSIST asks (see kernels/README.md), at most the device's persisting maximum,
 * and says on stderr what it kept. The set-aside is the device's: a call on another context of
 * the same device, or that context's destruction, resizes it.
 */
#define ARL_L2_MAX_REGIONS 64
ARL_API arl_status arl_l2_persist(arl_ctx* ctx, const void* const* bases /* [host] */,
                                  const int64_t* bytes /* [host] */, int32_t count,
                                  int64_t* kept /* [host] */);
ARL_API arl_status arl_fill_f32(arl_ctx* ctx, float* dst, float value, int64_t n);
/* out (n) = round-to-nearest-even bf16 of x (n) */
ARL_API arl_status arl_f32_to_bf16(arl_ctx* ctx, uint16_t* out, const float* x, int64_t n);
ARL_API arl_status arl_bf16_to_f32(arl_ctx* ctx, float* out, const uint16_t* x, int64_t n);

/* ---- graphs (CUDA) ---------------------------------------------------- */

/*
 * Records the calls made on ctx between arl_graph_begin and arl_graph_end
 * (nothing runs meanwhile) into a graph that arl_graph_launch replays with one
 * launch: the same kernels on the same pointers and sizes, reading whatever the
 * memory holds at launch time. Calls that wait for the GPU (host results,
 * arl_copy, id checks that read back) or need scratch memory fail while
 * recording, and so does arl_graph_end then. The CPU library has no graphs:
 * arl_graph_begin returns ARL_ERR_UNSUPPORTED. On Hopper and later GPUs a recording uses
 * programmatic dependent launch for the decode kernels: a linear of at most 8 rows may read
 * its weights while the call before it still runs, so within a recording w must not be written
 * by the call just before the linear.
 */
typedef struct arl_graph arl_graph;
ARL_API arl_status arl_graph_begin(arl_ctx* ctx);
/* Ends the recording; *out = the graph (NULL out: the recording is discarded). */
ARL_API arl_status arl_graph_end(arl_ctx* ctx, arl_graph** out);
/* Queues the graph on ctx's stream (ctx must be on the device it was recorded on). */
ARL_API arl_status arl_graph_launch(arl_ctx* ctx, const arl_graph* graph);
/* graph may be NULL. */
ARL_API void arl_graph_destroy(arl_graph* graph);

/* ---- matmul ----------------------------------------------------------- */

/*
 * C (M, N; ldc) = alpha * op(A) op(B) + beta * C, row-major.
 * op(A) is (M, K): A is (M, K; lda) or, when trans_a, (K, M; lda).
 * op(B) is (K, N): B is (K, N; ldb) or, when trans_b, (N, K; ldb).
 * beta == 0 ignores C's old content (NaNs included).
 */
ARL_API arl_status arl_sgemm(arl_ctx* ctx, float* c, const float* a, const float* b,
                             int32_t trans_a, int32_t trans_b, int32_t m, int32_t n,
                             int32_t k, float alpha, float beta, int32_t lda, int32_t ldb,
                             int32_t ldc);

/* y (M, N) = x (M, K) . w (N, K)^T + bias (N) [+ y if accumulate]. bias may be NULL. */
ARL_API arl_status arl_linear_forward(arl_ctx* ctx, float* y, const float* x, const float* w,
                                      const float* bias, int32_t m, int32_t n, int32_t k,
                                      int32_t accumulate);
/*
 * dx (M, K) = dy (M, N) . w (N, K)          [+= if accumulate_dx]; dx may be NULL.
 * dw (N, K) += dy^T . x (M, K);  dbias (N) += sum over rows of dy. dw, dbias may be NULL.
 */
ARL_API arl_status arl_linear_backward(arl_ctx* ctx, float* dx, float* dw, float* dbias,
                                       const float* dy, const float* x, const float* w,
                                       int32_t m, int32_t n, int32_t k, int32_t accumulate_dx);

/*
 * Mixed precision (bf16 weights, fp32 activations, fp32 accumulation): the same
 * as arl_linear_forward / arl_linear_backward with w (N, K) in bf16 (a
 * low-precision copy of fp32 master weights; see arl_f32_to_bf16). The CUDA
 * library rounds x and dy to bf16 for tensor-core GEMMs (batch rows) or reads
 * them in fp32 (at most 8 rows: a GEMV over the bf16 weights); the CPU library
 * widens w and computes in fp32. dw stays fp32 (the master gradient).
 */
ARL_API arl_status arl_linear_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                           const uint16_t* w, const float* bias, int32_t m,
                                           int32_t n, int32_t k, int32_t accumulate);
ARL_API arl_status arl_linear_backward_bf16(arl_ctx* ctx, float* dx, float* dw, float* dbias,
                                            const float* dy, const float* x, const uint16_t* w,
                                            int32_t m, int32_t n, int32_t k,
                                            int32_t accumulate_dx);

/* ---- elementwise and normalization ------------------------------------ */

/* out (T, C) = wte (V, C)[tokens (T)]. Token ids outside [0, V) are an error (the CUDA library
 * writes zeros for such a row and reports it at the next call that synchronizes). */
ARL_API arl_status arl_embedding_forward(arl_ctx* ctx, float* out, const int32_t* tokens,
                                         const float* wte, int32_t t, int32_t v, int32_t c);
/* dwte (V, C) += scatter of dout (T, C) by tokens (T). */
ARL_API arl_status arl_embedding_backward(arl_ctx* ctx, float* dwte, const float* dout,
                                          const int32_t* tokens, int32_t t, int32_t v,
                                          int32_t c);

/* out (T, C) = x / rms(x) * weight (C); rstd (T) = 1 / sqrt(mean(x^2) + eps) (saved). */
ARL_API arl_status arl_rmsnorm_forward(arl_ctx* ctx, float* out, float* rstd, const float* x,
                                       const float* weight, int32_t t, int32_t c, float eps);
/*
 * Decode fusion (ABI version 4): y (M, N) = rmsnorm(x (M, K); norm_weight (K), eps) .
 * w (N, K)^T + bias (N; may be NULL), the normalized rows never stored. The CUDA library
 * folds the norm into its few-row GEMV (M <= 8); otherwise, and on the CPU, it is
 * arl_rmsnorm_forward into scratch memory, then arl_linear_forward. _bf16: w in bf16 (as in
 * arl_linear_forward_bf16).
 */
ARL_API arl_status arl_rmsnorm_linear_forward(arl_ctx* ctx, float* y, const float* x,
                                              const float* norm_weight, const float* w,
                                              const float* bias, int32_t m, int32_t n,
                                              int32_t k, float eps);
ARL_API arl_status arl_rmsnorm_linear_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                                   const float* norm_weight, const uint16_t* w,
                                                   const float* bias, int32_t m, int32_t n,
                                                   int32_t k, float eps);
/*
 * Decode fusion (ABI version 5): [g | u] = rmsnorm(x (M, K); norm_weight (K), eps) .
 * w (2F, K)^T + bias (2F; may be NULL), w being the gate rows then the up rows;
 * y (M, F) = silu(g) * u, neither g nor u stored. The CUDA library's few-row GEMV (M <= 8)
 * computes gate column j and up column j in the same warps and writes silu(g_j) * u_j, so
 * SwiGLU runs once per output; otherwise, and on the CPU, it is arl_rmsnorm_forward into
 * scratch memory, arl_linear_forward of the gate rows and of the up rows, then
 * arl_swiglu_forward. _bf16: w in bf16.
 */
ARL_API arl_status arl_rmsnorm_linear_swiglu_forward(arl_ctx* ctx, float* y, const float* x,
                                                     const float* norm_weight, const float* w,
                                                     const float* bias, int32_t m, int32_t f,
                                                     int32_t k, float eps);
ARL_API arl_status arl_rmsnorm_linear_swiglu_forward_bf16(arl_ctx* ctx, float* y,
                                                          const float* x,
                                                          const float* norm_weight,
                                                          const uint16_t* w, const float* bias,
                                                          int32_t m, int32_t f, int32_t k,
                                                          float eps);
/* dx (T, C) = (written); dweight (C) += ... */
ARL_API arl_status arl_rmsnorm_backward(arl_ctx* ctx, float* dx, float* dweight,
                                        const float* dout, const float* x, const float* rstd,
                                        const float* weight, int32_t t, int32_t c);

/*
 * Rotary embedding in the Hugging Face rotate_half layout: for i < D/2, the pair
 * (i, i + D/2) of each head is rotated by pos * theta^(-2i/D).
 * out (T, H, D) = rope(x (T, H, D), positions (T)); out may equal x.
 * The backward pass is the rotation by the opposite angle: call with inverse = 1.
 * Negative positions are an error; the CUDA library finds them in its kernel
 * (skipping those rows) and reports them at the next call that synchronizes.
 */
ARL_API arl_status arl_rope(arl_ctx* ctx, float* out, const float* x, const int32_t* positions,
                            int32_t t, int32_t h, int32_t d, float theta, int32_t inverse);

/*
 * arl_rope with the rotation frequencies given: the pair (i, i + D/2) is rotated by
 * pos * inv_freq[i], inv_freq (D/2) in the library's memory (a scaled RoPE, such as Llama 3.1's
 * "llama3" type, computes its own). Added without a new ABI version: a library built before it
 * lacks the symbol, and the FFI layer loads it as optional. An entry that is not finite is an
 * error: the CPU library refuses the call; the CUDA library's kernel skips the rows and reports
 * it at the next call that synchronizes (so do arl_norm_rope_kv_cache_write and
 * arl_decode_layer_norms_bf16).
 */
ARL_API arl_status arl_rope_freqs(arl_ctx* ctx, float* out, const float* x,
                                  const int32_t* positions, const float* inv_freq, int32_t t,
                                  int32_t h, int32_t d, int32_t inverse);

/* out (N) = silu(gate (N)) * up (N). */
ARL_API arl_status arl_swiglu_forward(arl_ctx* ctx, float* out, const float* gate,
                                      const float* up, int64_t n);
/* dgate (N), dup (N) written from dout (N). */
ARL_API arl_status arl_swiglu_backward(arl_ctx* ctx, float* dgate, float* dup, const float* dout,
                                       const float* gate, const float* up, int64_t n);

/* out (N) = a (N) + b (N); out may alias a or b. */
ARL_API arl_status arl_add(arl_ctx* ctx, float* out, const float* a, const float* b, int64_t n);

/* ---- attention -------------------------------------------------------- */

/*
 * Causal self-attention over a packed batch of B sequences: sequence s holds
 * rows cu_seqlens[s] .. cu_seqlens[s+1]-1 (cu_seqlens (B+1), cu_seqlens[0] = 0,
 * cu_seqlens[B] = T, non-decreasing). No attention across sequences.
 * Grouped-query heads: query head h reads key/value head h / (HQ / HKV).
 * out (T, HQ, D); lse (HQ, T) log-sum-exp of each score row (saved for backward);
 * q (T, HQ, D), k (T, HKV, D), v (T, HKV, D). scale is usually 1/sqrt(D).
 * Memory-efficient: no T x T matrix is kept; the backward pass recomputes scores.
 */
ARL_API arl_status arl_attention_forward(arl_ctx* ctx, float* out, float* lse, const float* q,
                                         const float* k, const float* v,
                                         const int32_t* cu_seqlens, int32_t b, int32_t t,
                                         int32_t hq, int32_t hkv, int32_t d, float scale);
/* dq (T, HQ, D), dk, dv (T, HKV, D) written. */
ARL_API arl_status arl_attention_backward(arl_ctx* ctx, float* dq, float* dk, float* dv,
                                          const float* dout, const float* q, const float* k,
                                          const float* v, const float* out, const float* lse,
                                          const int32_t* cu_seqlens, int32_t b, int32_t t,
                                          int32_t hq, int32_t hkv, int32_t d, float scale);

/*
 * Mixed precision (ABI version 5): the two calls above with the products on bf16 operands
 * and fp32 accumulation, for models whose weights are bf16. The CUDA library rounds q, k, v
 * and dout to bf16 and runs the score, P.V and gradient products on the tensor cores (WMMA;
 * head dims 64 and 128 with 16-byte aligned rows, where the GPU gives a block enough shared
 * memory and, for the backward pass with kv heads shared, the per-query-head dk and dv fit in
 * device memory; otherwise the fp32 kernels), with softmax in fp32 and the probabilities and
 * score gradients rounded to bf16 between products. A backward pass that takes the fp32
 * kernels after a tensor-core forward (dout unaligned, say) still works: its lse is off by bf16
 * rounding. The CPU library computes them exactly as the fp32 calls.
 */
ARL_API arl_status arl_attention_forward_bf16(arl_ctx* ctx, float* out, float* lse,
                                              const float* q, const float* k, const float* v,
                                              const int32_t* cu_seqlens, int32_t b, int32_t t,
                                              int32_t hq, int32_t hkv, int32_t d, float scale);
ARL_API arl_status arl_attention_backward_bf16(arl_ctx* ctx, float* dq, float* dk, float* dv,
                                               const float* dout, const float* q,
                                               const float* k, const float* v, const float* out,
                                               const float* lse, const int32_t* cu_seqlens,
                                               int32_t b, int32_t t, int32_t hq, int32_t hkv,
                                               int32_t d, float scale);

/*
 * KV cache: k_cache, v_cache (S, HKV, L, D) for S slots of up to L positions.
 * Writes k, v (N, HKV, D) of N new tokens at (slots[i], positions[i]). A slot outside [0, S)
 * or a position outside [0, L) is an error; the CUDA library finds it in its kernel (writing
 * the other tokens' rows) and reports it at the next call that synchronizes.
 */
ARL_API arl_status arl_kv_cache_write(arl_ctx* ctx, float* k_cache, float* v_cache,
                                      const float* k, const float* v, const int32_t* slots,
                                      const int32_t* positions, int32_t n, int32_t s,
                                      int32_t hkv, int32_t l, int32_t d);
/*
 * Decode fusion (ABI version 4): arl_rope on q (N, HQ, D) and k (N, HKV, D) in place at
 * positions (N), then arl_kv_cache_write of the rotated k and of v (N, HKV, D) at (slots,
 * positions). One kernel in the CUDA library; the same checks and deferred errors as the
 * two calls.
 */
ARL_API arl_status arl_rope_kv_cache_write(arl_ctx* ctx, float* q, float* k, float* k_cache,
                                           float* v_cache, const float* v,
                                           const int32_t* slots, const int32_t* positions,
                                           int32_t n, int32_t hq, int32_t s, int32_t hkv,
                                           int32_t l, int32_t d, float theta);
/*
 * arl_rope_kv_cache_write with two more steps in the same kernel (the CUDA library: a one-warp
 * block a head of each token): each head's q and k rows RMS-normalized first, as
 * arl_rmsnorm_forward of the (N HQ, D) and (N HKV, D) rows with q_norm (D) and k_norm (D) and
 * eps (Qwen3's q_norm/k_norm; either may be null: those rows are not normalized), and the
 * rotation frequencies from inv_freq (D/2, as arl_rope_freqs takes them; null: theta's, as
 * arl_rope).
 * theta must be > 0 either way; eps >= 0. Added without a new ABI version: a library built
 * before it lacks the symbol, and the FFI layer loads it as optional.
 */
ARL_API arl_status arl_norm_rope_kv_cache_write(arl_ctx* ctx, float* q, float* k,
                                                float* k_cache, float* v_cache, const float* v,
                                                const float* q_norm, const float* k_norm,
                                                const float* inv_freq, const int32_t* slots,
                                                const int32_t* positions, int32_t n, int32_t hq,
                                                int32_t s, int32_t hkv, int32_t l, int32_t d,
                                                float eps, float theta);
/*
 * Decode fusion (ABI version 5): arl_rmsnorm_linear_forward of x (M, K) with a stacked q|k|v
 * weight w (N = (HQ + 2 HKV) D rows: q, then k, then v) and bias (N, may be null) into
 * y (M, N), then, for each row, arl_rope_kv_cache_write of its q (the first HQ D values) and k
 * (the next HKV D) at positions[i], with the rotated k and the v (the last HKV D) written to
 * k_cache, v_cache (S, HKV, L, D) at (slots[i], positions[i]): the same checks and deferred
 * errors. One kernel in the CUDA library for M <= 8. _bf16: w in bf16.
 */
ARL_API arl_status arl_rmsnorm_qkv_rope_forward(arl_ctx* ctx, float* y, const float* x,
                                                const float* norm_weight, const float* w,
                                                const float* bias, int32_t m, int32_t k,
                                                float eps, float* k_cache, float* v_cache,
                                                const int32_t* slots, const int32_t* positions,
                                                int32_t hq, int32_t s, int32_t hkv, int32_t l,
                                                int32_t d, float theta);
ARL_API arl_status arl_rmsnorm_qkv_rope_forward_bf16(arl_ctx* ctx, float* y, const float* x,
                                                     const float* norm_weight, const uint16_t* w,
                                                     const float* bias, int32_t m, int32_t k,
                                                     float eps, float* k_cache, float* v_cache,
                                                     const int32_t* slots,
                                                     const int32_t* positions, int32_t hq,
                                                     int32_t s, int32_t hkv, int32_t l, int32_t d,
                                                     float theta);
/*
 * Decode layer (ABI version 6): one token through a whole decoder layer (pre-norm attention
 * with RoPE and GQA, then a SwiGLU MLP, each with its residual), the same as these calls in
 * sequence, which the CPU library makes:
 *   arl_rmsnorm_qkv_rope_forward_bf16(qkv, x, ln1, w_qkv, b_qkv, 1, C, eps, k_cache, v_cache,
 *                                     slot, position, HQ, S, HKV, L, D, theta)
 *   arl_attention_decode(attn, qkv, k_cache, v_cache, slot, len, 1, S, HQ, HKV, L, D, scale)
 *   arl_linear_forward_bf16(x, attn, w_o, NULL, 1, C, HQ D, 1)
 *   arl_rmsnorm_linear_swiglu_forward_bf16(act, x, ln2, w_gu, NULL, 1, F, C, eps)
 *   arl_linear_forward_bf16(x, act, w_down, NULL, 1, C, F, 1)
 * x (C) is updated in place; qkv ((HQ + 2 HKV) D), attn (HQ D) and act (F) receive those
 * calls' outputs. w_qkv ((HQ + 2 HKV) D, C), w_o (C, HQ D), w_gu (2F, C: gate rows, then up)
 * and w_down (C, F) are bf16; b_qkv may be null; slot, position and len point to one int32
 * each (device memory), and bad values are deferred errors as in those calls. The CUDA
 * library reads slot, position and len before its kernels wait for the work queued before
 * the call (only while a graph is recorded: direct calls start after that work): set them by
 * copies (arl_copy, arl_upload_async, which is never recorded, whatever stores its bytes) or
 * from the host, not by a kernel recorded right before the call. The CUDA
 * library runs it as one cooperative kernel (grid-wide barriers between the steps) where
 * D is 64 or 128, C, F and HQ D are multiples of 8 and the weights 16-byte aligned, and as
 * those calls otherwise.
 */
ARL_API arl_status arl_decode_layer_bf16(arl_ctx* ctx, float* x, float* qkv, float* attn,
                                         float* act, const float* ln1, const uint16_t* w_qkv,
                                         const float* b_qkv, const uint16_t* w_o,
                                         const float* ln2, const uint16_t* w_gu,
                                         const uint16_t* w_down, float* k_cache, float* v_cache,
                                         const int32_t* slot, const int32_t* position,
                                         const int32_t* len, int32_t c, int32_t f, int32_t hq,
                                         int32_t hkv, int32_t d, int32_t s, int32_t l, float eps,
                                         float theta, float scale);
/*
 * arl_decode_layer_bf16 for the layers its q|k|v step does not take: each head's q and k
 * RMS-normalized before RoPE (q_norm, k_norm (D): Qwen3), or RoPE's frequencies from a table
 * (inv_freq (D/2): Llama 3.1's scaling); each of the three may be null. The same as these calls
 * in sequence, which the CPU library makes:
 *   arl_rmsnorm_linear_forward_bf16(qkv, x, ln1, w_qkv, b_qkv, 1, (HQ + 2 HKV) D, C, eps)
 *   arl_norm_rope_kv_cache_write(qkv, qkv + HQ D, k_cache, v_cache, qkv + (HQ + HKV) D, q_norm,
 *                                k_norm, inv_freq, slot, position, 1, HQ, S, HKV, L, D, eps,
 *                                theta)
 * then arl_decode_layer_bf16's attention, o projection and MLP calls. The CUDA library chains
 * the GEMV, arl_norm_rope_kv_cache_write's kernel and arl_decode_layer_bf16's kernels 2-4 where
 * the shapes fit them, else runs the calls. Added without a new ABI version: a library built
 * before it lacks the symbol, and the FFI layer loads it as optional.
 */
ARL_API arl_status arl_decode_layer_norms_bf16(
    arl_ctx* ctx, float* x, float* qkv, float* attn, float* act, const float* ln1,
    const uint16_t* w_qkv, const float* b_qkv, const uint16_t* w_o, const float* ln2,
    const uint16_t* w_gu, const uint16_t* w_down, float* k_cache, float* v_cache,
    const float* q_norm, const float* k_norm, const float* inv_freq, const int32_t* slot,
    const int32_t* position, const int32_t* len, int32_t c, int32_t f, int32_t hq, int32_t hkv,
    int32_t d, int32_t s, int32_t l, float eps, float theta, float scale);
/*
 * Decode layers (ABI version 9): one token through n_layers decoder layers, the same as
 * arl_decode_layer_bf16 once a layer, in order. layers (host memory, read during the call
 * only) holds each layer's tensors as arl_decode_layer_bf16 takes them (b_qkv may be null);
 * the layers share x, qkv, attn, act, slot, position, len and the shapes, and the last
 * layer's rows are left in qkv, attn and act. The CUDA library runs arl_decode_layer_bf16
 * once a layer; with AGENTRL_CUDA_DECODE_TOKEN=1 it runs every layer in one persistent
 * cooperative kernel instead (a block an SM, its weights streamed through shared memory across
 * the layers' steps, the steps ordered by counters, not kernel boundaries) where the shapes
 * allow it (D 64 or 128, C and F multiples of 8, the weights 16-byte aligned, at most 48
 * layers a launch). That kernel is slower than the layer calls on an H100 (session 15).
 */
typedef struct arl_decode_layer_ptrs {
  const float* ln1;
  const uint16_t* w_qkv;
  const float* b_qkv;
  const uint16_t* w_o;
  const float* ln2;
  const uint16_t* w_gu;
  const uint16_t* w_down;
  float* k_cache;
  float* v_cache;
} arl_decode_layer_ptrs;
ARL_API arl_status arl_decode_layers_bf16(arl_ctx* ctx, float* x, float* qkv, float* attn,
                                          float* act, const arl_decode_layer_ptrs* layers,
                                          int32_t n_layers, const int32_t* slot,
                                          const int32_t* position, const int32_t* len, int32_t c,
                                          int32_t f, int32_t hq, int32_t hkv, int32_t d,
                                          int32_t s, int32_t l, float eps, float theta,
                                          float scale);
/*
 * Attention of N new query tokens against the cache: query i attends to
 * positions 0 .. lens[i]-1 of slot slots[i] (its own position included, so a
 * decode step uses lens[i] = position + 1). out, q (N, HQ, D). A slot outside [0, S) or a
 * length outside [1, L] is an error; the CUDA library finds it in its kernel (computing the
 * other queries) and reports it at the next call that synchronizes.
 */
ARL_API arl_status arl_attention_decode(arl_ctx* ctx, float* out, const float* q,
                                        const float* k_cache, const float* v_cache,
                                        const int32_t* slots, const int32_t* lens, int32_t n,
                                        int32_t s, int32_t hq, int32_t hkv, int32_t l,
                                        int32_t d, float scale);

/* ---- log-probs -------------------------------------------------------- */

/*
 * Fused LM head + log-softmax + gather + entropy, chunked over the vocabulary
 * (no (T, V) logits matrix is stored):
 * logits = h (T, C) . w (V, C)^T / temperature;
 * logp (T) = log softmax(logits)[targets (T)]; entropy (T) = H(softmax(logits));
 * lse (T) = logsumexp(logits) (saved for backward). entropy may be NULL.
 * Target ids outside [0, V) are an error.
 */
ARL_API arl_status arl_logprob_forward(arl_ctx* ctx, float* logp, float* entropy, float* lse,
                                       const float* h, const int32_t* targets, const float* w,
                                       int32_t t, int32_t v, int32_t c, float temperature);
/*
 * Given dlogp (T) and dentropy (T) (may be NULL): dh (T, C) written, dw (V, C) +=.
 * dw may be NULL (frozen head).
 */
ARL_API arl_status arl_logprob_backward(arl_ctx* ctx, float* dh, float* dw, const float* dlogp,
                                        const float* dentropy, const float* h,
                                        const int32_t* targets, const float* w,
                                        const float* lse, const float* entropy, int32_t t,
                                        int32_t v, int32_t c, float temperature);

/* Full logits for sampling: logits (T, V) = h (T, C) . w (V, C)^T. */
ARL_API arl_status arl_lm_head(arl_ctx* ctx, float* logits, const float* h, const float* w,
                               int32_t t, int32_t v, int32_t c);

/* The three LM-head calls above with w (V, C) in bf16 (mixed precision, as for linears). */
ARL_API arl_status arl_logprob_forward_bf16(arl_ctx* ctx, float* logp, float* entropy,
                                            float* lse, const float* h, const int32_t* targets,
                                            const uint16_t* w, int32_t t, int32_t v, int32_t c,
                                            float temperature);
ARL_API arl_status arl_logprob_backward_bf16(arl_ctx* ctx, float* dh, float* dw,
                                             const float* dlogp, const float* dentropy,
                                             const float* h, const int32_t* targets,
                                             const uint16_t* w, const float* lse,
                                             const float* entropy, int32_t t, int32_t v,
                                             int32_t c, float temperature);
ARL_API arl_status arl_lm_head_bf16(arl_ctx* ctx, float* logits, const float* h,
                                    const uint16_t* w, int32_t t, int32_t v, int32_t c);

/* Value head (critic): values (T) = h (T, C) . w (C) + bias. */
ARL_API arl_status arl_value_head_forward(arl_ctx* ctx, float* values, const float* h,
                                          const float* w, float bias, int32_t t, int32_t c);
/* dh (T, C) written; dw (C) +=; dbias (1) +=. */
ARL_API arl_status arl_value_head_backward(arl_ctx* ctx, float* dh, float* dw, float* dbias,
                                           const float* dvalues, const float* h,
                                           const float* w, int32_t t, int32_t c);

/* ---- losses ----------------------------------------------------------- */

enum {
  ARL_AGG_TOKEN_MEAN = 0,
  ARL_AGG_SEQ_MEAN_TOKEN_SUM = 1,
  ARL_AGG_SEQ_MEAN_TOKEN_MEAN = 2,
  ARL_AGG_SEQ_MEAN_TOKEN_SUM_NORM = 3,
};
enum { ARL_KL_KL = 0, ARL_KL_ABS = 1, ARL_KL_MSE = 2, ARL_KL_K3 = 3 };
enum { ARL_RATIO_TOKEN = 0, ARL_RATIO_SEGMENT = 1 };

/* Settings of the PPO-family token loss. */
typedef struct arl_ppo_params {
  float clip_low;         /* ratio lower bound is 1 - clip_low */
  float clip_high;        /* ratio upper bound is 1 + clip_high */
  float dual_clip;        /* > 1 enables dual clip (bound for A < 0); 0 disables */
  float kl_coef;          /* weight of the KL-to-reference loss (0: no ref_logp needed) */
  int32_t kl_kind;        /* ARL_KL_* */
  float kl_clamp;         /* |per-token KL| clamp (k3: 10); 0 disables */
  float entropy_coef;     /* loss -= entropy_coef * entropy */
  float sft_coef;         /* loss += sft_coef * NLL on tokens with sft_mask */
  int32_t agg_mode;       /* ARL_AGG_* */
  float norm_len;         /* seq-mean-token-sum-norm divisor (e.g. max response length) */
  int32_t ratio_type;     /* ARL_RATIO_*: per token, or one per segment (ABI 7) */
} arl_ppo_params;

/* Scalars the loss reports. */
typedef struct arl_ppo_metrics {
  float loss, pg_loss, kl_loss, entropy_loss, sft_loss;
  float clipfrac;      /* fraction of tokens whose objective was clipped */
  float approx_kl;     /* mean of 0.5 (logp - old_logp)^2 */
  float ratio_mean, ratio_min, ratio_max;
  float dual_clipfrac;
  float num_tokens;
} arl_ppo_metrics;

/*
 * PPO token loss over T tokens in B sequences (cu_seqlens (B+1)); mask (T) is 1
 * on tokens that count (a weight: k counts a token as k copies, in the loss and
 * the metrics). ratio = exp(logp - old_logp); pg = -A * ratio clipped to
 * [1 - clip_low, 1 + clip_high] (pessimistic max of the two losses), dual-clipped
 * for A < 0 at dual_clip * -A. With ratio_type ARL_RATIO_SEGMENT every token of a
 * segment (a run of mask > 0 inside a sequence: one turn) takes the segment's ratio,
 * exp(mean over its tokens of logp - old_logp), and the gradient of each token's
 * policy loss is shared out evenly over the segment's logp (ROLL's ratio_type
 * "segment"); approx_kl stays per token. Outputs the aggregated loss and its gradient
 * dlogp (T), dentropy (T) (dentropy may be NULL if entropy_coef is 0).
 * ref_logp may be NULL when kl_coef == 0; entropy may be NULL when entropy_coef
 * == 0; sft_mask may be NULL when sft_coef == 0. metrics and params are [host].
 */
ARL_API arl_status arl_ppo_loss(arl_ctx* ctx, arl_ppo_metrics* metrics, float* dlogp,
                                float* dentropy, const float* logp, const float* old_logp,
                                const float* ref_logp, const float* advantages,
                                const float* entropy, const float* mask, const float* sft_mask,
                                const int32_t* cu_seqlens, int32_t b, int32_t t,
                                const arl_ppo_params* params);

/*
 * Clipped value loss: 0.5 * max((v - R)^2, (clip(v, v_old - c, v_old + c) - R)^2),
 * aggregated by agg_mode. loss (1) [host], clipfrac (1) [host]; dvalues (T) written.
 * value_clip <= 0 disables clipping.
 */
ARL_API arl_status arl_value_loss(arl_ctx* ctx, float* loss, float* clipfrac, float* dvalues,
                                  const float* values, const float* old_values,
                                  const float* returns, const float* mask,
                                  const int32_t* cu_seqlens, int32_t b, int32_t t,
                                  float value_clip, int32_t agg_mode, float norm_len);

/*
 * Full KL(p || p_ref) per token from full logits rows: kl (T);
 * dlogits (T, V) written (gradient w.r.t. the policy's logits, scaled by dkl (T)).
 * dlogits may be NULL.
 */
ARL_API arl_status arl_kl_full(arl_ctx* ctx, float* kl, float* dlogits, const float* logits,
                               const float* ref_logits, const float* dkl, int32_t t, int32_t v);

/* ---- optimizer -------------------------------------------------------- */

/* out (1) [host] = sum of squares of x (N), accumulated in double. */
ARL_API arl_status arl_sum_squares(arl_ctx* ctx, double* out, const float* x, int64_t n);
/* x (N) *= s */
ARL_API arl_status arl_scale(arl_ctx* ctx, float* x, float s, int64_t n);
/*
 * AdamW (decoupled weight decay, bias correction) on N parameters, step >= 1:
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr * (m / (1-b1^step) / (sqrt(v / (1-b2^step)) + eps) + wd * p).
 * grad_scale multiplies g first (e.g. for clipping).
 */
ARL_API arl_status arl_adamw(arl_ctx* ctx, float* params, float* m, float* v,
                             const float* grads, int64_t n, float lr, float beta1,
                             float beta2, float eps, float weight_decay, int32_t step,
                             float grad_scale);

/* ---- sampling --------------------------------------------------------- */

/*
 * Samples one token per row of logits (N, V). Row i uses temperature[i]
 * (0 = greedy), top_k[i] (<= 0: off), top_p[i] (>= 1: off) and a counter-based
 * random stream (seeds[i], counters[i]): the result depends on nothing else
 * (not on the thread count or the batch). tokens (N) written; logprobs (N) =
 * log softmax(logits / temperature) of the chosen token over the full
 * vocabulary (the raw logits when greedy). logprobs may be NULL. logits is a
 * tensor; temperature, top_k, top_p, seeds, counters, tokens, logprobs are [host].
 */
ARL_API arl_status arl_sample(arl_ctx* ctx, int32_t* tokens, float* logprobs,
                              const float* logits, const float* temperature,
                              const int32_t* top_k, const float* top_p, const uint64_t* seeds,
                              const uint64_t* counters, int32_t n, int32_t v);

/*
 * arl_sample in two halves (ABI version 10), so that the host can queue the next decode step
 * before it reads this one's tokens. arl_sample_start reads its [host] settings before it
 * returns, queues the sampling of logits (N, V), writes the chosen tokens to ids (N; a tensor,
 * int32; NULL: not written), e.g. the next step's token ids, and sets *ticket [host] to a number
 * that names the pending result. arl_sample_finish waits for that sampling alone (not for calls
 * queued after it) and writes tokens and logprobs (N) [host] as arl_sample does (tokens NULL:
 * the results are dropped); it reports the errors arl_sample would, deferred errors of earlier
 * calls included. At most ARL_SAMPLE_PENDING samplings may be pending on a context, and each
 * ticket is finished once. The CPU library samples in arl_sample_start.
 */
#define ARL_SAMPLE_PENDING 4
ARL_API arl_status arl_sample_start(arl_ctx* ctx, int64_t* ticket, int32_t* ids,
                                    const float* logits, const float* temperature,
                                    const int32_t* top_k, const float* top_p,
                                    const uint64_t* seeds, const uint64_t* counters, int32_t n,
                                    int32_t v);
ARL_API arl_status arl_sample_finish(arl_ctx* ctx, int32_t* tokens, float* logprobs,
                                     int64_t ticket, int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* AGENTRL_H */
