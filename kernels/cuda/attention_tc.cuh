// Packed causal attention on the tensor cores (arl_attention_forward_bf16 and
// arl_attention_backward_bf16), for head dims 64 and 128.
//
// q, k, v and dout are rounded to bf16 as they are staged in shared memory; every product
// (scores, P.V, dO.V^T, dS.K, P^T.dO, dS^T.Q) runs as 16x16x16 bf16 WMMA tiles with fp32
// accumulators. Softmax, its statistics and the score gradients are fp32; probabilities and
// score gradients are rounded to bf16 for the product that follows.
//
// A block takes 64 rows of one query head (16 per warp) and walks the 64-row tiles of the
// other side that its rows attend to (or are attended by). WMMA leaves the order of an
// accumulator's elements across lanes unspecified, so the row-wise work (masks, softmax) reads
// a per-warp fp32 tile in shared memory: two lanes per row, 32 columns each. Hence the forward
// pass sweeps the keys twice, first for each row's max and sum (its log-sum-exp), then for
// exp(s - lse) . V, which needs no rescaling of the output accumulators. dk and dv of a group
// of query heads sharing a kv head are written per query head and summed by sum_heads, in a
// fixed order.
//
// Included by attention.cu inside its anonymous namespace (sequence_of), after <cuda_bf16.h>
// and <mma.h>.
#pragma once

namespace tc {

using namespace nvcuda;
using bf16 = __nv_bfloat16;

constexpr int kWarps = 4;
constexpr int kRows = 16;               // rows per warp: one WMMA tile
constexpr int kBlock = kWarps * kRows;  // rows per block
constexpr int kTile = 64;               // rows of the other side per step
constexpr int kPad = 8;                 // bf16 row padding; keeps fragments 32-byte aligned

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragBt = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Shared-memory shapes for head dim D (element counts).
template <int D>
struct Shape {
  static_assert(D % 16 == 0, "head dim must be a multiple of 16");
  static constexpr int kLd = D + kPad;                        // a staged bf16 row
  static constexpr int kLdS = (D > kTile ? D : kTile) + 4;    // a warp's fp32 tile row
  static constexpr int kLdP = kTile + kPad;                   // a warp's bf16 tile row
  static constexpr int kStaged = kTile * kLd;                 // a staged 64-row tile
  static constexpr int kWarpS = kRows * kLdS;                 // a warp's fp32 tile
  static constexpr int kWarpP = kRows * kLdP;                 // a warp's bf16 tile
  // forward: k, v, q tiles; fp32 and bf16 tiles per warp
  static constexpr size_t kForwardBytes =
      3 * kStaged * sizeof(bf16) + kWarps * (kWarpS * sizeof(float) + kWarpP * sizeof(bf16));
  // dq: k, v tiles; q, dout staging sharing space with two fp32 tiles per warp; bf16 per warp
  static constexpr size_t kStagingBytes = 2 * kStaged * sizeof(bf16);
  static constexpr size_t kWarpPairBytes = kWarps * 2 * kWarpS * sizeof(float);
  static constexpr size_t kSharedBytes =
      kStagingBytes > kWarpPairBytes ? kStagingBytes : kWarpPairBytes;
  static constexpr size_t kDqBytes =
      kStagingBytes + kSharedBytes + kWarps * kWarpP * sizeof(bf16);
  // dk/dv: q, dout tiles; k, v staging shared as above; two bf16 tiles per warp; lse, delta
  static constexpr size_t kDkdvBytes =
      kStagingBytes + kSharedBytes + kWarps * 2 * kWarpP * sizeof(bf16) + 2 * kTile * sizeof(float);
};

__device__ inline int32_t warp_min_i(int32_t v) {
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ inline int32_t warp_max_i(int32_t v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Rows [r0, r0 + 64) of x (rows `stride` floats apart, head offset applied; 16-byte aligned)
// times mul, rounded to bf16 into a staged tile; rows past `last` become zeros.
template <int D>
__device__ inline void stage(bf16* tile, const float* __restrict__ x, int64_t stride, int32_t r0,
                             int32_t last, float mul) {
  for (int e = threadIdx.x; e < kTile * (D / 4); e += blockDim.x) {
    const int j = e / (D / 4), c = (e - j * (D / 4)) * 4;
    const int32_t r = r0 + j;
    float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r <= last) val = __ldg(reinterpret_cast<const float4*>(x + int64_t(r) * stride + c));
    bf16* dst = tile + j * Shape<D>::kLd + c;
    dst[0] = __float2bfloat16_rn(val.x * mul);
    dst[1] = __float2bfloat16_rn(val.y * mul);
    dst[2] = __float2bfloat16_rn(val.z * mul);
    dst[3] = __float2bfloat16_rn(val.w * mul);
  }
}

// The warp's 16 rows of a staged tile as A fragments (16 x D).
template <int D>
__device__ inline void load_rows(FragA (&a)[D / 16], const bf16* tile) {
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++)
    wmma::load_matrix_sync(a[kk], tile + warp * kRows * Shape<D>::kLd + kk * 16, Shape<D>::kLd);
}

// s (16 x 64, fp32, the warp's tile) = a (16 x D) . tile^T (tile: 64 staged rows of D).
template <int D>
__device__ inline void products(float* s, const FragA (&a)[D / 16], const bf16* tile) {
#pragma unroll
  for (int nt = 0; nt < kTile / 16; nt++) {
    FragC acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
      FragBt bt;
      wmma::load_matrix_sync(bt, tile + nt * 16 * Shape<D>::kLd + kk * 16, Shape<D>::kLd);
      wmma::mma_sync(acc, a[kk], bt, acc);
    }
    wmma::store_matrix_sync(s + nt * 16, acc, Shape<D>::kLdS, wmma::mem_row_major);
  }
}

