// The memory-read roofline the benches compare decode against: the kernel threads stream a buffer
// far larger than any cache through the `read_sum` kernel of the current path, in the chunks and
// with the pool a matmul uses, so the figure is what svc's own kernels could read at best. The
// buffer is 2 MiB aligned and asks for transparent huge pages, the best case for the TLB.
#include <napi.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "kernels.h"
#include "threadpool.h"

namespace svc {
namespace {

constexpr size_t kChunk = 1 << 20;  // bytes per pool chunk: balanced across threads, long enough to stream
constexpr size_t kHuge = 2 << 20;

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// measureReadBandwidth(bytes, passes) -> { gbPerS, bytes, passes, threads, path }: the best pass.
Napi::Value MeasureReadBandwidth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "measureReadBandwidth: expected (bytes, passes)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const double want = info[0].As<Napi::Number>().DoubleValue();
  const int passes = info[1].As<Napi::Number>().Int32Value();
  if (!(want >= (double)kChunk && want <= 64.0 * (1ull << 30)) || passes < 1 || passes > 1000) {
    Napi::RangeError::New(env, "measureReadBandwidth: bytes must be in [1 MiB, 64 GiB], passes in [1, 1000]")
        .ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const size_t bytes = (size_t)want / kChunk * kChunk;
  uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(kHuge, bytes));
  if (!buf) {
    Napi::Error::New(env, "measureReadBandwidth: out of memory").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  madvise(buf, bytes, MADV_HUGEPAGE);
  // Every page written: untouched pages all map the one zero page and would read from cache.
  std::memset(buf, 0x5a, bytes);

  std::lock_guard<std::mutex> lk(op_mutex());
  ThreadPool& pool = ThreadPool::instance();
  const Kernels& K = kernels();
  const int64_t nchunks = (int64_t)(bytes / kChunk);
  std::vector<uint64_t> sinks((size_t)nchunks);
  auto read_chunk = [&](int64_t c, int) { sinks[(size_t)c] = K.read_sum(buf + (size_t)c * kChunk, kChunk); };
  double best = 0;
  for (int p = 0; p < passes; p++) {
    const double t0 = seconds_now();
    pool.run_chunks(nchunks, read_chunk);
    const double s = seconds_now() - t0;
    if (s > 0 && bytes / s > best) best = bytes / s;
  }
  std::free(buf);
  uint64_t all = 0;
  for (uint64_t v : sinks) all ^= v;
  if (all != 0) {  // 0x5a5a... XORed an even number of times per lane: a wrong sum means a broken kernel
    Napi::Error::New(env, "measureReadBandwidth: read_sum returned a wrong checksum").ThrowAsJavaScriptException();
    return env.Undefined();
  }

  Napi::Object o = Napi::Object::New(env);
  o.Set("gbPerS", best / 1e9);
  o.Set("bytes", (double)bytes);
  o.Set("passes", passes);
  o.Set("threads", pool.size());
  o.Set("path", K.name);
  return o;
}

}  // namespace

void InitBandwidth(Napi::Env env, Napi::Object exports) {
  exports.Set("measureReadBandwidth", Napi::Function::New(env, MeasureReadBandwidth));
}

}  // namespace svc
