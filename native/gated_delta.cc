// Recurrent ops of linear-attention layers (Qwen3.5 / Qwen3-Next GatedDeltaNet), per sequence with a
// state slot each (src/kernels/ops.ts: causalConv1d, gatedDeltaRule):
//   - causal depthwise conv1d (+ bias, Mamba2's) + SiLU carrying the last kernel - 1 inputs per channel;
//   - the gated delta rule, state [kDim, vDim] per (slot, v head): token by token in its recurrent form
//     (decode, short pieces), or by chunks of kDeltaChunk tokens in the chunked form (WY / UT transform,
//     transformers' torch_chunk_gated_delta_rule) when a sequence brings at least chunk_min tokens.
// The inner loops run along the channel / v axis, which is contiguous, in scalar, AVX2 and AVX-512
// variants chosen by the current kernel path (cpu_features.h), so tests of the fallbacks cover each.
// Threads split (sequence, channel block) and (sequence, v head) tasks: a state slot is only ever
// touched by one task.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "chunk_gemm.h"
#include "cpu_features.h"
#include "kernels.h"
#include "napi_args.h"
#include "threadpool.h"

namespace svc {
namespace {

struct RecSeq {
  int q_start, q_len, slot;
};

// ---- conv: acc[c] += w[c] * x[c] over n channels ----
void fma_row_scalar(const float* w, const float* x, float* acc, int n) {
  for (int c = 0; c < n; c++) acc[c] += w[c] * x[c];
}

// ---- delta rule, per token: with row d of S (length V) ----
// pass 1: S[d] *= decay; mem += S[d] * k[d]        (mem = (decay S)^T k)
// pass 2: S[d] += k[d] * delta; o += S[d] * q[d]   (o = S^T q)
void decay_mem_scalar(float* S, int K, int V, float decay, const float* kt, float* mem) {
  for (int e = 0; e < V; e++) mem[e] = 0.0f;
  for (int d = 0; d < K; d++) {
    float* row = S + (size_t)d * V;
    const float kd = kt[d];
    for (int e = 0; e < V; e++) {
      row[e] *= decay;
      mem[e] += row[e] * kd;
    }
  }
}
void update_out_scalar(float* S, int K, int V, const float* kt, const float* qt, const float* delta, float* o) {
  for (int e = 0; e < V; e++) o[e] = 0.0f;
  for (int d = 0; d < K; d++) {
    float* row = S + (size_t)d * V;
    const float kd = kt[d], qd = qt[d];
    for (int e = 0; e < V; e++) {
      row[e] += kd * delta[e];
      o[e] += row[e] * qd;
    }
  }
}

#if defined(__x86_64__)
#define SVC_GD_AVX2 __attribute__((target("avx2,fma")))
#define SVC_GD_AVX512 __attribute__((target("avx512f,avx2,fma")))

SVC_GD_AVX2 void fma_row_avx2(const float* w, const float* x, float* acc, int n) {
  int c = 0;
  for (; c + 8 <= n; c += 8)
    _mm256_storeu_ps(acc + c, _mm256_fmadd_ps(_mm256_loadu_ps(w + c), _mm256_loadu_ps(x + c), _mm256_loadu_ps(acc + c)));
  for (; c < n; c++) acc[c] += w[c] * x[c];
}
SVC_GD_AVX2 void decay_mem_avx2(float* S, int K, int V, float decay, const float* kt, float* mem) {
  for (int e = 0; e < V; e++) mem[e] = 0.0f;
  const __m256 dv = _mm256_set1_ps(decay);
  for (int d = 0; d < K; d++) {
    float* row = S + (size_t)d * V;
    const __m256 kd = _mm256_set1_ps(kt[d]);
    int e = 0;
    for (; e + 8 <= V; e += 8) {
      const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(row + e), dv);
      _mm256_storeu_ps(row + e, s);
      _mm256_storeu_ps(mem + e, _mm256_fmadd_ps(s, kd, _mm256_loadu_ps(mem + e)));
    }
    for (; e < V; e++) {
      row[e] *= decay;
      mem[e] += row[e] * kt[d];
    }
  }
}
SVC_GD_AVX2 void update_out_avx2(float* S, int K, int V, const float* kt, const float* qt, const float* delta, float* o) {
  for (int e = 0; e < V; e++) o[e] = 0.0f;
  for (int d = 0; d < K; d++) {
    float* row = S + (size_t)d * V;
    const __m256 kd = _mm256_set1_ps(kt[d]), qd = _mm256_set1_ps(qt[d]);
    int e = 0;
    for (; e + 8 <= V; e += 8) {
      const __m256 s = _mm256_fmadd_ps(kd, _mm256_loadu_ps(delta + e), _mm256_loadu_ps(row + e));
      _mm256_storeu_ps(row + e, s);
      _mm256_storeu_ps(o + e, _mm256_fmadd_ps(s, qd, _mm256_loadu_ps(o + e)));
    }
    for (; e < V; e++) {
      row[e] += kt[d] * delta[e];
      o[e] += row[e] * qt[d];
    }
  }
}

SVC_GD_AVX512 inline __mmask16 tail_mask(int left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }

SVC_GD_AVX512 void fma_row_avx512(const float* w, const float* x, float* acc, int n) {
  for (int c = 0; c < n; c += 16) {
    const __mmask16 m = tail_mask(n - c);
    const __m512 r = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w + c), _mm512_maskz_loadu_ps(m, x + c), _mm512_maskz_loadu_ps(m, acc + c));
    _mm512_mask_storeu_ps(acc + c, m, r);
  }
}
SVC_GD_AVX512 void decay_mem_avx512(float* S, int K, int V, float decay, const float* kt, float* mem) {
  for (int e = 0; e < V; e++) mem[e] = 0.0f;
  const __m512 dv = _mm512_set1_ps(decay);
  for (int d = 0; d < K; d++) {
    float* row = S + (size_t)d * V;
    const __m512 kd = _mm512_set1_ps(kt[d]);
    for (int e = 0; e < V; e += 16) {
      const __mmask16 m = tail_mask(V - e);
      const __m512 s = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + e), dv);
      _mm512_mask_storeu_ps(row + e, m, s);
      _mm512_mask_storeu_ps(mem + e, m, _mm512_fmadd_ps(s, kd, _mm512_maskz_loadu_ps(m, mem + e)));
    }
  }
}
SVC_GD_AVX512 void update_out_avx512(float* S, int K, int V, const float* kt, const float* qt, const float* delta, float* o) {
  for (int e = 0; e < V; e++) o[e] = 0.0f;
  for (int d = 0; d < K; d++) {
    float* row = S + (size_t)d * V;
    const __m512 kd = _mm512_set1_ps(kt[d]), qd = _mm512_set1_ps(qt[d]);
    for (int e = 0; e < V; e += 16) {
      const __mmask16 m = tail_mask(V - e);
      const __m512 s = _mm512_fmadd_ps(kd, _mm512_maskz_loadu_ps(m, delta + e), _mm512_maskz_loadu_ps(m, row + e));
      _mm512_mask_storeu_ps(row + e, m, s);
      _mm512_mask_storeu_ps(o + e, m, _mm512_fmadd_ps(s, qd, _mm512_maskz_loadu_ps(m, o + e)));
    }
  }
}
#endif