// acc (16 x D) += p (16 x 64, bf16, the warp's tile) . tile (64 staged rows of D).
template <int D>
__device__ inline void accumulate(FragC (&acc)[D / 16], const bf16* p, const bf16* tile) {
#pragma unroll
  for (int kk = 0; kk < kTile / 16; kk++) {
    FragA a;
    wmma::load_matrix_sync(a, p + kk * 16, Shape<D>::kLdP);
#pragma unroll
    for (int nt = 0; nt < D / 16; nt++) {
      FragB bm;
      wmma::load_matrix_sync(bm, tile + kk * 16 * Shape<D>::kLd + nt * 16, Shape<D>::kLd);
      wmma::mma_sync(acc[nt], a, bm, acc[nt]);
    }
  }
}

template <int D>
__device__ inline void zero(FragC (&acc)[D / 16]) {
#pragma unroll
  for (int nt = 0; nt < D / 16; nt++) wmma::fill_fragment(acc[nt], 0.0f);
}

// Rows [row0, row0 + 16) (those < t) of dst (rows `stride` floats apart, head offset applied)
// = acc * mul, through the warp's fp32 tile s.
template <int D>
__device__ inline void write_rows(float* __restrict__ dst, int64_t stride, int32_t row0,
                                  int32_t t, const FragC (&acc)[D / 16], float* s, float mul) {
#pragma unroll
  for (int nt = 0; nt < D / 16; nt++)
    wmma::store_matrix_sync(s + nt * 16, acc[nt], Shape<D>::kLdS, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x & 31; e < kRows * D; e += 32) {
    const int r = e / D, c = e - r * D;
    if (row0 + r < t) dst[int64_t(row0 + r) * stride + c] = s[r * Shape<D>::kLdS + c] * mul;
  }
  __syncwarp();
}

// The lane's row of the warp's tiles (two lanes per row) and of the block's rows.
struct LaneRow {
  int in_warp, half;  // row in the warp tile; which 32 columns of it this lane takes
  int rot;            // where in its 32 columns the lane starts (no two lanes share a bank)
  int32_t row;        // packed row (query or key)
  bool valid;         // row < t
  int32_t start, end;  // its sequence's rows [start, end)
};

