// Simple, correct quantizers for the K-quant block layouts (Q4_K, Q5_K, Q6_K) that
// src/kernels/dequant.ts decodes: each sub-block gets its own scale (and min) from its min/max,
// those are quantized to 6 bits (Q6_K: int8) against one f16 super-scale per 256 elements, and the
// values are rounded against the stored (already rounded) scales. They are not llama.cpp's
// error-minimizing searches (make_qkx2_quants): good enough for benchmark checkpoints and tests,
// and every byte is a valid ggml block. The Q8_0/Q4_0 reference quantizers live in dequant.ts.
import { BLOCK_Q4_K_BYTES, BLOCK_Q5_K_BYTES, BLOCK_Q6_K_BYTES, f16ToF32, f32ToF16, QK_K } from './dequant.js';

function blocksOf(name: string, cols: number): number {
  if (cols % QK_K !== 0) throw new Error(`${name} rows must be a multiple of ${QK_K} elements, got ${cols}`);
  return cols / QK_K;
}

/** Stores f16 bits little-endian at out[p]; returns the value the decoder will read back. */
function putHalf(out: Uint8Array, p: number, value: number): number {
  const h = f32ToF16(value);
  out[p] = h & 0xff;
  out[p + 1] = h >> 8;
  return f16ToF32(h);
}

const clamp = (v: number, lo: number, hi: number) => (v < lo ? lo : v > hi ? hi : v);

// Per-block scratch, reused across calls (the quantizers are synchronous).
const subScale = new Float32Array(16);
const subMin = new Float32Array(16);
const levels = new Uint8Array(QK_K);
const scaleQ = new Uint8Array(8);
const minQ = new Uint8Array(8);

/**
 * The asymmetric part shared by Q4_K and Q5_K: 8 sub-blocks of 32, y = d·sc·q − dmin·m with
 * q in [0, maxQ], sc and m 6-bit. Writes d, dmin and the 12 packed scale bytes at out[p…p+16)
 * and the levels into `levels`.
 */
