// KV cache storage: allocation sizes (per-layer K and V dtypes) and the f32 / bf16 / fp8 E4M3
// element codecs (src/kernels/kv-codec.ts, reached through the KV dtype traits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateKvCache, kvBytesPerToken, kvLayerDTypes } from '../../src/engine/kv-cache.js';
import { decodeFp8, encodeFp8, FP8_E4M3_MAX } from '../../src/kernels/kv-codec.js';
import { decodeKvElements, encodeKvElements, KV_DTYPES } from '../../src/kernels/dtypes.js';
import type { ModelConfig } from '../../src/model/types.js';

const config: ModelConfig = {
  architecture: 'llama',
  hiddenSize: 64,
  intermediateSize: 128,
  numLayers: 3,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  vocabSize: 100,
  ropeTheta: 10000,
  rmsNormEps: 1e-6,
  tieWordEmbeddings: false,
  slidingWindow: null,
  attentionBias: false,
  maxPositionEmbeddings: 512,
  bosTokenId: 1,
  eosTokenIds: [2],
  nameOrPath: null,
};

/** Independent E4M3 value of a code, from the bit fields. */
function e4m3Value(code: number): number {
  const sign = code & 0x80 ? -1 : 1;
  const exp = (code >> 3) & 0xf;
  const mant = code & 7;
  if (exp === 15 && mant === 7) return NaN;
  return exp === 0 ? sign * (mant / 8) * 2 ** -6 : sign * (1 + mant / 8) * 2 ** (exp - 7);
}

/** Brute-force oracle: the finite code nearest to x (ties to the even code), saturating. */
function nearestCode(x: number): number {
  const sign = x < 0 ? 0x80 : 0;
  const a = Math.min(Math.abs(x), FP8_E4M3_MAX);
  let best = 0;
  let bestErr = Infinity;
  for (let c = 0; c <= 0x7e; c++) {
    const err = Math.abs(e4m3Value(c) - a);
    if (err < bestErr || (err === bestErr && c % 2 === 0)) {
      best = c;
      bestErr = err;
    }
  }
  return sign | best;
}

test('allocateKvCache: one layer per model layer, sized [blocks][blockSize][kvHeads][headDim]', () => {
  for (const [dtype, bytes] of [
    ['f32', 4],
    ['bf16', 2],
    ['fp8', 1],
  ] as const) {
    const layers = allocateKvCache(config, 5, 4, dtype);
    assert.equal(layers.length, 3);
    for (const layer of layers) {
      assert.equal(layer.kDtype, dtype);
      assert.equal(layer.vDtype, dtype);
      assert.equal(layer.k.byteLength, 5 * 4 * 2 * 16 * bytes);
      assert.equal(layer.v.byteLength, layer.k.byteLength);
      assert.notEqual(layer.k.buffer, layer.v.buffer);
      assert.equal(layer.kScale, 1);
    }
    assert.equal(kvBytesPerToken(config, dtype), 2 * 3 * 2 * 16 * bytes);
  }
  assert.throws(() => allocateKvCache(config, 0, 4, 'f32'), RangeError);
});

test('allocateKvCache: a per-layer plan gives each layer its own K and V dtypes', () => {
  const plan = [
    { k: 'bf16', v: 'fp8' },
    { k: 'f32', v: 'f32' },
    { k: 'fp8', v: 'bf16' },
  ] as const;
  const layers = allocateKvCache(config, 5, 4, plan);
  const elements = 5 * 4 * 2 * 16;
  layers.forEach((layer, i) => {
    assert.deepEqual([layer.kDtype, layer.vDtype], [plan[i].k, plan[i].v]);
    assert.equal(layer.k.byteLength, elements * KV_DTYPES[plan[i].k].elementBytes);
    assert.equal(layer.v.byteLength, elements * KV_DTYPES[plan[i].v].elementBytes);
  });
  // Per token: 2 KV heads x 16 per layer, (2 + 1) + (4 + 4) + (1 + 2) bytes per element pair.
  assert.equal(kvBytesPerToken(config, plan), 2 * 16 * (3 + 8 + 3));
  // One dtype is the uniform plan.
  assert.deepEqual(kvLayerDTypes('fp8', 2), [
    { k: 'fp8', v: 'fp8' },
    { k: 'fp8', v: 'fp8' },
  ]);
  assert.throws(() => allocateKvCache(config, 5, 4, plan.slice(0, 2)), /plan has 2 layers, the model 3/);
});

test('fp8: every code decodes to its E4M3 value; only 0x7f/0xff are NaN', () => {
  for (let c = 0; c < 256; c++) {
    const want = e4m3Value(c);
    if (Number.isNaN(want)) assert.ok(Number.isNaN(decodeFp8(c)), `code ${c}`);
    else assert.equal(decodeFp8(c), want, `code ${c}`);
  }
  assert.equal(decodeFp8(0x7e), 448);
  assert.equal(decodeFp8(0x38), 1);
  assert.equal(decodeFp8(0x01), 2 ** -9);
  assert.equal(decodeFp8(0x08), 2 ** -6);
  assert.ok(Object.is(decodeFp8(0x80), -0));
});