__device__ inline LaneRow lane_row(const int32_t* cu, int32_t b, int32_t t) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  LaneRow r;
  r.in_warp = lane >> 1;
  r.half = lane & 1;
  // Rows are 4 banks apart (fp32 tiles of 64 + 4 or 128 + 4 floats): with column
  // (i + rot) % 32 at step i, the 32 lanes read 32 different banks.
  r.rot = 2 * (r.in_warp >> 3) + r.half;
  r.row = blockIdx.x * kBlock + warp * kRows + r.in_warp;
  r.valid = r.row < t;
  r.start = r.end = 0;
  if (r.valid) {
    const int32_t s = sequence_of(cu, b, r.row);
    r.start = cu[s];
    r.end = cu[s + 1];
  }
  return r;
}

// The range [lo, hi] of the other side's rows that the warp's rows need (warp-uniform) and
// the block's (through shared lo_s, hi_s; the caller synchronizes before reading them).
__device__ inline void other_rows(int32_t lo, int32_t hi, int32_t& warp_lo, int32_t& warp_hi,
                                  int32_t* lo_s, int32_t* hi_s) {
  warp_lo = warp_min_i(lo);
  warp_hi = warp_max_i(hi);
  if ((threadIdx.x & 31) == 0) {
    atomicMin(lo_s, warp_lo);
    atomicMax(hi_s, warp_hi);
  }
}

template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    forward(float* __restrict__ out, float* __restrict__ lse, const float* __restrict__ q,
            const float* __restrict__ k, const float* __restrict__ v,
            const int32_t* __restrict__ cu, int32_t b, int32_t t, int32_t hq, int32_t hkv,
            float scale) {
  using S = Shape<D>;
  extern __shared__ __align__(128) uint8_t tc_smem[];
  __shared__ int32_t lo_s, hi_s;
  const int warp = threadIdx.x >> 5;
  bf16* ks = reinterpret_cast<bf16*>(tc_smem);
  bf16* vs = ks + S::kStaged;
  bf16* qs = vs + S::kStaged;
  float* sw = reinterpret_cast<float*>(qs + S::kStaged) + warp * S::kWarpS;
  bf16* pw = reinterpret_cast<bf16*>(reinterpret_cast<float*>(qs + S::kStaged) +
                                     kWarps * S::kWarpS) + warp * S::kWarpP;
  const int32_t h = blockIdx.y, kvh = h / (hq / hkv);
  const int64_t ldq = int64_t(hq) * D, ldkv = int64_t(hkv) * D;
  const int32_t r0 = blockIdx.x * kBlock;
  const LaneRow me = lane_row(cu, b, t);
  if (threadIdx.x == 0) lo_s = INT32_MAX, hi_s = -1;
  __syncthreads();
  int32_t wlo, whi;  // keys of the warp's rows: [min start, max row]
  other_rows(me.valid ? me.start : INT32_MAX, me.valid ? me.row : -1, wlo, whi, &lo_s, &hi_s);
  stage<D>(qs, q + int64_t(h) * D, ldq, r0, t - 1, scale);
  __syncthreads();
  const int32_t lo = lo_s, hi = hi_s;
  FragA qa[D / 16];
  load_rows<D>(qa, qs);
  const float* srow = sw + me.in_warp * S::kLdS + me.half * 32;
  const int32_t col0 = me.half * 32;
  // sweep 1: each row's running max m and sum l of exp(s - m)
  float m = -INFINITY, l = 0.f;
  for (int32_t k0 = lo; k0 <= hi; k0 += kTile) {
    __syncthreads();
    stage<D>(ks, k + int64_t(kvh) * D, ldkv, k0, hi, 1.f);
    __syncthreads();
    if (k0 > whi || k0 + kTile <= wlo) continue;
    products<D>(sw, qa, ks);
    __syncwarp();
    float mt = -INFINITY;
#pragma unroll 8
    for (int i = 0; i < 32; i++) {
      const int c = (i + me.rot) & 31;
      const int32_t key = k0 + col0 + c;
      if (me.valid && key >= me.start && key <= me.row) mt = fmaxf(mt, srow[c]);
    }
    mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
    const bool any = mt != -INFINITY;
    const float m_new = any ? fmaxf(m, mt) : m;
    float sum = 0.f;
    if (any)
#pragma unroll 8
      for (int i = 0; i < 32; i++) {
        const int c = (i + me.rot) & 31;
        const int32_t key = k0 + col0 + c;
        if (key >= me.start && key <= me.row) sum += __expf(srow[c] - m_new);
      }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    if (any) {
      l = l * __expf(m - m_new) + sum;
      m = m_new;
    }
    __syncwarp();
  }
  const float row_lse = m + logf(l);
  // sweep 2: out = exp(s - lse) . V
  FragC o[D / 16];
  zero<D>(o);
  bf16* prow = pw + me.in_warp * S::kLdP + col0;
  for (int32_t k0 = lo; k0 <= hi; k0 += kTile) {
    __syncthreads();
    stage<D>(ks, k + int64_t(kvh) * D, ldkv, k0, hi, 1.f);
    stage<D>(vs, v + int64_t(kvh) * D, ldkv, k0, hi, 1.f);
    __syncthreads();
    if (k0 > whi || k0 + kTile <= wlo) continue;
    products<D>(sw, qa, ks);
    __syncwarp();
#pragma unroll 8
    for (int i = 0; i < 32; i++) {
      const int c = (i + me.rot) & 31;
      const int32_t key = k0 + col0 + c;
      const bool in = me.valid && key >= me.start && key <= me.row;
      prow[c] = __float2bfloat16_rn(in ? __expf(srow[c] - row_lse) : 0.f);
    }
    __syncwarp();
    accumulate<D>(o, pw, vs);
  }
  write_rows<D>(out + int64_t(h) * D, ldq, r0 + warp * kRows, t, o, sw, 1.f);
  if (me.valid && me.half == 0) lse[int64_t(h) * t + me.row] = row_lse;
}

