// --kv-cache-dtype × --kv-high-precision-layers → per-layer K/V dtypes: the spec's resolution table.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  KV_CACHE_DTYPE_NAMES,
  automaticHighPrecisionLayers,
  describeKvPlan,
  highPrecisionLayerCount,
  kvLayerPlan,
  kvPair,
} from '../../src/engine/kv-plan.js';
import { highPrecisionLayers } from '../../src/cli/flags/values.js';

test('names: sixteen, symmetric and the nine asymmetric pairs', () => {
  assert.equal(KV_CACHE_DTYPE_NAMES.length, 16);
  assert.deepEqual(kvPair('fp8'), { k: 'fp8', v: 'fp8' });
  assert.deepEqual(kvPair('bf16k_turbo3v'), { k: 'bf16', v: 'turbo3' });
  assert.deepEqual(kvPair('turbo4k_turbo8v'), { k: 'turbo4', v: 'turbo8' });
  assert.deepEqual(kvPair('fp8k_turbo2v'), { k: 'fp8', v: 'turbo2' });
  assert.equal(KV_CACHE_DTYPE_NAMES.filter((n) => n.includes('k_')).length, 9);
});

test('the automatic value per dtype (flag 0), for L = 6, 24, 28, 80', () => {
  const table: Record<string, number[]> = {
    bf16: [0, 0, 0, 0],
    fp8: [0, 0, 0, 0],
    nvfp4: [0, 0, 0, 0],
    // max(4, ceil(4L/5))
    turbo2: [5, 20, 23, 64],
    bf16k_turbo3v: [5, 20, 23, 64],
    // max(2, ceil(L/3))
    turbo3: [2, 8, 10, 27],
    turbo4: [2, 8, 10, 27],
    turbo8: [2, 8, 10, 27],
    turbo4k_turbo3v: [2, 8, 10, 27],
    fp8k_turbo2v: [2, 8, 10, 27],
    bf16k_turbo2v: [2, 8, 10, 27],
  };
  for (const [name, want] of Object.entries(table))
    assert.deepEqual(
      [6, 24, 28, 80].map((L) => automaticHighPrecisionLayers(name as never, L)),
      want,
      name,
    );
});

test('an explicit count, auto (= 2), max/all; unparsable warns and becomes 0 (the automatic value)', () => {
  assert.equal(highPrecisionLayerCount('fp8', 24, 3), 3);
  assert.equal(highPrecisionLayerCount('turbo4', 24, 3), 3); // explicit N replaces the automatic 8
  assert.equal(highPrecisionLayerCount('fp8', 24, 'all'), 24);
  assert.deepEqual(highPrecisionLayers.parse('auto'), { ok: true, value: 2 });
  assert.deepEqual(highPrecisionLayers.parse('max'), { ok: true, value: 'all' });
  assert.deepEqual(highPrecisionLayers.parse('all'), { ok: true, value: 'all' });
  assert.deepEqual(highPrecisionLayers.parse('lots'), { ok: true, value: 0, warning: true });
  // No spelling promotes nothing under a turbo dtype: 0 means automatic.
  for (const raw of ['0', 'lots', '-1']) {
    const parsed = highPrecisionLayers.parse(raw);
    assert.ok(parsed.ok);
    assert.ok(highPrecisionLayerCount('turbo3', 24, parsed.value as number | 'all') > 0, raw);
  }
});

test('the plan: promoted layers at both ends in bf16, the pair elsewhere', () => {
  const plan = kvLayerPlan('bf16k_turbo3v', 12, 2);
  assert.deepEqual(
    plan.map((p) => `${p.k}/${p.v}`),
    ['bf16/bf16', 'bf16/bf16', ...Array(8).fill('bf16/turbo3'), 'bf16/bf16', 'bf16/bf16'],
  );
  assert.ok(kvLayerPlan('fp8', 12, 0).every((p) => p.k === 'fp8' && p.v === 'fp8'));
  assert.ok(
    kvLayerPlan('turbo2', 6, 0).every((p) => p.k === 'bf16'),
    'turbo2 on 6 layers promotes them all',
  );
  assert.equal(describeKvPlan('fp8', kvLayerPlan('fp8', 4, 1)), 'fp8, layers 0,3 promoted to bf16');
  assert.equal(describeKvPlan('fp8', kvLayerPlan('fp8', 4, 0)), 'fp8');
});
