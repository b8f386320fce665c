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

// Nearest E2M1 code of q (not NaN), ties to the even magnitude code, saturating at +-6.
uint8_t e2m1_code(float q) {
  const float a = std::fabs(q);
  int m = 0;
  for (int k = 0; k < 7; k++) {
    const float mid = (kE2m1[k] + kE2m1[k + 1]) / 2;
    if (a > mid || (a == mid && (k & 1))) m = k + 1;
  }
  return (uint8_t)((q < 0.0f ? 8 : 0) | m);
}

// How many thresholds u lies above (a tie goes to the lower index).
template <int B>
int nearest_centroid(double u) {
  const double* t = turbo_book<B>().t;
  int lo = 0, hi = (1 << B) - 1;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (u > t[mid]) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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
  double ss = 0.0;
  for (int i = 0; i < n; i++) {
    float x = src[i];
    if (std::isnan(x)) x = 0.0f;
    else if (x > kTurboClamp) x = kTurboClamp;
    else if (x < -kTurboClamp) x = -kTurboClamp;
    y[i] = x;
    ss += (double)x * x;
  }
  uint8_t* q = dst + 2;
  std::memset(q, 0, ((size_t)n * B + 7) / 8);
  const double norm = std::sqrt(ss);
  if (norm == 0.0) {
    dst[0] = dst[1] = 0;
    return;
  }
  turbo_rotate(y, n);
  const float inv = (float)(std::sqrt((double)n) / norm);
  double num = 0.0, den = 0.0;
  for (int i = 0; i < n; i++) {
    const int idx = nearest_centroid<B>((double)(y[i] * inv));
    const double c = cb.c64[idx];
    num += (double)y[i] * c;
    den += c * c;
    const int bit = i * B;
    const unsigned v = (unsigned)idx << (bit & 7);
    q[bit >> 3] |= (uint8_t)v;
    if (v > 0xff) q[(bit >> 3) + 1] |= (uint8_t)(v >> 8);
  }
  uint16_t h = f32_to_fp16((float)(num / den));
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
