/**
 * The C ABI of `kernels/include/agentrl.h`, as a Deno FFI symbol table. Each
 * parameter carries its C declaration as a comment; shapes are in the header.
 *
 * @module
 */

/** `ARL_ABI_VERSION` of the header these symbols follow; a library must report the same. */
export const ABI_VERSION = 11;

const ptr = "pointer" as const;
// host arrays passed as typed arrays: Deno keeps them alive (and in place) during the call
const buf = "buffer" as const;
const i32 = "i32" as const;
const i64 = "i64" as const;
const f32 = "f32" as const;
const status = "i32" as const;

// The packed attention calls (the _bf16 ones take the same arguments).
const ATTENTION_FORWARD = {
  parameters: [
    ptr, /* ctx */
    ptr, /* float* out (T, HQ, D) */
    ptr, /* float* lse (HQ, T) */
    ptr, /* const float* q (T, HQ, D) */
    ptr, /* const float* k (T, HKV, D) */
    ptr, /* const float* v (T, HKV, D) */
    ptr, /* const int32_t* cu_seqlens (B + 1) */
    i32, /* int32_t b */
    i32, /* int32_t t */
    i32, /* int32_t hq */
    i32, /* int32_t hkv */
    i32, /* int32_t d */
    f32, /* float scale */
  ],
  result: status,
} as const;
const ATTENTION_BACKWARD = {
  parameters: [
    ptr, /* ctx */
    ptr, /* float* dq (T, HQ, D) */
    ptr, /* float* dk (T, HKV, D) */
    ptr, /* float* dv (T, HKV, D) */
    ptr, /* const float* dout (T, HQ, D) */
    ptr, /* const float* q */
    ptr, /* const float* k */
    ptr, /* const float* v */
    ptr, /* const float* out */
    ptr, /* const float* lse (HQ, T) */
    ptr, /* const int32_t* cu_seqlens (B + 1) */
    i32, /* int32_t b */
    i32, /* int32_t t */
    i32, /* int32_t hq */
    i32, /* int32_t hkv */
    i32, /* int32_t d */
    f32, /* float scale */
  ],
  result: status,
} as const;

// The q|k|v decode fusion (the _bf16 one takes w as uint16_t*).
const RMSNORM_QKV_ROPE = {
  parameters: [
    ptr, /* ctx */
    ptr, /* float* y (M, (HQ + 2 HKV) D) */
    ptr, /* const float* x (M, K) */
    ptr, /* const float* norm_weight (K) */
    ptr, /* const float* or uint16_t* w ((HQ + 2 HKV) D, K) */
    ptr, /* const float* bias ((HQ + 2 HKV) D) or null */
    i32, /* int32_t m */
    i32, /* int32_t k */
    f32, /* float eps */
    ptr, /* float* k_cache (S, HKV, L, D) */
    ptr, /* float* v_cache (S, HKV, L, D) */
    ptr, /* const int32_t* slots (M) */
    ptr, /* const int32_t* positions (M) */
    i32, /* int32_t hq */
    i32, /* int32_t s */
    i32, /* int32_t hkv */
    i32, /* int32_t l */
    i32, /* int32_t d */
    f32, /* float theta */
  ],
  result: status,
} as const;

