// Scalar conversions between weight storage dtypes and f32: IEEE half, bfloat16, and the ggml
// block-quantized formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q4_K, Q5_K, Q6_K) laid out exactly as llama.cpp's
// ggml-quants.c defines them. This is the numerical ground truth the native kernels are checked against.
// Each row decoder is the `decodeRow` of its dtype's row in WEIGHT_DTYPES (dtypes.ts), which also
// holds the block sizes; dequantizeRow / dequantize / bytesPerRow live there.

import { KVALUES_IQ4NL } from './iq-tables.js';

/** Elements per block of the K-quants (QK_K in ggml). */
export const QK_K = 256;
/** Elements per block of Q8_0 and Q4_0 (and of every other 32-element block type). */
export const QK8_0 = 32;
export const QK4_0 = 32;

/** Bytes per block of each ggml block layout (ggml-common.h). */
export const BLOCK_Q8_0_BYTES = 2 + 32;
export const BLOCK_Q4_0_BYTES = 2 + 16;
export const BLOCK_Q4_1_BYTES = 2 + 2 + 16;
export const BLOCK_Q5_0_BYTES = 2 + 4 + 16;
export const BLOCK_Q5_1_BYTES = 2 + 2 + 4 + 16;
export const BLOCK_IQ4_NL_BYTES = 2 + 16;
export const BLOCK_Q2_K_BYTES = 16 + 64 + 2 + 2;
export const BLOCK_Q4_K_BYTES = 2 + 2 + 12 + 128;
export const BLOCK_Q5_K_BYTES = 2 + 2 + 12 + 32 + 128;
export const BLOCK_Q6_K_BYTES = 128 + 64 + 16 + 2;

/** Decodes `cols` elements of one row from data[start…] into out[outOffset…]. */
export type RowDecoder = (data: Uint8Array, start: number, cols: number, out: Float32Array, outOffset: number) => void;

// ---- half precision ----

// All 65536 halves decoded once: a table lookup is far faster than bit twiddling per element.
const F16_TABLE = buildF16Table();

function buildF16Table(): Float32Array {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const mant = h & 0x3ff;
    if (exp === 0) t[h] = sign * mant * 2 ** -24;
    else if (exp === 0x1f) t[h] = mant ? NaN : sign * Infinity;
    else t[h] = sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  return t;
}

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** IEEE half bits → f32 value. */
export function f16ToF32(bits: number): number {
  return F16_TABLE[bits & 0xffff];
}

/** f32 value → IEEE half bits, round to nearest even; overflow → ±inf, NaN stays NaN. */
export function f32ToF16(value: number): number {
  scratchF32[0] = value;
  const x = scratchU32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half: value = m · 2^-24.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let r = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    if (rem > half || (rem === half && r & 1)) r++;
    return sign | r;
  }
  // A carry out of the mantissa correctly bumps the exponent (up to inf).
  let r = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && r & 1)) r++;
  return sign | r;
}

/** bfloat16 bits → f32 value (bf16 is the top half of an f32). */
export function bf16ToF32(bits: number): number {
  scratchU32[0] = (bits & 0xffff) << 16;
  return scratchF32[0];
}

/** f32 value → bfloat16 bits, round to nearest even; NaN stays a quiet NaN. */
export function f32ToBf16(value: number): number {
  scratchF32[0] = value;
  const x = scratchU32[0];
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) & 0x8000) | 0x7fc0;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

// ---- row decoders ----

function half(data: Uint8Array, p: number): number {
  return F16_TABLE[data[p] | (data[p + 1] << 8)];
}

export function decodeF32Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  const byteOffset = data.byteOffset + start;
  if (byteOffset % 4 === 0) {
    out.set(new Float32Array(data.buffer, byteOffset, cols), o);
    return;
  }
  // Unaligned (e.g. inside a safetensors file whose header length is not a multiple of 4).
  const view = new DataView(data.buffer, byteOffset, cols * 4);
  for (let i = 0; i < cols; i++) out[o + i] = view.getFloat32(i * 4, true);
}

export function decodeF16Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let i = 0, p = start; i < cols; i++, p += 2) out[o + i] = F16_TABLE[data[p] | (data[p + 1] << 8)];
}

export function decodeBf16Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  const u32 = new Uint32Array(out.buffer, out.byteOffset + o * 4, cols);
  for (let i = 0, p = start; i < cols; i++, p += 2) u32[i] = (data[p] | (data[p + 1] << 8)) << 16;
}

// block_q8_0 { half d; int8 qs[32]; }  y = d · q
export function decodeQ8_0Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / 32; b++, p += 34) {
    const d = half(data, p);
    for (let j = 0; j < 32; j++) out[o++] = d * ((data[p + 2 + j] << 24) >> 24);
  }
}

// block_q4_0 { half d; uint8 qs[16]; }  low nibbles are elements 0..15, high nibbles 16..31; y = d · (q - 8)
export function decodeQ4_0Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / 32; b++, p += 18, o += 32) {
    const d = half(data, p);
    for (let j = 0; j < 16; j++) {
      const q = data[p + 2 + j];
      out[o + j] = d * ((q & 0xf) - 8);
      out[o + j + 16] = d * ((q >> 4) - 8);
    }
  }
}

