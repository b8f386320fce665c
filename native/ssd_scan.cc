// Mamba2's selective state-space scan (SSD) in its recurrent form, per sequence with a state slot each
// (src/kernels/ops.ts: ssdScan). Per token and head: dt = clamp(softplus(dt + dt_bias), lo, hi),
// decay = exp(dt * A); per row p of the head's state [head_dim, d_state]:
//   S[p] = S[p] * decay + (dt * x[p]) * B;  y[p] = S[p] . C + D * x[p]
// The row update runs along d_state (contiguous) in scalar, AVX2 and AVX-512 variants chosen by the
// current kernel path (cpu_features.h). Threads split (sequence, head) tasks: a state slot's head is
// only ever touched by one task.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

void ssd_scan(const float* x, const float* dt, const float* B, const float* C, const std::vector<SsdSeq>& seqs, const SsdDims& d,
              float* state, float* out) {
  const SsdRow row = ssd_row_kernel();
  const int per_group = d.H / d.G;
  const int64_t tasks = (int64_t)seqs.size() * d.H;
  const size_t head_state = (size_t)d.P * d.N;
  auto body = [&](int64_t b, int64_t e, int) {
    for (int64_t task = b; task < e; task++) {
      const SsdSeq& s = seqs[(size_t)(task / d.H)];
      const int h = (int)(task % d.H);
      const int g = h / per_group;
      float* S = state + ((size_t)s.slot * d.H + h) * head_state;
      for (int t = s.q_start; t < s.q_start + s.q_len; t++) {
        const double step = std::min(std::max(softplus((double)dt[(size_t)t * d.H + h] + d.dt_bias[h]), d.dt_min), d.dt_max);
        const float stepf = (float)step;
        const float decay = (float)std::exp(step * d.a[h]);
        const float* bt = B + ((size_t)t * d.G + g) * d.N;
        const float* ct = C + ((size_t)t * d.G + g) * d.N;
        const float* xt = x + ((size_t)t * d.H + h) * d.P;
        float* ot = out + ((size_t)t * d.H + h) * d.P;
        for (int p = 0; p < d.P; p++) ot[p] = row(S + (size_t)p * d.N, d.N, decay, stepf * xt[p], bt, ct) + d.d[h] * xt[p];
      }
    }
  };
  if (tasks > 1) parallel_for(tasks, 1, body);
  else body(0, tasks, 0);
}

// ssdScan(x, dt, b, c, rows, seqs, numHeads, headDim, stateSize, nGroups, a, d, dtBias, dtMin, dtMax, state, numSlots, out)
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
  ssd_scan(x, dt, B, C, seqs, d, state, out);
  return info.Env().Undefined();
}

}  // namespace

void InitSsdScan(Napi::Env env, Napi::Object exports) { exports.Set("ssdScan", Napi::Function::New(env, SsdScan)); }

}  // namespace svc
