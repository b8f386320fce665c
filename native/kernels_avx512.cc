// AVX-512 kernels (F, BW, VL, VNNI): Skylake-X and later Xeons, Ice Lake, Zen 4. Every function
// carries the target attribute, so the addon's baseline stays plain x86-64. Tails use AVX-512 masks
// instead of scalar loops.
#if defined(__x86_64__)
// GCC 12's AVX-512 headers build _mm512_undefined_* from self-initialised locals, which -Wall reports
// at every inlined use; the warning is about the header, not this code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "cpu_features.h"
#include "kernels.h"
#include "kv_codec.h"
#include "kv_turbo.h"
#include "packed.h"
#include "quant.h"

#define SVC_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"
#define SVC_AVX512 __attribute__((target(SVC_AVX512_TARGET)))
#define SVC_AVX512_INLINE __attribute__((target(SVC_AVX512_TARGET), always_inline)) inline

// K-quant unpacking compiled for this file's instruction set.
#define SVC_KQ_INLINE SVC_AVX512_INLINE
#include "kquant_unpack.h"
#include "kquant_unpack_iq.h"

namespace svc {
namespace {

SVC_AVX512_INLINE __mmask16 tail16(int n) { return (__mmask16)((1u << n) - 1u); }

// Cephes-style expf with the exponent applied by scalef (exact for the whole float range).
SVC_AVX512_INLINE __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.7f));
  const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(y, fx);
}

// ---- float-activation GEMM (f32 / f16 / bf16 weights) ----

struct WF32 {
  static SVC_AVX512_INLINE __m512 load(const uint8_t* row, int c) { return _mm512_loadu_ps(row + 4 * (size_t)c); }
  static SVC_AVX512_INLINE __m512 load(const uint8_t* row, int c, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, row + 4 * (size_t)c);
  }
};
struct WF16 {
  static SVC_AVX512_INLINE __m512 load(const uint8_t* row, int c) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(row + 2 * (size_t)c)));
  }
  static SVC_AVX512_INLINE __m512 load(const uint8_t* row, int c, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * (size_t)c));
  }
};
struct WBF16 {
  static SVC_AVX512_INLINE __m512 widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static SVC_AVX512_INLINE __m512 load(const uint8_t* row, int c) {
    return widen(_mm256_loadu_si256((const __m256i*)(row + 2 * (size_t)c)));
  }
  static SVC_AVX512_INLINE __m512 load(const uint8_t* row, int c, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, row + 2 * (size_t)c));
  }
};

// Columns go in blocks of kColBlock so a 4-row weight tile stays in L1 while the activation tiles
// stream past it (long rows, e.g. a 4864-wide down projection, otherwise spill it to L2). Every
// output sums its blocks in the same order whatever n is, so results stay batch-invariant.
constexpr int kColBlock = 1024;

// Writes (or, for later column blocks, adds) the horizontal sums of a tile's accumulators.
template <int RW, int RX>
SVC_AVX512_INLINE void store_tile(__m512 (&acc)[RW][RX], bool accumulate, float* y, size_t ldy) {
  for (int a = 0; a < RW; a++)
    for (int b = 0; b < RX; b++) {
      float* out = y + (size_t)b * ldy + a;
      const float s = _mm512_reduce_add_ps(acc[a][b]);
      *out = accumulate ? *out + s : s;
    }
}

// RW weight rows x RX activation rows over columns [c0, c1), one accumulator per output, so a result
// does not depend on the tile it was computed in (batch-invariant outputs). `accumulate` adds to y
// (later column blocks) instead of storing.
template <typename W, int RW, int RX>
SVC_AVX512_INLINE void tile_float(int c0, int c1, bool accumulate, const float* x, size_t ldx, const uint8_t* w,
                                  size_t wstride, int r, float* y, size_t ldy) {
  __m512 acc[RW][RX];
  for (int a = 0; a < RW; a++)
    for (int b = 0; b < RX; b++) acc[a][b] = _mm512_setzero_ps();
  const uint8_t* rows[RW];
  for (int a = 0; a < RW; a++) rows[a] = w + (size_t)(r + a) * wstride;
  int c = c0;
  for (; c + 16 <= c1; c += 16) {
    __m512 xv[RX];
    for (int b = 0; b < RX; b++) xv[b] = _mm512_loadu_ps(x + (size_t)b * ldx + c);
    for (int a = 0; a < RW; a++) {
      const __m512 wv = W::load(rows[a], c);
      for (int b = 0; b < RX; b++) acc[a][b] = _mm512_fmadd_ps(wv, xv[b], acc[a][b]);
    }
  }
  if (c < c1) {
    const __mmask16 m = tail16(c1 - c);
    __m512 xv[RX];
    for (int b = 0; b < RX; b++) xv[b] = _mm512_maskz_loadu_ps(m, x + (size_t)b * ldx + c);
    for (int a = 0; a < RW; a++) {
      const __m512 wv = W::load(rows[a], c, m);
      for (int b = 0; b < RX; b++) acc[a][b] = _mm512_fmadd_ps(wv, xv[b], acc[a][b]);
    }
  }
  store_tile<RW, RX>(acc, accumulate, y + r, ldy);
}

template <typename W, int RW>
SVC_AVX512_INLINE void rows_float(int n, int c0, int c1, bool accumulate, const float* x, size_t ldx, const uint8_t* w,
                                  size_t wstride, int r, float* y, size_t ldy) {
  int i = 0;
  for (; i + 4 <= n; i += 4) tile_float<W, RW, 4>(c0, c1, accumulate, x + (size_t)i * ldx, ldx, w, wstride, r, y + (size_t)i * ldy, ldy);
  switch (n - i) {
    case 3: tile_float<W, RW, 3>(c0, c1, accumulate, x + (size_t)i * ldx, ldx, w, wstride, r, y + (size_t)i * ldy, ldy); break;
    case 2: tile_float<W, RW, 2>(c0, c1, accumulate, x + (size_t)i * ldx, ldx, w, wstride, r, y + (size_t)i * ldy, ldy); break;
    case 1: tile_float<W, RW, 1>(c0, c1, accumulate, x + (size_t)i * ldx, ldx, w, wstride, r, y + (size_t)i * ldy, ldy); break;
    default: break;
  }
}

template <typename W>
SVC_AVX512 void gemm_float(int n, int k, const float* x, size_t ldx, const uint8_t* w, size_t wstride, int r0, int r1,
                           float* y, size_t ldy) {
  for (int c0 = 0; c0 < k; c0 += kColBlock) {
    const int c1 = k - c0 > kColBlock ? c0 + kColBlock : k;
    int r = r0;
    for (; r + 4 <= r1; r += 4) rows_float<W, 4>(n, c0, c1, c0 > 0, x, ldx, w, wstride, r, y, ldy);
    for (; r < r1; r++) rows_float<W, 1>(n, c0, c1, c0 > 0, x, ldx, w, wstride, r, y, ldy);
  }
}

// ---- int8 GEMM (Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL weights x Q8 activations) with VNNI ----
// One zmm covers two 32-element blocks. vpdpbusd wants unsigned x signed bytes: activations are
// offset to x + 128 (unsigned) and the offset is taken back by seeding the accumulator with
// -128 * sum(w) per block, so each (weight row, activation row) pair costs one vpdpbusd, one
// convert and two float ops per 64 elements.

// Each weight type: its block size, whether a min term (d * q + m, m at byte 2) follows, and its 32
// quants as signed bytes, element e in byte e.
struct WQ8_0 {
  static constexpr size_t kBlockBytes = sizeof(block_q8_0);
  static constexpr bool kMin = false;
  static SVC_AVX512_INLINE __m256i quants(const uint8_t* blk) { return _mm256_loadu_si256((const __m256i*)(blk + 2)); }
};
// 16 bytes of nibbles: low nibbles are elements 0..15, high nibbles 16..31 (every 32-element type).
SVC_AVX512_INLINE __m256i nibbles32(const uint8_t* p) {
  const __m128i t = _mm_loadu_si128((const __m128i*)p);
  const __m128i m = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(t, 4), m), _mm_and_si128(t, m));
}
SVC_AVX512_INLINE __mmask32 high_bits32(const uint8_t* p) { uint32_t h; std::memcpy(&h, p, 4); return (__mmask32)h; }
struct WQ4_0 {
  static constexpr size_t kBlockBytes = sizeof(block_q4_0);
  static constexpr bool kMin = false;
  // Signed q - 8.
  static SVC_AVX512_INLINE __m256i quants(const uint8_t* blk) { return _mm256_sub_epi8(nibbles32(blk + 2), _mm256_set1_epi8(8)); }
};
struct WQ4_1 {
  static constexpr size_t kBlockBytes = sizeof(block_q4_1);
  static constexpr bool kMin = true;
  static SVC_AVX512_INLINE __m256i quants(const uint8_t* blk) { return nibbles32(blk + 4); }
};
struct WQ5_0 {
  static constexpr size_t kBlockBytes = sizeof(block_q5_0);
  static constexpr bool kMin = false;
  // (q | 16 * bit) - 16: elements whose fifth bit is clear lose 16.
  static SVC_AVX512_INLINE __m256i quants(const uint8_t* blk) {
    const __m256i q = nibbles32(blk + 6);
    return _mm256_mask_sub_epi8(q, (__mmask32)~high_bits32(blk + 2), q, _mm256_set1_epi8(16));
  }
};
struct WQ5_1 {
  static constexpr size_t kBlockBytes = sizeof(block_q5_1);
  static constexpr bool kMin = true;
  static SVC_AVX512_INLINE __m256i quants(const uint8_t* blk) {
    const __m256i q = nibbles32(blk + 8);
    return _mm256_mask_add_epi8(q, high_bits32(blk + 4), q, _mm256_set1_epi8(16));
  }
};
struct WIQ4_NL {
  static constexpr size_t kBlockBytes = sizeof(block_iq4_nl);
  static constexpr bool kMin = false;
  // The codebook is 16 int8 values: one byte shuffle maps every nibble to its value.
  static SVC_AVX512_INLINE __m256i quants(const uint8_t* blk) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i*)kValuesIq4nl));
    return _mm256_shuffle_epi8(table, nibbles32(blk + 2));
  }
};

SVC_AVX512_INLINE uint16_t half_at(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return h; }

// Scales of blocks b and b+1 spread over lanes 0-7 and 8-15.
SVC_AVX512_INLINE __m512 pair_scales_f16(uint16_t d0, uint16_t d1) {
  return _mm512_cvtph_ps(_mm256_set_m128i(_mm_set1_epi16((short)d1), _mm_set1_epi16((short)d0)));
}
SVC_AVX512_INLINE __m512 pair_scales_f32(float d0, float d1) {
  // insertf64x4 (AVX512F) rather than insertf32x8, which needs AVX512DQ.
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(d0)), _mm256_castps_pd(_mm256_set1_ps(d1)), 1));
}

