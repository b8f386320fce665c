// Small f32 GEMMs for the chunked forms of the recurrent ops (gated_delta.cc's chunked delta rule,
// ssd_scan.cc's chunked SSD): row-major C (+)= A · B with B read along its rows ("NN"), so every
// operand can be a strided view into the op's inputs, outputs or state. The per-chunk products are
// small ([64 x 128] · [128 x 128] and the like), so one call runs on the calling thread; the op
// threads over (sequence, head) tasks. Per ISA (scalar, AVX2, AVX-512, chosen by the current kernel
// path) only the row-block kernel differs; the drivers below are shared.
#pragma once
#include <algorithm>
#include <cstddef>

namespace svc {

// C[r, 0..n) = cs · C[r, 0..n) + Σ_{p<kr} A[r, p] · B[p, 0..n) for r < rows (rows <= block); cs == 0
// overwrites C without reading it.
using NnRowsFn = void (*)(int rows, int n, int kr, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc,
                          float cs);

struct ChunkGemm {
  NnRowsFn rows;
  int block;  // rows per call that the kernel keeps in registers
};

// The kernel of the current path (cpu_features.h).
ChunkGemm chunk_gemm();

// Which part of a product a caller needs, by blocks of rows (i0 = a block's first row, i1 its end):
//   Full: all of it; LowerCols: columns j < i1 only (a block-lower-triangular result, e.g. k·kᵀ of a
//   chunk); LowerDepth: A's columns p < i1 only (A block-lower-triangular, its entries above the
//   diagonal inside the block zero, e.g. the decayed q·kᵀ times the chunk's values).
enum class Tri { Full, LowerCols, LowerDepth };

inline void gemm_nn(const ChunkGemm& G, int m, int n, int kr, const float* A, size_t lda, const float* B, size_t ldb, float* C,
                    size_t ldc, float cs, Tri tri = Tri::Full) {
  for (int i0 = 0; i0 < m; i0 += G.block) {
    const int r = std::min(G.block, m - i0), i1 = i0 + r;
    const int nn = tri == Tri::LowerCols ? std::min(n, i1) : n;
    const int kk = tri == Tri::LowerDepth ? std::min(kr, i1) : kr;
    G.rows(r, nn, kk, A + (size_t)i0 * lda, lda, B, ldb, C + (size_t)i0 * ldc, ldc, cs);
  }
}

}  // namespace svc
