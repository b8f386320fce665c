// The kernels' own thread pool: one thread per core by default (SVC_THREADS overrides), the calling
// thread takes part as thread 0, workers spin briefly between ops (low latency inside a forward
// pass) and then sleep. Per-thread and shared scratch buffers grow rarely and are reused, so ops
// never allocate in their hot loops.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace svc {

class ThreadPool {
 public:
  static ThreadPool& instance();

  int size() const { return nth_; }
  // Restart with nth threads in all (>= 1). Not while an op runs.
  void resize(int nth);

  // Runs f(ith, nth) on every thread (the caller is ith 0) and returns when all are done.
  template <class F>
  void run(F& f) {
    if (nth_ == 1) { f(0, 1); return; }
    run_raw([](void* ctx, int ith, int nth) { (*static_cast<F*>(ctx))(ith, nth); }, &f);
  }

  // 64-byte aligned scratch for thread ith (valid until that thread asks again with more bytes).
  void* thread_scratch(int ith, size_t bytes);
  // Scratch shared by all threads of one op (the caller fills it before run()).
  void* shared_scratch(size_t bytes);

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

 private:
  ThreadPool();
  ~ThreadPool();
  void start(int nth);
  void stop();
  void run_raw(void (*call)(void*, int, int), void* ctx);
  void worker(int ith, uint64_t seen);

  struct Buffer { void* p = nullptr; size_t cap = 0; };
  static void* grow(Buffer& b, size_t bytes);

  int nth_ = 1;
  std::vector<std::thread> threads_;
  std::vector<Buffer> scratch_;
  Buffer shared_;

  void (*call_)(void*, int, int) = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t spin_ns_ = 100000;
};

// Ops hold this for their whole run: the pool, its scratch and the kernel caches serve one op at a time
// (several JS threads may load the addon).
std::mutex& op_mutex();

// Splits [0, n) into chunks of `chunk` handed out to threads as they come free: f(begin, end, ith).
template <class F>
void parallel_for(int64_t n, int64_t chunk, F&& f) {
  if (n <= 0) return;
  if (chunk < 1) chunk = 1;
  const int64_t nchunks = (n + chunk - 1) / chunk;
  ThreadPool& pool = ThreadPool::instance();
  if (nchunks == 1 || pool.size() == 1) {
    for (int64_t c = 0; c < nchunks; c++) f(c * chunk, c * chunk + chunk < n ? c * chunk + chunk : n, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  auto body = [&](int ith, int) {
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= nchunks) break;
      const int64_t b = c * chunk;
      f(b, b + chunk < n ? b + chunk : n, ith);
    }
  };
  pool.run(body);
}

}  // namespace svc
