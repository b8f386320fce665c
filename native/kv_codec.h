// KV cache row codecs: OCP FP8 E4M3 (fp8 with a per-layer scale), bf16, NVFP4 and the turbo dtypes,
// matching the reference codecs in src/kernels/kv-codec.ts and kv-turbo.ts bit for bit. A row is one
// head vector of n = headDim values.
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

// NVFP4 (layout in kv-codec.ts): E2M1 nibbles, value i in byte i >> 1 (low nibble for even i),
// then one E4M3 scale byte per 16 values.
constexpr int kNvfp4Group = 16;
inline size_t nvfp4_row_bytes(int n) { return (size_t)(n + 1) / 2 + (size_t)(n + kNvfp4Group - 1) / kNvfp4Group; }
// E2M1 code (bit 3 sign) -> value.
alignas(64) inline constexpr float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
// An NVFP4 group's multiplier: its E4M3 block scale times the layer scale, rounded to f32 once.
inline float nvfp4_group_scale(uint8_t code, double scale) { return (float)((double)fp8_to_f32(code, 256.0f) * scale); }

// Row encoders every path shares: f32 and bf16 here; NVFP4 and turbo (kv_codec.cc, compiled without
// FMA so their float steps round as the reference's do). Encoding is one row per token, head and
// layer, so SIMD would not pay for itself.
inline void kv_encode_f32_row(const float* src, uint8_t* dst, int n, double) { std::memcpy(dst, src, (size_t)n * 4); }
inline void kv_encode_bf16_row(const float* src, uint8_t* dst, int n, double) {
  for (int i = 0; i < n; i++) {
    const uint16_t h = f32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}
void kv_encode_nvfp4_row(const float* src, uint8_t* dst, int n, double scale);
template <int B>
void kv_encode_turbo_row(const float* src, uint8_t* dst, int n, double scale);

// Scalar decoders, the scalar path's slots (turbo: into the rotated domain).
void kv_decode_nvfp4_row(const uint8_t* src, float* dst, int n, double scale);
template <int B>
void kv_decode_turbo_row(const uint8_t* src, float* dst, int n, double scale);

// A turbo row's scale (its first two bytes, an f16).
inline float turbo_row_scale(const uint8_t* row) { return fp16_to_f32((uint16_t)(row[0] | (row[1] << 8))); }

// Index i of a B-bit little-endian stream.
template <int B>
inline unsigned turbo_index(const uint8_t* q, int i) {
  const int bit = i * B, sh = bit & 7;
  const unsigned word = sh + B > 8 ? (unsigned)(q[bit >> 3] | (q[(bit >> 3) + 1] << 8)) : q[bit >> 3];
  return (word >> sh) & ((1u << B) - 1);
}

// `bytes` (<= 8) bytes at p as a little-endian integer: the SIMD decoders' last, partial group,
// which must not read past the row (the last row of a cache ends its buffer).
inline uint64_t load_le_bytes(const uint8_t* p, int bytes) {
  uint64_t w = 0;
  for (int i = 0; i < bytes; i++) w |= (uint64_t)p[i] << (8 * i);
  return w;
}

// Bytes (<= 8, a constant) bytes at p as a little-endian integer, assembled in registers: a 3- or
// 6-byte memcpy into a wider variable goes through the stack and stalls store forwarding.
template <int Bytes>
inline uint64_t load_le(const uint8_t* p) {
  if constexpr (Bytes >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  } else if constexpr (Bytes >= 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    return w | (load_le<Bytes - 4>(p + 4) << 32);
  } else if constexpr (Bytes >= 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    return w | (load_le<Bytes - 2>(p + 2) << 16);
  } else if constexpr (Bytes == 1) {
    return p[0];
  } else {
    return 0;
  }
}

}  // namespace svc
