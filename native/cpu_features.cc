// Detects the CPU once and points kernels() at the matching table. SIMD tables are compiled with
// function-level target attributes, so this file (and the whole addon) stays plain x86-64 and loads
// on any CPU; only the table chosen here decides which instructions run.
#include "cpu_features.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels.h"

namespace svc {

static CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = f.avx2;  // every AVX2 CPU has F16C; libgcc has no "f16c" key before GCC 13
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#endif
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

static bool supported(CpuPath p) {
  const CpuFeatures& f = cpu_features();
  switch (p) {
    case CpuPath::Scalar: return true;
    case CpuPath::Avx2: return f.avx2 && f.fma && f.f16c;
    case CpuPath::Avx512:
      return f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
  }
  return false;
}

CpuPath best_cpu_path() {
  if (supported(CpuPath::Avx512)) return CpuPath::Avx512;
  if (supported(CpuPath::Avx2)) return CpuPath::Avx2;
  return CpuPath::Scalar;
}

const char* cpu_path_name(CpuPath p) {
  switch (p) {
    case CpuPath::Scalar: return "scalar";
    case CpuPath::Avx2: return "avx2";
    case CpuPath::Avx512: return "avx512";
  }
  return "?";
}

bool parse_cpu_path(const char* s, CpuPath* out) {
  if (std::strcmp(s, "scalar") == 0) { *out = CpuPath::Scalar; return true; }
  if (std::strcmp(s, "avx2") == 0) { *out = CpuPath::Avx2; return true; }
  if (std::strcmp(s, "avx512") == 0) { *out = CpuPath::Avx512; return true; }
  return false;
}

static const Kernels* table_for(CpuPath p) {
#if defined(__x86_64__)
  if (p == CpuPath::Avx512) return &kAvx512Kernels;
  if (p == CpuPath::Avx2) return &kAvx2Kernels;
#endif
  (void)p;
  return &kScalarKernels;
}

static CpuPath initial_path() {
  CpuPath p = best_cpu_path();
  const char* env = std::getenv("SVC_CPU_FEATURES");
  if (env && *env) {
    CpuPath want;
    if (!parse_cpu_path(env, &want)) {
      std::fprintf(stderr, "svc: ignoring SVC_CPU_FEATURES=%s (expected scalar, avx2 or avx512)\n", env);
    } else if (!supported(want)) {
      std::fprintf(stderr, "svc: SVC_CPU_FEATURES=%s is not supported by this CPU; using %s\n", env,
                   cpu_path_name(p));
    } else {
      p = want;
    }
  }
  return p;
}

static std::atomic<int> g_path{-1};

CpuPath current_cpu_path() {
  int p = g_path.load(std::memory_order_acquire);
  if (p < 0) {
    int fresh = (int)initial_path();
    g_path.compare_exchange_strong(p, fresh);  // first caller wins; p holds the stored value on failure
    p = g_path.load(std::memory_order_acquire);
  }
  return (CpuPath)p;
}

bool set_cpu_path(CpuPath p) {
  if (!supported(p)) return false;
  g_path.store((int)p, std::memory_order_release);
  return true;
}

const Kernels& kernels() { return *table_for(current_cpu_path()); }

}  // namespace svc
