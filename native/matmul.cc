// matmul and embed. Threads split the output into tasks of (activation-row chunk x weight-row
// chunk), handed out dynamically; the activation chunk is sized to stay in L2 while every weight row
// streams past it once. The weight dtype's traits row (dtypes.h) names its kernel slot, looked up
// once per matmul: int8 slots (Q8_0, Q4_0 and, on the SIMD paths, the K-quants) first quantize the
// activations to int8 blocks, once per matmul into shared scratch, and use integer dot products; a
// dtype whose slot the path leaves null (the K-quants on the scalar path) has its rows decoded into
// per-thread scratch and multiplied with the f32 GEMM. Packed weights (packed.h, made by
// prepareWeight) split their tasks by 16-row groups.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "dequant.h"
#include "dtypes.h"
#include "gemm.h"
#include "kernels.h"
#include "napi_args.h"
#include "packed.h"
#include "quant.h"
#include "threadpool.h"

namespace svc {
namespace {

struct Plan {
  int xchunk;  // activation rows per task
  int rchunk;  // weight rows per task
  int nx, nr;  // task grid
};

Plan plan(int n, int rows, size_t xrow_bytes, int nth) {
  Plan p;
  p.xchunk = x_chunk_rows(xrow_bytes);
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
  p.xchunk = x_chunk_packed(cols);
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
  if (macs < kSerialMacs) task(0, ntasks, 0);
  else parallel_for(ntasks, 1, task);
}

// Quantizes the n activation rows to int8 blocks in the pool's shared scratch (QuantRows).
QuantRows quantize_acts(const Kernels& K, const float* x, int n, int cols, const ActFormat& f) {
  const QuantRows q = QuantRows::carve(ThreadPool::instance().shared_scratch(QuantRows::bytes((size_t)n, cols, f)), (size_t)n, cols, f);
  auto quant = [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; i++) q.quantize(K, x + (size_t)i * cols, (size_t)i, 0, cols, f);
  };
  if (n >= 16) parallel_for(n, 8, quant);
  else quant(0, n, 0);
  return q;
}

}  // namespace

void matmul(const float* x, int n, int dt, int rows, int cols, const uint8_t* w, float* y, const float* bias) {
  if (n == 0 || rows == 0) return;
  const Kernels& K = kernels();
  ThreadPool& pool = ThreadPool::instance();
  const double macs = (double)n * rows * cols;
  const WeightGemm G = weight_gemm(K, dt);

  if (G.kind == GemmKind::Packed) {
    const QuantRows xa = quantize_acts(K, x, n, cols, G.act);
    const Plan p = plan_packed(n, pack_groups(rows), cols, pool.size());
    for_tasks(p, n, pack_groups(rows), macs, [&](int i0, int i1, int g0, int g1, int ith) {
      const int r0 = kPackRows * g0, r1 = std::min(rows, kPackRows * g1);
      GemmActs a;
      a.q = xa.at((size_t)i0);
      gemm_block(K, G, i1 - i0, a, w, rows, cols, r0, r1, y + (size_t)i0 * rows + r0, (size_t)rows, ith);
      if (bias) add_bias(y, rows, i0, i1, r0, r1, bias);
    });
    return;
  }

  GemmActs a;
  QuantRows xa;
  if (G.kind == GemmKind::Quant) xa = quantize_acts(K, x, n, cols, G.act);
  else a.ldx = (size_t)cols;
  const Plan p = plan(n, rows, G.kind == GemmKind::Quant ? (size_t)cols : (size_t)cols * 4, pool.size());
  for_tasks(p, n, rows, macs, [&](int i0, int i1, int r0, int r1, int ith) {
    GemmActs ai = a;
    if (G.kind == GemmKind::Quant) ai.q = xa.at((size_t)i0);
    else ai.x = x + (size_t)i0 * cols;
    gemm_block(K, G, i1 - i0, ai, w, rows, cols, r0, r1, y + (size_t)i0 * rows + r0, (size_t)rows, ith);
    if (bias) add_bias(y, rows, i0, i1, r0, r1, bias);
  });
}

