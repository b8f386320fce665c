// Per-ISA inner loops. The scalar, AVX2 and AVX-512 files each fill one `Kernels` table, slot by
// name; cpu_features.cc picks a table once at start-up (or when a test forces a path), and the op
// drivers (matmul.cc, norm_rope_act.cc, attention.cc) only ever call through it. A dtype's slots are
// named in its row of the traits tables (dtypes.h), so a driver finds a dtype's kernel once per op
// through that row and never by position. Drivers own threading and scratch memory; kernels never
// allocate.
#pragma once
#include <cstddef>
#include <cstdint>

namespace svc {

// Activation rows quantized for the int8 dot products: per row, `k` int8 quants in blocks of 32,
// one float scale per block (x ~= d * q). Row i starts at qs + i * k and d + i * (k / 32).
// s16 (dtypes whose traits ask for act_sums, else null): per 16 elements, the block scale times the
// sum of their quants; row i starts at s16 + i * (k / 16).
// corr (packed weights only, else null): per block, -z * the sum of its quants, where z is the packed
// weights' zero point (packed.h); row i starts at corr + i * (k / 32).
struct QuantActs {
  const int8_t* qs;
  const float* d;
  const float* s16;
  const int32_t* corr;
  int k;
};

// y[i * ldy + r] = dot(x row i, weight row r) for i in [0, n), r in [r0, r1).
// x rows are `ldx` floats apart; weight row r starts at w + r * wstride bytes.
using GemmFloatFn = void (*)(int n, int k, const float* x, size_t ldx, const uint8_t* w, size_t wstride,
                             int r0, int r1, float* y, size_t ldy);
// Same contract with int8-quantized activations (Q8_0 / Q4_0 weights).
using GemmQuantFn = void (*)(int n, const QuantActs& x, const uint8_t* w, size_t wstride,
                             int r0, int r1, float* y, size_t ldy);
// Packed weights (packed.h): y[i * ldy + r] for i in [0, n) and the rows r < `rows` of row groups
// [g0, g1); w is the packed matrix (group 0). x.corr is set for Q8_0x16 / Q4_0x16, x.s16 for the
// K-quants. scratch: this thread's
// packed_scratch_bytes(x.k) bytes, 64-byte aligned.
using GemmPackedFn = void (*)(int n, const QuantActs& x, const uint8_t* w, int g0, int g1, int rows,
                              float* y, size_t ldy, uint8_t* scratch);

// KV cache rows (attention.cc): encode one head vector of n = headDim f32 values into a dtype's row
// (row_bytes(n) bytes, dtypes.h), or decode a row back. `scale` is the layer's kScale / vScale;
// dtypes whose traits are not `scaled` ignore it. fp8: stored = f32_to_fp8((float)((double)src[i] /
// scale)) and read back = e4m3(code) * scale (kv_codec.h), byte for byte like the reference codecs.
// A `rotated` dtype (turbo) decodes to R·x, not x (kv_turbo.h).
using KvEncodeFn = void (*)(const float* src, uint8_t* dst, int n, double scale);
using KvDecodeFn = void (*)(const uint8_t* src, float* dst, int n, double scale);

struct Kernels {
  const char* name;