// block_q4_1 { half d; half m; uint8 qs[16]; }  nibbles as Q4_0; y = d · q + m
export function decodeQ4_1Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / 32; b++, p += 20, o += 32) {
    const d = half(data, p);
    const m = half(data, p + 2);
    for (let j = 0; j < 16; j++) {
      const q = data[p + 4 + j];
      out[o + j] = Math.fround(d * (q & 0xf)) + m;
      out[o + j + 16] = Math.fround(d * (q >> 4)) + m;
    }
  }
}

/** Bit e of the little-endian u32 at p is element e's fifth bit (Q5_0 / Q5_1 qh). */
function u32At(data: Uint8Array, p: number): number {
  return (data[p] | (data[p + 1] << 8) | (data[p + 2] << 16) | (data[p + 3] << 24)) >>> 0;
}

// block_q5_0 { half d; uint32 qh; uint8 qs[16]; }  q = nibble | (bit e of qh) << 4; y = d · (q - 16)
export function decodeQ5_0Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / 32; b++, p += 22, o += 32) {
    const d = half(data, p);
    const qh = u32At(data, p + 2);
    for (let j = 0; j < 16; j++) {
      const q = data[p + 6 + j];
      out[o + j] = d * (((q & 0xf) | (((qh >>> j) & 1) << 4)) - 16);
      out[o + j + 16] = d * (((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - 16);
    }
  }
}

// block_q5_1 { half d; half m; uint32 qh; uint8 qs[16]; }  q as Q5_0 (unsigned); y = d · q + m
export function decodeQ5_1Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / 32; b++, p += 24, o += 32) {
    const d = half(data, p);
    const m = half(data, p + 2);
    const qh = u32At(data, p + 4);
    for (let j = 0; j < 16; j++) {
      const q = data[p + 8 + j];
      out[o + j] = Math.fround(d * ((q & 0xf) | (((qh >>> j) & 1) << 4))) + m;
      out[o + j + 16] = Math.fround(d * ((q >> 4) | (((qh >>> (j + 16)) & 1) << 4))) + m;
    }
  }
}

// block_iq4_nl { half d; uint8 qs[16]; }  nibbles as Q4_0, each an index into KVALUES_IQ4NL; y = d · value
export function decodeIq4NlRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / 32; b++, p += 18, o += 32) {
    const d = half(data, p);
    for (let j = 0; j < 16; j++) {
      const q = data[p + 2 + j];
      out[o + j] = d * KVALUES_IQ4NL[q & 0xf];
      out[o + j + 16] = d * KVALUES_IQ4NL[q >> 4];
    }
  }
}