struct RecurrentKernels {
  void (*fma_row)(const float*, const float*, float*, int);
  void (*decay_mem)(float*, int, int, float, const float*, float*);
  void (*update_out)(float*, int, int, const float*, const float*, const float*, float*);
};

RecurrentKernels recurrent_kernels() {
#if defined(__x86_64__)
  switch (current_cpu_path()) {
    case CpuPath::Avx512:
    case CpuPath::Amx:
      return {fma_row_avx512, decay_mem_avx512, update_out_avx512};
    case CpuPath::Avx2:
      return {fma_row_avx2, decay_mem_avx2, update_out_avx2};
    default:
      break;
  }
#endif
  return {fma_row_scalar, decay_mem_scalar, update_out_scalar};
}

constexpr int kConvChannelBlock = 256;

void causal_conv1d(const float* x, int channels, int kernel, const float* w, const float* bias, const std::vector<RecSeq>& seqs,
                   float* state, float* out) {
  const RecurrentKernels R = recurrent_kernels();
  const int ctx = kernel - 1;
  const int blocks = (channels + kConvChannelBlock - 1) / kConvChannelBlock;
  const int64_t tasks = (int64_t)seqs.size() * blocks;
  auto body = [&](int64_t b, int64_t e, int) {
    for (int64_t task = b; task < e; task++) {
      const RecSeq& s = seqs[(size_t)(task / blocks)];
      const int c0 = (int)(task % blocks) * kConvChannelBlock;
      const int nc = std::min(kConvChannelBlock, channels - c0);
      float* st = state + (size_t)s.slot * ctx * channels + c0;
      // Row r of the sequence's inputs (r < 0: the carried context).
      auto input = [&](int r) -> const float* {
        return r < 0 ? st + (size_t)(ctx + r) * channels : x + (size_t)(s.q_start + r) * channels + c0;
      };
      for (int t = 0; t < s.q_len; t++) {
        float* o = out + (size_t)(s.q_start + t) * channels + c0;
        if (bias) std::memcpy(o, bias + c0, (size_t)nc * sizeof(float));
        else std::memset(o, 0, (size_t)nc * sizeof(float));
        for (int j = 0; j < kernel; j++) R.fma_row(w + (size_t)j * channels + c0, input(t - ctx + j), o, nc);
        for (int c = 0; c < nc; c++) o[c] = o[c] / (1.0f + std::exp(-o[c]));
      }
      // The new context: the last ctx inputs of [context, rows]; context rows only move forward.
      for (int j = 0; j < ctx; j++) {
        const int r = s.q_len - ctx + j;
        if (r < 0) std::memmove(st + (size_t)j * channels, st + (size_t)(ctx + r) * channels, (size_t)nc * sizeof(float));
        else std::memcpy(st + (size_t)j * channels, input(r), (size_t)nc * sizeof(float));
      }
    }
  };
  const int64_t work = (int64_t)channels * kernel * std::max(1, seqs.empty() ? 0 : seqs[0].q_len);
  if (tasks > 1 && work >= 4096) parallel_for(tasks, 1, body);
  else body(0, tasks, 0);
}

