// The small per-token ops: rmsnorm, LayerNorm, rotary embedding, silu(gate) * up, GELU (and gelu(gate) * up),
// tanh soft-capping, residual add, and the argmax of a row of logits (greedy sampling). They are
// memory-bound, so they only fan out to the pool when the tensor is large (prefill).
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "kernels.h"
#include "napi_args.h"
#include "threadpool.h"

namespace svc {
namespace {

constexpr int64_t kParallelElems = 1 << 16;  // below this the pool's wake-up costs more than the op

void rmsnorm(const float* x, int rows, int dim, const float* w, double eps, float* out) {
  const Kernels& K = kernels();
  auto body = [&](int64_t b, int64_t e, int) {
    for (int64_t r = b; r < e; r++) {
      const float* xr = x + (size_t)r * dim;
      const double ss = K.sum_squares(xr, dim);
      const float inv = (float)(1.0 / std::sqrt(ss / dim + eps));
      K.scale_mul(xr, inv, w, out + (size_t)r * dim, dim);
    }
  };
  if ((int64_t)rows * dim >= kParallelElems && rows > 1) parallel_for(rows, std::max(1, rows / (4 * ThreadPool::instance().size())), body);
  else body(0, rows, 0);
}

void layer_norm(const float* x, int rows, int dim, const float* w, const float* b, double eps, float* out) {
  const Kernels& K = kernels();
  auto body = [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; r++) K.layer_norm(x + (size_t)r * dim, dim, eps, w, b, out + (size_t)r * dim);
  };
  if ((int64_t)rows * dim >= kParallelElems && rows > 1) parallel_for(rows, std::max(1, rows / (4 * ThreadPool::instance().size())), body);
  else body(0, rows, 0);
}

// cos/sin for every (token, pair) of the last call. A forward pass ropes q and k of every layer at
// the same positions, so all but the first call per step reuse the table. rope and ropeMulti keep
// a table each: a batch never mixes them, but each is keyed on its own arguments.
struct RopeTable {
  std::vector<int32_t> positions;
  std::vector<int32_t> sections;  // ropeMulti only
  double theta = 0;
  int head_dim = 0;
  std::vector<float> inv_freq;
  std::vector<double> cs;  // [n][half][2] = cos, sin
};

// Same arithmetic as the reference (and HF): inv_freq rounded to f32.
void fill_inv_freq(RopeTable& t, int hd, double theta) {
  const int half = hd / 2;
  t.inv_freq.resize((size_t)half);  // vectors keep their capacity: rebuilds rarely allocate
  for (int k = 0; k < half; k++) {
    const float e = (float)(2 * k) / (float)hd;
    t.inv_freq[(size_t)k] = 1.0f / (float)std::pow(theta, (double)e);
  }
  t.theta = theta;
  t.head_dim = hd;
}

// The angle rounded to f32 (as HF), cos/sin in f64.
inline void set_angle(double* cs, int32_t pos, float inv) {
  const float angle = (float)pos * inv;
  cs[0] = std::cos((double)angle);
  cs[1] = std::sin((double)angle);
}

// Two tables, the most recently used first: a model whose layers alternate two RoPE bases (Gemma 3's
// local and global layers) rebuilds neither on every switch.
const double* rope_table(const int32_t* pos, int n, int hd, double theta) {
  static RopeTable tables[2];
  const int half = hd / 2;
  for (int i = 0; i < 2; i++) {
    RopeTable& c = tables[i];
    if (c.theta == theta && c.head_dim == hd && c.positions.size() == (size_t)n &&
        std::memcmp(c.positions.data(), pos, (size_t)n * sizeof(int32_t)) == 0) {
      if (i == 1) std::swap(tables[0], tables[1]);
      return tables[0].cs.data();
    }
  }
  std::swap(tables[0], tables[1]);  // the older one is rebuilt, as the most recent
  RopeTable& t = tables[0];
  fill_inv_freq(t, hd, theta);
  t.positions.assign(pos, pos + n);
  t.cs.resize((size_t)n * half * 2);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < half; k++) set_angle(&t.cs[((size_t)i * half + k) * 2], pos[i], t.inv_freq[(size_t)k]);
  return t.cs.data();
}

