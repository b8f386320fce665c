// Multi-head latent attention (DeepSeek-V2 MLA, kv_b_proj absorbed) over a paged latent cache: one
// "KV head" per token, a row of hd = latent + rope values ([c_kv | k_pe]) in the layer's K dtype, and
// no V side: the value of a row is its first `latent` values. storeLatentKv codes rows with the K
// side's encoder; mlaAttention is attention.cc's flash-style loop specialised to that layout — a
// task owns up to 16 query rows of one sequence and a range of query heads (all of them share the
// one latent head), walks the sequence's blocks once, decoding each block into scratch (f32 is read
// in place) once for scores and values alike, and keeps an online softmax per query. The per-ISA
// pieces are the Kernels table's qk / pv / exp_sum / scale slots (scalar, AVX2, AVX-512), so every
// CPU path runs its own SIMD code. Rotated dtypes (turbo) decode to R·x, whose leading elements are
// not c_kv: refused.
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
#include "napi_args.h"
#include "quant.h"
#include "threadpool.h"

namespace svc {
namespace {

constexpr int kRowsPerTask = 16;

struct LatentLayer {
  int dtype, num_blocks, block_size, hd;
  uint8_t* data;
  double scale;
  size_t row;  // bytes per token row
  KvEncodeFn encode;
  KvDecodeFn decode;  // null: f32, read in place
};

struct MlaSeq {
  int q_start, q_len, kv_len;
  const int32_t* table;
};

struct MlaTask {
  int seq, j0, j1, h0, h1;
};

void store_latent(const LatentLayer& L, const float* x, int n, const int32_t* slots) {
  auto body = [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; i++) L.encode(x + (size_t)i * L.hd, L.data + (size_t)slots[i] * L.row, L.hd, L.scale);
  };
  const bool costly = L.dtype >= kKvNVFP4;
  if (costly ? n >= 8 : n >= 64) parallel_for(n, costly ? 2 : 32, body);
  else body(0, n, 0);
}

void run_mla_task(const Kernels& K, const LatentLayer& L, const MlaSeq& s, const MlaTask& tk, const float* q, float* out,
                  int num_heads, int latent, float scale, int ith) {
  const int hd = L.hd, bs = L.block_size;
  const int nh = tk.h1 - tk.h0;
  const int nq = (tk.j1 - tk.j0) * nh;
  // Scratch: Q (pre-scaled) [nq, hd] | O [nq, latent] | M | Lsum | S [bs] | Rows [bs, hd].
  const size_t floats = (size_t)nq * hd + (size_t)nq * latent + (size_t)nq * 2 + (size_t)bs + (size_t)bs * hd;
  float* Q = static_cast<float*>(ThreadPool::instance().thread_scratch(ith, floats * sizeof(float)));
  float* O = Q + (size_t)nq * hd;
  float* M = O + (size_t)nq * latent;
  float* Ls = M + nq;
  float* S = Ls + nq;
  float* Rbuf = S + bs;

  const int offset = s.kv_len - s.q_len;
  for (int j = tk.j0; j < tk.j1; j++)
    for (int h = tk.h0; h < tk.h1; h++) {
      const int qi = (j - tk.j0) * nh + (h - tk.h0);
      const float* src = q + ((size_t)(s.q_start + j) * num_heads + h) * hd;
      for (int d = 0; d < hd; d++) Q[(size_t)qi * hd + d] = src[d] * scale;
      std::memset(O + (size_t)qi * latent, 0, (size_t)latent * sizeof(float));
      M[qi] = -std::numeric_limits<float>::infinity();
      Ls[qi] = 0.0f;
    }

  const int last = offset + tk.j1 - 1;
  for (int blk = 0; blk * bs <= last; blk++) {
    const int t0 = blk * bs;
    const int nt = std::min(bs, last + 1 - t0);
    const uint8_t* src = L.data + (size_t)s.table[blk] * bs * L.row;
    const float* R;
    if (L.decode) {
      for (int t = 0; t < nt; t++) L.decode(src + (size_t)t * L.row, Rbuf + (size_t)t * hd, hd, L.scale);
      R = Rbuf;
    } else {
      R = reinterpret_cast<const float*>(src);
    }
    for (int j = tk.j0; j < tk.j1; j++) {
      const int cnt = std::min(t0 + nt, offset + j + 1) - t0;  // causal: keys <= pos
      if (cnt <= 0) continue;
      for (int qi = (j - tk.j0) * nh; qi < (j - tk.j0 + 1) * nh; qi++) {
        K.qk(Q + (size_t)qi * hd, R, (size_t)hd, cnt, hd, S);
        float mb = S[0];
        for (int t = 1; t < cnt; t++) mb = std::max(mb, S[t]);
        if (mb > M[qi]) {
          if (Ls[qi] > 0.0f) {
            const float alpha = std::exp(M[qi] - mb);
            Ls[qi] *= alpha;
            K.scale(O + (size_t)qi * latent, latent, alpha);
          }
          M[qi] = mb;
        }
        Ls[qi] += K.exp_sum(S, cnt, M[qi]);
        K.pv(S, R, (size_t)hd, cnt, latent, O + (size_t)qi * latent);  // values: each row's leading c_kv
      }
    }
  }

  for (int j = tk.j0; j < tk.j1; j++)
    for (int h = tk.h0; h < tk.h1; h++) {
      const int qi = (j - tk.j0) * nh + (h - tk.h0);
      float* dst = out + ((size_t)(s.q_start + j) * num_heads + h) * latent;
      const float inv = 1.0f / Ls[qi];
      for (int d = 0; d < latent; d++) dst[d] = O[(size_t)qi * latent + d] * inv;
    }
}

void mla_attention(const LatentLayer& L, const std::vector<MlaSeq>& seqs, const float* q, float* out, int num_heads,
                   int latent, float scale) {
  const Kernels& K = kernels();
  const int nth = ThreadPool::instance().size();
  static std::vector<MlaTask> tasks;
  tasks.clear();
  int64_t row_tasks = 0;
  for (const MlaSeq& s : seqs) row_tasks += (s.q_len + kRowsPerTask - 1) / kRowsPerTask;
  // Every head shares the one latent head: split the heads across tasks only when there are too few
  // row tasks to keep the threads busy (decode), at the price of decoding a block once per task.
  int per = num_heads;
  if (row_tasks < 2 * nth && num_heads > 1) {
    const int splits = (int)std::min<int64_t>(num_heads, (2 * nth + row_tasks - 1) / std::max<int64_t>(row_tasks, 1));
    per = (num_heads + splits - 1) / splits;
  }
  for (int si = 0; si < (int)seqs.size(); si++) {
    const MlaSeq& s = seqs[(size_t)si];
    for (int j0 = ((s.q_len - 1) / kRowsPerTask) * kRowsPerTask; j0 >= 0; j0 -= kRowsPerTask)
      for (int h0 = 0; h0 < num_heads; h0 += per)
        tasks.push_back({si, j0, std::min(s.q_len, j0 + kRowsPerTask), h0, std::min(num_heads, h0 + per)});
  }
  auto body = [&](int64_t b, int64_t e, int ith) {
    for (int64_t t = b; t < e; t++) {
      const MlaTask& tk = tasks[(size_t)t];
      run_mla_task(K, L, seqs[(size_t)tk.seq], tk, q, out, num_heads, latent, scale, ith);
    }
  };
  parallel_for((int64_t)tasks.size(), 1, body);
}

// Layer arguments first..first+5: kDtype, numBlocks, blockSize, headDim, k, kScale.
bool latent_arg(Args& a, size_t first, LatentLayer* L) {
  L->dtype = (int)a.integer(first, "k dtype code", 0, kKvDTypeCount - 1);
  L->num_blocks = (int)a.integer(first + 1, "numBlocks", 0, INT32_MAX);
  L->block_size = (int)a.integer(first + 2, "blockSize", 1, 1 << 20);
  L->hd = (int)a.integer(first + 3, "headDim", 1, 1 << 16);
  if (!a.ok()) return false;
  const KvDTypeTraits& t = kv_dtype_traits(L->dtype);
  if (t.rotated) {
    a.fail(std::string("KV dtype ") + t.name + " (rotated rows) is not supported for MLA layers");
    return false;
  }
  L->row = t.row_bytes(L->hd);
  L->data = a.u8(first + 4, "layer.k", (size_t)L->num_blocks * L->block_size * L->row);
  const size_t off = a.last_byte_offset();
  L->scale = a.number(first + 5, "kScale");
  if (!a.ok()) return false;
  if (off % t.align != 0) {
    a.fail("layer.k must start at a multiple of its dtype's alignment (use its own ArrayBuffer)");
    return false;
  }
  if (t.scaled && !(L->scale > 0.0)) {
    a.fail(std::string(t.name) + " kScale must be positive");
    return false;
  }
  const Kernels& K = kernels();
  L->encode = K.*t.encode;
  L->decode = t.decode ? K.*t.decode : nullptr;
  return true;
}

// storeLatentKv(layer x6, latent, n, slots)
Napi::Value StoreLatentKv(const Napi::CallbackInfo& info) {
  Args a(info, "storeLatentKv");
  LatentLayer L;
  if (!latent_arg(a, 0, &L)) return info.Env().Undefined();
  const int n = (int)a.integer(7, "n", 0, INT32_MAX);
  const float* x = a.f32(6, "latent", (size_t)n * L.hd);
  const int32_t* slots = a.i32(8, "slots", (size_t)n);
  if (!a.ok()) return info.Env().Undefined();
  const int64_t total = (int64_t)L.num_blocks * L.block_size;
  for (int i = 0; i < n; i++)
    if (slots[i] < 0 || slots[i] >= total) {
      a.fail_range("KV slot " + std::to_string(slots[i]) + " outside the cache (" + std::to_string(total) + " slots)");
      return info.Env().Undefined();
    }
  std::lock_guard<std::mutex> lk(op_mutex());
  store_latent(L, x, n, slots);
  return info.Env().Undefined();
}

// mlaAttention(layer x6, q, out, totalRows, numHeads, scale, latentDim, seqMeta, tables)
// seqMeta holds [qStart, qLen, kvLen, tableOffset, tableLen] per sequence; tables the block ids.
Napi::Value MlaAttention(const Napi::CallbackInfo& info) {
  Args a(info, "mlaAttention");
  LatentLayer L;
  if (!latent_arg(a, 0, &L)) return info.Env().Undefined();
  const int total_rows = (int)a.integer(8, "totalRows", 0, INT32_MAX);
  const int num_heads = (int)a.integer(9, "numHeads", 1, 1 << 16);
  const double scale = a.number(10, "scale");
  const int latent = (int)a.integer(11, "latentDim", 1, L.hd);
  const float* q = a.f32(6, "q", (size_t)total_rows * num_heads * L.hd);
  float* out = a.f32(7, "out", (size_t)total_rows * num_heads * latent);
  const int32_t* meta = a.i32(12, "seqMeta", 0);
  const size_t meta_len = a.last_length();
  const int32_t* tables = a.i32(13, "blockTables", 0);
  const size_t tables_len = a.last_length();
  if (!a.ok()) return info.Env().Undefined();
  if (meta_len % 5 != 0) {
    a.fail("seqMeta length must be a multiple of 5");
    return info.Env().Undefined();
  }
  std::lock_guard<std::mutex> lk(op_mutex());
  static std::vector<MlaSeq> seqs;
  seqs.clear();
  for (size_t i = 0; i < meta_len / 5; i++) {
    const int32_t* m = meta + i * 5;
    const int q_start = m[0], q_len = m[1], kv_len = m[2], toff = m[3], tlen = m[4];
    auto which = [i] { return "sequence " + std::to_string(i) + ": "; };
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
  mla_attention(L, seqs, q, out, num_heads, latent, (float)scale);
  return info.Env().Undefined();
}

}  // namespace

void InitMlaAttention(Napi::Env env, Napi::Object exports) {
  exports.Set("storeLatentKv", Napi::Function::New(env, StoreLatentKv));
  exports.Set("mlaAttention", Napi::Function::New(env, MlaAttention));
}

}  // namespace svc
