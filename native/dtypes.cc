// The dtype traits tables (dtypes.h): one row per weight dtype and per KV-cache dtype, at its code.
#include "dtypes.h"

#include "dequant.h"
#include "kv_codec.h"
#include "kv_turbo.h"
#include "packed.h"

namespace svc {

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
     .gemm_packed = nullptr, .act_sums = false, .packed = kQ8_0x16, .packed_from = -1, .pack_zero = 0,
     .act_f16_scale = true},
    {.dtype = kQ4_0, .name = "q4_0", .block_elements = QK4_0, .block_bytes = sizeof(block_q4_0),
     .to_float = dequantize_row_q4_0, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q4_0,
     .gemm_packed = nullptr, .act_sums = false, .packed = kQ4_0x16, .packed_from = -1, .pack_zero = 0,
     .act_f16_scale = true},
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
     .act_sums = false, .packed = -1, .packed_from = kQ8_0, .pack_zero = kQ8PackZero,
     .act_f16_scale = true},
    {.dtype = kQ4_0x16, .name = "q4_0x16", .block_elements = QK4_0, .block_bytes = sizeof(block_q4_0),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q4_0x16,
     .act_sums = false, .packed = -1, .packed_from = kQ4_0, .pack_zero = kQ4PackZero,
     .act_f16_scale = true},
    // 32-element blocks with a min (Q4_1, Q5_1) take the activations' block sums (s16) for m * sum(x).
    {.dtype = kQ4_1, .name = "q4_1", .block_elements = 32, .block_bytes = sizeof(block_q4_1),
     .to_float = dequantize_row_q4_1, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q4_1,
     .gemm_packed = nullptr, .act_sums = true, .packed = kQ4_1x16, .packed_from = -1, .pack_zero = 0,
     .act_f16_scale = true},
    {.dtype = kQ5_0, .name = "q5_0", .block_elements = 32, .block_bytes = sizeof(block_q5_0),
     .to_float = dequantize_row_q5_0, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q5_0,
     .gemm_packed = nullptr, .act_sums = false, .packed = kQ5_0x16, .packed_from = -1, .pack_zero = 0,
     .act_f16_scale = true},
    {.dtype = kQ5_1, .name = "q5_1", .block_elements = 32, .block_bytes = sizeof(block_q5_1),
     .to_float = dequantize_row_q5_1, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q5_1,
     .gemm_packed = nullptr, .act_sums = true, .packed = kQ5_1x16, .packed_from = -1, .pack_zero = 0,
     .act_f16_scale = true},
    {.dtype = kIQ4_NL, .name = "iq4_nl", .block_elements = 32, .block_bytes = sizeof(block_iq4_nl),
     .to_float = dequantize_row_iq4_nl, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_iq4_nl,
     .gemm_packed = nullptr, .act_sums = false, .packed = kIQ4_NLx16, .packed_from = -1, .pack_zero = 0,
     .act_f16_scale = true},
    {.dtype = kQ3_K, .name = "q3_k", .block_elements = QK_K, .block_bytes = sizeof(block_q3_K),
     .to_float = dequantize_row_q3_K, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_q3_k,
     .gemm_packed = nullptr, .act_sums = true, .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kIQ4_XS, .name = "iq4_xs", .block_elements = QK_K, .block_bytes = sizeof(block_iq4_xs),
     .to_float = dequantize_row_iq4_xs, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_iq4_xs,
     .gemm_packed = nullptr, .act_sums = true, .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kIQ3_XXS, .name = "iq3_xxs", .block_elements = QK_K, .block_bytes = sizeof(block_iq3_xxs),
     .to_float = dequantize_row_iq3_xxs, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_iq3_xxs,
     .gemm_packed = nullptr, .act_sums = true, .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kIQ3_S, .name = "iq3_s", .block_elements = QK_K, .block_bytes = sizeof(block_iq3_s),
     .to_float = dequantize_row_iq3_s, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_iq3_s,
     .gemm_packed = nullptr, .act_sums = true, .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kTQ2_0, .name = "tq2_0", .block_elements = QK_K, .block_bytes = sizeof(block_tq2_0),
     .to_float = dequantize_row_tq2_0, .gemm_float = nullptr, .gemm_quant = &Kernels::gemm_tq2_0,
     .gemm_packed = nullptr, .act_sums = true, .packed = -1, .packed_from = -1, .pack_zero = 0},
    {.dtype = kQ4_Kx16, .name = "q4_kx16", .block_elements = QK_K, .block_bytes = sizeof(block_q4_K),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q4_kx16,
     .act_sums = true, .packed = -1, .packed_from = kQ4_K, .pack_zero = 0},
    {.dtype = kQ5_Kx16, .name = "q5_kx16", .block_elements = QK_K, .block_bytes = sizeof(block_q5_K),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q5_kx16,
     .act_sums = true, .packed = -1, .packed_from = kQ5_K, .pack_zero = 0},
    {.dtype = kQ6_Kx16, .name = "q6_kx16", .block_elements = QK_K, .block_bytes = sizeof(block_q6_K),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q6_kx16,
     .act_sums = true, .packed = -1, .packed_from = kQ6_K, .pack_zero = 0},
    // Q5_0 / Q5_1 / Q4_1 / IQ4_NL in 16-row groups (packed.h): Q5_0 and IQ4_NL take a zero-point
    // correction, the types with a min the activations' block sums.
    {.dtype = kQ5_0x16, .name = "q5_0x16", .block_elements = 32, .block_bytes = sizeof(block_q5_0),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q5_0x16,
     .act_sums = false, .packed = -1, .packed_from = kQ5_0, .pack_zero = kQ5PackZero, .act_f16_scale = true},
    {.dtype = kQ5_1x16, .name = "q5_1x16", .block_elements = 32, .block_bytes = sizeof(block_q5_1),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q5_1x16,
     .act_sums = true, .packed = -1, .packed_from = kQ5_1, .pack_zero = 0, .act_f16_scale = true},
    {.dtype = kQ4_1x16, .name = "q4_1x16", .block_elements = 32, .block_bytes = sizeof(block_q4_1),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_q4_1x16,
     .act_sums = true, .packed = -1, .packed_from = kQ4_1, .pack_zero = 0, .act_f16_scale = true},
    {.dtype = kIQ4_NLx16, .name = "iq4_nlx16", .block_elements = 32, .block_bytes = sizeof(block_iq4_nl),
     .to_float = nullptr, .gemm_float = nullptr, .gemm_quant = nullptr, .gemm_packed = &Kernels::gemm_iq4_nlx16,
     .act_sums = false, .packed = -1, .packed_from = kIQ4_NL, .pack_zero = kIq4nlPackZero, .act_f16_scale = true},
};