template <typename W, int RW, int RX>
SVC_AVX512_INLINE void tile_quant(const QuantActs& x, int i0, int b0, int b1, bool accumulate, const uint8_t* w,
                                  size_t wstride, int r, float* y, size_t ldy) {
  const int nb = x.k / 32;
  __m512 acc[RW][RX];
  for (int a = 0; a < RW; a++)
    for (int b = 0; b < RX; b++) acc[a][b] = _mm512_setzero_ps();
  const uint8_t* rows[RW];
  for (int a = 0; a < RW; a++) rows[a] = w + (size_t)(r + a) * wstride;
  const __m512i offset = _mm512_set1_epi8((char)0x80);
  const __m512i ones = _mm512_set1_epi8(1);
  for (int blk = b0; blk < b1; blk += 2) {
    const bool pair = blk + 1 < b1;  // an odd block count leaves a single block at the end
    __m512i xv[RX];
    __m512 xd[RX];
    [[maybe_unused]] __m512 xs[RX];
    for (int b = 0; b < RX; b++) {
      const int8_t* xq = x.qs + (size_t)(i0 + b) * x.k + blk * 32;
      const float* d = x.d + (size_t)(i0 + b) * nb + blk;
      const __m512i raw = pair ? _mm512_loadu_si512(xq) : _mm512_maskz_loadu_epi8(0xffffffffull, xq);
      xv[b] = _mm512_xor_si512(raw, offset);
      xd[b] = pair_scales_f32(d[0], pair ? d[1] : 0.0f);
      if constexpr (W::kMin) {
        // Block sums of x spread over the block's 8 lanes (the store sums all 16 lanes).
        const float* s = x.s16 + (size_t)(i0 + b) * 2 * nb + 2 * blk;
        xs[b] = pair_scales_f32(0.125f * (s[0] + s[1]), pair ? 0.125f * (s[2] + s[3]) : 0.0f);
      }
    }
    for (int a = 0; a < RW; a++) {
      const uint8_t* p0 = rows[a] + (size_t)blk * W::kBlockBytes;
      const uint8_t* p1 = p0 + W::kBlockBytes;
      const __m512i q = pair ? _mm512_inserti64x4(_mm512_castsi256_si512(W::quants(p0)), W::quants(p1), 1)
                             : _mm512_zextsi256_si512(W::quants(p0));
      const __m512 dw = pair_scales_f16(half_at(p0), pair ? half_at(p1) : 0);
      const __m512i seed = _mm512_sub_epi32(_mm512_setzero_si512(),
                                            _mm512_slli_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, q), 7));
      for (int b = 0; b < RX; b++) {
        const __m512 dot = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(seed, xv[b], q));
        acc[a][b] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dw, xd[b]), acc[a][b]);
      }
      if constexpr (W::kMin) {
        const __m512 mw = pair_scales_f16(half_at(p0 + 2), pair ? half_at(p1 + 2) : 0);
        for (int b = 0; b < RX; b++) acc[a][b] = _mm512_fmadd_ps(mw, xs[b], acc[a][b]);
      }
    }
  }
  store_tile<RW, RX>(acc, accumulate, y + (size_t)i0 * ldy + r, ldy);
}

template <typename W, int RW>
SVC_AVX512_INLINE void rows_quant(int n, const QuantActs& x, int b0, int b1, bool accumulate, const uint8_t* w,
                                  size_t wstride, int r, float* y, size_t ldy) {
  int i = 0;
  for (; i + 4 <= n; i += 4) tile_quant<W, RW, 4>(x, i, b0, b1, accumulate, w, wstride, r, y, ldy);
  switch (n - i) {
    case 3: tile_quant<W, RW, 3>(x, i, b0, b1, accumulate, w, wstride, r, y, ldy); break;
    case 2: tile_quant<W, RW, 2>(x, i, b0, b1, accumulate, w, wstride, r, y, ldy); break;
    case 1: tile_quant<W, RW, 1>(x, i, b0, b1, accumulate, w, wstride, r, y, ldy); break;
    default: break;
  }
}

template <typename W>
SVC_AVX512 void gemm_quant(int n, const QuantActs& x, const uint8_t* w, size_t wstride, int r0, int r1, float* y, size_t ldy) {
  const int nb = x.k / 32, step = kColBlock / 32;
  for (int b0 = 0; b0 < nb; b0 += step) {
    const int b1 = nb - b0 > step ? b0 + step : nb;
    int r = r0;
    for (; r + 4 <= r1; r += 4) rows_quant<W, 4>(n, x, b0, b1, b0 > 0, w, wstride, r, y, ldy);
    for (; r < r1; r++) rows_quant<W, 1>(n, x, b0, b1, b0 > 0, w, wstride, r, y, ldy);
  }
}

// ---- int8 GEMM for K-quants ----
// A super-block is four 64-element steps; each step's int32 lanes cover 4 elements, so lane l takes
// the scale of 16-element group 4 * step + l / 4 (one permute). Mins come off once per super-block
// as a 16-wide product with the activations' 16-element sums.

// The int32 dot of 64 quants with 64 activation bytes, 4 elements per lane. Signed quants (kq_signed)
// multiply |q| by x with q's sign, since vpdpbusd wants its first operand unsigned.
template <typename W>
SVC_AVX512_INLINE __m512i kq_dot(__m512i q, __m512i x) {
  if constexpr (kq_signed<W>) {
    const __m512i sx = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(q), _mm512_setzero_si512(), x);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(q), sx);
  }
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, x);
}

template <typename W, int RW, int RX>
SVC_AVX512_INLINE void tile_kquant(const QuantActs& x, int i0, int sb0, int sb1, bool accumulate, const uint8_t* w,
                                   size_t wstride, int r, float* y, size_t ldy) {
  const int k = x.k, nb = k / 32, ng = k / 16;
  __m512 acc[RW][RX];
  for (int a = 0; a < RW; a++)
    for (int b = 0; b < RX; b++) acc[a][b] = _mm512_setzero_ps();
  alignas(64) float ws[RW][16];
  alignas(64) float mn[RW][16];
  const __m512i quad = _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 2);
  for (int sb = sb0; sb < sb1; sb++) {
    const uint8_t* blk[RW];
    for (int a = 0; a < RW; a++) {
      blk[a] = w + (size_t)(r + a) * wstride + (size_t)sb * W::kBytes;
      W::scales(blk[a], ws[a], mn[a]);
    }
    for (int b = 0; b < RX; b++) {
      const __m512 xs = _mm512_loadu_ps(x.s16 + (size_t)(i0 + b) * ng + sb * 16);
      for (int a = 0; a < RW; a++) acc[a][b] = _mm512_fnmadd_ps(_mm512_load_ps(mn[a]), xs, acc[a][b]);
    }
    for (int c = 0; c < 4; c++) {
      __m512i xv[RX];
      __m512 dx[RX];
      for (int b = 0; b < RX; b++) {
        xv[b] = _mm512_loadu_si512(x.qs + (size_t)(i0 + b) * k + sb * QK_K + 64 * c);
        const float* d = x.d + (size_t)(i0 + b) * nb + sb * 8 + 2 * c;
        dx[b] = pair_scales_f32(d[0], d[1]);
      }
      const __m512i idx = _mm512_add_epi32(quad, _mm512_set1_epi32(4 * c));
      for (int a = 0; a < RW; a++) {
        const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(W::quants32(blk[a], 2 * c)), W::quants32(blk[a], 2 * c + 1), 1);
        const __m512 sv = _mm512_permutexvar_ps(idx, _mm512_load_ps(ws[a]));
        for (int b = 0; b < RX; b++) {
          const __m512 dot = _mm512_cvtepi32_ps(kq_dot<W>(q, xv[b]));
          acc[a][b] = _mm512_fmadd_ps(dot, _mm512_mul_ps(sv, dx[b]), acc[a][b]);
        }
      }
    }
  }
  store_tile<RW, RX>(acc, accumulate, y + (size_t)i0 * ldy + r, ldy);
}

template <typename W, int RW>
SVC_AVX512_INLINE void rows_kquant(int n, const QuantActs& x, int sb0, int sb1, bool accumulate, const uint8_t* w,
                                   size_t wstride, int r, float* y, size_t ldy) {
  int i = 0;
  for (; i + 3 <= n; i += 3) tile_kquant<W, RW, 3>(x, i, sb0, sb1, accumulate, w, wstride, r, y, ldy);
  if (n - i == 2) tile_kquant<W, RW, 2>(x, i, sb0, sb1, accumulate, w, wstride, r, y, ldy);
  if (n - i == 1) tile_kquant<W, RW, 1>(x, i, sb0, sb1, accumulate, w, wstride, r, y, ldy);
}

template <typename W>
SVC_AVX512 void gemm_kquant(int n, const QuantActs& x, const uint8_t* w, size_t wstride, int r0, int r1, float* y, size_t ldy) {
  const int nsb = x.k / QK_K, step = kColBlock / QK_K;
  for (int sb0 = 0; sb0 < nsb; sb0 += step) {
    const int sb1 = nsb - sb0 > step ? sb0 + step : nsb;
    int r = r0;
    for (; r + 4 <= r1; r += 4) rows_kquant<W, 4>(n, x, sb0, sb1, sb0 > 0, w, wstride, r, y, ldy);
    for (; r < r1; r++) rows_kquant<W, 1>(n, x, sb0, sb1, sb0 > 0, w, wstride, r, y, ldy);
  }
}

// ---- int8 GEMM on packed Q8_0x16 / Q4_0x16 weights (packed.h) ----
// Lane j of every vector is weight row j of a 16-row group, so a block needs no horizontal sums:
// per (group, activation row) the integer accumulator starts at the block's correction -z * sum(x),
// takes one vpdpbusd per four columns (weights unsigned in lanes, four activation bytes broadcast),
// and is then scaled into a float accumulator with one convert, one multiply and one fma. Every
// (row, activation row) output sums its blocks in order with the same instructions whatever the
// tile, so results are batch-invariant.

// Single-row tiles (decode) stream weights straight from DRAM; prefetching this far ahead in each
// group's stream keeps more misses in flight than the hardware prefetchers do alone (~6% on Q4_0).
// Into L2, not L1: L1 holds too few lines for every group's stream that far ahead (~20% on Q8_0).
constexpr int kPrefetch = 2048;

SVC_AVX512_INLINE __m512i bcast4(const int8_t* p) { int32_t v; std::memcpy(&v, p, 4); return _mm512_set1_epi32(v); }

struct PQ8 {
  static constexpr int kDT = kQ8_0x16;
  static constexpr int kQuantBytes = kQ8PackQuantBytes;
  // AMX B tiles (8 x 64 bytes per block) as signed bytes: the packed blocks with w + 128 -> w.
  static SVC_AVX512_INLINE void signed_tiles(const uint8_t* grp, int nb, int8_t* out) {
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int i = 0; i < nb * 8; i++)
      _mm512_store_si512(out + 64 * i, _mm512_xor_si512(_mm512_loadu_si512(grp + 64 * i), flip));
  }
  template <int RG, int RX>
  static SVC_AVX512_INLINE void dots(const uint8_t* const (&q)[RG], const int8_t* const (&xq)[RX], __m512i (&ia)[RG][RX]) {
    for (int c = 0; c < 8; c++) {
      __m512i wv[RG];
      for (int g = 0; g < RG; g++) wv[g] = _mm512_loadu_si512(q[g] + 64 * c);
      for (int b = 0; b < RX; b++) {
        const __m512i xv = bcast4(xq[b] + 4 * c);
        for (int g = 0; g < RG; g++) ia[g][b] = _mm512_dpbusd_epi32(ia[g][b], wv[g], xv);
      }
    }
  }
};

struct PQ4 {
  static constexpr int kDT = kQ4_0x16;
  static constexpr int kQuantBytes = kQ4PackQuantBytes;
  // AMX B tiles as signed bytes: line p of a block -> tile rows p (low nibbles) and p + 4 (high), q - 8.
  static SVC_AVX512_INLINE void signed_tiles(const uint8_t* grp, int nb, int8_t* out) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
    for (int b = 0; b < nb; b++)
      for (int p = 0; p < 4; p++) {
        const __m512i raw = _mm512_loadu_si512(grp + (size_t)b * kQuantBytes + 64 * p);
        _mm512_store_si512(out + (size_t)b * 512 + 64 * p, _mm512_sub_epi8(_mm512_and_si512(raw, m4), eight));
        _mm512_store_si512(out + (size_t)b * 512 + 64 * (p + 4),
                           _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(raw, 4), m4), eight));
      }
  }
  template <int RG, int RX>
  static SVC_AVX512_INLINE void dots(const uint8_t* const (&q)[RG], const int8_t* const (&xq)[RX], __m512i (&ia)[RG][RX]) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int p = 0; p < 4; p++) {
      __m512i lo[RG], hi[RG];
      for (int g = 0; g < RG; g++) {
        const __m512i raw = _mm512_loadu_si512(q[g] + 64 * p);
        lo[g] = _mm512_and_si512(raw, m4);
        hi[g] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
      }
      for (int b = 0; b < RX; b++) {
        const __m512i xl = bcast4(xq[b] + 4 * p), xh = bcast4(xq[b] + 16 + 4 * p);
        for (int g = 0; g < RG; g++) {
          ia[g][b] = _mm512_dpbusd_epi32(ia[g][b], lo[g], xl);
          ia[g][b] = _mm512_dpbusd_epi32(ia[g][b], hi[g], xh);
        }
      }
    }
  }
};

