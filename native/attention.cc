// storeKv and attention over the paged KV cache ([numBlocks][blockSize][numKvHeads] rows, a row
// being one head vector in its dtype's row_bytes(headDim) bytes). K and V each have their own dtype;
// its traits row (dtypes.h) names the codec slots, resolved once per op. Attention is flash-style:
// each task owns some query rows of one sequence, the query heads of one or all KV heads, and a range
// of its KV blocks; it walks them once, decoding each block (f32 / bf16 are read in place) into
// scratch, scores a KV head's queries against the block in one register-tiled call, and keeps a
// running max, denominator and output per query (online softmax), so no [queries x keys] score
// matrix is ever materialised. Decode rows split their keys (split-K) and a reduction merges the
// parts. Rotated dtypes (turbo) decode to R·x: a task rotates its queries once when K is rotated
// (q·k = Rq·Rk) and un-rotates its outputs once when V is. docs/architecture.md has the details.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "cpu_features.h"
#include "dtypes.h"
#include "kv_codec.h"
#include "kernels.h"
#include "kv_turbo.h"
#include "napi_args.h"
#include "quant.h"
#include "threadpool.h"

namespace svc {
namespace {

constexpr int kRowsPerTask = 16;  // query rows per task in prefill: a decoded block serves 16 x group queries

// One side (K or V) of a layer: its bytes, dtype, scale and bytes per row (head vector).
struct KvSide {
  int dtype;
  uint8_t* data;
  double scale;
  size_t row;
};

struct KvLayerView {
  int num_blocks, block_size, kv_heads, hd;
  KvSide k, v;
};

// A side's codec slots from the chosen kernel table, looked up once per op.
struct KvCodec {
  KvEncodeFn encode;
  KvDecodeFn decode;  // null: f32, read in place
  double scale;
  bool rotated;
};

KvCodec codec_for(const Kernels& K, const KvSide& side) {
  const KvDTypeTraits& t = kv_dtype_traits(side.dtype);
  return KvCodec{K.*t.encode, t.decode ? K.*t.decode : nullptr, side.scale, t.rotated};
}

struct Seq {
  int q_start, q_len, kv_len;
  const int32_t* table;
};

// Query rows [j0, j1) of one sequence, the query heads of KV heads [kvh0, kvh1), against its KV blocks
// [b0, b1). A task that covers only part of the blocks (split-K) leaves its unnormalised partial in
// the partials buffer at `part`; the reduction merges the parts of one (rows, heads) unit.
struct Task {
  int seq, j0, j1, kvh0, kvh1, b0, b1;
  int64_t part;  // -1: the task covers every block and writes its output itself
};

// The tasks that split one (rows, heads) unit along its keys: tasks[first, first + count).
struct Split {
  int first, count;
};

// Query state of a split task in the partials buffer: per query, hd output sums, its max and its sum.
size_t part_floats(int nq, int hd) { return (size_t)nq * (hd + 2); }

void store_kv(const KvLayerView& L, const float* k, const float* v, int n, const int32_t* slots) {
  const Kernels& K = kernels();
  const KvCodec kc = codec_for(K, L.k), vc = codec_for(K, L.v);
  const int hd = L.hd, heads = L.kv_heads;
  // Each head vector is its own row (the block formats scale and rotate per head); work items are
  // (token, head) pairs.
  auto body = [&](int64_t b, int64_t e, int) {
    for (int64_t it = b; it < e; it++) {
      const int64_t i = it / heads, h = it % heads;
      const size_t src = (size_t)it * hd, row = (size_t)slots[i] * heads + h;
      kc.encode(k + src, L.k.data + row * L.k.row, hd, kc.scale);
      vc.encode(v + src, L.v.data + row * L.v.row, hd, vc.scale);
    }
  };
  // Prefill batches are worth the pool's wake-up; a decode step's few rows are not, unless they are
  // nvfp4 / turbo rows (near a microsecond each at headDim 128, against tens of ns for bf16 / fp8).
  const int64_t items = (int64_t)n * heads;
  const bool costly = L.k.dtype >= kKvNVFP4 || L.v.dtype >= kKvNVFP4;
  if (costly ? items >= 8 : n >= 32) parallel_for(items, costly ? 2 : 16 * heads, body);
  else body(0, items, 0);
}

// Rows of KV heads [kvh0, kvh0 + nkv) in block `phys` as f32: straight from the cache for f32, else
// decoded into buf (rotated dtypes: in the rotated domain). Returns head kvh0's row of token 0; token
// t's row of head kvh0 + i is at + t * *stride + i * hd.
const float* block_rows(const KvLayerView& L, const KvSide& side, const KvCodec& c, bool elementwise, int phys,
                        int kvh0, int nkv, int nt, float* buf, size_t* stride) {
  const size_t first = (size_t)phys * L.block_size * L.kv_heads + kvh0;  // row index
  if (!c.decode) {
    *stride = (size_t)L.kv_heads * L.hd;
    return reinterpret_cast<const float*>(side.data) + first * L.hd;
  }
  *stride = (size_t)nkv * L.hd;
  const size_t step = (size_t)L.kv_heads * side.row;
  const uint8_t* src = side.data + first * side.row;
  if (elementwise && nkv == L.kv_heads) {
    // The block's rows are one contiguous run: one call, one sequential read.
    c.decode(src, buf, nt * nkv * L.hd, c.scale);
    return buf;
  }
  for (int t = 0; t < nt; t++)
    for (int i = 0; i < nkv; i++)
      c.decode(src + (size_t)t * step + (size_t)i * side.row, buf + ((size_t)t * nkv + i) * L.hd, L.hd, c.scale);
  return buf;
}

// Everything one attention call shares between its tasks.
struct Call {
  const Kernels& K;
  const KvLayerView& L;
  KvCodec kc, vc;
  bool k_elementwise, v_elementwise;
  const std::vector<Seq>& seqs;
  const float* q;
  float* out;
  int num_heads, group, window;
  float scale, softcap;
  const float* sinks;
  float* parts;
  // bf16 mode (bf16 / fp8 K and V on a CPU with AVX512_BF16): queries, keys, softmax weights and
  // values are bf16 and multiplied with vdpbf16ps (values in key pairs). fp8 rows decode exactly to
  // bf16 without their layer scale: k_mult joins the queries' scale and v_mult the outputs'. Every
  // row takes this path, so a row's bits do not depend on its chunking.
  bool bf16;
  float k_mult, v_mult;
};

// Normalises one query's accumulated output into dst: 1 / sum, or with GPT-OSS's sink logit joining
// the denominator (its share dropped) under the larger max; turbo V is un-rotated first.
void finish_query(const Call& c, float* o, float m, float l, int h, float* dst) {
  const int hd = c.L.hd;
  if (c.vc.rotated) turbo_unrotate(o, hd);  // values were summed as R·v
  float inv = 1.0f / l;
  if (c.sinks) {
    const double mm = std::max((double)m, (double)c.sinks[h]);
    const double f = std::exp((double)m - mm);
    inv = (float)(f / ((double)l * f + std::exp((double)c.sinks[h] - mm)));
  }
  inv *= c.v_mult;
  for (int d = 0; d < hd; d++) dst[d] = o[d] * inv;
}

// bf16 rows of KV heads [kvh0, kvh0 + nkv) in block `phys`: bf16 read in place, fp8 decoded into buf.
// Token t's row of head kvh0 + i is at + t * *stride + i * hd.
const uint16_t* block_rows_bf16(const Call& c, const KvSide& side, int phys, int kvh0, int nkv, int nt, uint16_t* buf,
                                size_t* stride) {
  const KvLayerView& L = c.L;
  const size_t first = (size_t)phys * L.block_size * L.kv_heads + kvh0;  // row index
  if (side.dtype == kKvBF16) {
    *stride = (size_t)L.kv_heads * L.hd;
    return reinterpret_cast<const uint16_t*>(side.data) + first * L.hd;
  }
  *stride = (size_t)nkv * L.hd;
  const uint8_t* src = side.data + first * side.row;
  if (nkv == L.kv_heads) {
    c.K.fp8_to_bf16(src, buf, (int64_t)nt * nkv * L.hd);
    return buf;
  }
  for (int t = 0; t < nt; t++)
    c.K.fp8_to_bf16(src + (size_t)t * L.kv_heads * side.row, buf + (size_t)t * nkv * L.hd, (int64_t)nkv * L.hd);
  return buf;
}

// Online softmax of one KV head's scores for one block: S holds rows x group queries' scores (row r's
// heads at r * group + g, sstride apart) for keys t0 .. t0 + nt. Each query's keys outside its causal /
// window range get weight 0; the rest become exp(s - running max), the running max, sum and output
// (queries q0 + r * group + g) rescaled when the max grows.
void softmax_block(const Call& c, float* S, size_t sstride, int rows, int row0_pos, int t0, int nt, size_t q0, float* M,
                   float* Ls, float* O) {
  const int hd = c.L.hd, group = c.group, window = c.window;
  for (int r = 0; r < rows; r++) {
    const int pos = row0_pos + r;
    // Causal: keys <= pos; sliding window (HF): pos - t < window.
    const int a = std::max(t0, window > 0 ? pos - window + 1 : 0) - t0;
    const int b = std::min(t0 + nt, pos + 1) - t0;
    for (int g = 0; g < group; g++) {
      const size_t qi = q0 + (size_t)r * group + g;
      float* Sq = S + ((size_t)r * group + g) * sstride;
      if (a >= b) {
        std::fill(Sq, Sq + nt, 0.0f);
        continue;
      }
      if (c.softcap > 0.0f) c.K.softcap(Sq + a, Sq + a, b - a, c.softcap);  // Gemma 2: cap * tanh(score / cap)
      float mb = Sq[a];
      for (int t = a + 1; t < b; t++) mb = std::max(mb, Sq[t]);
      if (mb > M[qi]) {
        // New running max: rescale what has been accumulated so far.
        if (Ls[qi] > 0.0f) {
          const float alpha = std::exp(M[qi] - mb);
          Ls[qi] *= alpha;
          c.K.scale(O + qi * hd, hd, alpha);
        }
        M[qi] = mb;
      }
      Ls[qi] += c.K.exp_sum(Sq + a, b - a, M[qi]);
      std::fill(Sq, Sq + a, 0.0f);
      std::fill(Sq + b, Sq + nt, 0.0f);
    }
  }
}

// Pulls the rows of KV heads [kvh0, kvh0 + nkv) of block `phys` towards L2. A sequence's blocks lie
// anywhere in the pool, so the hardware prefetchers cannot see the next one coming: a task asks for
// block b + 1 while it works on block b (scattered 16 KiB blocks read 2-3x slower without it).
void prefetch_block(const KvLayerView& L, const KvSide& side, int phys, int kvh0, int nkv) {
  const size_t first = (size_t)phys * L.block_size * L.kv_heads + kvh0;
  const uint8_t* p = side.data + first * side.row;
  const size_t run = (size_t)nkv * side.row, stride = (size_t)L.kv_heads * side.row;
  const int runs = nkv == L.kv_heads ? 1 : L.block_size;
  const size_t bytes = nkv == L.kv_heads ? run * L.block_size : run;
  for (int t = 0; t < runs; t++)
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + t * stride + off, 0, 2);
}

// Carves a thread's scratch into consecutive arrays.
struct Carver {
  uint8_t* p;
  template <class T>
  T* take(size_t n) {
    T* r = reinterpret_cast<T*>(p);
    p += (n * sizeof(T) + 63) & ~size_t(63);
    return r;
  }
};

void run_task(const Call& c, const Task& tk, int ith) {
  const Kernels& K = c.K;
  const KvLayerView& L = c.L;
  const Seq& s = c.seqs[(size_t)tk.seq];
  const int hd = L.hd, bs = L.block_size;
  const int nkv = tk.kvh1 - tk.kvh0, group = c.group;
  const int rows = tk.j1 - tk.j0, nqh = rows * group;  // queries per KV head
  const int nq = nqh * nkv;
  // Query qi = (kv head k - kvh0, row j - j0, head g within the group) at ((k - kvh0) * rows + j - j0) *
  // group + g: one KV head's queries are contiguous, so one tile call serves them all.
  const size_t sstride = (size_t)(bs + 1) & ~size_t(1);  // even: bf16 weights go in key pairs
  const size_t npairs_max = sstride / 2, kv_vals = (size_t)bs * nkv * hd;
  const size_t bytes = ((size_t)nq * hd * 4 + 64) * 2 + ((size_t)nq * 4 + 64) * 2 + ((size_t)nqh * sstride * 4 + 64) +
                       (c.bf16 ? ((size_t)nq * hd * 2 + 64) + ((size_t)nqh * npairs_max * 4 + 64) + (kv_vals * 2 + 64) * 2 +
                                     (npairs_max * nkv * hd * 4 + 64)
                               : (kv_vals * 4 + 64) * 2);
  Carver cv{static_cast<uint8_t*>(ThreadPool::instance().thread_scratch(ith, bytes))};
  float* Q = cv.take<float>((size_t)nq * hd);  // pre-scaled
  float* O = cv.take<float>((size_t)nq * hd);
  float* M = cv.take<float>((size_t)nq);
  float* Ls = cv.take<float>((size_t)nq);
  float* S = cv.take<float>((size_t)nqh * sstride);

  const int offset = s.kv_len - s.q_len;  // position of query row 0
  const float qscale = c.scale * c.k_mult;
  for (int qi = 0; qi < nq; qi++) {
    const int k = qi / nqh, j = tk.j0 + (qi % nqh) / group, h = (tk.kvh0 + k) * group + qi % group;
    const float* src = c.q + ((size_t)(s.q_start + j) * c.num_heads + h) * hd;
    float* dst = Q + (size_t)qi * hd;
    for (int d = 0; d < hd; d++) dst[d] = src[d] * qscale;
    if (c.kc.rotated) turbo_rotate(dst, hd);  // keys decode to R·k
    std::memset(O + (size_t)qi * hd, 0, (size_t)hd * sizeof(float));
    M[qi] = -std::numeric_limits<float>::infinity();
    Ls[qi] = 0.0f;
  }

  const int last = offset + tk.j1 - 1;  // newest key any query of this task sees
  const int lo = c.window > 0 ? std::max(0, offset + tk.j0 - c.window + 1) : 0;
  const int blk0 = std::max(tk.b0, lo / bs), blk_end = std::min(tk.b1, last / bs + 1);
  auto prefetch_next = [&](int blk) {
    if (blk + 1 >= blk_end) return;
    prefetch_block(L, L.k, s.table[blk + 1], tk.kvh0, nkv);
    prefetch_block(L, L.v, s.table[blk + 1], tk.kvh0, nkv);
  };
  if (!c.bf16) {
    float* Kbuf = cv.take<float>(kv_vals);
    float* Vbuf = cv.take<float>(kv_vals);
    for (int blk = blk0; blk < blk_end; blk++) {
      const int t0 = blk * bs, nt = std::min(bs, last + 1 - t0);
      prefetch_next(blk);
      size_t kstride, vstride;
      const float* Kr = block_rows(L, L.k, c.kc, c.k_elementwise, s.table[blk], tk.kvh0, nkv, nt, Kbuf, &kstride);
      const float* Vr = block_rows(L, L.v, c.vc, c.v_elementwise, s.table[blk], tk.kvh0, nkv, nt, Vbuf, &vstride);
      for (int k = 0; k < nkv; k++) {
        const size_t q0 = (size_t)k * nqh;
        K.qk_tile(Q + q0 * hd, nqh, Kr + (size_t)k * hd, kstride, nt, hd, S, sstride);
        softmax_block(c, S, sstride, rows, offset + tk.j0, t0, nt, q0, M, Ls, O);
        K.pv_tile(S, nqh, sstride, Vr + (size_t)k * hd, vstride, nt, hd, O + q0 * hd);
      }
    }
  } else {
    uint16_t* Qb = cv.take<uint16_t>((size_t)nq * hd);
    uint32_t* Pb = cv.take<uint32_t>((size_t)nqh * npairs_max);
    uint16_t* Kbuf = cv.take<uint16_t>(kv_vals);
    uint16_t* Vbuf = cv.take<uint16_t>(kv_vals);
    uint32_t* Vp = cv.take<uint32_t>(npairs_max * nkv * hd);  // [key pair][KV head][column]
    K.f32_to_bf16(Q, Qb, (int64_t)nq * hd);
    for (int blk = blk0; blk < blk_end; blk++) {
      const int t0 = blk * bs, nt = std::min(bs, last + 1 - t0), npairs = (nt + 1) / 2;
      prefetch_next(blk);
      size_t kstride, vstride;
      const uint16_t* Kr = block_rows_bf16(c, L.k, s.table[blk], tk.kvh0, nkv, nt, Kbuf, &kstride);
      // Values in key pairs for every KV head at once (an odd last key pairs with zeros); fp8 codes
      // go to pairs in one step, without bf16 rows in between.
      if (L.v.dtype == kKvFP8 && K.fp8_pairs) {
        const size_t tstride = (size_t)L.kv_heads * L.v.row;
        const uint8_t* src = L.v.data + ((size_t)s.table[blk] * bs * L.kv_heads + tk.kvh0) * L.v.row;
        for (int p = 0; p < npairs; p++) {
          const uint8_t* r0 = src + (size_t)(2 * p) * tstride;
          K.fp8_pairs(r0, 2 * p + 1 < nt ? r0 + tstride : nullptr, nkv * hd, Vp + (size_t)p * nkv * hd);
        }
      } else {
        const uint16_t* Vr = block_rows_bf16(c, L.v, s.table[blk], tk.kvh0, nkv, nt, Vbuf, &vstride);
        for (int p = 0; p < npairs; p++) {
          const uint16_t* r0 = Vr + (size_t)(2 * p) * vstride;
          K.bf16_pairs(r0, 2 * p + 1 < nt ? r0 + vstride : nullptr, nkv * hd, Vp + (size_t)p * nkv * hd);
        }
      }
      for (int k = 0; k < nkv; k++) {
        const size_t q0 = (size_t)k * nqh;
        K.qk_tile_bf16(Qb + q0 * hd, nqh, Kr + (size_t)k * hd, kstride, nt, hd, S, sstride);
        softmax_block(c, S, sstride, rows, offset + tk.j0, t0, nt, q0, M, Ls, O);
        // Weights to bf16 pairs; a key past nt weighs 0.
        for (int i = 0; i < nqh; i++) {
          float* Si = S + (size_t)i * sstride;
          if (nt % 2) Si[nt] = 0.0f;
          K.f32_to_bf16(Si, reinterpret_cast<uint16_t*>(Pb + (size_t)i * npairs_max), 2 * npairs);
        }
        K.pv_tile_bf16(Pb, nqh, npairs_max, Vp + (size_t)k * hd, (size_t)nkv * hd, npairs, hd, O + q0 * hd);
      }
    }
  }

  if (tk.part >= 0) {
    // Split-K: hand the unnormalised state to the reduction.
    float* P = c.parts + tk.part;
    std::memcpy(P, O, (size_t)nq * hd * sizeof(float));
    std::memcpy(P + (size_t)nq * hd, M, (size_t)nq * sizeof(float));
    std::memcpy(P + (size_t)nq * (hd + 1), Ls, (size_t)nq * sizeof(float));
    return;
  }
  for (int qi = 0; qi < nq; qi++) {
    const int j = tk.j0 + (qi % nqh) / group, h = (tk.kvh0 + qi / nqh) * group + qi % group;
    finish_query(c, O + (size_t)qi * hd, M[qi], Ls[qi], h, c.out + ((size_t)(s.q_start + j) * c.num_heads + h) * hd);
  }
}

// Merges the split-K parts of query qi of one unit: the largest max wins, the others are rescaled.
void reduce_query(const Call& c, const std::vector<Task>& tasks, const Split& sp, int qi, int ith) {
  const int hd = c.L.hd;
  const Task& t0 = tasks[(size_t)sp.first];
  const int nh = (t0.kvh1 - t0.kvh0) * c.group;
  const int nq = (t0.j1 - t0.j0) * nh;
  float m = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < sp.count; i++) m = std::max(m, c.parts[tasks[(size_t)(sp.first + i)].part + (size_t)nq * hd + qi]);
  float* o = static_cast<float*>(ThreadPool::instance().thread_scratch(ith, (size_t)hd * sizeof(float)));
  std::memset(o, 0, (size_t)hd * sizeof(float));
  float l = 0.0f;
  for (int i = 0; i < sp.count; i++) {
    const float* P = c.parts + tasks[(size_t)(sp.first + i)].part;
    const float pl = P[(size_t)nq * (hd + 1) + qi];
    if (pl == 0.0f) continue;  // this part saw no key of the query (causal or window)
    const float f = std::exp(P[(size_t)nq * hd + qi] - m);
    l += pl * f;
    const float* po = P + (size_t)qi * hd;
    for (int d = 0; d < hd; d++) o[d] += po[d] * f;
  }
  const Seq& s = c.seqs[(size_t)t0.seq];
  const int nqh = (t0.j1 - t0.j0) * c.group;  // the query order of run_task
  const int j = t0.j0 + (qi % nqh) / c.group, h = (t0.kvh0 + qi / nqh) * c.group + qi % c.group;
  finish_query(c, o, m, l, h, c.out + ((size_t)(s.q_start + j) * c.num_heads + h) * hd);
}

