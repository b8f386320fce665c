// The other 256-element super-blocks (Q3_K, IQ4_XS, IQ3_XXS, IQ3_S, TQ2_0) unpacked for the K-quant
// int8 GEMM (kquant_unpack.h has the contract: per-16 float scales ws16 and mins mn16, 32 quants at a
// time in element order). Signed quants become unsigned with an offset folded into mn16: Q3_K q + 4,
// the IQ3 grid values with their signs + 64 (IQ3_XXS, |v| <= 62) or + 16 (IQ3_S, |v| <= 15), TQ2_0's
// stored q in {0, 1, 2} with mn16 = d. IQ4_XS stays signed (kSigned): its table values plus 128
// would overflow maddubs' int16 pair sums, so the kernels multiply |q| by x carrying q's sign.
//
// Included by the SIMD files right after kquant_unpack.h (same SVC_KQ_INLINE).
#pragma once
#include <immintrin.h>

#include <cstring>

#include "iq_tables.h"
#include "kquant_unpack.h"
#include "quant.h"

namespace svc {
namespace {

// A W whose quants32 are signed bytes with no offset (mn16 is zero).
template <typename W>
inline constexpr bool kq_signed = requires { requires W::kSigned; };

inline uint32_t kq_u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }

// 32 grid magnitudes (8 u32 entries, in element order) with the signs of the 32 bits of `signs`
// (bit e: element e negative), plus `offset`.
SVC_KQ_INLINE __m256i kq_signed_grid(__m256i mag, uint32_t signs, int offset) {
  const __m256i bytes = _mm256_shuffle_epi8(
      _mm256_set1_epi32((int)signs),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
  const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
  const __m256i v = _mm256_sub_epi8(_mm256_xor_si256(mag, neg), neg);  // -mag where neg
  return _mm256_add_epi8(v, _mm256_set1_epi8((char)offset));
}

// Q3_K: 16 signed 6-bit scales - 32; q = 2 low bits (four planes per 32-byte half, as Q2_K) + 4 * the
// hmask bit, stored value q - 4 (so the unsigned quant is q with mn16 = 4 * ws16).
struct KQ3 {
  static constexpr size_t kBytes = sizeof(block_q3_K);
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_q3_K* b = reinterpret_cast<const block_q3_K*>(p);
    const float d = kq_half(&b->d);
    for (int g = 0; g < 16; g++) {
      const int lo = (b->scales[g & 7] >> (4 * (g >> 3))) & 0xf;
      const int hi = (b->scales[8 + (g & 3)] >> (2 * (g >> 2))) & 3;
      ws16[g] = d * (float)((lo | (hi << 4)) - 32);
      mn16[g] = 4.0f * ws16[g];
    }
  }
  // Elements 32j..: bits 2(j%4) of the 32 bytes of half j/4, high bit j of hmask.
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_q3_K* b = reinterpret_cast<const block_q3_K*>(p);
    const __m256i lo = kq_bits(kq_load32(b->qs + 32 * (j / 4)), 2 * (j % 4), 3);
    const __m256i hi = _mm256_slli_epi16(kq_bits(kq_load32(b->hmask), j, 1), 2);
    return _mm256_or_si256(lo, hi);
  }
};

// IQ4_XS: 8 sub-blocks of 32 with 6-bit scales - 32; values kvalues_iq4nl[nibble], signed.
struct KIQ4XS {
  static constexpr size_t kBytes = sizeof(block_iq4_xs);
  static constexpr bool kSigned = true;
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_iq4_xs* b = reinterpret_cast<const block_iq4_xs*>(p);
    const float d = kq_half(&b->d);
    uint16_t sh;
    std::memcpy(&sh, &b->scales_h, 2);
    for (int ib = 0; ib < 8; ib++) {
      const int ls = ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((sh >> (2 * ib)) & 3) << 4);
      ws16[2 * ib] = ws16[2 * ib + 1] = d * (float)(ls - 32);
      mn16[2 * ib] = mn16[2 * ib + 1] = 0.0f;
    }
  }
  // Sub-block j: 16 bytes, low nibbles are elements 0..15 and high nibbles 16..31, through the table.
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_iq4_xs* b = reinterpret_cast<const block_iq4_xs*>(p);
    const __m128i raw = _mm_loadu_si128((const __m128i*)(b->qs + 16 * j));
    const __m128i m4 = _mm_set1_epi8(0x0f);
    const __m256i idx = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), _mm_and_si128(raw, m4));
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)kValuesIq4nl));
    return _mm256_shuffle_epi8(table, idx);
  }
};

