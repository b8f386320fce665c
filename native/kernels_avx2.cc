// AVX2 + FMA + F16C kernels (Haswell and later, Zen). Every function carries the target attribute,
// so the file compiles into the same baseline x86-64 addon and only runs when cpu_features.cc picks it.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "kernels.h"
#include "kv_codec.h"
#include "kv_turbo.h"
#include "packed.h"
#include "quant.h"

#define SVC_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SVC_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

// K-quant unpacking compiled for this file's instruction set.
#define SVC_KQ_INLINE SVC_AVX2_INLINE
#include "kquant_unpack.h"
#include "kquant_unpack_iq.h"

namespace svc {
namespace {

SVC_AVX2_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Cephes-style expf: |rel err| ~ 2 ulp. Inputs are clamped to where 2^n stays a normal float.
SVC_AVX2_INLINE __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.0f));
  __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

// ---- float-activation GEMM (f32 / f16 / bf16 weights) ----

struct WF32 {
  static SVC_AVX2_INLINE __m256 load8(const uint8_t* row, int c) { return _mm256_loadu_ps((const float*)(row + 4 * (size_t)c)); }
  static float get(const uint8_t* row, int c) { float v; std::memcpy(&v, row + 4 * (size_t)c, 4); return v; }
};
struct WF16 {
  static SVC_AVX2_INLINE __m256 load8(const uint8_t* row, int c) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(row + 2 * (size_t)c)));
  }
  static float get(const uint8_t* row, int c) { uint16_t h; std::memcpy(&h, row + 2 * (size_t)c, 2); return fp16_to_f32(h); }
};
struct WBF16 {
  static SVC_AVX2_INLINE __m256 load8(const uint8_t* row, int c) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(row + 2 * (size_t)c)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static float get(const uint8_t* row, int c) { uint16_t h; std::memcpy(&h, row + 2 * (size_t)c, 2); return bf16_to_f32(h); }
};

// Columns go in blocks of kColBlock so a 4-row weight tile stays in L1 while the activation tiles
// stream past it. Every output sums its blocks in the same order whatever n is (batch-invariant).
constexpr int kColBlock = 1024;

// Writes (or, for later column blocks, adds) the horizontal sums of a tile's accumulators.
template <int RW, int RX>
SVC_AVX2_INLINE void store_tile(__m256 (&acc)[RW][RX], bool accumulate, float* y, size_t ldy) {
  for (int a = 0; a < RW; a++)
    for (int b = 0; b < RX; b++) {
      float* out = y + (size_t)b * ldy + a;
      const float s = hsum(acc[a][b]);
      *out = accumulate ? *out + s : s;
    }
}

// RW weight rows x RX activation rows over columns [c0, c1); each output keeps its own accumulator,
// so a result does not depend on the tile it was computed in.
template <typename W, int RW, int RX>
SVC_AVX2_INLINE void tile_float(int c0, int c1, bool accumulate, const float* x, size_t ldx, const uint8_t* w,
                                size_t wstride, int r, float* y, size_t ldy) {
  __m256 acc[RW][RX];
  for (int a = 0; a < RW; a++)
    for (int b = 0; b < RX; b++) acc[a][b] = _mm256_setzero_ps();
  const uint8_t* rows[RW];
  for (int a = 0; a < RW; a++) rows[a] = w + (size_t)(r + a) * wstride;
  int c = c0;
  for (; c + 8 <= c1; c += 8) {
    __m256 xv[RX];
    for (int b = 0; b < RX; b++) xv[b] = _mm256_loadu_ps(x + (size_t)b * ldx + c);
    for (int a = 0; a < RW; a++) {
      const __m256 wv = W::load8(rows[a], c);
      for (int b = 0; b < RX; b++) acc[a][b] = _mm256_fmadd_ps(wv, xv[b], acc[a][b]);
    }
  }
  store_tile<RW, RX>(acc, accumulate, y + r, ldy);
  for (; c < c1; c++)  // scalar tail of the last block
    for (int a = 0; a < RW; a++)
      for (int b = 0; b < RX; b++) y[(size_t)b * ldy + r + a] += x[(size_t)b * ldx + c] * W::get(rows[a], c);
}

template <typename W, int RW>
SVC_AVX2_INLINE void rows_float(int n, int c0, int c1, bool accumulate, const float* x, size_t ldx, const uint8_t* w,
                                size_t wstride, int r, float* y, size_t ldy) {
  int i = 0;
  for (; i + 3 <= n; i += 3) tile_float<W, RW, 3>(c0, c1, accumulate, x + (size_t)i * ldx, ldx, w, wstride, r, y + (size_t)i * ldy, ldy);
  if (n - i == 2) tile_float<W, RW, 2>(c0, c1, accumulate, x + (size_t)i * ldx, ldx, w, wstride, r, y + (size_t)i * ldy, ldy);
  if (n - i == 1) tile_float<W, RW, 1>(c0, c1, accumulate, x + (size_t)i * ldx, ldx, w, wstride, r, y + (size_t)i * ldy, ldy);
}

template <typename W>
SVC_AVX2 void gemm_float(int n, int k, const float* x, size_t ldx, const uint8_t* w, size_t wstride, int r0, int r1,
                         float* y, size_t ldy) {
  for (int c0 = 0; c0 < k; c0 += kColBlock) {
    const int c1 = k - c0 > kColBlock ? c0 + kColBlock : k;
    int r = r0;
    for (; r + 4 <= r1; r += 4) rows_float<W, 4>(n, c0, c1, c0 > 0, x, ldx, w, wstride, r, y, ldy);
    for (; r < r1; r++) rows_float<W, 1>(n, c0, c1, c0 > 0, x, ldx, w, wstride, r, y, ldy);
  }
}

// ---- int8 GEMM (Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL weights x Q8 activations) ----
// No VNNI here: maddubs needs one unsigned operand, so |w| goes unsigned and w's sign moves onto x.

// Each weight type: its block size, whether a min term (d * q + m, m at byte 2) follows, and its 32
// quants as signed bytes, element e in byte e.
struct WQ8_0 {
  static constexpr size_t kBlockBytes = sizeof(block_q8_0);
  static constexpr bool kMin = false;
  static SVC_AVX2_INLINE __m256i quants(const uint8_t* blk) { return _mm256_loadu_si256((const __m256i*)(blk + 2)); }
};
// 16 bytes of nibbles: low nibbles are elements 0..15, high nibbles 16..31 (every 32-element type).
SVC_AVX2_INLINE __m256i nibbles32(const uint8_t* p) {
  const __m128i t = _mm_loadu_si128((const __m128i*)p);
  const __m128i m = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(t, 4), m), _mm_and_si128(t, m));
}
// The 32 bits at p as bytes: 0xff where bit e is set (bytes_from_bits_32 in ggml).
SVC_AVX2_INLINE __m256i bit_bytes32(const uint8_t* p) {
  uint32_t h;
  std::memcpy(&h, p, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32((int)h),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i probe = _mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(probe, _mm256_set1_epi64x(-1));
}
struct WQ4_0 {
  static constexpr size_t kBlockBytes = sizeof(block_q4_0);
  static constexpr bool kMin = false;
  static SVC_AVX2_INLINE __m256i quants(const uint8_t* blk) { return _mm256_sub_epi8(nibbles32(blk + 2), _mm256_set1_epi8(8)); }
};
struct WQ4_1 {
  static constexpr size_t kBlockBytes = sizeof(block_q4_1);
  static constexpr bool kMin = true;
  static SVC_AVX2_INLINE __m256i quants(const uint8_t* blk) { return nibbles32(blk + 4); }
};
struct WQ5_0 {
  static constexpr size_t kBlockBytes = sizeof(block_q5_0);
  static constexpr bool kMin = false;
  // (q | 16 * bit) - 16: elements whose fifth bit is clear lose 16.
  static SVC_AVX2_INLINE __m256i quants(const uint8_t* blk) {
    const __m256i low = _mm256_andnot_si256(bit_bytes32(blk + 2), _mm256_set1_epi8(16));
    return _mm256_sub_epi8(nibbles32(blk + 6), low);
  }
};
struct WQ5_1 {
  static constexpr size_t kBlockBytes = sizeof(block_q5_1);
  static constexpr bool kMin = true;
  static SVC_AVX2_INLINE __m256i quants(const uint8_t* blk) {
    return _mm256_or_si256(nibbles32(blk + 8), _mm256_and_si256(bit_bytes32(blk + 4), _mm256_set1_epi8(16)));
  }
};
struct WIQ4_NL {
  static constexpr size_t kBlockBytes = sizeof(block_iq4_nl);
  static constexpr bool kMin = false;
  // The codebook is 16 int8 values: one byte shuffle maps every nibble to its value.
  static SVC_AVX2_INLINE __m256i quants(const uint8_t* blk) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i*)kValuesIq4nl));
    return _mm256_shuffle_epi8(table, nibbles32(blk + 2));
  }
};

