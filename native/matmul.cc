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

// Quantizes the n activation rows to int8 blocks in buf (QuantRows::bytes of them).
QuantRows quantize_acts(const Kernels& K, const float* x, int n, int cols, const ActFormat& f, void* buf) {
  const QuantRows q = QuantRows::carve(buf, (size_t)n, cols, f);
  auto quant = [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; i++) q.quantize(K, x + (size_t)i * cols, (size_t)i, 0, cols, f);
  };
  if (n >= 16) parallel_for(n, 8, quant);
  else quant(0, n, 0);
  return q;
}

}  // namespace

// One matrix of matmul_shared: y[n, rows] = x · wᵀ (+ bias).
struct SharedMat {
  int dt, rows;
  const uint8_t* w;
  float* y;
  const float* bias;
};
constexpr int kMaxShared = 8;  // matrices per matmul_shared call

// Several matrices over the same activations (q/k/v, gate/up; matmul() is the case of one): the
// activations are quantized once per distinct format and every matrix's tasks go to the pool in one
// dispatch, so a decode step pays one wake-up and one quantization where it paid three. Each matrix's
// blocks are planned and computed as they would be alone, so the outputs are the bits of separate
// matmuls. Fixed-size bookkeeping: nothing is allocated per call.
void matmul_shared(const float* x, int n, int cols, const SharedMat* mats, int count) {
  if (n == 0 || count <= 0) return;
  const Kernels& K = kernels();
  const int nth = ThreadPool::instance().size();
  struct Item {
    WeightGemm g;
    Plan p;
    int fmt;  // index into formats, -1: f32 activations
    int64_t ntasks;
  };
  Item items[kMaxShared];
  ActFormat formats[kMaxShared];
  QuantRows acts[kMaxShared];
  int nformats = 0;
  double macs = 0;
  int64_t ntasks = 0;
  size_t scratch_bytes = 0;
  for (int m = 0; m < count; m++) {
    Item& it = items[m];
    it.g = weight_gemm(K, mats[m].dt);
    it.fmt = -1;
    if (it.g.int8()) {
      it.fmt = (int)(std::find(formats, formats + nformats, it.g.act) - formats);
      if (it.fmt == nformats) {
        formats[nformats++] = it.g.act;
        scratch_bytes += round_up(QuantRows::bytes((size_t)n, cols, it.g.act), 64);
      }
    }
    const int rows = mats[m].rows;
    it.p = it.g.kind == GemmKind::Packed ? plan_packed(n, pack_groups(rows), cols, nth)
                                         : plan(n, rows, it.g.kind == GemmKind::Quant ? (size_t)cols : (size_t)cols * 4, nth);
    it.ntasks = rows == 0 ? 0 : (int64_t)it.p.nx * it.p.nr;
    ntasks += it.ntasks;
    macs += (double)n * rows * cols;
  }
  // Each format's rows in its own region of the shared scratch.
  uint8_t* scratch = static_cast<uint8_t*>(ThreadPool::instance().shared_scratch(scratch_bytes));
  for (int f = 0; f < nformats; f++) {
    acts[f] = quantize_acts(K, x, n, cols, formats[f], scratch);
    scratch += round_up(QuantRows::bytes((size_t)n, cols, formats[f]), 64);
  }
  auto task = [&](int64_t b, int64_t e, int ith) {
    int m = 0;
    int64_t first = 0;  // first task of matrix m
    for (int64_t t = b; t < e; t++) {
      while (t >= first + items[m].ntasks) first += items[m++].ntasks;
      const Item& it = items[m];
      const SharedMat& sm = mats[m];
      const int64_t local = t - first;
      const int xi = (int)(local / it.p.nr), ri = (int)(local % it.p.nr);
      const int i0 = xi * it.p.xchunk, i1 = std::min(n, i0 + it.p.xchunk);
      GemmActs a;
      if (it.fmt >= 0) a.q = acts[it.fmt].at((size_t)i0);
      else {
        a.x = x + (size_t)i0 * cols;
        a.ldx = (size_t)cols;
      }
      // Packed weights plan in 16-row groups, the others in rows.
      const int unit = it.g.kind == GemmKind::Packed ? kPackRows : 1;
      const int r0 = unit * ri * it.p.rchunk, r1 = std::min(sm.rows, unit * (ri + 1) * it.p.rchunk);
      gemm_block(K, it.g, i1 - i0, a, sm.w, sm.rows, cols, r0, r1, sm.y + (size_t)i0 * sm.rows + r0, (size_t)sm.rows, ith);
      if (sm.bias) add_bias(sm.y, sm.rows, i0, i1, r0, r1, sm.bias);
    }
  };
  if (macs < kSerialMacs) task(0, ntasks, 0);
  else parallel_for(ntasks, 1, task);
}