// RG groups (16 * RG weight rows from row r) x RX activation rows from i0, over all blocks.
// `valid` = weight rows left from r (the last group may be partial).
template <typename W, int RG, int RX>
SVC_AVX512_INLINE void tile_packed(const QuantActs& x, int i0, const uint8_t* grp, size_t gb, int r, int valid,
                                   float* y, size_t ldy) {
  const int nb = x.k / 32;
  __m512 acc[RG][RX];
  for (int g = 0; g < RG; g++)
    for (int b = 0; b < RX; b++) acc[g][b] = _mm512_setzero_ps();
  const uint8_t* base[RG];
  for (int g = 0; g < RG; g++) base[g] = grp + (size_t)g * gb;
  const uint8_t* scales = grp + (size_t)nb * W::kQuantBytes;
  for (int blk = 0; blk < nb; blk++) {
    const uint8_t* q[RG];
    for (int g = 0; g < RG; g++) q[g] = base[g] + (size_t)blk * W::kQuantBytes;
    const int8_t* xq[RX];
    __m512i ia[RG][RX];
    for (int b = 0; b < RX; b++) {
      xq[b] = x.qs + (size_t)(i0 + b) * x.k + blk * 32;
      const __m512i seed = _mm512_set1_epi32(x.corr[(size_t)(i0 + b) * nb + blk]);
      for (int g = 0; g < RG; g++) ia[g][b] = seed;
    }
    if (RX == 1)
      for (int g = 0; g < RG; g++)
        for (int l = 0; l < W::kQuantBytes; l += 64) _mm_prefetch((const char*)q[g] + kPrefetch + l, _MM_HINT_T1);
    W::template dots<RG, RX>(q, xq, ia);
    for (int g = 0; g < RG; g++) {
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(scales + (size_t)g * gb + (size_t)blk * kPackScaleBytes)));
      for (int b = 0; b < RX; b++) {
        const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(x.d[(size_t)(i0 + b) * nb + blk]));
        acc[g][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[g][b]), sc, acc[g][b]);
      }
    }
  }
  for (int g = 0; g < RG; g++) {
    const int left = valid - 16 * g;
    const __mmask16 m = left >= 16 ? (__mmask16)0xffff : tail16(left);
    for (int b = 0; b < RX; b++) _mm512_mask_storeu_ps(y + (size_t)(i0 + b) * ldy + r + 16 * g, m, acc[g][b]);
  }
}

template <typename W, int RG>
SVC_AVX512_INLINE void groups_packed(int n, const QuantActs& x, const uint8_t* grp, size_t gb, int r, int valid,
                                     float* y, size_t ldy) {
  int i = 0;
  for (; i + 4 <= n; i += 4) tile_packed<W, RG, 4>(x, i, grp, gb, r, valid, y, ldy);
  switch (n - i) {
    case 3: tile_packed<W, RG, 3>(x, i, grp, gb, r, valid, y, ldy); break;
    case 2: tile_packed<W, RG, 2>(x, i, grp, gb, r, valid, y, ldy); break;
    case 1: tile_packed<W, RG, 1>(x, i, grp, gb, r, valid, y, ldy); break;
    default: break;
  }
}

template <typename W>
SVC_AVX512 void gemm_packed(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows, float* y, size_t ldy,
                            uint8_t* /*scratch*/) {
  const size_t gb = group_bytes(W::kDT, x.k / 32);
  int g = g0;
  if (n == 1) {
    // Decode: four independent groups keep enough dot-product chains in flight.
    for (; g + 4 <= g1; g += 4) tile_packed<W, 4, 1>(x, 0, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
  }
  for (; g + 2 <= g1; g += 2) groups_packed<W, 2>(n, x, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
  for (; g < g1; g++) groups_packed<W, 1>(n, x, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
}

// ---- int8 GEMM on packed K-quants (Q4_Kx16, Q5_Kx16, Q6_Kx16; packed.h) ----
// The Q4_0x16 scheme per 32-column sub-block (lane j = weight row j, four activation bytes
// broadcast, one vpdpbusd per four columns), with the quants' high bits OR-ed in from their lines
// (one shift and one ternary-logic op per vector, shared by every activation row of the tile). The
// codes are unsigned, so no correction seeds the integer sums; the per-row scales and mins are
// widened from bytes once per (sub-block, group) and then cost each (group, activation row) one
// convert, one multiply and two fmas:
//   Q4_K / Q5_K: acc += dot * (d * sc * dx)  -  dmin * m * (dx * sum x)     (sum x from x.s16)
//   Q6_K, per 16 columns: acc += (dot * dx - 32 * dx * sum x) * (d * sc)
// Every output sums its sub-blocks in order with the same instructions whatever the tile, so results
// are batch-invariant.

// The bits above the nibble of vector v (0..3: low nibbles of line v, 4..7: high nibbles of line
// v - 4), moved to bit 4 (Q5_K) or bits 4-5 (Q6_K).
template <int DT, int V>
SVC_AVX512_INLINE __m512i kp_high(__m512i h0, __m512i h1) {
  if constexpr (DT == kQ5_Kx16) {
    __m512i s;
    if constexpr (V <= 4) s = _mm512_slli_epi16(h0, 4 - V);
    else s = _mm512_srli_epi16(h0, V - 4);
    return _mm512_and_si512(s, _mm512_set1_epi8(0x10));
  } else {
    const __m512i h = V < 4 ? h0 : h1;
    constexpr int sh = 2 * (V & 3);
    __m512i s;
    if constexpr (sh <= 4) s = _mm512_slli_epi16(h, 4 - sh);
    else s = _mm512_srli_epi16(h, sh - 4);
    return _mm512_and_si512(s, _mm512_set1_epi8(0x30));
  }
}

// (a & 0x0f) | hb in one instruction.
SVC_AVX512_INLINE __m512i kp_or_nibble(__m512i a, __m512i hb) {
  return _mm512_ternarylogic_epi32(a, _mm512_set1_epi8(0x0f), hb, 0xEA);
}

// Line p of one sub-block for RG groups x RX activation rows. NA = 2 (Q6_K): separate integer sums
// for columns 0..15 (low nibbles) and 16..31 (high nibbles), which have their own scales.
template <int DT, int P, int RG, int RX, int NA>
SVC_AVX512_INLINE void kp_line(const uint8_t* const (&q)[RG], const __m512i (&h0)[RG], const __m512i (&h1)[RG],
                               const int8_t* const (&xq)[RX], __m512i (&ia)[RG][RX][NA]) {
  __m512i lo[RG], hi[RG];
  for (int g = 0; g < RG; g++) {
    const __m512i raw = _mm512_loadu_si512(q[g] + 64 * P);
    if constexpr (DT == kQ4_Kx16) {
      lo[g] = _mm512_and_si512(raw, _mm512_set1_epi8(0x0f));
      hi[g] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), _mm512_set1_epi8(0x0f));
    } else {
      lo[g] = kp_or_nibble(raw, kp_high<DT, P>(h0[g], h1[g]));
      hi[g] = kp_or_nibble(_mm512_srli_epi16(raw, 4), kp_high<DT, 4 + P>(h0[g], h1[g]));
    }
  }
  for (int b = 0; b < RX; b++) {
    const __m512i xl = bcast4(xq[b] + 4 * P), xh = bcast4(xq[b] + 16 + 4 * P);
    for (int g = 0; g < RG; g++) {
      ia[g][b][0] = _mm512_dpbusd_epi32(ia[g][b][0], lo[g], xl);
      ia[g][b][NA - 1] = _mm512_dpbusd_epi32(ia[g][b][NA - 1], hi[g], xh);
    }
  }
}

SVC_AVX512_INLINE __m512 kp_u8(const uint8_t* p) { return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p))); }
SVC_AVX512_INLINE __m512 kp_i8(const uint8_t* p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)p))); }

// RG groups (16 * RG weight rows from row r, `valid` of them real) x RX activation rows from i0.
// Decode's software prefetch distance on the K-quants. Measured on Zen 4 (2 threads, weights far
// past L3; bench/matmul-op.ts): 4-6 KiB ahead beat a super-block ahead (2.4-3.4 KiB) by 10-20%,
// and 8 KiB fell back.
constexpr int kKPrefetch = 6144;

template <int DT, int RG, int RX>
SVC_AVX512_INLINE void tile_kpacked(const QuantActs& x, int i0, const uint8_t* grp, size_t gb, int r, int valid, float* y,
                                    size_t ldy) {
  constexpr bool q6 = DT == kQ6_Kx16;
  constexpr int NA = q6 ? 2 : 1, SB = kpack_sb_bytes(DT), HB = kpack_high_bytes(DT), SC = kpack_scales(DT);
  // Decode prefetches into L2, one chunk per sub-block, kKPrefetch bytes ahead in the group's
  // stream (past its end: the next group's, which decode reads next).
  constexpr int kPfChunk = (SB / 8 + 63) / 64 * 64;
  const int k = x.k, nb = k / 32, ng = k / 16, nsb = k / QK_K;
  __m512 acc[RG][RX];
  for (int g = 0; g < RG; g++)
    for (int b = 0; b < RX; b++) acc[g][b] = _mm512_setzero_ps();
  for (int sb = 0; sb < nsb; sb++) {
    const uint8_t* base[RG];
    __m512 dv[RG], mv[RG];
    for (int g = 0; g < RG; g++) {
      base[g] = grp + (size_t)g * gb + (size_t)sb * SB;
      dv[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(base[g] + SC + 256)));
      if constexpr (!q6) mv[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(base[g] + SC + 288)));
    }
    for (int s = 0; s < 8; s++) {
      const int blk = sb * 8 + s;
      const uint8_t* q[RG];
      __m512i h0[RG], h1[RG];
      for (int g = 0; g < RG; g++) {
        q[g] = base[g] + 256 * s;
        if constexpr (HB > 0) h0[g] = _mm512_loadu_si512(base[g] + 2048 + HB * s);
        else h0[g] = _mm512_setzero_si512();
        if constexpr (q6) h1[g] = _mm512_loadu_si512(base[g] + 2048 + HB * s + 64);
        else h1[g] = h0[g];
        if (RX == 1)
          for (int l = 0; l < kPfChunk; l += 64) _mm_prefetch((const char*)base[g] + kKPrefetch + s * kPfChunk + l, _MM_HINT_T1);
      }
      const int8_t* xq[RX];
      __m512i ia[RG][RX][NA];
      for (int b = 0; b < RX; b++) {
        xq[b] = x.qs + (size_t)(i0 + b) * k + blk * 32;
        for (int g = 0; g < RG; g++)
          for (int a = 0; a < NA; a++) ia[g][b][a] = _mm512_setzero_si512();
      }
      kp_line<DT, 0, RG, RX, NA>(q, h0, h1, xq, ia);
      kp_line<DT, 1, RG, RX, NA>(q, h0, h1, xq, ia);
      kp_line<DT, 2, RG, RX, NA>(q, h0, h1, xq, ia);
      kp_line<DT, 3, RG, RX, NA>(q, h0, h1, xq, ia);
      for (int g = 0; g < RG; g++) {
        if constexpr (q6) {
          const __m512 sl = _mm512_mul_ps(dv[g], kp_i8(base[g] + SC + 32 * s));
          const __m512 sh = _mm512_mul_ps(dv[g], kp_i8(base[g] + SC + 32 * s + 16));
          for (int b = 0; b < RX; b++) {
            const float* s16 = x.s16 + (size_t)(i0 + b) * ng + 2 * blk;
            const __m512 dx = _mm512_set1_ps(x.d[(size_t)(i0 + b) * nb + blk]);
            const __m512 lo = _mm512_fmsub_ps(_mm512_cvtepi32_ps(ia[g][b][0]), dx, _mm512_set1_ps(32.0f * s16[0]));
            acc[g][b] = _mm512_fmadd_ps(lo, sl, acc[g][b]);
            const __m512 hi = _mm512_fmsub_ps(_mm512_cvtepi32_ps(ia[g][b][NA - 1]), dx, _mm512_set1_ps(32.0f * s16[1]));
            acc[g][b] = _mm512_fmadd_ps(hi, sh, acc[g][b]);
          }
        } else {
          const __m512 dsc = _mm512_mul_ps(dv[g], kp_u8(base[g] + SC + 16 * s));
          const __m512 mn = _mm512_mul_ps(mv[g], kp_u8(base[g] + SC + 128 + 16 * s));
          for (int b = 0; b < RX; b++) {
            const float* s16 = x.s16 + (size_t)(i0 + b) * ng + 2 * blk;
            const __m512 sc = _mm512_mul_ps(dsc, _mm512_set1_ps(x.d[(size_t)(i0 + b) * nb + blk]));
            acc[g][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[g][b][0]), sc, acc[g][b]);
            acc[g][b] = _mm512_fnmadd_ps(mn, _mm512_set1_ps(s16[0] + s16[1]), acc[g][b]);
          }
        }
      }
    }
  }
  for (int g = 0; g < RG; g++) {
    const int left = valid - 16 * g;
    const __mmask16 m = left >= 16 ? (__mmask16)0xffff : tail16(left);
    for (int b = 0; b < RX; b++) _mm512_mask_storeu_ps(y + (size_t)(i0 + b) * ldy + r + 16 * g, m, acc[g][b]);
  }
}

