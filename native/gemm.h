// One weight dtype's matmul, as the op drivers share it (matmul.cc, moe.cc): which kernel kind
// multiplies the dtype on the current path (looked up once per op from its traits row), how its
// activations are quantized, how many activation rows a task takes, and one task's block of the
// product. Keeping this in one place is what makes a MoE expert's rows come out bit for bit as
// matmul() would give them: same kernels, same activation rounding, same block arithmetic.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "dequant.h"
#include "dtypes.h"
#include "kernels.h"
#include "packed.h"
#include "quant.h"
#include "threadpool.h"

namespace svc {

inline size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

constexpr int kKQuantRowTile = 4;      // rows the decode fallback turns into f32 per GEMM call
constexpr double kSerialMacs = 32768.0;  // a product smaller than this runs on the caller: waking the pool costs more

enum class GemmKind {
  Packed,  // packed.h weights, int8 activations (the packed kernel slots)
  Quant,   // GGUF block rows, int8 activations
  Float,   // f32 / f16 / bf16 rows, f32 activations
  Decode,  // no kernel on this path: rows decoded to f32 in per-thread scratch, f32 activations
};

// How int8 activations are made for a dtype (its traits row): s16 sums, the packed zero point's
// per-block correction, block scales rounded to f16.
struct ActFormat {
  bool sums = false;
  int zero = 0;
  bool f16_scale = false;
  bool operator==(const ActFormat& o) const { return sums == o.sums && zero == o.zero && f16_scale == o.f16_scale; }
};

struct WeightGemm {
  int dt = 0;
  GemmKind kind = GemmKind::Decode;
  GemmPackedFn packed = nullptr;
  GemmQuantFn quant = nullptr;
  GemmFloatFn flt = nullptr;
  ActFormat act;
  bool int8() const { return kind == GemmKind::Packed || kind == GemmKind::Quant; }
};

// The kernel that multiplies dtype `dt` on the path of table K (a packed or quant slot the path
// leaves null falls back to decoding, as the traits rows say).
inline WeightGemm weight_gemm(const Kernels& K, int dt) {
  const DTypeTraits& T = dtype_traits(dt);
  WeightGemm g;
  g.dt = dt;
  if (T.gemm_packed && K.*T.gemm_packed) {
    g.kind = GemmKind::Packed;
    g.packed = K.*T.gemm_packed;
    g.act = ActFormat{T.act_sums, T.pack_zero, T.act_f16_scale};
  } else if (T.gemm_quant && K.*T.gemm_quant) {
    g.kind = GemmKind::Quant;
    g.quant = K.*T.gemm_quant;
    g.act = ActFormat{T.act_sums, 0, T.act_f16_scale};
  } else if (T.gemm_float && K.*T.gemm_float) {
    g.kind = GemmKind::Float;
    g.flt = K.*T.gemm_float;
  } else {
    g.kind = GemmKind::Decode;
    g.flt = K.gemm_f32;
  }
  return g;
}

// Activation rows per task: one chunk stays within ~512 KB (L2) so it is reused across every weight
// row that streams past it. Packed weights take multiples of 16 rows when there are that many, so
// the AMX path fills whole tiles.
inline int x_chunk_rows(size_t xrow_bytes) {
  return (int)std::clamp<size_t>((512 * 1024 / std::max<size_t>(xrow_bytes, 1)) & ~(size_t)3, 4, 64);
}
inline int x_chunk_packed(int cols) { return (int)std::clamp<size_t>((512 * 1024 / (size_t)cols) & ~(size_t)15, 16, 128); }
inline int x_chunk(const WeightGemm& g, int cols) {
  switch (g.kind) {
    case GemmKind::Packed: return x_chunk_packed(cols);
    case GemmKind::Quant: return x_chunk_rows((size_t)cols);
    default: return x_chunk_rows((size_t)cols * sizeof(float));
  }
}

// n rows of `cols` int8 activations in one buffer, laid out as QuantActs reads them: the quants,
// then the block scales, then (when the format asks) the s16 sums and the packed corrections, each
// run 64-byte aligned.
struct QuantRows {
  int8_t* qs = nullptr;
  float* d = nullptr;
  float* s16 = nullptr;
  int32_t* corr = nullptr;
  int cols = 0;

  static size_t bytes(size_t n, int cols, const ActFormat& f) {
    const size_t nb = (size_t)cols / 32, ng = (size_t)cols / 16;
    return round_up(n * cols, 64) + round_up(n * nb * sizeof(float), 64) + (f.sums ? round_up(n * ng * sizeof(float), 64) : 0) +
           (f.zero > 0 ? round_up(n * nb * sizeof(int32_t), 64) : 0);
  }

