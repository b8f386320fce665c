// KV cache element codecs, the reference for native/kv_codec.h: f32 (stored as is), bf16 (rounded to
// nearest even) and OCP FP8 E4M3 with a per-layer scale. Each dtype's pair is its row in KV_DTYPES
// (dtypes.ts). Offsets and counts are in elements of the storage dtype.
import { bf16ToF32, f32ToBf16 } from './dequant.js';

/** Encode `count` values from src[srcOffset…] into storage elements [dstElem, dstElem+count) of dst. */
export type KvEncoder = (scale: number, src: Float32Array, srcOffset: number, dst: Uint8Array, dstElem: number, count: number) => void;
/** Decode storage elements [srcElem, srcElem+count) of src into out[outOffset…]. */
export type KvDecoder = (scale: number, src: Uint8Array, srcElem: number, count: number, out: Float32Array, outOffset: number) => void;

// ---------------------------------------------------------------------------------------------
// fp8: OCP FP8 E4M3 ("e4m3fn"): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits, no infinities,
// S.1111.111 is NaN. Largest finite 448, smallest subnormal 2^-9.

export const FP8_E4M3_MAX = 448;
const FP8_MAX_CODE = 0x7e;

/** Decode table for all 256 codes (0x7f/0xff decode to NaN; encode never produces them). */
export const FP8_E4M3_TABLE: Float32Array = (() => {
  const table = new Float32Array(256);
  for (let code = 0; code < 256; code++) {
    const sign = code & 0x80 ? -1 : 1;
    const exp = (code >> 3) & 0xf;
    const mant = code & 0x7;
    if (exp === 0xf && mant === 0x7) table[code] = NaN;
    else if (exp === 0) table[code] = sign * mant * 2 ** -9;
    else table[code] = sign * (1 + mant / 8) * 2 ** (exp - 7);
  }
  return table;
})();

export function decodeFp8(code: number): number {
  return FP8_E4M3_TABLE[code & 0xff];
}

/** Round to the nearest integer, ties to even. */
function roundHalfEven(q: number): number {
  const f = Math.floor(q);
  const d = q - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * Number → E4M3 code, round-to-nearest-even, saturating at ±448 (infinities included).
 * NaN encodes as +0 so the cache never holds a NaN.
 */
export function encodeFp8(x: number): number {
  if (Number.isNaN(x)) return 0;
  const sign = x < 0 || Object.is(x, -0) ? 0x80 : 0;
  const a = Math.abs(x);
  if (a >= FP8_E4M3_MAX) return sign | FP8_MAX_CODE;
  if (a < 2 ** -6) {
    // Subnormal range: the code is the mantissa count of 2^-9 steps; 8 rolls over into the smallest normal.
    return sign | roundHalfEven(a * 2 ** 9);
  }
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  let m = roundHalfEven(a * 2 ** (3 - e)); // in [8, 16]
  if (m === 16) {
    e++;
    m = 8;
  }
  const code = ((e + 7) << 3) | (m - 8);
  return sign | Math.min(code, FP8_MAX_CODE);
}

// ---------------------------------------------------------------------------------------------
// Row codecs. The scale applies to fp8 only: stored = fp8(f32(value / scale)), read back = f32(fp8 * scale).

export const encodeF32: KvEncoder = (_scale, src, srcOffset, dst, dstElem, count) => {
  const view = new Float32Array(dst.buffer, dst.byteOffset + dstElem * 4, count);
  view.set(src.subarray(srcOffset, srcOffset + count));
};

export const decodeF32: KvDecoder = (_scale, src, srcElem, count, out, outOffset) => {
  out.set(new Float32Array(src.buffer, src.byteOffset + srcElem * 4, count), outOffset);
};

export const encodeBf16: KvEncoder = (_scale, src, srcOffset, dst, dstElem, count) => {
  const view = new Uint16Array(dst.buffer, dst.byteOffset + dstElem * 2, count);
  for (let i = 0; i < count; i++) view[i] = f32ToBf16(src[srcOffset + i]);
};

export const decodeBf16: KvDecoder = (_scale, src, srcElem, count, out, outOffset) => {
  const view = new Uint16Array(src.buffer, src.byteOffset + srcElem * 2, count);
  for (let i = 0; i < count; i++) out[outOffset + i] = bf16ToF32(view[i]);
};

export const encodeFp8Elements: KvEncoder = (scale, src, srcOffset, dst, dstElem, count) => {
  for (let i = 0; i < count; i++) dst[dstElem + i] = encodeFp8(Math.fround(src[srcOffset + i] / scale));
};

export const decodeFp8Elements: KvDecoder = (scale, src, srcElem, count, out, outOffset) => {
  for (let i = 0; i < count; i++) out[outOffset + i] = Math.fround(FP8_E4M3_TABLE[src[srcElem + i]] * scale);
};
