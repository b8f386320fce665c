// The turbo KV dtypes (TurboQuant-style), the reference for native/kv_turbo.h and kv_codec.cc.
//
// A head vector x of n = headDim values is rotated, y = R·x, by a fixed randomized Walsh–Hadamard
// transform: per power-of-two chunk of m coordinates (largest first: 96 = 64 + 32, 24 = 16 + 8),
// y = H·D·x / √m, with D a fixed ±1 diagonal (turboSign) and H the m-point Walsh–Hadamard matrix.
// R is orthogonal, so q·k = (R·q)·(R·k), and it spreads a vector's energy evenly: each coordinate of
// a rotated unit vector is about N(0, 1/n). Each coordinate is then quantized to the nearest
// centroid of the Lloyd–Max quantizer of the standard Gaussian (kv-turbo-tables.ts) applied to
// u_i = y_i·√n/‖x‖, and the row keeps the N-bit indices plus one scale α, with ŷ_i = c[idx_i]·α.
//
// α is the least-squares scale (y·c)/(c·c) of the chosen centroids rather than ‖x‖/√n: the same two
// bytes, and it lowers the relative RMS error by 1-2% at headDim 64-128 and up to 10% at headDim
// 8-24 (where a vector's coordinates fit the Gaussian worst). It is stored as an IEEE half,
// saturating at 65504 (f32 buys nothing: the half's 2^-11 relative step is far below even turbo8's
// ~0.6% error).
//
// Row layout: α (f16, little-endian), then the indices as one little-endian bit stream (index i
// at bits [i·N, i·N + N) — turbo3 packs 8 indices in 3 bytes). Bytes: 2 + ceil(n·N / 8).
//
// Encoding (f32 steps, in native/kv_codec.cc's order, so both write the same bytes): NaN becomes 0
// and values are clamped to ±65504; ‖x‖² sums in f64; a zero vector stores α = 0 (and decodes to
// zero). Decoding gives R⁻¹·ŷ here; native attention decodes into the rotated domain only (keys
// against rotated queries, values accumulated and un-rotated once per output).
import { f16ToF32, f32ToF16 } from './dequant.js';
import type { KvDecoder, KvEncoder } from './kv-codec.js';
import { TURBO_CENTROIDS } from './kv-turbo-tables.js';

export type TurboBits = keyof typeof TURBO_CENTROIDS;

const HALF_MAX = 65504;
const HALF_MAX_BITS = 0x7bff;
const TURBO_SEED = 0x9e3779b9;

/**
 * D's sign for coordinate i: the top bit of lowbias32(i ^ seed), a counter-based generator, so
 * any headDim has its signs without a table (native/kv_turbo.h computes the same).
 */
export function turboSign(i: number): 1 | -1 {
  let h = (i ^ TURBO_SEED) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 31 ? -1 : 1;
}

/** Largest power of two <= n (n >= 1). */
function chunkAt(n: number): number {
  return 2 ** (31 - Math.clz32(n));
}

/** In-place unnormalized Walsh–Hadamard transform of v[o .. o+m), m a power of two (f32 adds). */
function fwht(v: Float32Array, o: number, m: number): void {
  for (let len = 1; len < m; len <<= 1)
    for (let i = o; i < o + m; i += 2 * len)
      for (let j = i; j < i + len; j++) {
        const a = v[j],
          b = v[j + len];
        v[j] = a + b;
        v[j + len] = a - b;
      }
}

/** y = R·x in place on v[o .. o+n). */
export function turboRotate(v: Float32Array, o: number, n: number): void {
  for (let c = 0; c < n;) {
    const m = chunkAt(n - c);
    for (let j = c; j < c + m; j++) if (turboSign(j) < 0) v[o + j] = -v[o + j];
    fwht(v, o + c, m);
    const r = Math.fround(1 / Math.sqrt(m));
    for (let j = c; j < c + m; j++) v[o + j] *= r;
    c += m;
  }
}

/** x = R⁻¹·y = Rᵀ·y in place on v[o .. o+n). */
export function turboUnrotate(v: Float32Array, o: number, n: number): void {
  for (let c = 0; c < n;) {
    const m = chunkAt(n - c);
    fwht(v, o + c, m);
    const r = Math.fround(1 / Math.sqrt(m));
    for (let j = c; j < c + m; j++) {
      v[o + j] *= r;
      if (turboSign(j) < 0) v[o + j] = -v[o + j];
    }
    c += m;
  }
}

export function turboRowBytes(bits: TurboBits, headDim: number): number {
  return 2 + Math.ceil((headDim * bits) / 8);
}

