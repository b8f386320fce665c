// K-quant super-blocks (256 elements) unpacked for int8 dot products: the per-16-element scales and
// mins as floats, and 32 quants at a time as unsigned bytes in element order. Each element decodes
// as  w = ws16[e / 16] * q_e - mn16[e / 16]  (Q6_K folds its -32 offset into mn16), so against int8
// activations x = dx * qx a dot product is  sum ws16 * dx * (q . qx)  -  sum mn16 * (dx * sum qx).
//
// The SIMD files include this after defining SVC_KQ_INLINE (their target attribute plus
// always_inline); each gets its own internal copy compiled for its instruction set.
#pragma once
#include <immintrin.h>

#include <cstring>

#include "quant.h"

#ifndef SVC_KQ_INLINE
#error "define SVC_KQ_INLINE before including kquant_unpack.h"
#endif

namespace svc {
namespace {

inline float kq_half(const void* p) { uint16_t h; std::memcpy(&h, p, 2); return fp16_to_f32(h); }

// get_scale_min_k4 in ggml: 6-bit scale and min of 32-element sub-block j.
inline void kq_scale_min_k4(int j, const uint8_t* q, int* d, int* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

SVC_KQ_INLINE __m256i kq_load32(const uint8_t* p) { return _mm256_loadu_si256((const __m256i*)p); }
SVC_KQ_INLINE __m256i kq_bits(__m256i v, int shift, int mask) {
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(shift)), _mm256_set1_epi8((char)mask));
}

// q = (scales[g] & 15) * d for 2-bit quants, min = (scales[g] >> 4) * dmin.
struct KQ2 {
  static constexpr size_t kBytes = sizeof(block_q2_K);
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_q2_K* b = reinterpret_cast<const block_q2_K*>(p);
    const float d = kq_half(&b->d), dmin = kq_half(&b->dmin);
    for (int g = 0; g < 16; g++) {
      ws16[g] = d * (float)(b->scales[g] & 0xf);
      mn16[g] = dmin * (float)(b->scales[g] >> 4);
    }
  }
  // Elements 32j..32j+31: bits 2(j%4) of the 32 bytes of half j/4.
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_q2_K* b = reinterpret_cast<const block_q2_K*>(p);
    return kq_bits(kq_load32(b->qs + 32 * (j / 4)), 2 * (j % 4), 3);
  }
};

struct KQ4 {
  static constexpr size_t kBytes = sizeof(block_q4_K);
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_q4_K* b = reinterpret_cast<const block_q4_K*>(p);
    const float d = kq_half(&b->d), dmin = kq_half(&b->dmin);
    for (int j = 0; j < 8; j++) {
      int sc, m;
      kq_scale_min_k4(j, b->scales, &sc, &m);
      ws16[2 * j] = ws16[2 * j + 1] = d * (float)sc;
      mn16[2 * j] = mn16[2 * j + 1] = dmin * (float)m;
    }
  }
  // Sub-block j: low nibbles (even j) or high nibbles (odd j) of bytes 32(j/2)..
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_q4_K* b = reinterpret_cast<const block_q4_K*>(p);
    return kq_bits(kq_load32(b->qs + 32 * (j / 2)), 4 * (j % 2), 0xf);
  }
};

struct KQ5 {
  static constexpr size_t kBytes = sizeof(block_q5_K);
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_q5_K* b = reinterpret_cast<const block_q5_K*>(p);
    const float d = kq_half(&b->d), dmin = kq_half(&b->dmin);
    for (int j = 0; j < 8; j++) {
      int sc, m;
      kq_scale_min_k4(j, b->scales, &sc, &m);
      ws16[2 * j] = ws16[2 * j + 1] = d * (float)sc;
      mn16[2 * j] = mn16[2 * j + 1] = dmin * (float)m;
    }
  }
  // Q4_K's nibble plus bit j of qh as the fifth bit.
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_q5_K* b = reinterpret_cast<const block_q5_K*>(p);
    const __m256i lo = kq_bits(kq_load32(b->qs + 32 * (j / 2)), 4 * (j % 2), 0xf);
    const __m256i hi = _mm256_slli_epi16(kq_bits(kq_load32(b->qh), j, 1), 4);
    return _mm256_or_si256(lo, hi);
  }
};

struct KQ6 {
  static constexpr size_t kBytes = sizeof(block_q6_K);
  static void scales(const uint8_t* p, float* ws16, float* mn16) {
    const block_q6_K* b = reinterpret_cast<const block_q6_K*>(p);
    const float d = kq_half(&b->d);
    for (int g = 0; g < 16; g++) {
      ws16[g] = d * (float)b->scales[g];
      mn16[g] = 32.0f * ws16[g];  // q is stored as q + 32
    }
  }
  // 6-bit q: 4 low bits from ql, 2 high bits from qh; four 32-element groups per 128-element half.
  static SVC_KQ_INLINE __m256i quants32(const uint8_t* p, int j) {
    const block_q6_K* b = reinterpret_cast<const block_q6_K*>(p);
    const int h = j / 4, part = j % 4;
    const __m256i ql = kq_load32(b->ql + 64 * h + 32 * (part & 1));
    const __m256i lo = kq_bits(ql, 4 * (part >> 1), 0xf);
    const __m256i hi = _mm256_slli_epi16(kq_bits(kq_load32(b->qh + 32 * h), 2 * part, 3), 4);
    return _mm256_or_si256(lo, hi);
  }
};

}  // namespace
}  // namespace svc
