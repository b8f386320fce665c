// Weight rows of any dtype -> f32 (embedding lookups, and the matmul fallback for dtypes a path has
// no int8 kernel for).
#pragma once
#include <cstdint>

namespace svc {

// Decodes `cols` elements (whole blocks) of one row in dtype `dt` starting at `src` into dst, with
// the dtype's `to_float` (nothing for packed dtypes: see dequantize_packed_row).
void dequantize_row(int dt, const uint8_t* src, float* dst, int64_t cols);

// The per-dtype decoders (ggml's dequantize_row_*), the `to_float` of each traits row.
void dequantize_row_f32(const uint8_t* src, float* y, int64_t k);
void dequantize_row_f16(const uint8_t* src, float* y, int64_t k);
void dequantize_row_bf16(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q8_0(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q4_0(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q4_1(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q5_0(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q5_1(const uint8_t* src, float* y, int64_t k);
void dequantize_row_iq4_nl(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q2_K(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q4_K(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q5_K(const uint8_t* src, float* y, int64_t k);
void dequantize_row_q6_K(const uint8_t* src, float* y, int64_t k);
// dequant_iq.cc: the other 256-element super-blocks.
void dequantize_row_q3_K(const uint8_t* src, float* y, int64_t k);
void dequantize_row_iq4_xs(const uint8_t* src, float* y, int64_t k);
void dequantize_row_iq3_xxs(const uint8_t* src, float* y, int64_t k);
void dequantize_row_iq3_s(const uint8_t* src, float* y, int64_t k);
void dequantize_row_tq2_0(const uint8_t* src, float* y, int64_t k);

}  // namespace svc
