// The turbo KV dtypes (src/kernels/kv-turbo.ts): the Lloyd–Max tables (re-derived here), the
// randomized Walsh–Hadamard rotation, the row layout and the codec's edge cases. Round-trip error
// bounds of every dtype are in kv-cache.test.ts; native against reference in native-ops.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gaussianDistortion, lloydMaxGaussian, lloydStep } from '../../src/kernels/lloyd-max.js';
import { TURBO_CENTROIDS } from '../../src/kernels/kv-turbo-tables.js';
import { decodeTurboRotated, turboRotate, turboRowBytes, turboSign, turboUnrotate, type TurboBits } from '../../src/kernels/kv-turbo.js';
import { decodeKvRow, encodeKvRow, kvRowBytes, type KvDType } from '../../src/kernels/dtypes.js';
import { f16ToF32 } from '../../src/kernels/dequant.js';

const BITS: TurboBits[] = [2, 3, 4, 8];

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

function gaussian(rand: () => number): number {
  let u = 0;
  while (u === 0) u = rand();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

test('turbo tables: the committed centroids are the Lloyd–Max quantizers of N(0, 1), re-derived', () => {
  for (const bits of BITS) {
    const table = TURBO_CENTROIDS[bits];
    assert.equal(table.length, 2 ** bits);
    const derived = lloydMaxGaussian(bits);
    for (let k = 0; k < table.length; k++)
      assert.ok(Math.abs(derived[k] - table[k]) <= 1e-13, `${bits} bits [${k}]: ${derived[k]} vs ${table[k]}`);
    // A fixed point of Lloyd's algorithm: one more step moves nothing.
    const next = lloydStep(Float64Array.from(table));
    for (let k = 0; k < table.length; k++) assert.ok(Math.abs(next[k] - table[k]) <= 1e-13, `${bits} bits: Lloyd step moves [${k}]`);
    for (let k = 0; k < table.length; k++) {
      assert.equal(table[k], -table[table.length - 1 - k], 'antisymmetric');
      if (k > 0) assert.ok(table[k] > table[k - 1], 'ascending');
    }
  }
  // One bit: ±sqrt(2/π), distortion 1 - 2/π exactly. Max (1960) lists 0.1175, 0.03455 and 0.009497
  // for 2-4 bits (the last is 0.009501 by exact integration, which a brute-force sum confirms).
  const one = lloydMaxGaussian(1);
  assert.ok(Math.abs(one[1] - Math.sqrt(2 / Math.PI)) < 1e-14 && Math.abs(gaussianDistortion(one) - (1 - 2 / Math.PI)) < 1e-14);
  const max1960: Array<[TurboBits, number]> = [
    [2, 0.1175],
    [3, 0.03455],
    [4, 0.009497],
  ];
  for (const [bits, d] of max1960) {
    const got = gaussianDistortion(Float64Array.from(TURBO_CENTROIDS[bits]));
    assert.ok(Math.abs(got - d) < 1e-3 * d, `${bits} bits: distortion ${got}`); // Max gives 4 digits
  }
  assert.deepEqual(
    TURBO_CENTROIDS[2].map((c) => Number(c.toFixed(4))),
    [-1.5104, -0.4528, 0.4528, 1.5104],
  );
});

test('turbo rotation: signs from the fixed generator; R is orthogonal, chunked and inverted by turboUnrotate', () => {
  // Pinned: the generator is part of the stored format.
  assert.equal(Array.from({ length: 32 }, (_, i) => (turboSign(i) < 0 ? '-' : '+')).join(''), '+-+-++--+--+---+-+--+--+-+--+---');
  let negatives = 0;
  for (let i = 0; i < 4096; i++) if (turboSign(i) < 0) negatives++;
  assert.ok(negatives > 1900 && negatives < 2200, `${negatives} negative signs of 4096`);
  const rand = seeded(5);
  for (const n of [1, 2, 8, 24, 40, 64, 96, 100, 128]) {
    const x = Float32Array.from({ length: n }, () => gaussian(rand));
    const y = x.slice();
    turboRotate(y, 0, n);
    let nx = 0,
      ny = 0;
    for (let i = 0; i < n; i++) {
      nx += x[i] ** 2;
      ny += y[i] ** 2;
    }
    assert.ok(Math.abs(Math.sqrt(ny) - Math.sqrt(nx)) <= 1e-5 * Math.sqrt(nx), `n=${n}: norm kept`);
    const back = y.slice();
    turboUnrotate(back, 0, n);
    for (let i = 0; i < n; i++) assert.ok(Math.abs(back[i] - x[i]) <= 1e-5, `n=${n}: R⁻¹R x [${i}]`);
  }
  // 96 = 64 + 32: a vector in the last 32 coordinates stays there, and R there is H·D/√32.
  const v = new Float32Array(96);
  v[70] = 1;
  turboRotate(v, 0, 96);
  assert.ok(v.subarray(0, 64).every((e) => e === 0));
  const s = turboSign(70) / Math.sqrt(32);
  for (let j = 0; j < 32; j++) {
    // H[j][6] = (-1)^popcount(j & 6)
    const h = (j & 6) === 2 || (j & 6) === 4 ? -1 : 1;
    assert.ok(Math.abs(v[64 + j] - h * s) <= 1e-7, `R e70 [${64 + j}]`);
  }
  // q·k is kept: the native kernels take it in the rotated domain.
  const q = Float32Array.from({ length: 128 }, () => gaussian(rand));
  const k = Float32Array.from({ length: 128 }, () => gaussian(rand));
  let dot = 0;
  for (let i = 0; i < 128; i++) dot += q[i] * k[i];
  turboRotate(q, 0, 128);
  turboRotate(k, 0, 128);
  let rdot = 0;
  for (let i = 0; i < 128; i++) rdot += q[i] * k[i];
  assert.ok(Math.abs(rdot - dot) <= 1e-4 * 128);
});

test('turbo rows: scale then densely packed indices; decoding un-rotates the rotated values', () => {
  const rand = seeded(9);
  for (const bits of BITS) {
    const dtype = `turbo${bits}` as KvDType;
    for (const n of [8, 24, 64, 96, 128]) {
      assert.equal(kvRowBytes(dtype, n), 2 + Math.ceil((n * bits) / 8));
      assert.equal(turboRowBytes(bits, n), kvRowBytes(dtype, n));
      const x = Float32Array.from({ length: n }, () => gaussian(rand) * 3);
      const row = new Uint8Array(kvRowBytes(dtype, n));
      encodeKvRow(dtype, 1, x, 0, n, row, 0);
      // Indices as the reference packs them: index i at bits [i·N, i·N + N).
      const centroids = TURBO_CENTROIDS[bits];
      const alpha = f16ToF32(row[0] | (row[1] << 8));
      const rotated = new Float32Array(n);
      decodeTurboRotated(bits, row, 0, n, rotated, 0);
      for (let i = 0; i < n; i++) {
        let idx = 0;
        for (let b = 0; b < bits; b++) idx |= ((row[2 + ((i * bits + b) >> 3)] >> ((i * bits + b) & 7)) & 1) << b;
        assert.equal(rotated[i], Math.fround(Math.fround(centroids[idx]) * alpha), `turbo${bits} n=${n} [${i}]`);
      }
      // The scale is the least-squares fit of the chosen centroids to R·x (up to its f16 rounding):
      // the residual is orthogonal to the reconstruction.
      const y = x.slice();
      turboRotate(y, 0, n);
      let resid = 0,
        norm = 0;
      for (let i = 0; i < n; i++) {
        resid += (y[i] - rotated[i]) * rotated[i];
        norm += y[i] * y[i];
      }
      assert.ok(Math.abs(resid) <= 2e-3 * norm, `turbo${bits} n=${n}: residual·ŷ = ${resid} (|y|² ${norm})`);
      const full = new Float32Array(n);
      decodeKvRow(dtype, 1, row, 0, n, full, 0);
      turboUnrotate(rotated, 0, n);
      assert.deepEqual(full, rotated);
    }
  }
});

test('turbo rows: huge values saturate finite, the scale stays an f16 ≤ 65504', () => {
  for (const bits of BITS) {
    const dtype = `turbo${bits}` as KvDType;
    const n = 16;
    const x = Float32Array.from({ length: n }, (_, i) => (i % 2 ? -1 : 1) * 1e30);
    const row = new Uint8Array(kvRowBytes(dtype, n));
    encodeKvRow(dtype, 1, x, 0, n, row, 0);
    assert.ok((row[0] | (row[1] << 8)) <= 0x7bff, `turbo${bits}: scale ${row[0] | (row[1] << 8)}`);
    const out = new Float32Array(n);
    decodeKvRow(dtype, 1, row, 0, n, out, 0);
    assert.ok(out.every(Number.isFinite));
    // Clamped to ±65504 before quantizing: the signs survive.
    for (let i = 0; i < n; i++) assert.equal(Math.sign(out[i]), Math.sign(x[i]), `turbo${bits} [${i}]`);
  }
});
