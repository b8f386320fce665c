// Row-block kernels of chunk_gemm.h. Each keeps `block` rows of C by a tile of columns in registers and
// streams A's columns and B's rows through them (broadcast A[r, p], FMA with B[p, tile]); the column
// tail is masked (AVX-512) or a masked-move tile (AVX2), so any n and any strides work.
#include "chunk_gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu_features.h"

namespace svc {
namespace {

void nn_rows_scalar(int rows, int n, int kr, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc, float cs) {
  for (int r = 0; r < rows; r++) {
    float* c = C + (size_t)r * ldc;
    for (int j = 0; j < n; j++) c[j] = cs == 0.0f ? 0.0f : c[j] * cs;
    for (int p = 0; p < kr; p++) {
      const float a = A[(size_t)r * lda + p];
      const float* b = B + (size_t)p * ldb;
      for (int j = 0; j < n; j++) c[j] += a * b[j];
    }
  }
}

#if defined(__x86_64__)
#define SVC_CG_AVX2 __attribute__((target("avx2,fma")))
#define SVC_CG_AVX512 __attribute__((target("avx512f,avx2,fma")))

// ---- AVX2: up to 4 rows x 16 columns (8 accumulators) ----
SVC_CG_AVX2 inline __m256i lane_mask8(int left) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), idx);
}

template <int R, bool Tail>
SVC_CG_AVX2 inline void tile_avx2(int j, int n, int kr, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc,
                                  float cs) {
  const __m256i m0 = lane_mask8(n - j), m1 = lane_mask8(n - j - 8);
  __m256 c0[R], c1[R];
  for (int r = 0; r < R; r++) {
    const float* cr = C + (size_t)r * ldc + j;
    if (cs == 0.0f) {
      c0[r] = c1[r] = _mm256_setzero_ps();
    } else {
      const __m256 k = _mm256_set1_ps(cs);
      c0[r] = _mm256_mul_ps(k, Tail ? _mm256_maskload_ps(cr, m0) : _mm256_loadu_ps(cr));
      c1[r] = _mm256_mul_ps(k, Tail ? _mm256_maskload_ps(cr + 8, m1) : _mm256_loadu_ps(cr + 8));
    }
  }
  for (int p = 0; p < kr; p++) {
    const float* bp = B + (size_t)p * ldb + j;
    const __m256 b0 = Tail ? _mm256_maskload_ps(bp, m0) : _mm256_loadu_ps(bp);
    const __m256 b1 = Tail ? _mm256_maskload_ps(bp + 8, m1) : _mm256_loadu_ps(bp + 8);
    for (int r = 0; r < R; r++) {
      const __m256 a = _mm256_broadcast_ss(A + (size_t)r * lda + p);
      c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
    }
  }
  for (int r = 0; r < R; r++) {
    float* cr = C + (size_t)r * ldc + j;
    if (Tail) {
      _mm256_maskstore_ps(cr, m0, c0[r]);
      _mm256_maskstore_ps(cr + 8, m1, c1[r]);
    } else {
      _mm256_storeu_ps(cr, c0[r]);
      _mm256_storeu_ps(cr + 8, c1[r]);
    }
  }
}

template <int R>
SVC_CG_AVX2 void rows_avx2(int n, int kr, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc, float cs) {
  int j = 0;
  for (; j + 16 <= n; j += 16) tile_avx2<R, false>(j, n, kr, A, lda, B, ldb, C, ldc, cs);
  if (j < n) tile_avx2<R, true>(j, n, kr, A, lda, B, ldb, C, ldc, cs);
}

SVC_CG_AVX2 void nn_rows_avx2(int rows, int n, int kr, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc,
                              float cs) {
  switch (rows) {
    case 4: return rows_avx2<4>(n, kr, A, lda, B, ldb, C, ldc, cs);
    case 3: return rows_avx2<3>(n, kr, A, lda, B, ldb, C, ldc, cs);
    case 2: return rows_avx2<2>(n, kr, A, lda, B, ldb, C, ldc, cs);
    default: return rows_avx2<1>(n, kr, A, lda, B, ldb, C, ldc, cs);
  }
}

// ---- AVX-512: up to 8 rows x 32 columns (16 accumulators), masked column tail ----
SVC_CG_AVX512 inline __mmask16 lane_mask16(int left) {
  return left <= 0 ? (__mmask16)0 : left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

template <int R>
SVC_CG_AVX512 void rows_avx512(int n, int kr, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc, float cs) {
  for (int j = 0; j < n; j += 32) {
    const __mmask16 m0 = lane_mask16(n - j), m1 = lane_mask16(n - j - 16);
    __m512 c0[R], c1[R];
    for (int r = 0; r < R; r++) {
      const float* cr = C + (size_t)r * ldc + j;
      const __m512 k = _mm512_set1_ps(cs);
      c0[r] = cs == 0.0f ? _mm512_setzero_ps() : _mm512_mul_ps(k, _mm512_maskz_loadu_ps(m0, cr));
      c1[r] = cs == 0.0f ? _mm512_setzero_ps() : _mm512_mul_ps(k, _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    for (int p = 0; p < kr; p++) {
      const float* bp = B + (size_t)p * ldb + j;
      const __m512 b0 = _mm512_maskz_loadu_ps(m0, bp), b1 = _mm512_maskz_loadu_ps(m1, bp + 16);
      for (int r = 0; r < R; r++) {
        const __m512 a = _mm512_set1_ps(A[(size_t)r * lda + p]);
        c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);
        c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);
      }
    }
    for (int r = 0; r < R; r++) {
      float* cr = C + (size_t)r * ldc + j;
      _mm512_mask_storeu_ps(cr, m0, c0[r]);
      _mm512_mask_storeu_ps(cr + 16, m1, c1[r]);
    }
  }
}

SVC_CG_AVX512 void nn_rows_avx512(int rows, int n, int kr, const float* A, size_t lda, const float* B, size_t ldb, float* C, size_t ldc,
                                  float cs) {
  switch (rows) {
    case 8: return rows_avx512<8>(n, kr, A, lda, B, ldb, C, ldc, cs);
    case 7: return rows_avx512<7>(n, kr, A, lda, B, ldb, C, ldc, cs);
    case 6: return rows_avx512<6>(n, kr, A, lda, B, ldb, C, ldc, cs);
    case 5: return rows_avx512<5>(n, kr, A, lda, B, ldb, C, ldc, cs);
    case 4: return rows_avx512<4>(n, kr, A, lda, B, ldb, C, ldc, cs);
    case 3: return rows_avx512<3>(n, kr, A, lda, B, ldb, C, ldc, cs);
    case 2: return rows_avx512<2>(n, kr, A, lda, B, ldb, C, ldc, cs);
    default: return rows_avx512<1>(n, kr, A, lda, B, ldb, C, ldc, cs);
  }
}
#endif

}  // namespace

ChunkGemm chunk_gemm() {
#if defined(__x86_64__)
  switch (current_cpu_path()) {
    case CpuPath::Avx512:
    case CpuPath::Amx:
      return {nn_rows_avx512, 8};
    case CpuPath::Avx2:
      return {nn_rows_avx2, 4};
    default:
      break;
  }
#endif
  return {nn_rows_scalar, 4};
}

}  // namespace svc
