// Repacking Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / K-quant weights into the 16-row groups of
// packed.h, and decoding packed rows back (embedding lookups read the same packed table that lm_head
// multiplies when embeddings are tied).
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

// One group of Q5_0 / Q5_1 / Q4_1 / IQ4_NL (packed.h). Rows past `rows` are all zero (d = m = 0).
void pack_group_b32(int dt, int rows, int nb, const uint8_t* src, size_t src_stride, int g, uint8_t* dst) {
  const int qbytes = pack_quant_bytes(dt), sbytes = pack_scale_bytes(dt);
  const bool high = pack_has_high(dt), min = pack_has_min(dt);
  // GGUF block: d, then m (types with a min), then qh (Q5), then 16 bytes of nibbles.
  const int qh_at = min ? 4 : 2, qs_at = qh_at + (high ? 4 : 0);
  const size_t sbb = (size_t)qs_at + 16;
  uint8_t* scales = dst + (size_t)nb * qbytes;
  std::memset(dst, 0, (size_t)nb * (qbytes + sbytes));
  for (int j = 0; j < kPackRows; j++) {
    const int r = g * kPackRows + j;
    if (r >= rows) break;
    const uint8_t* row = src + (size_t)r * src_stride;
    for (int b = 0; b < nb; b++) {
      const uint8_t* blk = row + b * sbb;
      uint8_t* q = dst + (size_t)b * qbytes + 4 * j;
      for (int p = 0; p < 4; p++) std::memcpy(q + p * 64, blk + qs_at + 4 * p, 4);
      if (high) {
        const uint32_t qh = u32_at(blk + qh_at);
        for (int t = 0; t < 4; t++) {
          uint8_t h = 0;
          for (int p = 0; p < 4; p++) h = (uint8_t)(h | ((qh >> (4 * p + t)) & 1) << p | ((qh >> (16 + 4 * p + t)) & 1) << (4 + p));
          q[256 + t] = h;
        }
      }
      uint8_t* sc = scales + (size_t)b * sbytes + 2 * j;
      std::memcpy(sc, blk, 2);
      if (min) std::memcpy(sc + kPackScaleBytes, blk + 2, 2);
    }
  }
}

// Row j of such a group, decoded with the operations (and so the bits) of dequant.cc.
void dequantize_group_row_b32(int dt, const uint8_t* grp, int nb, int j, float* y) {
  const int qbytes = pack_quant_bytes(dt), sbytes = pack_scale_bytes(dt);
  const bool high = pack_has_high(dt);
  const uint8_t* scales = grp + (size_t)nb * qbytes;
  for (int b = 0; b < nb; b++, y += 32) {
    const uint8_t* sc = scales + (size_t)b * sbytes + 2 * j;
    const float d = fp16_to_f32(half_at(sc));
    const float m = pack_has_min(dt) ? fp16_to_f32(half_at(sc + kPackScaleBytes)) : 0.0f;
    const uint8_t* q = grp + (size_t)b * qbytes + 4 * j;
    for (int p = 0; p < 4; p++)
      for (int t = 0; t < 4; t++) {
        const uint8_t v = q[p * 64 + t], h = high ? q[256 + t] : 0;
        const int lo = (v & 0xf) | ((h >> p) & 1) << 4, hi = (v >> 4) | ((h >> (4 + p)) & 1) << 4;
        float* o0 = y + 4 * p + t;
        float* o1 = o0 + 16;
        switch (dt) {
          case kQ5_0x16:
            *o0 = (float)(lo - 16) * d;
            *o1 = (float)(hi - 16) * d;
            break;
          case kIQ4_NLx16:
            *o0 = d * (float)kValuesIq4nl[lo];
            *o1 = d * (float)kValuesIq4nl[hi];
            break;
          default:  // Q4_1, Q5_1
            *o0 = (float)lo * d + m;
            *o1 = (float)hi * d + m;
            break;
        }
      }
  }
}