template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    backward_dq(float* __restrict__ dq, const float* __restrict__ dout,
                const float* __restrict__ q, const float* __restrict__ k,
                const float* __restrict__ v, const float* __restrict__ lse,
                const float* __restrict__ delta, const int32_t* __restrict__ cu, int32_t b,
                int32_t t, int32_t hq, int32_t hkv, float scale) {
  using S = Shape<D>;
  extern __shared__ __align__(128) uint8_t tc_smem[];
  __shared__ int32_t lo_s, hi_s;
  const int warp = threadIdx.x >> 5;
  bf16* ks = reinterpret_cast<bf16*>(tc_smem);
  bf16* vs = ks + S::kStaged;
  uint8_t* shared = tc_smem + S::kStagingBytes;  // q, dout staging, then the fp32 tiles
  bf16* qs = reinterpret_cast<bf16*>(shared);
  bf16* gs = qs + S::kStaged;
  float* sw = reinterpret_cast<float*>(shared) + warp * 2 * S::kWarpS;
  float* dpw = sw + S::kWarpS;
  bf16* dsw = reinterpret_cast<bf16*>(shared + S::kSharedBytes) + warp * S::kWarpP;
  const int32_t h = blockIdx.y, kvh = h / (hq / hkv);
  const int64_t ldq = int64_t(hq) * D, ldkv = int64_t(hkv) * D;
  const int32_t r0 = blockIdx.x * kBlock;
  const LaneRow me = lane_row(cu, b, t);
  if (threadIdx.x == 0) lo_s = INT32_MAX, hi_s = -1;
  __syncthreads();
  int32_t wlo, whi;
  other_rows(me.valid ? me.start : INT32_MAX, me.valid ? me.row : -1, wlo, whi, &lo_s, &hi_s);
  stage<D>(qs, q + int64_t(h) * D, ldq, r0, t - 1, scale);
  stage<D>(gs, dout + int64_t(h) * D, ldq, r0, t - 1, 1.f);
  const float row_lse = me.valid ? lse[int64_t(h) * t + me.row] : 0.f;
  const float row_delta = me.valid ? delta[int64_t(h) * t + me.row] : 0.f;
  __syncthreads();
  const int32_t lo = lo_s, hi = hi_s;
  FragA qa[D / 16], ga[D / 16];
  load_rows<D>(qa, qs);
  load_rows<D>(ga, gs);
  FragC acc[D / 16];
  zero<D>(acc);
  const int32_t col0 = me.half * 32;
  const float* srow = sw + me.in_warp * S::kLdS + col0;
  const float* dprow = dpw + me.in_warp * S::kLdS + col0;
  bf16* dsrow = dsw + me.in_warp * S::kLdP + col0;
  for (int32_t k0 = lo; k0 <= hi; k0 += kTile) {
    __syncthreads();  // the first pass: every warp has its q and dout fragments
    stage<D>(ks, k + int64_t(kvh) * D, ldkv, k0, hi, 1.f);
    stage<D>(vs, v + int64_t(kvh) * D, ldkv, k0, hi, 1.f);
    __syncthreads();
    if (k0 > whi || k0 + kTile <= wlo) continue;
    products<D>(sw, qa, ks);   // scores
    products<D>(dpw, ga, vs);  // dP = dout . V^T
    __syncwarp();
#pragma unroll 8
    for (int i = 0; i < 32; i++) {
      const int c = (i + me.rot) & 31;
      const int32_t key = k0 + col0 + c;
      const bool in = me.valid && key >= me.start && key <= me.row;
      const float ds = in ? __expf(srow[c] - row_lse) * (dprow[c] - row_delta) : 0.f;
      dsrow[c] = __float2bfloat16_rn(ds);
    }
    __syncwarp();
    accumulate<D>(acc, dsw, ks);  // dq += dS . K (times scale at the end)
    __syncwarp();
  }
  write_rows<D>(dq + int64_t(h) * D, ldq, r0 + warp * kRows, t, acc, sw, scale);
}