// block_q2_K { uint8 scales[16]; uint8 qs[64]; half d; half dmin; }
// 16 sub-blocks of 16: y = d · (sc & 15) · q - dmin · (sc >> 4), q 2-bit, four planes per 32-byte group.
export function decodeQ2KRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += 84) {
    const scales = p;
    const d = half(data, p + 80);
    const dmin = half(data, p + 82);
    let is = 0;
    for (let n = 0; n < 2; n++) {
      const q = p + 16 + n * 32;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let h = 0; h < 2; h++) {
          const sc = data[scales + is++];
          const dl = d * (sc & 0xf);
          const ml = dmin * (sc >> 4);
          for (let l = 0; l < 16; l++) out[o++] = dl * ((data[q + h * 16 + l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

/** 6-bit scale and min of sub-block j from the 12 packed bytes at `s` (get_scale_min_k4). */
function scaleMinK4(data: Uint8Array, s: number, j: number, res: Int32Array): void {
  if (j < 4) {
    res[0] = data[s + j] & 63;
    res[1] = data[s + j + 4] & 63;
  } else {
    res[0] = (data[s + j + 4] & 0xf) | ((data[s + j - 4] >> 6) << 4);
    res[1] = (data[s + j + 4] >> 4) | ((data[s + j] >> 6) << 4);
  }
}

const scaleMin = new Int32Array(2);

// block_q4_K { half d; half dmin; uint8 scales[12]; uint8 qs[128]; }
// 8 sub-blocks of 32; each 32-byte group holds two sub-blocks (low nibbles, then high nibbles).
export function decodeQ4KRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += 144) {
    const d = half(data, p);
    const dmin = half(data, p + 2);
    const scales = p + 4;
    let q = p + 16;
    for (let is = 0; is < 8; is += 2, q += 32) {
      scaleMinK4(data, scales, is, scaleMin);
      const d1 = d * scaleMin[0],
        m1 = dmin * scaleMin[1];
      scaleMinK4(data, scales, is + 1, scaleMin);
      const d2 = d * scaleMin[0],
        m2 = dmin * scaleMin[1];
      for (let l = 0; l < 32; l++) out[o++] = d1 * (data[q + l] & 0xf) - m1;
      for (let l = 0; l < 32; l++) out[o++] = d2 * (data[q + l] >> 4) - m2;
    }
  }
}

// block_q5_K { half d; half dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; }
// Q4_K plus a fifth bit per element from qh (bit 2k for the low-nibble sub-block, 2k+1 for the high).
export function decodeQ5KRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += 176) {
    const d = half(data, p);
    const dmin = half(data, p + 2);
    const scales = p + 4;
    const qh = p + 16;
    let ql = p + 48;
    let u1 = 1,
      u2 = 2;
    for (let is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
      scaleMinK4(data, scales, is, scaleMin);
      const d1 = d * scaleMin[0],
        m1 = dmin * scaleMin[1];
      scaleMinK4(data, scales, is + 1, scaleMin);
      const d2 = d * scaleMin[0],
        m2 = dmin * scaleMin[1];
      for (let l = 0; l < 32; l++) out[o++] = d1 * ((data[ql + l] & 0xf) + (data[qh + l] & u1 ? 16 : 0)) - m1;
      for (let l = 0; l < 32; l++) out[o++] = d2 * ((data[ql + l] >> 4) + (data[qh + l] & u2 ? 16 : 0)) - m2;
    }
  }
}

// block_q6_K { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d; }
// 6-bit q = 4 low bits from ql + 2 high bits from qh, minus 32; y = d · scale[sub-block of 16] · q.
export function decodeQ6KRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += 210) {
    const d = half(data, p + 208);
    for (let n = 0; n < 2; n++, o += 128) {
      const ql = p + n * 64;
      const qh = p + 128 + n * 32;
      const sc = p + 192 + n * 8;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = data[qh + l];
        const q1 = ((data[ql + l] & 0xf) | ((h & 3) << 4)) - 32;
        const q2 = ((data[ql + l + 32] & 0xf) | (((h >> 2) & 3) << 4)) - 32;
        const q3 = ((data[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
        const q4 = ((data[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
        out[o + l] = d * ((data[sc + is] << 24) >> 24) * q1;
        out[o + l + 32] = d * ((data[sc + is + 2] << 24) >> 24) * q2;
        out[o + l + 64] = d * ((data[sc + is + 4] << 24) >> 24) * q3;
        out[o + l + 96] = d * ((data[sc + is + 6] << 24) >> 24) * q4;
      }
    }
  }
}

// ---- reference quantizers (quantize_row_*_ref in ggml) ----

/** Quantize `cols` values of x (from xOffset) to Q8_0 blocks: d = amax/127, q = round(x/d). */
export function quantizeRowQ8_0(x: Float32Array, cols: number, xOffset = 0): Uint8Array {
  const out = new Uint8Array(quantizedRowBytes('q8_0', cols, QK8_0, BLOCK_Q8_0_BYTES));
  for (let b = 0; b < cols / 32; b++) {
    const base = xOffset + b * 32;
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[base + j]));
    const d = amax / 127;
    const id = d ? 1 / d : 0;
    const p = b * 34;
    const dh = f32ToF16(d);
    out[p] = dh & 0xff;
    out[p + 1] = dh >> 8;
    // Math.round rounds .5 toward +inf; C roundf rounds away from zero — match roundf.
    for (let j = 0; j < 32; j++) out[p + 2 + j] = roundAwayFromZero(Math.fround(x[base + j] * id)) & 0xff;
  }
  return out;
}

/** Quantize `cols` values to Q4_0 blocks: d = (signed max-magnitude value)/-8, q = min(15, trunc(x/d + 8.5)). */
export function quantizeRowQ4_0(x: Float32Array, cols: number, xOffset = 0): Uint8Array {
  const out = new Uint8Array(quantizedRowBytes('q4_0', cols, QK4_0, BLOCK_Q4_0_BYTES));
  for (let b = 0; b < cols / 32; b++) {
    const base = xOffset + b * 32;
    let amax = 0,
      max = 0;
    for (let j = 0; j < 32; j++) {
      const v = x[base + j];
      if (Math.abs(v) > amax) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = Math.fround(max / -8);
    const id = d ? Math.fround(1 / d) : 0;
    const p = b * 18;
    const dh = f32ToF16(d);
    out[p] = dh & 0xff;
    out[p + 1] = dh >> 8;
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(15, Math.trunc(Math.fround(Math.fround(x[base + j] * id) + 8.5)));
      const q1 = Math.min(15, Math.trunc(Math.fround(Math.fround(x[base + j + 16] * id) + 8.5)));
      out[p + 2 + j] = q0 | (q1 << 4);
    }
  }
  return out;
}

function quantizedRowBytes(name: string, cols: number, elements: number, bytes: number): number {
  if (cols % elements !== 0) throw new Error(`${name} rows must be a multiple of ${elements} elements, got ${cols}`);
  return (cols / elements) * bytes;
}

function roundAwayFromZero(v: number): number {
  return v < 0 ? -Math.round(-v) : Math.round(v);
}
