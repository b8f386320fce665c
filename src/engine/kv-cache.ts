// Paged KV cache storage: allocation of one KvLayer per model layer, and the element codecs
// (f32, bf16 rounded to nearest even, OCP FP8 E4M3) that storeKv and attention use to write and read it.
import type { ModelConfig } from '../model/types.js';
import type { KvDType, KvLayer } from '../kernels/ops.js';
import { bf16ToF32, f32ToBf16 } from '../kernels/dequant.js';

/** Bytes one stored element takes in each KV dtype. */
export function kvElementBytes(dtype: KvDType): number {
  switch (dtype) {
    case 'f32':
      return 4;
    case 'bf16':
      return 2;
    case 'fp8':
      return 1;
  }
}

/** Bytes of KV cache one token occupies across all layers (k and v). */
export function kvBytesPerToken(config: ModelConfig, dtype: KvDType): number {
  return 2 * config.numLayers * config.numKvHeads * config.headDim * kvElementBytes(dtype);
}

/**
 * One zeroed KvLayer per model layer, laid out [numBlocks][blockSize][numKvHeads][headDim].
 * Each k/v gets its own ArrayBuffer so typed views over it (Float32Array, Uint16Array) are aligned.
 */
export function allocateKvCache(config: ModelConfig, numBlocks: number, blockSize: number, dtype: KvDType): KvLayer[] {
  if (!Number.isInteger(numBlocks) || numBlocks <= 0) throw new RangeError(`numBlocks must be a positive integer, got ${numBlocks}`);
  if (!Number.isInteger(blockSize) || blockSize <= 0) throw new RangeError(`blockSize must be a positive integer, got ${blockSize}`);
  const bytes = numBlocks * blockSize * config.numKvHeads * config.headDim * kvElementBytes(dtype);
  const layers: KvLayer[] = [];
  for (let i = 0; i < config.numLayers; i++) {
    layers.push({
      dtype,
      numBlocks,
      blockSize,
      numKvHeads: config.numKvHeads,
      headDim: config.headDim,
      k: new Uint8Array(bytes),
      v: new Uint8Array(bytes),
      kScale: 1,
      vScale: 1,
    });
  }
  return layers;
}

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
// Row codecs over a layer's k or v bytes, in elements. The scale applies to fp8 only:
// stored = fp8(f32(value / scale)), read back = f32(fp8 * scale).

/** Encode `count` values from src[srcOffset…] into storage elements [dstElem, dstElem+count). */
export function encodeKvElements(
  dtype: KvDType,
  scale: number,
  src: Float32Array,
  srcOffset: number,
  dst: Uint8Array,
  dstElem: number,
  count: number,
): void {
  switch (dtype) {
    case 'f32': {
      const view = new Float32Array(dst.buffer, dst.byteOffset + dstElem * 4, count);
      view.set(src.subarray(srcOffset, srcOffset + count));
      return;
    }
    case 'bf16': {
      const view = new Uint16Array(dst.buffer, dst.byteOffset + dstElem * 2, count);
      for (let i = 0; i < count; i++) view[i] = f32ToBf16(src[srcOffset + i]);
      return;
    }
    case 'fp8': {
      for (let i = 0; i < count; i++) dst[dstElem + i] = encodeFp8(Math.fround(src[srcOffset + i] / scale));
      return;
    }
  }
}

/** Decode storage elements [srcElem, srcElem+count) into out[outOffset…]. */
export function decodeKvElements(
  dtype: KvDType,
  scale: number,
  src: Uint8Array,
  srcElem: number,
  count: number,
  out: Float32Array,
  outOffset: number,
): void {
  switch (dtype) {
    case 'f32': {
      out.set(new Float32Array(src.buffer, src.byteOffset + srcElem * 4, count), outOffset);
      return;
    }
    case 'bf16': {
      const view = new Uint16Array(src.buffer, src.byteOffset + srcElem * 2, count);
      for (let i = 0; i < count; i++) out[outOffset + i] = bf16ToF32(view[i]);
      return;
    }
    case 'fp8': {
      for (let i = 0; i < count; i++) out[outOffset + i] = Math.fround(FP8_E4M3_TABLE[src[srcElem + i]] * scale);
      return;
    }
  }
}