// dk, dv of key rows blockIdx.x * 64 ... for query head blockIdx.y: written to dk, dv at
// (row, head offset `off`) with rows `stride` floats apart (the kv head's columns when a kv
// head serves one query head, else a per-query-head buffer that sum_heads reduces).
template <int D>
__global__ void __launch_bounds__(kWarps * 32)
    backward_dkdv(float* __restrict__ dk, float* __restrict__ dv, int64_t stride, int64_t off_h,
                  int64_t off_kvh, const float* __restrict__ dout, const float* __restrict__ q,
                  const float* __restrict__ k, const float* __restrict__ v,
                  const float* __restrict__ lse, const float* __restrict__ delta,
                  const int32_t* __restrict__ cu, int32_t b, int32_t t, int32_t hq, int32_t hkv,
                  float scale) {
  using S = Shape<D>;
  extern __shared__ __align__(128) uint8_t tc_smem[];
  __shared__ int32_t lo_s, hi_s;
  const int warp = threadIdx.x >> 5;
  bf16* qs = reinterpret_cast<bf16*>(tc_smem);
  bf16* gs = qs + S::kStaged;
  uint8_t* shared = tc_smem + S::kStagingBytes;  // k, v staging, then the fp32 tiles
  bf16* ks = reinterpret_cast<bf16*>(shared);
  bf16* vs = ks + S::kStaged;
  float* sw = reinterpret_cast<float*>(shared) + warp * 2 * S::kWarpS;
  float* dpw = sw + S::kWarpS;
  bf16* pw = reinterpret_cast<bf16*>(shared + S::kSharedBytes) + warp * 2 * S::kWarpP;
  bf16* dsw = pw + S::kWarpP;
  float* ls = reinterpret_cast<float*>(shared + S::kSharedBytes +
                                       kWarps * 2 * S::kWarpP * sizeof(bf16));
  float* es = ls + kTile;
  const int32_t h = blockIdx.y, kvh = h / (hq / hkv);
  const int64_t ldq = int64_t(hq) * D, ldkv = int64_t(hkv) * D;
  const int32_t r0 = blockIdx.x * kBlock;
  const LaneRow me = lane_row(cu, b, t);  // key rows
  if (threadIdx.x == 0) lo_s = INT32_MAX, hi_s = -1;
  __syncthreads();
  int32_t wlo, whi;  // queries that attend to the warp's keys: [min row, max end - 1]
  other_rows(me.valid ? me.row : INT32_MAX, me.valid ? me.end - 1 : -1, wlo, whi, &lo_s, &hi_s);
  stage<D>(ks, k + int64_t(kvh) * D, ldkv, r0, t - 1, 1.f);
  stage<D>(vs, v + int64_t(kvh) * D, ldkv, r0, t - 1, 1.f);
  __syncthreads();
  const int32_t lo = lo_s, hi = hi_s;
  FragA ka[D / 16], va[D / 16];
  load_rows<D>(ka, ks);
  load_rows<D>(va, vs);
  FragC dka[D / 16], dva[D / 16];
  zero<D>(dka);
  zero<D>(dva);
  const int32_t col0 = me.half * 32;
  const float* srow = sw + me.in_warp * S::kLdS + col0;
  const float* dprow = dpw + me.in_warp * S::kLdS + col0;
  bf16* prow = pw + me.in_warp * S::kLdP + col0;
  bf16* dsrow = dsw + me.in_warp * S::kLdP + col0;
  for (int32_t q0 = lo; q0 <= hi; q0 += kTile) {
    __syncthreads();  // the first pass: every warp has its k and v fragments
    stage<D>(qs, q + int64_t(h) * D, ldq, q0, hi, scale);
    stage<D>(gs, dout + int64_t(h) * D, ldq, q0, hi, 1.f);
    if (threadIdx.x < kTile) {
      const int32_t r = q0 + threadIdx.x;
      ls[threadIdx.x] = r <= hi ? lse[int64_t(h) * t + r] : 0.f;
      es[threadIdx.x] = r <= hi ? delta[int64_t(h) * t + r] : 0.f;
    }
    __syncthreads();
    if (q0 > whi || q0 + kTile <= wlo) continue;
    products<D>(sw, ka, qs);   // scores^T: keys x queries
    products<D>(dpw, va, gs);  // dP^T = V . dout^T
    __syncwarp();
#pragma unroll 8
    for (int i = 0; i < 32; i++) {
      const int c = (i + me.rot) & 31;
      const int32_t qi = q0 + col0 + c;
      const bool in = me.valid && qi >= me.row && qi < me.end;
      const float p = in ? __expf(srow[c] - ls[col0 + c]) : 0.f;
      prow[c] = __float2bfloat16_rn(p);
      dsrow[c] = __float2bfloat16_rn(p * (dprow[c] - es[col0 + c]));
    }
    __syncwarp();
    accumulate<D>(dva, pw, gs);   // dv += P^T . dout
    accumulate<D>(dka, dsw, qs);  // dk += dS^T . (q * scale)
    __syncwarp();
  }
  const int64_t off = int64_t(h) * off_h + int64_t(kvh) * off_kvh;
  write_rows<D>(dk + off, stride, r0 + warp * kRows, t, dka, sw, 1.f);
  write_rows<D>(dv + off, stride, r0 + warp * kRows, t, dva, sw, 1.f);
}

// dk, dv (T, HKV, D) = the sums over each kv head's group of the per-query-head parts
// (HQ, T, D), in head order.
__global__ void sum_heads(float* __restrict__ dk, float* __restrict__ dv,
                          const float* __restrict__ part_k, const float* __restrict__ part_v,
                          int32_t t, int32_t hq, int32_t hkv, int32_t d) {
  const int64_t n = int64_t(t) * hkv * d;
  const int32_t group = hq / hkv;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / (int64_t(hkv) * d), rest = i - r * hkv * d;
    const int32_t kvh = int32_t(rest / d), c = int32_t(rest - int64_t(kvh) * d);
    float sk = 0.f, sv = 0.f;
    for (int32_t g = 0; g < group; g++) {
      const int64_t at = (int64_t(kvh * group + g) * t + r) * d + c;
      sk += part_k[at];
      sv += part_v[at];
    }
    dk[i] = sk;
    dv[i] = sv;
  }
}

}  // namespace tc
