#include "sgemm.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu_features.h"
#include "sgemm_kernels.h"
#include "vec_math.h"

namespace arl {
namespace {

constexpr int KC = 512;   // depth of a packed block (tuned on 2-core AVX2: 512 x 48)
constexpr int MC = 48;    // rows of A per task (multiple of MR; MC x KC floats = 96 KB, L2)
constexpr int NC = 3072;   // columns of B packed at once (KC x NC floats = 6 MB, L3)
// At most this many rows of A (and B transposed, as in decoding): dot products
// straight from B's rows, four rows of A per read of a row of B.
constexpr int kGemvRows = 16;
// Up to this many rows of A, with B transposed, at least kFewRowsWeights floats of it and rows of
// at least kFewRowsDepth (a decode step of a large model: each weight used by few rows), the
// product runs as C^T = B A^T on the AVX2 kernels. The packed GEMM then takes B's rows in place as
// its A operand (read once) instead of packing all of B (written out and read back, more memory
// traffic than the product's own). Every element of C sums the same products in the same order:
// the same K blocks, each a chain of FMAs from zero, then added to beta C. With alpha 1 and beta 0
// or 1 every store path rounds alike, so the bits are the direct product's; another alpha rounds
// alpha x (a block's sum) apart in full tiles but not in partial ones, whose places differ in C^T.
// (Shallower rows lose: the transposes and the narrow C^T cost more than packing saves.)
constexpr int kFewRows = 128;
constexpr int kFewRowsDepth = 512;
constexpr int64_t kFewRowsWeights = int64_t(1) << 18;

void sgemm_packed(int num_threads, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                  const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc,
                  bool direct_a = false);
void sgemm_few_rows(int num_threads, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc);
void transpose(float* dst, int ldd, const float* src, int lds, int rows, int cols, int threads);

// An aligned scratch buffer, grown on demand (16 floats of slack for alignment).
float* scratch(std::vector<float>& buf, size_t n) {
  if (buf.size() < n + 16) buf.resize(n + 16);
  auto addr = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<float*>((addr + 63) & ~uintptr_t(63));
}

// The first 64-byte aligned float at or after p.
float* aligned(float* p) {
  auto addr = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((addr + 63) & ~uintptr_t(63));
}

// Packs op(A)[i0 : i0+mc, p0 : p0+kc] into MR-row panels: ap[panel][p][r], rows past
// mc zero-filled.
void pack_a(float* ap, const float* a, int lda, bool trans, int i0, int mc, int p0, int kc) {
  for (int ir = 0; ir < mc; ir += MR) {
    const int rows = std::min(MR, mc - ir);
    float* dst = ap + size_t(ir) * kc;
    if (!trans) {
      for (int r = 0; r < MR; r++) {
        if (r < rows) {
          const float* src = a + size_t(i0 + ir + r) * lda + p0;
          for (int p = 0; p < kc; p++) dst[p * MR + r] = src[p];
        } else {
          for (int p = 0; p < kc; p++) dst[p * MR + r] = 0.0f;
        }
      }
    } else {
      for (int p = 0; p < kc; p++) {
        const float* src = a + size_t(p0 + p) * lda + i0 + ir;
        int r = 0;
        for (; r < rows; r++) dst[p * MR + r] = src[r];
        for (; r < MR; r++) dst[p * MR + r] = 0.0f;
      }
    }
  }
}

// Packs op(B)[p0 : p0+kc, j0 : j0+nc] into NR-column panels: bp[panel][p][c].
void pack_b_panel(float* dst, const float* b, int ldb, bool trans, int j, int cols, int p0,
                  int kc) {
  if (!trans) {
    for (int p = 0; p < kc; p++) {
      const float* src = b + size_t(p0 + p) * ldb + j;
      int c = 0;
      for (; c < cols; c++) dst[p * NR + c] = src[c];
      for (; c < NR; c++) dst[p * NR + c] = 0.0f;
    }
  } else {
    for (int c = 0; c < NR; c++) {
      if (c < cols) {
        const float* src = b + size_t(j + c) * ldb + p0;
        for (int p = 0; p < kc; p++) dst[p * NR + c] = src[p];
      } else {
        for (int p = 0; p < kc; p++) dst[p * NR + c] = 0.0f;
      }
    }
  }
}

MicroKernel pick_kernel() { return has_avx2_fma() ? micro_kernel_avx2 : micro_kernel_portable; }

// C *= beta over an (m, n) block (used when k == 0 or alpha == 0).
void scale_c(float* c, int ldc, int m, int n, float beta) {
  for (int i = 0; i < m; i++) {
    float* row = c + size_t(i) * ldc;
    if (beta == 0.0f) std::memset(row, 0, sizeof(float) * size_t(n));
    else for (int j = 0; j < n; j++) row[j] *= beta;
  }
}

}  // namespace

void sgemm(int num_threads, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
           const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {
    scale_c(c, ldc, m, n, beta);
    return;
  }
  if (!trans_a && trans_b && m <= kGemvRows) {
    // Few rows (decoding): dot products straight from B's rows; packing would
    // cost as much as the product.
    const bool parallel = num_threads > 1 && int64_t(m) * n * k > 65536;
#pragma omp parallel for num_threads(num_threads) if (parallel) schedule(static)
    for (int j = 0; j < n; j++) {
      const float* bj = b + size_t(j) * ldb;
      float dots[4];
      for (int i0 = 0; i0 < m; i0 += 4) {
        const int rows = std::min(4, m - i0);
        vdot_rows(a + size_t(i0) * lda, lda, rows, bj, k, dots);
        for (int r = 0; r < rows; r++) {
          float* cij = c + size_t(i0 + r) * ldc + j;
          *cij = beta == 0.0f ? alpha * dots[r] : alpha * dots[r] + beta * *cij;
        }
      }
    }
    return;
  }
  if (!trans_a && trans_b && m <= kFewRows && k >= kFewRowsDepth &&
      int64_t(n) * k >= kFewRowsWeights && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
      has_avx2_fma()) {
    sgemm_few_rows(num_threads, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  sgemm_packed(num_threads, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

namespace {

void sgemm_packed(int num_threads, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                  const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc,
                  bool direct_a) {
  const MicroKernel kernel = pick_kernel();
  direct_a = direct_a && !trans_a && has_avx2_fma();
  std::vector<float> b_shared;
  // Per-thread A panels, allocated before any parallel region (out of memory is
  // then an exception the entry point turns into ARL_ERR_ALLOC).
  const size_t a_room = size_t((std::min(MC, m) + MR - 1) / MR) * MR * std::min(KC, k) + 16;
  const int threads = std::max(1, num_threads);
  std::vector<float> a_all(a_room * size_t(threads));

  for (int j0 = 0; j0 < n; j0 += NC) {
    const int nc = std::min(NC, n - j0);
    const int b_panels = (nc + NR - 1) / NR;
    for (int p0 = 0; p0 < k; p0 += KC) {
      const int kc = std::min(KC, k - p0);
      const float beta_here = p0 == 0 ? beta : 1.0f;
      float* bp = scratch(b_shared, size_t(b_panels) * NR * kc);
      const int m_blocks = (m + MC - 1) / MC;
      // Split the columns too when there are few row blocks (e.g. decoding).
      int n_split = 1;
      while (m_blocks * n_split < 4 * threads && (b_panels / (n_split * 2)) >= 2) n_split *= 2;
      const int panels_per_split = (b_panels + n_split - 1) / n_split;
      const int tasks = m_blocks * n_split;
      const bool parallel = threads > 1 && (int64_t)m * nc * kc > 200000;

#pragma omp parallel num_threads(threads) if (parallel)
      {
#pragma omp for schedule(static)
        for (int jp = 0; jp < b_panels; jp++) {
          const int j = jp * NR;
          pack_b_panel(bp + size_t(jp) * NR * kc, b, ldb, trans_b, j0 + j, std::min(NR, nc - j),
                       p0, kc);
        }
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < tasks; task++) {
          const int mb = task / n_split;
          const int ns = task % n_split;
          const int i0 = mb * MC;
          const int mc = std::min(MC, m - i0);
          const int jp_begin = ns * panels_per_split;
          const int jp_end = std::min(b_panels, jp_begin + panels_per_split);
          if (jp_begin >= jp_end) continue;
          float* ap = aligned(a_all.data() + a_room * size_t(omp_get_thread_num()));
          if (!direct_a) pack_a(ap, a, lda, trans_a, i0, mc, p0, kc);
          for (int jp = jp_begin; jp < jp_end; jp++) {
            const int j = jp * NR;
            const int nr = std::min(NR, nc - j);
            const float* bpanel = bp + size_t(jp) * NR * kc;
            for (int ir = 0; ir < mc; ir += MR) {
              const int mr = std::min(MR, mc - ir);
              float* cij = c + size_t(i0 + ir) * ldc + j0 + j;
              if (direct_a) {
                micro_kernel_avx2_rows(kc, a + size_t(i0 + ir) * lda + p0, lda, bpanel, cij, ldc,
                                       alpha, beta_here, mr, nr);
              } else {
                kernel(kc, ap + size_t(ir) * kc, bpanel, cij, ldc, alpha, beta_here, mr, nr);
              }
            }
          }
        }
      }
    }
  }
}

// dst (cols x rows, leading dimension ldd) = src^T (src: rows x cols, leading dimension lds), in
// 32 x 32 tiles, the tile rows shared among the threads.
void transpose(float* dst, int ldd, const float* src, int lds, int rows, int cols, int threads) {
  constexpr int T = 32;
  const int row_tiles = (rows + T - 1) / T;
  const bool parallel = threads > 1 && int64_t(rows) * cols > (1 << 16);
#pragma omp parallel for num_threads(threads) if (parallel) schedule(static)
  for (int it = 0; it < row_tiles; it++) {
    const int i0 = it * T, i1 = std::min(rows, i0 + T);
    for (int j0 = 0; j0 < cols; j0 += T) {
      const int j1 = std::min(cols, j0 + T);
      for (int i = i0; i < i1; i++)
        for (int j = j0; j < j1; j++) dst[size_t(j) * ldd + i] = src[size_t(i) * lds + j];
    }
  }
}

// C^T = B A^T a chunk of B's rows at a time, through a transposed copy of C's columns.
void sgemm_few_rows(int num_threads, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc) {
  constexpr int kChunk = 4096;  // rows of B (columns of C) a pass: 4096 x m floats of scratch
  // (uninitialised: with beta 0 the product writes every element before anything reads it)
  std::unique_ptr<float[]> t(new float[size_t(std::min(kChunk, n)) * size_t(m)]);
  for (int j0 = 0; j0 < n; j0 += kChunk) {
    const int nc = std::min(kChunk, n - j0);
    if (beta != 0.0f) transpose(t.get(), m, c + j0, ldc, m, nc, num_threads);
    sgemm_packed(num_threads, false, true, nc, m, k, alpha, b + size_t(j0) * ldb, ldb, a, lda, beta,
                 t.get(), m, true);
    transpose(c + j0, ldc, t.get(), m, nc, m, num_threads);
  }
}

}  // namespace

namespace {
constexpr int NC_SERIAL = 1024;  // columns of B per packed block in sgemm_serial
}  // namespace

size_t sgemm_serial_scratch_floats() {
  return size_t(MC + MR) * KC + size_t(KC) * (NC_SERIAL + NR) + 32;
}

void sgemm_serial(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                  int lda, const float* b, int ldb, float beta, float* c, int ldc,
                  float* scratch) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {
    scale_c(c, ldc, m, n, beta);
    return;
  }
  const MicroKernel kernel = pick_kernel();
  float* ap = aligned(scratch);
  float* bp = aligned(ap + size_t(MC + MR) * KC - 16);
  for (int j0 = 0; j0 < n; j0 += NC_SERIAL) {
    const int nc = std::min(NC_SERIAL, n - j0);
    const int b_panels = (nc + NR - 1) / NR;
    for (int p0 = 0; p0 < k; p0 += KC) {
      const int kc = std::min(KC, k - p0);
      const float beta_here = p0 == 0 ? beta : 1.0f;
      for (int jp = 0; jp < b_panels; jp++) {
        const int j = jp * NR;
        pack_b_panel(bp + size_t(jp) * NR * kc, b, ldb, trans_b, j0 + j, std::min(NR, nc - j), p0,
                     kc);
      }
      for (int i0 = 0; i0 < m; i0 += MC) {
        const int mc = std::min(MC, m - i0);
        pack_a(ap, a, lda, trans_a, i0, mc, p0, kc);
        for (int jp = 0; jp < b_panels; jp++) {
          const int j = jp * NR;
          const int nr = std::min(NR, nc - j);
          for (int ir = 0; ir < mc; ir += MR) {
            kernel(kc, ap + size_t(ir) * kc, bp + size_t(jp) * NR * kc,
                   c + size_t(i0 + ir) * ldc + j0 + j, ldc, alpha, beta_here, std::min(MR, mc - ir),
                   nr);
          }
        }
      }
    }
  }
}

}  // namespace arl
