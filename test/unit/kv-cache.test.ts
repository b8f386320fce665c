// KV cache storage: allocation sizes (per-layer K and V dtypes, rows of rowBytes(headDim)) and the
// row codecs (src/kernels/kv-codec.ts, kv-turbo.ts, reached through the KV dtype traits): f32 / bf16 /
// fp8 E4M3, NVFP4, and round trips of every dtype (the turbo specifics are in kv-turbo.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateKvCache, kvBytesPerToken, kvLayerDTypes } from '../../src/engine/kv-cache.js';
import { decodeE2m1, decodeFp8, encodeE2m1, encodeFp8, FP8_E4M3_MAX, FP8_E4M3_TABLE, NVFP4_E2M1 } from '../../src/kernels/kv-codec.js';
import { ALL_KV_DTYPES, decodeKvRow, encodeKvRow, KV_DTYPES, kvRowBytes, type KvDType } from '../../src/kernels/dtypes.js';
import { llamaConfig } from '../helpers/model-config.js';
import { loadAddon, nativeOps } from '../../src/kernels/native.js';

const config = llamaConfig();

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

test('allocateKvCache: one layer per model layer, sized [blocks][blockSize][kvHeads] rows of rowBytes(headDim)', () => {
  // headDim 16: per-element dtypes 16 x element bytes; nvfp4 8 nibble bytes + 1 scale; turbo 2 + 16·N/8.
  for (const [dtype, rowBytes] of [
    ['f32', 64],
    ['bf16', 32],
    ['fp8', 16],
    ['nvfp4', 9],
    ['turbo2', 6],
    ['turbo3', 8],
    ['turbo4', 10],
    ['turbo8', 18],
  ] as const) {
    assert.equal(kvRowBytes(dtype, 16), rowBytes, dtype);
    const layers = allocateKvCache(config, 5, 4, dtype);
    assert.equal(layers.length, 3);
    for (const layer of layers) {
      assert.equal(layer.kDtype, dtype);
      assert.equal(layer.vDtype, dtype);
      assert.equal(layer.k.byteLength, 5 * 4 * 2 * rowBytes);
      assert.equal(layer.v.byteLength, layer.k.byteLength);
      assert.equal(layer.k.byteLength % layer.numBlocks, 0);
      assert.notEqual(layer.k.buffer, layer.v.buffer);
      assert.equal(layer.kScale, 1);
    }
    assert.equal(kvBytesPerToken(config, dtype), 2 * 3 * 2 * rowBytes);
  }
  assert.throws(() => allocateKvCache(config, 0, 4, 'f32'), RangeError);
});

test('allocateKvCache on the backend allocator: native huge-page buffers, zeroed, aligned, each its own', () => {
  const alloc = nativeOps.allocateLarge;
  assert.ok(alloc, 'nativeOps allocates large buffers itself');
  const layers = allocateKvCache(config, 7, 4, 'bf16', alloc);
  const seen = new Set<ArrayBufferLike>();
  for (const layer of layers) {
    for (const side of [layer.k, layer.v]) {
      assert.equal(side.byteLength, 7 * 4 * 2 * KV_DTYPES.bf16.rowBytes(16));
      assert.equal(side.byteOffset, 0);
      assert.ok(side.every((b) => b === 0));
      assert.ok(!seen.has(side.buffer));
      seen.add(side.buffer);
      side.fill(0xab); // writable to its end
    }
  }
  const addon = loadAddon();
  assert.equal(addon.allocHugePages(0).byteLength, 0);
  assert.equal(addon.allocHugePages(3 << 20).byteLength, 3 << 20);
  assert.throws(() => addon.allocHugePages(-1), /whole number of bytes/);
  assert.throws(() => addon.allocHugePages(1.5), /whole number of bytes/);
});

test('KV row sizes for common head dims (bytes per head vector)', () => {
  const want: Record<KvDType, [number, number, number]> = {
    // headDim 64, 128, and an odd 24
    f32: [256, 512, 96],
    bf16: [128, 256, 48],
    fp8: [64, 128, 24],
    nvfp4: [36, 72, 14],
    turbo2: [18, 34, 8],
    turbo3: [26, 50, 11],
    turbo4: [34, 66, 14],
    turbo8: [66, 130, 26],
  };
  for (const dtype of ALL_KV_DTYPES)
    assert.deepEqual(
      [64, 128, 24].map((hd) => kvRowBytes(dtype, hd)),
      want[dtype],
      dtype,
    );
});