struct DeltaDims {
  int nk, nv, K, V;
  bool l2;
};

constexpr int kDeltaChunk = 64;

// One (sequence, v head) in the recurrent form, token by token. scratch: 2 K + 2 V floats.
void delta_recurrent(const RecurrentKernels& R, const float* q, const float* k, const float* v, const float* g, const float* beta,
                     const RecSeq& s, int h, const DeltaDims& d, float* S, float* out, float* scratch) {
  const int kh = h / (d.nv / d.nk);
  const float scale = (float)(1.0 / std::sqrt((double)d.K));
  float* qt = scratch;
  float* kt = qt + d.K;
  float* mem = kt + d.K;
  float* o = mem + d.V;
  for (int t = s.q_start; t < s.q_start + s.q_len; t++) {
    const float* qs = q + ((size_t)t * d.nk + kh) * d.K;
    const float* ks = k + ((size_t)t * d.nk + kh) * d.K;
    double qss = 0, kss = 0;
    for (int i = 0; i < d.K; i++) {
      qss += (double)qs[i] * qs[i];
      kss += (double)ks[i] * ks[i];
    }
    const float qinv = d.l2 ? (float)(1.0 / std::sqrt(qss + 1e-6)) : 1.0f;
    const float kinv = d.l2 ? (float)(1.0 / std::sqrt(kss + 1e-6)) : 1.0f;
    for (int i = 0; i < d.K; i++) {
      qt[i] = qs[i] * qinv * scale;
      kt[i] = ks[i] * kinv;
    }
    const float decay = std::exp(g[(size_t)t * d.nv + h]);
    const float bt = beta[(size_t)t * d.nv + h];
    const float* vs = v + ((size_t)t * d.nv + h) * d.V;
    R.decay_mem(S, d.K, d.V, decay, kt, mem);
    for (int i = 0; i < d.V; i++) mem[i] = (vs[i] - mem[i]) * bt;  // delta
    R.update_out(S, d.K, d.V, kt, qt, mem, o);
    std::memcpy(out + ((size_t)t * d.nv + h) * d.V, o, (size_t)d.V * sizeof(float));
  }
}

// Scratch floats of one chunked task (delta_chunked's layout).
size_t delta_chunked_floats(const DeltaDims& d) {
  const size_t C = kDeltaChunk;
  return 2 * C * d.K + (size_t)d.K * C + 2 * C * C + 2 * C * d.V + C * d.V + 3 * C + 2 * C /* gam as doubles */;
}