namespace {
template <int Bytes>
size_t elem_row_bytes(int hd) { return (size_t)hd * Bytes; }
template <int B>
size_t turbo_rows(int hd) { return turbo_row_bytes(B, hd); }
}  // namespace

constexpr KvDTypeTraits kKvDTypeTraits[kKvDTypeCount] = {
    {.dtype = kKvF32, .name = "f32", .row_bytes = elem_row_bytes<4>, .align = 4, .scaled = false, .rotated = false, .elementwise = true,
     .encode = &Kernels::kv_encode_f32, .decode = nullptr},
    {.dtype = kKvBF16, .name = "bf16", .row_bytes = elem_row_bytes<2>, .align = 2, .scaled = false, .rotated = false, .elementwise = true,
     .encode = &Kernels::kv_encode_bf16, .decode = &Kernels::kv_decode_bf16},
    {.dtype = kKvFP8, .name = "fp8", .row_bytes = elem_row_bytes<1>, .align = 1, .scaled = true, .rotated = false, .elementwise = true,
     .encode = &Kernels::kv_encode_fp8, .decode = &Kernels::kv_decode_fp8},
    {.dtype = kKvNVFP4, .name = "nvfp4", .row_bytes = nvfp4_row_bytes, .align = 1, .scaled = true, .rotated = false, .elementwise = false,
     .encode = &Kernels::kv_encode_nvfp4, .decode = &Kernels::kv_decode_nvfp4},
    {.dtype = kKvTurbo2, .name = "turbo2", .row_bytes = turbo_rows<2>, .align = 1, .scaled = false, .rotated = true, .elementwise = false,
     .encode = &Kernels::kv_encode_turbo2, .decode = &Kernels::kv_decode_turbo2},
    {.dtype = kKvTurbo3, .name = "turbo3", .row_bytes = turbo_rows<3>, .align = 1, .scaled = false, .rotated = true, .elementwise = false,
     .encode = &Kernels::kv_encode_turbo3, .decode = &Kernels::kv_decode_turbo3},
    {.dtype = kKvTurbo4, .name = "turbo4", .row_bytes = turbo_rows<4>, .align = 1, .scaled = false, .rotated = true, .elementwise = false,
     .encode = &Kernels::kv_encode_turbo4, .decode = &Kernels::kv_decode_turbo4},
    {.dtype = kKvTurbo8, .name = "turbo8", .row_bytes = turbo_rows<8>, .align = 1, .scaled = false, .rotated = true, .elementwise = false,
     .encode = &Kernels::kv_encode_turbo8, .decode = &Kernels::kv_decode_turbo8},
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