/** The symbol table shared by the CPU and CUDA libraries. */
export const SYMBOLS = {
  arl_ctx_create: { parameters: [i32 /* int32_t num_threads */], result: ptr },
  arl_ctx_destroy: { parameters: [ptr /* arl_ctx* ctx */], result: "void" },
  arl_last_error: { parameters: [ptr /* const arl_ctx* ctx */], result: ptr },
  arl_set_num_threads: { parameters: [ptr, /* arl_ctx* */ i32 /* int32_t n */], result: status },
  arl_num_threads: { parameters: [ptr /* const arl_ctx* */], result: i32 },
  arl_backend_name: { parameters: [], result: ptr },
  arl_abi_version: { parameters: [], result: i32 },

  arl_fma_peak: {
    parameters: [ptr, /* arl_ctx* */ ptr, /* double* gflops */ i64 /* int64_t iterations */],
    result: status,
  },

  arl_alloc: { parameters: [ptr, /* arl_ctx* */ i64 /* int64_t bytes */], result: ptr },
  arl_free: { parameters: [ptr, /* arl_ctx* */ ptr /* void* ptr */], result: status },
  arl_copy: {
    parameters: [ptr, /* ctx */ ptr, /* void* dst */ ptr, /* const void* src */ i64 /* bytes */],
    result: status,
  },
  arl_upload_async: {
    parameters: [ptr, /* ctx */ ptr, /* void* dst */ ptr, /* const void* src */ i64 /* bytes */],
    result: status,
  },
  // Added without a new ABI version: optional, so that libraries built before it still load.
  arl_upload_alternating: {
    parameters: [
      ptr, /* ctx */
      ptr, /* void* dst */
      ptr, /* const void* src [host] */
      i64, /* int64_t bytes */
      i32, /* int32_t parity */
      i32, /* int32_t fresh */
    ],
    result: status,
    optional: true,
  },
  arl_l2_persist: {
    parameters: [
      ptr, /* arl_ctx* */
      buf, /* const void* const* bases [host] */
      buf, /* const int64_t* bytes [host] */
      i32, /* int32_t count */
      buf, /* int64_t* kept [host] */
    ],
    result: status,
  },
  arl_fill_f32: {
    parameters: [ptr, /* ctx */ ptr, /* float* dst */ f32, /* float value */ i64 /* int64_t n */],
    result: status,
  },
  arl_f32_to_bf16: {
    parameters: [ptr, /* ctx */ ptr, /* uint16_t* out */ ptr, /* const float* x */ i64 /* n */],
    result: status,
  },
  arl_bf16_to_f32: {
    parameters: [ptr, /* ctx */ ptr, /* float* out */ ptr, /* const uint16_t* x */ i64 /* n */],
    result: status,
  },

  arl_graph_begin: { parameters: [ptr /* arl_ctx* */], result: status },
  arl_graph_end: {
    parameters: [ptr, /* arl_ctx* */ ptr /* arl_graph** out */],
    result: status,
  },
  arl_graph_launch: {
    parameters: [ptr, /* arl_ctx* */ ptr /* const arl_graph* graph */],
    result: status,
  },
  arl_graph_destroy: { parameters: [ptr /* arl_graph* graph */], result: "void" },

  arl_sgemm: {
    parameters: [
      ptr, /* arl_ctx* ctx */
      ptr, /* float* c */
      ptr, /* const float* a */
      ptr, /* const float* b */
      i32, /* int32_t trans_a */
      i32, /* int32_t trans_b */
      i32, /* int32_t m */
      i32, /* int32_t n */
      i32, /* int32_t k */
      f32, /* float alpha */
      f32, /* float beta */
      i32, /* int32_t lda */
      i32, /* int32_t ldb */
      i32, /* int32_t ldc */
    ],
    result: status,
  },
  arl_linear_forward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* y (M, N) */
      ptr, /* const float* x (M, K) */
      ptr, /* const float* w (N, K) */
      ptr, /* const float* bias (N) or NULL */
      i32, /* int32_t m */
      i32, /* int32_t n */
      i32, /* int32_t k */
      i32, /* int32_t accumulate */
    ],
    result: status,
  },
  arl_linear_backward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* dx (M, K) or NULL */
      ptr, /* float* dw (N, K) or NULL, += */
      ptr, /* float* dbias (N) or NULL, += */
      ptr, /* const float* dy (M, N) */
      ptr, /* const float* x (M, K) */
      ptr, /* const float* w (N, K) */
      i32, /* int32_t m */
      i32, /* int32_t n */
      i32, /* int32_t k */
      i32, /* int32_t accumulate_dx */
    ],
    result: status,
  },
  arl_linear_forward_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* y (M, N) */
      ptr, /* const float* x (M, K) */
      ptr, /* const uint16_t* w (N, K), bf16 */
      ptr, /* const float* bias (N) or NULL */
      i32, /* int32_t m */
      i32, /* int32_t n */
      i32, /* int32_t k */
      i32, /* int32_t accumulate */
    ],
    result: status,
  },
  arl_rmsnorm_linear_forward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* y (M, N) */
      ptr, /* const float* x (M, K) */
      ptr, /* const float* norm_weight (K) */
      ptr, /* const float* w (N, K) */
      ptr, /* const float* bias (N) or NULL */
      i32, /* int32_t m */
      i32, /* int32_t n */
      i32, /* int32_t k */
      f32, /* float eps */
    ],
    result: status,
  },
  arl_rmsnorm_linear_forward_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* y (M, N) */
      ptr, /* const float* x (M, K) */
      ptr, /* const float* norm_weight (K) */
      ptr, /* const uint16_t* w (N, K), bf16 */
      ptr, /* const float* bias (N) or NULL */
      i32, /* int32_t m */
      i32, /* int32_t n */
      i32, /* int32_t k */
      f32, /* float eps */
    ],
    result: status,
  },
  arl_rmsnorm_linear_swiglu_forward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* y (M, F) */
      ptr, /* const float* x (M, K) */
      ptr, /* const float* norm_weight (K) */
      ptr, /* const float* w (2F, K): gate rows, then up rows */
      ptr, /* const float* bias (2F) or NULL */
      i32, /* int32_t m */
      i32, /* int32_t f */
      i32, /* int32_t k */
      f32, /* float eps */
    ],
    result: status,
  },
  arl_rmsnorm_linear_swiglu_forward_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* y (M, F) */
      ptr, /* const float* x (M, K) */
      ptr, /* const float* norm_weight (K) */
      ptr, /* const uint16_t* w (2F, K), bf16: gate rows, then up rows */
      ptr, /* const float* bias (2F) or NULL */
      i32, /* int32_t m */
      i32, /* int32_t f */
      i32, /* int32_t k */
      f32, /* float eps */
    ],
    result: status,
  },
  arl_rope_kv_cache_write: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* q (N, HQ, D), rotated in place */
      ptr, /* float* k (N, HKV, D), rotated in place */
      ptr, /* float* k_cache (S, HKV, L, D) */
      ptr, /* float* v_cache (S, HKV, L, D) */
      ptr, /* const float* v (N, HKV, D) */
      ptr, /* const int32_t* slots (N) */
      ptr, /* const int32_t* positions (N) */
      i32, /* int32_t n */
      i32, /* int32_t hq */
      i32, /* int32_t s */
      i32, /* int32_t hkv */
      i32, /* int32_t l */
      i32, /* int32_t d */
      f32, /* float theta */
    ],
    result: status,
  },
  // Added without a new ABI version: optional, so that libraries built before it still load.
  arl_norm_rope_kv_cache_write: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* q (N, HQ, D), normed and rotated in place */
      ptr, /* float* k (N, HKV, D), normed and rotated in place */
      ptr, /* float* k_cache (S, HKV, L, D) */
      ptr, /* float* v_cache (S, HKV, L, D) */
      ptr, /* const float* v (N, HKV, D) */
      ptr, /* const float* q_norm (D) or null */
      ptr, /* const float* k_norm (D) or null */
      ptr, /* const float* inv_freq (D / 2) or null */
      ptr, /* const int32_t* slots (N) */
      ptr, /* const int32_t* positions (N) */
      i32, /* int32_t n */
      i32, /* int32_t hq */
      i32, /* int32_t s */
      i32, /* int32_t hkv */
      i32, /* int32_t l */
      i32, /* int32_t d */
      f32, /* float eps */
      f32, /* float theta */
    ],
    result: status,
    optional: true,
  },
  arl_rmsnorm_qkv_rope_forward: RMSNORM_QKV_ROPE,
  arl_rmsnorm_qkv_rope_forward_bf16: RMSNORM_QKV_ROPE,
  arl_decode_layer_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* x (C), updated */
      ptr, /* float* qkv ((HQ + 2 HKV) D) */
      ptr, /* float* attn (HQ D) */
      ptr, /* float* act (F) */
      ptr, /* const float* ln1 (C) */
      ptr, /* const uint16_t* w_qkv ((HQ + 2 HKV) D, C) */
      ptr, /* const float* b_qkv or null */
      ptr, /* const uint16_t* w_o (C, HQ D) */
      ptr, /* const float* ln2 (C) */
      ptr, /* const uint16_t* w_gu (2F, C) */
      ptr, /* const uint16_t* w_down (C, F) */
      ptr, /* float* k_cache (S, HKV, L, D) */
      ptr, /* float* v_cache */
      ptr, /* const int32_t* slot (1) */
      ptr, /* const int32_t* position (1) */
      ptr, /* const int32_t* len (1) */
      i32, /* int32_t c */
      i32, /* int32_t f */
      i32, /* int32_t hq */
      i32, /* int32_t hkv */
      i32, /* int32_t d */
      i32, /* int32_t s */
      i32, /* int32_t l */
      f32, /* float eps */
      f32, /* float theta */
      f32, /* float scale */
    ],
    result: i32,
  },
  // Added without a new ABI version: optional, so that libraries built before it still load.
  arl_decode_layer_norms_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* x (C), updated */
      ptr, /* float* qkv ((HQ + 2 HKV) D) */
      ptr, /* float* attn (HQ D) */
      ptr, /* float* act (F) */
      ptr, /* const float* ln1 (C) */
      ptr, /* const uint16_t* w_qkv ((HQ + 2 HKV) D, C) */
      ptr, /* const float* b_qkv or null */
      ptr, /* const uint16_t* w_o (C, HQ D) */
      ptr, /* const float* ln2 (C) */
      ptr, /* const uint16_t* w_gu (2F, C) */
      ptr, /* const uint16_t* w_down (C, F) */
      ptr, /* float* k_cache (S, HKV, L, D) */
      ptr, /* float* v_cache */
      ptr, /* const float* q_norm (D) or null */
      ptr, /* const float* k_norm (D) or null */
      ptr, /* const float* inv_freq (D / 2) or null */
      ptr, /* const int32_t* slot (1) */
      ptr, /* const int32_t* position (1) */
      ptr, /* const int32_t* len (1) */
      i32, /* int32_t c */
      i32, /* int32_t f */
      i32, /* int32_t hq */
      i32, /* int32_t hkv */
      i32, /* int32_t d */
      i32, /* int32_t s */
      i32, /* int32_t l */
      f32, /* float eps */
      f32, /* float theta */
      f32, /* float scale */
    ],
    result: i32,
    optional: true,
  },
  arl_decode_layers_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* x (C), updated */
      ptr, /* float* qkv ((HQ + 2 HKV) D) */
      ptr, /* float* attn (HQ D) */
      ptr, /* float* act (F) */
      "buffer", /* const arl_decode_layer_ptrs* layers (host: 9 pointers a layer) */
      i32, /* int32_t n_layers */
      ptr, /* const int32_t* slot (1) */
      ptr, /* const int32_t* position (1) */
      ptr, /* const int32_t* len (1) */
      i32, /* int32_t c */
      i32, /* int32_t f */
      i32, /* int32_t hq */
      i32, /* int32_t hkv */
      i32, /* int32_t d */
      i32, /* int32_t s */
      i32, /* int32_t l */
      f32, /* float eps */
      f32, /* float theta */
      f32, /* float scale */
    ],
    result: i32,
  },
  arl_linear_backward_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* dx (M, K) or NULL */
      ptr, /* float* dw (N, K) or NULL, += */
      ptr, /* float* dbias (N) or NULL, += */
      ptr, /* const float* dy (M, N) */
      ptr, /* const float* x (M, K) */
      ptr, /* const uint16_t* w (N, K), bf16 */
      i32, /* int32_t m */
      i32, /* int32_t n */
      i32, /* int32_t k */
      i32, /* int32_t accumulate_dx */
    ],
    result: status,
  },

  arl_embedding_forward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* out (T, C) */
      ptr, /* const int32_t* tokens (T) */
      ptr, /* const float* wte (V, C) */
      i32, /* int32_t t */
      i32, /* int32_t v */
      i32, /* int32_t c */
    ],
    result: status,
  },
  arl_embedding_backward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* dwte (V, C), += */
      ptr, /* const float* dout (T, C) */
      ptr, /* const int32_t* tokens (T) */
      i32, /* int32_t t */
      i32, /* int32_t v */
      i32, /* int32_t c */
    ],
    result: status,
  },
  arl_rmsnorm_forward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* out (T, C) */
      ptr, /* float* rstd (T) */
      ptr, /* const float* x (T, C) */
      ptr, /* const float* weight (C) */
      i32, /* int32_t t */
      i32, /* int32_t c */
      f32, /* float eps */
    ],
    result: status,
  },
  arl_rmsnorm_backward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* dx (T, C) */
      ptr, /* float* dweight (C) or NULL, += */
      ptr, /* const float* dout (T, C) */
      ptr, /* const float* x (T, C) */
      ptr, /* const float* rstd (T) */
      ptr, /* const float* weight (C) */
      i32, /* int32_t t */
      i32, /* int32_t c */
    ],
    result: status,
  },
  arl_rope: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* out (T, H, D) */
      ptr, /* const float* x (T, H, D) */
      ptr, /* const int32_t* positions (T) */
      i32, /* int32_t t */
      i32, /* int32_t h */
      i32, /* int32_t d */
      f32, /* float theta */
      i32, /* int32_t inverse */
    ],
    result: status,
  },
  // Added without a new ABI version: optional, so that libraries built before it still load.
  arl_rope_freqs: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* out (T, H, D) */
      ptr, /* const float* x (T, H, D) */
      ptr, /* const int32_t* positions (T) */
      ptr, /* const float* inv_freq (D / 2) */
      i32, /* int32_t t */
      i32, /* int32_t h */
      i32, /* int32_t d */
      i32, /* int32_t inverse */
    ],
    result: status,
    optional: true,
  },
  arl_swiglu_forward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* out (N) */
      ptr, /* const float* gate (N) */
      ptr, /* const float* up (N) */
      i64, /* int64_t n */
    ],
    result: status,
  },
  arl_swiglu_backward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* dgate (N) */
      ptr, /* float* dup (N) */
      ptr, /* const float* dout (N) */
      ptr, /* const float* gate (N) */
      ptr, /* const float* up (N) */
      i64, /* int64_t n */
    ],
    result: status,
  },
  arl_add: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* out */
      ptr, /* const float* a */
      ptr, /* const float* b */
      i64, /* n */
    ],
    result: status,
  },

  arl_attention_forward: ATTENTION_FORWARD,
  arl_attention_forward_bf16: ATTENTION_FORWARD,
  arl_attention_backward: ATTENTION_BACKWARD,
  arl_attention_backward_bf16: ATTENTION_BACKWARD,
  arl_kv_cache_write: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* k_cache (S, HKV, L, D) */
      ptr, /* float* v_cache (S, HKV, L, D) */
      ptr, /* const float* k (N, HKV, D) */
      ptr, /* const float* v (N, HKV, D) */
      ptr, /* const int32_t* slots (N) */
      ptr, /* const int32_t* positions (N) */
      i32, /* int32_t n */
      i32, /* int32_t s */
      i32, /* int32_t hkv */
      i32, /* int32_t l */
      i32, /* int32_t d */
    ],
    result: status,
  },
  arl_attention_decode: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* out (N, HQ, D) */
      ptr, /* const float* q (N, HQ, D) */
      ptr, /* const float* k_cache (S, HKV, L, D) */
      ptr, /* const float* v_cache (S, HKV, L, D) */
      ptr, /* const int32_t* slots (N) */
      ptr, /* const int32_t* lens (N) */
      i32, /* int32_t n */
      i32, /* int32_t s */
      i32, /* int32_t hq */
      i32, /* int32_t hkv */
      i32, /* int32_t l */
      i32, /* int32_t d */
      f32, /* float scale */
    ],
    result: status,
  },

  arl_logprob_forward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* logp (T) */
      ptr, /* float* entropy (T) or NULL */
      ptr, /* float* lse (T) */
      ptr, /* const float* h (T, C) */
      ptr, /* const int32_t* targets (T) */
      ptr, /* const float* w (V, C) */
      i32, /* int32_t t */
      i32, /* int32_t v */
      i32, /* int32_t c */
      f32, /* float temperature */
    ],
    result: status,
  },
  arl_logprob_backward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* dh (T, C) */
      ptr, /* float* dw (V, C) or NULL, += */
      ptr, /* const float* dlogp (T) */
      ptr, /* const float* dentropy (T) or NULL */
      ptr, /* const float* h (T, C) */
      ptr, /* const int32_t* targets (T) */
      ptr, /* const float* w (V, C) */
      ptr, /* const float* lse (T) */
      ptr, /* const float* entropy (T) or NULL */
      i32, /* int32_t t */
      i32, /* int32_t v */
      i32, /* int32_t c */
      f32, /* float temperature */
    ],
    result: status,
  },
  arl_lm_head: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* logits (T, V) */
      ptr, /* const float* h (T, C) */
      ptr, /* const float* w (V, C) */
      i32, /* int32_t t */
      i32, /* int32_t v */
      i32, /* int32_t c */
    ],
    result: status,
  },
  arl_logprob_forward_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* logp (T) */
      ptr, /* float* entropy (T) or NULL */
      ptr, /* float* lse (T) */
      ptr, /* const float* h (T, C) */
      ptr, /* const int32_t* targets (T) */
      ptr, /* const uint16_t* w (V, C), bf16 */
      i32, /* int32_t t */
      i32, /* int32_t v */
      i32, /* int32_t c */
      f32, /* float temperature */
    ],
    result: status,
  },
  arl_logprob_backward_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* dh (T, C) */
      ptr, /* float* dw (V, C) or NULL, += */
      ptr, /* const float* dlogp (T) */
      ptr, /* const float* dentropy (T) or NULL */
      ptr, /* const float* h (T, C) */
      ptr, /* const int32_t* targets (T) */
      ptr, /* const uint16_t* w (V, C), bf16 */
      ptr, /* const float* lse (T) */
      ptr, /* const float* entropy (T) or NULL */
      i32, /* int32_t t */
      i32, /* int32_t v */
      i32, /* int32_t c */
      f32, /* float temperature */
    ],
    result: status,
  },
  arl_lm_head_bf16: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* logits (T, V) */
      ptr, /* const float* h (T, C) */
      ptr, /* const uint16_t* w (V, C), bf16 */
      i32, /* int32_t t */
      i32, /* int32_t v */
      i32, /* int32_t c */
    ],
    result: status,
  },
  arl_value_head_forward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* values (T) */
      ptr, /* const float* h (T, C) */
      ptr, /* const float* w (C) */
      f32, /* float bias */
      i32, /* int32_t t */
      i32, /* int32_t c */
    ],
    result: status,
  },
  arl_value_head_backward: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* dh (T, C) or NULL */
      ptr, /* float* dw (C) or NULL, += */
      ptr, /* float* dbias (1) or NULL, += */
      ptr, /* const float* dvalues (T) */
      ptr, /* const float* h (T, C) */
      ptr, /* const float* w (C) */
      i32, /* int32_t t */
      i32, /* int32_t c */
    ],
    result: status,
  },

  arl_ppo_loss: {
    parameters: [
      ptr, /* ctx */
      ptr, /* arl_ppo_metrics* metrics */
      ptr, /* float* dlogp (T) */
      ptr, /* float* dentropy (T) or NULL */
      ptr, /* const float* logp (T) */
      ptr, /* const float* old_logp (T) */
      ptr, /* const float* ref_logp (T) or NULL */
      ptr, /* const float* advantages (T) */
      ptr, /* const float* entropy (T) or NULL */
      ptr, /* const float* mask (T) */
      ptr, /* const float* sft_mask (T) or NULL */
      ptr, /* const int32_t* cu_seqlens (B + 1) */
      i32, /* int32_t b */
      i32, /* int32_t t */
      ptr, /* const arl_ppo_params* params */
    ],
    result: status,
  },
  arl_value_loss: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* loss (1) */
      ptr, /* float* clipfrac (1) */
      ptr, /* float* dvalues (T) */
      ptr, /* const float* values (T) */
      ptr, /* const float* old_values (T) or NULL */
      ptr, /* const float* returns (T) */
      ptr, /* const float* mask (T) */
      ptr, /* const int32_t* cu_seqlens (B + 1) */
      i32, /* int32_t b */
      i32, /* int32_t t */
      f32, /* float value_clip */
      i32, /* int32_t agg_mode */
      f32, /* float norm_len */
    ],
    result: status,
  },
  arl_kl_full: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* kl (T) */
      ptr, /* float* dlogits (T, V) or NULL */
      ptr, /* const float* logits (T, V) */
      ptr, /* const float* ref_logits (T, V) */
      ptr, /* const float* dkl (T) or NULL */
      i32, /* int32_t t */
      i32, /* int32_t v */
    ],
    result: status,
  },

  arl_sum_squares: {
    parameters: [ptr, /* ctx */ ptr, /* double* out */ ptr, /* const float* x */ i64 /* n */],
    result: status,
  },
  arl_scale: {
    parameters: [ptr, /* ctx */ ptr, /* float* x */ f32, /* float s */ i64 /* n */],
    result: status,
  },
  arl_adamw: {
    parameters: [
      ptr, /* ctx */
      ptr, /* float* params (N) */
      ptr, /* float* m (N) */
      ptr, /* float* v (N) */
      ptr, /* const float* grads (N) */
      i64, /* int64_t n */
      f32, /* float lr */
      f32, /* float beta1 */
      f32, /* float beta2 */
      f32, /* float eps */
      f32, /* float weight_decay */
      i32, /* int32_t step */
      f32, /* float grad_scale */
    ],
    result: status,
  },

  arl_sample: {
    parameters: [
      ptr, /* ctx */
      ptr, /* int32_t* tokens (N) */
      ptr, /* float* logprobs (N) or NULL */
      ptr, /* const float* logits (N, V) */
      ptr, /* const float* temperature (N) */
      ptr, /* const int32_t* top_k (N) */
      ptr, /* const float* top_p (N) */
      ptr, /* const uint64_t* seeds (N) */
      ptr, /* const uint64_t* counters (N) */
      i32, /* int32_t n */
      i32, /* int32_t v */
    ],
    result: status,
  },
  arl_sample_start: {
    parameters: [
      ptr, /* ctx */
      buf, /* int64_t* ticket [host] */
      ptr, /* int32_t* ids (N) or NULL */
      ptr, /* const float* logits (N, V) */
      buf, /* const float* temperature (N) */
      buf, /* const int32_t* top_k (N) */
      buf, /* const float* top_p (N) */
      buf, /* const uint64_t* seeds (N) */
      buf, /* const uint64_t* counters (N) */
      i32, /* int32_t n */
      i32, /* int32_t v */
    ],
    result: status,
  },
  arl_sample_finish: {
    parameters: [
      ptr, /* ctx */
      buf, /* int32_t* tokens (N) [host] or NULL */
      buf, /* float* logprobs (N) [host] or NULL */
      i64, /* int64_t ticket */
      i32, /* int32_t n */
    ],
    result: status,
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** The loaded library's functions. */
export type KernelSymbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
