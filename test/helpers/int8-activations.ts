// Activations rounded the way the native int8 matmul paths round them (native/kernels_*.cc
// quantize_row_q8, native/matmul.cc quantize_acts), so tests can hold the kernels to the exact product.
import { f16ToF32, f32ToF16 } from '../../src/kernels/dequant.js';
import { WEIGHT_DTYPES, type DType } from '../../src/kernels/dtypes.js';

const roundHalfEven = (v: number): number => {
  const f = Math.floor(v);
  return v - f > 0.5 || (v - f === 0.5 && f % 2 !== 0) ? f + 1 : f;
};

/**
 * x rounded as the int8 paths round activations for weights of `dtype`: per 32-element block,
 * d = amax/127 (rounded to f16 for the 32-element types, as llama.cpp's Q8_0 / Q8_1 blocks; f32 for the
 * 256-element ones) and q = round-half-even(x · 127/amax).
 */
export function roundActivations(x: Float32Array, dtype: DType): Float32Array {
  const f16Scale = WEIGHT_DTYPES[dtype].blockElements === 32;
  const out = new Float32Array(x.length);
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b + j]));
    const d32 = Math.fround(amax / 127);
    const d = f16Scale ? f16ToF32(f32ToF16(d32)) : d32;
    const id = amax ? Math.fround(127 / amax) : 0;
    for (let j = 0; j < 32; j++) out[b + j] = roundHalfEven(Math.fround(x[b + j] * id)) * d;
  }
  return out;
}

/** Relative L2 distance of `actual` from `expected` (how far int8 activations move a product). */
export function relL2(actual: Float32Array, expected: Float32Array): number {
  let num = 0,
    den = 0;
  for (let i = 0; i < actual.length; i++) {
    num += (actual[i] - expected[i]) ** 2;
    den += expected[i] ** 2;
  }
  return Math.sqrt(num / Math.max(den, 1e-30));
}
