// Portable scalar kernels: the fallback path for CPUs without AVX2, and the plainest statement of
// what every SIMD slot computes. Weight bytes may sit at any alignment (they can come straight out
// of a safetensors file), so loads go through memcpy, which compiles to plain moves.
#include <cmath>
#include <cstring>

#include "kernels.h"
#include "kv_codec.h"
#include "packed.h"
#include "quant.h"

namespace svc {
namespace {

template <typename T>
inline T load(const uint8_t* p) { T v; std::memcpy(&v, p, sizeof(T)); return v; }

struct WF32 { static float get(const uint8_t* row, int c) { return load<float>(row + 4 * (size_t)c); } };
struct WF16 { static float get(const uint8_t* row, int c) { return fp16_to_f32(load<uint16_t>(row + 2 * (size_t)c)); } };
struct WBF16 { static float get(const uint8_t* row, int c) { return bf16_to_f32(load<uint16_t>(row + 2 * (size_t)c)); } };

template <typename W>
void gemm_float(int n, int k, const float* x, size_t ldx, const uint8_t* w, size_t wstride, int r0, int r1,
                float* y, size_t ldy) {
  for (int r = r0; r < r1; r++) {
    const uint8_t* row = w + (size_t)r * wstride;
    for (int i = 0; i < n; i++) {
      const float* xi = x + (size_t)i * ldx;
      float sum = 0.0f;
      for (int c = 0; c < k; c++) sum += xi[c] * W::get(row, c);
      y[(size_t)i * ldy + r] = sum;
    }
  }
}

void gemm_q8_0(int n, const QuantActs& x, const uint8_t* w, size_t wstride, int r0, int r1, float* y, size_t ldy) {
  const int nb = x.k / QK8_0;
  for (int r = r0; r < r1; r++) {
    const block_q8_0* wb = reinterpret_cast<const block_q8_0*>(w + (size_t)r * wstride);
    for (int i = 0; i < n; i++) {
      const int8_t* xq = x.qs + (size_t)i * x.k;
      const float* xd = x.d + (size_t)i * nb;
      float sum = 0.0f;
      for (int b = 0; b < nb; b++) {
        int isum = 0;
        for (int j = 0; j < QK8_0; j++) isum += (int)wb[b].qs[j] * (int)xq[b * QK8_0 + j];
        sum += fp16_to_f32(load<uint16_t>(reinterpret_cast<const uint8_t*>(&wb[b].d))) * xd[b] * (float)isum;
      }
      y[(size_t)i * ldy + r] = sum;
    }
  }
}

void gemm_q4_0(int n, const QuantActs& x, const uint8_t* w, size_t wstride, int r0, int r1, float* y, size_t ldy) {
  const int nb = x.k / QK4_0;
  for (int r = r0; r < r1; r++) {
    const block_q4_0* wb = reinterpret_cast<const block_q4_0*>(w + (size_t)r * wstride);
    for (int i = 0; i < n; i++) {
      const int8_t* xq = x.qs + (size_t)i * x.k;
      const float* xd = x.d + (size_t)i * nb;
      float sum = 0.0f;
      for (int b = 0; b < nb; b++) {
        int isum = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
          isum += ((wb[b].qs[j] & 0xf) - 8) * (int)xq[b * QK4_0 + j];
          isum += ((wb[b].qs[j] >> 4) - 8) * (int)xq[b * QK4_0 + j + 16];
        }
        sum += fp16_to_f32(load<uint16_t>(reinterpret_cast<const uint8_t*>(&wb[b].d))) * xd[b] * (float)isum;
      }
      y[(size_t)i * ldy + r] = sum;
    }
  }
}

// Packed Q8_0x16 / Q4_0x16 (packed.h): per output, the same block-by-block sum as above, reading
// row j of a group from lane j of each block's quads.
template <int DT>
void gemm_packed(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows, float* y, size_t ldy,
                 uint8_t* scratch) {
  const int nb = x.k / 32, qbytes = pack_quant_bytes(DT), zero = packed_zero(DT);
  const size_t gb = group_bytes(DT, nb);
  for (int g = g0; g < g1; g++) {
    const uint8_t* grp = w + (size_t)g * gb;
    const uint8_t* scales = grp + (size_t)nb * qbytes;
    const int nj = rows - g * kPackRows < kPackRows ? rows - g * kPackRows : kPackRows;
    for (int j = 0; j < nj; j++) {
      for (int i = 0; i < n; i++) {
        const int8_t* xq = x.qs + (size_t)i * x.k;
        const float* xd = x.d + (size_t)i * nb;
        float sum = 0.0f;
        for (int b = 0; b < nb; b++) {
          const uint8_t* q = grp + (size_t)b * qbytes + 4 * j;
          const int8_t* xb = xq + b * 32;
          int isum = 0;
          if (DT == kQ8_0x16) {
            for (int c = 0; c < 8; c++)
              for (int t = 0; t < 4; t++) isum += ((int)q[c * 64 + t] - zero) * (int)xb[4 * c + t];
          } else {
            for (int p = 0; p < 4; p++)
              for (int t = 0; t < 4; t++) {
                isum += ((q[p * 64 + t] & 0xf) - zero) * (int)xb[4 * p + t];
                isum += ((q[p * 64 + t] >> 4) - zero) * (int)xb[16 + 4 * p + t];
              }
          }
          const float dw = fp16_to_f32(load<uint16_t>(scales + (size_t)b * kPackScaleBytes + 2 * j));
          sum += (float)isum * (dw * xd[b]);
        }
        y[(size_t)i * ldy + g * kPackRows + j] = sum;
      }
    }
  }
}

// d = amax / 127, q = round-to-nearest-even(x * (127 / amax)): the SIMD paths produce the same bytes.
void quantize_row_q8(const float* x, int k, int8_t* qs, float* d, float* s16, int32_t* corr, int zero) {
  for (int b = 0; b < k / QK8_0; b++) {
    const float* xb = x + b * QK8_0;
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; j++) amax = std::fmax(amax, std::fabs(xb[j]));
    const float db = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;  // as llama.cpp's quantize_row_q8_0
    d[b] = db;
    for (int j = 0; j < QK8_0; j++) qs[b * QK8_0 + j] = (int8_t)std::nearbyint(xb[j] * id);
    if (s16) {
      for (int h = 0; h < 2; h++) {
        int sum = 0;
        for (int j = 0; j < 16; j++) sum += qs[b * QK8_0 + 16 * h + j];
        s16[2 * b + h] = db * (float)sum;
      }
    }
    if (corr) {
      int sum = 0;
      for (int j = 0; j < QK8_0; j++) sum += qs[b * QK8_0 + j];
      corr[b] = -zero * sum;
    }
  }
}

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  float v = -INFINITY;
  for (int64_t i = 0; i < n; i++)
    if (x[i] > v) {
      v = x[i];
      best = i;
    }
  return best;
}

