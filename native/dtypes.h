// What each weight and KV-cache dtype is, one row per dtype with named fields (as ggml's
// type_traits): block layout, the row decoder, and which `Kernels` slot multiplies or codes it.
// Op drivers reach a dtype only through its row, once per op, so adding a dtype is a row here, its
// codes in quant.h, its slot in kernels.h (filled by name in each kernels_*.cc table) and its row in
// src/kernels/dtypes.ts. The rows are checked at compile time to sit at their dtype's code.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels.h"
#include "quant.h"

namespace svc {

// Decodes k elements (whole blocks) of one row starting at src into y.
using DequantRowFn = void (*)(const uint8_t* src, float* y, int64_t k);

struct DTypeTraits {
  DType dtype;
  const char* name;
  int block_elements;  // elements per block (plain floats: 1)
  int block_bytes;     // bytes per block (packed dtypes: their source's; packed.h pads rows to groups)
  // One row -> f32 (embedding lookups, and the matmul fallback below). Null for packed dtypes,
  // whose rows decode through dequantize_packed_row.
  DequantRowFn to_float;
  // Matmul: at most one slot kind is set. gemm_float multiplies f32 activations; gemm_quant
  // multiplies activations quantized to int8 blocks (with the per-16 sums of QuantActs::s16 when
  // act_sums). A dtype with neither, or whose slot a path leaves null, is decoded row by row with
  // to_float and multiplied with gemm_f32.
  GemmFloatFn Kernels::*gemm_float;
  GemmQuantFn Kernels::*gemm_quant;
  GemmPackedFn Kernels::*gemm_packed;
  bool act_sums;
  // The packed dtype prepareWeight makes from this one (-1: none); for a packed dtype, the dtype it
  // is made from (-1 for the others) and the zero point of its stored quants (packed.h).
  int packed;
  int packed_from;
  int pack_zero;
  // The activations' block scales are rounded to f16 before the int8 products, as llama.cpp's Q8_0 /
  // Q8_1 blocks store them: the 32-element types then reproduce llama.cpp's rounding (its greedy
  // continuations on the quant-zoo files). False (the K-quants, whose llama.cpp activations are
  // Q8_K blocks of 256 with f32 scales): scales stay f32. Rows may leave it out (false).
  bool act_f16_scale;
};

struct KvDTypeTraits {
  KvDType dtype;
  const char* name;
  // Bytes of one row: a head vector of hd values. A layer side is [blocks][blockSize][kvHeads] rows.
  size_t (*row_bytes)(int hd);
  // A side's storage starts at a multiple of this (f32 / bf16 rows are read in place as such).
  int align;
  // Stored values are divided by the layer's kScale / vScale, which must then be > 0.
  bool scaled;
  // Rows decode to R·x (kv_turbo.h): attention rotates the queries when K is rotated and
  // un-rotates the outputs when V is, instead of un-rotating every row.
  bool rotated;
  // Each value decodes on its own (no per-row scale or rotation), so a run of consecutive rows
  // decodes in one call: attention decodes a whole block's heads at once.
  bool elementwise;
  KvEncodeFn Kernels::*encode;
  // Null: rows are read in place as f32 (attention decodes nothing).
  KvDecodeFn Kernels::*decode;
};

extern const DTypeTraits kDTypeTraits[kDTypeCount];
extern const KvDTypeTraits kKvDTypeTraits[kKvDTypeCount];

// dt / kv must be valid codes (the bindings check them against the counts).
inline const DTypeTraits& dtype_traits(int dt) { return kDTypeTraits[dt]; }
inline const KvDTypeTraits& kv_dtype_traits(int kv) { return kKvDTypeTraits[kv]; }

inline bool is_packed(int dt) { return kDTypeTraits[dt].packed_from >= 0; }

// Bytes of one row of `cols` elements, or 0 when cols does not fill whole blocks.
inline size_t row_bytes(int dt, int64_t cols) {
  const DTypeTraits& t = kDTypeTraits[dt];
  if (cols % t.block_elements != 0) return 0;
  return (size_t)(cols / t.block_elements) * (size_t)t.block_bytes;
}

}  // namespace svc
