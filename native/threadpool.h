// The kernels' own thread pool: one thread per core by default (SVC_THREADS, read in
// src/kernels/native.ts, resizes it when the addon loads), the calling
// thread takes part as thread 0. An op is a set of chunks handed out through one atomic word, and the
// op is over when every chunk is done, not when every worker has checked in: a worker the OS has not
// scheduled yet simply finds nothing left, so an oversubscribed machine costs throughput, not a
// time-slice of latency per op. Workers spin briefly between ops (low latency inside a forward pass)
// and then sleep. Per-thread and shared scratch buffers grow rarely and are reused, so ops never
// allocate in their hot loops.
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
  // How long idle workers spin for the next op before they sleep (SVC_SPIN_US, handed over by
  // src/kernels/native.ts when the addon loads; default 100 us).
  void set_spin_ns(int64_t ns) { spin_ns_.store(ns < 0 ? 0 : ns, std::memory_order_relaxed); }
  int64_t spin_ns() const { return spin_ns_.load(std::memory_order_relaxed); }

  // Runs f(chunk, ith) for every chunk in [0, nchunks) across the pool (the caller is ith 0) and
  // returns when all chunks are done.
  template <class F>
  void run_chunks(int64_t nchunks, F& f) {
    if (nth_ == 1 || nchunks <= 1) {
      for (int64_t c = 0; c < nchunks; c++) f(c, 0);
      return;
    }
    run_raw(nchunks, [](void* ctx, int64_t c, int ith) { (*static_cast<F*>(ctx))(c, ith); }, &f);
  }

  // 64-byte aligned scratch for thread ith (valid until that thread asks again with more bytes).
  void* thread_scratch(int ith, size_t bytes);
  // Scratch shared by all threads of one op (the caller fills it before run_chunks()).
  void* shared_scratch(size_t bytes);

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

 private:
  using Fn = void (*)(void*, int64_t, int);
  ThreadPool();
  ~ThreadPool();
  void start(int nth);
  void stop();
  void run_raw(int64_t nchunks, Fn fn, void* ctx);
  void work(uint32_t gen, int ith);
  void worker(int ith, uint32_t seen);

  struct Buffer { void* p = nullptr; size_t cap = 0; };
  static void* grow(Buffer& b, size_t bytes);

  int nth_ = 1;
  std::vector<std::thread> threads_;
  std::vector<Buffer> scratch_;
  Buffer shared_;

  // The current op in one word: generation (24 bits) | chunk count (20 bits) | next chunk (20 bits).
  // A chunk runs only after a CAS on this word, so a late worker can never run a chunk of an op that
  // has finished or of a newer op it has not seen.
  alignas(64) std::atomic<uint64_t> job_{0};
  alignas(64) std::atomic<int64_t> done_{0};
  std::atomic<Fn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  uint32_t gen_ = 0;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int64_t> spin_ns_{100000};
};

// Ops hold this for their whole run: the pool, its scratch and the kernel caches serve one op at a
// time (several JS threads may load the addon).
std::mutex& op_mutex();

// Splits [0, n) into chunks of `chunk` items spread over the pool: f(begin, end, ith).
template <class F>
void parallel_for(int64_t n, int64_t chunk, F&& f) {
  if (n <= 0) return;
  if (chunk < 1) chunk = 1;
  int64_t nchunks = (n + chunk - 1) / chunk;
  // The job word holds at most 2^20 chunks; coarsen beyond that.
  while (nchunks >= (int64_t(1) << 20)) {
    chunk *= 2;
    nchunks = (n + chunk - 1) / chunk;
  }
  auto body = [&](int64_t c, int ith) {
    const int64_t b = c * chunk;
    f(b, b + chunk < n ? b + chunk : n, ith);
  };
  ThreadPool::instance().run_chunks(nchunks, body);
}

}  // namespace svc
