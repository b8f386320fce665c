// KV cache row codecs, the reference for native/kv_codec.h: f32 (stored as is), bf16 (rounded to
// nearest even), OCP FP8 E4M3 with a per-layer scale and NVFP4 (E2M1 values, an E4M3 scale per 16,
// the layer scale on top); the turbo dtypes are in kv-turbo.ts. Each dtype's pair is its row in
// KV_DTYPES (dtypes.ts). A codec works on one row: the headDim values of one head vector, stored in
// the dtype's rowBytes(headDim) bytes.
import { bf16ToF32, f32ToBf16 } from './dequant.js';

/** Encode the head vector src[srcOffset .. srcOffset+headDim) into the row at dst[dstByte ..]. */
export type KvEncoder = (scale: number, src: Float32Array, srcOffset: number, headDim: number, dst: Uint8Array, dstByte: number) => void;
/** Decode the row at src[srcByte ..] into out[outOffset .. outOffset+headDim). */
export type KvDecoder = (scale: number, src: Uint8Array, srcByte: number, headDim: number, out: Float32Array, outOffset: number) => void;

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
// Per-element rows. The scale applies to fp8 only: stored = fp8(f32(value / scale)), read back = f32(fp8 * scale).

export const encodeF32: KvEncoder = (_scale, src, srcOffset, headDim, dst, dstByte) => {
  new Float32Array(dst.buffer, dst.byteOffset + dstByte, headDim).set(src.subarray(srcOffset, srcOffset + headDim));
};

export const decodeF32: KvDecoder = (_scale, src, srcByte, headDim, out, outOffset) => {
  out.set(new Float32Array(src.buffer, src.byteOffset + srcByte, headDim), outOffset);
};

export const encodeBf16: KvEncoder = (_scale, src, srcOffset, headDim, dst, dstByte) => {
  const view = new Uint16Array(dst.buffer, dst.byteOffset + dstByte, headDim);
  for (let i = 0; i < headDim; i++) view[i] = f32ToBf16(src[srcOffset + i]);
};

export const decodeBf16: KvDecoder = (_scale, src, srcByte, headDim, out, outOffset) => {
  const view = new Uint16Array(src.buffer, src.byteOffset + srcByte, headDim);
  for (let i = 0; i < headDim; i++) out[outOffset + i] = bf16ToF32(view[i]);
};

export const encodeFp8Row: KvEncoder = (scale, src, srcOffset, headDim, dst, dstByte) => {
  for (let i = 0; i < headDim; i++) dst[dstByte + i] = encodeFp8(Math.fround(src[srcOffset + i] / scale));
};

export const decodeFp8Row: KvDecoder = (scale, src, srcByte, headDim, out, outOffset) => {
  for (let i = 0; i < headDim; i++) out[outOffset + i] = Math.fround(FP8_E4M3_TABLE[src[srcByte + i]] * scale);
};

// ---------------------------------------------------------------------------------------------
// nvfp4: per group of 16 consecutive values (the last one shorter when headDim % 16 != 0), one
// E4M3 block scale; each value an E2M1 nibble (bit 3 sign, bits 0-2 index into NVFP4_E2M1). Value
// = e2m1 × blockScale × layer scale. Row layout: ceil(headDim / 2) bytes of nibbles (value i in
// byte i >> 1, low nibble for even i), then ceil(headDim / 16) block-scale bytes.
//
// Encoding, all in f32 as native/kv_codec.cc does it: blockScale = fp8(amax / (6 · scale)) rounded
// to nearest, so the largest value of a group lands within one E4M3 half step (6.25%) of ±6 and is
// clamped there (a smaller error than the 4 → 6 step of E2M1 itself); q = x / (blockScale · scale),
// nibble = the nearest E2M1 value, ties to the even magnitude code. NaN encodes as 0 and is left out
// of amax; ±Inf saturates the group (blockScale 448, nibble ±6), so the cache never holds a NaN.

export const NVFP4_GROUP = 16;
/** E2M1 magnitudes of codes 0-7 (code | 8 is the negative). */
export const NVFP4_E2M1 = [0, 0.5, 1, 1.5, 2, 3, 4, 6] as const;

export function nvfp4RowBytes(headDim: number): number {
  return Math.ceil(headDim / 2) + Math.ceil(headDim / NVFP4_GROUP);
}

/** Nearest E2M1 code of q (f32, not NaN), ties to the even magnitude code, saturating at ±6. */
export function encodeE2m1(q: number): number {
  const a = Math.abs(q);
  let m = 0;
  for (let k = 0; k < 7; k++) {
    const mid = (NVFP4_E2M1[k] + NVFP4_E2M1[k + 1]) / 2;
    if (a > mid || (a === mid && (k & 1) === 1)) m = k + 1;
  }
  return (q < 0 ? 8 : 0) | m;
}

export function decodeE2m1(code: number): number {
  const v = NVFP4_E2M1[code & 7];
  return code & 8 ? -v : v;
}

export const encodeNvfp4: KvEncoder = (scale, src, srcOffset, headDim, dst, dstByte) => {
  const nibbleBytes = Math.ceil(headDim / 2);
  dst.fill(0, dstByte, dstByte + nibbleBytes);
  for (let g = 0, lo = 0; lo < headDim; g++, lo += NVFP4_GROUP) {
    const hi = Math.min(headDim, lo + NVFP4_GROUP);
    let amax = 0;
    for (let i = lo; i < hi; i++) {
      const a = Math.abs(src[srcOffset + i]);
      if (a > amax) amax = a; // NaN never compares greater
    }
    const code = encodeFp8(Math.fround(amax / (6 * scale)));
    dst[dstByte + nibbleBytes + g] = code;
    const d = Math.fround(FP8_E4M3_TABLE[code] * scale);
    if (!(d > 0)) continue; // an all-zero (or all-NaN) group: every nibble stays 0
    for (let i = lo; i < hi; i++) {
      const x = src[srcOffset + i];
      if (x !== x) continue;
      dst[dstByte + (i >> 1)] |= encodeE2m1(Math.fround(x / d)) << ((i & 1) * 4);
    }
  }
};

export const decodeNvfp4: KvDecoder = (scale, src, srcByte, headDim, out, outOffset) => {
  const nibbleBytes = Math.ceil(headDim / 2);
  for (let i = 0; i < headDim; i++) {
    const d = Math.fround(FP8_E4M3_TABLE[src[srcByte + nibbleBytes + Math.floor(i / NVFP4_GROUP)]] * scale);
    const code = (src[srcByte + (i >> 1)] >> ((i & 1) * 4)) & 0xf;
    out[outOffset + i] = Math.fround(decodeE2m1(code) * d);
  }
};