// IQ3_XXS: per sub-block of 32, 8 grid indices and a u32 of scale (top 4 bits) and four 7-bit sign
// patterns; db = d * (0.5 + s) * 0.5; values +- grid magnitude (<= 62) stored + 64.
struct KIQ3XXS {
  static constexpr size_t kBytes = sizeof(block_iq3_xxs);
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_iq3_xxs* b = reinterpret_cast<const block_iq3_xxs*>(p);
    const float d = kq_half(&b->d);
    for (int ib = 0; ib < 8; ib++) {
      const uint32_t aux = kq_u32(b->qs + QK_K / 4 + 4 * ib);
      ws16[2 * ib] = ws16[2 * ib + 1] = d * (0.5f + (float)(aux >> 28)) * 0.5f;
      mn16[2 * ib] = mn16[2 * ib + 1] = 64.0f * ws16[2 * ib];
    }
  }
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_iq3_xxs* b = reinterpret_cast<const block_iq3_xxs*>(p);
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b->qs + 8 * j)));
    const __m256i mag = _mm256_i32gather_epi32((const int*)kIq3xxsGrid, idx, 4);
    const uint32_t aux = kq_u32(b->qs + QK_K / 4 + 4 * j);
    const uint32_t signs = (uint32_t)kSignsIq2xs.v[aux & 127] | ((uint32_t)kSignsIq2xs.v[(aux >> 7) & 127] << 8) |
                           ((uint32_t)kSignsIq2xs.v[(aux >> 14) & 127] << 16) |
                           ((uint32_t)kSignsIq2xs.v[(aux >> 21) & 127] << 24);
    return kq_signed_grid(mag, signs, 64);
  }
};

// IQ3_S: per sub-block of 32, 8 nine-bit grid indices (qs byte + bit k of qh[j]), one sign bit per
// element, db = d * (1 + 2 * 4-bit scale); values +- odd magnitudes <= 15 stored + 16.
struct KIQ3S {
  static constexpr size_t kBytes = sizeof(block_iq3_s);
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_iq3_s* b = reinterpret_cast<const block_iq3_s*>(p);
    const float d = kq_half(&b->d);
    for (int ib = 0; ib < 8; ib++) {
      ws16[2 * ib] = ws16[2 * ib + 1] = d * (float)(1 + 2 * ((b->scales[ib / 2] >> (4 * (ib % 2))) & 0xf));
      mn16[2 * ib] = mn16[2 * ib + 1] = 16.0f * ws16[2 * ib];
    }
  }
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_iq3_s* b = reinterpret_cast<const block_iq3_s*>(p);
    // Nine-bit indices: the 8 qs bytes, bit k of qh[j] as bit 8 of index k.
    const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(b->qs + 8 * j)));
    const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(b->qh[j]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                                        _mm256_set1_epi32(1));
    const __m256i mag = _mm256_i32gather_epi32((const int*)kIq3sGrid, _mm256_or_si256(lo, _mm256_slli_epi32(hi, 8)), 4);
    return kq_signed_grid(mag, kq_u32(b->signs + 4 * j), 16);
  }
};

// TQ2_0: q in {0, 1, 2} (four planes per 32-byte half, as Q2_K) stands for q - 1: ws16 = mn16 = d.
struct KTQ2 {
  static constexpr size_t kBytes = sizeof(block_tq2_0);
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_tq2_0* b = reinterpret_cast<const block_tq2_0*>(p);
    const float d = kq_half(&b->d);
    for (int g = 0; g < 16; g++) ws16[g] = mn16[g] = d;
  }
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_tq2_0* b = reinterpret_cast<const block_tq2_0*>(p);
    return kq_bits(kq_load32(b->qs + 32 * (j / 4)), 2 * (j % 4), 3);
  }
};

}  // namespace
}  // namespace svc