double sum_squares(const float* x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += (double)x[i] * (double)x[i];
  return s;
}

void scale_mul(const float* x, float s, const float* w, float* out, int n) {
  for (int i = 0; i < n; i++) out[i] = x[i] * s * w[i];
}

void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// Sums in double, two passes (mean, then the centred squares): the reference's arithmetic.
void layer_norm(const float* x, int n, double eps, const float* w, const float* b, float* out) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += x[i];
  const double mean = s / n;
  double ss = 0.0;
  for (int i = 0; i < n; i++) ss += ((double)x[i] - mean) * ((double)x[i] - mean);
  const double inv = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; i++) out[i] = (float)(((double)x[i] - mean) * inv) * w[i] + b[i];
}

// The GELUs in double, through erfc / exp so that neither tail cancels: 0.5 * (1 + erf(x / sqrt 2)) is
// 0.5 * erfc(-x / sqrt 2), and 0.5 * (1 + tanh(u)) is sigmoid(2u).
void gelu_erf(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = (float)(0.5 * x[i] * std::erfc(-(double)x[i] * 0.70710678118654752));
}

void gelu_tanh(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const double v = x[i], u = 0.79788456080286536 * (v + 0.044715 * v * v * v);
    out[i] = (float)(v / (1.0 + std::exp(-2.0 * u)));
  }
}

void gelu_quick(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = (float)((double)x[i] / (1.0 + std::exp(-1.702 * (double)x[i])));
}

void mul(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = a[i] * b[i];
}

// In double, as the reference.
void softcap(const float* x, float* out, int64_t n, float cap) {
  const double c = cap;
  for (int64_t i = 0; i < n; i++) out[i] = (float)(c * std::tanh((double)x[i] / c));
}

void qk(const float* q, const float* K, size_t kstride, int nk, int hd, float* s) {
  for (int t = 0; t < nk; t++) {
    const float* kt = K + (size_t)t * kstride;
    float sum = 0.0f;
    for (int d = 0; d < hd; d++) sum += q[d] * kt[d];
    s[t] = sum;
  }
}

void pv(const float* p, const float* V, size_t vstride, int nk, int hd, float* o) {
  for (int t = 0; t < nk; t++) {
    const float* vt = V + (size_t)t * vstride;
    for (int d = 0; d < hd; d++) o[d] += p[t] * vt[d];
  }
}

void qk_tile(const float* Q, int nq, const float* K, size_t kstride, int nk, int hd, float* S, size_t sstride) {
  for (int i = 0; i < nq; i++) qk(Q + (size_t)i * hd, K, kstride, nk, hd, S + (size_t)i * sstride);
}

void pv_tile(const float* P, int nq, size_t pstride, const float* V, size_t vstride, int nk, int hd, float* O) {
  for (int i = 0; i < nq; i++) pv(P + (size_t)i * pstride, V, vstride, nk, hd, O + (size_t)i * hd);
}

float exp_sum(float* s, int n, float m) {
  float sum = 0.0f;
  for (int i = 0; i < n; i++) {
    s[i] = std::exp(s[i] - m);
    sum += s[i];
  }
  return sum;
}