template <typename W, int RW, int RX>
SVC_AVX2_INLINE void tile_quant(const QuantActs& x, int i0, int b0, int b1, bool accumulate, const uint8_t* w,
                                size_t wstride, int r, float* y, size_t ldy) {
  const int nb = x.k / 32;
  __m256 acc[RW][RX];
  for (int a = 0; a < RW; a++)
    for (int b = 0; b < RX; b++) acc[a][b] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int blk = b0; blk < b1; blk++) {
    __m256i xv[RX];
    float xd[RX];
    [[maybe_unused]] float xs[RX];
    for (int b = 0; b < RX; b++) {
      xv[b] = _mm256_loadu_si256((const __m256i*)(x.qs + (size_t)(i0 + b) * x.k + blk * 32));
      xd[b] = x.d[(size_t)(i0 + b) * nb + blk];
      if constexpr (W::kMin) {
        // The block sum of x spread over the 8 lanes (the store sums them).
        const float* s = x.s16 + (size_t)(i0 + b) * 2 * nb + 2 * blk;
        xs[b] = 0.125f * (s[0] + s[1]);
      }
    }
    for (int a = 0; a < RW; a++) {
      const uint8_t* p = w + (size_t)(r + a) * wstride + blk * W::kBlockBytes;
      uint16_t dh;
      std::memcpy(&dh, p, 2);
      const float dw = _cvtsh_ss(dh);
      const __m256i q = W::quants(p);
      const __m256i aq = _mm256_sign_epi8(q, q);
      for (int b = 0; b < RX; b++) {
        const __m256i dot16 = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(xv[b], q));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(dot16, ones));
        acc[a][b] = _mm256_fmadd_ps(dot, _mm256_set1_ps(dw * xd[b]), acc[a][b]);
      }
      if constexpr (W::kMin) {
        uint16_t mh;
        std::memcpy(&mh, p + 2, 2);
        const float mw = _cvtsh_ss(mh);
        for (int b = 0; b < RX; b++) acc[a][b] = _mm256_add_ps(acc[a][b], _mm256_set1_ps(mw * xs[b]));
      }
    }
  }
  store_tile<RW, RX>(acc, accumulate, y + (size_t)i0 * ldy + r, ldy);
}

template <typename W, int RW>
SVC_AVX2_INLINE void rows_quant(int n, const QuantActs& x, int b0, int b1, bool accumulate, const uint8_t* w,
                                size_t wstride, int r, float* y, size_t ldy) {
  int i = 0;
  for (; i + 4 <= n; i += 4) tile_quant<W, RW, 4>(x, i, b0, b1, accumulate, w, wstride, r, y, ldy);
  for (; i < n; i++) tile_quant<W, RW, 1>(x, i, b0, b1, accumulate, w, wstride, r, y, ldy);
}

template <typename W>
SVC_AVX2 void gemm_quant(int n, const QuantActs& x, const uint8_t* w, size_t wstride, int r0, int r1, float* y, size_t ldy) {
  const int nb = x.k / 32, step = kColBlock / 32;
  for (int b0 = 0; b0 < nb; b0 += step) {
    const int b1 = nb - b0 > step ? b0 + step : nb;
    int r = r0;
    for (; r + 2 <= r1; r += 2) rows_quant<W, 2>(n, x, b0, b1, b0 > 0, w, wstride, r, y, ldy);
    for (; r < r1; r++) rows_quant<W, 1>(n, x, b0, b1, b0 > 0, w, wstride, r, y, ldy);
  }
}

// ---- int8 GEMM for K-quants ----
// One 32-element activation block per step: maddubs + madd leave 8 int32 lanes of 4 elements, so
// lanes 0-3 take the scale of the block's first 16-element group and lanes 4-7 the second.

// The int32 dot of 32 quants with 32 activation bytes, 4 elements per lane. Signed quants (kq_signed)
// multiply |q| by x with q's sign, since maddubs wants its first operand unsigned.
template <typename W>
SVC_AVX2_INLINE __m256i kq_dot(__m256i q, __m256i x) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (kq_signed<W>) return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q)), ones);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(q, x), ones);
}

template <typename W, int RW, int RX>
SVC_AVX2_INLINE void tile_kquant(const QuantActs& x, int i0, int sb0, int sb1, bool accumulate, const uint8_t* w,
                                 size_t wstride, int r, float* y, size_t ldy) {
  const int k = x.k, nb = k / 32, ng = k / 16;
  __m256 acc[RW][RX];
  for (int a = 0; a < RW; a++)
    for (int b = 0; b < RX; b++) acc[a][b] = _mm256_setzero_ps();
  alignas(32) float ws[RW][16];
  alignas(32) float mn[RW][16];
  for (int sb = sb0; sb < sb1; sb++) {
    const uint8_t* blk[RW];
    for (int a = 0; a < RW; a++) {
      blk[a] = w + (size_t)(r + a) * wstride + (size_t)sb * W::kBytes;
      W::scales(blk[a], ws[a], mn[a]);
    }
    for (int b = 0; b < RX; b++) {
      const float* xs = x.s16 + (size_t)(i0 + b) * ng + sb * 16;
      const __m256 xs0 = _mm256_loadu_ps(xs), xs1 = _mm256_loadu_ps(xs + 8);
      for (int a = 0; a < RW; a++) {
        acc[a][b] = _mm256_fnmadd_ps(_mm256_load_ps(mn[a]), xs0, acc[a][b]);
        acc[a][b] = _mm256_fnmadd_ps(_mm256_load_ps(mn[a] + 8), xs1, acc[a][b]);
      }
    }
    for (int j = 0; j < 8; j++) {
      __m256i xv[RX];
      float dx[RX];
      for (int b = 0; b < RX; b++) {
        xv[b] = _mm256_loadu_si256((const __m256i*)(x.qs + (size_t)(i0 + b) * k + sb * QK_K + 32 * j));
        dx[b] = x.d[(size_t)(i0 + b) * nb + sb * 8 + j];
      }
      for (int a = 0; a < RW; a++) {
        const __m256i q = W::quants32(blk[a], j);
        const __m256 sv = _mm256_set_m128(_mm_set1_ps(ws[a][2 * j + 1]), _mm_set1_ps(ws[a][2 * j]));
        for (int b = 0; b < RX; b++) {
          const __m256 dot = _mm256_cvtepi32_ps(kq_dot<W>(q, xv[b]));
          acc[a][b] = _mm256_fmadd_ps(dot, _mm256_mul_ps(sv, _mm256_set1_ps(dx[b])), acc[a][b]);
        }
      }
    }
  }
  store_tile<RW, RX>(acc, accumulate, y + (size_t)i0 * ldy + r, ldy);
}

