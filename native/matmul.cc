// matmul and embed. Threads split the output into tasks of (activation-row chunk x weight-row
// chunk), handed out dynamically; the activation chunk is sized to stay in L2 while every weight row
// streams past it once. The weight dtype's traits row (dtypes.h) names its kernel slot, looked up
// once per matmul: int8 slots (Q8_0, Q4_0 and, on the SIMD paths, the K-quants) first quantize the
// activations to int8 blocks, once per matmul into shared scratch, and use integer dot products; a
// dtype whose slot the path leaves null (the K-quants on the scalar path) has its rows decoded into
// per-thread scratch and multiplied with the f32 GEMM. Packed Q8_0 / Q4_0 weights (packed.h, made by
// prepareWeight) split their tasks by 16-row groups.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "dequant.h"
#include "dtypes.h"
#include "kernels.h"
#include "napi_args.h"
#include "packed.h"
#include "quant.h"
#include "threadpool.h"

namespace svc {
namespace {

constexpr int kKQuantRowTile = 4;  // K-quant rows decoded per GEMM call

inline size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

struct Plan {
  int xchunk;  // activation rows per task
  int rchunk;  // weight rows per task
  int nx, nr;  // task grid
};

Plan plan(int n, int rows, size_t xrow_bytes, int nth) {
  Plan p;
  // Keep one activation chunk within ~512 KB (L2) so it is reused across all weight rows.
  p.xchunk = (int)std::clamp<size_t>((512 * 1024 / std::max<size_t>(xrow_bytes, 1)) & ~(size_t)3, 4, 64);
  if (p.xchunk > n) p.xchunk = n;
  p.nx = (n + p.xchunk - 1) / p.xchunk;
  // About 4 row chunks per thread (per activation chunk) balances uneven cores without tiny tasks.
  const int want = nth == 1 ? 1 : nth * 4;
  p.rchunk = (int)round_up((size_t)std::max(1, (rows + want - 1) / want), 16);
  if (p.rchunk > rows) p.rchunk = rows;
  p.nr = (rows + p.rchunk - 1) / p.rchunk;
  return p;
}

// Packed weights: the same activation chunks, weight tasks in whole 16-row groups.
Plan plan_packed(int n, int groups, int cols, int nth) {
  Plan p;
  // Multiples of 16 rows when there are that many, so the AMX path fills whole tiles.
  p.xchunk = (int)std::clamp<size_t>((512 * 1024 / (size_t)cols) & ~(size_t)15, 16, 128);
  if (p.xchunk > n) p.xchunk = n;
  p.nx = (n + p.xchunk - 1) / p.xchunk;
  const int want = nth == 1 ? 1 : nth * 4;
  p.rchunk = std::max(1, (groups + want - 1) / want);
  p.nr = (groups + p.rchunk - 1) / p.rchunk;
  return p;
}

void add_bias(float* y, int rows, int i0, int i1, int r0, int r1, const float* bias) {
  for (int i = i0; i < i1; i++)
    for (int r = r0; r < r1; r++) y[(size_t)i * rows + r] += bias[r];
}

// Runs body(i0, i1, r0, r1, ith) over the task grid, serially when the whole product is tiny.
template <class F>
void for_tasks(const Plan& p, int n, int rows, double macs, F&& body) {
  auto task = [&](int64_t b, int64_t e, int ith) {
    for (int64_t t = b; t < e; t++) {
      const int xi = (int)(t / p.nr), ri = (int)(t % p.nr);
      const int i0 = xi * p.xchunk, r0 = ri * p.rchunk;
      body(i0, std::min(n, i0 + p.xchunk), r0, std::min(rows, r0 + p.rchunk), ith);
    }
  };
  const int64_t ntasks = (int64_t)p.nx * p.nr;
  if (macs < 32768.0) task(0, ntasks, 0);  // waking the pool costs more than this product
  else parallel_for(ntasks, 1, task);
}

// llama.cpp's Q8_K (quantize_row_q8_K_ref) over one row, in place of the per-32 blocks the kernel
// wrote: per 256 elements one f32 scale d = -max / 127 (max: the signed element of largest |x|),
// q = round-to-nearest-even(x * -127 / max) clamped to 127, every per-32 scale set to d. Scalar on
// every path: it is O(cols) per row, against O(rows * cols) for the product.
void requantize_q8k(const float* x, int cols, int8_t* qs, float* d, float* s16, int32_t* corr, int zero) {
  for (int b = 0; b < cols / 256; b++) {
    const float* xb = x + b * 256;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; j++) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) amax = ax, max = xb[j];
    }
    const float iscale = amax != 0.0f ? -127.0f / max : 0.0f;
    const float db = amax != 0.0f ? 1.0f / iscale : 0.0f;
    int8_t* q = qs + b * 256;
    for (int j = 0; j < 256; j++) q[j] = (int8_t)std::min(127.0f, std::nearbyint(iscale * xb[j]));
    for (int j = 0; j < 8; j++) d[8 * b + j] = db;
    if (s16)
      for (int h = 0; h < 16; h++) {
        int sum = 0;
        for (int j = 0; j < 16; j++) sum += q[16 * h + j];
        s16[16 * b + h] = db * (float)sum;
      }
    if (corr)
      for (int h = 0; h < 8; h++) {
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += q[32 * h + j];
        corr[8 * b + h] = -zero * sum;
      }
  }
}