// One matrix of matmul_shared: y[n, rows] = x · wᵀ (+ bias).
struct SharedMat {
  int dt, rows;
  const uint8_t* w;
  float* y;
  const float* bias;
};

// Several matrices over the same activations (q/k/v, gate/up): the activations are quantized once per
// distinct format and every matrix's tasks go to the pool in one dispatch, so a decode step pays one
// wake-up and one quantization where it paid three. Each matrix's blocks are computed exactly as
// matmul() computes them (same plan, kernels and activation rounding): the outputs are bit-identical.
void matmul_shared(const float* x, int n, int cols, const std::vector<SharedMat>& mats) {
  if (n == 0 || mats.empty()) return;
  const Kernels& K = kernels();
  const int nth = ThreadPool::instance().size();
  struct Item {
    WeightGemm g;
    Plan p;
    int fmt;  // index into formats, -1: f32 activations
    int ntasks;
  };
  std::vector<Item> items;
  std::vector<ActFormat> formats;
  double macs = 0;
  int64_t ntasks = 0;
  for (const SharedMat& m : mats) {
    Item it;
    it.g = weight_gemm(K, m.dt);
    it.fmt = -1;
    if (it.g.int8()) {
      auto f = std::find(formats.begin(), formats.end(), it.g.act);
      it.fmt = (int)(f - formats.begin());
      if (f == formats.end()) formats.push_back(it.g.act);
    }
    it.p = it.g.kind == GemmKind::Packed ? plan_packed(n, pack_groups(m.rows), cols, nth)
                                         : plan(n, m.rows, it.g.kind == GemmKind::Quant ? (size_t)cols : (size_t)cols * 4, nth);
    it.ntasks = m.rows == 0 ? 0 : it.p.nx * it.p.nr;
    ntasks += it.ntasks;
    macs += (double)n * m.rows * cols;
    items.push_back(it);
  }
  // Each format's rows in its own region of the shared scratch.
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const ActFormat& f : formats) {
    offsets.push_back(total);
    total += round_up(QuantRows::bytes((size_t)n, cols, f), 64);
  }
  uint8_t* scratch = static_cast<uint8_t*>(ThreadPool::instance().shared_scratch(total));
  std::vector<QuantRows> acts;
  for (size_t i = 0; i < formats.size(); i++) {
    acts.push_back(QuantRows::carve(scratch + offsets[i], (size_t)n, cols, formats[i]));
    const QuantRows& q = acts.back();
    const ActFormat& f = formats[i];
    auto quant = [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; r++) q.quantize(K, x + (size_t)r * cols, (size_t)r, 0, cols, f);
    };
    if (n >= 16) parallel_for(n, 8, quant);
    else quant(0, n, 0);
  }
  auto task = [&](int64_t b, int64_t e, int ith) {
    size_t m = 0;
    int64_t first = 0;  // first task of matrix m
    for (int64_t t = b; t < e; t++) {
      while (t >= first + items[m].ntasks) first += items[m++].ntasks;
      const Item& it = items[m];
      const SharedMat& sm = mats[m];
      const int64_t local = t - first;
      const int xi = (int)(local / it.p.nr), ri = (int)(local % it.p.nr);
      const int i0 = xi * it.p.xchunk, i1 = std::min(n, i0 + it.p.xchunk);
      GemmActs a;
      if (it.fmt >= 0) a.q = acts[(size_t)it.fmt].at((size_t)i0);
      else {
        a.x = x + (size_t)i0 * cols;
        a.ldx = (size_t)cols;
      }
      int r0, r1;
      if (it.g.kind == GemmKind::Packed) {
        r0 = kPackRows * ri * it.p.rchunk;
        r1 = std::min(sm.rows, kPackRows * std::min(pack_groups(sm.rows), (ri + 1) * it.p.rchunk));
      } else {
        r0 = ri * it.p.rchunk;
        r1 = std::min(sm.rows, r0 + it.p.rchunk);
      }
      gemm_block(K, it.g, i1 - i0, a, sm.w, sm.rows, cols, r0, r1, sm.y + (size_t)i0 * sm.rows + r0, (size_t)sm.rows, ith);
      if (sm.bias) add_bias(sm.y, sm.rows, i0, i1, r0, r1, sm.bias);
    }
  };
  if (macs < kSerialMacs) task(0, ntasks, 0);
  else parallel_for(ntasks, 1, task);
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

