// Repacking Q8_0 / Q4_0 weights into the 16-row groups of packed.h, and decoding packed rows back
// (embedding lookups read the same packed table that lm_head multiplies when embeddings are tied).
#include "packed.h"

#include <cstring>

#include "threadpool.h"

namespace svc {
namespace {

inline uint16_t half_at(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return h; }

// One group: rows [16g, 16g + 16) of src (rows past `rows` are zero: scale 0, quants at the zero point).
void pack_group(int dt, int rows, int nb, const uint8_t* src, size_t src_stride, int g, uint8_t* dst) {
  const int qbytes = pack_quant_bytes(dt);
  uint8_t* scales = dst + (size_t)nb * qbytes;
  const size_t sbb = dt == kQ8_0x16 ? sizeof(block_q8_0) : sizeof(block_q4_0);
  for (int j = 0; j < kPackRows; j++) {
    const int r = g * kPackRows + j;
    const uint8_t* row = r < rows ? src + (size_t)r * src_stride : nullptr;
    for (int b = 0; b < nb; b++) {
      uint8_t* q = dst + (size_t)b * qbytes + 4 * j;
      uint16_t d = 0;
      if (dt == kQ8_0x16) {
        const uint8_t* blk = row ? row + b * sbb : nullptr;
        if (blk) d = half_at(blk);
        // Quad c (columns 4c..4c+3) of row j at c * 64 + j * 4, stored as w + 128.
        for (int c = 0; c < 8; c++)
          for (int t = 0; t < 4; t++) q[c * 64 + t] = blk ? (uint8_t)(blk[2 + 4 * c + t] ^ 0x80) : (uint8_t)kQ8PackZero;
      } else {
        const uint8_t* blk = row ? row + b * sbb : nullptr;
        if (blk) d = half_at(blk);
        // GGUF byte i holds column i (low nibble) and i + 16 (high): byte 4p + t goes to p * 64 + j * 4 + t.
        for (int p = 0; p < 4; p++)
          for (int t = 0; t < 4; t++) q[p * 64 + t] = blk ? blk[2 + 4 * p + t] : (uint8_t)0x88;
      }
      std::memcpy(scales + (size_t)b * kPackScaleBytes + 2 * j, &d, 2);
    }
  }
}

}  // namespace

void pack_weight(int dt, int rows, int cols, const uint8_t* src, uint8_t* dst) {
  const int nb = cols / 32;
  const size_t stride = row_bytes(packed_source(dt), cols);
  const size_t gb = group_bytes(dt, nb);
  parallel_for(pack_groups(rows), 16, [&](int64_t g0, int64_t g1, int) {
    for (int64_t g = g0; g < g1; g++) pack_group(dt, rows, nb, src, stride, (int)g, dst + (size_t)g * gb);
  });
}

void dequantize_packed_row(int dt, const uint8_t* w, int cols, int r, float* dst) {
  const int nb = cols / 32, qbytes = pack_quant_bytes(dt);
  const int j = r % kPackRows;
  const uint8_t* g = w + (size_t)(r / kPackRows) * group_bytes(dt, nb);
  const uint8_t* scales = g + (size_t)nb * qbytes;
  for (int b = 0; b < nb; b++, dst += 32) {
    const float d = fp16_to_f32(half_at(scales + (size_t)b * kPackScaleBytes + 2 * j));
    const uint8_t* q = g + (size_t)b * qbytes + 4 * j;
    if (dt == kQ8_0x16) {
      for (int c = 0; c < 8; c++)
        for (int t = 0; t < 4; t++) dst[4 * c + t] = d * (float)((int)q[c * 64 + t] - kQ8PackZero);
    } else {
      for (int p = 0; p < 4; p++)
        for (int t = 0; t < 4; t++) {
          const uint8_t v = q[p * 64 + t];
          dst[4 * p + t] = d * (float)((v & 0xf) - kQ4PackZero);
          dst[16 + 4 * p + t] = d * (float)((v >> 4) - kQ4PackZero);
        }
    }
  }
}

}  // namespace svc
