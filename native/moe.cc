// The routed experts of a MoE layer in one native call (ops.moe). A layer's experts are registered
// once (moeLayer: each expert's gate / up / down weights as raw pointers, whose buffers the JS side
// keeps alive), so a step passes one handle instead of 3 x experts typed arrays. A step:
//   1. groups the (row, j) picks by expert with a counting sort: expert e's picks become the slots
//      [start[e], start[e] + count[e]), in row order. Experts no row picked, or not held here, are
//      never touched, so a decode step reads only the selected experts' weights;
//   2. prepares each slot's activations once: quantized to int8 blocks (int8 kernels) or copied (f32
//      kernels), in slot order, so every expert's rows are contiguous;
//   3. multiplies gate and up of every active expert in ONE parallel_for over (expert, slot chunk,
//      row chunk) tasks. A task takes the same rows of gate and up, so it can apply silu(g) * u at
//      once and quantize its piece of h for down right there: every 32-column block is quantized on
//      its own, so pieces on 32-column boundaries equal the row quantized whole, and h needs no
//      pass of its own;
//   4. multiplies down of every active expert in one parallel_for;
//   5. adds the weighted results into out: each row sums its k contributions in j order, so the
//      result never depends on thread timing or count.
// Every product goes through the kernel matmul() uses for its dtype (gemm.h), with the same
// activation rounding, and those kernels are batch-invariant: an expert's rows come out bit for bit
// as three matmuls of the row alone would give them. Scratch is the pool's, grown once and reused;
// more than kMaxSlots picks are done in passes over the rows, which bounds it.
#include <napi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dtypes.h"
#include "gemm.h"
#include "kernels.h"
#include "napi_args.h"
#include "packed.h"
#include "threadpool.h"