template <typename W, int RW>
SVC_AVX2_INLINE void rows_kquant(int n, const QuantActs& x, int sb0, int sb1, bool accumulate, const uint8_t* w,
                                 size_t wstride, int r, float* y, size_t ldy) {
  int i = 0;
  for (; i + 4 <= n; i += 4) tile_kquant<W, RW, 4>(x, i, sb0, sb1, accumulate, w, wstride, r, y, ldy);
  for (; i < n; i++) tile_kquant<W, RW, 1>(x, i, sb0, sb1, accumulate, w, wstride, r, y, ldy);
}

template <typename W>
SVC_AVX2 void gemm_kquant(int n, const QuantActs& x, const uint8_t* w, size_t wstride, int r0, int r1, float* y, size_t ldy) {
  const int nsb = x.k / QK_K, step = kColBlock / QK_K;
  for (int sb0 = 0; sb0 < nsb; sb0 += step) {
    const int sb1 = nsb - sb0 > step ? sb0 + step : nsb;
    int r = r0;
    for (; r + 2 <= r1; r += 2) rows_kquant<W, 2>(n, x, sb0, sb1, sb0 > 0, w, wstride, r, y, ldy);
    for (; r < r1; r++) rows_kquant<W, 1>(n, x, sb0, sb1, sb0 > 0, w, wstride, r, y, ldy);
  }
}

// ---- int8 GEMM on packed Q8_0x16 / Q4_0x16 weights (packed.h) ----
// A 64-byte quad line is two ymm halves of 8 rows; lane j of a half is row 8h + j. Four activation
// bytes are broadcast to every lane. Q8_0 turns its weights back to signed and uses the sign trick
// (maddubs cannot take 255 x 127 pairs); Q4_0 multiplies the unsigned nibbles directly and starts
// from the correction -8 * sum(x).

SVC_AVX2_INLINE __m256i bcast4(const int8_t* p) { int32_t v; std::memcpy(&v, p, 4); return _mm256_set1_epi32(v); }

struct PQ8 {
  static constexpr int kDT = kQ8_0x16;
  static constexpr int kQuantBytes = kQ8PackQuantBytes;
  static constexpr bool kUseCorr = false;
  template <int RX>
  static SVC_AVX2_INLINE void dots(const uint8_t* q, const int8_t* const (&xq)[RX], __m256i (&ia)[RX]) {
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
    for (int c = 0; c < 8; c++) {
      const __m256i ws = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(q + 64 * c)), flip);
      const __m256i aw = _mm256_sign_epi8(ws, ws);
      for (int b = 0; b < RX; b++) {
        const __m256i d16 = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(bcast4(xq[b] + 4 * c), ws));
        ia[b] = _mm256_add_epi32(ia[b], _mm256_madd_epi16(d16, ones));
      }
    }
  }
};

struct PQ4 {
  static constexpr int kDT = kQ4_0x16;
  static constexpr int kQuantBytes = kQ4PackQuantBytes;
  static constexpr bool kUseCorr = true;
  template <int RX>
  static SVC_AVX2_INLINE void dots(const uint8_t* q, const int8_t* const (&xq)[RX], __m256i (&ia)[RX]) {
    const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
    for (int p = 0; p < 4; p++) {
      const __m256i raw = _mm256_loadu_si256((const __m256i*)(q + 64 * p));
      const __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
      for (int b = 0; b < RX; b++) {
        const __m256i d16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast4(xq[b] + 4 * p)),
                                             _mm256_maddubs_epi16(hi, bcast4(xq[b] + 16 + 4 * p)));
        ia[b] = _mm256_add_epi32(ia[b], _mm256_madd_epi16(d16, ones));
      }
    }
  }
};

// One group (16 weight rows from r, `valid` of them real) x RX activation rows from i0.
template <typename W, int RX>
SVC_AVX2_INLINE void tile_packed(const QuantActs& x, int i0, const uint8_t* grp, int r, int valid, float* y, size_t ldy) {
  const int nb = x.k / 32;
  const uint8_t* scales = grp + (size_t)nb * W::kQuantBytes;
  for (int h = 0; h < 2; h++) {
    if (valid <= 8 * h) break;
    __m256 acc[RX];
    for (int b = 0; b < RX; b++) acc[b] = _mm256_setzero_ps();
    for (int blk = 0; blk < nb; blk++) {
      const int8_t* xq[RX];
      __m256i ia[RX];
      for (int b = 0; b < RX; b++) {
        xq[b] = x.qs + (size_t)(i0 + b) * x.k + blk * 32;
        ia[b] = W::kUseCorr ? _mm256_set1_epi32(x.corr[(size_t)(i0 + b) * nb + blk]) : _mm256_setzero_si256();
      }
      W::template dots<RX>(grp + (size_t)blk * W::kQuantBytes + 32 * h, xq, ia);
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(scales + (size_t)blk * kPackScaleBytes + 16 * h)));
      for (int b = 0; b < RX; b++) {
        const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(x.d[(size_t)(i0 + b) * nb + blk]));
        acc[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[b]), sc, acc[b]);
      }
    }
    const int left = valid - 8 * h;
    for (int b = 0; b < RX; b++) {
      float* out = y + (size_t)(i0 + b) * ldy + r + 8 * h;
      if (left >= 8) {
        _mm256_storeu_ps(out, acc[b]);
      } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, acc[b]);
        for (int j = 0; j < left; j++) out[j] = tmp[j];
      }
    }
  }
}

template <typename W>
SVC_AVX2 void gemm_packed(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows, float* y, size_t ldy,
                 uint8_t* scratch) {
  const size_t gb = group_bytes(W::kDT, x.k / 32);
  for (int g = g0; g < g1; g++) {
    const uint8_t* grp = w + (size_t)g * gb;
    int i = 0;
    for (; i + 4 <= n; i += 4) tile_packed<W, 4>(x, i, grp, 16 * g, rows - 16 * g, y, ldy);
    for (; i < n; i++) tile_packed<W, 1>(x, i, grp, 16 * g, rows - 16 * g, y, ldy);
  }
}

// ---- int8 GEMM on packed K-quants (Q4_Kx16, Q5_Kx16, Q6_Kx16; packed.h) ----
// The AVX-512 scheme (see kernels_avx512.cc) on ymm halves of 8 rows: the quants' high bits are OR-ed
// in from their lines, maddubs + madd give the four-column sums (unsigned codes, so no sign trick:
// 31 * 127 * 4 and 63 * 127 * 2 stay within int16), and the same float steps scale them per
// sub-block (Q4_K / Q5_K) or per 16 columns (Q6_K), in the same order for every tile.