function quantizeScaleMinBlock(x: Float32Array, base: number, maxQ: number, out: Uint8Array, p: number): void {
  let maxScale = 0,
    maxMin = 0;
  for (let j = 0; j < 8; j++) {
    let lo = x[base + 32 * j],
      hi = lo;
    for (let l = 1; l < 32; l++) {
      const v = x[base + 32 * j + l];
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    // The min is subtracted, so it is stored as a non-negative offset (ggml clamps min to ≤ 0).
    if (lo > 0) lo = 0;
    subScale[j] = (hi - lo) / maxQ;
    subMin[j] = -lo;
    if (subScale[j] > maxScale) maxScale = subScale[j];
    if (subMin[j] > maxMin) maxMin = subMin[j];
  }
  const d = putHalf(out, p, maxScale / 63);
  const dmin = putHalf(out, p + 2, maxMin / 63);
  for (let j = 0; j < 8; j++) {
    scaleQ[j] = d > 0 ? clamp(Math.round(subScale[j] / d), 0, 63) : 0;
    // Rounding the min up keeps x + m ≥ 0, so the lowest value never clips below level 0.
    minQ[j] = dmin > 0 ? clamp(Math.ceil(subMin[j] / dmin), 0, 63) : 0;
  }
  // Inverse of get_scale_min_k4: j < 4 in the low 6 bits of bytes j / j+4; j ≥ 4 split into
  // a nibble in byte j+4 and the top two bits of bytes j−4 / j.
  const s = p + 4;
  for (let j = 0; j < 12; j++) out[s + j] = 0;
  for (let j = 0; j < 8; j++) {
    if (j < 4) {
      out[s + j] |= scaleQ[j];
      out[s + j + 4] |= minQ[j];
    } else {
      out[s + j + 4] = (scaleQ[j] & 0xf) | ((minQ[j] & 0xf) << 4);
      out[s + j - 4] |= (scaleQ[j] >> 4) << 6;
      out[s + j] |= (minQ[j] >> 4) << 6;
    }
  }
  for (let j = 0; j < 8; j++) {
    const dl = d * scaleQ[j];
    const ml = dmin * minQ[j];
    for (let l = 0; l < 32; l++) {
      const v = x[base + 32 * j + l];
      levels[32 * j + l] = dl > 0 ? clamp(Math.round((v + ml) / dl), 0, maxQ) : 0;
    }
  }
}

/** block_q4_K { half d; half dmin; uint8 scales[12]; uint8 qs[128]; } per 256 values. */
export function quantizeRowQ4K(x: Float32Array, cols: number, xOffset = 0): Uint8Array {
  const nb = blocksOf('q4_k', cols);
  const out = new Uint8Array(nb * BLOCK_Q4_K_BYTES);
  for (let b = 0; b < nb; b++) {
    const p = b * BLOCK_Q4_K_BYTES;
    quantizeScaleMinBlock(x, xOffset + b * QK_K, 15, out, p);
    // Each 32-byte group holds sub-blocks 2i (low nibbles) and 2i+1 (high nibbles).
    for (let i = 0; i < 4; i++) for (let l = 0; l < 32; l++) out[p + 16 + 32 * i + l] = levels[64 * i + l] | (levels[64 * i + 32 + l] << 4);
  }
  return out;
}

/** block_q5_K { half d; half dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; } per 256 values. */
export function quantizeRowQ5K(x: Float32Array, cols: number, xOffset = 0): Uint8Array {
  const nb = blocksOf('q5_k', cols);
  const out = new Uint8Array(nb * BLOCK_Q5_K_BYTES);
  for (let b = 0; b < nb; b++) {
    const p = b * BLOCK_Q5_K_BYTES;
    quantizeScaleMinBlock(x, xOffset + b * QK_K, 31, out, p);
    const qh = p + 16;
    const ql = p + 48;
    // Low nibbles as Q4_K; the fifth bit of element l of sub-block 2i is bit 2i of qh[l], of 2i+1 bit 2i+1.
    for (let i = 0; i < 4; i++) {
      for (let l = 0; l < 32; l++) {
        const lo = levels[64 * i + l];
        const hi = levels[64 * i + 32 + l];
        out[ql + 32 * i + l] = (lo & 0xf) | ((hi & 0xf) << 4);
        out[qh + l] |= ((lo >> 4) << (2 * i)) | ((hi >> 4) << (2 * i + 1));
      }
    }
  }
  return out;
}

const q6Scale = new Int8Array(16);

/** block_q6_K { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d; } per 256 values: y = d·sc·(q − 32). */
export function quantizeRowQ6K(x: Float32Array, cols: number, xOffset = 0): Uint8Array {
  const nb = blocksOf('q6_k', cols);
  const out = new Uint8Array(nb * BLOCK_Q6_K_BYTES);
  for (let b = 0; b < nb; b++) {
    const base = xOffset + b * QK_K;
    const p = b * BLOCK_Q6_K_BYTES;
    // Symmetric per 16: the largest-magnitude value maps to −32 (as Q4_0 maps its to −8).
    let maxScale = 0;
    for (let j = 0; j < 16; j++) {
      let amax = 0,
        max = 0;
      for (let l = 0; l < 16; l++) {
        const v = x[base + 16 * j + l];
        if (Math.abs(v) > amax) {
          amax = Math.abs(v);
          max = v;
        }
      }
      subScale[j] = max / -32;
      if (Math.abs(subScale[j]) > Math.abs(maxScale)) maxScale = subScale[j];
    }
    // The sub-scales become int8 against d: the largest maps to −128.
    const iscale = maxScale !== 0 ? -128 / maxScale : 0;
    const d = putHalf(out, p + 208, iscale !== 0 ? 1 / iscale : 0);
    for (let j = 0; j < 16; j++) {
      q6Scale[j] = clamp(Math.round(iscale * subScale[j]), -128, 127);
      out[p + 192 + j] = q6Scale[j] & 0xff;
      const dl = d * q6Scale[j];
      for (let l = 0; l < 16; l++) {
        const q = dl !== 0 ? clamp(Math.round(x[base + 16 * j + l] / dl), -32, 31) : 0;
        levels[16 * j + l] = q + 32;
      }
    }
    // Per 128 values: ql holds low nibbles (elements l and l+64 in byte l, l+32 and l+96 in byte
    // l+32), qh the two high bits of elements l, l+32, l+64, l+96 in byte l.
    for (let n = 0; n < 2; n++) {
      const L = 128 * n;
      const ql = p + 64 * n;
      const qh = p + 128 + 32 * n;
      for (let l = 0; l < 32; l++) {
        const q1 = levels[L + l],
          q2 = levels[L + l + 32],
          q3 = levels[L + l + 64],
          q4 = levels[L + l + 96];
        out[ql + l] = (q1 & 0xf) | ((q3 & 0xf) << 4);
        out[ql + l + 32] = (q2 & 0xf) | ((q4 & 0xf) << 4);
        out[qh + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
      }
    }
  }
  return out;
}