interface TurboTables {
  /** Centroids (f64, as generated) and as the f32 values decoding multiplies. */
  readonly centroids: readonly number[];
  readonly centroidsF32: Float32Array;
  /** Decision thresholds: midpoints of adjacent centroids (f64). */
  readonly thresholds: Float64Array;
}

const TABLES = new Map<TurboBits, TurboTables>(
  ([2, 3, 4, 8] as const).map((bits) => {
    const c = TURBO_CENTROIDS[bits];
    return [
      bits,
      {
        centroids: c,
        centroidsF32: Float32Array.from(c),
        thresholds: Float64Array.from({ length: c.length - 1 }, (_, k) => (c[k] + c[k + 1]) / 2),
      },
    ];
  }),
);

/** The centroid index of u: how many thresholds u lies above (a tie goes to the lower index). */
function nearestCentroid(thresholds: Float64Array, u: number): number {
  let lo = 0,
    hi = thresholds.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (u > thresholds[mid]) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

let scratch = new Float32Array(256);

function encodeTurbo(bits: TurboBits, src: Float32Array, srcOffset: number, n: number, dst: Uint8Array, dstByte: number): void {
  const { centroids, thresholds } = TABLES.get(bits)!;
  if (scratch.length < n) scratch = new Float32Array(n);
  const y = scratch;
  // f64 sums in four interleaved lanes (i % 4), combined pairwise: the native encoder's order.
  const ss = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) {
    let x = src[srcOffset + i];
    if (x !== x) x = 0;
    else if (x > HALF_MAX) x = HALF_MAX;
    else if (x < -HALF_MAX) x = -HALF_MAX;
    y[i] = x;
    ss[i & 3] += x * x;
  }
  const idxByte = dstByte + 2;
  dst.fill(0, dstByte, idxByte + Math.ceil((n * bits) / 8));
  const norm = Math.sqrt(ss[0] + ss[1] + (ss[2] + ss[3]));
  if (norm === 0) return;
  turboRotate(y, 0, n);
  const inv = Math.fround(Math.sqrt(n) / norm);
  const num = [0, 0, 0, 0],
    den = [0, 0, 0, 0];
  for (let i = 0; i < n; i++) {
    const idx = nearestCentroid(thresholds, Math.fround(y[i] * inv));
    const c = centroids[idx];
    num[i & 3] += y[i] * c;
    den[i & 3] += c * c;
    const bit = i * bits;
    const v = idx << (bit & 7);
    dst[idxByte + (bit >> 3)] |= v & 0xff;
    if (v > 0xff) dst[idxByte + (bit >> 3) + 1] |= v >> 8;
  }
  let h = f32ToF16(Math.fround((num[0] + num[1] + (num[2] + num[3])) / (den[0] + den[1] + (den[2] + den[3]))));
  if ((h & 0x7fff) > HALF_MAX_BITS) h = HALF_MAX_BITS; // saturate (num >= 0: indices keep y's signs)
  dst[dstByte] = h & 0xff;
  dst[dstByte + 1] = h >> 8;
}

/** ŷ = R·x̂, the rotated-domain values native attention works with, into out[outOffset ..]. */
export function decodeTurboRotated(
  bits: TurboBits,
  src: Uint8Array,
  srcByte: number,
  n: number,
  out: Float32Array,
  outOffset: number,
): void {
  const { centroidsF32 } = TABLES.get(bits)!;
  const alpha = f16ToF32(src[srcByte] | (src[srcByte + 1] << 8));
  const idxByte = srcByte + 2;
  const mask = (1 << bits) - 1;
  for (let i = 0; i < n; i++) {
    const bit = i * bits;
    const p = idxByte + (bit >> 3);
    const word = (bit & 7) + bits > 8 ? src[p] | (src[p + 1] << 8) : src[p];
    out[outOffset + i] = centroidsF32[(word >> (bit & 7)) & mask] * alpha;
  }
}

function decodeTurbo(bits: TurboBits, src: Uint8Array, srcByte: number, n: number, out: Float32Array, outOffset: number): void {
  decodeTurboRotated(bits, src, srcByte, n, out, outOffset);
  turboUnrotate(out, outOffset, n);
}

export function turboEncoder(bits: TurboBits): KvEncoder {
  return (_scale, src, srcOffset, headDim, dst, dstByte) => encodeTurbo(bits, src, srcOffset, headDim, dst, dstByte);
}

export function turboDecoder(bits: TurboBits): KvDecoder {
  return (_scale, src, srcByte, headDim, out, outOffset) => decodeTurbo(bits, src, srcByte, headDim, out, outOffset);
}
