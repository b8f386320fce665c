// The turbo KV dtypes' rotation and codebooks; the format is documented with its reference,
// src/kernels/kv-turbo.ts. Rows hold R·x: the decode slots give the rotated values ŷ, and attention
// rotates the queries once (q·k = Rq·Rk) and un-rotates each output once (attention.cc).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kv_turbo_tables.h"

namespace svc {

constexpr uint32_t kTurboSeed = 0x9e3779b9u;
constexpr uint16_t kHalfMaxBits = 0x7bff;  // 65504, where the row scale saturates
constexpr float kTurboClamp = 65504.0f;    // inputs are clamped to +-this before encoding

// D's sign for coordinate i: the top bit of lowbias32(i ^ seed) (turboSign in kv-turbo.ts).
constexpr bool turbo_negative(uint32_t i) {
  uint32_t h = i ^ kTurboSeed;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return (h >> 31) != 0;
}

// D as +-1.0f for the first coordinates, so rotations multiply instead of hashing.
constexpr int kTurboSignTable = 1024;
struct TurboSigns {
  float s[kTurboSignTable];
};
constexpr TurboSigns make_turbo_signs() {
  TurboSigns t{};
  for (int i = 0; i < kTurboSignTable; i++) t.s[i] = turbo_negative((uint32_t)i) ? -1.0f : 1.0f;
  return t;
}
inline constexpr TurboSigns kTurboSigns = make_turbo_signs();

// v[j] * D[j0 + j] for j < m (exact: a sign flip).
inline void turbo_apply_signs(float* v, int j0, int m) {
  if (j0 + m <= kTurboSignTable) {
    const float* s = kTurboSigns.s + j0;
    for (int j = 0; j < m; j++) v[j] *= s[j];
  } else {
    for (int j = 0; j < m; j++)
      if (turbo_negative((uint32_t)(j0 + j))) v[j] = -v[j];
  }
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
    turbo_apply_signs(v + c, c, m);
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
    for (int j = c; j < c + m; j++) v[j] *= r;
    turbo_apply_signs(v + c, c, m);
    c += m;
  }
}

// The encoder finds a value's centroid in constant time: u in [-8, 8) falls in one of 1024 cells of
// width 1/64 (u + 8 times 64, exact in f64 near every cell edge), each cell knows how many thresholds
// lie below it, and at most kTurboCellMax thresholds lie inside one, so that many comparisons finish
// the count. The result is the reference's binary search: how many thresholds u lies above.
constexpr int kTurboCells = 1024;
constexpr double kTurboCellsPerUnit = 64.0;
constexpr int kTurboCellMax = 1;

// A codebook: the centroids (f64 for the encoder's least-squares scale, f32 for decoding, padded to
// 16 for the one-register table lookups) and the decision thresholds: the midpoints t (f64, as the
// reference compares) and tf, the largest float <= each (then +inf), so that for any float u,
// u > tf[k] exactly when (double)u > t[k] and the encoder compares floats.
template <int B>
struct TurboCodebook {
  static constexpr int kLevels = 1 << B;
  double c64[kLevels];
  alignas(64) float c[kLevels < 16 ? 16 : kLevels];
  double t[kLevels - 1];
  float tf[kLevels];
  uint8_t cell_below[kTurboCells];  // thresholds < the cell's lower edge
  int cell_max;                     // most thresholds inside one cell
  bool edges_clear;                 // no threshold just below an edge (where u + 8 could round up)
};

constexpr float float_at_or_below(double t) {
  float f = (float)t;
  if ((double)f > t) f = std::bit_cast<float>(std::bit_cast<uint32_t>(f) + (f > 0 ? -1 : 1));
  return f;
}

template <int B>
constexpr TurboCodebook<B> make_turbo_codebook(const double (&src)[1 << B]) {
  TurboCodebook<B> cb{};
  for (int k = 0; k < (1 << B); k++) {
    cb.c64[k] = src[k];
    cb.c[k] = (float)src[k];
  }
  for (int k = 0; k + 1 < (1 << B); k++) {
    cb.t[k] = (src[k] + src[k + 1]) / 2;
    cb.tf[k] = float_at_or_below(cb.t[k]);
  }
  cb.tf[(1 << B) - 1] = std::numeric_limits<float>::infinity();
  cb.edges_clear = true;
  for (int c = 0; c < kTurboCells; c++) {
    const double lo = -8.0 + c / kTurboCellsPerUnit, hi = lo + 1 / kTurboCellsPerUnit;
    int below = 0, inside = 0;
    for (int k = 0; k + 1 < (1 << B); k++) {
      below += cb.t[k] < lo;
      inside += cb.t[k] >= lo && cb.t[k] < hi;
      if (cb.t[k] < hi && cb.t[k] > hi - 1e-9) cb.edges_clear = false;
    }
    cb.cell_below[c] = (uint8_t)below;
    if (inside > cb.cell_max) cb.cell_max = inside;
  }
  return cb;
}

inline constexpr TurboCodebook<2> kTurboBook2 = make_turbo_codebook<2>(kTurboCentroids2);
inline constexpr TurboCodebook<3> kTurboBook3 = make_turbo_codebook<3>(kTurboCentroids3);
inline constexpr TurboCodebook<4> kTurboBook4 = make_turbo_codebook<4>(kTurboCentroids4);
inline constexpr TurboCodebook<8> kTurboBook8 = make_turbo_codebook<8>(kTurboCentroids8);
static_assert(kTurboBook2.cell_max <= kTurboCellMax && kTurboBook3.cell_max <= kTurboCellMax &&
                  kTurboBook4.cell_max <= kTurboCellMax && kTurboBook8.cell_max <= kTurboCellMax,
              "a centroid search cell holds more thresholds than the encoder compares");
static_assert(kTurboBook2.edges_clear && kTurboBook3.edges_clear && kTurboBook4.edges_clear && kTurboBook8.edges_clear,
              "a threshold sits just below a search cell edge");

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