test('fp8: encode(decode(c)) == c for every finite code', () => {
  for (let c = 0; c < 256; c++) {
    if ((c & 0x7f) === 0x7f) continue;
    assert.equal(encodeFp8(decodeFp8(c)), c, `code 0x${c.toString(16)}`);
  }
});

test('fp8: midpoints round to the even code, neighbours of midpoints round to the nearer code', () => {
  for (let c = 0; c < 0x7e; c++) {
    for (const sign of [1, -1]) {
      const lo = decodeFp8(c);
      const hi = decodeFp8(c + 1);
      const mid = (lo + hi) / 2;
      const s = sign < 0 ? 0x80 : 0;
      assert.equal(encodeFp8(sign * mid), s | (c % 2 === 0 ? c : c + 1), `midpoint after 0x${c.toString(16)}`);
      const eps = (hi - lo) * 1e-3;
      assert.equal(encodeFp8(sign * (mid - eps)), s | c);
      assert.equal(encodeFp8(sign * (mid + eps)), s | (c + 1));
    }
  }
});

test('fp8: matches the brute-force nearest-code oracle on a sweep of values', () => {
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  for (let i = 0; i < 20000; i++) {
    const x = (rand() - 0.5) * 2 * 2 ** (rand() * 20 - 11);
    assert.equal(encodeFp8(x), nearestCode(x), `x = ${x}`);
  }
});

test('fp8: saturates at ±448 and never produces NaN', () => {
  assert.equal(encodeFp8(448), 0x7e);
  assert.equal(encodeFp8(463.99), 0x7e);
  assert.equal(encodeFp8(464), 0x7e);
  assert.equal(encodeFp8(1e9), 0x7e);
  assert.equal(encodeFp8(Infinity), 0x7e);
  assert.equal(encodeFp8(-Infinity), 0xfe);
  assert.equal(encodeFp8(NaN), 0);
  assert.equal(encodeFp8(2 ** -10), 0); // half the smallest subnormal: ties to even (zero)
  assert.equal(encodeFp8(2 ** -10 * 1.01), 1);
  assert.equal(encodeFp8(1e-30), 0);
});

/** Store values through the bf16 KV codec and return the raw 16-bit codes. */
function bf16Codes(values: number[]): Uint16Array {
  const [layer] = allocateKvCache({ ...config, numLayers: 1 }, 1, 1, 'bf16');
  encodeKvElements('bf16', 1, new Float32Array(values), 0, layer.k, 0, values.length);
  return new Uint16Array(layer.k.buffer, 0, values.length);
}

test('bf16 KV: round-to-nearest-even, exact decode, NaN kept', () => {
  const codes = bf16Codes([1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -2, 3.4028234663852886e38, NaN]);
  assert.deepEqual([...codes.subarray(0, 6)], [0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc000, 0x7f80]);
  const [layer] = allocateKvCache({ ...config, numLayers: 1 }, 1, 1, 'bf16');
  new Uint16Array(layer.k.buffer, 0, 2).set([0x3f81, codes[6]]);
  const out = new Float32Array(2);
  decodeKvElements('bf16', 1, layer.k, 0, 2, out, 0);
  assert.equal(out[0], 1 + 2 ** -7);
  assert.ok(Number.isNaN(out[1]));
});

test('element codecs: round trip through each dtype, fp8 with its scale', () => {
  const src = new Float32Array([0.5, -1.25, 3.0, 896, -0.001, 100]);
  for (const dtype of ['f32', 'bf16', 'fp8'] as const) {
    const [layer] = allocateKvCache({ ...config, numLayers: 1 }, 1, 1, dtype);
    const scale = dtype === 'fp8' ? 2 : 1;
    encodeKvElements(dtype, scale, src, 0, layer.k, 3, src.length);
    const out = new Float32Array(src.length + 1);
    decodeKvElements(dtype, scale, layer.k, 3, src.length, out, 1);
    assert.equal(out[0], 0);
    for (let i = 0; i < src.length; i++) {
      const tol = dtype === 'f32' ? 0 : dtype === 'bf16' ? Math.abs(src[i]) * 2 ** -8 : Math.abs(src[i]) * 2 ** -4 + 2 ** -8;
      assert.ok(Math.abs(out[i + 1] - src[i]) <= tol, `${dtype}[${i}]: ${out[i + 1]} vs ${src[i]}`);
    }
  }
  // fp8 saturates at 448 * scale.
  const [fp8] = allocateKvCache({ ...config, numLayers: 1 }, 1, 1, 'fp8');
  encodeKvElements('fp8', 2, new Float32Array([5000]), 0, fp8.k, 0, 1);
  const back = new Float32Array(1);
  decodeKvElements('fp8', 2, fp8.k, 0, 1, back, 0);
  assert.equal(back[0], 896);
});