// M-RoPE: pair k of token i turns at pos[s * n + i], s the section k falls in (sections sum to half,
// checked by the binding).
const double* mrope_table(const int32_t* pos, int n, int hd, const int32_t* sections, int nsec, double theta) {
  static RopeTable t;
  const int half = hd / 2;
  const size_t npos = (size_t)nsec * n;
  if (t.theta == theta && t.head_dim == hd && t.positions.size() == npos && t.sections.size() == (size_t)nsec &&
      std::memcmp(t.positions.data(), pos, npos * sizeof(int32_t)) == 0 &&
      std::memcmp(t.sections.data(), sections, (size_t)nsec * sizeof(int32_t)) == 0)
    return t.cs.data();
  fill_inv_freq(t, hd, theta);
  t.positions.assign(pos, pos + npos);
  t.sections.assign(sections, sections + nsec);
  t.cs.resize((size_t)n * half * 2);
  for (int s = 0, k0 = 0; s < nsec; k0 += sections[s++])
    for (int i = 0; i < n; i++)
      for (int k = k0; k < k0 + sections[s]; k++) set_angle(&t.cs[((size_t)i * half + k) * 2], pos[(size_t)s * n + i], t.inv_freq[(size_t)k]);
  return t.cs.data();
}

// rope with given frequencies (partial rotary, LongRoPE): the rot / 2 pairs turn at inv (or
// theta^(-2k/rot) when inv is null), cos and sin multiplied by scale. A table of its own, so plain
// rope's stays warm; keyed on everything it depends on.
const double* rope_table_freqs(const int32_t* pos, int n, int rot, double theta, const float* inv, double scale) {
  static RopeTable t;
  static std::vector<float> given;  // the inv the table was built with (empty: theta's)
  static double built_scale = 0;
  const int half = rot / 2;
  const bool same_inv = inv == nullptr ? given.empty() && t.theta == theta
                                       : given.size() == (size_t)half && std::memcmp(given.data(), inv, (size_t)half * sizeof(float)) == 0;
  if (same_inv && t.head_dim == rot && built_scale == scale && t.positions.size() == (size_t)n &&
      std::memcmp(t.positions.data(), pos, (size_t)n * sizeof(int32_t)) == 0)
    return t.cs.data();
  if (inv == nullptr) {
    fill_inv_freq(t, rot, theta);
    given.clear();
  } else {
    t.inv_freq.assign(inv, inv + half);
    given.assign(inv, inv + half);
    t.theta = 0;
    t.head_dim = rot;
  }
  built_scale = scale;
  t.positions.assign(pos, pos + n);
  t.cs.resize((size_t)n * half * 2);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < half; k++) {
      double* cs = &t.cs[((size_t)i * half + k) * 2];
      set_angle(cs, pos[i], t.inv_freq[(size_t)k]);
      cs[0] *= scale;
      cs[1] *= scale;
    }
  return t.cs.data();
}

// Rotates the first rot elements of every head of every token by its row of the cos/sin table cs
// [n][rot / 2][2]; the rest of each head passes unchanged (rot == hd: the whole head).
void rotate(float* x, int n, int heads, int hd, const double* cs, bool neox, int rot) {
  const int half = rot / 2;
  auto body = [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; i++) {
      const double* c = cs + (size_t)i * half * 2;
      for (int h = 0; h < heads; h++) {
        float* v = x + ((size_t)i * heads + h) * hd;
        // neox pairs element k with k + half (HF rotate_half); normal pairs 2k with 2k + 1.
        const int stride = neox ? 1 : 2, other = neox ? half : 1;
        for (int k = 0; k < half; k++) {
          float* a = v + (size_t)k * stride;
          const double x1 = a[0], x2 = a[other];
          a[0] = (float)(x1 * c[2 * k] - x2 * c[2 * k + 1]);
          a[other] = (float)(x2 * c[2 * k] + x1 * c[2 * k + 1]);
        }
      }
    }
  };
  if ((int64_t)n * heads * hd >= kParallelElems && n > 1) parallel_for(n, std::max(1, n / (4 * ThreadPool::instance().size())), body);
  else body(0, n, 0);
}

template <class F>
void elementwise(int64_t len, F&& f) {
  if (len >= 2 * kParallelElems) parallel_for(len, kParallelElems / 2, [&](int64_t b, int64_t e, int) { f(b, e - b); });
  else f(0, len);
}

// ---- bindings ----

// rmsnorm(x, rows, dim, weight, eps, out)
Napi::Value Rmsnorm(const Napi::CallbackInfo& info) {
  Args a(info, "rmsnorm");
  const int rows = (int)a.integer(1, "rows", 0, INT32_MAX);
  const int dim = (int)a.integer(2, "dim", 1, INT32_MAX);
  const float* x = a.f32(0, "x", (size_t)rows * dim);
  const float* w = a.f32(3, "weight", (size_t)dim);
  const double eps = a.number(4, "eps");
  float* out = a.f32(5, "out", (size_t)rows * dim);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  rmsnorm(x, rows, dim, w, eps, out);
  return info.Env().Undefined();
}

