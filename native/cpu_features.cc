// Detects the CPU once and points kernels() at the matching table. SIMD tables are compiled with
// function-level target attributes, so this file (and the whole addon) stays plain x86-64 and loads
// on any CPU; only the table chosen here decides which instructions run.
#include "cpu_features.h"

#include <atomic>
#include <cstring>

#include "kernels.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace svc {

// AMX needs the CPU bits (CPUID.7.0:EDX[24] AMX-TILE, [25] AMX-INT8) and, on Linux, permission for
// the 8 KiB tile data state, requested once for the whole process (arch_prctl ARCH_REQ_XCOMP_PERM);
// the request fails where the OS does not enable it.
static bool detect_amx() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!((d >> 24) & 1) || !((d >> 25) & 1)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

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
  f.avx512vbmi = __builtin_cpu_supports("avx512vbmi");
#endif
  f.amx_int8 = f.avx512f && detect_amx();
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
    case CpuPath::Amx: return supported(CpuPath::Avx512) && f.amx_int8;
  }
  return false;
}

CpuPath best_cpu_path() {
  if (supported(CpuPath::Amx)) return CpuPath::Amx;
  if (supported(CpuPath::Avx512)) return CpuPath::Avx512;
  if (supported(CpuPath::Avx2)) return CpuPath::Avx2;
  return CpuPath::Scalar;
}

const char* cpu_path_name(CpuPath p) {
  switch (p) {
    case CpuPath::Scalar: return "scalar";
    case CpuPath::Avx2: return "avx2";
    case CpuPath::Avx512: return "avx512";
    case CpuPath::Amx: return "amx";
  }
  return "?";
}

bool parse_cpu_path(const char* s, CpuPath* out) {
  if (std::strcmp(s, "scalar") == 0) { *out = CpuPath::Scalar; return true; }
  if (std::strcmp(s, "avx2") == 0) { *out = CpuPath::Avx2; return true; }
  if (std::strcmp(s, "avx512") == 0) { *out = CpuPath::Avx512; return true; }
  if (std::strcmp(s, "amx") == 0) { *out = CpuPath::Amx; return true; }
  return false;
}

static const Kernels* table_for(CpuPath p) {
#if defined(__x86_64__)
  if (p == CpuPath::Amx) return &kAmxKernels;
  if (p == CpuPath::Avx512) return &kAvx512Kernels;
  if (p == CpuPath::Avx2) return &kAvx2Kernels;
#endif
  (void)p;
  return &kScalarKernels;
}

static std::atomic<int> g_path{-1};

CpuPath current_cpu_path() {
  int p = g_path.load(std::memory_order_acquire);
  if (p < 0) {
    int fresh = (int)best_cpu_path();
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
