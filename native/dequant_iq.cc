// Row decoders of the other 256-element super-blocks (Q3_K, IQ4_XS, IQ3_XXS, IQ3_S, TQ2_0), after
// ggml-quants.c's dequantize_row_*: the `to_float` of their traits rows (dtypes.cc), used for
// embedding lookups and by paths without an int8 kernel. The same arithmetic as
// src/kernels/dequant-k3-iq.ts (every product is exact in f32).
#include <cstring>

#include "dequant.h"
#include "iq_tables.h"
#include "quant.h"

namespace svc {
namespace {

inline float half_of(const uint16_t& h) { uint16_t v; std::memcpy(&v, &h, 2); return fp16_to_f32(v); }

// db * the four grid magnitudes of `entry`, negated where bits bit0.. of `signs` are set.
inline void grid_quad(uint32_t entry, uint8_t signs, int bit0, float db, float* y) {
  for (int j = 0; j < 4; j++) {
    const float v = db * (float)((entry >> (8 * j)) & 0xff);
    y[j] = (signs >> (bit0 + j)) & 1 ? -v : v;
  }
}

}  // namespace

void dequantize_row_q3_K(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_q3_K* x = reinterpret_cast<const block_q3_K*>(src) + i;
    const float d = half_of(x->d);
    int sc[16];
    for (int j = 0; j < 16; j++) {
      const int lo = (x->scales[j & 7] >> (4 * (j >> 3))) & 0xf;
      const int hi = (x->scales[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
      sc[j] = (lo | (hi << 4)) - 32;
    }
    int is = 0;
    for (int n = 0; n < 2; n++) {
      const uint8_t* q = x->qs + 32 * n;
      for (int plane = 0; plane < 4; plane++) {
        const uint8_t m = (uint8_t)(1u << (4 * n + plane));
        for (int h = 0; h < 2; h++) {
          const float dl = d * (float)sc[is++];
          for (int l = 16 * h; l < 16 * h + 16; l++)
            *y++ = dl * (float)(((q[l] >> (2 * plane)) & 3) - ((x->hmask[l] & m) ? 0 : 4));
        }
      }
    }
  }
}

void dequantize_row_iq4_xs(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_iq4_xs* x = reinterpret_cast<const block_iq4_xs*>(src) + i;
    const float d = half_of(x->d);
    uint16_t scales_h;
    std::memcpy(&scales_h, &x->scales_h, 2);
    for (int ib = 0; ib < QK_K / 32; ib++, y += 32) {
      const int ls = ((x->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * (float)(ls - 32);
      const uint8_t* qs = x->qs + 16 * ib;
      for (int j = 0; j < 16; j++) {
        y[j] = dl * (float)kValuesIq4nl[qs[j] & 0xf];
        y[j + 16] = dl * (float)kValuesIq4nl[qs[j] >> 4];
      }
    }
  }
}

void dequantize_row_iq3_xxs(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_iq3_xxs* x = reinterpret_cast<const block_iq3_xxs*>(src) + i;
    const float d = half_of(x->d);
    const uint8_t* scales_and_signs = x->qs + QK_K / 4;
    for (int ib = 0; ib < QK_K / 32; ib++) {
      uint32_t aux;
      std::memcpy(&aux, scales_and_signs + 4 * ib, 4);
      const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
      const uint8_t* qs = x->qs + 8 * ib;
      for (int l = 0; l < 4; l++, y += 8) {
        const uint8_t signs = kSignsIq2xs.v[(aux >> (7 * l)) & 127];
        grid_quad(kIq3xxsGrid[qs[2 * l]], signs, 0, db, y);
        grid_quad(kIq3xxsGrid[qs[2 * l + 1]], signs, 4, db, y + 4);
      }
    }
  }
}

void dequantize_row_iq3_s(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_iq3_s* x = reinterpret_cast<const block_iq3_s*>(src) + i;
    const float d = half_of(x->d);
    for (int ib = 0; ib < QK_K / 32; ib++) {
      const float db = d * (float)(1 + 2 * ((x->scales[ib / 2] >> (4 * (ib % 2))) & 0xf));
      const uint8_t* qs = x->qs + 8 * ib;
      const int qh = x->qh[ib];
      for (int l = 0; l < 4; l++, y += 8) {
        const uint8_t signs = x->signs[4 * ib + l];
        grid_quad(kIq3sGrid[qs[2 * l] | (((qh >> (2 * l)) & 1) << 8)], signs, 0, db, y);
        grid_quad(kIq3sGrid[qs[2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8)], signs, 4, db, y + 4);
      }
    }
  }
}

void dequantize_row_tq2_0(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_tq2_0* x = reinterpret_cast<const block_tq2_0*>(src) + i;
    const float d = half_of(x->d);
    for (int n = 0; n < 2; n++)
      for (int shift = 0; shift < 8; shift += 2)
        for (int m = 0; m < 32; m++) *y++ = (float)(((x->qs[32 * n + m] >> shift) & 3) - 1) * d;
  }
}

}  // namespace svc
