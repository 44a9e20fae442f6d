// Packed causal attention for head dim 64 (Qwen2.5-0.5B's), faster than the
// generic kernels: each warp takes kRows rows at once, so every shared-memory
// read of the other side's tile serves kRows dot products (16-byte loads), and
// the tile's dims split 2 per lane for the accumulations.
//
// Included by attention.cu (which defines sequence_of, warp_sum, warp_max).
#pragma once

namespace d64 {

constexpr int D = 64;
constexpr int kLd = D + 4;  // padded row: 16-byte aligned, conflict-free for per-lane rows
constexpr int kWarps = 4;
constexpr int kRows = 4;  // rows per warp
constexpr int kBlockRows = kWarps * kRows;
constexpr int kTile = 32;

__device__ inline float dot4(float4 a, float4 b, float s) {
  return fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, s))));
}

// The rows of this warp: row, sequence start and end (exclusive); invalid rows get t.
struct Rows {
  int32_t row[kRows], start[kRows], end[kRows];
};

__device__ inline Rows warp_rows(const int32_t* cu, int32_t b, int32_t t) {
  Rows w;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int r = 0; r < kRows; r++) {
    w.row[r] = blockIdx.x * kBlockRows + warp * kRows + r;
    if (w.row[r] < t) {
      const int32_t s = sequence_of(cu, b, w.row[r]);
      w.start[r] = cu[s];
      w.end[r] = cu[s + 1];
    } else {
      w.row[r] = w.start[r] = w.end[r] = t;
    }
  }
  return w;
}

// Copies rows [r0, r0 + n) (those <= last) of x (stride elements apart; head offset applied)
// into tile rows of ld floats, times mul; missing rows become zeros.
__device__ inline void load_rows(float* tile, int ld, const float* x, int64_t stride, int32_t r0,
                                 int n, int32_t last, float mul) {
  for (int e = threadIdx.x; e < n * (D / 4); e += blockDim.x) {
    const int j = e / (D / 4), c = (e - j * (D / 4)) * 4;
    const int32_t r = r0 + j;
    float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r <= last) {
      const float* src = x + int64_t(r) * stride + c;
      val = make_float4(src[0] * mul, src[1] * mul, src[2] * mul, src[3] * mul);
    }
    *reinterpret_cast<float4*>(tile + j * ld + c) = val;
  }
}

__global__ void __launch_bounds__(kWarps * 32)
    forward(float* __restrict__ out, float* __restrict__ lse, const float* __restrict__ q,
            const float* __restrict__ k, const float* __restrict__ v,
            const int32_t* __restrict__ cu, int32_t b, int32_t t, int32_t hq, int32_t hkv,
            float scale) {
  __shared__ __align__(16) float ks[kTile * kLd];
  __shared__ __align__(16) float vs[kTile * kLd];
  __shared__ __align__(16) float qs[kBlockRows * kLd];
  __shared__ int32_t lo_s, hi_s;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t h = blockIdx.y, kvh = h / (hq / hkv);
  const int64_t ldq = int64_t(hq) * D, ldkv = int64_t(hkv) * D;
  const Rows w = warp_rows(cu, b, t);
  if (threadIdx.x == 0) {
    lo_s = INT32_MAX;
    hi_s = -1;
  }
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < kRows; r++)
      if (w.row[r] < t) {
        atomicMin(&lo_s, w.start[r]);
        atomicMax(&hi_s, w.row[r]);
      }
  load_rows(qs, kLd, q + int64_t(h) * D, ldq, blockIdx.x * kBlockRows, kBlockRows, t - 1, scale);
  __syncthreads();
  const int32_t lo = lo_s, hi = hi_s;
  const float* qw = qs + warp * kRows * kLd;
  float m[kRows], l[kRows], acc[kRows][2];