template <int DT, int RG, int RXMAX>
SVC_AVX512_INLINE void groups_kpacked(int n, const QuantActs& x, const uint8_t* grp, size_t gb, int r, int valid, float* y,
                                      size_t ldy) {
  int i = 0;
  for (; i + RXMAX <= n; i += RXMAX) tile_kpacked<DT, RG, RXMAX>(x, i, grp, gb, r, valid, y, ldy);
  for (; i + 2 <= n; i += 2) tile_kpacked<DT, RG, 2>(x, i, grp, gb, r, valid, y, ldy);
  if (i < n) tile_kpacked<DT, RG, 1>(x, i, grp, gb, r, valid, y, ldy);
}

template <int DT>
SVC_AVX512 void gemm_kpacked(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows, float* y, size_t ldy,
                             uint8_t* /*scratch*/) {
  const size_t gb = group_bytes(DT, x.k / 32);
  int g = g0;
  if (n == 1) {
    // Decode: one group at a time, so each thread reads one sequential stream (groups lie back to
    // back). Tiles of four groups, four streams a thread, streamed 10-25% slower from DRAM on Zen 4;
    // the sub-blocks' independent integer sums keep enough dot products in flight without them.
    for (; g < g1; g++) tile_kpacked<DT, 1, 1>(x, 0, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
    return;
  }
  for (; g + 2 <= g1; g += 2) groups_kpacked<DT, 2, 4>(n, x, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
  for (; g < g1; g++) groups_kpacked<DT, 1, 4>(n, x, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
}

// ---- AMX-INT8 GEMM on packed weights (the "amx" path, 16 or more activation rows) ----
// One tile product per 32-column block: C[16 activation rows x 16 weight rows] = A (16 x 32
// activation bytes) . B (8 rows of 64 bytes: the packed block, K/4 x 16 rows x 4). A task first
// copies each weight group's blocks into scratch as signed bytes (Q8_0: w + 128 -> w; Q4_0: nibbles
// -> q - 8), so one tdpbssd gives the exact integer dot product the VNNI path reaches from its
// correction seed. Each C tile goes through memory (tiles have no path to vector registers) and is
// scaled into 16 float accumulators, one per activation row, with the same convert, multiply and
// fma as the VNNI path, in the same block order: a row comes out bit-identical whichever path, tile
// or batch computed it. Tile products run two blocks ahead of the scaling, in two alternating tile
// sets (tmm0-2, tmm3-5: C, A, B) and four C buffers, so the tile unit and the vector units overlap.

#define SVC_AMX __attribute__((target(SVC_AVX512_TARGET ",amx-tile,amx-int8")))
#define SVC_AMX_INLINE __attribute__((target(SVC_AVX512_TARGET ",amx-tile,amx-int8"), always_inline)) inline

struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// The tile intrinsics are asm statements that do not tell the compiler which memory they touch.
SVC_AMX_INLINE void compiler_barrier() { asm volatile("" ::: "memory"); }

// C (tile TC) = A (rows of 32 bytes, lda apart) . B (8 x 64 bytes), stored to c (16 x 64 bytes).
#define SVC_AMX_BLOCK(TC, TA, TB, a, lda, b, c) \
  do {                                         \
    _tile_zero(TC);                            \
    _tile_loadd(TA, a, lda);                   \
    _tile_loadd(TB, b, 64);                    \
    _tile_dpbssd(TC, TA, TB);                  \
    _tile_stored(TC, c, 64);                   \
  } while (0)

template <typename W>
SVC_AMX void gemm_packed_amx(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows, float* y, size_t ldy,
                             uint8_t* scratch) {
  const int n16 = n & ~15;
  if (n16 > 0) {
    const int k = x.k, nb = k / 32;
    const size_t gb = group_bytes(W::kDT, nb);
    int32_t* cbuf = reinterpret_cast<int32_t*>(scratch);  // four 16 x 16 int32 C tiles
    int8_t* bt = reinterpret_cast<int8_t*>(scratch + 4096);  // a group's B tiles, 512 bytes per block
    TileConfig cfg;
    std::memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    // C: 16 x 16 int32; A: 16 rows x 32 bytes; B: 8 rows x 64 bytes.
    static const uint8_t kRows[6] = {16, 16, 8, 16, 16, 8};
    static const uint16_t kColsb[6] = {64, 32, 64, 64, 32, 64};
    for (int t = 0; t < 6; t++) { cfg.rows[t] = kRows[t]; cfg.colsb[t] = kColsb[t]; }
    compiler_barrier();
    _tile_loadconfig(&cfg);
    for (int g = g0; g < g1; g++) {
      const uint8_t* grp = w + (size_t)g * gb;
      const uint8_t* scales = grp + (size_t)nb * W::kQuantBytes;
      W::signed_tiles(grp, nb, bt);
      compiler_barrier();
      const int valid = rows - 16 * g;
      const __mmask16 m = valid >= 16 ? (__mmask16)0xffff : tail16(valid);
      for (int i0 = 0; i0 < n16; i0 += 16) {
        const int8_t* a = x.qs + (size_t)i0 * k;
        const float* dx = x.d + (size_t)i0 * nb;
        __m512 acc[16];
        for (int r = 0; r < 16; r++) acc[r] = _mm512_setzero_ps();
        // While the first row tile runs, pull the next group in from memory (its copy into bt is
        // the only other time the task touches weight bytes).
        const char* next = i0 == 0 && g + 1 < g1 ? (const char*)(grp + gb) : nullptr;
        const size_t pf_step = (gb + 64 * (size_t)nb - 1) / (64 * (size_t)nb) * 64;
        SVC_AMX_BLOCK(0, 1, 2, a, k, bt, cbuf);
        if (nb > 1) SVC_AMX_BLOCK(3, 4, 5, a + 32, k, bt + 512, cbuf + 256);
        for (int blk = 0; blk < nb; blk++) {
          const int ahead = blk + 2;
          if (ahead < nb) {
            int32_t* c = cbuf + (ahead & 3) * 256;
            if (ahead & 1) SVC_AMX_BLOCK(3, 4, 5, a + 32 * ahead, k, bt + (size_t)ahead * 512, c);
            else SVC_AMX_BLOCK(0, 1, 2, a + 32 * ahead, k, bt + (size_t)ahead * 512, c);
          }
          if (next)
            for (size_t off = blk * pf_step; off < (blk + 1) * pf_step && off < gb; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
          compiler_barrier();
          const int32_t* c = cbuf + (blk & 3) * 256;
          const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(scales + (size_t)blk * kPackScaleBytes)));
          for (int r = 0; r < 16; r++) {
            const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(dx[(size_t)r * nb + blk]));
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * r)), sc, acc[r]);
          }
          compiler_barrier();
        }
        for (int r = 0; r < 16; r++) _mm512_mask_storeu_ps(y + (size_t)(i0 + r) * ldy + 16 * g, m, acc[r]);
      }
    }
    _tile_release();
  }
  if (n > n16) {
    const int nb = x.k / 32;
    const QuantActs rest{x.qs + (size_t)n16 * x.k, x.d + (size_t)n16 * nb, nullptr, x.corr + (size_t)n16 * nb, x.k};
    gemm_packed<W>(n - n16, rest, w, g0, g1, rows, y + (size_t)n16 * ldy, ldy, scratch);
  }
}

// ---- int8 GEMM on packed Q5_0 / Q5_1 / Q4_1 / IQ4_NL (packed.h) ----
// The Q4_0x16 scheme: lane j = weight row j, one vpdpbusd per four columns against four broadcast
// activation bytes, the zero-point correction seeding the integer sum (Q5_0: 16; IQ4_NL: 128, its
// nibbles shuffled to table values + 128, unsigned as vpdpbusd wants them). Q5's fifth bits are
// OR-ed in from their line as Q5_Kx16's; the types with a min add m * sum(x) per block from the
// activations' sums. Every output sums its blocks in order with the same instructions whatever the
// tile, so results are batch-invariant. No software prefetch: on Zen 4 (2 threads, weights well past
// L3) decode ran ~15% faster without Q4_0's, and no slower in cache.

template <int DT>
struct PB32 {
  static constexpr bool kHigh = pack_has_high(DT), kMin = pack_has_min(DT), kTable = DT == kIQ4_NLx16;
  static constexpr bool kCorr = DT == kQ5_0x16 || DT == kIQ4_NLx16;
  static constexpr int kQuantBytes = pack_quant_bytes(DT), kScaleBytes = pack_scale_bytes(DT);
};

// Line p of one block for RG groups x RX activation rows (h: the groups' fifth-bit lines).
template <int DT, int P, int RG, int RX>
SVC_AVX512_INLINE void pb_line(const uint8_t* const (&q)[RG], const __m512i (&h)[RG], const int8_t* const (&xq)[RX],
                               __m512i (&ia)[RG][RX]) {
  __m512i lo[RG], hi[RG];
  for (int g = 0; g < RG; g++) {
    const __m512i raw = _mm512_loadu_si512(q[g] + 64 * P);
    if constexpr (PB32<DT>::kHigh) {
      lo[g] = kp_or_nibble(raw, kp_high<kQ5_Kx16, P>(h[g], h[g]));
      hi[g] = kp_or_nibble(_mm512_srli_epi16(raw, 4), kp_high<kQ5_Kx16, 4 + P>(h[g], h[g]));
    } else {
      lo[g] = _mm512_and_si512(raw, _mm512_set1_epi8(0x0f));
      hi[g] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), _mm512_set1_epi8(0x0f));
    }
    if constexpr (PB32<DT>::kTable) {
      // kValuesIq4nl + 128 (adding 128 to a byte flips its top bit).
      const __m512i table = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_load_si128((const __m128i*)kValuesIq4nl)),
                                             _mm512_set1_epi8((char)0x80));
      lo[g] = _mm512_shuffle_epi8(table, lo[g]);
      hi[g] = _mm512_shuffle_epi8(table, hi[g]);
    }
  }
  for (int b = 0; b < RX; b++) {
    const __m512i xl = bcast4(xq[b] + 4 * P), xh = bcast4(xq[b] + 16 + 4 * P);
    for (int g = 0; g < RG; g++) {
      ia[g][b] = _mm512_dpbusd_epi32(ia[g][b], lo[g], xl);
      ia[g][b] = _mm512_dpbusd_epi32(ia[g][b], hi[g], xh);
    }
  }
}

