// Q8_0 and Q4_0 weights repacked once at load time (ops.prepareWeight) into the layout the int8
// kernels multiply fastest. Same bytes per weight as the GGUF blocks; only the order changes.
//
// Rows go in groups of kPackRows = 16 (the last group padded with zero rows). A group is one
// contiguous run of bytes: first the quants of every 32-column block, then the block scales.
//
//   group g at  w + g * group_bytes(dt, nb)           nb = cols / 32
//   quants      block b at  + b * kQuantBytes
//   scales      + nb * kQuantBytes, block b at + b * 32: 16 IEEE halves, row j at + 2 * j
//
// Q8_0x16 quants (512 bytes per block): for quad q = 0..7 (columns 4q..4q+3 of the block) and row
// j = 0..15, 4 bytes at q * 64 + j * 4 holding w + 128 as unsigned bytes. One 64-byte line is then
// one zmm whose int32 lane j is row j's next four weights: vpdpbusd against four activation bytes
// broadcast to every lane gives 16 rows' partial dot products at once, and a 512-byte block is laid
// out as an AMX B tile (8 rows of 64 bytes: K/4 x 16 columns x 4; the AMX path copies it as signed
// bytes).
//
// Q4_0x16 quants (256 bytes per block): for p = 0..3 and row j, 4 bytes at p * 64 + j * 4; byte t
// holds column 4p + t in its low nibble and column 16 + 4p + t in its high nibble (the GGUF nibble
// order, so one 64-byte line unpacks to quads p and p + 4 with one AND and one shift). Nibbles are
// the unsigned GGUF codes q (value q - 8).
//
// Both store weights with a zero point z (128 for Q8_0, 8 for Q4_0): dot(x, w) = dot(x, w + z) - z *
// sum(x). The activation quantizer hands out -z * sum(x quants) per block (QuantActs::corr), which
// seeds the integer accumulator, so the correction costs no instruction in the inner loop.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant.h"

namespace svc {

constexpr int kPackRows = 16;
constexpr int kQ8PackQuantBytes = 512;  // 16 rows x 32 bytes
constexpr int kQ4PackQuantBytes = 256;  // 16 rows x 16 bytes
constexpr int kPackScaleBytes = 32;     // 16 halves
constexpr int kQ8PackZero = 128;
constexpr int kQ4PackZero = 8;

// Layout constants of the two packed dtypes (their traits rows in dtypes.cc say which dtype each is
// made from; these serve the kernels, as compile-time constants).
constexpr int packed_zero(int dt) { return dt == kQ8_0x16 ? kQ8PackZero : kQ4PackZero; }
constexpr int pack_quant_bytes(int dt) { return dt == kQ8_0x16 ? kQ8PackQuantBytes : kQ4PackQuantBytes; }
constexpr size_t group_bytes(int dt, int nb) { return (size_t)nb * (size_t)(pack_quant_bytes(dt) + kPackScaleBytes); }
inline int pack_groups(int rows) { return (rows + kPackRows - 1) / kPackRows; }
inline size_t packed_bytes(int dt, int rows, int cols) { return (size_t)pack_groups(rows) * group_bytes(dt, cols / 32); }

// Per-thread scratch a packed GEMM kernel may use (the AMX path: four C tiles and one group's
// blocks as signed bytes).
inline size_t packed_scratch_bytes(int cols) { return 4096 + (size_t)(cols / 32) * 512; }

// Memory for packed matrices: 64-byte aligned blocks carved one after another out of 2 MiB-aligned
// arenas with transparent huge pages requested (decode streams every weight once per token, and
// huge pages spare it a TLB miss per 4 KiB). Matrices share arenas, so a 1.1 MiB matrix does not
// hold a 2 MiB page to itself; an arena is freed when its last matrix is. Thread-safe. Returns
// null when out of memory; `arena` receives the handle packed_free takes.
uint8_t* packed_alloc(size_t bytes, void** arena);
void packed_free(void* arena);

// Repacks a [rows, cols] Q8_0 / Q4_0 matrix (GGUF blocks, rows back to back) into `dst`
// (packed_bytes(packed_dt, rows, cols) bytes). Work is split across the kernel pool.
void pack_weight(int packed_dt, int rows, int cols, const uint8_t* src, uint8_t* dst);

// Decodes row r of a packed matrix to f32, bit-identical to dequantize_row on the source blocks.
void dequantize_packed_row(int packed_dt, const uint8_t* w, int cols, int r, float* dst);

}  // namespace svc