  static QuantRows carve(void* buf, size_t n, int cols, const ActFormat& f) {
    uint8_t* p = static_cast<uint8_t*>(buf);
    const size_t nb = (size_t)cols / 32, ng = (size_t)cols / 16;
    QuantRows q;
    q.cols = cols;
    q.qs = reinterpret_cast<int8_t*>(p);
    p += round_up(n * cols, 64);
    q.d = reinterpret_cast<float*>(p);
    p += round_up(n * nb * sizeof(float), 64);
    if (f.sums) {
      q.s16 = reinterpret_cast<float*>(p);
      p += round_up(n * ng * sizeof(float), 64);
    }
    if (f.zero > 0) q.corr = reinterpret_cast<int32_t*>(p);
    return q;
  }

  // The kernels' view from row i on.
  QuantActs at(size_t i) const {
    const size_t nb = (size_t)cols / 32;
    return QuantActs{qs + i * cols, d + i * nb, s16 ? s16 + i * (cols / 16) : nullptr, corr ? corr + i * nb : nullptr, cols};
  }

  // Quantizes x[0, len) into row i, columns [c0, c0 + len) (both multiples of 32: every block is
  // quantized on its own, so a row done in pieces equals the row done whole).
  void quantize(const Kernels& K, const float* x, size_t i, int c0, int len, const ActFormat& f) const {
    const size_t nb = (size_t)cols / 32, b0 = i * nb + (size_t)c0 / 32;
    float* ds = d + b0;
    float* sums = s16 ? s16 + 2 * b0 : nullptr;
    K.quantize_row_q8(x, len, qs + i * cols + c0, ds, sums, corr ? corr + b0 : nullptr, f.zero);
    if (!f.f16_scale) return;
    for (int j = 0; j < len / 32; j++) {
      const float d32 = ds[j], d16 = fp16_to_f32(f32_to_fp16(d32));
      ds[j] = d16;
      // The sums follow the new scale (d32 * sum was rounded once, so the integer sum comes back exactly).
      if (sums && d32 != 0.0f)
        for (int h = 2 * j; h < 2 * j + 2; h++) sums[h] = d16 * std::nearbyint(sums[h] / d32);
    }
  }
};

// The activations of one GEMM call: int8 rows (the int8 kinds) or f32 rows ldx floats apart.
struct GemmActs {
  QuantActs q{nullptr, nullptr, nullptr, nullptr, 0};
  const float* x = nullptr;
  size_t ldx = 0;
};

// y[i * ldy + (r - r0)] = dot(activation row i, weight row r) for i < n and r in [r0, r1) of the
// [rows, cols] matrix w, through g's kernel. Packed weights: r0 a multiple of 16, r1 too or equal to
// rows. The weights are rebased to row r0, so y holds just the block. Thread ith's scratch serves
// the packed kernels and the decode tile.
inline void gemm_block(const Kernels& K, const WeightGemm& g, int n, const GemmActs& a, const uint8_t* w, int rows, int cols,
                       int r0, int r1, float* y, size_t ldy, int ith) {
  ThreadPool& pool = ThreadPool::instance();
  switch (g.kind) {
    case GemmKind::Packed: {
      const int g0 = r0 / kPackRows, g1 = (r1 + kPackRows - 1) / kPackRows;
      uint8_t* scratch = static_cast<uint8_t*>(pool.thread_scratch(ith, packed_scratch_bytes(cols)));
      g.packed(n, a.q, w + (size_t)g0 * group_bytes(g.dt, cols / 32), 0, g1 - g0, r1 - r0, y, ldy, scratch);
      return;
    }
    case GemmKind::Quant: {
      const size_t wstride = row_bytes(g.dt, cols);
      g.quant(n, a.q, w + (size_t)r0 * wstride, wstride, 0, r1 - r0, y, ldy);
      return;
    }
    case GemmKind::Float: {
      const size_t wstride = row_bytes(g.dt, cols);
      g.flt(n, cols, a.x, a.ldx, w + (size_t)r0 * wstride, wstride, 0, r1 - r0, y, ldy);
      return;
    }
    case GemmKind::Decode: {
      // kKQuantRowTile rows at a time into this thread's scratch, multiplied as f32 (the
      // activations stay exact).
      const bool packed = is_packed(g.dt);
      const DTypeTraits& T = dtype_traits(g.dt);
      const size_t wstride = row_bytes(g.dt, cols);
      float* tile = static_cast<float*>(pool.thread_scratch(ith, (size_t)kKQuantRowTile * cols * sizeof(float)));
      for (int r = r0; r < r1; r += kKQuantRowTile) {
        const int nr = std::min(kKQuantRowTile, r1 - r);
        for (int j = 0; j < nr; j++) {
          if (packed) dequantize_packed_row(g.dt, w, cols, r + j, tile + (size_t)j * cols);
          else T.to_float(w + (size_t)(r + j) * wstride, tile + (size_t)j * cols, cols);
        }
        K.gemm_f32(n, cols, a.x, a.ldx, reinterpret_cast<const uint8_t*>(tile), (size_t)cols * sizeof(float), 0, nr, y + (r - r0), ldy);
      }
      return;
    }
  }
}

}  // namespace svc