// RG groups (16 * RG weight rows from row r, `valid` of them real) x RX activation rows from i0.
template <int DT, int RG, int RX>
SVC_AVX512_INLINE void tile_pb32(const QuantActs& x, int i0, const uint8_t* grp, size_t gb, int r, int valid, float* y,
                                 size_t ldy) {
  using W = PB32<DT>;
  const int nb = x.k / 32;
  __m512 acc[RG][RX];
  for (int g = 0; g < RG; g++)
    for (int b = 0; b < RX; b++) acc[g][b] = _mm512_setzero_ps();
  const uint8_t* base[RG];
  for (int g = 0; g < RG; g++) base[g] = grp + (size_t)g * gb;
  const uint8_t* scales = grp + (size_t)nb * W::kQuantBytes;
  for (int blk = 0; blk < nb; blk++) {
    const uint8_t* q[RG];
    __m512i h[RG];
    for (int g = 0; g < RG; g++) {
      q[g] = base[g] + (size_t)blk * W::kQuantBytes;
      if constexpr (W::kHigh) h[g] = _mm512_loadu_si512(q[g] + 256);
      else h[g] = _mm512_setzero_si512();
    }
    const int8_t* xq[RX];
    __m512i ia[RG][RX];
    for (int b = 0; b < RX; b++) {
      xq[b] = x.qs + (size_t)(i0 + b) * x.k + blk * 32;
      const __m512i seed = W::kCorr ? _mm512_set1_epi32(x.corr[(size_t)(i0 + b) * nb + blk]) : _mm512_setzero_si512();
      for (int g = 0; g < RG; g++) ia[g][b] = seed;
    }
    pb_line<DT, 0, RG, RX>(q, h, xq, ia);
    pb_line<DT, 1, RG, RX>(q, h, xq, ia);
    pb_line<DT, 2, RG, RX>(q, h, xq, ia);
    pb_line<DT, 3, RG, RX>(q, h, xq, ia);
    for (int g = 0; g < RG; g++) {
      const uint8_t* sp = scales + (size_t)g * gb + (size_t)blk * W::kScaleBytes;
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)sp));
      for (int b = 0; b < RX; b++) {
        const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(x.d[(size_t)(i0 + b) * nb + blk]));
        acc[g][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[g][b]), sc, acc[g][b]);
      }
    }
  }
  if constexpr (W::kMin) {
    // sum over blocks of m * sum(x), summed apart and added last (as llama.cpp's Q4_1 / Q5_1 dots
    // do); a second pass over the scales, which are in cache, spares the loop above the registers.
    __m512 am[RG][RX];
    for (int g = 0; g < RG; g++)
      for (int b = 0; b < RX; b++) am[g][b] = _mm512_setzero_ps();
    for (int blk = 0; blk < nb; blk++) {
      __m512 mw[RG];
      for (int g = 0; g < RG; g++)
        mw[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(scales + (size_t)g * gb + (size_t)blk * W::kScaleBytes + kPackScaleBytes)));
      for (int b = 0; b < RX; b++) {
        const float* s16 = x.s16 + (size_t)(i0 + b) * 2 * nb + 2 * blk;
        const __m512 sx = _mm512_set1_ps(s16[0] + s16[1]);
        for (int g = 0; g < RG; g++) am[g][b] = _mm512_fmadd_ps(mw[g], sx, am[g][b]);
      }
    }
    for (int g = 0; g < RG; g++)
      for (int b = 0; b < RX; b++) acc[g][b] = _mm512_add_ps(acc[g][b], am[g][b]);
  }
  for (int g = 0; g < RG; g++) {
    const int left = valid - 16 * g;
    const __mmask16 m = left >= 16 ? (__mmask16)0xffff : tail16(left);
    for (int b = 0; b < RX; b++) _mm512_mask_storeu_ps(y + (size_t)(i0 + b) * ldy + r + 16 * g, m, acc[g][b]);
  }
}

template <int DT, int RG>
SVC_AVX512_INLINE void groups_pb32(int n, const QuantActs& x, const uint8_t* grp, size_t gb, int r, int valid, float* y,
                                   size_t ldy) {
  int i = 0;
  for (; i + 4 <= n; i += 4) tile_pb32<DT, RG, 4>(x, i, grp, gb, r, valid, y, ldy);
  switch (n - i) {
    case 3: tile_pb32<DT, RG, 3>(x, i, grp, gb, r, valid, y, ldy); break;
    case 2: tile_pb32<DT, RG, 2>(x, i, grp, gb, r, valid, y, ldy); break;
    case 1: tile_pb32<DT, RG, 1>(x, i, grp, gb, r, valid, y, ldy); break;
    default: break;
  }
}

template <int DT>
SVC_AVX512 void gemm_pb32(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows, float* y, size_t ldy,
                          uint8_t* /*scratch*/) {
  const size_t gb = group_bytes(DT, x.k / 32);
  int g = g0;
  if (n == 1) {
    // Decode: four independent groups keep enough dot-product chains in flight.
    for (; g + 4 <= g1; g += 4) tile_pb32<DT, 4, 1>(x, 0, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
  }
  for (; g + 2 <= g1; g += 2) groups_pb32<DT, 2>(n, x, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
  for (; g < g1; g++) groups_pb32<DT, 1>(n, x, w + (size_t)g * gb, gb, 16 * g, rows - 16 * g, y, ldy);
}

SVC_AVX512 void quantize_row_q8(const float* x, int k, int8_t* qs, float* d, float* s16, int32_t* corr, int zero) {
  for (int b = 0; b < k / 32; b++) {
    const __m512 v0 = _mm512_loadu_ps(x + b * 32), v1 = _mm512_loadu_ps(x + b * 32 + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float db = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;  // as llama.cpp's quantize_row_q8_0
    d[b] = db;
    const __m512 idv = _mm512_set1_ps(id);
    // cvtps rounds ties to even, like nearbyint in the scalar path.
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, idv)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, idv));
    _mm_storeu_si128((__m128i*)(qs + b * 32), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128((__m128i*)(qs + b * 32 + 16), _mm512_cvtsepi32_epi8(q1));
    if (s16) {
      s16[2 * b] = db * (float)_mm512_reduce_add_epi32(q0);
      s16[2 * b + 1] = db * (float)_mm512_reduce_add_epi32(q1);
    }
    if (corr) corr[b] = -zero * _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
}

// ---- element-wise ----

// Two passes, as the AVX2 path's: the largest value (vmaxps keeps the running max when x is NaN),
// then the first index holding it. Four running maxima hide vmaxps' latency.
SVC_AVX512 int64_t argmax(const float* x, int64_t n) {
  __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
    m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
    m2 = _mm512_max_ps(_mm512_loadu_ps(x + i + 32), m2);
    m3 = _mm512_max_ps(_mm512_loadu_ps(x + i + 48), m3);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = tail16(n - i < 16 ? (int)(n - i) : 16);
    m0 = _mm512_mask_max_ps(m0, k, _mm512_maskz_loadu_ps(k, x + i), m0);
  }
  const float best = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
  if (!(best > -INFINITY)) return 0;
  const __m512 bv = _mm512_set1_ps(best);
  for (i = 0; i < n; i += 16) {
    const __mmask16 k = tail16(n - i < 16 ? (int)(n - i) : 16);
    const __mmask16 eq = _mm512_mask_cmp_ps_mask(k, _mm512_maskz_loadu_ps(k, x + i), bv, _CMP_EQ_OQ);
    if (eq) return i + __builtin_ctz((unsigned)eq);
  }
  return 0;
}

SVC_AVX512 double sum_squares(const float* x, int n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
    a0 = _mm512_fmadd_ps(v0, v0, a0);
    a1 = _mm512_fmadd_ps(v1, v1, a1);
  }
  for (; i < n; i += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(tail16(n - i < 16 ? n - i : 16), x + i);
    a0 = _mm512_fmadd_ps(v, v, a0);
  }
  return (double)_mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

SVC_AVX512 void scale_mul(const float* x, float s, const float* w, float* out, int n) {
  const __m512 sv = _mm512_set1_ps(s);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
    const __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sv), _mm512_maskz_loadu_ps(m, w + i));
    _mm512_mask_storeu_ps(out + i, m, v);
  }
}

SVC_AVX512 void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? (int)(n - i) : 16);
    const __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
    const __m512 s = _mm512_div_ps(gv, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), gv))));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, u + i)));
  }
}

SVC_AVX512 void add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? (int)(n - i) : 16);
    _mm512_mask_storeu_ps(out + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

// f32 lanes summed in double at the end (as sum_squares); the mean is subtracted before squaring.
SVC_AVX512 void layer_norm(const float* x, int n, double eps, const float* w, const float* b, float* out) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
  }
  for (; i < n; i += 16) a0 = _mm512_add_ps(a0, _mm512_maskz_loadu_ps(tail16(n - i < 16 ? n - i : 16), x + i));
  const float mean = (float)((double)_mm512_reduce_add_ps(_mm512_add_ps(a0, a1)) / n);
  const __m512 mv = _mm512_set1_ps(mean);
  a0 = _mm512_setzero_ps();
  a1 = _mm512_setzero_ps();
  for (i = 0; i + 32 <= n; i += 32) {
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), mv), d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), mv);
    a0 = _mm512_fmadd_ps(d0, d0, a0);
    a1 = _mm512_fmadd_ps(d1, d1, a1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i), mv);
    a0 = _mm512_fmadd_ps(d, d, a0);
  }
  const double ss = (double)_mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  const __m512 iv = _mm512_set1_ps((float)(1.0 / std::sqrt(ss / n + eps)));
  for (i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
    const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mv), iv);
    _mm512_mask_storeu_ps(out + i, m, _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(m, w + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

// erfc(z) for z >= 0 (Numerical Recipes' erfcc): relative error below 1.2e-7 everywhere, so the
// negative tail of gelu (0.5 * x * erfc(|x| / sqrt 2)) keeps its relative precision.
SVC_AVX512_INLINE __m512 erfc16(__m512 z) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), z, one));
  __m512 p = _mm512_set1_ps(0.17087277f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
  return _mm512_mul_ps(t, exp16(_mm512_fnmadd_ps(z, z, p)));
}

// gelu(x) = 0.5 x erfc(-x / sqrt 2): for x < 0 that is h = 0.5 x erfc(|x| / sqrt 2), for x >= 0 it is x - h.
SVC_AVX512_INLINE __m512 gelu_erf16(__m512 x) {
  const __m512 h = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), erfc16(_mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678f))));
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(neg, _mm512_sub_ps(x, h), h);
}

// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): no cancellation in either tail.
SVC_AVX512_INLINE __m512 gelu_tanh16(__m512 x) {
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 m2u = _mm512_mul_ps(x, _mm512_fmadd_ps(_mm512_set1_ps(-0.0713548162726f), x2, _mm512_set1_ps(-1.59576912161f)));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(m2u)));
}

SVC_AVX512_INLINE __m512 gelu_quick16(__m512 x) {
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(_mm512_mul_ps(_mm512_set1_ps(-1.702f), x))));
}