// One row's super-block in plain form: 256 quant codes (unsigned), its scales (Q6_K: 16 signed
// per-16 scales; else 8 sub-block scales and 8 mins) and the halves d, dmin.
struct KRow {
  uint8_t q[256];
  uint8_t sc[16];
  uint8_t mn[8];
  uint16_t d, dmin;
};

void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The GGUF super-block at p (of the dtype the packed dt is made from), bit order as dequant.cc reads it.
void unpack_k(int dt, const uint8_t* p, KRow* o) {
  if (dt == kQ6_Kx16) {
    const block_q6_K* b = reinterpret_cast<const block_q6_K*>(p);
    for (int n = 0; n < 2; n++)
      for (int l = 0; l < 32; l++) {
        const uint8_t* ql = b->ql + 64 * n;
        const uint8_t h = b->qh[32 * n + l];
        o->q[128 * n + l] = (uint8_t)((ql[l] & 0xf) | ((h & 3) << 4));
        o->q[128 * n + l + 32] = (uint8_t)((ql[l + 32] & 0xf) | (((h >> 2) & 3) << 4));
        o->q[128 * n + l + 64] = (uint8_t)((ql[l] >> 4) | (((h >> 4) & 3) << 4));
        o->q[128 * n + l + 96] = (uint8_t)((ql[l + 32] >> 4) | (((h >> 6) & 3) << 4));
      }
    std::memcpy(o->sc, b->scales, 16);
    o->d = b->d;
    o->dmin = 0;
    return;
  }
  // Q4_K and Q5_K share d, dmin, scales at the front; Q5_K adds qh before its nibbles.
  const bool q5 = dt == kQ5_Kx16;
  const uint8_t* scales = p + 4;
  const uint8_t* qh = p + 16;
  const uint8_t* qs = p + (q5 ? 48 : 16);
  o->d = half_at(p);
  o->dmin = half_at(p + 2);
  for (int j = 0; j < 8; j++) scale_min_k4(j, scales, &o->sc[j], &o->mn[j]);
  for (int i = 0; i < 4; i++)
    for (int l = 0; l < 32; l++) {
      o->q[64 * i + l] = qs[32 * i + l] & 0xf;
      o->q[64 * i + 32 + l] = qs[32 * i + l] >> 4;
    }
  if (q5)
    for (int e = 0; e < 256; e++) o->q[e] = (uint8_t)(o->q[e] | (((qh[e % 32] >> (e / 32)) & 1) << 4));
}

// One K-quant group (rows past `rows`: all zero, so they contribute nothing).
void pack_group_k(int dt, int rows, int nsb, const uint8_t* src, size_t src_stride, int g, uint8_t* dst) {
  const int sbb = kpack_sb_bytes(dt), hb = kpack_high_bytes(dt), sco = kpack_scales(dt);
  const size_t src_sb = dt == kQ4_Kx16 ? sizeof(block_q4_K) : dt == kQ5_Kx16 ? sizeof(block_q5_K) : sizeof(block_q6_K);
  std::memset(dst, 0, (size_t)nsb * sbb);
  KRow kr;
  for (int j = 0; j < kPackRows; j++) {
    const int r = g * kPackRows + j;
    if (r >= rows) break;
    for (int sb = 0; sb < nsb; sb++) {
      unpack_k(dt, src + (size_t)r * src_stride + (size_t)sb * src_sb, &kr);
      uint8_t* o = dst + (size_t)sb * sbb;
      for (int s = 0; s < 8; s++) {
        const uint8_t* q = kr.q + 32 * s;
        for (int p = 0; p < 4; p++)
          for (int t = 0; t < 4; t++) {
            const int n = 4 * j + t;
            const uint8_t lo = q[4 * p + t], hi = q[16 + 4 * p + t];
            o[256 * s + 64 * p + n] = (uint8_t)((lo & 0xf) | ((hi & 0xf) << 4));
            uint8_t* h = o + 2048 + hb * s + n;
            if (dt == kQ5_Kx16) {
              h[0] = (uint8_t)(h[0] | ((lo >> 4) << p) | ((hi >> 4) << (4 + p)));
            } else if (dt == kQ6_Kx16) {
              h[0] = (uint8_t)(h[0] | ((lo >> 4) << (2 * p)));
              h[64] = (uint8_t)(h[64] | ((hi >> 4) << (2 * p)));
            }
          }
      }
      if (dt == kQ6_Kx16) {
        for (int i = 0; i < 16; i++) o[sco + 16 * i + j] = kr.sc[i];
        std::memcpy(o + sco + 256 + 2 * j, &kr.d, 2);
      } else {
        for (int i = 0; i < 8; i++) {
          o[sco + 16 * i + j] = kr.sc[i];
          o[sco + 128 + 16 * i + j] = kr.mn[i];
        }
        std::memcpy(o + sco + 256 + 2 * j, &kr.d, 2);
        std::memcpy(o + sco + 288 + 2 * j, &kr.dmin, 2);
      }
    }
  }
}