// Rows that decode (fewer than this per sequence) split their keys into parts of kSplitKeys (split-K),
// each part a task, and a reduction merges the parts. The split depends on the sequence alone, so a
// row's bits do not depend on what else is in the batch.
constexpr int kDecodeRows = 4;
constexpr int kSplitKeys = 512;

void attention(const KvLayerView& L, const std::vector<Seq>& seqs, const float* q, float* out, int num_heads,
               float scale, int window, float softcap, const float* sinks) {
  const Kernels& K = kernels();
  const int nth = ThreadPool::instance().size();
  const int group = num_heads / L.kv_heads, hd = L.hd, bs = L.block_size;
  // Task and split lists, reused between calls (grow rarely; guarded by the op mutex).
  static std::vector<Task> tasks;
  static std::vector<Split> splits;
  static std::vector<float> parts;
  tasks.clear();
  splits.clear();

  auto key_parts = [&](const Seq& s) {
    const int blocks = (s.kv_len + bs - 1) / bs;
    return std::min(blocks, std::max(1, (s.kv_len + kSplitKeys - 1) / kSplitKeys));
  };
  // A task takes as many KV heads as still gives the threads enough tasks: every head (whole blocks,
  // read in address order) when there are enough (rows, key part) units, else the largest divisor of
  // the head count that does. A token's rows are contiguous across heads, so fewer heads per task
  // means shorter runs between strides (one head of fp8: 128 bytes per KiB), which the prefetchers
  // follow badly; measured on a lone decode, whole blocks in one task per thread beat twice the
  // tasks. Decode key parts are near equal, so one per thread balances; prefill row chunks are not
  // (a partial last chunk, later rows seeing more keys), so a call with prefill rows asks for two.
  // Either way each query is computed alike.
  int64_t units = 0;
  bool prefill = false;
  for (const Seq& s : seqs) {
    const bool decode = s.q_len < kDecodeRows;
    units += decode ? key_parts(s) : (s.q_len + kRowsPerTask - 1) / kRowsPerTask;
    prefill = prefill || !decode;
  }
  const int64_t want = prefill ? 2 * nth : nth;
  int heads_per = L.kv_heads;
  while (heads_per > 1 && units * (L.kv_heads / heads_per) < want)
    do heads_per--;
    while (L.kv_heads % heads_per != 0);

  int64_t part_size = 0;
  for (int si = 0; si < (int)seqs.size(); si++) {
    const Seq& s = seqs[(size_t)si];
    const int blocks = (s.kv_len + bs - 1) / bs;
    if (s.q_len < kDecodeRows) {
      const int n = key_parts(s);
      const int nq = s.q_len * heads_per * group;
      for (int kvh = 0; kvh < L.kv_heads; kvh += heads_per) {
        if (n == 1) {
          tasks.push_back({si, 0, s.q_len, kvh, kvh + heads_per, 0, blocks, -1});
          continue;
        }
        splits.push_back({(int)tasks.size(), n});
        for (int i = 0; i < n; i++) {
          tasks.push_back({si, 0, s.q_len, kvh, kvh + heads_per, (int)((int64_t)blocks * i / n),
                           (int)((int64_t)blocks * (i + 1) / n), part_size});
          part_size += (int64_t)part_floats(nq, hd);
        }
      }
      continue;
    }
    // Later rows see more keys (causal): queue them first so the expensive tasks start early.
    for (int j0 = ((s.q_len - 1) / kRowsPerTask) * kRowsPerTask; j0 >= 0; j0 -= kRowsPerTask)
      for (int kvh = 0; kvh < L.kv_heads; kvh += heads_per)
        tasks.push_back({si, j0, std::min(s.q_len, j0 + kRowsPerTask), kvh, kvh + heads_per, 0, blocks, -1});
  }
  if ((int64_t)parts.size() < part_size) parts.resize((size_t)part_size);

  const KvDTypeTraits &kt = kv_dtype_traits(L.k.dtype), &vt = kv_dtype_traits(L.v.dtype);
  auto bf16_side = [](int dt) { return dt == kKvBF16 || dt == kKvFP8; };
  const bool bf16 = K.qk_tile_bf16 && cpu_features().avx512bf16 && hd % 32 == 0 && bf16_side(L.k.dtype) &&
                    bf16_side(L.v.dtype);
  auto mult = [&](const KvSide& side) { return bf16 && side.dtype == kKvFP8 ? fp8_decode_mult(side.scale) : 1.0f; };
  const Call c{K,     L,      codec_for(K, L.k), codec_for(K, L.v), kt.elementwise, vt.elementwise, seqs, q, out,
               num_heads, group, window,       scale,           softcap,          sinks,          parts.data(),
               bf16,  mult(L.k), mult(L.v)};
  parallel_for((int64_t)tasks.size(), 1, [&](int64_t b, int64_t e, int ith) {
    for (int64_t t = b; t < e; t++) run_task(c, tasks[(size_t)t], ith);
  });
  if (splits.empty()) return;
  // Reduction: one item per query of each split unit.
  static std::vector<std::pair<int, int>> items;  // (split, query)
  items.clear();
  for (int i = 0; i < (int)splits.size(); i++) {
    const Task& t0 = tasks[(size_t)splits[(size_t)i].first];
    const int nq = (t0.j1 - t0.j0) * (t0.kvh1 - t0.kvh0) * group;
    for (int qi = 0; qi < nq; qi++) items.push_back({i, qi});
  }
  parallel_for((int64_t)items.size(), 8, [&](int64_t b, int64_t e, int ith) {
    for (int64_t i = b; i < e; i++) reduce_query(c, tasks, splits[(size_t)items[(size_t)i].first], items[(size_t)i].second, ith);
  });
}