namespace svc {
namespace {

// (row, expert) picks per pass. 4096 is 512 rows of top-8: with 128 experts a prefill pass still
// gives each expert ~32 rows to reuse its weights over, and the scratch stays near 11 KB per pick
// at Qwen3-30B-A3B's sizes.
constexpr int kMaxSlots = 4096;
// Gate / up rows per task at most: bounds the per-thread g and u blocks (2 x 128 x 512 floats).
constexpr int kMaxInterChunk = 512;
// Below this many multiply-adds the weighted sum runs on the caller.
constexpr int64_t kParallelSum = 1 << 16;

enum Proj { kGate = 0, kUp = 1, kDown = 2 };
const char* const kProjNames[3] = {"gate", "up", "down"};

struct MoeLayer {
  int experts = 0, hidden = 0, inter = 0;
  int dt[3] = {0, 0, 0};          // dtype code per projection (a packed code for packed weights)
  std::vector<const uint8_t*> w;  // [expert * 3 + proj]; all three null: the expert is not held here
  std::vector<const float*> b;    // [expert * 3 + proj] biases (GPT-OSS), null where none; empty: no biases at all
  bool clamped = false;           // GPT-OSS's clamped SwiGLU in place of silu(g) * u
  float alpha = 0.0f, limit = 0.0f;
  const uint8_t* weight(int e, int p) const { return w[(size_t)e * 3 + p]; }
  const float* bias(int e, int p) const { return b.empty() ? nullptr : b[(size_t)e * 3 + p]; }
  bool held(int e) const { return w[(size_t)e * 3] != nullptr; }
};

// A task's activation rows: slots [s0, s0 + m) of expert e.
struct Chunk {
  int e, s0, m;
};

// Cuts every active expert's slots into chunks of at most xc rows; returns how many.
int make_chunks(const int* active, int na, const int* count, const int* start, int xc, Chunk* out) {
  int nc = 0;
  for (int a = 0; a < na; a++) {
    const int e = active[a];
    for (int i = 0; i < count[e]; i += xc) out[nc++] = Chunk{e, start[e] + i, std::min(xc, count[e] - i)};
  }
  return nc;
}

// Weight rows per task: about 4 tasks per thread over all chunks (uneven cores balance without
// tiny tasks), a multiple of `align`, at most `cap`; rows itself when one chunk covers them.
int row_chunk(int rows, int nchunks, int nth, int align, int cap) {
  const int want = nth == 1 ? 1 : nth * 4;
  const int nr = std::max(1, (want + nchunks - 1) / nchunks);
  const int rc = std::min((int)round_up((size_t)((rows + nr - 1) / nr), (size_t)align), cap);
  return rc >= rows ? rows : rc;
}

// body(task, ith) for every task, on the caller alone when the product is tiny.
template <class F>
void run_tasks(int64_t ntasks, double macs, F&& body) {
  auto run = [&](int64_t b, int64_t e, int ith) {
    for (int64_t t = b; t < e; t++) body(t, ith);
  };
  if (macs < kSerialMacs) run(0, ntasks, 0);
  else parallel_for(ntasks, 1, run);
}

// Carves consecutive 64-byte aligned arrays out of one buffer; with no buffer it only measures.
struct Carver {
  uint8_t* base = nullptr;
  size_t off = 0;
  template <class T>
  T* take(size_t count) {
    off = round_up(off, 64);
    T* p = base ? reinterpret_cast<T*>(base + off) : nullptr;
    off += count * sizeof(T);
    return p;
  }
};

// GPT-OSS's clamped SwiGLU through the ISA's silu_mul: g ← min(g, limit), u ← clamp(u, ±limit);
// (u + 1) · g · σ(α·g) = silu(α·g) · (u + 1) / α. g and u are scratch, overwritten.
void clamped_swiglu(const Kernels& K, float* g, float* u, float* dst, int w, float alpha, float limit) {
  const float inv_alpha = 1.0f / alpha;
  for (int d = 0; d < w; d++) {
    g[d] = alpha * std::min(g[d], limit);
    u[d] = (std::min(std::max(u[d], -limit), limit) + 1.0f) * inv_alpha;
  }
  K.silu_mul(g, u, dst, w);
}

// x[0, w) += b[0, w).
inline void add_bias(float* x, const float* b, int w) {
  for (int d = 0; d < w; d++) x[d] += b[d];
}

void moe(const MoeLayer& L, const float* x, int n, const int32_t* ids, const float* wts, int k, float* out) {
  const Kernels& K = kernels();
  ThreadPool& pool = ThreadPool::instance();
  const int nth = pool.size();
  const int E = L.experts, H = L.hidden, I = L.inter;
  const WeightGemm Gg = weight_gemm(K, L.dt[kGate]), Gu = weight_gemm(K, L.dt[kUp]), Gd = weight_gemm(K, L.dt[kDown]);
  // Gate and up usually share a dtype, and then one quantized copy of the rows serves both.
  const bool share_q = Gg.int8() && Gu.int8() && Gg.act == Gu.act;
  const bool need_xf = !Gg.int8() || !Gu.int8();
  const int xc_gu = std::min(x_chunk(Gg, H), x_chunk(Gu, H));
  const int xc_d = x_chunk(Gd, I);
  const int rc_max = std::min(I, kMaxInterChunk);
  const int rows_per_pass = std::max(1, kMaxSlots / k);
  const size_t max_slots = (size_t)std::min(n, rows_per_pass) * (size_t)k;
  const size_t tmp_stride = round_up((size_t)2 * xc_gu * rc_max, 16);

  // Everything in one shared buffer: the grouping tables, activations, h, the down results and
  // each thread's g / u blocks. Laid out twice: once to measure, once over the buffer.
  int *count = nullptr, *start = nullptr, *cursor = nullptr, *active = nullptr, *slot_of = nullptr, *slot_row = nullptr;
  Chunk* chunks = nullptr;
  QuantRows xq_gate, xq_up, hq;
  float *xf = nullptr, *hf = nullptr, *y = nullptr, *tmp = nullptr;
  auto layout = [&](Carver& c) {
    count = c.take<int>(E);
    start = c.take<int>(E);
    cursor = c.take<int>(E);
    active = c.take<int>(E);
    slot_of = c.take<int>(max_slots);
    slot_row = c.take<int>(max_slots);
    chunks = c.take<Chunk>(max_slots);
    if (Gg.int8()) {
      uint8_t* p = c.take<uint8_t>(QuantRows::bytes(max_slots, H, Gg.act));
      if (p) xq_gate = QuantRows::carve(p, max_slots, H, Gg.act);
    }
    if (Gu.int8() && !share_q) {
      uint8_t* p = c.take<uint8_t>(QuantRows::bytes(max_slots, H, Gu.act));
      if (p) xq_up = QuantRows::carve(p, max_slots, H, Gu.act);
    }
    if (need_xf) xf = c.take<float>(max_slots * H);
    if (Gd.int8()) {
      uint8_t* p = c.take<uint8_t>(QuantRows::bytes(max_slots, I, Gd.act));
      if (p) hq = QuantRows::carve(p, max_slots, I, Gd.act);
    } else {
      hf = c.take<float>(max_slots * I);
    }
    y = c.take<float>(max_slots * H);
    tmp = c.take<float>((size_t)nth * tmp_stride);
  };
  Carver measure;
  layout(measure);
  Carver carve{static_cast<uint8_t*>(pool.shared_scratch(measure.off))};
  layout(carve);
  if (share_q) xq_up = xq_gate;

  auto acts = [](const WeightGemm& G, const QuantRows& q, const float* xs, int cols, int s0) {
    GemmActs a;
    if (G.int8()) {
      a.q = q.at((size_t)s0);
    } else {
      a.x = xs + (size_t)s0 * cols;
      a.ldx = (size_t)cols;
    }
    return a;
  };

  for (int t0 = 0; t0 < n; t0 += rows_per_pass) {
    const int ns = std::min(n - t0, rows_per_pass);
    const int npicks = ns * k;
    const int32_t* pid = ids + (size_t)t0 * k;

    // 1. Group the picks by expert (picks of experts not held here get no slot).
    std::fill(count, count + E, 0);
    for (int s = 0; s < npicks; s++)
      if (L.held(pid[s])) count[pid[s]]++;
    int na = 0, M = 0;
    for (int e = 0; e < E; e++) {
      start[e] = cursor[e] = M;
      if (count[e] > 0) active[na++] = e;
      M += count[e];
    }
    for (int s = 0; s < npicks; s++) {
      const int e = pid[s];
      if (!L.held(e)) {
        slot_of[s] = -1;
        continue;
      }
      const int slot = cursor[e]++;
      slot_of[s] = slot;
      slot_row[slot] = t0 + s / k;
    }

    if (M > 0) {
      // 2. Each slot's activations, once.
      auto prep = [&](int64_t b, int64_t e, int) {
        for (int64_t s = b; s < e; s++) {
          const float* xr = x + (size_t)slot_row[s] * H;
          if (Gg.int8()) xq_gate.quantize(K, xr, (size_t)s, 0, H, Gg.act);
          if (Gu.int8() && !share_q) xq_up.quantize(K, xr, (size_t)s, 0, H, Gu.act);
          if (need_xf) std::memcpy(xf + (size_t)s * H, xr, (size_t)H * sizeof(float));
        }
      };
      if (M >= 16) parallel_for(M, 8, prep);
      else prep(0, M, 0);

      // Busiest experts first: the dynamic hand-out then ends on the small tasks.
      std::sort(active, active + na, [&](int a, int b) { return count[a] != count[b] ? count[a] > count[b] : a < b; });

      // 3. gate and up, silu(g) * u, and h as down takes it.
      int nc = make_chunks(active, na, count, start, xc_gu, chunks);
      int rc = row_chunk(I, nc, nth, 32, kMaxInterChunk);
      int nr = (I + rc - 1) / rc;
      run_tasks((int64_t)nc * nr, 2.0 * M * I * H, [&](int64_t t, int ith) {
        const Chunk& c = chunks[t / nr];
        const int r0 = (int)(t % nr) * rc, r1 = std::min(I, r0 + rc), w = r1 - r0;
        float* g = tmp + (size_t)ith * tmp_stride;
        float* u = g + (size_t)xc_gu * rc_max;
        gemm_block(K, Gg, c.m, acts(Gg, xq_gate, xf, H, c.s0), L.weight(c.e, kGate), I, H, r0, r1, g, (size_t)w, ith);
        gemm_block(K, Gu, c.m, acts(Gu, xq_up, xf, H, c.s0), L.weight(c.e, kUp), I, H, r0, r1, u, (size_t)w, ith);
        const float* bg = L.bias(c.e, kGate);
        const float* bu = L.bias(c.e, kUp);
        for (int i = 0; i < c.m; i++) {
          float* gi = g + (size_t)i * w;
          float* ui = u + (size_t)i * w;
          if (bg) add_bias(gi, bg + r0, w);
          if (bu) add_bias(ui, bu + r0, w);
          float* dst = Gd.int8() ? gi : hf + (size_t)(c.s0 + i) * I + r0;
          if (L.clamped) clamped_swiglu(K, gi, ui, dst, w, L.alpha, L.limit);
          else K.silu_mul(gi, ui, dst, w);
          if (Gd.int8()) hq.quantize(K, gi, (size_t)(c.s0 + i), r0, w, Gd.act);
        }
      });

      // 4. down.
      nc = make_chunks(active, na, count, start, xc_d, chunks);
      rc = row_chunk(H, nc, nth, kPackRows, INT_MAX);
      nr = (H + rc - 1) / rc;
      run_tasks((int64_t)nc * nr, (double)M * H * I, [&](int64_t t, int ith) {
        const Chunk& c = chunks[t / nr];
        const int r0 = (int)(t % nr) * rc, r1 = std::min(H, r0 + rc);
        gemm_block(K, Gd, c.m, acts(Gd, hq, hf, I, c.s0), L.weight(c.e, kDown), H, I, r0, r1, y + (size_t)c.s0 * H + r0, (size_t)H,
                   ith);
        if (const float* bd = L.bias(c.e, kDown))
          for (int i = 0; i < c.m; i++) add_bias(y + (size_t)(c.s0 + i) * H + r0, bd + r0, r1 - r0);
      });
    }

    // 5. out = the picks' weighted results, each row's in j order.
    auto sum = [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; i++) {
        float* o = out + (size_t)(t0 + i) * H;
        std::fill(o, o + H, 0.0f);
        for (int j = 0; j < k; j++) {
          const int s = slot_of[i * k + j];
          if (s < 0) continue;
          const float wgt = wts[(size_t)(t0 + i) * k + j];
          const float* ys = y + (size_t)s * H;
          for (int h = 0; h < H; h++) o[h] += wgt * ys[h];
        }
      }
    };
    if ((int64_t)npicks * H >= kParallelSum && ns > 1) parallel_for(ns, std::max(1, ns / (4 * nth)), sum);
    else sum(0, ns, 0);
  }
}

// ---- bindings ----

// Marks the externals moeLayer makes, so moe() never takes another object's pointer for a layer.
constexpr napi_type_tag kMoeLayerTag = {0x9d3b6f1c2a4e4b57ULL, 0xa1c8e0f25d7b3e96ULL};

// moeLayer(hidden, inter, gateDtype, upDtype, downDtype, gate, up, down[, gateBias, upBias, downBias[,
// alpha, limit]]) -> handle. gate / up / down: arrays of one Uint8Array (the weight data) or null per
// expert; an expert missing any of its three is not held. The bias arrays (undefined: none) hold a
// Float32Array (inter, inter, hidden values) or null per expert; alpha and limit (GPT-OSS's clamped
// SwiGLU; undefined: silu(g) * u). The handle holds raw pointers: the caller keeps the arrays alive.
Napi::Value MoeLayerNew(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Args a(info, "moeLayer");
  auto L = std::make_unique<MoeLayer>();
  L->hidden = (int)a.integer(0, "hidden", 1, INT32_MAX);
  L->inter = (int)a.integer(1, "inter", 1, INT32_MAX);
  for (int p = 0; p < 3; p++) L->dt[p] = (int)a.integer(2 + p, (std::string(kProjNames[p]) + " dtype code").c_str(), 0, kDTypeCount - 1);
  if (!a.ok()) return env.Undefined();
  int rows[3], cols[3];
  size_t need[3];
  for (int p = 0; p < 3; p++) {
    rows[p] = p == kDown ? L->hidden : L->inter;
    cols[p] = p == kDown ? L->inter : L->hidden;
    const int dt = L->dt[p];
    const size_t stride = row_bytes(dt, cols[p]);
    if (stride == 0) {
      a.fail(std::string(kProjNames[p]) + ": " + dtype_traits(dt).name + " rows must be a multiple of " +
             std::to_string(dtype_traits(dt).block_elements) + " elements, got " + std::to_string(cols[p]));
      return env.Undefined();
    }
    need[p] = is_packed(dt) ? packed_bytes(dt, rows[p], cols[p]) : stride * (size_t)rows[p];
  }
  Napi::Array arr[3];
  for (int p = 0; p < 3; p++) {
    if ((size_t)(5 + p) >= info.Length() || !info[5 + p].IsArray()) {
      a.fail(std::string(kProjNames[p]) + " must be an array");
      return env.Undefined();
    }
    arr[p] = info[5 + p].As<Napi::Array>();
  }
  const uint32_t E = arr[0].Length();
  if (E == 0 || E > (1u << 20) || arr[1].Length() != E || arr[2].Length() != E) {
    a.fail("gate, up and down must list the same number of experts (1 to 2^20)");
    return env.Undefined();
  }
  L->experts = (int)E;
  L->w.assign((size_t)E * 3, nullptr);
  for (uint32_t e = 0; e < E; e++) {
    for (int p = 0; p < 3; p++) {
      Napi::Value v = arr[p].Get(e);
      if (v.IsNull() || v.IsUndefined()) continue;
      const std::string name = std::string(kProjNames[p]) + "[" + std::to_string(e) + "]";
      napi_typedarray_type type;
      size_t length = 0, offset = 0;
      void* data = nullptr;
      napi_value ab;
      if (!v.IsTypedArray() || napi_get_typedarray_info(env, v, &type, &length, &data, &ab, &offset) != napi_ok ||
          type != napi_uint8_array) {
        a.fail(name + " must be a Uint8Array or null");
        return env.Undefined();
      }
      if (length < need[p]) {
        a.fail(name + ": " + dtype_traits(L->dt[p]).name + " [" + std::to_string(rows[p]) + ", " + std::to_string(cols[p]) +
               "] needs " + std::to_string(need[p]) + " bytes, has " + std::to_string(length));
        return env.Undefined();
      }
      L->w[(size_t)e * 3 + p] = static_cast<const uint8_t*>(data);
    }
    // The reference skips an expert missing any of its three projections: so does the kernel.
    const uint8_t** we = L->w.data() + (size_t)e * 3;
    if (!we[0] || !we[1] || !we[2]) we[0] = we[1] = we[2] = nullptr;
  }
  const bool has_bias = info.Length() > 8 && !info[8].IsUndefined();
  if (has_bias) {
    L->b.assign((size_t)E * 3, nullptr);
    for (int p = 0; p < 3; p++) {
      const std::string list = std::string(kProjNames[p]) + "Bias";
      if ((size_t)(8 + p) >= info.Length() || !info[8 + p].IsArray() || info[8 + p].As<Napi::Array>().Length() != E) {
        a.fail(list + " must be an array of " + std::to_string(E) + " entries");
        return env.Undefined();
      }
      Napi::Array arr = info[8 + p].As<Napi::Array>();
      const size_t len = p == kDown ? (size_t)L->hidden : (size_t)L->inter;
      for (uint32_t e = 0; e < E; e++) {
        Napi::Value v = arr.Get(e);
        if (v.IsNull() || v.IsUndefined()) continue;
        if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array ||
            v.As<Napi::TypedArray>().ElementLength() < len) {
          a.fail(list + "[" + std::to_string(e) + "] must be a Float32Array of at least " + std::to_string(len) + " values, or null");
          return env.Undefined();
        }
        L->b[(size_t)e * 3 + p] = v.As<Napi::Float32Array>().Data();
      }
    }
  }
  if (info.Length() > 11 && !info[11].IsUndefined()) {
    const double alpha = a.number(11, "alpha"), limit = a.number(12, "limit");
    if (!a.ok()) return env.Undefined();
    if (!(alpha > 0) || !std::isfinite(alpha) || !(limit > 0)) {
      a.fail("alpha must be finite and > 0, limit > 0");
      return env.Undefined();
    }
    L->clamped = true;
    L->alpha = (float)alpha;
    L->limit = (float)limit;
  }
  Napi::External<MoeLayer> ext = Napi::External<MoeLayer>::New(env, L.release(), [](Napi::Env, MoeLayer* p) { delete p; });
  ext.TypeTag(&kMoeLayerTag);
  return ext;
}

