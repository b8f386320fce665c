// Runtime CPU feature detection and the choice of kernel path (scalar, AVX2, AVX-512, AMX).
#pragma once

namespace svc {

// Amx: the AVX-512 kernels, with AMX-INT8 tiles for packed Q8_0 / Q4_0 matmuls of 16+ rows.
enum class CpuPath : int { Scalar = 0, Avx2 = 1, Avx512 = 2, Amx = 3 };

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false, avx512bf16 = false;
  bool avx512vbmi = false;  // byte permutes (vpermb, vpermi2b): the table-lookup fp8 decode
  // AMX-TILE + AMX-INT8 on the CPU, and the kernel granted this process the tile data state.
  bool amx_int8 = false;
};

// What this CPU (and OS) supports; detected once.
const CpuFeatures& cpu_features();
// Fastest path this CPU supports.
CpuPath best_cpu_path();
// Path in use: best_cpu_path() until set_cpu_path() (src/kernels/native.ts calls it at load for
// SVC_CPU_FEATURES, and tests of the fallbacks call it).
CpuPath current_cpu_path();
// Switch paths (tests of the fallbacks); false when the CPU lacks the features.
bool set_cpu_path(CpuPath p);
const char* cpu_path_name(CpuPath p);
bool parse_cpu_path(const char* s, CpuPath* out);

}  // namespace svc