// layerNorm(x, rows, dim, weight, bias, eps, out)
Napi::Value LayerNorm(const Napi::CallbackInfo& info) {
  Args a(info, "layerNorm");
  const int rows = (int)a.integer(1, "rows", 0, INT32_MAX);
  const int dim = (int)a.integer(2, "dim", 1, INT32_MAX);
  const float* x = a.f32(0, "x", (size_t)rows * dim);
  const float* w = a.f32(3, "weight", (size_t)dim);
  const float* b = a.f32(4, "bias", (size_t)dim);
  const double eps = a.number(5, "eps");
  float* out = a.f32(6, "out", (size_t)rows * dim);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  layer_norm(x, rows, dim, w, b, eps, out);
  return info.Env().Undefined();
}

// rope(x, n, numHeads, headDim, positions, theta, neox[, rotaryDim, invFreq | null, scale]): the
// three optional arguments together (ops.ts RopeFrequencies); without them plain RoPE over the head.
Napi::Value Rope(const Napi::CallbackInfo& info) {
  Args a(info, "rope");
  const int n = (int)a.integer(1, "n", 0, INT32_MAX);
  const int heads = (int)a.integer(2, "numHeads", 1, INT32_MAX);
  const int hd = (int)a.integer(3, "headDim", 2, INT32_MAX);
  if (a.ok() && hd % 2 != 0) a.fail("headDim must be even");
  float* x = a.f32(0, "x", (size_t)n * heads * hd);
  const int32_t* pos = a.i32(4, "positions", (size_t)n);
  const double theta = a.number(5, "theta");
  const bool neox = a.boolean(6, "neox");
  if (info.Length() > 7) {
    const int rot = (int)a.integer(7, "rotaryDim", 2, hd);
    if (a.ok() && rot % 2 != 0) a.fail("rotaryDim must be even");
    const float* inv = a.f32_or_null(8, "invFreq", (size_t)rot / 2);
    if (a.ok() && inv != nullptr && a.last_length() != (size_t)rot / 2) a.fail("invFreq must hold rotaryDim / 2 values");
    const double scale = a.number(9, "scale");
    if (!a.ok()) return info.Env().Undefined();
    std::lock_guard<std::mutex> lk(op_mutex());
    rotate(x, n, heads, hd, rope_table_freqs(pos, n, rot, theta, inv, scale), neox, rot);
    return info.Env().Undefined();
  }
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  rotate(x, n, heads, hd, rope_table(pos, n, hd, theta), neox, hd);
  return info.Env().Undefined();
}

// ropeMulti(x, n, numHeads, headDim, positions [sections.length, n], sections, theta)
Napi::Value RopeMulti(const Napi::CallbackInfo& info) {
  Args a(info, "ropeMulti");
  const int n = (int)a.integer(1, "n", 0, INT32_MAX);
  const int heads = (int)a.integer(2, "numHeads", 1, INT32_MAX);
  const int hd = (int)a.integer(3, "headDim", 2, INT32_MAX);
  if (a.ok() && hd % 2 != 0) a.fail("headDim must be even");
  float* x = a.f32(0, "x", (size_t)n * heads * hd);
  const int32_t* sections = a.i32(5, "sections", 1);
  const size_t nsec = a.last_length();
  const int32_t* pos = a.i32(4, "positions", nsec * n);
  const double theta = a.number(6, "theta");
  if (a.ok()) {
    int64_t sum = 0;
    for (size_t s = 0; s < nsec; s++) {
      if (sections[s] < 0) a.fail("sections must not be negative");
      sum += sections[s];
    }
    if (a.ok() && sum != hd / 2) a.fail("sections must sum to headDim / 2");
  }
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  rotate(x, n, heads, hd, mrope_table(pos, n, hd, sections, (int)nsec, theta), true, hd);
  return info.Env().Undefined();
}

// siluMul(gate, up, out, len)
Napi::Value SiluMul(const Napi::CallbackInfo& info) {
  Args a(info, "siluMul");
  const int64_t len = a.integer(3, "len", 0, INT64_C(1) << 40);
  const float* g = a.f32(0, "gate", (size_t)len);
  const float* u = a.f32(1, "up", (size_t)len);
  float* out = a.f32(2, "out", (size_t)len);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  const Kernels& K = kernels();
  elementwise(len, [&](int64_t b, int64_t cnt) { K.silu_mul(g + b, u + b, out + b, cnt); });
  return info.Env().Undefined();
}