// True when [a, a + an) and [b, b + bn) share a byte.
bool overlap(const void* a, size_t an, const void* b, size_t bn) {
  const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
  return an > 0 && bn > 0 && pa < pb + bn && pb < pa + an;
}

// moe(layer, x, n, ids, weights, k, out)
Napi::Value Moe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Args a(info, "moe");
  if (info.Length() < 1 || !info[0].IsExternal() || !info[0].As<Napi::External<MoeLayer>>().CheckTypeTag(&kMoeLayerTag)) {
    a.fail("layer must be a handle made by moeLayer");
    return env.Undefined();
  }
  const MoeLayer& L = *info[0].As<Napi::External<MoeLayer>>().Data();
  const int n = (int)a.integer(2, "n", 0, INT32_MAX);
  const int k = (int)a.integer(5, "k", 1, 1 << 16);
  if (!a.ok()) return env.Undefined();
  const size_t xn = (size_t)n * L.hidden, picks = (size_t)n * k;
  const float* x = a.f32(1, "x", xn);
  const int32_t* ids = a.i32(3, "ids", picks);
  const float* wts = a.f32(4, "weights", picks);
  float* out = a.f32(6, "out", xn);
  if (!a.ok()) return env.Undefined();
  const size_t ob = xn * sizeof(float);
  if (overlap(out, ob, x, ob) || overlap(out, ob, ids, picks * 4) || overlap(out, ob, wts, picks * 4)) {
    a.fail("out must not overlap x, ids or weights");
    return env.Undefined();
  }
  for (size_t i = 0; i < picks; i++) {
    if (ids[i] < 0 || ids[i] >= L.experts) {
      a.fail_range("expert id " + std::to_string(ids[i]) + " at ids[" + std::to_string(i) + "] outside the " + std::to_string(L.experts) +
                   " experts");
      return env.Undefined();
    }
  }
  if (n == 0) return env.Undefined();
  std::lock_guard<std::mutex> lk(op_mutex());
  moe(L, x, n, ids, wts, k, out);
  return env.Undefined();
}

}  // namespace

void InitMoe(Napi::Env env, Napi::Object exports) {
  exports.Set("moeLayer", Napi::Function::New(env, MoeLayerNew));
  exports.Set("moe", Napi::Function::New(env, Moe));
}

}  // namespace svc