void scale(float* x, int n, float a) {
  for (int i = 0; i < n; i++) x[i] *= a;
}

void kv_decode_bf16(const uint8_t* src, float* dst, int n, double) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
  for (int i = 0; i < n; i++) dst[i] = bf16_to_f32(h[i]);
}

void kv_decode_fp8(const uint8_t* src, float* dst, int n, double scale) {
  const float mult = fp8_decode_mult(scale);
  for (int i = 0; i < n; i++) dst[i] = fp8_to_f32(src[i], mult);
}

void kv_encode_fp8(const float* src, uint8_t* dst, int n, double scale) {
  for (int i = 0; i < n; i++) dst[i] = f32_to_fp8((float)((double)src[i] / scale));
}

uint64_t read_sum(const uint8_t* p, size_t bytes) {
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p);
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = 0; i < bytes / 8; i += 4) {
    a0 ^= w[i];
    a1 ^= w[i + 1];
    a2 ^= w[i + 2];
    a3 ^= w[i + 3];
  }
  return a0 ^ a1 ^ a2 ^ a3;
}

}  // namespace

const Kernels kScalarKernels = {
    .name = "scalar",
    .gemm_f32 = gemm_float<WF32>,
    .gemm_f16 = gemm_float<WF16>,
    .gemm_bf16 = gemm_float<WBF16>,
    .gemm_q8_0 = gemm_q8_0,
    .gemm_q4_0 = gemm_q4_0,
    // Q4_1 / Q5_0 / Q5_1 / IQ4_NL: decoded to f32 by the driver, like the K-quants below.
    .gemm_q4_1 = nullptr,
    .gemm_q5_0 = nullptr,
    .gemm_q5_1 = nullptr,
    .gemm_iq4_nl = nullptr,
    // K-quants: no int8 slots, so the driver decodes rows to f32 (activations stay exact).
    .gemm_q2_k = nullptr,
    .gemm_q4_k = nullptr,
    .gemm_q5_k = nullptr,
    .gemm_q6_k = nullptr,
    .gemm_q3_k = nullptr,
    .gemm_iq4_xs = nullptr,
    .gemm_iq3_xxs = nullptr,
    .gemm_iq3_s = nullptr,
    .gemm_tq2_0 = nullptr,
    .gemm_q8_0x16 = gemm_packed<kQ8_0x16>,
    .gemm_q4_0x16 = gemm_packed<kQ4_0x16>,
    .gemm_q4_kx16 = nullptr,  // decoded to f32 by the driver, like the unpacked K-quants
    .gemm_q5_kx16 = nullptr,
    .gemm_q6_kx16 = nullptr,
    .gemm_q5_0x16 = nullptr,  // decoded to f32 by the driver, like their unpacked rows
    .gemm_q5_1x16 = nullptr,
    .gemm_q4_1x16 = nullptr,
    .gemm_iq4_nlx16 = nullptr,
    .quantize_row_q8 = quantize_row_q8,
    .sum_squares = sum_squares,
    .argmax = argmax,
    .scale_mul = scale_mul,
    .silu_mul = silu_mul,
    .add = add,
    .layer_norm = layer_norm,
    .gelu_erf = gelu_erf,
    .gelu_tanh = gelu_tanh,
    .gelu_quick = gelu_quick,
    .mul = mul,
    .softcap = softcap,
    .qk = qk,
    .pv = pv,
    .qk_tile = qk_tile,
    .pv_tile = pv_tile,
    .qk_tile_bf16 = nullptr,
    .pv_tile_bf16 = nullptr,
    .bf16_pairs = nullptr,
    .fp8_to_bf16 = nullptr,
    .fp8_pairs = nullptr,
    .f32_to_bf16 = nullptr,
    .exp_sum = exp_sum,
    .scale = scale,
    .kv_encode_f32 = kv_encode_f32_row,
    .kv_encode_bf16 = kv_encode_bf16_row,
    .kv_encode_fp8 = kv_encode_fp8,
    .kv_encode_nvfp4 = kv_encode_nvfp4_row,
    .kv_encode_turbo2 = kv_encode_turbo_row<2>,
    .kv_encode_turbo3 = kv_encode_turbo_row<3>,
    .kv_encode_turbo4 = kv_encode_turbo_row<4>,
    .kv_encode_turbo8 = kv_encode_turbo_row<8>,
    .kv_decode_bf16 = kv_decode_bf16,
    .kv_decode_fp8 = kv_decode_fp8,
    .kv_decode_nvfp4 = kv_decode_nvfp4_row,
    .kv_decode_turbo2 = kv_decode_turbo_row<2>,
    .kv_decode_turbo3 = kv_decode_turbo_row<3>,
    .kv_decode_turbo4 = kv_decode_turbo_row<4>,
    .kv_decode_turbo8 = kv_decode_turbo_row<8>,
    .read_sum = read_sum,
};

}  // namespace svc
