// storeKv and attention over the paged KV cache ([numBlocks][blockSize][numKvHeads] rows, a row
// being one head vector in its dtype's row_bytes(headDim) bytes). K and V each have their own dtype;
// its traits row (dtypes.h) names the codec slots, resolved once per op. Attention is flash-style:
// each task owns some query rows of one sequence and the query heads that share one KV head; it walks
// the sequence's KV blocks once, decoding each block (f32 is read in place) into scratch, and keeps a
// running max, denominator and output per query (online softmax), so no [queries x keys] score
// matrix is ever materialised. Rotated dtypes (turbo) decode to R·x: a task rotates its queries once
// when K is rotated (q·k = Rq·Rk) and un-rotates its outputs once when V is.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "dtypes.h"
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

struct Task {
  int seq, j0, j1, kv_head, h0, h1;
};

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

// Rows of one KV head in block `phys` as f32: straight into the cache for f32, else decoded into buf
// (rotated dtypes: in the rotated domain).
const float* block_rows(const KvLayerView& L, const KvSide& side, const KvCodec& c, int phys, int kv_head, int nt,
                        float* buf, size_t* stride) {
  const size_t first = (size_t)phys * L.block_size * L.kv_heads + kv_head;  // row index
  if (!c.decode) {
    *stride = (size_t)L.kv_heads * L.hd;
    return reinterpret_cast<const float*>(side.data) + first * L.hd;
  }
  *stride = (size_t)L.hd;
  const size_t step = (size_t)L.kv_heads * side.row;
  const uint8_t* src = side.data + first * side.row;
  for (int t = 0; t < nt; t++) c.decode(src + (size_t)t * step, buf + (size_t)t * L.hd, L.hd, c.scale);
  return buf;
}

void run_task(const Kernels& K, const KvLayerView& L, const KvCodec& kc, const KvCodec& vc, const Seq& s, const Task& tk,
              const float* q, float* out, int num_heads, float scale, int window, float softcap, const float* sinks, int ith) {
  const int hd = L.hd, bs = L.block_size;
  const int nh = tk.h1 - tk.h0;
  const int nq = (tk.j1 - tk.j0) * nh;
  // Scratch: Q (pre-scaled) | O | M | Lsum | S | Kbuf | Vbuf.
  const size_t floats = (size_t)nq * hd * 2 + (size_t)nq * 2 + (size_t)bs + (size_t)bs * hd * 2;
  float* Q = static_cast<float*>(ThreadPool::instance().thread_scratch(ith, floats * sizeof(float)));
  float* O = Q + (size_t)nq * hd;
  float* M = O + (size_t)nq * hd;
  float* Ls = M + nq;
  float* S = Ls + nq;
  float* Kbuf = S + bs;
  float* Vbuf = Kbuf + (size_t)bs * hd;

  const int offset = s.kv_len - s.q_len;  // position of query row 0
  for (int j = tk.j0; j < tk.j1; j++)
    for (int h = tk.h0; h < tk.h1; h++) {
      const int qi = (j - tk.j0) * nh + (h - tk.h0);
      const float* src = q + ((size_t)(s.q_start + j) * num_heads + h) * hd;
      for (int d = 0; d < hd; d++) Q[(size_t)qi * hd + d] = src[d] * scale;
      if (kc.rotated) turbo_rotate(Q + (size_t)qi * hd, hd);  // keys decode to R·k
      std::memset(O + (size_t)qi * hd, 0, (size_t)hd * sizeof(float));
      M[qi] = -std::numeric_limits<float>::infinity();
      Ls[qi] = 0.0f;
    }

  const int last = offset + tk.j1 - 1;  // newest key any query of this task sees
  const int lo = window > 0 ? std::max(0, offset + tk.j0 - window + 1) : 0;
  for (int blk = lo / bs; blk * bs <= last; blk++) {
    const int t0 = blk * bs;
    const int nt = std::min(bs, last + 1 - t0);
    size_t kstride, vstride;
    const float* Kr = block_rows(L, L.k, kc, s.table[blk], tk.kv_head, nt, Kbuf, &kstride);
    const float* Vr = block_rows(L, L.v, vc, s.table[blk], tk.kv_head, nt, Vbuf, &vstride);
    for (int j = tk.j0; j < tk.j1; j++) {
      const int pos = offset + j;
      // Causal: keys <= pos; sliding window (HF): pos - t < window.
      const int a = std::max(t0, window > 0 ? pos - window + 1 : 0);
      const int b = std::min(t0 + nt, pos + 1);
      if (a >= b) continue;
      const int cnt = b - a;
      for (int qi = (j - tk.j0) * nh; qi < (j - tk.j0 + 1) * nh; qi++) {
        K.qk(Q + (size_t)qi * hd, Kr + (size_t)(a - t0) * kstride, kstride, cnt, hd, S);
        if (softcap > 0.0f) K.softcap(S, S, cnt, softcap);  // Gemma 2: cap * tanh(score / cap)
        float mb = S[0];
        for (int t = 1; t < cnt; t++) mb = std::max(mb, S[t]);
        if (mb > M[qi]) {
          // New running max: rescale what has been accumulated so far.
          if (Ls[qi] > 0.0f) {
            const float alpha = std::exp(M[qi] - mb);
            Ls[qi] *= alpha;
            K.scale(O + (size_t)qi * hd, hd, alpha);
          }
          M[qi] = mb;
        }
        Ls[qi] += K.exp_sum(S, cnt, M[qi]);
        K.pv(S, Vr + (size_t)(a - t0) * vstride, vstride, cnt, hd, O + (size_t)qi * hd);
      }
    }
  }

  for (int j = tk.j0; j < tk.j1; j++)
    for (int h = tk.h0; h < tk.h1; h++) {
      const int qi = (j - tk.j0) * nh + (h - tk.h0);
      float* dst = out + ((size_t)(s.q_start + j) * num_heads + h) * hd;
      if (vc.rotated) turbo_unrotate(O + (size_t)qi * hd, hd);  // values were summed as R·v
      float inv = 1.0f / Ls[qi];
      if (sinks) {
        // GPT-OSS: the head's sink logit joins the denominator (its share dropped), under the larger max.
        const double m = std::max((double)M[qi], (double)sinks[h]);
        const double f = std::exp((double)M[qi] - m);
        inv = (float)(f / ((double)Ls[qi] * f + std::exp((double)sinks[h] - m)));
      }
      for (int d = 0; d < hd; d++) dst[d] = O[(size_t)qi * hd + d] * inv;
    }
}

