// The turbo KV dtypes' rotation and codebooks; the format is documented with its reference,
// src/kernels/kv-turbo.ts. Rows hold R·x: the decode slots give the rotated values ŷ, and attention
// rotates the queries once (q·k = Rq·Rk) and un-rotates each output once (attention.cc).
#pragma once
#include <cmath>
#include <cstdint>

#include "kv_turbo_tables.h"

namespace svc {

constexpr uint32_t kTurboSeed = 0x9e3779b9u;
constexpr uint16_t kHalfMaxBits = 0x7bff;  // 65504, where the row scale saturates
constexpr float kTurboClamp = 65504.0f;    // inputs are clamped to +-this before encoding

// D's sign for coordinate i: the top bit of lowbias32(i ^ seed) (turboSign in kv-turbo.ts).
inline bool turbo_negative(uint32_t i) {
  uint32_t h = i ^ kTurboSeed;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return (h >> 31) != 0;
}

// Largest power of two <= n (n >= 1): the chunk starting where n coordinates remain.
inline int turbo_chunk(int n) { return 1 << (31 - __builtin_clz((unsigned)n)); }

// Unnormalized Walsh-Hadamard transform of v[0, m) in place; the butterfly order is the reference's,
// and it only adds, so every path gives the same bits.
inline void fwht(float* v, int m) {
  for (int len = 1; len < m; len <<= 1)
    for (int i = 0; i < m; i += 2 * len)
      for (int j = i; j < i + len; j++) {
        const float a = v[j], b = v[j + len];
        v[j] = a + b;
        v[j + len] = a - b;
      }
}

inline float turbo_chunk_scale(int m) { return (float)(1.0 / std::sqrt((double)m)); }

// y = R x in place: per power-of-two chunk (largest first), H D x / sqrt(m).
inline void turbo_rotate(float* v, int n) {
  for (int c = 0; c < n;) {
    const int m = turbo_chunk(n - c);
    for (int j = c; j < c + m; j++)
      if (turbo_negative((uint32_t)j)) v[j] = -v[j];
    fwht(v + c, m);
    const float r = turbo_chunk_scale(m);
    for (int j = c; j < c + m; j++) v[j] *= r;
    c += m;
  }
}

// x = R^-1 y = R^T y in place.
inline void turbo_unrotate(float* v, int n) {
  for (int c = 0; c < n;) {
    const int m = turbo_chunk(n - c);
    fwht(v + c, m);
    const float r = turbo_chunk_scale(m);
    for (int j = c; j < c + m; j++) {
      v[j] *= r;
      if (turbo_negative((uint32_t)j)) v[j] = -v[j];
    }
    c += m;
  }
}

// A codebook: the centroids (f64 for the encoder's least-squares scale, f32 for decoding, padded to
// 16 for the one-register table lookups) and the decision thresholds (midpoints, f64).
template <int B>
struct TurboCodebook {
  static constexpr int kLevels = 1 << B;
  double c64[kLevels];
  alignas(64) float c[kLevels < 16 ? 16 : kLevels];
  double t[kLevels - 1];
};

template <int B>
constexpr TurboCodebook<B> make_turbo_codebook(const double (&src)[1 << B]) {
  TurboCodebook<B> cb{};
  for (int k = 0; k < (1 << B); k++) {
    cb.c64[k] = src[k];
    cb.c[k] = (float)src[k];
  }
  for (int k = 0; k + 1 < (1 << B); k++) cb.t[k] = (src[k] + src[k + 1]) / 2;
  return cb;
}

inline constexpr TurboCodebook<2> kTurboBook2 = make_turbo_codebook<2>(kTurboCentroids2);
inline constexpr TurboCodebook<3> kTurboBook3 = make_turbo_codebook<3>(kTurboCentroids3);
inline constexpr TurboCodebook<4> kTurboBook4 = make_turbo_codebook<4>(kTurboCentroids4);
inline constexpr TurboCodebook<8> kTurboBook8 = make_turbo_codebook<8>(kTurboCentroids8);

template <int B>
constexpr const TurboCodebook<B>& turbo_book() {
  if constexpr (B == 2) return kTurboBook2;
  else if constexpr (B == 3) return kTurboBook3;
  else if constexpr (B == 4) return kTurboBook4;
  else return kTurboBook8;
}

// Row layout: f16 scale, then the B-bit indices as a little-endian bit stream.
constexpr size_t turbo_row_bytes(int bits, int hd) { return 2 + ((size_t)hd * bits + 7) / 8; }

}  // namespace svc