  // ---- matmul, one slot per weight dtype (the traits row of each dtype names its slot) ----
  GemmFloatFn gemm_f32;
  GemmFloatFn gemm_f16;
  GemmFloatFn gemm_bf16;
  GemmQuantFn gemm_q8_0;
  GemmQuantFn gemm_q4_0;
  // The other 32-element block types (llama.cpp's fallbacks for rows that are not a multiple of 256).
  // Q4_1 / Q5_1 use QuantActs::s16 for their min term.
  GemmQuantFn gemm_q4_1;
  GemmQuantFn gemm_q5_0;
  GemmQuantFn gemm_q5_1;
  GemmQuantFn gemm_iq4_nl;
  // K-quants. Null: the driver decodes weight rows to f32 and uses gemm_f32 instead (the scalar
  // path, which keeps activations exact). Any int8 slot may be left null the same way.
  GemmQuantFn gemm_q2_k;
  GemmQuantFn gemm_q4_k;
  GemmQuantFn gemm_q5_k;
  GemmQuantFn gemm_q6_k;
  // The other 256-element super-blocks (kquant_unpack_iq.h), same contract.
  GemmQuantFn gemm_q3_k;
  GemmQuantFn gemm_iq4_xs;
  GemmQuantFn gemm_iq3_xxs;
  GemmQuantFn gemm_iq3_s;
  GemmQuantFn gemm_tq2_0;
  // Packed layouts (packed.h).
  GemmPackedFn gemm_q8_0x16;
  GemmPackedFn gemm_q4_0x16;
  // Packed K-quants (x.s16 is set, x.corr is not). Null: the driver decodes packed rows to f32.
  GemmPackedFn gemm_q4_kx16;
  GemmPackedFn gemm_q5_kx16;
  GemmPackedFn gemm_q6_kx16;
  // Packed Q5_0 / Q5_1 / Q4_1 / IQ4_NL (x.corr set for Q5_0 / IQ4_NL, x.s16 for Q5_1 / Q4_1). Null:
  // the driver decodes packed rows to f32.
  GemmPackedFn gemm_q5_0x16;
  GemmPackedFn gemm_q5_1x16;
  GemmPackedFn gemm_q4_1x16;
  GemmPackedFn gemm_iq4_nlx16;
  // One activation row of k floats (k % 32 == 0) -> k int8 quants + k/32 scales (d = amax / 127),
  // the k/16 sums of QuantActs::s16 when s16 is not null, and the k/32 corrections of
  // QuantActs::corr (-zero * block sum) when corr is not null.
  void (*quantize_row_q8)(const float* x, int k, int8_t* qs, float* d, float* s16, int32_t* corr, int zero);

  // ---- element-wise ----
  double (*sum_squares)(const float* x, int n);
  // Index of the first largest of x[0, n) (greedy sampling); NaN never wins, and 0 when no value is
  // above -inf (the JS sampler's argmax, bit for bit).
  int64_t (*argmax)(const float* x, int64_t n);
  // out[i] = x[i] * s * w[i]
  void (*scale_mul)(const float* x, float s, const float* w, float* out, int n);
  // out[i] = silu(g[i]) * u[i]
  void (*silu_mul)(const float* g, const float* u, float* out, int64_t n);
  void (*add)(const float* a, const float* b, float* out, int64_t n);
  // out[i] = (x[i] - mean) / sqrt(var + eps) * w[i] + b[i] over one row of n (biased variance, as torch).
  void (*layer_norm)(const float* x, int n, double eps, const float* w, const float* b, float* out);
  // out[i] = gelu(x[i]): exact (erf), tanh approximation, quick (x * sigmoid(1.702 x)). out may alias x.
  void (*gelu_erf)(const float* x, float* out, int64_t n);
  void (*gelu_tanh)(const float* x, float* out, int64_t n);
  void (*gelu_quick)(const float* x, float* out, int64_t n);
  // out[i] = a[i] * b[i] (geluMul's product after the GELU). out may alias a or b.
  void (*mul)(const float* a, const float* b, float* out, int64_t n);
  // out[i] = cap * tanh(x[i] / cap), cap > 0 (Gemma 2's attention and final-logit soft-capping). out may alias x.
  void (*softcap)(const float* x, float* out, int64_t n, float cap);