// Quantizes the n activation rows to int8 blocks in the pool's shared scratch (s16 sums when asked,
// packed-weight corrections -zero * block sum when zero > 0, block scales rounded to f16 when asked,
// llama.cpp's per-256 Q8_K blocks when asked).
QuantActs quantize_acts(const Kernels& K, const float* x, int n, int cols, bool sums, int zero, bool f16_scale,
                        bool q8k) {
  const int nb = cols / 32, ng = cols / 16;
  const size_t qbytes = round_up((size_t)n * cols, 64);
  const size_t dbytes = round_up((size_t)n * nb * sizeof(float), 64);
  const size_t sbytes = sums ? round_up((size_t)n * ng * sizeof(float), 64) : 0;
  const size_t cbytes = zero > 0 ? (size_t)n * nb * sizeof(int32_t) : 0;
  uint8_t* buf = static_cast<uint8_t*>(ThreadPool::instance().shared_scratch(qbytes + dbytes + sbytes + cbytes));
  int8_t* qs = reinterpret_cast<int8_t*>(buf);
  float* qd = reinterpret_cast<float*>(buf + qbytes);
  float* s16 = sums ? reinterpret_cast<float*>(buf + qbytes + dbytes) : nullptr;
  int32_t* corr = zero > 0 ? reinterpret_cast<int32_t*>(buf + qbytes + dbytes + sbytes) : nullptr;
  auto quant = [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; i++)
      K.quantize_row_q8(x + (size_t)i * cols, cols, qs + (size_t)i * cols, qd + (size_t)i * nb,
                        s16 ? s16 + (size_t)i * ng : nullptr, corr ? corr + (size_t)i * nb : nullptr, zero);
    if (q8k)
      for (int64_t i = b; i < e; i++)
        requantize_q8k(x + (size_t)i * cols, cols, qs + (size_t)i * cols, qd + (size_t)i * nb,
                       s16 ? s16 + (size_t)i * ng : nullptr, corr ? corr + (size_t)i * nb : nullptr, zero);
    if (!f16_scale) return;
    for (size_t j = (size_t)b * nb; j < (size_t)e * nb; j++) {
      const float d32 = qd[j], d16 = fp16_to_f32(f32_to_fp16(d32));
      qd[j] = d16;
      // The sums follow the new scale (d32 * sum was rounded once, so the integer sum comes back exactly).
      if (s16 && d32 != 0.0f)
        for (size_t h = 2 * j; h < 2 * j + 2; h++) s16[h] = d16 * std::nearbyint(s16[h] / d32);
    }
  };
  if (n >= 16) parallel_for(n, 8, quant);
  else quant(0, n, 0);
  return QuantActs{qs, qd, s16, corr, cols};
}

}  // namespace