template <__m512 (*F)(__m512)>
SVC_AVX512_INLINE void map16(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? (int)(n - i) : 16);
    _mm512_mask_storeu_ps(out + i, m, F(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

SVC_AVX512 void gelu_erf(const float* x, float* out, int64_t n) { map16<gelu_erf16>(x, out, n); }
SVC_AVX512 void gelu_tanh(const float* x, float* out, int64_t n) { map16<gelu_tanh16>(x, out, n); }
SVC_AVX512 void gelu_quick(const float* x, float* out, int64_t n) { map16<gelu_quick16>(x, out, n); }

SVC_AVX512 void mul(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? (int)(n - i) : 16);
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

// tanh(y) as the AVX2 path's tanh8: (1 - e) / (1 + e), e = exp(-2|y|), for |y| >= 0.4; the odd Taylor
// series through y^13 below; the sign of y put back.
SVC_AVX512_INLINE __m512 tanh16(__m512 y) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 a = _mm512_abs_ps(y);
  const __m512 e = exp16(_mm512_mul_ps(a, _mm512_set1_ps(-2.0f)));
  const __m512 big = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
  const __m512 a2 = _mm512_mul_ps(a, a);
  __m512 p = _mm512_set1_ps(21844.0f / 6081075.0f);
  p = _mm512_fmadd_ps(p, a2, _mm512_set1_ps(-1382.0f / 155925.0f));
  p = _mm512_fmadd_ps(p, a2, _mm512_set1_ps(62.0f / 2835.0f));
  p = _mm512_fmadd_ps(p, a2, _mm512_set1_ps(-17.0f / 315.0f));
  p = _mm512_fmadd_ps(p, a2, _mm512_set1_ps(2.0f / 15.0f));
  p = _mm512_fmadd_ps(p, a2, _mm512_set1_ps(-1.0f / 3.0f));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(a, a2), p, a);
  const __m512 t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, _mm512_set1_ps(0.4f), _CMP_LT_OQ), big, small);
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(y), _mm512_set1_epi32(INT32_MIN));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
}

SVC_AVX512 void softcap(const float* x, float* out, int64_t n, float cap) {
  const __m512 c = _mm512_set1_ps(cap);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? (int)(n - i) : 16);
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(c, tanh16(_mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), c))));
  }
}

// ---- attention ----

SVC_AVX512 void qk(const float* q, const float* K, size_t kstride, int nk, int hd, float* s) {
  for (int t = 0; t < nk; t++) {
    const float* kt = K + (size_t)t * kstride;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int d = 0;
    for (; d + 32 <= hd; d += 32) {
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(kt + d), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + d + 16), _mm512_loadu_ps(kt + d + 16), a1);
    }
    for (; d < hd; d += 16) {
      const __mmask16 m = tail16(hd - d < 16 ? hd - d : 16);
      a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + d), _mm512_maskz_loadu_ps(m, kt + d), a0);
    }
    s[t] = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  }
}

SVC_AVX512 void pv(const float* p, const float* V, size_t vstride, int nk, int hd, float* o) {
  int d = 0;
  // 64 output columns stay in registers across all keys.
  for (; d + 64 <= hd; d += 64) {
    __m512 o0 = _mm512_loadu_ps(o + d), o1 = _mm512_loadu_ps(o + d + 16);
    __m512 o2 = _mm512_loadu_ps(o + d + 32), o3 = _mm512_loadu_ps(o + d + 48);
    for (int t = 0; t < nk; t++) {
      const float* vt = V + (size_t)t * vstride + d;
      const __m512 pt = _mm512_set1_ps(p[t]);
      o0 = _mm512_fmadd_ps(pt, _mm512_loadu_ps(vt), o0);
      o1 = _mm512_fmadd_ps(pt, _mm512_loadu_ps(vt + 16), o1);
      o2 = _mm512_fmadd_ps(pt, _mm512_loadu_ps(vt + 32), o2);
      o3 = _mm512_fmadd_ps(pt, _mm512_loadu_ps(vt + 48), o3);
    }
    _mm512_storeu_ps(o + d, o0);
    _mm512_storeu_ps(o + d + 16, o1);
    _mm512_storeu_ps(o + d + 32, o2);
    _mm512_storeu_ps(o + d + 48, o3);
  }
  for (; d < hd; d += 16) {
    const __mmask16 m = tail16(hd - d < 16 ? hd - d : 16);
    __m512 o0 = _mm512_maskz_loadu_ps(m, o + d);
    for (int t = 0; t < nk; t++)
      o0 = _mm512_fmadd_ps(_mm512_set1_ps(p[t]), _mm512_maskz_loadu_ps(m, V + (size_t)t * vstride + d), o0);
    _mm512_mask_storeu_ps(o + d, m, o0);
  }
}

// Lane i of the result = sum of the 16 lanes of v[i] (a transpose-and-add tree: 43 instructions for
// 16 dot products, against 16 separate horizontal sums).
SVC_AVX512 inline __m512 hsum16x16(const __m512* v) {
  __m512 x[8], y[4];
  for (int k = 0; k < 8; k++)  // per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3]
    x[k] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * k], v[2 * k + 1]), _mm512_unpackhi_ps(v[2 * k], v[2 * k + 1]));
  for (int k = 0; k < 4; k++) {  // per 128-bit lane: [sum a, sum b, sum c, sum d] of that lane's four
    const __m512d a = _mm512_castps_pd(x[2 * k]), b = _mm512_castps_pd(x[2 * k + 1]);
    y[k] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // Add the four 128-bit lanes of each y[k] and gather y[k]'s four sums into lane group k.
  const __m512 u0 = _mm512_add_ps(_mm512_shuffle_f32x4(y[0], y[1], 0x88), _mm512_shuffle_f32x4(y[0], y[1], 0xdd));
  const __m512 u1 = _mm512_add_ps(_mm512_shuffle_f32x4(y[2], y[3], 0x88), _mm512_shuffle_f32x4(y[2], y[3], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, 0x88), _mm512_shuffle_f32x4(u0, u1, 0xdd));
}

// The sum of v's lanes in hsum16x16's order (pairs 0+2 and 1+3 within each 128-bit lane, then those,
// then lanes (0+1) + (2+3)), so a score has the same bits whichever path of qk_tile_bf16 made it.
SVC_AVX512_INLINE float hsum16_tree(__m512 v) {
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4e));  // [0+2, 1+3, 2+0, 3+1] per 128-bit lane
  v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xb1));  // (0+2) + (1+3) in every lane of each
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xb1));  // lanes 0+1, 2+3
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4e));  // (0+1) + (2+3)
  return _mm512_cvtss_f32(v);
}

// One score with qk_tile's 4 x 4 path's bits: one accumulator over d, then hsum16_tree.
SVC_AVX512 float dot_row_f32(const float* q, const float* k, int hd) {
  __m512 acc = _mm512_setzero_ps();
  for (int d = 0; d < hd; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + d), _mm512_loadu_ps(k + d), acc);
  return hsum16_tree(acc);
}

// 4 queries x 4 keys per step: 16 accumulators over the head dimension, each Q and K vector loaded
// once per step and used four times, then one hsum16x16 for the 16 scores.
SVC_AVX512 void qk_tile(const float* Q, int nq, const float* K, size_t kstride, int nk, int hd, float* S, size_t sstride) {
  if (hd % 16 != 0) {
    for (int i = 0; i < nq; i++) qk(Q + (size_t)i * hd, K, kstride, nk, hd, S + (size_t)i * sstride);
    return;
  }
  int i = 0;
  for (; i + 4 <= nq; i += 4) {
    const float* q0 = Q + (size_t)i * hd;
    int t = 0;
    for (; t + 4 <= nk; t += 4) {
      __m512 acc[16];
      for (int a = 0; a < 16; a++) acc[a] = _mm512_setzero_ps();
      const float* k0 = K + (size_t)t * kstride;
      for (int d = 0; d < hd; d += 16) {
        __m512 kv[4];
        for (int b = 0; b < 4; b++) kv[b] = _mm512_loadu_ps(k0 + (size_t)b * kstride + d);
        for (int a = 0; a < 4; a++) {
          const __m512 qv = _mm512_loadu_ps(q0 + (size_t)a * hd + d);
          for (int b = 0; b < 4; b++) acc[a * 4 + b] = _mm512_fmadd_ps(qv, kv[b], acc[a * 4 + b]);
        }
      }
      alignas(64) float r[16];  // lane a * 4 + b: query i + a, key t + b
      _mm512_store_ps(r, hsum16x16(acc));
      for (int a = 0; a < 4; a++) std::memcpy(S + (size_t)(i + a) * sstride + t, r + 4 * a, 4 * sizeof(float));
    }
    for (int a = 0; a < 4; a++)
      for (int u = t; u < nk; u++) S[(size_t)(i + a) * sstride + u] = dot_row_f32(q0 + (size_t)a * hd, K + (size_t)u * kstride, hd);
  }
  for (; i < nq; i++)
    for (int u = 0; u < nk; u++) S[(size_t)i * sstride + u] = dot_row_f32(Q + (size_t)i * hd, K + (size_t)u * kstride, hd);
}

// ---- bf16 attention products (vdpbf16ps: two products per f32 lane and instruction) ----

#define SVC_AVX512_BF16 __attribute__((target(SVC_AVX512_TARGET ",avx512bf16")))

SVC_AVX512_BF16 inline __attribute__((always_inline)) __m512 dot_bf16(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
}

SVC_AVX512_BF16 float dot_row_bf16(const uint16_t* q, const uint16_t* k, int hd) {
  __m512 acc = _mm512_setzero_ps();
  for (int d = 0; d < hd; d += 32) acc = dot_bf16(acc, _mm512_loadu_si512(q + d), _mm512_loadu_si512(k + d));
  return hsum16_tree(acc);
}

// NQ consecutive queries of qk_tile_bf16 against every key, NQ x NK keys per step (NQ * NK = 16
// accumulators over the head dimension, each Q and K vector loaded once per step), then one hsum16x16
// for the 16 scores; keys past the last whole step one at a time with the same tree (dot_row_bf16).
// Each score's bits are the same whatever NQ and NK are.
template <int NQ, int NK>
SVC_AVX512_BF16 inline __attribute__((always_inline)) void qk_rows_bf16(const uint16_t* Q, const uint16_t* K,
                                                                        size_t kstride, int nk, int hd, float* S,
                                                                        size_t sstride) {
  static_assert(NQ * NK == 16, "one hsum16x16 per step");
  int t = 0;
  for (; t + NK <= nk; t += NK) {
    __m512 acc[16];
    for (int a = 0; a < 16; a++) acc[a] = _mm512_setzero_ps();
    const uint16_t* k0 = K + (size_t)t * kstride;
    for (int d = 0; d < hd; d += 32) {
      __m512i qv[NQ];
      for (int a = 0; a < NQ; a++) qv[a] = _mm512_loadu_si512(Q + (size_t)a * hd + d);
      for (int b = 0; b < NK; b++) {
        const __m512i kv = _mm512_loadu_si512(k0 + (size_t)b * kstride + d);
        for (int a = 0; a < NQ; a++) acc[a * NK + b] = dot_bf16(acc[a * NK + b], qv[a], kv);
      }
    }
    alignas(64) float r[16];  // lane a * NK + b: query a, key t + b
    _mm512_store_ps(r, hsum16x16(acc));
    for (int a = 0; a < NQ; a++) std::memcpy(S + (size_t)a * sstride + t, r + NK * a, NK * sizeof(float));
  }
  for (int a = 0; a < NQ; a++)
    for (int u = t; u < nk; u++) S[(size_t)a * sstride + u] = dot_row_bf16(Q + (size_t)a * hd, K + (size_t)u * kstride, hd);
}