// packedBytes(dtype, rows, cols) -> bytes packWeight makes of such a matrix, or undefined when the
// dtype has no packed layout (or the shape is empty or not whole blocks).
Napi::Value PackedBytes(const Napi::CallbackInfo& info) {
  Args a(info, "packedBytes");
  const int dt = (int)a.integer(0, "dtype code", 0, kDTypeCount - 1);
  const int rows = (int)a.integer(1, "rows", 0, INT32_MAX);
  const int cols = (int)a.integer(2, "cols", 1, INT32_MAX);
  if (!a.ok()) return info.Env().Undefined();
  const int pdt = dtype_traits(dt).packed;
  if (pdt < 0 || rows == 0 || row_bytes(dt, cols) == 0) return info.Env().Undefined();
  return Napi::Number::New(info.Env(), (double)packed_bytes(pdt, rows, cols));
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

// matmulShared(x, n, cols, dtype0, rows0, w0, y0, bias0, dtype1, ...): matmul_shared over the
// matrices given five arguments each.
Napi::Value MatmulShared(const Napi::CallbackInfo& info) {
  Args a(info, "matmulShared");
  const int n = (int)a.integer(1, "n", 0, INT32_MAX);
  const int cols = (int)a.integer(2, "cols", 1, INT32_MAX);
  if (!a.ok()) return info.Env().Undefined();
  if (info.Length() < 8 || (info.Length() - 3) % 5 != 0) {
    a.fail("expected (x, n, cols) and then (dtype, rows, w, y, bias) per matrix");
    return info.Env().Undefined();
  }
  const float* x = a.f32(0, "x", (size_t)n * cols);
  std::vector<SharedMat> mats;
  for (size_t first = 3; first < info.Length(); first += 5) {
    // weight_arg reads (dtype, rows, cols, data); cols is shared, so check it here.
    WeightArg wa;
    wa.dt = (int)a.integer(first, "dtype code", 0, kDTypeCount - 1);
    wa.rows = (int)a.integer(first + 1, "rows", 0, INT32_MAX);
    if (!a.ok()) return info.Env().Undefined();
    wa.cols = cols;
    wa.stride = row_bytes(wa.dt, cols);
    if (wa.stride == 0) {
      a.fail(std::string(dtype_traits(wa.dt).name) + " rows must be a multiple of " +
             std::to_string(dtype_traits(wa.dt).block_elements) + " elements, got " + std::to_string(cols));
      return info.Env().Undefined();
    }
    const size_t need = is_packed(wa.dt) ? packed_bytes(wa.dt, wa.rows, cols) : wa.stride * (size_t)wa.rows;
    const uint8_t* w = a.u8(first + 2, "weight data", need);
    float* y = a.f32(first + 3, "y", (size_t)n * wa.rows);
    const float* bias = a.f32_or_null(first + 4, "bias", (size_t)wa.rows);
    if (!a.ok()) return info.Env().Undefined();
    mats.push_back({wa.dt, wa.rows, w, y, bias});
  }
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  matmul_shared(x, n, cols, mats);
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
  exports.Set("matmulShared", Napi::Function::New(env, MatmulShared));
  exports.Set("embed", Napi::Function::New(env, Embed));
  exports.Set("packWeight", Napi::Function::New(env, PackWeight));
  exports.Set("packedBytes", Napi::Function::New(env, PackedBytes));
  exports.Set("packFormatVersion", Napi::Number::New(env, kPackFormatVersion));
}

}  // namespace svc
