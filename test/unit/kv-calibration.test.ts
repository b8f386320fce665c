// --fp8-kv-calibration-tokens: fp8 layer scales from the running max over the first N tokens, with
// what was stored earlier re-coded when the scale grows, so every stored value still decodes to
// itself within fp8's precision; after N tokens the scales are fixed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withKvCalibration } from '../../src/engine/kv-calibration.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { FP8_E4M3_TABLE } from '../../src/kernels/kv-codec.js';
import type { KvLayer } from '../../src/kernels/ops.js';

const HEADS = 2;
const HD = 8;
const WIDTH = HEADS * HD;

function fp8Layer(vDtype: 'fp8' | 'bf16' = 'fp8'): KvLayer {
  const slots = 64;
  return {
    kDtype: 'fp8',
    vDtype,
    numBlocks: 4,
    blockSize: 16,
    numKvHeads: HEADS,
    headDim: HD,
    k: new Uint8Array(slots * WIDTH),
    v: new Uint8Array(slots * WIDTH * (vDtype === 'fp8' ? 1 : 2)),
    kScale: 1,
    vScale: 1,
  };
}

/** n rows of values in ±magnitude (deterministic). */
function rows(n: number, magnitude: number, seed: number): Float32Array {
  const out = new Float32Array(n * WIDTH);
  for (let i = 0; i < out.length; i++) out[i] = Math.fround(magnitude * Math.sin(seed * 97 + i * 0.37));
  return out;
}

const decodeK = (layer: KvLayer, slot: number, i: number) => FP8_E4M3_TABLE[layer.k[slot * WIDTH + i]] * layer.kScale;

test('scales follow the running max; earlier slots are re-coded and still decode to their values', () => {
  const layer = fp8Layer();
  const ops = withKvCalibration(referenceOps, 32);
  const batches = [rows(4, 0.05, 1), rows(4, 3, 2), rows(4, 900, 3)];
  const stored: { slot: number; values: Float32Array; row: number }[] = [];
  let slot = 0;
  for (const b of batches) {
    const slots = Int32Array.from({ length: 4 }, () => slot++);
    ops.storeKv(layer, b, b, 4, slots);
    slots.forEach((s, r) => stored.push({ slot: s, values: b, row: r }));
  }
  const amax = Math.max(...batches.flatMap((b) => [...b].map(Math.abs)));
  assert.equal(layer.kScale, amax / 448);
  assert.equal(layer.vScale, amax / 448);
  // Values 900 would saturate at scale 1; here every value is within fp8's step at its scale.
  for (const { slot: s, values, row } of stored)
    for (let i = 0; i < WIDTH; i++) {
      const want = values[row * WIDTH + i];
      const got = decodeK(layer, s, i);
      // E4M3 keeps 3 mantissa bits (relative step 1/8 → error ≤ 1/16), plus subnormal steps of 2^-9 × scale, doubled by the re-code.
      assert.ok(Math.abs(got - want) <= Math.abs(want) / 8 + 2 * 2 ** -9 * layer.kScale, `slot ${s}[${i}]: ${got} vs ${want}`);
    }
});

test('small values gain precision over the uncalibrated scale 1', () => {
  const calibrated = fp8Layer();
  const plain = fp8Layer();
  const b = rows(8, 0.01, 5);
  const slots = Int32Array.from({ length: 8 }, (_, i) => i);
  withKvCalibration(referenceOps, 16).storeKv(calibrated, b, b, 8, slots);
  referenceOps.storeKv(plain, b, b, 8, slots);
  let errCal = 0;
  let errPlain = 0;
  for (let s = 0; s < 8; s++)
    for (let i = 0; i < WIDTH; i++) {
      errCal += Math.abs(decodeK(calibrated, s, i) - b[s * WIDTH + i]);
      errPlain += Math.abs(decodeK(plain, s, i) - b[s * WIDTH + i]);
    }
  assert.ok(errCal * 4 < errPlain, `${errCal} vs ${errPlain}`);
});

test('after N tokens the scale is fixed; non-fp8 sides are not touched', () => {
  const layer = fp8Layer('bf16');
  const ops = withKvCalibration(referenceOps, 4);
  ops.storeKv(layer, rows(4, 1, 1), rows(4, 1, 1), 4, Int32Array.from([0, 1, 2, 3]));
  const scale = layer.kScale;
  ops.storeKv(layer, rows(1, 100, 2), rows(1, 100, 2), 1, Int32Array.from([4]));
  assert.equal(layer.kScale, scale);
  assert.equal(layer.vScale, 1);
  // The later, larger value saturates at the fixed scale's largest finite value.
  assert.ok(Math.abs(decodeK(layer, 4, 0)) <= 448 * scale);
});