void attention(const KvLayerView& L, const std::vector<Seq>& seqs, const float* q, float* out, int num_heads,
               float scale, int window, float softcap, const float* sinks) {
  const Kernels& K = kernels();
  const KvCodec kc = codec_for(K, L.k), vc = codec_for(K, L.v);
  const int nth = ThreadPool::instance().size();
  const int group = num_heads / L.kv_heads;
  // Task list, reused between calls (grows rarely).
  static std::vector<Task> tasks;
  tasks.clear();
  int64_t row_tasks = 0;
  for (const Seq& s : seqs) row_tasks += (s.q_len + kRowsPerTask - 1) / kRowsPerTask;
  // Too few (sequence, KV head) tasks to keep every thread busy (e.g. one decoding sequence):
  // split the query heads of a group across tasks, at the price of decoding the block more than once.
  const int64_t base = row_tasks * L.kv_heads;
  int per = group;
  if (base < 2 * nth && group > 1) {
    const int splits = (int)std::min<int64_t>(group, (2 * nth + base - 1) / std::max<int64_t>(base, 1));
    per = (group + splits - 1) / splits;
  }
  for (int si = 0; si < (int)seqs.size(); si++) {
    const Seq& s = seqs[(size_t)si];
    // Later rows see more keys (causal): queue them first so the expensive tasks start early.
    for (int j0 = ((s.q_len - 1) / kRowsPerTask) * kRowsPerTask; j0 >= 0; j0 -= kRowsPerTask)
      for (int kvh = 0; kvh < L.kv_heads; kvh++)
        for (int h0 = kvh * group; h0 < (kvh + 1) * group; h0 += per)
          tasks.push_back({si, j0, std::min(s.q_len, j0 + kRowsPerTask), kvh, h0, std::min((kvh + 1) * group, h0 + per)});
  }
  auto body = [&](int64_t b, int64_t e, int ith) {
    for (int64_t t = b; t < e; t++) {
      const Task& tk = tasks[(size_t)t];
      run_task(K, L, kc, vc, seqs[(size_t)tk.seq], tk, q, out, num_heads, scale, window, softcap, sinks, ith);
    }
  };
  parallel_for((int64_t)tasks.size(), 1, body);
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