void matmul(const float* x, int n, int dt, int rows, int cols, const uint8_t* w, float* y, const float* bias) {
  const SharedMat m{dt, rows, w, y, bias};
  matmul_shared(x, n, cols, &m, 1);
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

// The data check of a weight whose dtype, rows and cols are already read: its stride, and `data`
// (argument `at`) long enough for the matrix, packed or not.
bool weight_data(Args& a, size_t at, WeightArg* wa) {
  wa->stride = row_bytes(wa->dt, wa->cols);
  if (wa->stride == 0) {
    a.fail(std::string(dtype_traits(wa->dt).name) + " rows must be a multiple of " +
           std::to_string(dtype_traits(wa->dt).block_elements) + " elements, got " + std::to_string(wa->cols));
    return false;
  }
  const size_t need = is_packed(wa->dt) ? packed_bytes(wa->dt, wa->rows, wa->cols) : wa->stride * (size_t)wa->rows;
  wa->data = a.u8(at, "weight data", need);
  return a.ok();
}

bool weight_arg(Args& a, size_t first, WeightArg* wa) {
  wa->dt = (int)a.integer(first, "dtype code", 0, kDTypeCount - 1);
  wa->rows = (int)a.integer(first + 1, "rows", 0, INT32_MAX);
  wa->cols = (int)a.integer(first + 2, "cols", 1, INT32_MAX);
  return a.ok() && weight_data(a, first + 3, wa);
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

// matmulShared(x, n, cols, dtype0, rows0, w0, y0, bias0, dtype1, ...): matmul_shared over up to
// kMaxShared matrices given five arguments each.
Napi::Value MatmulShared(const Napi::CallbackInfo& info) {
  Args a(info, "matmulShared");
  const int n = (int)a.integer(1, "n", 0, INT32_MAX);
  const int cols = (int)a.integer(2, "cols", 1, INT32_MAX);
  if (!a.ok()) return info.Env().Undefined();
  const size_t count = info.Length() < 3 ? 0 : (info.Length() - 3) / 5;
  if (count == 0 || count > (size_t)kMaxShared || info.Length() != 3 + 5 * count) {
    a.fail("expected (x, n, cols) and then (dtype, rows, w, y, bias) for 1 to " + std::to_string(kMaxShared) + " matrices");
    return info.Env().Undefined();
  }
  const float* x = a.f32(0, "x", (size_t)n * cols);
  SharedMat mats[kMaxShared];
  for (size_t m = 0; m < count; m++) {
    const size_t first = 3 + 5 * m;
    WeightArg wa;
    wa.dt = (int)a.integer(first, "dtype code", 0, kDTypeCount - 1);
    wa.rows = (int)a.integer(first + 1, "rows", 0, INT32_MAX);
    wa.cols = cols;
    if (!a.ok() || !weight_data(a, first + 2, &wa)) return info.Env().Undefined();
    float* y = a.f32(first + 3, "y", (size_t)n * wa.rows);
    const float* bias = a.f32_or_null(first + 4, "bias", (size_t)wa.rows);
    if (!a.ok()) return info.Env().Undefined();
    mats[m] = {wa.dt, wa.rows, wa.data, y, bias};
  }
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  matmul_shared(x, n, cols, mats, (int)count);
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
