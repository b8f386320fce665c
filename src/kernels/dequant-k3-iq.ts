// Row decoders of the 256-element super-block types beyond Q2/Q4/Q5/Q6_K: Q3_K, IQ4_XS, IQ3_XXS,
// IQ3_S and TQ2_0, laid out exactly as llama.cpp's ggml-common.h / ggml-quants.c define them. Like
// dequant.ts, this is the ground truth the native kernels are checked against; each decoder is the
// `decodeRow` of its dtype's row in WEIGHT_DTYPES (dtypes.ts). Every product here is exact in f32
// (small integers times an f16 scale), so the order of the multiplications does not matter.
import { QK_K, f16ToF32 } from './dequant.js';
import { IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS, KVALUES_IQ4NL } from './iq-tables.js';

/** Bytes per block of each layout (ggml-common.h). */
export const BLOCK_Q3_K_BYTES = 32 + 64 + 12 + 2;
export const BLOCK_IQ4_XS_BYTES = 2 + 2 + 4 + 128;
export const BLOCK_IQ3_XXS_BYTES = 2 + 96;
export const BLOCK_IQ3_S_BYTES = 2 + 64 + 8 + 32 + 4;
export const BLOCK_TQ2_0_BYTES = 64 + 2;

function half(data: Uint8Array, p: number): number {
  return f16ToF32(data[p] | (data[p + 1] << 8));
}

function u32(data: Uint8Array, p: number): number {
  return (data[p] | (data[p + 1] << 8) | (data[p + 2] << 16) | (data[p + 3] << 24)) >>> 0;
}

const q3Scales = new Int32Array(16);

/** The 16 signed 6-bit scales of a Q3_K block (12 packed bytes at s): low 4 bits, then 2 high bits. */
function q3kScales(data: Uint8Array, s: number, out: Int32Array): void {
  for (let j = 0; j < 16; j++) {
    const lo = (data[s + (j & 7)] >> (4 * (j >> 3))) & 0xf;
    const hi = (data[s + 8 + (j & 3)] >> (2 * (j >> 2))) & 3;
    out[j] = (lo | (hi << 4)) - 32;
  }
}

// block_q3_K { uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; half d; }
// 16 sub-blocks of 16: y = d · scale · (q - 4·!hbit), q 2-bit in four planes per 32-byte group (as
// Q2_K), the high bit from hmask bit (4·half + plane) of byte l.
export function decodeQ3KRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += BLOCK_Q3_K_BYTES) {
    const d = half(data, p + 108);
    q3kScales(data, p + 96, q3Scales);
    let is = 0;
    for (let n = 0; n < 2; n++) {
      const q = p + 32 + n * 32;
      for (let plane = 0; plane < 4; plane++) {
        const shift = 2 * plane;
        const m = 1 << (4 * n + plane);
        for (let h = 0; h < 2; h++) {
          const dl = d * q3Scales[is++];
          for (let l = 16 * h; l < 16 * h + 16; l++) {
            out[o++] = dl * (((data[q + l] >> shift) & 3) - (data[p + l] & m ? 0 : 4));
          }
        }
      }
    }
  }
}

// block_iq4_xs { half d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]; }
// 8 sub-blocks of 32 with 6-bit scales (low 4 bits in scales_l, high 2 in scales_h) minus 32;
// y = d · scale · kvalues_iq4nl[nibble], low nibbles elements 0..15, high 16..31 (as Q4_0).
export function decodeIq4XsRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += BLOCK_IQ4_XS_BYTES) {
    const d = half(data, p);
    const scalesH = data[p + 2] | (data[p + 3] << 8);
    for (let ib = 0; ib < 8; ib++, o += 32) {
      const ls = ((data[p + 4 + (ib >> 1)] >> (4 * (ib & 1))) & 0xf) | (((scalesH >> (2 * ib)) & 3) << 4);
      const dl = d * (ls - 32);
      const qs = p + 8 + 16 * ib;
      for (let j = 0; j < 16; j++) {
        out[o + j] = dl * KVALUES_IQ4NL[data[qs + j] & 0xf];
        out[o + j + 16] = dl * KVALUES_IQ4NL[data[qs + j] >> 4];
      }
    }
  }
}

/** Writes db · grid magnitudes of `entry` with the signs of bits `bit0..bit0+3` of `signs`. */
function gridQuad(entry: number, signs: number, bit0: number, db: number, out: Float32Array, o: number): void {
  for (let j = 0; j < 4; j++) {
    const v = db * ((entry >>> (8 * j)) & 0xff);
    out[o + j] = signs & (1 << (bit0 + j)) ? -v : v;
  }
}

// block_iq3_xxs { half d; uint8 qs[64]; uint8 scales_and_signs[32]; }
// Per 32-element sub-block: 8 grid indices (4 magnitudes each) and a u32 whose top 4 bits are the
// scale (db = d · (0.5 + s) · 0.5) and whose four 7-bit fields pick sign patterns for groups of 8.
export function decodeIq3XxsRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += BLOCK_IQ3_XXS_BYTES) {
    const d = half(data, p);
    for (let ib = 0; ib < 8; ib++) {
      const aux = u32(data, p + 66 + 4 * ib);
      const db = d * (0.5 + (aux >>> 28)) * 0.5;
      const qs = p + 2 + 8 * ib;
      for (let l = 0; l < 4; l++, o += 8) {
        const signs = KSIGNS_IQ2XS[(aux >>> (7 * l)) & 127];
        gridQuad(IQ3XXS_GRID[data[qs + 2 * l]], signs, 0, db, out, o);
        gridQuad(IQ3XXS_GRID[data[qs + 2 * l + 1]], signs, 4, db, out, o + 4);
      }
    }
  }
}

// block_iq3_s { half d; uint8 qs[64]; uint8 qh[8]; uint8 signs[32]; uint8 scales[4]; }
// Per 32-element sub-block ib: 8 nine-bit grid indices (qs byte, high bit k of qh[ib]), one sign bit
// per element, db = d · (1 + 2 · 4-bit scale).
export function decodeIq3SRow(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += BLOCK_IQ3_S_BYTES) {
    const d = half(data, p);
    for (let ib = 0; ib < 8; ib++) {
      const db = d * (1 + 2 * ((data[p + 106 + (ib >> 1)] >> (4 * (ib & 1))) & 0xf));
      const qs = p + 2 + 8 * ib;
      const qh = data[p + 66 + ib];
      for (let l = 0; l < 4; l++, o += 8) {
        const signs = data[p + 74 + 4 * ib + l];
        const g1 = data[qs + 2 * l] | (((qh >> (2 * l)) & 1) << 8);
        const g2 = data[qs + 2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8);
        gridQuad(IQ3S_GRID[g1], signs, 0, db, out, o);
        gridQuad(IQ3S_GRID[g2], signs, 4, db, out, o + 4);
      }
    }
  }
}

// block_tq2_0 { uint8 qs[64]; half d; }  y = d · (q - 1), q 2-bit in four planes per 32-byte group.
export function decodeTq2_0Row(data: Uint8Array, start: number, cols: number, out: Float32Array, o: number): void {
  for (let b = 0, p = start; b < cols / QK_K; b++, p += BLOCK_TQ2_0_BYTES) {
    const d = half(data, p + 64);
    for (let n = 0; n < 2; n++) {
      for (let shift = 0; shift < 8; shift += 2) {
        for (let m = 0; m < 32; m++) out[o++] = (((data[p + 32 * n + m] >> shift) & 3) - 1) * d;
      }
    }
  }
}
