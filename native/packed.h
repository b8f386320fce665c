// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q5_K and Q6_K weights repacked once at load time
// (ops.prepareWeight) into the layout the int8 kernels multiply fastest. (About) the same bytes per weight as the GGUF blocks.
//
// Rows go in groups of kPackRows = 16 (the last group padded with zero rows). A group is one
// contiguous run of bytes: first the quants of every 32-column block, then the block scales.
//
//   group g at  w + g * group_bytes(dt, nb)           nb = cols / 32
//   quants      block b at  + b * kQuantBytes
//   scales      + nb * kQuantBytes, block b at + b * 32: 16 IEEE halves, row j at + 2 * j
//               (types with a min: + b * 64, the halves d then the halves m)
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
//
// The other 32-column types keep the Q4_0x16 nibble lines (GGUF codes as they are) and add, per
// block:
//   Q5_0x16, Q5_1x16: after the four nibble lines (quants 320 bytes per block), one 64-byte line of
//                     fifth bits laid out as Q5_Kx16's below (byte n matches byte n of the nibble
//                     lines; bit p: the low-nibble element's, bit 4 + p: the high-nibble one's).
//   Q4_1x16, Q5_1x16: a second run of 16 halves after d, the per-row mins m (scales 64 bytes per
//                     block): w = d * q + m, and m * sum(x) comes from the activations' block sums.
//   IQ4_NLx16:        the nibbles index kValuesIq4nl; the kernels map them with one byte shuffle.
// Zero points (QuantActs::corr): Q5_0 16 (w = d * (q - 16)), IQ4_NL 128 (the VNNI kernels shuffle
// to kValuesIq4nl + 128, unsigned), none for the types with a min. Bytes per row equal the GGUF
// blocks' (22, 24, 20, 18).
//
// K-quants (Q4_Kx16, Q5_Kx16, Q6_Kx16): a group is nb / 8 super-group blocks (256 columns x 16 rows,
// kpack_sb_bytes each, at sb * kpack_sb_bytes). Within one, the 32-column sub-block s has its low 4
// bits of every quant at 256 * s in the Q4_0x16 nibble order above (unsigned codes, no zero point),
// and the remaining bits, if any, at 2048 + hbytes * s as 64-byte lines whose byte n matches byte n
// of the nibble lines p = 0..3:
//   Q5_K (hbytes 64):  one line; bit p = fifth bit of the low-nibble element (column 4p + t), bit
//                      4 + p = fifth bit of the high-nibble one (column 16 + 4p + t).
//   Q6_K (hbytes 128): two lines, for the low- and the high-nibble elements; bits 2p, 2p + 1 = the
//                      two high bits of line p's element.
// So one shift and one AND move a line's bits for vector p into place (bit 4 / bits 4-5).
// Then, at kpack_scales(dt), per-row bytes in 16-byte runs (row j at + j):
//   Q4_K / Q5_K: 8 runs of 6-bit sub-block scales, 8 runs of mins, then 16 halves d, 16 halves dmin.
//   Q6_K:        16 runs of signed 16-column scales (run 2s: columns 0..15 of s, 2s + 1: 16..31),
//                then 16 halves d.
// w = d * sc * q - dmin * m (Q6_K: d * sc * (q - 32)); bytes per row equal to the GGUF blocks' plus
// 4 (Q4_K / Q5_K: 148 / 180 vs 144 / 176), or exactly equal (Q6_K: 210), which matters because
// decode streams every weight byte once per token. The scales, unpacked to bytes, cost the kernels
// one widening load per 16 rows instead of ggml's bit juggling per row and block.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant.h"

namespace svc {

// Version of the packed layouts below: the packed-weights cache (src/model/loaders/packed-cache.ts)
// keeps matrices packed by an earlier run and takes them back only under the same version, so any
// change to the bytes pack_weight writes for some dtype must bump it.
constexpr int kPackFormatVersion = 1;

constexpr int kPackRows = 16;
constexpr int kQ8PackQuantBytes = 512;  // 16 rows x 32 bytes
constexpr int kQ4PackQuantBytes = 256;  // 16 rows x 16 bytes
constexpr int kPackScaleBytes = 32;     // 16 halves
constexpr int kQ8PackZero = 128;
constexpr int kQ4PackZero = 8;
constexpr int kQ5PackZero = 16;      // Q5_0x16
constexpr int kIq4nlPackZero = 128;  // IQ4_NLx16 (VNNI: table values + 128)

// Layout constants of the packed dtypes (their traits rows in dtypes.cc say which dtype each is made
// from; these serve the kernels, as compile-time constants).
constexpr int packed_zero(int dt) { return dt == kQ8_0x16 ? kQ8PackZero : kQ4PackZero; }
constexpr bool pack_has_high(int dt) { return dt == kQ5_0x16 || dt == kQ5_1x16; }
constexpr bool pack_has_min(int dt) { return dt == kQ4_1x16 || dt == kQ5_1x16; }
constexpr int pack_quant_bytes(int dt) {
  return dt == kQ8_0x16 ? kQ8PackQuantBytes : kQ4PackQuantBytes + (pack_has_high(dt) ? 64 : 0);
}
// Per block: 16 halves d, then (types with a min) 16 halves m.
constexpr int pack_scale_bytes(int dt) { return pack_has_min(dt) ? 2 * kPackScaleBytes : kPackScaleBytes; }
constexpr bool is_kpacked(int dt) { return dt == kQ4_Kx16 || dt == kQ5_Kx16 || dt == kQ6_Kx16; }
constexpr int kpack_high_bytes(int dt) { return dt == kQ4_Kx16 ? 0 : dt == kQ5_Kx16 ? 64 : 128; }
constexpr int kpack_scales(int dt) { return 2048 + 8 * kpack_high_bytes(dt); }
constexpr int kpack_sb_bytes(int dt) { return kpack_scales(dt) + (dt == kQ6_Kx16 ? 256 + 32 : 256 + 64); }
constexpr size_t group_bytes(int dt, int nb) {
  return is_kpacked(dt) ? (size_t)(nb / 8) * (size_t)kpack_sb_bytes(dt) : (size_t)nb * (size_t)(pack_quant_bytes(dt) + pack_scale_bytes(dt));
}
static_assert(group_bytes(kQ5_0x16, 1) == 16 * 22 && group_bytes(kQ5_1x16, 1) == 16 * 24 && group_bytes(kQ4_1x16, 1) == 16 * 20 &&
                  group_bytes(kIQ4_NLx16, 1) == 16 * 18,
              "32-column packed groups keep the GGUF bytes per row");
static_assert(kpack_sb_bytes(kQ4_Kx16) == 2368 && kpack_sb_bytes(kQ5_Kx16) == 2880 && kpack_sb_bytes(kQ6_Kx16) == 3360,
              "K-quant super-group sizes");
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

// Repacks a [rows, cols] matrix of a packable dtype (GGUF blocks, rows back to back) into `dst`
// (packed_bytes(packed_dt, rows, cols) bytes). Work is split across the kernel pool.
void pack_weight(int packed_dt, int rows, int cols, const uint8_t* src, uint8_t* dst);

// Decodes row r of a packed matrix to f32, bit-identical to dequantize_row on the source blocks.
void dequantize_packed_row(int packed_dt, const uint8_t* w, int cols, int r, float* dst);

}  // namespace svc