  // ---- attention (all lengths in elements) ----
  // s[t] = dot(q, K row t) for t < nk; K rows are kstride floats apart.
  void (*qk)(const float* q, const float* K, size_t kstride, int nk, int hd, float* s);
  // o[d] += sum_t p[t] * V[t][d]; V rows are vstride floats apart.
  void (*pv)(const float* p, const float* V, size_t vstride, int nk, int hd, float* o);
  // Many queries at once (one KV head's queries against one block): S[i * sstride + t] = dot(Q row i,
  // K row t) for i < nq, t < nk; Q rows are hd floats apart.
  void (*qk_tile)(const float* Q, int nq, const float* K, size_t kstride, int nk, int hd, float* S, size_t sstride);
  // O row i += sum_t P[i * pstride + t] * V[t] for i < nq; O rows are hd floats apart.
  void (*pv_tile)(const float* P, int nq, size_t pstride, const float* V, size_t vstride, int nk, int hd, float* O);
  // bf16 dot products for attention over bf16 / fp8 KV (AVX512_BF16; null on the other paths, and
  // only called when cpu_features().avx512bf16). Q and K rows are bf16, hd % 32 == 0:
  // S[i * sstride + t] = dot(Q row i, K row t), Q rows hd apart, K rows kstride apart.
  void (*qk_tile_bf16)(const uint16_t* Q, int nq, const uint16_t* K, size_t kstride, int nk, int hd, float* S,
                       size_t sstride);
  // O row i += sum over key pairs p of P[i * pstride + p] . V[p * vpstride ..]: each P dword holds two
  // keys' bf16 weights (low half the even key), each V dword the two keys' bf16 values of one column
  // (bf16_pairs makes them). O rows are hd floats apart.
  void (*pv_tile_bf16)(const uint32_t* P, int nq, size_t pstride, const uint32_t* V, size_t vpstride, int npairs, int hd,
                       float* O);
  // dst[d] = r0[d] | r1[d] << 16 for d < n (r1 null: zeros).
  void (*bf16_pairs)(const uint16_t* r0, const uint16_t* r1, int n, uint32_t* dst);
  // fp8 codes to bf16 without the layer scale: exact (value = code's e4m3 value / 256).
  void (*fp8_to_bf16)(const uint8_t* src, uint16_t* dst, int64_t n);
  // bf16_pairs of two rows of fp8 codes, decoded as fp8_to_bf16 does (r1 null: zeros); n % 32 == 0.
  void (*fp8_pairs)(const uint8_t* r0, const uint8_t* r1, int n, uint32_t* dst);
  // Round to nearest even.
  void (*f32_to_bf16)(const float* src, uint16_t* dst, int64_t n);
  // s[t] = exp(s[t] - m); returns the sum.
  float (*exp_sum)(float* s, int n, float m);
  void (*scale)(float* x, int n, float a);

  // ---- KV cache codecs, one slot per KV dtype and direction (named by the KV traits rows) ----
  KvEncodeFn kv_encode_f32;
  KvEncodeFn kv_encode_bf16;
  KvEncodeFn kv_encode_fp8;
  KvEncodeFn kv_encode_nvfp4;
  KvEncodeFn kv_encode_turbo2;
  KvEncodeFn kv_encode_turbo3;
  KvEncodeFn kv_encode_turbo4;
  KvEncodeFn kv_encode_turbo8;
  // f32 needs no decoder: attention reads f32 rows in place. Turbo decoders give rotated values.
  KvDecodeFn kv_decode_bf16;
  KvDecodeFn kv_decode_fp8;
  KvDecodeFn kv_decode_nvfp4;
  KvDecodeFn kv_decode_turbo2;
  KvDecodeFn kv_decode_turbo3;
  KvDecodeFn kv_decode_turbo4;
  KvDecodeFn kv_decode_turbo8;

  // ---- machine probe ----
  // XOR of every 8-byte word of p[0, bytes) (bytes % 256 == 0, p 64-byte aligned): a pure streaming
  // read, the bench's memory-bandwidth roofline (native/bandwidth.cc). The result only keeps the
  // loads from being elided.
  uint64_t (*read_sum)(const uint8_t* p, size_t bytes);
};

extern const Kernels kScalarKernels;
#if defined(__x86_64__)
extern const Kernels kAvx2Kernels;
extern const Kernels kAvx512Kernels;
extern const Kernels kAmxKernels;  // kAvx512Kernels with AMX-INT8 packed matmuls
#endif

// The table chosen at start-up (cpu_features.cc).
const Kernels& kernels();

}  // namespace svc