template <int DT, int V>
SVC_AVX2_INLINE __m256i kp_high(__m256i h0, __m256i h1) {
  if constexpr (DT == kQ5_Kx16) {
    __m256i s;
    if constexpr (V <= 4) s = _mm256_slli_epi16(h0, 4 - V);
    else s = _mm256_srli_epi16(h0, V - 4);
    return _mm256_and_si256(s, _mm256_set1_epi8(0x10));
  } else {
    const __m256i h = V < 4 ? h0 : h1;
    constexpr int sh = 2 * (V & 3);
    __m256i s;
    if constexpr (sh <= 4) s = _mm256_slli_epi16(h, 4 - sh);
    else s = _mm256_srli_epi16(h, sh - 4);
    return _mm256_and_si256(s, _mm256_set1_epi8(0x30));
  }
}

template <int DT, int P, int RX, int NA>
SVC_AVX2_INLINE void kp_line(const uint8_t* q, __m256i h0, __m256i h1, const int8_t* const (&xq)[RX], __m256i (&ia)[RX][NA]) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const __m256i raw = _mm256_loadu_si256((const __m256i*)(q + 64 * P));
  __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
  if constexpr (DT != kQ4_Kx16) {
    lo = _mm256_or_si256(lo, kp_high<DT, P>(h0, h1));
    hi = _mm256_or_si256(hi, kp_high<DT, 4 + P>(h0, h1));
  }
  for (int b = 0; b < RX; b++) {
    const __m256i dl = _mm256_maddubs_epi16(lo, bcast4(xq[b] + 4 * P)), dh = _mm256_maddubs_epi16(hi, bcast4(xq[b] + 16 + 4 * P));
    if constexpr (NA == 1) {
      ia[b][0] = _mm256_add_epi32(ia[b][0], _mm256_madd_epi16(_mm256_add_epi16(dl, dh), ones));
    } else {
      ia[b][0] = _mm256_add_epi32(ia[b][0], _mm256_madd_epi16(dl, ones));
      ia[b][1] = _mm256_add_epi32(ia[b][1], _mm256_madd_epi16(dh, ones));
    }
  }
}

SVC_AVX2_INLINE __m256 kp_u8(const uint8_t* p) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p))); }
SVC_AVX2_INLINE __m256 kp_i8(const uint8_t* p) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p))); }

// One group (16 weight rows from r, `valid` of them real) x RX activation rows from i0.
template <int DT, int RX>
SVC_AVX2_INLINE void tile_kpacked(const QuantActs& x, int i0, const uint8_t* grp, int r, int valid, float* y, size_t ldy) {
  constexpr bool q6 = DT == kQ6_Kx16;
  constexpr int NA = q6 ? 2 : 1, SB = kpack_sb_bytes(DT), HB = kpack_high_bytes(DT), SC = kpack_scales(DT);
  const int k = x.k, nb = k / 32, ng = k / 16, nsb = k / QK_K;
  for (int h = 0; h < 2; h++) {
    if (valid <= 8 * h) break;
    __m256 acc[RX];
    for (int b = 0; b < RX; b++) acc[b] = _mm256_setzero_ps();
    for (int sb = 0; sb < nsb; sb++) {
      const uint8_t* base = grp + (size_t)sb * SB;
      const __m256 dv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(base + SC + 256 + 16 * h)));
      const __m256 mv = q6 ? dv : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(base + SC + 288 + 16 * h)));
      for (int s = 0; s < 8; s++) {
        const int blk = sb * 8 + s;
        const uint8_t* q = base + 256 * s + 32 * h;
        const __m256i h0 = HB > 0 ? _mm256_loadu_si256((const __m256i*)(base + 2048 + HB * s + 32 * h)) : _mm256_setzero_si256();
        const __m256i h1 = q6 ? _mm256_loadu_si256((const __m256i*)(base + 2048 + HB * s + 64 + 32 * h)) : h0;
        const int8_t* xq[RX];
        __m256i ia[RX][NA];
        for (int b = 0; b < RX; b++) {
          xq[b] = x.qs + (size_t)(i0 + b) * k + blk * 32;
          for (int a = 0; a < NA; a++) ia[b][a] = _mm256_setzero_si256();
        }
        kp_line<DT, 0, RX, NA>(q, h0, h1, xq, ia);
        kp_line<DT, 1, RX, NA>(q, h0, h1, xq, ia);
        kp_line<DT, 2, RX, NA>(q, h0, h1, xq, ia);
        kp_line<DT, 3, RX, NA>(q, h0, h1, xq, ia);
        if constexpr (q6) {
          const __m256 sl = _mm256_mul_ps(dv, kp_i8(base + SC + 32 * s + 8 * h));
          const __m256 sh = _mm256_mul_ps(dv, kp_i8(base + SC + 32 * s + 16 + 8 * h));
          for (int b = 0; b < RX; b++) {
            const float* s16 = x.s16 + (size_t)(i0 + b) * ng + 2 * blk;
            const __m256 dx = _mm256_set1_ps(x.d[(size_t)(i0 + b) * nb + blk]);
            const __m256 lo = _mm256_fmsub_ps(_mm256_cvtepi32_ps(ia[b][0]), dx, _mm256_set1_ps(32.0f * s16[0]));
            acc[b] = _mm256_fmadd_ps(lo, sl, acc[b]);
            const __m256 hi = _mm256_fmsub_ps(_mm256_cvtepi32_ps(ia[b][NA - 1]), dx, _mm256_set1_ps(32.0f * s16[1]));
            acc[b] = _mm256_fmadd_ps(hi, sh, acc[b]);
          }
        } else {
          const __m256 dsc = _mm256_mul_ps(dv, kp_u8(base + SC + 16 * s + 8 * h));
          const __m256 mn = _mm256_mul_ps(mv, kp_u8(base + SC + 128 + 16 * s + 8 * h));
          for (int b = 0; b < RX; b++) {
            const float* s16 = x.s16 + (size_t)(i0 + b) * ng + 2 * blk;
            const __m256 sc = _mm256_mul_ps(dsc, _mm256_set1_ps(x.d[(size_t)(i0 + b) * nb + blk]));
            acc[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[b][0]), sc, acc[b]);
            acc[b] = _mm256_fnmadd_ps(mn, _mm256_set1_ps(s16[0] + s16[1]), acc[b]);
          }
        }
      }
    }
    const int left = valid - 8 * h;
    for (int b = 0; b < RX; b++) {
      float* out = y + (size_t)(i0 + b) * ldy + r + 8 * h;
      if (left >= 8) {
        _mm256_storeu_ps(out, acc[b]);
      } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, acc[b]);
        for (int j = 0; j < left; j++) out[j] = tmp[j];
      }
    }
  }
}

template <int DT>
SVC_AVX2 void gemm_kpacked(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows, float* y, size_t ldy,
                           uint8_t* /*scratch*/) {
  constexpr int RX = DT == kQ6_Kx16 ? 2 : 4;  // Q6_K's two sums per row would spill at 4
  const size_t gb = group_bytes(DT, x.k / 32);
  for (int g = g0; g < g1; g++) {
    const uint8_t* grp = w + (size_t)g * gb;
    int i = 0;
    for (; i + RX <= n; i += RX) tile_kpacked<DT, RX>(x, i, grp, 16 * g, rows - 16 * g, y, ldy);
    for (; i < n; i++) tile_kpacked<DT, 1>(x, i, grp, 16 * g, rows - 16 * g, y, ldy);
  }
}