// The 256-element weight types (K-quants, IQ4_XS, IQ3_*, TQ2_0, and their packed forms) multiply
// activations rounded as llama.cpp's Q8_K blocks, its vec_dot_type for them: its greedy text follows.
void matmul(const float* x, int n, int dt, int rows, int cols, const uint8_t* w, float* y, const float* bias) {
  if (n == 0 || rows == 0) return;
  const Kernels& K = kernels();
  ThreadPool& pool = ThreadPool::instance();
  const size_t wstride = row_bytes(dt, cols);
  const double macs = (double)n * rows * cols;
  const DTypeTraits& T = dtype_traits(dt);

  if (T.gemm_packed) {
    const GemmPackedFn pgemm = K.*T.gemm_packed;
    const QuantActs xa = quantize_acts(K, x, n, cols, false, T.pack_zero, T.act_f16_scale, T.block_elements == QK_K);
    const int groups = pack_groups(rows);
    const Plan p = plan_packed(n, groups, cols, pool.size());
    const int nb = cols / 32;
    for_tasks(p, n, groups, macs, [&](int i0, int i1, int g0, int g1, int ith) {
      const QuantActs xi{xa.qs + (size_t)i0 * cols, xa.d + (size_t)i0 * nb, nullptr, xa.corr + (size_t)i0 * nb, cols};
      uint8_t* scratch = static_cast<uint8_t*>(pool.thread_scratch(ith, packed_scratch_bytes(cols)));
      pgemm(i1 - i0, xi, w, g0, g1, rows, y + (size_t)i0 * rows, (size_t)rows, scratch);
      if (bias) add_bias(y, rows, i0, i1, 16 * g0, std::min(rows, 16 * g1), bias);
    });
    return;
  }

  const GemmQuantFn qgemm = T.gemm_quant ? K.*T.gemm_quant : nullptr;
  if (qgemm) {
    const QuantActs xa = quantize_acts(K, x, n, cols, T.act_sums, 0, T.act_f16_scale, T.block_elements == QK_K);
    const Plan p = plan(n, rows, (size_t)cols, pool.size());
    for_tasks(p, n, rows, macs, [&](int i0, int i1, int r0, int r1, int) {
      const QuantActs xi{xa.qs + (size_t)i0 * cols, xa.d + (size_t)i0 * (cols / 32),
                         xa.s16 ? xa.s16 + (size_t)i0 * (cols / 16) : nullptr, nullptr, cols};
      qgemm(i1 - i0, xi, w, wstride, r0, r1, y + (size_t)i0 * rows, (size_t)rows);
      if (bias) add_bias(y, rows, i0, i1, r0, r1, bias);
    });
    return;
  }

  const Plan p = plan(n, rows, (size_t)cols * 4, pool.size());
  const GemmFloatFn gemm = T.gemm_float ? K.*T.gemm_float : nullptr;
  if (gemm) {
    for_tasks(p, n, rows, macs, [&](int i0, int i1, int r0, int r1, int) {
      gemm(i1 - i0, cols, x + (size_t)i0 * cols, (size_t)cols, w, wstride, r0, r1, y + (size_t)i0 * rows, (size_t)rows);
      if (bias) add_bias(y, rows, i0, i1, r0, r1, bias);
    });
    return;
  }

  // No kernel for this dtype on this path (the K-quants on the scalar path): decode kKQuantRowTile
  // rows into this thread's scratch and multiply them as f32, which keeps the activations exact.
  for_tasks(p, n, rows, macs, [&](int i0, int i1, int r0, int r1, int ith) {
    float* tile = static_cast<float*>(pool.thread_scratch(ith, (size_t)kKQuantRowTile * cols * sizeof(float)));
    for (int r = r0; r < r1; r += kKQuantRowTile) {
      const int nr = std::min(kKQuantRowTile, r1 - r);
      for (int j = 0; j < nr; j++) T.to_float(w + (size_t)(r + j) * wstride, tile + (size_t)j * cols, cols);
      K.gemm_f32(i1 - i0, cols, x + (size_t)i0 * cols, (size_t)cols, reinterpret_cast<const uint8_t*>(tile),
                 (size_t)cols * sizeof(float), 0, nr, y + (size_t)i0 * rows + r, (size_t)rows);
    }
    if (bias) add_bias(y, rows, i0, i1, r0, r1, bias);
  });
}

// ---- bindings ----