// qk_tile with bf16 rows, 32 dimensions per instruction: 4 queries x 4 keys per step; then two
// remaining queries (decode with a GQA group of two) x 8 keys, so each key is loaded once for both
// (1 x 16 loaded every key twice and was bound by the loads); a last one x 16 keys.
SVC_AVX512_BF16 void qk_tile_bf16(const uint16_t* Q, int nq, const uint16_t* K, size_t kstride, int nk, int hd,
                                  float* S, size_t sstride) {
  int i = 0;
  for (; i + 4 <= nq; i += 4) qk_rows_bf16<4, 4>(Q + (size_t)i * hd, K, kstride, nk, hd, S + (size_t)i * sstride, sstride);
  for (; i + 2 <= nq; i += 2) qk_rows_bf16<2, 8>(Q + (size_t)i * hd, K, kstride, nk, hd, S + (size_t)i * sstride, sstride);
  for (; i < nq; i++) qk_rows_bf16<1, 16>(Q + (size_t)i * hd, K, kstride, nk, hd, S + (size_t)i * sstride, sstride);
}

// pv_tile with bf16 key pairs: 4 queries x 64 columns per pass, two keys per instruction.
SVC_AVX512_BF16 void pv_tile_bf16(const uint32_t* P, int nq, size_t pstride, const uint32_t* V, size_t vpstride, int npairs,
                                  int hd, float* O) {
  int i = 0;
  if (hd % 64 == 0)
    for (; i + 4 <= nq; i += 4)
      for (int d = 0; d < hd; d += 64) {
        __m512 o[16];
        for (int a = 0; a < 4; a++)
          for (int c = 0; c < 4; c++) o[a * 4 + c] = _mm512_loadu_ps(O + (size_t)(i + a) * hd + d + 16 * c);
        for (int p = 0; p < npairs; p++) {
          const uint32_t* vp = V + (size_t)p * vpstride + d;
          __m512i vv[4];
          for (int c = 0; c < 4; c++) vv[c] = _mm512_loadu_si512(vp + 16 * c);
          for (int a = 0; a < 4; a++) {
            const __m512i w = _mm512_set1_epi32((int)P[(size_t)(i + a) * pstride + p]);
            for (int c = 0; c < 4; c++) o[a * 4 + c] = dot_bf16(o[a * 4 + c], w, vv[c]);
          }
        }
        for (int a = 0; a < 4; a++)
          for (int c = 0; c < 4; c++) _mm512_storeu_ps(O + (size_t)(i + a) * hd + d + 16 * c, o[a * 4 + c]);
      }
  // The rest (decode: one or two queries per KV head), 64 columns at a time where they fit: four
  // independent vdpbf16ps chains instead of one, which waited on its latency. Each lane still sums
  // its pairs in order, so the bits are the same.
  for (; i < nq; i++) {
    float* Oi = O + (size_t)i * hd;
    const uint32_t* Pi = P + (size_t)i * pstride;
    int d = 0;
    for (; d + 64 <= hd; d += 64) {
      __m512 o[4];
      for (int c = 0; c < 4; c++) o[c] = _mm512_loadu_ps(Oi + d + 16 * c);
      for (int p = 0; p < npairs; p++) {
        const __m512i w = _mm512_set1_epi32((int)Pi[p]);
        const uint32_t* vp = V + (size_t)p * vpstride + d;
        for (int c = 0; c < 4; c++) o[c] = dot_bf16(o[c], w, _mm512_loadu_si512(vp + 16 * c));
      }
      for (int c = 0; c < 4; c++) _mm512_storeu_ps(Oi + d + 16 * c, o[c]);
    }
    for (; d < hd; d += 16) {
      __m512 acc = _mm512_loadu_ps(Oi + d);
      for (int p = 0; p < npairs; p++) acc = dot_bf16(acc, _mm512_set1_epi32((int)Pi[p]), _mm512_loadu_si512(V + (size_t)p * vpstride + d));
      _mm512_storeu_ps(Oi + d, acc);
    }
  }
}


SVC_AVX512_BF16 void bf16_pairs(const uint16_t* r0, const uint16_t* r1, int n, uint32_t* dst) {
  for (int d = 0; d < n; d += 16) {
    const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(r0 + d)));
    const __m512i hi = r1 ? _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(r1 + d))), 16)
                          : _mm512_setzero_si512();
    _mm512_storeu_si512(dst + d, _mm512_or_si512(lo, hi));
  }
}


// 32 codes per step in integer ops: a code with exponent field e > 0 is sign | (e + 112) << 7 | m << 4
// (its e4m3 value / 256), and the eight magnitudes with e == 0 (zero and the subnormals m · 2^-17
// after the / 256) come from a table.
SVC_AVX512_INLINE __m512i fp8x32_to_bf16(__m512i c) {
  const __m512i sub = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3860,
                                       0x3840, 0x3820, 0x3800, 0x37c0, 0x3780, 0x3700, 0);
  const __m512i mag = _mm512_and_si512(c, _mm512_set1_epi16(0x7f));
  __m512i v = _mm512_add_epi16(_mm512_slli_epi16(mag, 4), _mm512_set1_epi16(112 << 7));
  v = _mm512_mask_permutexvar_epi16(v, _mm512_cmplt_epu16_mask(mag, _mm512_set1_epi16(8)), mag, sub);
  return _mm512_or_si512(v, _mm512_slli_epi16(_mm512_and_si512(c, _mm512_set1_epi16(0x80)), 8));
}

#define SVC_AVX512_VBMI __attribute__((target(SVC_AVX512_TARGET ",avx512vbmi")))

// fp8_to_bf16 by table lookup, 64 codes per step (CPUs with AVX512_VBMI): the 128 magnitudes' bf16
// high and low bytes are two 128-byte tables (vpermi2b indexes 128 bytes with the code's low seven
// bits), the sign ORed into the high byte, and the bytes interleaved into 16-bit lanes. The unpacks
// pair bytes within 128-bit lanes, so the codes are first permuted to come out in order. The tables
// hold fp8x32_to_bf16's values, so both give the same bits (test/unit/native-ops.test.ts).
// The 128 magnitudes' bf16 high and low bytes (fp8x32_to_bf16's arithmetic, subnormals from its
// table), and the byte orders that make the unpacks' 128-bit-lane pairing come out in order: `order`
// for one row of codes, `pair_order` for two rows interleaved (vpermt2b indexes both at once).
struct Fp8Tables {
  alignas(64) uint8_t hi[128];
  alignas(64) uint8_t lo[128];
  alignas(64) uint8_t order[64];
  alignas(64) uint8_t pair_order[64];
  Fp8Tables() {
    static const uint16_t sub[8] = {0, 0x3700, 0x3780, 0x37c0, 0x3800, 0x3820, 0x3840, 0x3860};
    for (int c = 0; c < 128; c++) {
      const uint16_t v = c < 8 ? sub[c] : (uint16_t)((c << 4) + (112 << 7));
      hi[c] = (uint8_t)(v >> 8);
      lo[c] = (uint8_t)v;
    }
    // Byte 16 l + j of the permuted codes (lane l): code 8 l + j for j < 8, code 32 + 8 l + j - 8 above.
    for (int l = 0; l < 4; l++)
      for (int j = 0; j < 16; j++) order[16 * l + j] = (uint8_t)(j < 8 ? 8 * l + j : 32 + 8 * l + j - 8);
    // Interleaved code e is row e % 2's code e / 2: byte e / 2 of the first operand or (bit 6) the second.
    for (int k = 0; k < 64; k++) pair_order[k] = (uint8_t)(order[k] / 2 + (order[k] % 2 ? 64 : 0));
  }
};
const Fp8Tables kFp8Tables;

// bf16 of 64 codes in the order `c` was permuted into: two vectors of 32 16-bit lanes.
SVC_AVX512_VBMI inline __attribute__((always_inline)) void fp8x64_lookup(__m512i c, __m512i* a, __m512i* b) {
  const Fp8Tables& t = kFp8Tables;
  const __m512i hi0 = _mm512_load_si512(t.hi), hi1 = _mm512_load_si512(t.hi + 64);
  const __m512i lo0 = _mm512_load_si512(t.lo), lo1 = _mm512_load_si512(t.lo + 64);
  // hi | (c & 0x80)
  const __m512i h = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(hi0, c, hi1), c, _mm512_set1_epi8((char)0x80), 0xF8);
  const __m512i l = _mm512_permutex2var_epi8(lo0, c, lo1);
  *a = _mm512_unpacklo_epi8(l, h);
  *b = _mm512_unpackhi_epi8(l, h);
}

SVC_AVX512_VBMI void fp8_to_bf16_vbmi(const uint8_t* src, uint16_t* dst, int64_t n) {
  const __m512i order = _mm512_load_si512(kFp8Tables.order);
  for (int64_t i = 0; i < n; i += 64) {
    const int64_t left = n - i;
    const __mmask64 m = left >= 64 ? ~__mmask64(0) : (__mmask64(1) << left) - 1;
    const __m512i raw = left >= 64 ? _mm512_loadu_si512(src + i) : _mm512_maskz_loadu_epi8(m, src + i);
    __m512i a, b;
    fp8x64_lookup(_mm512_permutexvar_epi8(order, raw), &a, &b);
    if (left >= 64) {
      _mm512_storeu_si512(dst + i, a);
      _mm512_storeu_si512(dst + i + 32, b);
    } else {
      const int64_t nb = left > 32 ? left - 32 : 0;
      _mm512_mask_storeu_epi16(dst + i, (__mmask32)(left >= 32 ? ~0u : (1u << left) - 1u), a);
      if (nb > 0) _mm512_mask_storeu_epi16(dst + i + 32, (__mmask32)((1u << nb) - 1u), b);
    }
  }
}

// fp8_pairs with the tables: 32 codes of each row per step, interleaved and put in order by one vpermt2b.
SVC_AVX512_VBMI void fp8_pairs_vbmi(const uint8_t* r0, const uint8_t* r1, int n, uint32_t* dst) {
  const __m512i idx = _mm512_load_si512(kFp8Tables.pair_order);
  for (int i = 0; i < n; i += 32) {
    const __m512i a0 = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(r0 + i)));
    const __m512i a1 = r1 ? _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(r1 + i))) : _mm512_setzero_si512();
    __m512i a, b;
    fp8x64_lookup(_mm512_permutex2var_epi8(a0, idx, a1), &a, &b);
    _mm512_storeu_si512(dst + i, a);
    _mm512_storeu_si512(dst + i + 16, b);
  }
}

// The table-lookup version where the CPU has it (chosen once at load).
const bool kFp8ByTable = cpu_features().avx512vbmi;

SVC_AVX512 void fp8_to_bf16(const uint8_t* src, uint16_t* dst, int64_t n) {
  if (kFp8ByTable) {
    fp8_to_bf16_vbmi(src, dst, n);
    return;
  }
  int64_t i = 0;
  // Whole vectors unmasked: masked stores are slow on some cores (Zen 4).
  for (; i + 32 <= n; i += 32)
    _mm512_storeu_si512(dst + i, fp8x32_to_bf16(_mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i*)(src + i)))));
  if (i < n) {
    const __mmask32 m = (__mmask32)((1u << (n - i)) - 1u);
    _mm512_mask_storeu_epi16(dst + i, m, fp8x32_to_bf16(_mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, src + i))));
  }
}

// dst[d] = bf16(r0[d]) | bf16(r1[d]) << 16 for fp8 codes (r1 null: zeros), n % 32 == 0. Without
// VBMI: bf16_pairs of the two rows' fp8_to_bf16, 256 columns at a time.
SVC_AVX512_BF16 void fp8_pairs(const uint8_t* r0, const uint8_t* r1, int n, uint32_t* dst) {
  if (kFp8ByTable) {
    fp8_pairs_vbmi(r0, r1, n, dst);
    return;
  }
  alignas(64) uint16_t a[256], b[256];
  for (int d = 0; d < n; d += 256) {
    const int m = std::min(256, n - d);
    fp8_to_bf16(r0 + d, a, m);
    if (r1) fp8_to_bf16(r1 + d, b, m);
    bf16_pairs(a, r1 ? b : nullptr, m, dst + d);
  }
}