// ---- int8 GEMM on packed Q5_0 / Q5_1 / Q4_1 / IQ4_NL (packed.h) ----
// The Q4_0x16 scheme on ymm halves of 8 rows. Q5 codes stay unsigned (31 * 127 * 4 fits maddubs'
// int16 sums), with Q5_0's correction -16 * sum(x) seeding the integer sum and the fifth bits OR-ed
// in as Q5_Kx16's. IQ4_NL maps its nibbles to the signed table values and moves their signs onto x
// (values + 128 would overflow maddubs), so it needs no correction; its two half-sums go to int32
// separately, as two 127 * 127 * 2 pairs would overflow int16. The types with a min add m * sum(x)
// per block.

template <int DT>
struct PB32 {
  static constexpr bool kHigh = pack_has_high(DT), kMin = pack_has_min(DT), kTable = DT == kIQ4_NLx16;
  static constexpr bool kCorr = DT == kQ5_0x16;
  static constexpr int kQuantBytes = pack_quant_bytes(DT), kScaleBytes = pack_scale_bytes(DT);
};

template <int DT, int P, int RX>
SVC_AVX2_INLINE void pb_line(const uint8_t* q, __m256i h, const int8_t* const (&xq)[RX], __m256i (&ia)[RX]) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const __m256i raw = _mm256_loadu_si256((const __m256i*)(q + 64 * P));
  __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
  if constexpr (PB32<DT>::kHigh) {
    lo = _mm256_or_si256(lo, kp_high<kQ5_Kx16, P>(h, h));
    hi = _mm256_or_si256(hi, kp_high<kQ5_Kx16, 4 + P>(h, h));
  }
  if constexpr (PB32<DT>::kTable) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i*)kValuesIq4nl));
    const __m256i vl = _mm256_shuffle_epi8(table, lo), vh = _mm256_shuffle_epi8(table, hi);
    const __m256i al = _mm256_sign_epi8(vl, vl), ah = _mm256_sign_epi8(vh, vh);
    for (int b = 0; b < RX; b++) {
      const __m256i dl = _mm256_maddubs_epi16(al, _mm256_sign_epi8(bcast4(xq[b] + 4 * P), vl));
      const __m256i dh = _mm256_maddubs_epi16(ah, _mm256_sign_epi8(bcast4(xq[b] + 16 + 4 * P), vh));
      ia[b] = _mm256_add_epi32(ia[b], _mm256_add_epi32(_mm256_madd_epi16(dl, ones), _mm256_madd_epi16(dh, ones)));
    }
  } else {
    for (int b = 0; b < RX; b++) {
      const __m256i d16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast4(xq[b] + 4 * P)),
                                           _mm256_maddubs_epi16(hi, bcast4(xq[b] + 16 + 4 * P)));
      ia[b] = _mm256_add_epi32(ia[b], _mm256_madd_epi16(d16, ones));
    }
  }
}

// One group (16 weight rows from r, `valid` of them real) x RX activation rows from i0.
template <int DT, int RX>
SVC_AVX2_INLINE void tile_pb32(const QuantActs& x, int i0, const uint8_t* grp, int r, int valid, float* y, size_t ldy) {
  using W = PB32<DT>;
  const int nb = x.k / 32;
  const uint8_t* scales = grp + (size_t)nb * W::kQuantBytes;
  for (int h = 0; h < 2; h++) {
    if (valid <= 8 * h) break;
    __m256 acc[RX];
    for (int b = 0; b < RX; b++) acc[b] = _mm256_setzero_ps();
    for (int blk = 0; blk < nb; blk++) {
      const uint8_t* q = grp + (size_t)blk * W::kQuantBytes + 32 * h;
      const __m256i hb = W::kHigh ? _mm256_loadu_si256((const __m256i*)(q + 256)) : _mm256_setzero_si256();
      const int8_t* xq[RX];
      __m256i ia[RX];
      for (int b = 0; b < RX; b++) {
        xq[b] = x.qs + (size_t)(i0 + b) * x.k + blk * 32;
        ia[b] = W::kCorr ? _mm256_set1_epi32(x.corr[(size_t)(i0 + b) * nb + blk]) : _mm256_setzero_si256();
      }
      pb_line<DT, 0, RX>(q, hb, xq, ia);
      pb_line<DT, 1, RX>(q, hb, xq, ia);
      pb_line<DT, 2, RX>(q, hb, xq, ia);
      pb_line<DT, 3, RX>(q, hb, xq, ia);
      const uint8_t* sp = scales + (size_t)blk * W::kScaleBytes + 16 * h;
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)sp));
      for (int b = 0; b < RX; b++) {
        const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(x.d[(size_t)(i0 + b) * nb + blk]));
        acc[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[b]), sc, acc[b]);
      }
    }
    if constexpr (W::kMin) {
      // m * sum(x) summed apart and added last, as on the AVX-512 path.
      __m256 am[RX];
      for (int b = 0; b < RX; b++) am[b] = _mm256_setzero_ps();
      for (int blk = 0; blk < nb; blk++) {
        const uint8_t* sp = scales + (size_t)blk * W::kScaleBytes + kPackScaleBytes + 16 * h;
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)sp));
        for (int b = 0; b < RX; b++) {
          const float* s16 = x.s16 + (size_t)(i0 + b) * 2 * nb + 2 * blk;
          am[b] = _mm256_fmadd_ps(mw, _mm256_set1_ps(s16[0] + s16[1]), am[b]);
        }
      }
      for (int b = 0; b < RX; b++) acc[b] = _mm256_add_ps(acc[b], am[b]);
    }
    const int left = valid - 8 * h;
    for (int b = 0; b < RX; b++) {
      float* out = y + (size_t)(i0 + b) * ldy + r + 8 * h;
      if (left >= 8) {
        _mm256_storeu_ps(out, acc[b]);
      } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, acc[b]);
        for (int j = 0; j < left; j++) out[j] = tmp[j];
      }
    }
  }
}

template <int DT>
SVC_AVX2 void gemm_pb32(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows, float* y, size_t ldy,
                        uint8_t* /*scratch*/) {
  const size_t gb = group_bytes(DT, x.k / 32);
  for (int g = g0; g < g1; g++) {
    const uint8_t* grp = w + (size_t)g * gb;
    int i = 0;
    for (; i + 4 <= n; i += 4) tile_pb32<DT, 4>(x, i, grp, 16 * g, rows - 16 * g, y, ldy);
    for (; i < n; i++) tile_pb32<DT, 1>(x, i, grp, 16 * g, rows - 16 * g, y, ldy);
  }
}