// gelu(x, out, len, kind): kind 0 = erf (exact), 1 = tanh approximation, 2 = quick (x * sigmoid(1.702 x)).
Napi::Value Gelu(const Napi::CallbackInfo& info) {
  Args a(info, "gelu");
  const int64_t len = a.integer(2, "len", 0, INT64_C(1) << 40);
  const float* x = a.f32(0, "x", (size_t)len);
  float* out = a.f32(1, "out", (size_t)len);
  const int kind = (int)a.integer(3, "kind", 0, 2);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  const Kernels& K = kernels();
  void (*f)(const float*, float*, int64_t) = kind == 0 ? K.gelu_erf : kind == 1 ? K.gelu_tanh : K.gelu_quick;
  elementwise(len, [&](int64_t b, int64_t cnt) { f(x + b, out + b, cnt); });
  return info.Env().Undefined();
}

// geluMul(gate, up, out, len, kind): out = gelu(gate) * up, kind as gelu's. The GELU goes into out
// chunk by chunk and is multiplied there while the chunk is in cache; out may alias gate, not up.
Napi::Value GeluMul(const Napi::CallbackInfo& info) {
  Args a(info, "geluMul");
  const int64_t len = a.integer(3, "len", 0, INT64_C(1) << 40);
  const float* g = a.f32(0, "gate", (size_t)len);
  const float* u = a.f32(1, "up", (size_t)len);
  float* out = a.f32(2, "out", (size_t)len);
  const int kind = (int)a.integer(4, "kind", 0, 2);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  const Kernels& K = kernels();
  void (*f)(const float*, float*, int64_t) = kind == 0 ? K.gelu_erf : kind == 1 ? K.gelu_tanh : K.gelu_quick;
  constexpr int64_t kChunk = 4096;
  elementwise(len, [&](int64_t b, int64_t cnt) {
    for (int64_t c = b; c < b + cnt; c += kChunk) {
      const int64_t m = std::min(kChunk, b + cnt - c);
      f(g + c, out + c, m);
      K.mul(out + c, u + c, out + c, m);
    }
  });
  return info.Env().Undefined();
}

// softcap(x, out, len, cap): out = cap * tanh(x / cap).
Napi::Value Softcap(const Napi::CallbackInfo& info) {
  Args a(info, "softcap");
  const int64_t len = a.integer(2, "len", 0, INT64_C(1) << 40);
  const float* x = a.f32(0, "x", (size_t)len);
  float* out = a.f32(1, "out", (size_t)len);
  const double cap = a.number(3, "cap");
  if (a.ok() && !(cap > 0)) a.fail("cap must be positive");
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  const Kernels& K = kernels();
  elementwise(len, [&](int64_t b, int64_t cnt) { K.softcap(x + b, out + b, cnt, (float)cap); });
  return info.Env().Undefined();
}

// add(a, b, out, len)
Napi::Value Add(const Napi::CallbackInfo& info) {
  Args a(info, "add");
  const int64_t len = a.integer(3, "len", 0, INT64_C(1) << 40);
  const float* x = a.f32(0, "a", (size_t)len);
  const float* y = a.f32(1, "b", (size_t)len);
  float* out = a.f32(2, "out", (size_t)len);
  if (!a.ok()) return info.Env().Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  const Kernels& K = kernels();
  elementwise(len, [&](int64_t b, int64_t cnt) { K.add(x + b, y + b, out + b, cnt); });
  return info.Env().Undefined();
}

// argmax(x, len) -> index of the first largest of x[0, len); NaN never wins, 0 when none is above -inf.
// One thread: a vocabulary-sized row is microseconds, less than the pool's wake-up.
Napi::Value Argmax(const Napi::CallbackInfo& info) {
  Args a(info, "argmax");
  const int64_t len = a.integer(1, "len", 0, INT64_C(1) << 40);
  const float* x = a.f32(0, "x", (size_t)len);
  if (!a.ok()) return info.Env().Undefined();
  return Napi::Number::New(info.Env(), (double)kernels().argmax(x, len));
}

}  // namespace

void InitNormRopeAct(Napi::Env env, Napi::Object exports) {
  exports.Set("argmax", Napi::Function::New(env, Argmax));
  exports.Set("rmsnorm", Napi::Function::New(env, Rmsnorm));
  exports.Set("layerNorm", Napi::Function::New(env, LayerNorm));
  exports.Set("rope", Napi::Function::New(env, Rope));
  exports.Set("ropeMulti", Napi::Function::New(env, RopeMulti));
  exports.Set("siluMul", Napi::Function::New(env, SiluMul));
  exports.Set("gelu", Napi::Function::New(env, Gelu));
  exports.Set("geluMul", Napi::Function::New(env, GeluMul));
  exports.Set("softcap", Napi::Function::New(env, Softcap));
  exports.Set("add", Napi::Function::New(env, Add));
}

}  // namespace svc
