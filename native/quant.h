// Storage formats shared by every kernel: dtype codes (the codes src/kernels/dtypes.ts sends),
// ggml's quantized block structs, and scalar f16 / bf16 conversions. What each dtype is (block size,
// decoder, kernel slots) is its row in the traits tables of dtypes.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace svc {

// Weight dtypes; the numbering is part of the JS <-> C++ contract (`code` in WEIGHT_DTYPES,
// src/kernels/dtypes.ts). The x16 codes are Q8_0 / Q4_0 / Q4_K / Q5_K / Q6_K / Q5_0 / Q5_1 / Q4_1 /
// IQ4_NL repacked by prepareWeight (layouts in packed.h; `packedCode` in WEIGHT_DTYPES).
enum DType : int {
  kF32 = 0, kF16 = 1, kBF16 = 2, kQ8_0 = 3, kQ4_0 = 4, kQ2_K = 5, kQ4_K = 6, kQ5_K = 7, kQ6_K = 8,
  kQ8_0x16 = 9, kQ4_0x16 = 10,
  kQ4_1 = 11, kQ5_0 = 12, kQ5_1 = 13, kIQ4_NL = 14,
  kQ3_K = 15, kIQ4_XS = 16, kIQ3_XXS = 17, kIQ3_S = 18, kTQ2_0 = 19,
  kQ4_Kx16 = 20, kQ5_Kx16 = 21, kQ6_Kx16 = 22,
  kQ5_0x16 = 23, kQ5_1x16 = 24, kQ4_1x16 = 25, kIQ4_NLx16 = 26,
  kDTypeCount = 27,
};

// KV cache dtypes (`code` in KV_DTYPES, src/kernels/dtypes.ts). From kKvNVFP4 on they are block
// formats coded per head vector, whose rows cost far more to encode (store_kv parallelizes sooner).
enum KvDType : int {
  kKvF32 = 0, kKvBF16 = 1, kKvFP8 = 2, kKvNVFP4 = 3,
  kKvTurbo2 = 4, kKvTurbo3 = 5, kKvTurbo4 = 6, kKvTurbo8 = 7,
  kKvDTypeCount = 8,
};

constexpr int QK8_0 = 32;
constexpr int QK4_0 = 32;
constexpr int QK_K = 256;

// GGUF block layouts, byte for byte as ggml-common.h defines them (d and dmin are IEEE halves).
struct block_q8_0 { uint16_t d; int8_t qs[QK8_0]; };
struct block_q4_0 { uint16_t d; uint8_t qs[QK4_0 / 2]; };  // low nibble = element j, high = j + 16
struct block_q4_1 { uint16_t d; uint16_t m; uint8_t qs[16]; };  // nibbles as Q4_0; y = d * q + m
// qh bit e is element e's fifth bit (Q5_0: y = d * (q - 16); Q5_1: y = d * q + m).
struct block_q5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };
struct block_q5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[16]; };
struct block_iq4_nl { uint16_t d; uint8_t qs[16]; };  // nibbles as Q4_0, indices into kValuesIq4nl
struct block_q2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; };
struct block_q4_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; };
struct block_q5_K { uint16_t d; uint16_t dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
struct block_q6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };

// The other 256-element super-blocks (dequant_iq.cc decodes them; IQ grids in iq_tables.h).
struct block_q3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };
struct block_iq4_xs { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
struct block_iq3_xxs { uint16_t d; uint8_t qs[3 * QK_K / 8]; };  // 64 grid indices, then 8 u32 scale+signs
struct block_iq3_s { uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; };
struct block_tq2_0 { uint8_t qs[QK_K / 4]; uint16_t d; };

static_assert(sizeof(block_q3_K) == 110, "block_q3_K must be 110 bytes");
static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs must be 136 bytes");
static_assert(sizeof(block_iq3_xxs) == 98, "block_iq3_xxs must be 98 bytes");
static_assert(sizeof(block_iq3_s) == 110, "block_iq3_s must be 110 bytes");
static_assert(sizeof(block_tq2_0) == 66, "block_tq2_0 must be 66 bytes");

static_assert(sizeof(block_q8_0) == 34, "block_q8_0 must be 34 bytes");
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 must be 18 bytes");
static_assert(sizeof(block_q4_1) == 20, "block_q4_1 must be 20 bytes");
static_assert(sizeof(block_q5_0) == 22, "block_q5_0 must be 22 bytes");
static_assert(sizeof(block_q5_1) == 24, "block_q5_1 must be 24 bytes");
static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl must be 18 bytes");
static_assert(sizeof(block_q2_K) == 84, "block_q2_K must be 84 bytes");
static_assert(sizeof(block_q4_K) == 144, "block_q4_K must be 144 bytes");
static_assert(sizeof(block_q5_K) == 176, "block_q5_K must be 176 bytes");
static_assert(sizeof(block_q6_K) == 210, "block_q6_K must be 210 bytes");

// The non-linear 4-bit codebook of IQ4_NL (kvalues_iq4nl in ggml-common.h).
alignas(16) constexpr int8_t kValuesIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

inline float bits_to_f32(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
inline uint32_t f32_to_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

// IEEE half -> f32, exact (portable: the scalar path must not assume F16C).
inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    const float v = (float)mant * 5.9604644775390625e-8f;  // subnormal: mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
  return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

// f32 -> IEEE half bits, round to nearest even; overflow -> inf, NaN stays NaN (matches f32ToF16).
inline uint16_t f32_to_fp16(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);  // at or past 65520 rounds to inf
  if (ax < 0x38800000u) {
    // Subnormal half: value / 2^-24 (exact in f32), rounded to nearest even.
    const float v = bits_to_f32(ax) * 16777216.0f;
    const float fl = (float)(uint32_t)v;
    uint32_t r = (uint32_t)fl;
    const float rem = v - fl;
    if (rem > 0.5f || (rem == 0.5f && (r & 1))) r++;
    return (uint16_t)(sign | r);
  }
  const uint32_t r = ax + 0x0fffu + ((ax >> 13) & 1);
  return (uint16_t)(sign | ((r >> 13) - (112u << 10)));
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32((uint32_t)h << 16); }

// f32 -> bf16, round to nearest even; NaN stays a quiet NaN (matches f32ToBf16 in dequant.ts).
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = f32_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((x >> 16) & 0x8000) | 0x7fc0);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

}  // namespace svc