SVC_AVX2 void quantize_row_q8(const float* x, int k, int8_t* qs, float* d, float* s16, int32_t* corr, int zero) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int b = 0; b < k / 32; b++) {
    const float* xb = x + b * 32;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; j++) {
      v[j] = _mm256_loadu_ps(xb + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_and_ps(v[j], absmask));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float am = _mm_cvtss_f32(m);
    const float db = am / 127.0f;
    const float id = am != 0.0f ? 127.0f / am : 0.0f;  // as llama.cpp's quantize_row_q8_0
    d[b] = db;
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int j = 0; j < 4; j++) q[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], idv));  // ties to even
    // packs interleave 128-bit lanes; the final permute restores element order.
    const __m256i p16a = _mm256_packs_epi32(q[0], q[1]);
    const __m256i p16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
    const __m256i out = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i*)(qs + b * 32), out);
    if (s16) {
      const __m256i s0 = _mm256_add_epi32(q[0], q[1]), s1 = _mm256_add_epi32(q[2], q[3]);
      const __m128i h0 = _mm_add_epi32(_mm256_castsi256_si128(s0), _mm256_extracti128_si256(s0, 1));
      const __m128i h1 = _mm_add_epi32(_mm256_castsi256_si128(s1), _mm256_extracti128_si256(s1, 1));
      const __m128i t = _mm_hadd_epi32(_mm_hadd_epi32(h0, h1), _mm_setzero_si128());  // [sum0, sum1, 0, 0]
      s16[2 * b] = db * (float)_mm_cvtsi128_si32(t);
      s16[2 * b + 1] = db * (float)_mm_extract_epi32(t, 1);
    }
    if (corr) {
      const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
      __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
      h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
      h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
      corr[b] = -zero * _mm_cvtsi128_si32(h);
    }
  }
}

// ---- element-wise ----

// Two passes: the largest value (vmaxps keeps the running max when x is NaN), then the first index
// holding it.
SVC_AVX2 int64_t argmax(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
  m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 1));
  m = _mm256_max_ps(m, _mm256_permute_ps(m, 0x4e));
  m = _mm256_max_ps(m, _mm256_permute_ps(m, 0xb1));
  float best = _mm256_cvtss_f32(m);
  for (int64_t j = i; j < n; j++)
    if (x[j] > best) best = x[j];
  if (!(best > -INFINITY)) return 0;
  const __m256 bv = _mm256_set1_ps(best);
  for (i = 0; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), bv, _CMP_EQ_OQ));
    if (mask) return i + __builtin_ctz((unsigned)mask);
  }
  for (; i < n; i++)
    if (x[i] == best) return i;
  return 0;
}

SVC_AVX2 double sum_squares(const float* x, int n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    a0 = _mm256_fmadd_ps(v0, v0, a0);
    a1 = _mm256_fmadd_ps(v1, v1, a1);
  }
  double s = hsum(_mm256_add_ps(a0, a1));
  for (; i < n; i++) s += (double)x[i] * x[i];
  return s;
}

SVC_AVX2 void scale_mul(const float* x, float s, const float* w, float* out, int n) {
  const __m256 sv = _mm256_set1_ps(s);
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv), _mm256_loadu_ps(w + i)));
  for (; i < n; i++) out[i] = x[i] * s * w[i];
}

SVC_AVX2 void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), gv));
    const __m256 s = _mm256_div_ps(gv, _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
  }
  for (; i < n; i++) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

SVC_AVX2 void add(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; i++) out[i] = a[i] + b[i];
}

// f32 lanes summed in double at the end (as sum_squares); the mean is subtracted before squaring.
SVC_AVX2 void layer_norm(const float* x, int n, double eps, const float* w, const float* b, float* out) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
  }
  double s = hsum(_mm256_add_ps(a0, a1));
  for (; i < n; i++) s += x[i];
  const float mean = (float)(s / n);
  const __m256 mv = _mm256_set1_ps(mean);
  a0 = _mm256_setzero_ps();
  a1 = _mm256_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv), d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mv);
    a0 = _mm256_fmadd_ps(d0, d0, a0);
    a1 = _mm256_fmadd_ps(d1, d1, a1);
  }
  double ss = hsum(_mm256_add_ps(a0, a1));
  for (; i < n; i++) ss += ((double)x[i] - mean) * ((double)x[i] - mean);
  const float inv = (float)(1.0 / std::sqrt(ss / n + eps));
  const __m256 iv = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), iv);
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(d, _mm256_loadu_ps(w + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < n; i++) out[i] = (x[i] - mean) * inv * w[i] + b[i];
}

// erfc(z) for z >= 0 (Numerical Recipes' erfcc): relative error below 1.2e-7 everywhere, so the
// negative tail of gelu (0.5 * x * erfc(|x| / sqrt 2)) keeps its relative precision.
SVC_AVX2_INLINE __m256 erfc8(__m256 z) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z, one));
  __m256 p = _mm256_set1_ps(0.17087277f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
  return _mm256_mul_ps(t, exp8(_mm256_fnmadd_ps(z, z, p)));
}

// gelu(x) = 0.5 x erfc(-x / sqrt 2): for x < 0 that is h = 0.5 x erfc(|x| / sqrt 2), for x >= 0 it is x - h.
SVC_AVX2_INLINE __m256 gelu_erf8(__m256 x) {
  const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 h = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), erfc8(_mm256_mul_ps(ax, _mm256_set1_ps(0.70710678f))));
  return _mm256_blendv_ps(_mm256_sub_ps(x, h), h, x);  // the sign bit of x picks h
}

// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): no cancellation in either tail.
SVC_AVX2_INLINE __m256 gelu_tanh8(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 m2u = _mm256_mul_ps(x, _mm256_fmadd_ps(_mm256_set1_ps(-0.0713548162726f), x2, _mm256_set1_ps(-1.59576912161f)));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(m2u)));
}

SVC_AVX2_INLINE __m256 gelu_quick8(__m256 x) {
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_mul_ps(_mm256_set1_ps(-1.702f), x))));
}

// The tail goes through the same vector code from a padded copy, so an element's result does not
// depend on where it sits.
template <__m256 (*F)(__m256)>
SVC_AVX2_INLINE void map8(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, F(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(buf, x + i, (size_t)(n - i) * sizeof(float));
    _mm256_storeu_ps(buf, F(_mm256_loadu_ps(buf)));
    std::memcpy(out + i, buf, (size_t)(n - i) * sizeof(float));
  }
}

SVC_AVX2 void gelu_erf(const float* x, float* out, int64_t n) { map8<gelu_erf8>(x, out, n); }
SVC_AVX2 void gelu_tanh(const float* x, float* out, int64_t n) { map8<gelu_tanh8>(x, out, n); }
SVC_AVX2 void gelu_quick(const float* x, float* out, int64_t n) { map8<gelu_quick8>(x, out, n); }

SVC_AVX2 void mul(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; i++) out[i] = a[i] * b[i];
}

// tanh(y): for |y| >= 0.4 as (1 - e) / (1 + e), e = exp(-2|y|) (no cancellation there: 1 - e > 0.55);
// below, the odd Taylor series through y^13 (truncation < 1e-8 relative at 0.4), so small values keep
// their relative precision. The sign of y is put back at the end.
SVC_AVX2_INLINE __m256 tanh8(__m256 y) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  const __m256 a = _mm256_andnot_ps(sign, y);
  const __m256 e = exp8(_mm256_mul_ps(a, _mm256_set1_ps(-2.0f)));
  const __m256 big = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  const __m256 a2 = _mm256_mul_ps(a, a);
  __m256 p = _mm256_set1_ps(21844.0f / 6081075.0f);
  p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(-1382.0f / 155925.0f));
  p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(62.0f / 2835.0f));
  p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(-17.0f / 315.0f));
  p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(2.0f / 15.0f));
  p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(-1.0f / 3.0f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(a, a2), p, a);
  const __m256 t = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, _mm256_set1_ps(0.4f), _CMP_LT_OQ));
  return _mm256_or_ps(t, _mm256_and_ps(sign, y));
}

