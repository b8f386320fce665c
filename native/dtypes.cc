// The dtype traits tables (dtypes.h): one row per weight dtype and per KV-cache dtype, at its code.
#include "dtypes.h"

#include "dequant.h"
#include "packed.h"

namespace svc {

namespace {
// Codes 11..19 belong to dtypes other branches add; until they merge, rows that take no data
// (block_bytes 0: every row length is refused).
constexpr DTypeTraits reserved(int code) {
  return {.dtype = static_cast<DType>(code), .name = "reserved", .block_elements = 1, .block_bytes = 0, .to_float = nullptr,
          .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = nullptr, .act_sums = false, .packed = -1,
          .packed_from = -1, .pack_zero = 0};
}
}  // namespace

constexpr DTypeTraits kDTypeTraits[kDTypeCount] = {
    {.dtype = kF32, .name = "f32", .block_elements = 1, .block_bytes = 4, .to_float = dequantize_row_f32,
     .gemm_float = &Kernels::gemm_f32, .gemm_quant = nullptr, .gemm_packed = nullptr, .act_sums = false,
     .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kF16, .name = "f16", .block_elements = 1, .block_bytes = 2, .to_float = dequantize_row_f16,
     .gemm_float = &Kernels::gemm_f16, .gemm_quant = nullptr, .gemm_packed = nullptr, .act_sums = false,
     .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kBF16, .name = "bf16", .block_elements = 1, .block_bytes = 2, .to_float = dequantize_row_bf16,
     .gemm_float = &Kernels::gemm_bf16, .gemm_quant = nullptr, .gemm_packed = nullptr, .act_sums = false,
     .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kQ8_0, .name = "q8_0", .block_elements = QK8_0, .block_bytes = sizeof(block_q8_0),
     .to_float = dequantize_row_q8_0, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q8_0,
     .gemm_packed = nullptr, .act_sums = false, .packed = kQ8_0x16, .packed_from = -1, .pack_zero = 0},
    {.dtype = kQ4_0, .name = "q4_0", .block_elements = QK4_0, .block_bytes = sizeof(block_q4_0),
     .to_float = dequantize_row_q4_0, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q4_0,
     .gemm_packed = nullptr, .act_sums = false, .packed = kQ4_0x16, .packed_from = -1, .pack_zero = 0},
    {.dtype = kQ2_K, .name = "q2_k", .block_elements = QK_K, .block_bytes = sizeof(block_q2_K),
     .to_float = dequantize_row_q2_K, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q2_k,
     .gemm_packed = nullptr, .act_sums = true, .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kQ4_K, .name = "q4_k", .block_elements = QK_K, .block_bytes = sizeof(block_q4_K),
     .to_float = dequantize_row_q4_K, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q4_k,
     .gemm_packed = nullptr, .act_sums = true, .packed = kQ4_Kx16, .packed_from = -1, .pack_zero = 0},
    {.dtype = kQ5_K, .name = "q5_k", .block_elements = QK_K, .block_bytes = sizeof(block_q5_K),
     .to_float = dequantize_row_q5_K, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q5_k,
     .gemm_packed = nullptr, .act_sums = true, .packed = kQ5_Kx16, .packed_from = -1, .pack_zero = 0},
    {.dtype = kQ6_K, .name = "q6_k", .block_elements = QK_K, .block_bytes = sizeof(block_q6_K),
     .to_float = dequantize_row_q6_K, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q6_k,
     .gemm_packed = nullptr, .act_sums = true, .packed = kQ6_Kx16, .packed_from = -1, .pack_zero = 0},
    {.dtype = kQ8_0x16, .name = "q8_0x16", .block_elements = QK8_0, .block_bytes = sizeof(block_q8_0),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q8_0x16,
     .act_sums = false, .packed = -1, .packed_from = kQ8_0, .pack_zero = kQ8PackZero},
    {.dtype = kQ4_0x16, .name = "q4_0x16", .block_elements = QK4_0, .block_bytes = sizeof(block_q4_0),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q4_0x16,
     .act_sums = false, .packed = -1, .packed_from = kQ4_0, .pack_zero = kQ4PackZero},
    reserved(11), reserved(12), reserved(13), reserved(14), reserved(15), reserved(16), reserved(17), reserved(18),
    reserved(19),
    {.dtype = kQ4_Kx16, .name = "q4_kx16", .block_elements = QK_K, .block_bytes = sizeof(block_q4_K),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q4_kx16,
     .act_sums = true, .packed = -1, .packed_from = kQ4_K, .pack_zero = 0},
    {.dtype = kQ5_Kx16, .name = "q5_kx16", .block_elements = QK_K, .block_bytes = sizeof(block_q5_K),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q5_kx16,
     .act_sums = true, .packed = -1, .packed_from = kQ5_K, .pack_zero = 0},
    {.dtype = kQ6_Kx16, .name = "q6_kx16", .block_elements = QK_K, .block_bytes = sizeof(block_q6_K),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q6_kx16,
     .act_sums = true, .packed = -1, .packed_from = kQ6_K, .pack_zero = 0},
};

constexpr KvDTypeTraits kKvDTypeTraits[kKvDTypeCount] = {
    {.dtype = kKvF32, .name = "f32", .elem_bytes = 4, .scaled = false, .encode = &Kernels::kv_encode_f32,
     .decode = nullptr},
    {.dtype = kKvBF16, .name = "bf16", .elem_bytes = 2, .scaled = false, .encode = &Kernels::kv_encode_bf16,
     .decode = &Kernels::kv_decode_bf16},
    {.dtype = kKvFP8, .name = "fp8", .elem_bytes = 1, .scaled = true, .encode = &Kernels::kv_encode_fp8,
     .decode = &Kernels::kv_decode_fp8},
};

namespace {

constexpr bool rows_at_codes() {
  for (int i = 0; i < kDTypeCount; i++)
    if (kDTypeTraits[i].dtype != i) return false;
  for (int i = 0; i < kKvDTypeCount; i++)
    if (kKvDTypeTraits[i].dtype != i) return false;
  return true;
}
static_assert(rows_at_codes(), "every traits row must sit at its dtype's code");

}  // namespace

}  // namespace svc
