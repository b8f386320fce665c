// The Q3_K / IQ4_XS / IQ3_XXS / IQ3_S / TQ2_0 reference decoders (src/kernels/dequant-k3-iq.ts)
// against gguf-py's dequantization of real quant-zoo tensors, bit for bit (manifest.json lists the
// tensors, their shapes and reference files).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WEIGHT_DTYPES, bytesPerRow, dequantize } from '../../src/kernels/dtypes.js';
import { IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS } from '../../src/kernels/iq-tables.js';
import { readGgufHeader } from '../../src/model/loaders/gguf-header.js';
import type { DType } from '../../src/model/types.js';
import { MODELS } from '../helpers/paths.js';

const ZOO = join(MODELS, 'quant-zoo');

interface ZooType {
  file: string;
  dequantized: Record<string, { file: string; shape: [number, number]; gguf_type: string }>;
}
const manifest = JSON.parse(readFileSync(join(ZOO, 'manifest.json'), 'utf8')) as { types: Record<string, ZooType> };

const CASES: Array<{ type: string; dtype: DType }> = [
  { type: 'Q3_K', dtype: 'q3_k' },
  { type: 'IQ4_XS', dtype: 'iq4_xs' },
  { type: 'IQ3_XXS', dtype: 'iq3_xxs' },
  { type: 'IQ3_S', dtype: 'iq3_s' },
  { type: 'TQ2_0', dtype: 'tq2_0' },
];

for (const { type, dtype } of CASES) {
  test(`${type} decodes quant-zoo tensors bit-exactly as gguf-py does`, () => {
    const entry = manifest.types[type];
    assert.ok(entry, `manifest has ${type}`);
    const path = join(ZOO, entry.file);
    const header = readGgufHeader(path);
    const file = readFileSync(path);
    const names = Object.keys(entry.dequantized);
    assert.equal(names.length, 2);
    for (const name of names) {
      const ref = entry.dequantized[name];
      const info = header.tensors.find((t) => t.name === name);
      assert.ok(info, `tensor ${name}`);
      assert.equal(info.ggmlType, WEIGHT_DTYPES[dtype].ggmlType);
      const [rows, cols] = ref.shape;
      const bytes = new Uint8Array(file.buffer, file.byteOffset + info.offset, rows * bytesPerRow(dtype, cols));
      const got = dequantize(dtype, bytes, rows, cols);
      const refBuf = readFileSync(join(ZOO, ref.file));
      const want = new Float32Array(refBuf.buffer.slice(refBuf.byteOffset, refBuf.byteOffset + refBuf.length));
      assert.equal(want.length, rows * cols);
      const gotBits = new Uint32Array(got.buffer);
      const wantBits = new Uint32Array(want.buffer);
      let bad = 0;
      let first = -1;
      for (let i = 0; i < gotBits.length; i++) {
        if (gotBits[i] !== wantBits[i]) {
          bad++;
          if (first < 0) first = i;
        }
      }
      assert.equal(bad, 0, `${name}: ${bad} values differ, first at ${first}: ${got[first]} vs ${want[first]}`);
    }
  });
}

test('i-quant tables have ggml shapes: ksigns of even parity, sorted distinct grids', () => {
  assert.deepEqual(Array.from(KSIGNS_IQ2XS.subarray(0, 8)), [0, 129, 130, 3, 132, 5, 6, 135]);
  assert.equal(KSIGNS_IQ2XS[127], 255);
  for (const [grid, n] of [
    [IQ3XXS_GRID, 256],
    [IQ3S_GRID, 512],
  ] as const) {
    assert.equal(grid.length, n);
    for (let i = 1; i < n; i++) assert.ok(grid[i] > grid[i - 1], `grid sorted at ${i}`);
  }
});