SVC_AVX2 void softcap(const float* x, float* out, int64_t n, float cap) {
  const __m256 c = _mm256_set1_ps(cap);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(c, tanh8(_mm256_div_ps(_mm256_loadu_ps(x + i), c))));
  if (i < n) {  // the tail through the same vector code, from a padded copy
    float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(buf, x + i, (size_t)(n - i) * sizeof(float));
    _mm256_storeu_ps(buf, _mm256_mul_ps(c, tanh8(_mm256_div_ps(_mm256_loadu_ps(buf), c))));
    std::memcpy(out + i, buf, (size_t)(n - i) * sizeof(float));
  }
}

// ---- attention ----

SVC_AVX2 void qk(const float* q, const float* K, size_t kstride, int nk, int hd, float* s) {
  for (int t = 0; t < nk; t++) {
    const float* kt = K + (size_t)t * kstride;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int d = 0;
    for (; d + 16 <= hd; d += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(kt + d), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 8), _mm256_loadu_ps(kt + d + 8), a1);
    }
    for (; d + 8 <= hd; d += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(kt + d), a0);
    float sum = hsum(_mm256_add_ps(a0, a1));
    for (; d < hd; d++) sum += q[d] * kt[d];
    s[t] = sum;
  }
}

SVC_AVX2 void pv(const float* p, const float* V, size_t vstride, int nk, int hd, float* o) {
  int d = 0;
  // 32 output columns stay in registers across all keys.
  for (; d + 32 <= hd; d += 32) {
    __m256 o0 = _mm256_loadu_ps(o + d), o1 = _mm256_loadu_ps(o + d + 8);
    __m256 o2 = _mm256_loadu_ps(o + d + 16), o3 = _mm256_loadu_ps(o + d + 24);
    for (int t = 0; t < nk; t++) {
      const float* vt = V + (size_t)t * vstride + d;
      const __m256 pt = _mm256_set1_ps(p[t]);
      o0 = _mm256_fmadd_ps(pt, _mm256_loadu_ps(vt), o0);
      o1 = _mm256_fmadd_ps(pt, _mm256_loadu_ps(vt + 8), o1);
      o2 = _mm256_fmadd_ps(pt, _mm256_loadu_ps(vt + 16), o2);
      o3 = _mm256_fmadd_ps(pt, _mm256_loadu_ps(vt + 24), o3);
    }
    _mm256_storeu_ps(o + d, o0);
    _mm256_storeu_ps(o + d + 8, o1);
    _mm256_storeu_ps(o + d + 16, o2);
    _mm256_storeu_ps(o + d + 24, o3);
  }
  for (; d + 8 <= hd; d += 8) {
    __m256 o0 = _mm256_loadu_ps(o + d);
    for (int t = 0; t < nk; t++) o0 = _mm256_fmadd_ps(_mm256_set1_ps(p[t]), _mm256_loadu_ps(V + (size_t)t * vstride + d), o0);
    _mm256_storeu_ps(o + d, o0);
  }
  for (; d < hd; d++) {
    float acc = o[d];
    for (int t = 0; t < nk; t++) acc += p[t] * V[(size_t)t * vstride + d];
    o[d] = acc;
  }
}

SVC_AVX2 void qk_tile(const float* Q, int nq, const float* K, size_t kstride, int nk, int hd, float* S, size_t sstride) {
  for (int i = 0; i < nq; i++) qk(Q + (size_t)i * hd, K, kstride, nk, hd, S + (size_t)i * sstride);
}

SVC_AVX2 void pv_tile(const float* P, int nq, size_t pstride, const float* V, size_t vstride, int nk, int hd, float* O) {
  for (int i = 0; i < nq; i++) pv(P + (size_t)i * pstride, V, vstride, nk, hd, O + (size_t)i * hd);
}

SVC_AVX2 float exp_sum(float* s, int n, float m) {
  const __m256 mv = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + i), mv));
    _mm256_storeu_ps(s + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; i < n; i++) {
    s[i] = std::exp(s[i] - m);
    sum += s[i];
  }
  return sum;
}

SVC_AVX2 void scale(float* x, int n, float a) {
  const __m256 av = _mm256_set1_ps(a);
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), av));
  for (; i < n; i++) x[i] *= a;
}

SVC_AVX2 void kv_decode_bf16(const uint8_t* bytes, float* dst, int n, double) {
  const uint16_t* src = reinterpret_cast<const uint16_t*>(bytes);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
  }
  for (; i < n; i++) dst[i] = bf16_to_f32(src[i]);
}

SVC_AVX2 void kv_decode_fp8(const uint8_t* src, float* dst, int n, double scale) {
  const float mult = fp8_decode_mult(scale);
  const __m256 mv = _mm256_set1_ps(mult);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i c = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i*)(src + i)));
    const __m128i h = _mm_or_si128(_mm_and_si128(_mm_slli_epi16(c, 8), _mm_set1_epi16((short)0x8000)),
                                   _mm_and_si128(_mm_slli_epi16(c, 7), _mm_set1_epi16(0x3f80)));
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_cvtph_ps(h), mv));
  }
  for (; i < n; i++) dst[i] = fp8_to_f32(src[i], mult);
}

// The scalar f32_to_fp8 (kv_codec.h) eight lanes at a time (see the AVX-512 version).
SVC_AVX2 void kv_encode_fp8(const float* src, uint8_t* dst, int n, double scale) {
  const __m256d sv = _mm256_set1_pd(scale);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    if (scale != 1.0) {
      const __m128 lo = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), sv));
      const __m128 hi = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), sv));
      v = _mm256_set_m128(hi, lo);
    }
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i abits = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
    const __m256 a = _mm256_castsi256_ps(abits);
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 24), _mm256_set1_epi32(0x80));
    const __m256i sub = _mm256_cvtps_epi32(_mm256_mul_ps(a, _mm256_set1_ps(512.0f)));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(abits, 20), _mm256_set1_epi32(1));
    __m256i norm = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(abits, _mm256_set1_epi32(0x7ffff)), odd), 20);
    norm = _mm256_min_epi32(_mm256_sub_epi32(norm, _mm256_set1_epi32(120 << 3)), _mm256_set1_epi32(kFp8MaxCode));
    __m256i code = _mm256_blendv_epi8(norm, sub, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(0.015625f), _CMP_LT_OQ)));
    code = _mm256_blendv_epi8(code, _mm256_set1_epi32(kFp8MaxCode), _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(448.0f), _CMP_GE_OQ)));
    code = _mm256_and_si256(_mm256_or_si256(code, sign), _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q)));
    // Every lane holds a byte value: pack 8 x int32 -> 8 bytes.
    const __m256i b = _mm256_shuffle_epi8(code, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                                 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
    const uint32_t w0 = (uint32_t)_mm256_extract_epi32(b, 0), w1 = (uint32_t)_mm256_extract_epi32(b, 4);
    std::memcpy(dst + i, &w0, 4);
    std::memcpy(dst + i + 4, &w1, 4);
  }
  for (; i < n; i++) dst[i] = f32_to_fp8((float)((double)src[i] / scale));
}