// Row j of a K-quant group, decoded with the operations (and so the bits) of dequant.cc.
void dequantize_group_row_k(int dt, const uint8_t* grp, int nsb, int j, float* y) {
  const int sbb = kpack_sb_bytes(dt), hb = kpack_high_bytes(dt), sco = kpack_scales(dt);
  for (int sb = 0; sb < nsb; sb++, y += 256) {
    const uint8_t* o = grp + (size_t)sb * sbb;
    uint8_t q[256];
    for (int s = 0; s < 8; s++)
      for (int p = 0; p < 4; p++)
        for (int t = 0; t < 4; t++) {
          const int n = 4 * j + t;
          const uint8_t v = o[256 * s + 64 * p + n];
          int lo = v & 0xf, hi = v >> 4;
          const uint8_t* h = o + 2048 + hb * s + n;
          if (dt == kQ5_Kx16) {
            lo |= ((h[0] >> p) & 1) << 4;
            hi |= ((h[0] >> (4 + p)) & 1) << 4;
          } else if (dt == kQ6_Kx16) {
            lo |= ((h[0] >> (2 * p)) & 3) << 4;
            hi |= ((h[64] >> (2 * p)) & 3) << 4;
          }
          q[32 * s + 4 * p + t] = (uint8_t)lo;
          q[32 * s + 16 + 4 * p + t] = (uint8_t)hi;
        }
    const float d = fp16_to_f32(half_at(o + sco + 256 + 2 * j));
    if (dt == kQ6_Kx16) {
      for (int e = 0; e < 256; e++) y[e] = d * (float)(int8_t)o[sco + 16 * (e / 16) + j] * (float)((int)q[e] - 32);
    } else {
      const float min = fp16_to_f32(half_at(o + sco + 288 + 2 * j));
      for (int s = 0; s < 8; s++) {
        const uint8_t sc = o[sco + 16 * s + j], m = o[sco + 128 + 16 * s + j];
        const float d1 = d * sc, m1 = min * m;
        for (int l = 0; l < 32; l++) y[32 * s + l] = d1 * (float)q[32 * s + l] - m1;
      }
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
    for (int64_t g = g0; g < g1; g++) {
      if (is_kpacked(dt)) pack_group_k(dt, rows, cols / QK_K, src, stride, (int)g, dst + (size_t)g * gb);
      else if (dt == kQ8_0x16 || dt == kQ4_0x16) pack_group(dt, rows, nb, src, stride, (int)g, dst + (size_t)g * gb);
      else pack_group_b32(dt, rows, nb, src, stride, (int)g, dst + (size_t)g * gb);
    }
  });
}

void dequantize_packed_row(int dt, const uint8_t* w, int cols, int r, float* dst) {
  const int nb = cols / 32, qbytes = pack_quant_bytes(dt);
  const int j = r % kPackRows;
  const uint8_t* g = w + (size_t)(r / kPackRows) * group_bytes(dt, nb);
  if (is_kpacked(dt)) {
    dequantize_group_row_k(dt, g, cols / QK_K, j, dst);
    return;
  }
  if (dt != kQ8_0x16 && dt != kQ4_0x16) {
    dequantize_group_row_b32(dt, g, nb, j, dst);
    return;
  }
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
