// The CUDA emulator's stand-in for <mma.h>: the warp matrix (WMMA) API for 16x16x16 tiles of
// bf16 (or fp32 accumulators). Every lane holds the whole tile (num_elements = 256, not 8), so
// code that treats a fragment's elements uniformly (fill, scale, convert) behaves as on the GPU,
// and code that assumes the GPU's element-to-lane mapping is not supported. Each call is
// warp-collective (a warp barrier, so divergent calls deadlock as on the GPU) and checks the
// API's rules: 256-bit aligned pointers and a leading dimension that is a multiple of 8 (16-bit
// elements) or 4 (float); a violation stops the process naming the kernel and the call.
#pragma once

#include "cuda_bf16.h"
#include "cuda_runtime.h"

namespace emu {
// Stops the process: `call` broke a WMMA rule in the running kernel.
[[noreturn]] void wmma_fail(const char* call, const char* what);
}  // namespace emu

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the emulator has 16x16x16 tiles only");
  static constexpr int num_elements = 256;
  T x[256];  // row-major: element (r, c) at x[r * 16 + c]
};

namespace detail {
template <typename T>
void check(const char* call, const void* p, unsigned ldm) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0) emu::wmma_fail(call, "pointer not 256-bit aligned");
  if (ldm % (sizeof(T) == 2 ? 8 : 4) != 0)
    emu::wmma_fail(call, "ldm not a multiple of 8 (16-bit elements) or 4 (float)");
}
inline bool is_col(row_major) { return false; }
inline bool is_col(col_major) { return true; }
}  // namespace detail

template <typename Use, typename T, typename Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout>& f, const T* p, unsigned ldm) {
  detail::check<T>("wmma::load_matrix_sync", p, ldm);
  emu::sync_warp();
  const bool col = detail::is_col(Layout{});
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++) f.x[r * 16 + c] = col ? p[c * ldm + r] : p[r * ldm + c];
  emu::sync_warp();
}

template <typename T>
void load_matrix_sync(fragment<accumulator, 16, 16, 16, T>& f, const T* p, unsigned ldm,
                      layout_t layout) {
  detail::check<T>("wmma::load_matrix_sync", p, ldm);
  emu::sync_warp();
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++)
      f.x[r * 16 + c] = layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c];
  emu::sync_warp();
}

template <typename T>
void store_matrix_sync(T* p, const fragment<accumulator, 16, 16, 16, T>& f, unsigned ldm,
                       layout_t layout) {
  detail::check<T>("wmma::store_matrix_sync", p, ldm);
  emu::sync_warp();
  if ((threadIdx.x & 31) == 0)  // one lane writes: every lane holds the same tile
    for (int r = 0; r < 16; r++)
      for (int c = 0; c < 16; c++)
        (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[r * 16 + c];
  emu::sync_warp();
}

template <typename Use, typename T, typename Layout, typename V>
void fill_fragment(fragment<Use, 16, 16, 16, T, Layout>& f, V v) {
  for (auto& e : f.x) e = T(v);
}

// d = a . b + c, products and sums in fp32 (tensor cores multiply bf16 exactly, add in fp32).
template <typename A, typename LA, typename LB, typename TC>
void mma_sync(fragment<accumulator, 16, 16, 16, TC>& d,
              const fragment<matrix_a, 16, 16, 16, A, LA>& a,
              const fragment<matrix_b, 16, 16, 16, A, LB>& b,
              const fragment<accumulator, 16, 16, 16, TC>& c) {
  emu::sync_warp();
  float out[256];
  for (int r = 0; r < 16; r++)
    for (int col = 0; col < 16; col++) {
      float s = float(c.x[r * 16 + col]);
      for (int k = 0; k < 16; k++) s += float(a.x[r * 16 + k]) * float(b.x[k * 16 + col]);
      out[r * 16 + col] = s;
    }
  for (int i = 0; i < 256; i++) d.x[i] = TC(out[i]);
  emu::sync_warp();
}

}  // namespace wmma
}  // namespace nvcuda
