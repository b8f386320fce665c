// Runtime controls exposed to JS: which kernel path and how many threads (for logs and for tests
// that exercise the fallbacks).
#include <napi.h>

#include <mutex>
#include <string>

#include "cpu_features.h"
#include "kernels.h"
#include "threadpool.h"

namespace svc {
namespace {

// info() -> { cpuPath, bestCpuPath, threads, features: { avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni, avx512bf16, amxInt8 } }
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
  feats.Set("amxInt8", f.amx_int8);
  Napi::Object o = Napi::Object::New(env);
  o.Set("cpuPath", cpu_path_name(current_cpu_path()));
  o.Set("bestCpuPath", cpu_path_name(best_cpu_path()));
  o.Set("threads", ThreadPool::instance().size());
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

}  // namespace

void InitRuntime(Napi::Env env, Napi::Object exports) {
  exports.Set("info", Napi::Function::New(env, Info));
  exports.Set("setCpuPath", Napi::Function::New(env, SetCpuPath));
  exports.Set("setNumThreads", Napi::Function::New(env, SetNumThreads));
}

}  // namespace svc