// NVFP4, 8 values (4 bytes of nibbles) at a time: a variable shift spreads the nibbles over the
// lanes, vpermps looks the magnitude up, and the nibble's bit 3 becomes the float's sign.
// The group multipliers (E4M3 scale x layer scale) are decoded 8 at a time, as fp8 rows are.
SVC_AVX2 void kv_decode_nvfp4(const uint8_t* src, float* dst, int n, double scale) {
  const uint8_t* scales = src + (n + 1) / 2;
  const __m256 mag = _mm256_loadu_ps(kE2m1);
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const int groups = (n + kNvfp4Group - 1) / kNvfp4Group;
  alignas(32) float ds[8];
  for (int g = 0, lo = 0; lo < n; g++, lo += kNvfp4Group) {
    if (g % 8 == 0) kv_decode_fp8(scales + g, ds, groups - g < 8 ? groups - g : 8, scale);
    const int cnt = n - lo < kNvfp4Group ? n - lo : kNvfp4Group;
    const float d = ds[g % 8];
    const __m256 dv = _mm256_set1_ps(d);
    int i = 0;
    for (; i + 8 <= cnt; i += 8) {
      uint32_t w;
      std::memcpy(&w, src + (lo + i) / 2, 4);
      const __m256i c = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)w), shifts), _mm256_set1_epi32(15));
      const __m256 sign = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(c, 3), 31));
      _mm256_storeu_ps(dst + lo + i, _mm256_mul_ps(_mm256_xor_ps(_mm256_permutevar8x32_ps(mag, c), sign), dv));
    }
    for (; i < cnt; i++) dst[lo + i] = kE2m1[(src[(lo + i) >> 1] >> (((lo + i) & 1) * 4)) & 15] * d;
  }
}

// Turbo rows into the rotated domain (centroid x row scale), 8 indices (B bytes) at a time: a
// variable shift spreads them over the lanes and vpermps looks the centroids up (turbo4: two
// 8-entry halves chosen by the index's bit 3); turbo8 gathers from its 256-entry table.
template <int B>
SVC_AVX2 void kv_decode_turbo(const uint8_t* src, float* dst, int n, double) {
  const TurboCodebook<B>& cb = turbo_book<B>();
  const __m256 av = _mm256_set1_ps(turbo_row_scale(src));
  const uint8_t* q = src + 2;
  int i = 0;
  if constexpr (B == 8) {
    for (; i + 8 <= n; i += 8) {
      const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(q + i)));
      _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_i32gather_ps(cb.c, idx, 4), av));
    }
  } else {
    const __m256 lo = _mm256_loadu_ps(cb.c), hi = _mm256_loadu_ps(cb.c + 8);
    const __m256i shifts = _mm256_setr_epi32(0, B, 2 * B, 3 * B, 4 * B, 5 * B, 6 * B, 7 * B);
    const __m256i mask = _mm256_set1_epi32((1 << B) - 1);
    for (; i + 8 <= n; i += 8) {
      const uint32_t w = (uint32_t)load_le<B>(q + i / 8 * B);
      const __m256i idx = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)w), shifts), mask);
      __m256 v = _mm256_permutevar8x32_ps(lo, idx);
      if constexpr (B == 4)
        v = _mm256_blendv_ps(v, _mm256_permutevar8x32_ps(hi, idx), _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
      _mm256_storeu_ps(dst + i, _mm256_mul_ps(v, av));
    }
  }
  const float a = turbo_row_scale(src);
  for (; i < n; i++) dst[i] = cb.c[turbo_index<B>(q, i)] * a;
}

SVC_AVX2 uint64_t read_sum(const uint8_t* p, size_t bytes) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < bytes; i += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  return (uint64_t)(_mm256_extract_epi64(a, 0) ^ _mm256_extract_epi64(a, 1) ^ _mm256_extract_epi64(a, 2) ^
                    _mm256_extract_epi64(a, 3));
}

}  // namespace

const Kernels kAvx2Kernels = {
    .name = "avx2",
    .gemm_f32 = gemm_float<WF32>,
    .gemm_f16 = gemm_float<WF16>,
    .gemm_bf16 = gemm_float<WBF16>,
    .gemm_q8_0 = gemm_quant<WQ8_0>,
    .gemm_q4_0 = gemm_quant<WQ4_0>,
    .gemm_q4_1 = gemm_quant<WQ4_1>,
    .gemm_q5_0 = gemm_quant<WQ5_0>,
    .gemm_q5_1 = gemm_quant<WQ5_1>,
    .gemm_iq4_nl = gemm_quant<WIQ4_NL>,
    .gemm_q2_k = gemm_kquant<KQ2>,
    .gemm_q4_k = gemm_kquant<KQ4>,
    .gemm_q5_k = gemm_kquant<KQ5>,
    .gemm_q6_k = gemm_kquant<KQ6>,
    .gemm_q3_k = gemm_kquant<KQ3>,
    .gemm_iq4_xs = gemm_kquant<KIQ4XS>,
    .gemm_iq3_xxs = gemm_kquant<KIQ3XXS>,
    .gemm_iq3_s = gemm_kquant<KIQ3S>,
    .gemm_tq2_0 = gemm_kquant<KTQ2>,
    .gemm_q8_0x16 = gemm_packed<PQ8>,
    .gemm_q4_0x16 = gemm_packed<PQ4>,
    .gemm_q4_kx16 = gemm_kpacked<kQ4_Kx16>,
    .gemm_q5_kx16 = gemm_kpacked<kQ5_Kx16>,
    .gemm_q6_kx16 = gemm_kpacked<kQ6_Kx16>,
    .gemm_q5_0x16 = gemm_pb32<kQ5_0x16>,
    .gemm_q5_1x16 = gemm_pb32<kQ5_1x16>,
    .gemm_q4_1x16 = gemm_pb32<kQ4_1x16>,
    .gemm_iq4_nlx16 = gemm_pb32<kIQ4_NLx16>,
    .quantize_row_q8 = quantize_row_q8,
    .sum_squares = sum_squares,
    .argmax = argmax,
    .scale_mul = scale_mul,
    .silu_mul = silu_mul,
    .add = add,
    .layer_norm = layer_norm,
    .gelu_erf = gelu_erf,
    .gelu_tanh = gelu_tanh,
    .gelu_quick = gelu_quick,
    .mul = mul,
    .softcap = softcap,
    .qk = qk,
    .pv = pv,
    .qk_tile = qk_tile,
    .pv_tile = pv_tile,
    .qk_tile_bf16 = nullptr,
    .pv_tile_bf16 = nullptr,
    .bf16_pairs = nullptr,
    .fp8_to_bf16 = nullptr,
    .fp8_pairs = nullptr,
    .f32_to_bf16 = nullptr,
    .exp_sum = exp_sum,
    .scale = scale,
    .kv_encode_f32 = kv_encode_f32_row,
    .kv_encode_bf16 = kv_encode_bf16_row,
    .kv_encode_fp8 = kv_encode_fp8,
    .kv_encode_nvfp4 = kv_encode_nvfp4_row,
    .kv_encode_turbo2 = kv_encode_turbo_row<2>,
    .kv_encode_turbo3 = kv_encode_turbo_row<3>,
    .kv_encode_turbo4 = kv_encode_turbo_row<4>,
    .kv_encode_turbo8 = kv_encode_turbo_row<8>,
    .kv_decode_bf16 = kv_decode_bf16,
    .kv_decode_fp8 = kv_decode_fp8,
    .kv_decode_nvfp4 = kv_decode_nvfp4,
    .kv_decode_turbo2 = kv_decode_turbo<2>,
    .kv_decode_turbo3 = kv_decode_turbo<3>,
    .kv_decode_turbo4 = kv_decode_turbo<4>,
    .kv_decode_turbo8 = kv_decode_turbo<8>,
    .read_sum = read_sum,
};

}  // namespace svc
#endif  // __x86_64__