namespace {

// Shared by matmul and embed: (dtype, rows, cols, data) starting at argument `first`.
struct WeightArg {
  int dt = 0;
  int rows = 0, cols = 0;
  const uint8_t* data = nullptr;
  size_t stride = 0;
};

bool weight_arg(Args& a, size_t first, WeightArg* wa) {
  wa->dt = (int)a.integer(first, "dtype code", 0, kDTypeCount - 1);
  wa->rows = (int)a.integer(first + 1, "rows", 0, INT32_MAX);
  wa->cols = (int)a.integer(first + 2, "cols", 1, INT32_MAX);
  if (!a.ok()) return false;
  wa->stride = row_bytes(wa->dt, wa->cols);
  if (wa->stride == 0) {
    a.fail(std::string(dtype_traits(wa->dt).name) + " rows must be a multiple of " +
           std::to_string(dtype_traits(wa->dt).block_elements) + " elements, got " + std::to_string(wa->cols));
    return false;
  }
  const size_t need = is_packed(wa->dt) ? packed_bytes(wa->dt, wa->rows, wa->cols) : wa->stride * (size_t)wa->rows;
  wa->data = a.u8(first + 3, "weight data", need);
  return a.ok();
}

// packWeight(dtype, rows, cols, data) -> ArrayBuffer holding the packed matrix (packed.h), or
// undefined when the dtype has no packed layout.
Napi::Value PackWeight(const Napi::CallbackInfo& info) {
  Args a(info, "packWeight");
  WeightArg wa;
  if (!weight_arg(a, 0, &wa)) return info.Env().Undefined();
  const int pdt = dtype_traits(wa.dt).packed;
  if (pdt < 0 || wa.rows == 0) return info.Env().Undefined();
  const size_t bytes = packed_bytes(pdt, wa.rows, wa.cols);
  void* arena = nullptr;
  uint8_t* p = packed_alloc(bytes, &arena);
  if (!p) {
    Napi::Error::New(info.Env(), "packWeight: out of memory (" + std::to_string(bytes) + " bytes)").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  {
    std::lock_guard<std::mutex> lk(op_mutex());
    pack_weight(pdt, wa.rows, wa.cols, wa.data, p);
  }
  return Napi::ArrayBuffer::New(info.Env(), p, bytes, [](Napi::Env, void*, void* hint) { packed_free(hint); }, arena);
}

// matmul(x, n, dtype, rows, cols, wdata, y, bias?)
Napi::Value Matmul(const Napi::CallbackInfo& info) {
  Args a(info, "matmul");
  const int n = (int)a.integer(1, "n", 0, INT32_MAX);
  WeightArg wa;
  if (!weight_arg(a, 2, &wa)) return info.Env().Undefined();
  const float* x = a.f32(0, "x", (size_t)n * wa.cols);
  float* y = a.f32(6, "y", (size_t)n * wa.rows);
  const float* bias = a.f32_or_null(7, "bias", (size_t)wa.rows);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  matmul(x, n, wa.dt, wa.rows, wa.cols, wa.data, y, bias);
  return info.Env().Undefined();
}

// embed(ids, dtype, rows, cols, wdata, out)
Napi::Value Embed(const Napi::CallbackInfo& info) {
  Args a(info, "embed");
  const int32_t* ids = a.i32(0, "ids", 0);
  const size_t count = a.last_length();
  WeightArg wa;
  if (!weight_arg(a, 1, &wa)) return info.Env().Undefined();
  float* out = a.f32(5, "out", count * (size_t)wa.cols);
  if (!a.ok()) return info.Env().Undefined();
  for (size_t i = 0; i < count; i++) {
    if (ids[i] < 0 || ids[i] >= wa.rows) {
      a.fail_range("token id " + std::to_string(ids[i]) + " outside the embedding table (" + std::to_string(wa.rows) + " rows)");
      return info.Env().Undefined();
    }
  }
  for (size_t i = 0; i < count; i++) {
    float* dst = out + i * (size_t)wa.cols;
    if (is_packed(wa.dt)) dequantize_packed_row(wa.dt, wa.data, wa.cols, ids[i], dst);
    else dequantize_row(wa.dt, wa.data + (size_t)ids[i] * wa.stride, dst, wa.cols);
  }
  return info.Env().Undefined();
}

}  // namespace

void InitMatmul(Napi::Env env, Napi::Object exports) {
  exports.Set("matmul", Napi::Function::New(env, Matmul));
  exports.Set("embed", Napi::Function::New(env, Embed));
  exports.Set("packWeight", Napi::Function::New(env, PackWeight));
}

}  // namespace svc
