// Fork-join pool with a spin-then-sleep wait. A run bumps `generation_`; workers spinning on it pick
// the job up within a few hundred nanoseconds, sleeping ones are woken through the condition
// variable. The caller does its share and then spins until `pending_` reaches zero.
#include "threadpool.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <sched.h>

namespace svc {

static inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

static int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

static int default_threads() {
  const char* env = std::getenv("SVC_THREADS");
  if (env && *env) {
    const int n = std::atoi(env);
    if (n >= 1 && n <= 1024) return n;
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : (int)hc;
}

ThreadPool& ThreadPool::instance() {
  // Never destroyed: workers must not be joined from static destructors while Node tears down.
  static ThreadPool* pool = new ThreadPool();
  return *pool;
}

std::mutex& op_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

ThreadPool::ThreadPool() {
  const char* spin = std::getenv("SVC_SPIN_US");
  if (spin && *spin) spin_ns_ = (int64_t)std::atoll(spin) * 1000;
  start(default_threads());
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::start(int nth) {
  nth_ = nth < 1 ? 1 : nth;
  scratch_.resize((size_t)nth_);
  stopping_.store(false);
  // Workers start from the current generation, so a run issued before they are scheduled is not missed.
  const uint64_t g0 = generation_.load();
  for (int i = 1; i < nth_; i++) threads_.emplace_back([this, i, g0] { worker(i, g0); });
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_.store(true);
    generation_.fetch_add(1);
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

void ThreadPool::run_raw(void (*call)(void*, int, int), void* ctx) {
  call_ = call;
  ctx_ = ctx;
  pending_.store(nth_ - 1, std::memory_order_relaxed);
  // seq_cst pairs with the worker's sleepers_ increment: either it sees the new generation before
  // sleeping, or we see it asleep and notify under the lock.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lk(mu_);
    cv_.notify_all();
  }
  call(ctx, 0, nth_);
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; spins++) {
    if (spins < 1 << 14) cpu_relax();
    else sched_yield();  // a worker was descheduled (oversubscribed machine): give it the core
  }
}

void ThreadPool::worker(int ith, uint64_t seen) {
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    if (g == seen) {
      const int64_t deadline = now_ns() + spin_ns_;
      for (int i = 1; (g = generation_.load(std::memory_order_acquire)) == seen; i++) {
        cpu_relax();
        if ((i & 255) == 0 && now_ns() > deadline) {
          std::unique_lock<std::mutex> lk(mu_);
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          cv_.wait(lk, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
          sleepers_.fetch_sub(1);
        }
      }
    }
    seen = g;
    if (stopping_.load()) return;
    call_(ctx_, ith, nth_);
    pending_.fetch_sub(1, std::memory_order_release);
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
