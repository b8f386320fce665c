// Weight rows of any dtype -> f32 (embedding lookups, and the K-quant matmul path).
#pragma once
#include <cstdint>

namespace svc {

// Decodes `cols` elements (whole blocks) of one row in dtype `dt` starting at `src` into dst.
void dequantize_row(int dt, const uint8_t* src, float* dst, int64_t cols);

}  // namespace svc
