// Mamba2's selective state-space scan (SSD) in its recurrent form, per sequence with a state slot each
// (src/kernels/ops.ts: ssdScan). Per token and head: dt = clamp(softplus(dt + dt_bias), lo, hi),
// decay = exp(dt * A); per row p of the head's state [head_dim, d_state]:
//   S[p] = S[p] * decay + (dt * x[p]) * B;  y[p] = S[p] . C + D * x[p]
// The row update runs along d_state (contiguous) in scalar, AVX2 and AVX-512 variants chosen by the
// current kernel path (cpu_features.h). A sequence bringing at least chunk_min tokens runs the chunked
// form instead (the state-space duality, ssd_chunked below). Threads split (sequence, head) tasks: a
// state slot's head is only ever touched by one task.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "chunk_gemm.h"
#include "cpu_features.h"
#include "napi_args.h"
#include "threadpool.h"

namespace svc {
namespace {

struct SsdSeq {
  int q_start, q_len, slot;
};

// One state row: S = S * decay + dtx * B, returns S . C.
float ssd_row_scalar(float* S, int N, float decay, float dtx, const float* B, const float* C) {
  float y = 0.0f;
  for (int n = 0; n < N; n++) {
    S[n] = S[n] * decay + dtx * B[n];
    y += S[n] * C[n];
  }
  return y;
}

#if defined(__x86_64__)
#define SVC_SSD_AVX2 __attribute__((target("avx2,fma")))
#define SVC_SSD_AVX512 __attribute__((target("avx512f,avx2,fma")))

SVC_SSD_AVX2 float ssd_row_avx2(float* S, int N, float decay, float dtx, const float* B, const float* C) {
  const __m256 dv = _mm256_set1_ps(decay), xv = _mm256_set1_ps(dtx);
  __m256 acc = _mm256_setzero_ps();
  int n = 0;
  for (; n + 8 <= N; n += 8) {
    const __m256 s = _mm256_fmadd_ps(xv, _mm256_loadu_ps(B + n), _mm256_mul_ps(_mm256_loadu_ps(S + n), dv));
    _mm256_storeu_ps(S + n, s);
    acc = _mm256_fmadd_ps(s, _mm256_loadu_ps(C + n), acc);
  }
  const __m128 lo = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 h2 = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  float y = _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
  for (; n < N; n++) {
    S[n] = S[n] * decay + dtx * B[n];
    y += S[n] * C[n];
  }
  return y;
}

SVC_SSD_AVX512 float ssd_row_avx512(float* S, int N, float decay, float dtx, const float* B, const float* C) {
  const __m512 dv = _mm512_set1_ps(decay), xv = _mm512_set1_ps(dtx);
  __m512 acc = _mm512_setzero_ps();
  for (int n = 0; n < N; n += 16) {
    const int left = N - n;
    const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    const __m512 s = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m, B + n), _mm512_mul_ps(_mm512_maskz_loadu_ps(m, S + n), dv));
    _mm512_mask_storeu_ps(S + n, m, s);
    acc = _mm512_fmadd_ps(s, _mm512_maskz_loadu_ps(m, C + n), acc);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  float y = 0.0f;
  for (int i = 0; i < 16; i++) y += lanes[i];
  return y;
}
#endif

using SsdRow = float (*)(float*, int, float, float, const float*, const float*);

SsdRow ssd_row_kernel() {
#if defined(__x86_64__)
  switch (current_cpu_path()) {
    case CpuPath::Avx512:
    case CpuPath::Amx:
      return ssd_row_avx512;
    case CpuPath::Avx2:
      return ssd_row_avx2;
    default:
      break;
  }
#endif
  return ssd_row_scalar;
}

struct SsdDims {
  int H, P, N, G;
  const float *a, *d, *dt_bias;
  double dt_min, dt_max;
};

// torch.nn.functional.softplus (beta 1, threshold 20), in double.
double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

double ssd_step(const SsdDims& d, float dt, int h) {
  return std::min(std::max(softplus((double)dt + d.dt_bias[h]), d.dt_min), d.dt_max);
}

// One (sequence, head) token by token.
void ssd_recurrent(SsdRow row, const float* x, const float* dt, const float* B, const float* C, const SsdSeq& s, int h,
                   const SsdDims& d, float* S, float* out) {
  const int g = h / (d.H / d.G);
  for (int t = s.q_start; t < s.q_start + s.q_len; t++) {
    const double step = ssd_step(d, dt[(size_t)t * d.H + h], h);
    const float stepf = (float)step;
    const float decay = (float)std::exp(step * d.a[h]);
    const float* bt = B + ((size_t)t * d.G + g) * d.N;
    const float* ct = C + ((size_t)t * d.G + g) * d.N;
    const float* xt = x + ((size_t)t * d.H + h) * d.P;
    float* ot = out + ((size_t)t * d.H + h) * d.P;
    for (int p = 0; p < d.P; p++) ot[p] = row(S + (size_t)p * d.N, d.N, decay, stepf * xt[p], bt, ct) + d.d[h] * xt[p];
  }
}

constexpr int kSsdChunk = 64;

size_t ssd_chunked_floats(const SsdDims& d) {
  const size_t C = kSsdChunk;
  return 2 * (size_t)d.N * C + 2 * (size_t)d.P * C + C * C + 2 * C + 4 * C /* step, gam as doubles */;
}

// One (sequence, head) chunk by chunk (reference-ssd.ts ssdScanChunked has the math). Per chunk of c
// tokens, with the state S [P, N] updated in place and Bc, Cc, Xc the chunk's rows (strided views):
//   yT = S · Cᵀ; out = e^γ yT ᵀ + D x;  cb = Cc · Bᵀ (lower triangle);
//   out += L · Xc with L[t, j] = e^{γ_t−γ_j} dt_j (C_t·B_j), j ≤ t;
//   S = e^{γ_last} S + (x dt e^{γ_last−γ})ᵀ · Bc.
void ssd_chunked(const ChunkGemm& G, const float* x, const float* dt, const float* B, const float* Cm, const SsdSeq& s, int h,
                 const SsdDims& d, float* S, float* out, float* scratch) {
  const int g = h / (d.H / d.G);
  const int P = d.P, N = d.N, C = kSsdChunk;
  float* bT = scratch;                 // [N, C]
  float* cT = bT + (size_t)N * C;      // [N, C]
  float* yT = cT + (size_t)N * C;      // [P, C]
  float* xw = yT + (size_t)P * C;      // [P, C] x dt e^{γ_last−γ}, transposed
  float* cb = xw + (size_t)P * C;      // [C, C]
  float* eg = cb + (size_t)C * C;      // [C]
  float* stepf = eg + C;               // [C]
  double* step = reinterpret_cast<double*>(stepf + C);  // [C]
  double* gam = step + C;                               // [C]
  const size_t ldbc = (size_t)d.G * N, ldx = (size_t)d.H * P;
  const double a = d.a[h];
  const float dd = d.d[h];
  for (int t0 = s.q_start; t0 < s.q_start + s.q_len; t0 += C) {
    const int c = std::min(C, s.q_start + s.q_len - t0);
    const float* bc = B + ((size_t)t0 * d.G + g) * N;
    const float* cc = Cm + ((size_t)t0 * d.G + g) * N;
    const float* xc = x + (size_t)t0 * ldx + (size_t)h * P;
    float* oc = out + (size_t)t0 * ldx + (size_t)h * P;
    double acc = 0;
    for (int t = 0; t < c; t++) {
      step[t] = ssd_step(d, dt[(size_t)(t0 + t) * d.H + h], h);
      stepf[t] = (float)step[t];
      acc += step[t] * a;
      gam[t] = acc;
      eg[t] = (float)std::exp(acc);
      for (int n = 0; n < N; n++) {
        bT[(size_t)n * C + t] = bc[(size_t)t * ldbc + n];
        cT[(size_t)n * C + t] = cc[(size_t)t * ldbc + n];
      }
    }
    // The entering state's part, and the skip.
    gemm_nn(G, P, c, N, S, N, cT, C, yT, C, 0.0f);
    for (int t = 0; t < c; t++) {
      const float* xt = xc + (size_t)t * ldx;
      float* ot = oc + (size_t)t * ldx;
      for (int p = 0; p < P; p++) ot[p] = eg[t] * yT[(size_t)p * C + t] + dd * xt[p];
    }
    // The chunk's own part: the masked, decayed C·Bᵀ times the chunk's x.
    gemm_nn(G, c, c, N, cc, ldbc, bT, C, cb, C, 0.0f, Tri::LowerCols);
    for (int t = 0; t < c; t++) {
      float* l = cb + (size_t)t * C;
      for (int j = 0; j <= t; j++) l[j] *= std::exp((float)(gam[t] - gam[j])) * stepf[j];
      for (int j = t + 1; j < c; j++) l[j] = 0.0f;
    }
    gemm_nn(G, c, P, c, cb, C, xc, ldx, oc, ldx, 1.0f, Tri::LowerDepth);
    // The state leaving the chunk.
    const double last = gam[c - 1];
    for (int j = 0; j < c; j++) {
      const float w = (float)std::exp(last - gam[j]) * stepf[j];
      const float* xj = xc + (size_t)j * ldx;
      for (int p = 0; p < P; p++) xw[(size_t)p * C + j] = xj[p] * w;
    }
    gemm_nn(G, P, N, c, xw, C, bc, ldbc, S, N, eg[c - 1]);
  }
}

void ssd_scan(const float* x, const float* dt, const float* B, const float* C, const std::vector<SsdSeq>& seqs, const SsdDims& d,
              int chunk_min, float* state, float* out) {
  const SsdRow row = ssd_row_kernel();
  const ChunkGemm G = chunk_gemm();
  const int64_t tasks = (int64_t)seqs.size() * d.H;
  const size_t head_state = (size_t)d.P * d.N;
  bool any_chunked = false;
  for (const SsdSeq& s : seqs) any_chunked |= s.q_len >= chunk_min;
  const size_t floats = any_chunked ? ssd_chunked_floats(d) : 0;
  auto body = [&](int64_t b, int64_t e, int ith) {
    float* scratch = floats ? static_cast<float*>(ThreadPool::instance().thread_scratch(ith, floats * sizeof(float))) : nullptr;
    for (int64_t task = b; task < e; task++) {
      const SsdSeq& s = seqs[(size_t)(task / d.H)];
      const int h = (int)(task % d.H);
      float* S = state + ((size_t)s.slot * d.H + h) * head_state;
      if (s.q_len >= chunk_min) ssd_chunked(G, x, dt, B, C, s, h, d, S, out, scratch);
      else ssd_recurrent(row, x, dt, B, C, s, h, d, S, out);
    }
  };
  if (tasks > 1) parallel_for(tasks, 1, body);
  else body(0, tasks, 0);
}

// ssdScan(x, dt, b, c, rows, seqs, numHeads, headDim, stateSize, nGroups, a, d, dtBias, dtMin, dtMax, state, numSlots, out, chunkMin)
// chunkMin: a sequence of at least this many rows runs the chunked form (0: every one; > rows: none).
Napi::Value SsdScan(const Napi::CallbackInfo& info) {
  Args a(info, "ssdScan");
  const int64_t rows = a.integer(4, "rows", 0, INT32_MAX);
  SsdDims d{};
  d.H = (int)a.integer(6, "numHeads", 1, 1 << 16);
  d.P = (int)a.integer(7, "headDim", 1, 1 << 16);
  d.N = (int)a.integer(8, "stateSize", 1, 1 << 16);
  d.G = (int)a.integer(9, "nGroups", 1, 1 << 16);
  d.dt_min = a.number(13, "dtMin");
  d.dt_max = a.number(14, "dtMax");
  const int64_t slots = a.integer(16, "numSlots", 0, INT32_MAX);
  const int64_t chunk_min = a.integer(18, "chunkMin", 0, INT32_MAX);
  if (a.ok() && d.H % d.G != 0) a.fail("numHeads must be a multiple of nGroups");
  if (a.ok() && !(d.dt_min <= d.dt_max)) a.fail("dtMin must not exceed dtMax");
  const float* x = a.f32(0, "x", (size_t)(rows * d.H * d.P));
  const float* dt = a.f32(1, "dt", (size_t)(rows * d.H));
  const float* B = a.f32(2, "b", (size_t)(rows * d.G * d.N));
  const float* C = a.f32(3, "c", (size_t)(rows * d.G * d.N));
  d.a = a.f32(10, "a", (size_t)d.H);
  d.d = a.f32(11, "d", (size_t)d.H);
  d.dt_bias = a.f32(12, "dtBias", (size_t)d.H);
  float* state = a.f32(15, "state", (size_t)(slots * d.H * d.P * d.N));
  float* out = a.f32(17, "out", (size_t)(rows * d.H * d.P));
  std::vector<SsdSeq> seqs;
  const int32_t* raw = a.i32(5, "seqs", 0);
  if (a.ok()) {
    const size_t len = a.last_length();
    if (len % 3 != 0) a.fail("seqs must hold (qStart, qLen, slot) triples");
    std::vector<char> used((size_t)std::max<int64_t>(slots, 0), 0);
    for (size_t j = 0; a.ok() && j + 2 < len; j += 3) {
      const SsdSeq s{raw[j], raw[j + 1], raw[j + 2]};
      if (s.q_start < 0 || s.q_len < 0 || (int64_t)s.q_start + s.q_len > rows) a.fail_range("a sequence's rows are outside the inputs");
      else if (s.slot < 0 || s.slot >= slots) a.fail_range("a sequence's state slot is outside the state");
      else if (used[(size_t)s.slot]++) a.fail_range("two sequences share a state slot");
      seqs.push_back(s);
    }
  }
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  ssd_scan(x, dt, B, C, seqs, d, (int)chunk_min, state, out);
  return info.Env().Undefined();
}

}  // namespace

void InitSsdScan(Napi::Env env, Napi::Object exports) { exports.Set("ssdScan", Napi::Function::New(env, SsdScan)); }

}  // namespace svc
