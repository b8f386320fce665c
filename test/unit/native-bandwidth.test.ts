// The benches' memory-read roofline probe (native/bandwidth.cc) on every kernel path this CPU has:
// it reads the whole buffer (the addon checks the XOR of every word, which a skipped or misaligned
// load breaks) and reports a rate, and it refuses bad arguments.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadAddon, measureNativeReadBandwidth, nativeInfo, setCpuPath, type CpuPath } from '../../src/kernels/native.js';

const info = nativeInfo();
const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);

describe('measureReadBandwidth', () => {
  after(() => setCpuPath(info.bestCpuPath));
  for (const path of PATHS) {
    it(`${path}: streams every byte and reports a rate`, () => {
      setCpuPath(path);
      const r = measureNativeReadBandwidth(24 << 20, 2);
      assert.equal(r.path, path);
      assert.equal(r.bytes, 24 << 20);
      assert.equal(r.threads, info.threads);
      assert.ok(r.gbPerS > 0.1 && r.gbPerS < 10_000, `rate ${r.gbPerS}`);
    });
  }
  it('refuses sizes under one chunk and bad pass counts', () => {
    const addon = loadAddon();
    assert.throws(() => addon.measureReadBandwidth(1000, 1), /bytes must be/);
    assert.throws(() => addon.measureReadBandwidth(8 << 20, 0), /passes/);
    assert.throws(() => addon.measureReadBandwidth(Number.NaN, 1), /bytes must be/);
  });
});