// One (sequence, v head) in the chunked form, chunk by chunk (reference-recurrent.ts
// gatedDeltaRuleChunked has the math). Per chunk of c tokens, with the state S [K, V] updated in place:
//   kq = [k̂; q̂] (c + c rows of K), knT = k̂ᵀ;  gm = kq · knT (k̂k̂ᵀ and q̂k̂ᵀ, lower triangles);
//   ks = kq · S (k̂S, q̂S);  u = β (v − e^γ k̂S), then u_t += Σ_{j<t} A[t, j] u_j with
//   A[t, j] = −β_t e^{γ_t−γ_j} (k̂_t·k̂_j);  out = e^γ q̂S + P · u with P[t, j] = e^{γ_t−γ_j} (q̂_t·k̂_j), j ≤ t;
//   S = e^{γ_last} S + (e^{γ_last−γ} k̂)ᵀ · u.
void delta_chunked(const ChunkGemm& G, const Kernels& KT, const float* q, const float* k, const float* v, const float* g, const float* beta, const RecSeq& s,
                   int h, const DeltaDims& d, float* S, float* out, float* scratch) {
  const int kh = h / (d.nv / d.nk);
  const int K = d.K, V = d.V, C = kDeltaChunk;
  const double scale = 1.0 / std::sqrt((double)K);
  float* kq = scratch;                     // [2C, K]
  float* knT = kq + (size_t)2 * C * K;     // [K, C]
  float* gm = knT + (size_t)K * C;         // [2C, C]
  float* ks = gm + (size_t)2 * C * C;      // [2C, V]
  float* u = ks + (size_t)2 * C * V;       // [C, V]
  float* eg = u + (size_t)C * V;           // [C] e^γ
  float* bt = eg + C;                      // [C] β
  float* dl = bt + C;                      // [C] e^{γ_last − γ}
  double* gam = reinterpret_cast<double*>(dl + C);  // [C]
  const size_t ldo = (size_t)d.nv * V;
  const int end = s.q_start + s.q_len;
  auto prefetch_chunk = [&](int from) {
    // A head's rows are one short run per token, a page or more apart, which the hardware prefetchers
    // do not follow: the next chunk's q, k, v (and out, for writing) go to cache while this one computes.
    for (int t = from; t < std::min(from + C, end); t++) {
      const char* rows[3] = {reinterpret_cast<const char*>(q + ((size_t)t * d.nk + kh) * K),
                             reinterpret_cast<const char*>(k + ((size_t)t * d.nk + kh) * K),
                             reinterpret_cast<const char*>(v + ((size_t)t * d.nv + h) * V)};
      for (int r = 0; r < 3; r++)
        for (size_t b = 0; b < (size_t)(r < 2 ? K : V) * sizeof(float); b += 64) __builtin_prefetch(rows[r] + b, 0, 2);
      const char* o = reinterpret_cast<const char*>(out + ((size_t)t * d.nv + h) * V);
      for (size_t b = 0; b < (size_t)V * sizeof(float); b += 64) __builtin_prefetch(o + b, 1, 2);
    }
  };
  prefetch_chunk(s.q_start);
  for (int t0 = s.q_start; t0 < end; t0 += C) {
    const int c = std::min(C, end - t0);
    if (t0 + C < end) prefetch_chunk(t0 + C);
    float* qn = kq + (size_t)c * K;
    double acc = 0;
    for (int t = 0; t < c; t++) {
      const float* qs = q + ((size_t)(t0 + t) * d.nk + kh) * K;
      const float* ksrc = k + ((size_t)(t0 + t) * d.nk + kh) * K;
      const double qss = KT.sum_squares(qs, K), kss = KT.sum_squares(ksrc, K);
      const float qinv = (float)((d.l2 ? 1.0 / std::sqrt(qss + 1e-6) : 1.0) * scale);
      const float kinv = d.l2 ? (float)(1.0 / std::sqrt(kss + 1e-6)) : 1.0f;
      float* kr = kq + (size_t)t * K;
      float* qr = qn + (size_t)t * K;
      for (int i = 0; i < K; i++) {
        kr[i] = ksrc[i] * kinv;
        qr[i] = qs[i] * qinv;
        knT[(size_t)i * C + t] = kr[i];
      }
      acc += g[(size_t)(t0 + t) * d.nv + h];
      gam[t] = acc;
      eg[t] = (float)std::exp(acc);
      bt[t] = beta[(size_t)(t0 + t) * d.nv + h];
    }
    // k̂k̂ᵀ and q̂k̂ᵀ (lower triangles), then k̂S and q̂S.
    gemm_nn(G, c, c, K, kq, K, knT, C, gm, C, 0.0f, Tri::LowerCols);
    gemm_nn(G, c, c, K, qn, K, knT, C, gm + (size_t)c * C, C, 0.0f, Tri::LowerCols);
    gemm_nn(G, 2 * c, V, K, kq, K, S, V, ks, V, 0.0f);
    // The decays e^{γ_t−γ_j} turn k̂k̂ᵀ into A (j < t) and q̂k̂ᵀ into P (j ≤ t, zero above).
    for (int t = 0; t < c; t++) {
      float* a = gm + (size_t)t * C;
      float* p = gm + (size_t)(c + t) * C;
      for (int j = 0; j <= t; j++) {
        const float dec = std::exp((float)(gam[t] - gam[j]));
        a[j] *= -bt[t] * dec;
        p[j] *= dec;
      }
      for (int j = t + 1; j < c; j++) p[j] = 0.0f;
    }
    // u: the right-hand side, then forward substitution row by row (row t reads rows j < t).
    for (int t = 0; t < c; t++) {
      const float* vs = v + ((size_t)(t0 + t) * d.nv + h) * V;
      const float* kst = ks + (size_t)t * V;
      float* ut = u + (size_t)t * V;
      for (int e = 0; e < V; e++) ut[e] = bt[t] * (vs[e] - eg[t] * kst[e]);
      if (t > 0) G.rows(1, V, t, gm + (size_t)t * C, C, u, V, ut, V, 1.0f);
    }
    // out = e^γ q̂S + P · u, written in place in the op's output rows.
    float* o = out + (size_t)t0 * ldo + (size_t)h * V;
    for (int t = 0; t < c; t++) {
      const float* qst = ks + (size_t)(c + t) * V;
      float* ot = o + (size_t)t * ldo;
      for (int e = 0; e < V; e++) ot[e] = eg[t] * qst[e];
    }
    gemm_nn(G, c, V, c, gm + (size_t)c * C, C, u, V, o, ldo, 1.0f, Tri::LowerDepth);
    // The state leaving the chunk.
    const double last = gam[c - 1];
    for (int j = 0; j < c; j++) dl[j] = (float)std::exp(last - gam[j]);
    for (int i = 0; i < K; i++) {
      float* row = knT + (size_t)i * C;
      for (int j = 0; j < c; j++) row[j] *= dl[j];
    }
    gemm_nn(G, K, V, c, knT, C, u, V, S, V, eg[c - 1]);
  }
}

