// Repacking Q8_0 / Q4_0 weights into the 16-row groups of packed.h, and decoding packed rows back
// (embedding lookups read the same packed table that lm_head multiplies when embeddings are tied).
#include "packed.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "dtypes.h"
#include "threadpool.h"

namespace svc {
namespace {

inline uint16_t half_at(const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return h; }
inline uint32_t u32_at(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }

// One group: rows [16g, 16g + 16) of src (rows past `rows` are zero: scale 0, quants at the zero point).
// Quads (Q8_0: 4 columns; Q4_0: 4 bytes of nibbles) move as 32-bit words.
void pack_group(int dt, int rows, int nb, const uint8_t* src, size_t src_stride, int g, uint8_t* dst) {
  const int qbytes = pack_quant_bytes(dt);
  const bool q8 = dt == kQ8_0x16;
  const int quads = q8 ? 8 : 4;
  const size_t sbb = q8 ? sizeof(block_q8_0) : sizeof(block_q4_0);
  // Q8_0 stores w + 128 (flip each byte's sign bit); Q4_0 nibbles are copied as they are.
  const uint32_t flip = q8 ? 0x80808080u : 0u;
  const uint32_t pad = q8 ? 0x80808080u : 0x88888888u;
  uint8_t* scales = dst + (size_t)nb * qbytes;
  for (int j = 0; j < kPackRows; j++) {
    const int r = g * kPackRows + j;
    const uint8_t* row = r < rows ? src + (size_t)r * src_stride : nullptr;
    for (int b = 0; b < nb; b++) {
      uint8_t* q = dst + (size_t)b * qbytes + 4 * j;
      uint16_t d = 0;
      if (row) {
        const uint8_t* blk = row + b * sbb;
        std::memcpy(&d, blk, 2);
        // Quad c of the block (GGUF bytes 4c..4c+3) goes to c * 64 + j * 4.
        for (int c = 0; c < quads; c++) {
          const uint32_t v = u32_at(blk + 2 + 4 * c) ^ flip;
          std::memcpy(q + c * 64, &v, 4);
        }
      } else {
        for (int c = 0; c < quads; c++) std::memcpy(q + c * 64, &pad, 4);
      }
      std::memcpy(scales + (size_t)b * kPackScaleBytes + 2 * j, &d, 2);
    }
  }
}

struct Arena {
  uint8_t* base;
  size_t cap, used;
  int live;  // matrices allocated here and not yet freed
};

constexpr size_t kHugePage = size_t(1) << 21;
constexpr size_t kArenaBytes = size_t(64) << 20;

std::mutex& arena_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
Arena* g_open = nullptr;  // the arena new matrices go to (guarded by arena_mutex)

Arena* new_arena(size_t cap) {
  void* p = nullptr;
  if (posix_memalign(&p, kHugePage, cap) != 0) return nullptr;
  madvise(p, cap, MADV_HUGEPAGE);  // advisory: without THP the pages are simply small
  return new Arena{static_cast<uint8_t*>(p), cap, 0, 0};
}

}  // namespace

uint8_t* packed_alloc(size_t bytes, void** arena) {
  bytes = (bytes + 63) & ~size_t(63);
  std::lock_guard<std::mutex> lk(arena_mutex());
  // Big matrices get an arena of their own (rounded to 4 KiB: its tail stays in small pages).
  if (bytes > kArenaBytes / 4) {
    Arena* a = new_arena((bytes + 4095) & ~size_t(4095));
    if (!a) return nullptr;
    a->used = bytes;
    a->live = 1;
    *arena = a;
    return a->base;
  }
  if (!g_open || g_open->cap - g_open->used < bytes) {
    Arena* a = new_arena(kArenaBytes);
    if (!a) return nullptr;
    // The previous arena is freed by its last matrix from now on.
    if (g_open && g_open->live == 0) {
      std::free(g_open->base);
      delete g_open;
    }
    g_open = a;
  }
  uint8_t* p = g_open->base + g_open->used;
  g_open->used += bytes;
  g_open->live++;
  *arena = g_open;
  return p;
}

void packed_free(void* arena) {
  Arena* a = static_cast<Arena*>(arena);
  std::lock_guard<std::mutex> lk(arena_mutex());
  if (--a->live > 0 || a == g_open) return;
  std::free(a->base);
  delete a;
}

void pack_weight(int dt, int rows, int cols, const uint8_t* src, uint8_t* dst) {
  const int nb = cols / 32;
  const size_t stride = row_bytes(dtype_traits(dt).packed_from, cols);
  const size_t gb = group_bytes(dt, nb);
  parallel_for(pack_groups(rows), 16, [&](int64_t g0, int64_t g1, int) {
    for (int64_t g = g0; g < g1; g++) pack_group(dt, rows, nb, src, stride, (int)g, dst + (size_t)g * gb);
  });
}

void dequantize_packed_row(int dt, const uint8_t* w, int cols, int r, float* dst) {
  const int nb = cols / 32, qbytes = pack_quant_bytes(dt);
  const int j = r % kPackRows;
  const uint8_t* g = w + (size_t)(r / kPackRows) * group_bytes(dt, nb);
  const uint8_t* scales = g + (size_t)nb * qbytes;
  for (int b = 0; b < nb; b++, dst += 32) {
    const float d = fp16_to_f32(half_at(scales + (size_t)b * kPackScaleBytes + 2 * j));
    const uint8_t* q = g + (size_t)b * qbytes + 4 * j;
    if (dt == kQ8_0x16) {
      for (int c = 0; c < 8; c++)
        for (int t = 0; t < 4; t++) dst[4 * c + t] = d * (float)((int)q[c * 64 + t] - kQ8PackZero);
    } else {
      for (int p = 0; p < 4; p++)
        for (int t = 0; t < 4; t++) {
          const uint8_t v = q[p * 64 + t];
          dst[4 * p + t] = d * (float)((v & 0xf) - kQ4PackZero);
          dst[16 + 4 * p + t] = d * (float)((v >> 4) - kQ4PackZero);
        }
    }
  }
}

}  // namespace svc