// Four independent XOR chains of full-line loads: nothing but the loads on the critical path.
SVC_AVX512 uint64_t read_sum(const uint8_t* p, size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < bytes; i += 256) {
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(p + i));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(p + i + 192));
  }
  const __m512i a = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, a);
  uint64_t r = 0;
  for (uint64_t v : lanes) r ^= v;
  return r;
}

SVC_AVX512_BF16 void f32_to_bf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? (int)(n - i) : 16);
    _mm256_mask_storeu_epi16(dst + i, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i)));
  }
}

// 4 queries x 64 output columns per pass: each V vector is loaded once and used by four queries.
SVC_AVX512 void pv_tile(const float* P, int nq, size_t pstride, const float* V, size_t vstride, int nk, int hd, float* O) {
  int i = 0;
  if (hd % 64 == 0)
    for (; i + 4 <= nq; i += 4)
      for (int d = 0; d < hd; d += 64) {
        __m512 o[16];
        for (int a = 0; a < 4; a++)
          for (int c = 0; c < 4; c++) o[a * 4 + c] = _mm512_loadu_ps(O + (size_t)(i + a) * hd + d + 16 * c);
        for (int t = 0; t < nk; t++) {
          const float* vt = V + (size_t)t * vstride + d;
          __m512 vv[4];
          for (int c = 0; c < 4; c++) vv[c] = _mm512_loadu_ps(vt + 16 * c);
          for (int a = 0; a < 4; a++) {
            const __m512 p = _mm512_set1_ps(P[(size_t)(i + a) * pstride + t]);
            for (int c = 0; c < 4; c++) o[a * 4 + c] = _mm512_fmadd_ps(p, vv[c], o[a * 4 + c]);
          }
        }
        for (int a = 0; a < 4; a++)
          for (int c = 0; c < 4; c++) _mm512_storeu_ps(O + (size_t)(i + a) * hd + d + 16 * c, o[a * 4 + c]);
      }
  for (; i < nq; i++) pv(P + (size_t)i * pstride, V, vstride, nk, hd, O + (size_t)i * hd);
}


SVC_AVX512 float exp_sum(float* s, int n, float m) {
  const __m512 mv = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  for (int i = 0; i < n; i += 16) {
    const __mmask16 mk = tail16(n - i < 16 ? n - i : 16);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, s + i), mv));
    _mm512_mask_storeu_ps(s + i, mk, e);
    acc = _mm512_mask_add_ps(acc, mk, acc, e);
  }
  return _mm512_reduce_add_ps(acc);
}

SVC_AVX512 void scale(float* x, int n, float a) {
  const __m512 av = _mm512_set1_ps(a);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), av));
  }
}

SVC_AVX512 void kv_decode_bf16(const uint8_t* bytes, float* dst, int n, double) {
  const uint16_t* src = reinterpret_cast<const uint16_t*>(bytes);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
    _mm512_mask_storeu_ps(dst + i, m, WBF16::widen(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}

SVC_AVX512 void kv_decode_fp8(const uint8_t* src, float* dst, int n, double scale) {
  const float mult = fp8_decode_mult(scale);
  const __m512 mv = _mm512_set1_ps(mult);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
    const __m256i c = _mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, src + i));
    const __m256i h = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi16(c, 8), _mm256_set1_epi16((short)0x8000)),
                                      _mm256_and_si256(_mm256_slli_epi16(c, 7), _mm256_set1_epi16(0x3f80)));
    _mm512_mask_storeu_ps(dst + i, m, _mm512_mul_ps(_mm512_cvtph_ps(h), mv));
  }
}

// The scalar f32_to_fp8 (kv_codec.h) sixteen lanes at a time: same saturation, subnormal rounding
// (cvtps rounds ties to even like nearbyint) and mantissa rounding; NaN -> 0.
SVC_AVX512 void kv_encode_fp8(const float* src, uint8_t* dst, int n, double scale) {
  const __m512d sv = _mm512_set1_pd(scale);
  for (int i = 0; i < n; i += 16) {
    const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
    __m512 v = _mm512_maskz_loadu_ps(m, src + i);
    if (scale != 1.0) {
      // (float)((double)x / scale), as the scalar path and the reference compute it.
      const __m256 lo = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), sv));
      const __m256 hi = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), sv));
      v = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
    }
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i abits = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
    const __m512 a = _mm512_castsi512_ps(abits);
    const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(bits, 24), _mm512_set1_epi32(0x80));
    const __m512i sub = _mm512_cvtps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(512.0f)));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(abits, 20), _mm512_set1_epi32(1));
    __m512i norm = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(abits, _mm512_set1_epi32(0x7ffff)), odd), 20);
    norm = _mm512_min_epi32(_mm512_sub_epi32(norm, _mm512_set1_epi32(120 << 3)), _mm512_set1_epi32(kFp8MaxCode));
    __m512i code = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(a, _mm512_set1_ps(0.015625f), _CMP_LT_OQ), norm, sub);
    code = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(a, _mm512_set1_ps(448.0f), _CMP_GE_OQ), code, _mm512_set1_epi32(kFp8MaxCode));
    code = _mm512_or_si512(code, sign);
    code = _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), code);  // NaN -> 0
    _mm_mask_storeu_epi8(dst + i, m, _mm512_cvtepi32_epi8(code));
  }
}

// NVFP4, one 16-value group per step: its 8 nibble bytes spread over the lanes by a variable shift
// (low dword to lanes 0-7, high to 8-15), then one vpermps into the 16 signed E2M1 values.
// The group multipliers (E4M3 scale x layer scale) are decoded 16 at a time, as fp8 rows are.
SVC_AVX512 void kv_decode_nvfp4(const uint8_t* src, float* dst, int n, double scale) {
  const uint8_t* scales = src + (n + 1) / 2;
  const __m512 tab = _mm512_loadu_ps(kE2m1);
  const __m512i shifts = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
  const int groups = (n + kNvfp4Group - 1) / kNvfp4Group;
  alignas(64) float ds[16];
  for (int g = 0, lo = 0; lo < n; g++, lo += kNvfp4Group) {
    if (g % 16 == 0) kv_decode_fp8(scales + g, ds, groups - g < 16 ? groups - g : 16, scale);
    const int cnt = n - lo < kNvfp4Group ? n - lo : kNvfp4Group;
    uint64_t w;
    if (cnt == kNvfp4Group) std::memcpy(&w, src + lo / 2, 8);
    else w = load_le_bytes(src + lo / 2, (cnt + 1) / 2);
    const __m512i v = _mm512_mask_set1_epi32(_mm512_set1_epi32((int)(uint32_t)w), 0xff00, (int)(uint32_t)(w >> 32));
    const __m512i idx = _mm512_and_si512(_mm512_srlv_epi32(v, shifts), _mm512_set1_epi32(15));
    _mm512_mask_storeu_ps(dst + lo, tail16(cnt), _mm512_mul_ps(_mm512_permutexvar_ps(idx, tab), _mm512_set1_ps(ds[g % 16])));
  }
}

// Turbo rows into the rotated domain (centroid x row scale), 16 indices (2B bytes) per step: spread
// over the lanes by a variable shift, then one vpermps into the (<= 16) centroids. turbo8 looks its
// 256 centroids up as eight 32-entry vpermt2ps tables chosen by the index's bits 5-7 (about twice
// as fast as a gather).
template <int B>
SVC_AVX512 void kv_decode_turbo(const uint8_t* src, float* dst, int n, double) {
  const TurboCodebook<B>& cb = turbo_book<B>();
  const __m512 av = _mm512_set1_ps(turbo_row_scale(src));
  const uint8_t* q = src + 2;
  if constexpr (B == 8) {
    __m512 t[16];
    for (int j = 0; j < 16; j++) t[j] = _mm512_loadu_ps(cb.c + 16 * j);
    const __m512i b5 = _mm512_set1_epi32(32), b6 = _mm512_set1_epi32(64), b7 = _mm512_set1_epi32(128);
    for (int i = 0; i < n; i += 16) {
      const __mmask16 m = tail16(n - i < 16 ? n - i : 16);
      const __m512i idx = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, q + i));
      const __mmask16 m5 = _mm512_test_epi32_mask(idx, b5), m6 = _mm512_test_epi32_mask(idx, b6),
                      m7 = _mm512_test_epi32_mask(idx, b7);
      const __m512 a0 = _mm512_mask_blend_ps(m5, _mm512_permutex2var_ps(t[0], idx, t[1]), _mm512_permutex2var_ps(t[2], idx, t[3]));
      const __m512 a1 = _mm512_mask_blend_ps(m5, _mm512_permutex2var_ps(t[4], idx, t[5]), _mm512_permutex2var_ps(t[6], idx, t[7]));
      const __m512 a2 = _mm512_mask_blend_ps(m5, _mm512_permutex2var_ps(t[8], idx, t[9]), _mm512_permutex2var_ps(t[10], idx, t[11]));
      const __m512 a3 = _mm512_mask_blend_ps(m5, _mm512_permutex2var_ps(t[12], idx, t[13]), _mm512_permutex2var_ps(t[14], idx, t[15]));
      const __m512 v = _mm512_mask_blend_ps(m7, _mm512_mask_blend_ps(m6, a0, a1), _mm512_mask_blend_ps(m6, a2, a3));
      _mm512_mask_storeu_ps(dst + i, m, _mm512_mul_ps(v, av));
    }
  } else {
    const __m512 tab = _mm512_loadu_ps(cb.c);
    constexpr int kHalf = B == 2 ? 0 : 8;  // lanes 8-15 start at bit 8B of the group (turbo2: one dword)
    const __m512i shifts = _mm512_setr_epi32(0, B, 2 * B, 3 * B, 4 * B, 5 * B, 6 * B, 7 * B, (8 - kHalf) * B, (9 - kHalf) * B,
                                             (10 - kHalf) * B, (11 - kHalf) * B, (12 - kHalf) * B, (13 - kHalf) * B,
                                             (14 - kHalf) * B, (15 - kHalf) * B);
    const __m512i mask = _mm512_set1_epi32((1 << B) - 1);
    for (int i = 0; i < n; i += 16) {
      const int cnt = n - i < 16 ? n - i : 16;
      const uint8_t* p = q + i / 8 * B;
      const uint64_t w = cnt == 16 ? load_le<2 * B>(p) : load_le_bytes(p, (cnt * B + 7) / 8);
      __m512i v = _mm512_set1_epi32((int)(uint32_t)w);
      if constexpr (B != 2) v = _mm512_mask_set1_epi32(v, 0xff00, (int)(uint32_t)(w >> (8 * B)));
      const __m512i idx = _mm512_and_si512(_mm512_srlv_epi32(v, shifts), mask);
      _mm512_mask_storeu_ps(dst + i, tail16(cnt), _mm512_mul_ps(_mm512_permutexvar_ps(idx, tab), av));
    }
  }
}

// The AVX-512 table, with the packed Q8_0 / Q4_0 slots given (the AMX path swaps only those).
constexpr Kernels avx512_kernels(const char* name, GemmPackedFn q8_0x16, GemmPackedFn q4_0x16) {
  return Kernels{
      .name = name,
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
      .gemm_q8_0x16 = q8_0x16,
      .gemm_q4_0x16 = q4_0x16,
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
      .qk_tile_bf16 = qk_tile_bf16,
      .pv_tile_bf16 = pv_tile_bf16,
      .bf16_pairs = bf16_pairs,
      .fp8_to_bf16 = fp8_to_bf16,
      .fp8_pairs = fp8_pairs,
      .f32_to_bf16 = f32_to_bf16,
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
}

}  // namespace

const Kernels kAvx512Kernels = avx512_kernels("avx512", gemm_packed<PQ8>, gemm_packed<PQ4>);
const Kernels kAmxKernels = avx512_kernels("amx", gemm_packed_amx<PQ8>, gemm_packed_amx<PQ4>);

}  // namespace svc
#endif  // __x86_64__