// ---- bindings ----

// Layer arguments first..first+9: kDtype, vDtype, numBlocks, blockSize, numKvHeads, headDim, k, v,
// kScale, vScale.
bool layer_arg(Args& a, size_t first, KvLayerView* L) {
  L->k.dtype = (int)a.integer(first, "k dtype code", 0, kKvDTypeCount - 1);
  L->v.dtype = (int)a.integer(first + 1, "v dtype code", 0, kKvDTypeCount - 1);
  L->num_blocks = (int)a.integer(first + 2, "numBlocks", 0, INT32_MAX);
  L->block_size = (int)a.integer(first + 3, "blockSize", 1, 1 << 20);
  L->kv_heads = (int)a.integer(first + 4, "numKvHeads", 1, 1 << 16);
  L->hd = (int)a.integer(first + 5, "headDim", 1, 1 << 16);
  if (!a.ok()) return false;
  const size_t rows = (size_t)L->num_blocks * L->block_size * L->kv_heads;
  L->k.row = kv_dtype_traits(L->k.dtype).row_bytes(L->hd);
  L->v.row = kv_dtype_traits(L->v.dtype).row_bytes(L->hd);
  L->k.data = a.u8(first + 6, "layer.k", rows * L->k.row);
  const size_t koff = a.last_byte_offset();
  L->v.data = a.u8(first + 7, "layer.v", rows * L->v.row);
  const size_t voff = a.last_byte_offset();
  L->k.scale = a.number(first + 8, "kScale");
  L->v.scale = a.number(first + 9, "vScale");
  if (!a.ok()) return false;
  if (koff % kv_dtype_traits(L->k.dtype).align != 0 || voff % kv_dtype_traits(L->v.dtype).align != 0) {
    a.fail("layer.k / layer.v must start at a multiple of their dtype's alignment (use their own ArrayBuffer)");
    return false;
  }
  for (const KvSide* side : {&L->k, &L->v}) {
    const KvDTypeTraits& t = kv_dtype_traits(side->dtype);
    if (t.scaled && !(side->scale > 0.0)) {
      a.fail(std::string(t.name) + (side == &L->k ? " kScale" : " vScale") + " must be positive");
      return false;
    }
  }
  return true;
}