void gated_delta_rule(const float* q, const float* k, const float* v, const float* g, const float* beta,
                      const std::vector<RecSeq>& seqs, const DeltaDims& d, int chunk_min, float* state, float* out) {
  const RecurrentKernels R = recurrent_kernels();
  const ChunkGemm G = chunk_gemm();
  const Kernels& KT = kernels();
  const int64_t tasks = (int64_t)seqs.size() * d.nv;
  bool any_chunked = false;
  for (const RecSeq& s : seqs) any_chunked |= s.q_len >= chunk_min;
  const size_t floats = std::max<size_t>(2 * d.K + 2 * d.V, any_chunked ? delta_chunked_floats(d) : 0);
  auto body = [&](int64_t b, int64_t e, int ith) {
    float* scratch = static_cast<float*>(ThreadPool::instance().thread_scratch(ith, floats * sizeof(float)));
    for (int64_t task = b; task < e; task++) {
      const RecSeq& s = seqs[(size_t)(task / d.nv)];
      const int h = (int)(task % d.nv);
      float* S = state + ((size_t)s.slot * d.nv + h) * d.K * d.V;
      if (s.q_len >= chunk_min) delta_chunked(G, KT, q, k, v, g, beta, s, h, d, S, out, scratch);
      else delta_recurrent(R, q, k, v, g, beta, s, h, d, S, out, scratch);
    }
  };
  if (tasks > 1) parallel_for(tasks, 1, body);
  else body(0, tasks, 0);
}

