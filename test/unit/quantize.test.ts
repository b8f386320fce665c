// The K-quant quantizers (src/kernels/quantize.ts) round-trip through the reference decoders
// (src/kernels/dequant.ts) within a quantization step: every byte they write is a valid ggml block
// whose scales, mins and packed levels decode back to the input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeQ4KRow, decodeQ5KRow, decodeQ6KRow, QK_K, type RowDecoder } from '../../src/kernels/dequant.js';
import { quantizeRowQ4K, quantizeRowQ5K, quantizeRowQ6K } from '../../src/kernels/quantize.js';

/** Deterministic roughly-normal values (sum of four uniforms), so failures reproduce. */
function normalish(n: number, seed: number, std: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  for (let i = 0; i < n; i++) out[i] = (next() + next() + next() + next() - 2) * std * Math.sqrt(3);
  return out;
}

interface Case {
  name: string;
  quantize: (x: Float32Array, cols: number, xOffset?: number) => Uint8Array;
  decode: RowDecoder;
  blockBytes: number;
  /** Levels per sub-block: the step is (sub-block range) / levels. */
  levels: number;
  /** Allowed max error in steps of the block (Q6_K's symmetric levels lose one at +32). */
  maxSteps: number;
  /** Expected RMS error relative to the values' RMS, for normal data (a loose ceiling). */
  rmsRel: number;
}

const CASES: Case[] = [
  { name: 'q4_k', quantize: quantizeRowQ4K, decode: decodeQ4KRow, blockBytes: 144, levels: 15, maxSteps: 0.6, rmsRel: 0.1 },
  { name: 'q5_k', quantize: quantizeRowQ5K, decode: decodeQ5KRow, blockBytes: 176, levels: 31, maxSteps: 0.6, rmsRel: 0.05 },
  { name: 'q6_k', quantize: quantizeRowQ6K, decode: decodeQ6KRow, blockBytes: 210, levels: 63, maxSteps: 1.0, rmsRel: 0.025 },
];

function roundTrip(c: Case, x: Float32Array, offset = 0, cols = x.length - offset): Float32Array {
  const bytes = c.quantize(x, cols, offset);
  assert.equal(bytes.length, (cols / QK_K) * c.blockBytes, `${c.name}: block bytes`);
  const y = new Float32Array(cols);
  c.decode(bytes, 0, cols, y, 0);
  return y;
}

/** Max error in units of each 256-block's step (its value range / levels, min clamped to ≤ 0 as the K-quants store it). */
function maxErrorInSteps(c: Case, x: Float32Array, y: Float32Array, offset = 0): number {
  let worst = 0;
  for (let b = 0; b < y.length / QK_K; b++) {
    let lo = 0,
      hi = 0;
    for (let i = 0; i < QK_K; i++) {
      lo = Math.min(lo, x[offset + b * QK_K + i]);
      hi = Math.max(hi, x[offset + b * QK_K + i]);
    }
    const step = c.name === 'q6_k' ? (2 * Math.max(hi, -lo)) / c.levels : (hi - lo) / c.levels;
    for (let i = 0; i < QK_K; i++) {
      const err = Math.abs(y[b * QK_K + i] - x[offset + b * QK_K + i]);
      worst = Math.max(worst, step > 0 ? err / step : err === 0 ? 0 : Infinity);
    }
  }
  return worst;
}

for (const c of CASES) {
  test(`${c.name}: normal weights round-trip within half a step`, () => {
    for (const std of [0.02, 1, 300]) {
      const x = normalish(QK_K * 32, 7, std);
      const y = roundTrip(c, x);
      assert.ok(maxErrorInSteps(c, x, y) <= c.maxSteps, `${c.name} std ${std}: max error ${maxErrorInSteps(c, x, y)} steps`);
      let se = 0,
        ss = 0;
      for (let i = 0; i < x.length; i++) {
        se += (y[i] - x[i]) ** 2;
        ss += x[i] ** 2;
      }
      const rel = Math.sqrt(se / ss);
      assert.ok(rel < c.rmsRel, `${c.name} std ${std}: relative RMS error ${rel}`);
    }
  });

  test(`${c.name}: zeros, constants, one-signed rows and a sub-block outlier`, () => {
    const zeros = new Float32Array(QK_K);
    assert.ok(
      roundTrip(c, zeros).every((v) => v === 0),
      `${c.name}: zeros decode to zeros`,
    );
    const shapes: [string, (i: number) => number][] = [
      ['constant', () => 0.5],
      ['negative', (i) => -0.1 - (i % 17) * 0.01],
      ['positive', (i) => 0.1 + (i % 13) * 0.01],
      ['ramp', (i) => (i - 128) / 64],
      ['outlier', (i) => (i === 200 ? 40 : Math.sin(i) * 0.05)],
    ];
    for (const [name, f] of shapes) {
      const x = Float32Array.from({ length: 2 * QK_K }, (_, i) => f(i % QK_K));
      const y = roundTrip(c, x);
      assert.ok(maxErrorInSteps(c, x, y) <= c.maxSteps, `${c.name} ${name}: max error ${maxErrorInSteps(c, x, y)} steps`);
    }
  });

  test(`${c.name}: reads from an offset and rejects rows that are not whole blocks`, () => {
    const x = normalish(QK_K * 3, 11, 0.05);
    const y = roundTrip(c, x, QK_K, 2 * QK_K);
    assert.ok(maxErrorInSteps(c, x, y, QK_K) <= c.maxSteps);
    assert.deepEqual(c.quantize(x, 2 * QK_K, QK_K), c.quantize(x.slice(QK_K), 2 * QK_K));
    assert.throws(() => c.quantize(x, 100), /multiple of 256/);
  });
}
