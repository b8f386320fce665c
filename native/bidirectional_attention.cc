// Unmasked attention over dense rows (vision encoders, attention pooling): every query sees every
// key, and there is no KV cache. Both products are f32 GEMMs through the kernel table's gemm_f32 slot,
// so they get the same register tiling as the matmuls: a task takes up to kRowsPerTask queries of one
// head, computes their scores against all keys at once (S = Q·Kᵀ, the keys of the head being the
// "weight rows", read in place with the row stride of the interleaved heads), softmaxes each row,
// and multiplies S by V. For that second GEMM V's columns must be rows: V is transposed once per
// call into [heads][headDim][nk] shared scratch.
#include <napi.h>

#include <algorithm>
#include <mutex>

#include "gemm.h"
#include "kernels.h"
#include "napi_args.h"
#include "threadpool.h"

namespace svc {
namespace {

constexpr int kRowsPerTask = 32;  // scores of 32 queries x nk keys stay in a thread's L2 up to a few thousand keys

void bidirectional_attention(const float* q, int nq, const float* k, const float* v, int nk, int heads, int hd,
                             float scale, float* out) {
  if (nq == 0) return;
  const Kernels& K = kernels();
  ThreadPool& pool = ThreadPool::instance();
  const size_t width = (size_t)heads * hd;
  float* vt = static_cast<float*>(pool.shared_scratch((size_t)heads * hd * nk * sizeof(float)));
  auto transpose = [&](int64_t h0, int64_t h1, int) {
    for (int64_t h = h0; h < h1; h++)
      for (int t = 0; t < nk; t++) {
        const float* src = v + (size_t)t * width + (size_t)h * hd;
        float* dst = vt + (size_t)h * hd * nk + t;
        for (int d = 0; d < hd; d++) dst[(size_t)d * nk] = src[d];
      }
  };
  const int chunks = (nq + kRowsPerTask - 1) / kRowsPerTask;
  auto body = [&](int64_t t0, int64_t t1, int ith) {
    float* S = static_cast<float*>(pool.thread_scratch(ith, (size_t)kRowsPerTask * nk * sizeof(float)));
    for (int64_t task = t0; task < t1; task++) {
      const int h = (int)(task % heads);
      const int i0 = (int)(task / heads) * kRowsPerTask;
      const int rows = std::min(kRowsPerTask, nq - i0);
      K.gemm_f32(rows, hd, q + (size_t)i0 * width + (size_t)h * hd, width, reinterpret_cast<const uint8_t*>(k + (size_t)h * hd),
                 width * sizeof(float), 0, nk, S, (size_t)nk);
      for (int r = 0; r < rows; r++) {
        float* s = S + (size_t)r * nk;
        K.scale(s, nk, scale);
        float m = s[0];
        for (int t = 1; t < nk; t++) m = std::max(m, s[t]);
        const float sum = K.exp_sum(s, nk, m);
        K.scale(s, nk, 1.0f / sum);  // probabilities, so S·V is the output as it stands
      }
      // This task's query rows of this head are read above and written only here: out may alias q.
      K.gemm_f32(rows, nk, S, (size_t)nk, reinterpret_cast<const uint8_t*>(vt + (size_t)h * hd * nk), (size_t)nk * sizeof(float), 0,
                 hd, out + (size_t)i0 * width + (size_t)h * hd, width);
    }
  };
  if (2.0 * nq * nk * (double)width < kSerialMacs) {
    transpose(0, heads, 0);
    body(0, (int64_t)chunks * heads, 0);
  } else {
    parallel_for(heads, 1, transpose);
    parallel_for((int64_t)chunks * heads, 1, body);
  }
}

// bidirectionalAttention(q, nq, k, v, nk, numHeads, headDim, scale, out)
Napi::Value BidirectionalAttention(const Napi::CallbackInfo& info) {
  Args a(info, "bidirectionalAttention");
  const int nq = (int)a.integer(1, "nq", 0, INT32_MAX);
  const int nk = (int)a.integer(4, "nk", 1, INT32_MAX);
  const int heads = (int)a.integer(5, "numHeads", 1, 1 << 16);
  const int hd = (int)a.integer(6, "headDim", 1, 1 << 16);
  const double scale = a.number(7, "scale");
  const size_t width = (size_t)heads * hd;
  const float* q = a.f32(0, "q", (size_t)nq * width);
  const float* k = a.f32(2, "k", (size_t)nk * width);
  const float* v = a.f32(3, "v", (size_t)nk * width);
  float* out = a.f32(8, "out", (size_t)nq * width);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  bidirectional_attention(q, nq, k, v, nk, heads, hd, (float)scale, out);
  return info.Env().Undefined();
}

}  // namespace

void InitBidirectionalAttention(Napi::Env env, Napi::Object exports) {
  exports.Set("bidirectionalAttention", Napi::Function::New(env, BidirectionalAttention));
}

}  // namespace svc
