// Row decoders for every weight dtype, transcribed from ggml-quants.c (dequantize_row_*). Scalar:
// they serve embedding lookups and the K-quant matmul, which decodes a few rows into scratch and
// multiplies them with the f32 GEMM. Each is its dtype's `to_float` (dtypes.cc).
#include "dequant.h"

#include <cstring>

#include "dtypes.h"
#include "quant.h"

namespace svc {
namespace {

inline uint16_t half_at(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return h; }

// 6-bit scale and min of sub-block j from the 12 packed bytes (get_scale_min_k4 in ggml).
inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace

void dequantize_row_f32(const uint8_t* src, float* y, int64_t k) { std::memcpy(y, src, (size_t)k * 4); }

void dequantize_row_f16(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k; i++) y[i] = fp16_to_f32(half_at(src + 2 * i));
}

void dequantize_row_bf16(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k; i++) y[i] = bf16_to_f32(half_at(src + 2 * i));
}

void dequantize_row_q8_0(const uint8_t* src, float* y, int64_t k) {
  for (int64_t b = 0; b < k / QK8_0; b++) {
    const block_q8_0* x = reinterpret_cast<const block_q8_0*>(src) + b;
    const float d = fp16_to_f32(half_at(src + b * sizeof(block_q8_0)));
    for (int j = 0; j < QK8_0; j++) *y++ = d * (float)x->qs[j];
  }
}

void dequantize_row_q4_0(const uint8_t* src, float* y, int64_t k) {
  for (int64_t b = 0; b < k / QK4_0; b++, y += QK4_0) {
    const block_q4_0* x = reinterpret_cast<const block_q4_0*>(src) + b;
    const float d = fp16_to_f32(half_at(src + b * sizeof(block_q4_0)));
    for (int j = 0; j < QK4_0 / 2; j++) {
      y[j] = d * (float)((x->qs[j] & 0xf) - 8);
      y[j + QK4_0 / 2] = d * (float)((x->qs[j] >> 4) - 8);
    }
  }
}

void dequantize_row_q4_1(const uint8_t* src, float* y, int64_t k) {
  for (int64_t b = 0; b < k / 32; b++, y += 32) {
    const block_q4_1* x = reinterpret_cast<const block_q4_1*>(src) + b;
    const float d = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->d)));
    const float m = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->m)));
    for (int j = 0; j < 16; j++) {
      y[j] = (float)(x->qs[j] & 0xf) * d + m;
      y[j + 16] = (float)(x->qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const uint8_t* src, float* y, int64_t k) {
  for (int64_t b = 0; b < k / 32; b++, y += 32) {
    const block_q5_0* x = reinterpret_cast<const block_q5_0*>(src) + b;
    const float d = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->d)));
    uint32_t qh;
    std::memcpy(&qh, x->qh, 4);
    for (int j = 0; j < 16; j++) {
      const int x0 = (int)((x->qs[j] & 0xf) | (((qh >> j) << 4) & 0x10)) - 16;
      const int x1 = (int)((x->qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
      y[j] = (float)x0 * d;
      y[j + 16] = (float)x1 * d;
    }
  }
}

void dequantize_row_q5_1(const uint8_t* src, float* y, int64_t k) {
  for (int64_t b = 0; b < k / 32; b++, y += 32) {
    const block_q5_1* x = reinterpret_cast<const block_q5_1*>(src) + b;
    const float d = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->d)));
    const float m = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->m)));
    uint32_t qh;
    std::memcpy(&qh, x->qh, 4);
    for (int j = 0; j < 16; j++) {
      const int x0 = (int)((x->qs[j] & 0xf) | (((qh >> j) << 4) & 0x10));
      const int x1 = (int)((x->qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
      y[j] = (float)x0 * d + m;
      y[j + 16] = (float)x1 * d + m;
    }
  }
}

void dequantize_row_iq4_nl(const uint8_t* src, float* y, int64_t k) {
  for (int64_t b = 0; b < k / 32; b++, y += 32) {
    const block_iq4_nl* x = reinterpret_cast<const block_iq4_nl*>(src) + b;
    const float d = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->d)));
    for (int j = 0; j < 16; j++) {
      y[j] = d * (float)kValuesIq4nl[x->qs[j] & 0xf];
      y[j + 16] = d * (float)kValuesIq4nl[x->qs[j] >> 4];
    }
  }
}

void dequantize_row_q2_K(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_q2_K* x = reinterpret_cast<const block_q2_K*>(src) + i;
    const float d = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->d)));
    const float min = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->dmin)));
    const uint8_t* q = x->qs;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        uint8_t sc = x->scales[is++];
        float dl = d * (float)(sc & 0xf), ml = min * (float)(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * (float)((q[l] >> shift) & 3) - ml;
        sc = x->scales[is++];
        dl = d * (float)(sc & 0xf);
        ml = min * (float)(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * (float)((q[l + 16] >> shift) & 3) - ml;
        shift += 2;
      }
      q += 32;
    }
  }
}

void dequantize_row_q4_K(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_q4_K* x = reinterpret_cast<const block_q4_K*>(src) + i;
    const float d = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->d)));
    const float min = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->dmin)));
    const uint8_t* q = x->qs;
    for (int is = 0; is < 8; is += 2, q += 32) {
      uint8_t sc, m;
      scale_min_k4(is, x->scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      scale_min_k4(is + 1, x->scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (float)(q[l] & 0xf) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (float)(q[l] >> 4) - m2;
    }
  }
}

void dequantize_row_q5_K(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_q5_K* x = reinterpret_cast<const block_q5_K*>(src) + i;
    const float d = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->d)));
    const float min = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->dmin)));
    const uint8_t* ql = x->qs;
    const uint8_t* qh = x->qh;
    uint8_t u1 = 1, u2 = 2;
    for (int is = 0; is < 8; is += 2, ql += 32) {
      uint8_t sc, m;
      scale_min_k4(is, x->scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      scale_min_k4(is + 1, x->scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (float)((ql[l] & 0xf) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      u1 = (uint8_t)(u1 << 2);
      u2 = (uint8_t)(u2 << 2);
    }
  }
}

void dequantize_row_q6_K(const uint8_t* src, float* y, int64_t k) {
  for (int64_t i = 0; i < k / QK_K; i++) {
    const block_q6_K* x = reinterpret_cast<const block_q6_K*>(src) + i;
    const float d = fp16_to_f32(half_at(reinterpret_cast<const uint8_t*>(&x->d)));
    const uint8_t* ql = x->ql;
    const uint8_t* qh = x->qh;
    const int8_t* sc = x->scales;
    for (int n = 0; n < QK_K; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = (int)((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = (int)((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = (int)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = (int)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * (float)sc[is] * (float)q1;
        y[l + 32] = d * (float)sc[is + 2] * (float)q2;
        y[l + 64] = d * (float)sc[is + 4] * (float)q3;
        y[l + 96] = d * (float)sc[is + 6] * (float)q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void dequantize_row(int dt, const uint8_t* src, float* dst, int64_t cols) {
  const DequantRowFn to_float = dtype_traits(dt).to_float;
  if (to_float) to_float(src, dst, cols);
}

}  // namespace svc