test('allocateKvCache: a per-layer plan gives each layer its own K and V dtypes', () => {
  const plan = [
    { k: 'bf16', v: 'fp8' },
    { k: 'f32', v: 'turbo3' },
    { k: 'turbo4', v: 'nvfp4' },
  ] as const;
  const layers = allocateKvCache(config, 5, 4, plan);
  const rows = 5 * 4 * 2;
  layers.forEach((layer, i) => {
    assert.deepEqual([layer.kDtype, layer.vDtype], [plan[i].k, plan[i].v]);
    assert.equal(layer.k.byteLength, rows * KV_DTYPES[plan[i].k].rowBytes(16));
    assert.equal(layer.v.byteLength, rows * KV_DTYPES[plan[i].v].rowBytes(16));
  });
  // Per token: 2 KV heads per layer, (32 + 16) + (64 + 8) + (10 + 9) bytes per head.
  assert.equal(kvBytesPerToken(config, plan), 2 * (48 + 72 + 19));
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
  const bytes = new Uint8Array(values.length * 2);
  encodeKvRow('bf16', 1, new Float32Array(values), 0, values.length, bytes, 0);
  return new Uint16Array(bytes.buffer, 0, values.length);
}

test('bf16 KV: round-to-nearest-even, exact decode, NaN kept', () => {
  const codes = bf16Codes([1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -2, 3.4028234663852886e38, NaN]);
  assert.deepEqual([...codes.subarray(0, 6)], [0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc000, 0x7f80]);
  const bytes = new Uint8Array(4);
  new Uint16Array(bytes.buffer, 0, 2).set([0x3f81, codes[6]]);
  const out = new Float32Array(2);
  decodeKvRow('bf16', 1, bytes, 0, 2, out, 0);
  assert.equal(out[0], 1 + 2 ** -7);
  assert.ok(Number.isNaN(out[1]));
});

test('element codecs: a row at a byte offset round-trips through each dtype, fp8 with its scale', () => {
  const src = new Float32Array([0.5, -1.25, 3.0, 896, -0.001, 100]);
  for (const dtype of ['f32', 'bf16', 'fp8'] as const) {
    const rowBytes = kvRowBytes(dtype, src.length);
    const bytes = new Uint8Array(rowBytes * 3);
    const scale = dtype === 'fp8' ? 2 : 1;
    encodeKvRow(dtype, scale, src, 0, src.length, bytes, rowBytes);
    assert.ok(
      bytes.subarray(0, rowBytes).every((b) => b === 0),
      `${dtype}: row 0 untouched`,
    );
    const out = new Float32Array(src.length + 1);
    decodeKvRow(dtype, scale, bytes, rowBytes, src.length, out, 1);
    assert.equal(out[0], 0);
    for (let i = 0; i < src.length; i++) {
      const tol = dtype === 'f32' ? 0 : dtype === 'bf16' ? Math.abs(src[i]) * 2 ** -8 : Math.abs(src[i]) * 2 ** -4 + 2 ** -8;
      assert.ok(Math.abs(out[i + 1] - src[i]) <= tol, `${dtype}[${i}]: ${out[i + 1]} vs ${src[i]}`);
    }
  }
  // fp8 saturates at 448 * scale.
  const fp8 = new Uint8Array(1);
  encodeKvRow('fp8', 2, new Float32Array([5000]), 0, 1, fp8, 0);
  const back = new Float32Array(1);
  decodeKvRow('fp8', 2, fp8, 0, 1, back, 0);
  assert.equal(back[0], 896);
});

// ---- nvfp4 ----

test('nvfp4: E2M1 codes round to nearest, ties to the even magnitude code, saturating at ±6', () => {
  for (let c = 0; c < 16; c++) {
    assert.equal(encodeE2m1(decodeE2m1(c)), c === 8 ? 0 : c, `code ${c}`); // -0 encodes as +0
  }
  // Midpoints: 0.25 → 0, 0.75 → 1 (code 2), 1.25 → 1, 1.75 → 2, 2.5 → 2, 3.5 → 4, 5 → 4.
  assert.deepEqual(
    [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5].map((q) => NVFP4_E2M1[encodeE2m1(q)]),
    [0, 1, 1, 2, 2, 4, 4],
  );
  assert.deepEqual(
    [0.26, 0.74, 1.26, 1.74, 2.51, 3.49, 5.01, 6.4, 1e9, Infinity].map((q) => NVFP4_E2M1[encodeE2m1(q)]),
    [0.5, 0.5, 1.5, 1.5, 3, 3, 6, 6, 6, 6],
  );
  assert.equal(encodeE2m1(-3.2), 8 | 5);
  assert.equal(decodeE2m1(8 | 7), -6);
});

/** The nvfp4 row of `values` (headDim = values.length) at layer scale `scale`. */
function nvfp4Row(values: ArrayLike<number>, scale = 1): Uint8Array {
  const row = new Uint8Array(kvRowBytes('nvfp4', values.length));
  encodeKvRow('nvfp4', scale, Float32Array.from(values), 0, values.length, row, 0);
  return row;
}

test('nvfp4: layout — nibbles (low = even index), then one E4M3 scale per 16 values', () => {
  // 20 values: groups of 16 and 4; the first group's amax 12 → block scale 2, the second's 3 → 0.5.
  const values = [1, -2, 12, 0, 3, 5, -6, 0.9, 0, 0, 0, 0, 0, 0, 0, 2, 3, 1.5, -0.25, 0.75];
  const row = nvfp4Row(values);
  assert.equal(row.length, 10 + 2);
  assert.deepEqual([row[10], row[11]], [encodeFp8(2), encodeFp8(0.5)]);
  assert.equal(FP8_E4M3_TABLE[row[10]], 2);
  const nib = (i: number) => (row[i >> 1] >> ((i & 1) * 4)) & 0xf;
  // value / 2 → 0.5, -1, 6, 0, 1.5, 2.5 (tie → 2), -3, 0.45 (→ 0.5); second group / 0.5 → 6, 3, -0.5, 1.5.
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 6, 7].map((i) => decodeE2m1(nib(i))),
    [0.5, -1, 6, 0, 1.5, 2, -3, 0.5],
  );
  assert.deepEqual(
    [16, 17, 18, 19].map((i) => decodeE2m1(nib(i))),
    [6, 3, -0.5, 1.5],
  );
  const out = new Float32Array(20);
  decodeKvRow('nvfp4', 1, row, 0, 20, out, 0);
  assert.deepEqual([...out.subarray(0, 8)], [1, -2, 12, 0, 3, 4, -6, 1]);
  assert.deepEqual([...out.subarray(16)], [3, 1.5, -0.25, 0.75]);
});

