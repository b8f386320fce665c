// Chunked fork-join pool; see threadpool.h for the protocol.
#include "threadpool.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <sched.h>

namespace svc {

namespace {

constexpr int kGenShift = 40, kCountShift = 20;
constexpr uint64_t kMask20 = (1u << 20) - 1;

inline uint32_t job_gen(uint64_t j) { return (uint32_t)(j >> kGenShift); }
inline uint64_t job_count(uint64_t j) { return (j >> kCountShift) & kMask20; }
inline uint64_t job_next(uint64_t j) { return j & kMask20; }

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One per core. SVC_THREADS is read in src/kernels/native.ts, which resizes the pool at load.
int default_threads() {
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : (int)hc;
}

}  // namespace

ThreadPool& ThreadPool::instance() {
  // Never destroyed: workers must not be joined from static destructors while Node tears down.
  static ThreadPool* pool = new ThreadPool();
  return *pool;
}

std::mutex& op_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

ThreadPool::ThreadPool() { start(default_threads()); }

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::start(int nth) {
  nth_ = nth < 1 ? 1 : nth;
  scratch_.resize((size_t)nth_);
  stopping_.store(false);
  // Workers start from the current generation: an op posted before a worker first runs is simply
  // done without it, and a stop() issued before then is still seen.
  const uint32_t g0 = job_gen(job_.load());
  for (int i = 1; i < nth_; i++) threads_.emplace_back([this, i, g0] { worker(i, g0); });
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_.store(true);
    // A new generation with no chunks wakes everyone without giving them work.
    gen_ = (gen_ + 1) & 0xffffff;
    job_.store((uint64_t)gen_ << kGenShift);
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void ThreadPool::resize(int nth) {
  if (nth == nth_) return;
  stop();
  start(nth);
}

// Takes chunks of op `gen` until none are left (or a newer op replaced it).
void ThreadPool::work(uint32_t gen, int ith) {
  const Fn fn = fn_.load(std::memory_order_relaxed);
  void* ctx = ctx_.load(std::memory_order_relaxed);
  uint64_t j = job_.load(std::memory_order_acquire);
  for (;;) {
    if (job_gen(j) != gen || job_next(j) >= job_count(j)) return;
    if (!job_.compare_exchange_weak(j, j + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    fn(ctx, (int64_t)job_next(j), ith);
    done_.fetch_add(1, std::memory_order_release);
    j = job_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run_raw(int64_t nchunks, Fn fn, void* ctx) {
  fn_.store(fn, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  gen_ = (gen_ + 1) & 0xffffff;
  // seq_cst pairs with the worker's sleepers_ increment: either it sees the new job before sleeping,
  // or we see it asleep and notify under the lock.
  job_.store(((uint64_t)gen_ << kGenShift) | ((uint64_t)nchunks << kCountShift), std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
  }
  work(gen_, 0);
  // Only chunks some worker actually took can still be running.
  for (int spins = 0; done_.load(std::memory_order_acquire) < nchunks; spins++) {
    if (spins < 1 << 12) cpu_relax();
    else sched_yield();  // that worker was preempted mid-chunk: give it the core
  }
}

void ThreadPool::worker(int ith, uint32_t seen) {
  for (;;) {
    uint64_t j = job_.load(std::memory_order_acquire);
    if (job_gen(j) == seen) {
      const int64_t deadline = now_ns() + spin_ns_.load(std::memory_order_relaxed);
      for (int i = 1; job_gen(j = job_.load(std::memory_order_acquire)) == seen; i++) {
        cpu_relax();
        if ((i & 255) == 0 && now_ns() > deadline) {
          std::unique_lock<std::mutex> lk(mu_);
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          cv_.wait(lk, [&] { return job_gen(job_.load(std::memory_order_seq_cst)) != seen; });
          sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
      }
    }
    if (stopping_.load()) return;
    seen = job_gen(j);
    work(seen, ith);
  }
}

void* ThreadPool::grow(Buffer& b, size_t bytes) {
  if (bytes <= b.cap) return b.p;
  std::free(b.p);
  // Round up generously so a slowly growing demand does not reallocate every op.
  size_t cap = 64 * 1024;
  while (cap < bytes) cap *= 2;
  b.p = std::aligned_alloc(64, cap);
  if (!b.p) {
    std::fprintf(stderr, "svc: out of memory allocating %zu bytes of kernel scratch\n", cap);
    std::abort();
  }
  b.cap = cap;
  return b.p;
}

void* ThreadPool::thread_scratch(int ith, size_t bytes) { return grow(scratch_[(size_t)ith], bytes); }

void* ThreadPool::shared_scratch(size_t bytes) { return grow(shared_, bytes); }

}  // namespace svc
