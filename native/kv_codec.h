// KV cache element codecs: OCP FP8 E4M3 (fp8 with a per-layer scale) and bf16, matching the
// reference codecs in src/kernels/kv-codec.ts bit for bit.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant.h"

namespace svc {

constexpr uint8_t kFp8MaxCode = 0x7e;  // 448, the largest finite E4M3 value

// f32 -> E4M3 code: round to nearest even, saturate at +-448, NaN -> +0 (the cache never holds NaN).
inline uint8_t f32_to_fp8(float v) {
  if (std::isnan(v)) return 0;
  const uint32_t bits = f32_to_bits(v);
  const uint8_t sign = (uint8_t)((bits >> 24) & 0x80);
  const uint32_t abits = bits & 0x7fffffffu;
  const float a = bits_to_f32(abits);
  if (a >= 448.0f) return sign | kFp8MaxCode;
  if (a < 0.015625f) {
    // Subnormal range: count of 2^-9 steps (8 rolls over into the smallest normal, code 8).
    return sign | (uint8_t)std::nearbyint(a * 512.0f);
  }
  // Round the 23-bit mantissa to 3 bits (ties to even); a carry bumps the exponent as it should.
  const uint32_t r = (abits + 0x7ffffu + ((abits >> 20) & 1)) >> 20;
  const uint32_t code = r - (120u << 3);  // rebias exponent 127 -> 7
  return sign | (uint8_t)(code > kFp8MaxCode ? kFp8MaxCode : code);
}

// E4M3 code -> f32 times `mult`, where mult = 256 * scale: the code is placed in an IEEE half
// (exponent bits line up, halves have bias 15 vs 7, hence the 2^8), which SIMD paths convert with
// vcvtph2ps. Codes 0x7f/0xff (NaN) are never written.
inline uint16_t fp8_to_half_bits(uint8_t c) {
  return (uint16_t)(((c & 0x80) << 8) | ((c & 0x7f) << 7));
}
inline float fp8_to_f32(uint8_t c, float mult) { return fp16_to_f32(fp8_to_half_bits(c)) * mult; }

// The multiplier fp8_to_f32 takes for a layer scale.
inline float fp8_decode_mult(double scale) { return (float)(256.0 * scale); }

// Row encoders every path shares (Kernels::kv_encode_f32 / kv_encode_bf16; the scale is unused).
inline void kv_encode_f32_row(const float* src, uint8_t* dst, int n, double) { std::memcpy(dst, src, (size_t)n * 4); }
inline void kv_encode_bf16_row(const float* src, uint8_t* dst, int n, double) {
  for (int i = 0; i < n; i++) {
    const uint16_t h = f32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

}  // namespace svc
