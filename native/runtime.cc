// Runtime controls exposed to JS: which kernel path, how many threads and how long they spin (set
// by src/kernels/native.ts at load from SVC_CPU_FEATURES / SVC_THREADS / SVC_SPIN_US, which nothing
// in the addon reads; also used by tests that exercise the fallbacks), and info() for logs.
#include <napi.h>

#include <mutex>
#include <string>

#include "cpu_features.h"
#include "dtypes.h"
#include "kernels.h"
#include "threadpool.h"

namespace svc {
namespace {

// info() -> { cpuPath, bestCpuPath, threads, spinUs, features: { avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni, avx512bf16, avx512vbmi, amxInt8 } }
Napi::Value Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CpuFeatures& f = cpu_features();
  Napi::Object feats = Napi::Object::New(env);
  feats.Set("avx2", f.avx2);
  feats.Set("fma", f.fma);
  feats.Set("f16c", f.f16c);
  feats.Set("avx512f", f.avx512f);
  feats.Set("avx512bw", f.avx512bw);
  feats.Set("avx512vl", f.avx512vl);
  feats.Set("avx512vnni", f.avx512vnni);
  feats.Set("avx512bf16", f.avx512bf16);
  feats.Set("avx512vbmi", f.avx512vbmi);
  feats.Set("amxInt8", f.amx_int8);
  Napi::Object o = Napi::Object::New(env);
  o.Set("cpuPath", cpu_path_name(current_cpu_path()));
  o.Set("bestCpuPath", cpu_path_name(best_cpu_path()));
  o.Set("threads", ThreadPool::instance().size());
  o.Set("spinUs", (double)ThreadPool::instance().spin_ns() / 1000.0);
  o.Set("features", feats);
  return o;
}

// setCpuPath('scalar' | 'avx2' | 'avx512' | 'amx')
Napi::Value SetCpuPath(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  CpuPath p;
  if (info.Length() < 1 || !info[0].IsString() || !parse_cpu_path(info[0].As<Napi::String>().Utf8Value().c_str(), &p)) {
    Napi::TypeError::New(env, "setCpuPath: expected 'scalar', 'avx2', 'avx512' or 'amx'").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::lock_guard<std::mutex> lk(op_mutex());
  if (!set_cpu_path(p)) {
    Napi::Error::New(env, std::string("setCpuPath: this CPU does not support the ") + cpu_path_name(p) + " path")
        .ThrowAsJavaScriptException();
  }
  return env.Undefined();
}

// setNumThreads(n): total threads including the caller.
Napi::Value SetNumThreads(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "setNumThreads: expected a thread count").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const int n = info[0].As<Napi::Number>().Int32Value();
  if (n < 1 || n > 1024) {
    Napi::RangeError::New(env, "setNumThreads: count must be in [1, 1024]").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::lock_guard<std::mutex> lk(op_mutex());
  ThreadPool::instance().resize(n);
  return env.Undefined();
}

// dtypeTraits() -> { weights: [{ name, blockElements, blockBytes, packed }],
// kv: [{ name, rowBytes (per head dim 0..512), align, scaled, rotated }] }, each at its code: the C++
// traits rows, for the test that src/kernels/dtypes.ts agrees with them.
Napi::Value DTypeTraitsInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array weights = Napi::Array::New(env, kDTypeCount);
  for (int i = 0; i < kDTypeCount; i++) {
    const DTypeTraits& t = dtype_traits(i);
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", t.name);
    o.Set("blockElements", t.block_elements);
    o.Set("blockBytes", t.block_bytes);
    o.Set("packed", t.packed);
    weights.Set((uint32_t)i, o);
  }
  Napi::Array kv = Napi::Array::New(env, kKvDTypeCount);
  for (int i = 0; i < kKvDTypeCount; i++) {
    const KvDTypeTraits& t = kv_dtype_traits(i);
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", t.name);
    Napi::Array rows = Napi::Array::New(env, 513);
    for (int hd = 0; hd <= 512; hd++) rows.Set((uint32_t)hd, (double)t.row_bytes(hd));
    o.Set("rowBytes", rows);
    o.Set("align", t.align);
    o.Set("scaled", t.scaled);
    o.Set("rotated", t.rotated);
    kv.Set((uint32_t)i, o);
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("weights", weights);
  o.Set("kv", kv);
  return o;
}

// setSpinMicros(us): how long idle kernel threads spin for the next op before they sleep.
Napi::Value SetSpinMicros(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "setSpinMicros: expected a number of microseconds").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const double us = info[0].As<Napi::Number>().DoubleValue();
  if (!(us >= 0 && us <= 9.0e12)) {
    Napi::RangeError::New(env, "setSpinMicros: microseconds must be >= 0").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  ThreadPool::instance().set_spin_ns((int64_t)(us * 1000.0));
  return env.Undefined();
}

}  // namespace

void InitRuntime(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info));
  exports.Set("setCpuPath", Napi::Function::New(env, SetCpuPath));
  exports.Set("setNumThreads", Napi::Function::New(env, SetNumThreads));
  exports.Set("setSpinMicros", Napi::Function::New(env, SetSpinMicros));
  exports.Set("dtypeTraits", Napi::Function::New(env, DTypeTraitsInfo));
}

}  // namespace svc