// Sequences as an Int32Array of (qStart, qLen, slot) triples, checked against rows and slots.
std::vector<RecSeq> read_seqs(Args& a, size_t i, int64_t rows, int64_t num_slots) {
  std::vector<RecSeq> seqs;
  const int32_t* raw = a.i32(i, "seqs", 0);
  if (!a.ok()) return seqs;
  const size_t len = a.last_length();
  if (len % 3 != 0) {
    a.fail("seqs must hold (qStart, qLen, slot) triples");
    return seqs;
  }
  std::vector<char> used((size_t)std::max<int64_t>(num_slots, 0), 0);
  for (size_t j = 0; j < len; j += 3) {
    const RecSeq s{raw[j], raw[j + 1], raw[j + 2]};
    if (s.q_start < 0 || s.q_len < 0 || (int64_t)s.q_start + s.q_len > rows) a.fail_range("a sequence's rows are outside the inputs");
    else if (s.slot < 0 || s.slot >= num_slots) a.fail_range("a sequence's state slot is outside the state");
    else if (used[(size_t)s.slot]++) a.fail_range("two sequences share a state slot");
    seqs.push_back(s);
  }
  return seqs;
}

// causalConv1d(x, rows, channels, kernel, weight, seqs, state, numSlots, out, bias?)
Napi::Value CausalConv1d(const Napi::CallbackInfo& info) {
  Args a(info, "causalConv1d");
  const int64_t rows = a.integer(1, "rows", 0, INT32_MAX);
  const int64_t channels = a.integer(2, "channels", 1, INT32_MAX);
  const int64_t kernel = a.integer(3, "kernel", 1, 64);
  const int64_t slots = a.integer(7, "numSlots", 0, INT32_MAX);
  const float* x = a.f32(0, "x", (size_t)(rows * channels));
  const float* w = a.f32(4, "weight", (size_t)(kernel * channels));
  float* state = a.f32(6, "state", (size_t)(slots * (kernel - 1) * channels));
  float* out = a.f32(8, "out", (size_t)(rows * channels));
  const float* bias = a.f32_or_null(9, "bias", (size_t)channels);
  const std::vector<RecSeq> seqs = read_seqs(a, 5, rows, slots);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  causal_conv1d(x, (int)channels, (int)kernel, w, bias, seqs, state, out);
  return info.Env().Undefined();
}

// gatedDeltaRule(q, k, v, g, beta, rows, seqs, numKHeads, numVHeads, kDim, vDim, l2norm, state, numSlots, out, chunkMin)
// chunkMin: a sequence of at least this many rows runs the chunked form (0: every one; > rows: none).
Napi::Value GatedDeltaRule(const Napi::CallbackInfo& info) {
  Args a(info, "gatedDeltaRule");
  const int64_t rows = a.integer(5, "rows", 0, INT32_MAX);
  DeltaDims d{};
  d.nk = (int)a.integer(7, "numKHeads", 1, 1 << 16);
  d.nv = (int)a.integer(8, "numVHeads", 1, 1 << 16);
  d.K = (int)a.integer(9, "kDim", 1, 1 << 16);
  d.V = (int)a.integer(10, "vDim", 1, 1 << 16);
  d.l2 = a.boolean(11, "l2norm");
  const int64_t slots = a.integer(13, "numSlots", 0, INT32_MAX);
  const int64_t chunk_min = a.integer(15, "chunkMin", 0, INT32_MAX);
  if (a.ok() && d.nv % d.nk != 0) a.fail("numVHeads must be a multiple of numKHeads");
  const float* q = a.f32(0, "q", (size_t)(rows * d.nk * d.K));
  const float* k = a.f32(1, "k", (size_t)(rows * d.nk * d.K));
  const float* v = a.f32(2, "v", (size_t)(rows * d.nv * d.V));
  const float* g = a.f32(3, "g", (size_t)(rows * d.nv));
  const float* beta = a.f32(4, "beta", (size_t)(rows * d.nv));
  float* state = a.f32(12, "state", (size_t)(slots * d.nv * d.K * d.V));
  float* out = a.f32(14, "out", (size_t)(rows * d.nv * d.V));
  const std::vector<RecSeq> seqs = read_seqs(a, 6, rows, slots);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  gated_delta_rule(q, k, v, g, beta, seqs, d, (int)chunk_min, state, out);
  return info.Env().Undefined();
}

}  // namespace

void InitGatedDelta(Napi::Env env, Napi::Object exports) {
  exports.Set("causalConv1d", Napi::Function::New(env, CausalConv1d));
  exports.Set("gatedDeltaRule", Napi::Function::New(env, GatedDeltaRule));
}

}  // namespace svc