// storeKv(layer x10, k, v, n, slots)
Napi::Value StoreKv(const Napi::CallbackInfo& info) {
  Args a(info, "storeKv");
  KvLayerView L;
  if (!layer_arg(a, 0, &L)) return info.Env().Undefined();
  const int n = (int)a.integer(12, "n", 0, INT32_MAX);
  const size_t width = (size_t)L.kv_heads * L.hd;
  const float* k = a.f32(10, "k", (size_t)n * width);
  const float* v = a.f32(11, "v", (size_t)n * width);
  const int32_t* slots = a.i32(13, "slots", (size_t)n);
  if (!a.ok()) return info.Env().Undefined();
  const int64_t total = (int64_t)L.num_blocks * L.block_size;
  for (int i = 0; i < n; i++)
    if (slots[i] < 0 || slots[i] >= total) {
      a.fail_range("KV slot " + std::to_string(slots[i]) + " outside the cache (" + std::to_string(total) + " slots)");
      return info.Env().Undefined();
    }
  std::lock_guard<std::mutex> lk(op_mutex());
  store_kv(L, k, v, n, slots);
  return info.Env().Undefined();
}

// attention(layer x10, q, out, totalRows, numHeads, scale, window (0 = none), seqMeta, tables, softcap (0 = none)[, sinks])
// seqMeta holds [qStart, qLen, kvLen, tableOffset, tableLen] per sequence; tables the block ids.
Napi::Value Attention(const Napi::CallbackInfo& info) {
  Args a(info, "attention");
  KvLayerView L;
  if (!layer_arg(a, 0, &L)) return info.Env().Undefined();
  const int total_rows = (int)a.integer(12, "totalRows", 0, INT32_MAX);
  const int num_heads = (int)a.integer(13, "numHeads", 1, 1 << 16);
  const double scale = a.number(14, "scale");
  const int window = (int)a.integer(15, "slidingWindow", 0, INT32_MAX);
  if (a.ok() && num_heads % L.kv_heads != 0)
    a.fail("numHeads " + std::to_string(num_heads) + " is not a multiple of numKvHeads " + std::to_string(L.kv_heads));
  const size_t qsize = (size_t)total_rows * num_heads * L.hd;
  const float* q = a.f32(10, "q", qsize);
  float* out = a.f32(11, "out", qsize);
  const int32_t* meta = a.i32(16, "seqMeta", 0);
  const size_t meta_len = a.last_length();
  const int32_t* tables = a.i32(17, "blockTables", 0);
  const size_t tables_len = a.last_length();
  const double softcap = a.number(18, "softcap");
  if (a.ok() && !(softcap >= 0)) a.fail("softcap must be >= 0");
  // Optional: one sink logit per query head (absent or undefined: none).
  const float* sinks = a.f32_or_null(19, "sinks", (size_t)num_heads);
  if (!a.ok()) return info.Env().Undefined();
  if (meta_len % 5 != 0) {
    a.fail("seqMeta length must be a multiple of 5");
    return info.Env().Undefined();
  }
  std::lock_guard<std::mutex> lk(op_mutex());
  static std::vector<Seq> seqs;  // reused between calls (guarded by the op mutex)
  seqs.clear();
  for (size_t i = 0; i < meta_len / 5; i++) {
    const int32_t* m = meta + i * 5;
    const int q_start = m[0], q_len = m[1], kv_len = m[2], toff = m[3], tlen = m[4];
    auto which = [i] { return "sequence " + std::to_string(i) + ": "; };  // built only on failure
    if (q_start < 0 || q_len < 0 || (int64_t)q_start + q_len > total_rows) {
      a.fail_range(which() + "query rows [" + std::to_string(q_start) + ", +" + std::to_string(q_len) + ") outside q");
      return info.Env().Undefined();
    }
    if (kv_len < q_len) {
      a.fail_range(which() + "kvLen " + std::to_string(kv_len) + " < qLen " + std::to_string(q_len));
      return info.Env().Undefined();
    }
    const int64_t need = ((int64_t)kv_len + L.block_size - 1) / L.block_size;
    if (toff < 0 || tlen < need || (size_t)toff + (size_t)tlen > tables_len) {
      a.fail_range(which() + "block table has " + std::to_string(tlen) + " blocks, kvLen " + std::to_string(kv_len) +
                   " needs " + std::to_string(need));
      return info.Env().Undefined();
    }
    for (int64_t b = 0; b < need; b++)
      if (tables[toff + b] < 0 || tables[toff + b] >= L.num_blocks) {
        a.fail_range(which() + "block id " + std::to_string(tables[toff + b]) + " outside the cache (" +
                     std::to_string(L.num_blocks) + " blocks)");
        return info.Env().Undefined();
      }
    if (q_len > 0) seqs.push_back({q_start, q_len, kv_len, tables + toff});
  }
  attention(L, seqs, q, out, num_heads, (float)scale, window, (float)softcap, sinks);
  return info.Env().Undefined();
}

}  // namespace

void InitAttention(Napi::Env env, Napi::Object exports) {
  exports.Set("storeKv", Napi::Function::New(env, StoreKv));
  exports.Set("attention", Napi::Function::New(env, Attention));
}

}  // namespace svc