test('nvfp4: the layer scale multiplies the block scales; zero groups, NaN and saturation stay finite', () => {
  const values = Float32Array.from({ length: 32 }, (_, i) => (i < 16 ? 0 : (i - 24) * 0.37));
  const out = new Float32Array(32);
  for (const scale of [1, 0.01, 37]) {
    const row = nvfp4Row(values, scale);
    decodeKvRow('nvfp4', scale, row, 0, 32, out, 0);
    assert.ok(
      out.subarray(0, 16).every((v) => v === 0),
      'zero group',
    );
    // Within half the widest E2M1 step (4 → 6) of the group's scale, amax / 6 rounded up by at most 1/16.
    for (let i = 16; i < 32; i++) assert.ok(Math.abs(out[i] - values[i]) <= ((8 * 0.37) / 6) * 1.07, `scale ${scale}, [${i}]: ${out[i]}`);
  }
  // NaN encodes as 0 and does not poison its group's scale; ±Inf saturates the group.
  const special = Float32Array.from({ length: 16 }, (_, i) => i - 6); // amax 9: block scale 1.5
  special[3] = NaN;
  const row = nvfp4Row(special);
  decodeKvRow('nvfp4', 1, row, 0, 16, out, 0);
  assert.equal(out[3], 0);
  assert.deepEqual([out[0], out[15]], [-6, 9]);
  special[5] = Infinity;
  special[6] = -Infinity;
  decodeKvRow('nvfp4', 1, nvfp4Row(special), 0, 16, out, 0);
  assert.deepEqual([out[5], out[6]], [6 * 448, -6 * 448]);
  assert.ok(out.subarray(0, 16).every(Number.isFinite));
  // Beyond 6 · 448 · scale everything saturates.
  decodeKvRow('nvfp4', 0.5, nvfp4Row([1e6, -1e6, 1], 0.5), 0, 3, out, 0);
  assert.deepEqual([...out.subarray(0, 3)], [6 * 448 * 0.5, -6 * 448 * 0.5, 0]);
});

// ---- every dtype ----