#pragma unroll
  for (int r = 0; r < kRows; r++) m[r] = -INFINITY, l[r] = 0.f, acc[r][0] = acc[r][1] = 0.f;
  for (int32_t k0 = lo; k0 <= hi; k0 += kTile) {
    load_rows(ks, kLd, k + int64_t(kvh) * D, ldkv, k0, kTile, hi, 1.f);
    load_rows(vs, kLd, v + int64_t(kvh) * D, ldkv, k0, kTile, hi, 1.f);
    __syncthreads();
    bool any = false;
#pragma unroll
    for (int r = 0; r < kRows; r++)
      any |= w.row[r] < t && k0 <= w.row[r] && k0 + kTile > w.start[r];
    if (any) {
      const int32_t key = k0 + lane;
      float s[kRows];
#pragma unroll
      for (int r = 0; r < kRows; r++) s[r] = 0.f;
#pragma unroll 4
      for (int c = 0; c < D; c += 4) {
        const float4 k4 = *reinterpret_cast<const float4*>(ks + lane * kLd + c);
#pragma unroll
        for (int r = 0; r < kRows; r++)
          s[r] = dot4(*reinterpret_cast<const float4*>(qw + r * kLd + c), k4, s[r]);
      }
      float p[kRows];
#pragma unroll
      for (int r = 0; r < kRows; r++) {
        const bool in = w.row[r] < t && key >= w.start[r] && key <= w.row[r];
        const float sr = in ? s[r] : -INFINITY;
        const float mt = warp_max(sr);
        if (mt == -INFINITY) {
          p[r] = 0.f;
          continue;
        }
        const float m_new = fmaxf(m[r], mt);
        const float corr = __expf(m[r] - m_new);
        p[r] = in ? __expf(sr - m_new) : 0.f;
        l[r] = l[r] * corr + warp_sum(p[r]);
        acc[r][0] *= corr;
        acc[r][1] *= corr;
        m[r] = m_new;
      }
#pragma unroll 8
      for (int j = 0; j < kTile; j++) {
        const float2 v2 = *reinterpret_cast<const float2*>(vs + j * kLd + lane * 2);
#pragma unroll
        for (int r = 0; r < kRows; r++) {
          const float pj = __shfl_sync(0xffffffffu, p[r], j);
          acc[r][0] = fmaf(pj, v2.x, acc[r][0]);
          acc[r][1] = fmaf(pj, v2.y, acc[r][1]);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kRows; r++) {
    if (w.row[r] >= t) continue;
    const float inv = 1.f / l[r];
    float* o = out + w.row[r] * ldq + int64_t(h) * D + lane * 2;
    o[0] = acc[r][0] * inv;
    o[1] = acc[r][1] * inv;
    if (lane == 0) lse[int64_t(h) * t + w.row[r]] = m[r] + logf(l[r]);
  }
}

__global__ void __launch_bounds__(kWarps * 32)
    backward_dq(float* __restrict__ dq, const float* __restrict__ dout,
                const float* __restrict__ q, const float* __restrict__ k,
                const float* __restrict__ v, const float* __restrict__ lse,
                const float* __restrict__ delta, const int32_t* __restrict__ cu, int32_t b,
                int32_t t, int32_t hq, int32_t hkv, float scale) {
  __shared__ __align__(16) float ks[kTile * kLd];
  __shared__ __align__(16) float vs[kTile * kLd];
  __shared__ __align__(16) float qs[kBlockRows * kLd];
  __shared__ __align__(16) float gs[kBlockRows * kLd];
  __shared__ int32_t lo_s, hi_s;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t h = blockIdx.y, kvh = h / (hq / hkv);
  const int64_t ldq = int64_t(hq) * D, ldkv = int64_t(hkv) * D;
  const Rows w = warp_rows(cu, b, t);
  if (threadIdx.x == 0) {
    lo_s = INT32_MAX;
    hi_s = -1;
  }
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < kRows; r++)
      if (w.row[r] < t) {
        atomicMin(&lo_s, w.start[r]);
        atomicMax(&hi_s, w.row[r]);
      }
  const int32_t r0 = blockIdx.x * kBlockRows;
  load_rows(qs, kLd, q + int64_t(h) * D, ldq, r0, kBlockRows, t - 1, scale);
  load_rows(gs, kLd, dout + int64_t(h) * D, ldq, r0, kBlockRows, t - 1, 1.f);
  float row_lse[kRows], row_delta[kRows];
#pragma unroll
  for (int r = 0; r < kRows; r++) {
    const bool ok = w.row[r] < t;
    row_lse[r] = ok ? lse[int64_t(h) * t + w.row[r]] : 0.f;
    row_delta[r] = ok ? delta[int64_t(h) * t + w.row[r]] : 0.f;
  }
  __syncthreads();
  const int32_t lo = lo_s, hi = hi_s;
  const float* qw = qs + warp * kRows * kLd;
  const float* gw = gs + warp * kRows * kLd;
  float acc[kRows][2];
#pragma unroll
  for (int r = 0; r < kRows; r++) acc[r][0] = acc[r][1] = 0.f;
  for (int32_t k0 = lo; k0 <= hi; k0 += kTile) {
    load_rows(ks, kLd, k + int64_t(kvh) * D, ldkv, k0, kTile, hi, 1.f);
    load_rows(vs, kLd, v + int64_t(kvh) * D, ldkv, k0, kTile, hi, 1.f);
    __syncthreads();
    bool any = false;
#pragma unroll
    for (int r = 0; r < kRows; r++)
      any |= w.row[r] < t && k0 <= w.row[r] && k0 + kTile > w.start[r];
    if (any) {
      const int32_t key = k0 + lane;
      float s[kRows], dp[kRows];
#pragma unroll
      for (int r = 0; r < kRows; r++) s[r] = dp[r] = 0.f;
#pragma unroll 4
      for (int c = 0; c < D; c += 4) {
        const float4 k4 = *reinterpret_cast<const float4*>(ks + lane * kLd + c);
        const float4 v4 = *reinterpret_cast<const float4*>(vs + lane * kLd + c);
#pragma unroll
        for (int r = 0; r < kRows; r++) {
          s[r] = dot4(*reinterpret_cast<const float4*>(qw + r * kLd + c), k4, s[r]);
          dp[r] = dot4(*reinterpret_cast<const float4*>(gw + r * kLd + c), v4, dp[r]);
        }
      }
      float ds[kRows];
#pragma unroll
      for (int r = 0; r < kRows; r++) {
        const bool in = w.row[r] < t && key >= w.start[r] && key <= w.row[r];
        ds[r] = in ? __expf(s[r] - row_lse[r]) * (dp[r] - row_delta[r]) * scale : 0.f;
      }
#pragma unroll 8
      for (int j = 0; j < kTile; j++) {
        const float2 k2 = *reinterpret_cast<const float2*>(ks + j * kLd + lane * 2);
#pragma unroll
        for (int r = 0; r < kRows; r++) {
          const float dsj = __shfl_sync(0xffffffffu, ds[r], j);
          acc[r][0] = fmaf(dsj, k2.x, acc[r][0]);
          acc[r][1] = fmaf(dsj, k2.y, acc[r][1]);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kRows; r++) {
    if (w.row[r] >= t) continue;
    float* o = dq + w.row[r] * ldq + int64_t(h) * D + lane * 2;
    o[0] = acc[r][0];
    o[1] = acc[r][1];
  }
}

// dk, dv for this warp's kRows key rows of kv head blockIdx.y (lanes = queries of a tile).
__global__ void __launch_bounds__(kWarps * 32)
    backward_dkdv(float* __restrict__ dk, float* __restrict__ dv, const float* __restrict__ dout,
                  const float* __restrict__ q, const float* __restrict__ k,
                  const float* __restrict__ v, const float* __restrict__ lse,
                  const float* __restrict__ delta, const int32_t* __restrict__ cu, int32_t b,
                  int32_t t, int32_t hq, int32_t hkv, float scale) {
  __shared__ __align__(16) float qs[kTile * kLd];  // query rows times scale
  __shared__ __align__(16) float gs[kTile * kLd];  // dout rows
  __shared__ __align__(16) float kw[kBlockRows * kLd];
  __shared__ __align__(16) float vw[kBlockRows * kLd];
  __shared__ float ls[kTile], es[kTile];
  __shared__ int32_t lo_s, hi_s;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t kvh = blockIdx.y, group = hq / hkv;
  const int64_t ldq = int64_t(hq) * D, ldkv = int64_t(hkv) * D;
  const Rows w = warp_rows(cu, b, t);  // key rows
  if (threadIdx.x == 0) {
    lo_s = INT32_MAX;
    hi_s = -1;
  }
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < kRows; r++)
      if (w.row[r] < t) {
        atomicMin(&lo_s, w.row[r]);
        atomicMax(&hi_s, w.end[r] - 1);
      }
  const int32_t r0 = blockIdx.x * kBlockRows;
  load_rows(kw, kLd, k + int64_t(kvh) * D, ldkv, r0, kBlockRows, t - 1, 1.f);
  load_rows(vw, kLd, v + int64_t(kvh) * D, ldkv, r0, kBlockRows, t - 1, 1.f);
  __syncthreads();
  const int32_t lo = lo_s, hi = hi_s;
  const float* kr = kw + warp * kRows * kLd;
  const float* vr = vw + warp * kRows * kLd;
  float acc_k[kRows][2], acc_v[kRows][2];
#pragma unroll
  for (int r = 0; r < kRows; r++) acc_k[r][0] = acc_k[r][1] = acc_v[r][0] = acc_v[r][1] = 0.f;
  for (int32_t h = kvh * group; h < (kvh + 1) * group; h++) {
    for (int32_t q0 = lo; q0 <= hi; q0 += kTile) {
      load_rows(qs, kLd, q + int64_t(h) * D, ldq, q0, kTile, hi, scale);
      load_rows(gs, kLd, dout + int64_t(h) * D, ldq, q0, kTile, hi, 1.f);
      if (threadIdx.x < kTile) {
        const int32_t r = q0 + threadIdx.x;
        ls[threadIdx.x] = r <= hi ? lse[int64_t(h) * t + r] : 0.f;
        es[threadIdx.x] = r <= hi ? delta[int64_t(h) * t + r] : 0.f;
      }
      __syncthreads();
      bool any = false;
#pragma unroll
      for (int r = 0; r < kRows; r++)
        any |= w.row[r] < t && q0 < w.end[r] && q0 + kTile > w.row[r];
      if (any) {
        const int32_t qi = q0 + lane;
        float s[kRows], dp[kRows];
#pragma unroll
        for (int r = 0; r < kRows; r++) s[r] = dp[r] = 0.f;
#pragma unroll 4
        for (int c = 0; c < D; c += 4) {
          const float4 q4 = *reinterpret_cast<const float4*>(qs + lane * kLd + c);
          const float4 g4 = *reinterpret_cast<const float4*>(gs + lane * kLd + c);
#pragma unroll
          for (int r = 0; r < kRows; r++) {
            s[r] = dot4(q4, *reinterpret_cast<const float4*>(kr + r * kLd + c), s[r]);
            dp[r] = dot4(g4, *reinterpret_cast<const float4*>(vr + r * kLd + c), dp[r]);
          }
        }
        float p[kRows], ds[kRows];
#pragma unroll
        for (int r = 0; r < kRows; r++) {
          const bool in = w.row[r] < t && qi >= w.row[r] && qi < w.end[r];
          p[r] = in ? __expf(s[r] - ls[lane]) : 0.f;
          ds[r] = p[r] * (dp[r] - es[lane]);  // q rows carry the scale
        }
#pragma unroll 8
        for (int j = 0; j < kTile; j++) {
          const float2 g2 = *reinterpret_cast<const float2*>(gs + j * kLd + lane * 2);
          const float2 q2 = *reinterpret_cast<const float2*>(qs + j * kLd + lane * 2);
#pragma unroll
          for (int r = 0; r < kRows; r++) {
            const float pj = __shfl_sync(0xffffffffu, p[r], j);
            const float dsj = __shfl_sync(0xffffffffu, ds[r], j);
            acc_v[r][0] = fmaf(pj, g2.x, acc_v[r][0]);
            acc_v[r][1] = fmaf(pj, g2.y, acc_v[r][1]);
            acc_k[r][0] = fmaf(dsj, q2.x, acc_k[r][0]);
            acc_k[r][1] = fmaf(dsj, q2.y, acc_k[r][1]);
          }
        }
      }
      __syncthreads();
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; r++) {
    if (w.row[r] >= t) continue;
    float* ok = dk + w.row[r] * ldkv + int64_t(kvh) * D + lane * 2;
    float* ov = dv + w.row[r] * ldkv + int64_t(kvh) * D + lane * 2;
    ok[0] = acc_k[r][0];
    ok[1] = acc_k[r][1];
    ov[0] = acc_v[r][0];
    ov[1] = acc_v[r][1];
  }
}

}  // namespace d64
