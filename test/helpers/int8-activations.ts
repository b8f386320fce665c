// Activations rounded the way the native int8 matmul paths round them (native/kernels_*.cc
// quantize_row_q8, native/matmul.cc quantize_acts), so tests can hold the kernels to the exact product.
import { f16ToF32, f32ToF16 } from '../../src/kernels/dequant.js';
import { WEIGHT_DTYPES, type DType } from '../../src/kernels/dtypes.js';

const roundHalfEven = (v: number): number => {
  const f = Math.floor(v);
  return v - f > 0.5 || (v - f === 0.5 && f % 2 !== 0) ? f + 1 : f;
};

/**
 * x rounded as the int8 paths round activations for weights of `dtype`, as llama.cpp's vec_dot_type:
 * 32-element types as Q8_0 / Q8_1 blocks (d = amax/127 rounded to f16, q = round-half-even(x · 127/amax));
 * 256-element types as Q8_K blocks (iscale = -127/max with max the signed element of largest |x|,
 * q = min(127, round-half-even(x · iscale)), d = 1/iscale in f32).
 */
export function roundActivations(x: Float32Array, dtype: DType): Float32Array {
  const out = new Float32Array(x.length);
  if (WEIGHT_DTYPES[dtype].blockElements === 256) {
    for (let b = 0; b < x.length; b += 256) {
      let amax = 0,
        max = 0;
      for (let j = 0; j < 256; j++)
        if (Math.abs(x[b + j]) > amax) {
          amax = Math.abs(x[b + j]);
          max = x[b + j];
        }
      const iscale = amax ? Math.fround(-127 / max) : 0;
      const d = amax ? Math.fround(1 / iscale) : 0;
      for (let j = 0; j < 256; j++) out[b + j] = Math.min(127, roundHalfEven(Math.fround(x[b + j] * iscale))) * d;
    }
    return out;
  }
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b + j]));
    const d = f16ToF32(f32ToF16(Math.fround(amax / 127)));
    const id = amax ? Math.fround(127 / amax) : 0;
    for (let j = 0; j < 32; j++) out[b + j] = roundHalfEven(Math.fround(x[b + j] * id)) * d;
  }
  return out;
}