function gaussian(rand: () => number): number {
  let u = 0;
  while (u === 0) u = rand();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

/** Relative RMS error of `vectors` Gaussian head vectors of `headDim` through `dtype`'s codec. */
function roundTripError(dtype: KvDType, headDim: number, vectors: number, seed: number, amp = 1, scale = 1): number {
  const rand = seeded(seed);
  const rowBytes = kvRowBytes(dtype, headDim);
  const src = Float32Array.from({ length: vectors * headDim }, () => gaussian(rand) * amp);
  const bytes = new Uint8Array(vectors * rowBytes);
  const out = new Float32Array(src.length);
  for (let r = 0; r < vectors; r++) {
    encodeKvRow(dtype, scale, src, r * headDim, headDim, bytes, r * rowBytes);
    decodeKvRow(dtype, scale, bytes, r * rowBytes, headDim, out, r * headDim);
  }
  let err = 0,
    ref = 0;
  for (let i = 0; i < src.length; i++) {
    err += (out[i] - src[i]) ** 2;
    ref += src[i] ** 2;
  }
  return Math.sqrt(err / ref);
}

// Relative RMS error bounds on Gaussian head vectors, a little above what each dtype measures (the
// turbo ones sit at the Lloyd–Max distortion of their width: sqrt(D) = 0.343, 0.186, 0.097, 0.0064).
const RMS_BOUND: Record<KvDType, number> = {
  f32: 0,
  bf16: 0.003,
  fp8: 0.035,
  nvfp4: 0.11,
  turbo2: 0.36,
  turbo3: 0.2,
  turbo4: 0.105,
  turbo8: 0.0075,
};

test('every KV dtype: relative RMS round-trip error within its bound, for odd and common head dims', () => {
  for (const dtype of ALL_KV_DTYPES) {
    for (const headDim of [8, 16, 24, 40, 64, 96, 128]) {
      const err = roundTripError(dtype, headDim, Math.ceil(8192 / headDim), headDim * 7 + 1);
      assert.ok(err <= RMS_BOUND[dtype], `${dtype} hd=${headDim}: relative RMS ${err.toFixed(4)} > ${RMS_BOUND[dtype]}`);
      // Quantizers that are not lossless lose something (a wrong codec that copies would not).
      if (dtype !== 'f32') assert.ok(err > 0, `${dtype} hd=${headDim}: lossless?`);
    }
    // The turbo dtypes are scale-free; nvfp4 is too once the layer scale brings the block scales into
    // E4M3's normal range (amax / 6 / scale in [2^-6, 448]).
    if (dtype.startsWith('turbo') || dtype === 'nvfp4') {
      const small = roundTripError(dtype, 64, 64, 3, 1e-3, 1e-3),
        large = roundTripError(dtype, 64, 64, 3, 100, 100);
      assert.ok(small <= RMS_BOUND[dtype] && large <= RMS_BOUND[dtype], `${dtype}: ${small} / ${large} at other magnitudes`);
    }
  }
});

test('every KV dtype: a zero vector decodes to zero, NaN and infinities decode finite, rows do not overlap', () => {
  for (const dtype of ALL_KV_DTYPES) {
    for (const headDim of [8, 24, 64]) {
      const rowBytes = kvRowBytes(dtype, headDim);
      const bytes = new Uint8Array(3 * rowBytes).fill(0xa5);
      const zero = new Float32Array(headDim);
      encodeKvRow(dtype, 1, zero, 0, headDim, bytes, rowBytes);
      assert.ok(
        bytes.subarray(0, rowBytes).every((b) => b === 0xa5) && bytes.subarray(2 * rowBytes).every((b) => b === 0xa5),
        `${dtype} hd=${headDim}: neighbours untouched`,
      );
      const out = new Float32Array(headDim).fill(7);
      decodeKvRow(dtype, 1, bytes, rowBytes, headDim, out, 0);
      assert.ok(
        out.every((v) => v === 0),
        `${dtype} hd=${headDim}: zero vector → ${out.join(',')}`,
      );
      if (dtype === 'f32' || dtype === 'bf16') continue; // they keep NaN and infinities as they are
      const special = Float32Array.from({ length: headDim }, (_, i) => Math.sin(i + 1));
      special[0] = NaN;
      special[1] = Infinity;
      special[headDim - 1] = -Infinity;
      encodeKvRow(dtype, 1, special, 0, headDim, bytes, rowBytes);
      decodeKvRow(dtype, 1, bytes, rowBytes, headDim, out, 0);
      assert.ok(out.every(Number.isFinite), `${dtype} hd=${headDim}: ${out.join(',')}`);
      const all = Float32Array.from({ length: headDim }, () => NaN);
      encodeKvRow(dtype, 1, all, 0, headDim, bytes, rowBytes);
      decodeKvRow(dtype, 1, bytes, rowBytes, headDim, out, 0);
      assert.ok(
        out.every((v) => v === 0),
        `${dtype} hd=${headDim}: all-NaN → ${out.join(',')}`,
      );
    }
  }
});
