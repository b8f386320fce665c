// The KV row encoders every path shares (NVFP4, turbo) and the scalar decoders. This file is
// compiled for baseline x86-64 (no FMA), so each float step rounds exactly as its reference in
// src/kernels/kv-codec.ts / kv-turbo.ts does it, and the bytes written agree.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kv_codec.h"
#include "kv_turbo.h"

namespace svc {

namespace {

// Nearest E2M1 code of q (not NaN), ties to the even magnitude code, saturating at +-6: one step up
// per midpoint passed, a tie (>=) stepping up only onto an even code (values 1, 2 and 4).
uint8_t e2m1_code(float q) {
  const float a = std::fabs(q);
  const int m = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  return (uint8_t)((q < 0.0f ? 8 : 0) | m);
}

// How many thresholds u lies above (a tie goes to the lower index): its cell's count, then the
// thresholds inside the cell (kv_turbo.h). No branches to mispredict, no chain of dependent loads.
template <int B>
int nearest_centroid(float u) {
  const TurboCodebook<B>& cb = turbo_book<B>();
  const double d = ((double)u + 8.0) * kTurboCellsPerUnit;
  const int cell = d > 0.0 ? (d < kTurboCells - 1 ? (int)d : kTurboCells - 1) : 0;  // NaN: cell 0
  int idx = cb.cell_below[cell];
  for (int j = 0; j < kTurboCellMax; j++) idx += u > cb.tf[idx];
  return idx;
}

}  // namespace

void kv_encode_nvfp4_row(const float* src, uint8_t* dst, int n, double scale) {
  const int nibble_bytes = (n + 1) / 2;
  std::memset(dst, 0, (size_t)nibble_bytes);
  for (int g = 0, lo = 0; lo < n; g++, lo += kNvfp4Group) {
    const int hi = std::min(n, lo + kNvfp4Group);
    float amax = 0.0f;
    for (int i = lo; i < hi; i++) {
      const float a = std::fabs(src[i]);
      if (a > amax) amax = a;  // NaN never compares greater
    }
    const uint8_t code = f32_to_fp8((float)((double)amax / (6.0 * scale)));
    dst[nibble_bytes + g] = code;
    const float d = nvfp4_group_scale(code, scale);
    if (!(d > 0.0f)) continue;  // all-zero group: the nibbles stay 0
    for (int i = lo; i < hi; i++) {
      const float x = src[i];
      if (std::isnan(x)) continue;
      dst[i >> 1] |= (uint8_t)(e2m1_code(x / d) << ((i & 1) * 4));
    }
  }
}

void kv_decode_nvfp4_row(const uint8_t* src, float* dst, int n, double scale) {
  const uint8_t* scales = src + (n + 1) / 2;
  for (int g = 0, lo = 0; lo < n; g++, lo += kNvfp4Group) {
    const float d = nvfp4_group_scale(scales[g], scale);
    const int hi = std::min(n, lo + kNvfp4Group);
    for (int i = lo; i < hi; i++) dst[i] = kE2m1[(src[i >> 1] >> ((i & 1) * 4)) & 15] * d;
  }
}

template <int B>
void kv_encode_turbo_row(const float* src, uint8_t* dst, int n, double) {
  const TurboCodebook<B>& cb = turbo_book<B>();
  // The rotated vector; grown once per thread (store_kv's pool threads), never in attention.
  thread_local std::vector<float> buf;
  if (buf.size() < (size_t)n) buf.resize((size_t)n);
  float* y = buf.data();
  // Sums run in four interleaved f64 lanes (i % 4), as the reference adds them: independent
  // chains instead of one long one.
  double ss[4] = {0.0, 0.0, 0.0, 0.0};
  for (int i = 0; i < n; i++) {
    float x = src[i];
    if (std::isnan(x)) x = 0.0f;
    else if (x > kTurboClamp) x = kTurboClamp;
    else if (x < -kTurboClamp) x = -kTurboClamp;
    y[i] = x;
    ss[i & 3] += (double)x * x;
  }
  uint8_t* q = dst + 2;
  const double norm = std::sqrt((ss[0] + ss[1]) + (ss[2] + ss[3]));
  if (norm == 0.0) {
    std::memset(dst, 0, turbo_row_bytes(B, n));
    return;
  }
  turbo_rotate(y, n);
  const float inv = (float)(std::sqrt((double)n) / norm);
  double num0 = 0.0, num1 = 0.0, num2 = 0.0, num3 = 0.0, den0 = 0.0, den1 = 0.0, den2 = 0.0, den3 = 0.0;
  // Indices gather in a register and leave 32 bits at a time (the stream is little-endian).
  uint64_t acc = 0;
  int bits = 0;
  auto put = [&](int idx) {
    acc |= (uint64_t)idx << bits;
    bits += B;
    if (bits >= 32) {
      const uint32_t w = (uint32_t)acc;
      std::memcpy(q, &w, 4);
      q += 4;
      acc >>= 32;
      bits -= 32;
    }
  };
  // One value into lane (num, den), in the reference's order.
  auto step = [&](int i, double& num, double& den) {
    const int idx = nearest_centroid<B>(y[i] * inv);
    const double c = cb.c64[idx];
    num += (double)y[i] * c;
    den += c * c;
    put(idx);
  };
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    step(i, num0, den0);
    step(i + 1, num1, den1);
    step(i + 2, num2, den2);
    step(i + 3, num3, den3);
  }
  if (i < n) step(i++, num0, den0);
  if (i < n) step(i++, num1, den1);
  if (i < n) step(i++, num2, den2);
  for (; bits > 0; bits -= 8, acc >>= 8) *q++ = (uint8_t)acc;
  uint16_t h = f32_to_fp16((float)(((num0 + num1) + (num2 + num3)) / ((den0 + den1) + (den2 + den3))));
  if ((h & 0x7fff) > kHalfMaxBits) h = kHalfMaxBits;  // num >= 0: the indices keep y's signs
  dst[0] = (uint8_t)h;
  dst[1] = (uint8_t)(h >> 8);
}

template <int B>
void kv_decode_turbo_row(const uint8_t* src, float* dst, int n, double) {
  const float* c = turbo_book<B>().c;
  const float a = turbo_row_scale(src);
  const uint8_t* q = src + 2;
  for (int i = 0; i < n; i++) dst[i] = c[turbo_index<B>(q, i)] * a;
}

template void kv_encode_turbo_row<2>(const float*, uint8_t*, int, double);
template void kv_encode_turbo_row<3>(const float*, uint8_t*, int, double);
template void kv_encode_turbo_row<4>(const float*, uint8_t*, int, double);
template void kv_encode_turbo_row<8>(const float*, uint8_t*, int, double);
template void kv_decode_turbo_row<2>(const uint8_t*, float*, int, double);
template void kv_decode_turbo_row<3>(const uint8_t*, float*, int, double);
template void kv_decode_turbo_row<4>(const uint8_t*, float*, int, double);
template void kv_decode_turbo_row<8>(const uint8_t*, float*, int, double);

}  // namespace svc
