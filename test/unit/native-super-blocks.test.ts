// The native Q3_K / IQ4_XS / IQ3_XXS / IQ3_S / TQ2_0 kernels on real quant-zoo tensors, on every CPU
// path this machine has: rows decode exactly as the reference decoders do, and matmuls (int8
// activations on the SIMD paths, decoded rows on the scalar one) equal the reference's up to rounding. The
// random-block cases of test/unit/native-ops.test.ts hold the kernels to the int8-rounded reference.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { nativeInfo, nativeOps, setCpuPath, type CpuPath } from '../../src/kernels/native.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { bytesPerRow, type DType } from '../../src/kernels/dtypes.js';
import type { WeightMatrix } from '../../src/kernels/ops.js';
import { readGgufHeader } from '../../src/model/loaders/gguf-header.js';
import { MODELS } from '../helpers/paths.js';
import { relL2, roundActivations } from '../helpers/int8-activations.js';

const ZOO = join(MODELS, 'quant-zoo');
const info = nativeInfo();
const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);

/** Activations with a few outliers, like a transformer's hidden state. */
function activations(n: number, seed: number): Float32Array {
  const x = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    x[i] = ((s / 2 ** 32) * 2 - 1) * (i % 37 === 0 ? 8 : 1);
  }
  return x;
}

const TYPES: Array<[string, DType]> = [
  ['q3_k', 'q3_k'],
  ['iq4_xs', 'iq4_xs'],
  ['iq3_xxs', 'iq3_xxs'],
  ['iq3_s', 'iq3_s'],
  ['tq2_0', 'tq2_0'],
];

for (const [suffix, dtype] of TYPES) {
  test(`${dtype}: native embed and matmul on quant-zoo tensors match the reference on every path`, () => {
    const path = join(ZOO, `stories260k-wide-${suffix}.gguf`);
    const header = readGgufHeader(path);
    const file = readFileSync(path);
    try {
      for (const name of ['blk.0.attn_q.weight', 'blk.0.ffn_down.weight']) {
        const t = header.tensors.find((x) => x.name === name);
        assert.ok(t, name);
        const [cols, rows] = t.dims;
        const w: WeightMatrix = {
          dtype,
          rows,
          cols,
          data: new Uint8Array(file.buffer, file.byteOffset + t.offset, rows * bytesPerRow(dtype, cols)),
        };
        const ids = Int32Array.from([0, rows - 1, 7, 7, 100]);
        const want = new Float32Array(ids.length * cols),
          got = new Float32Array(ids.length * cols);
        referenceOps.embed(ids, w, want);
        nativeOps.embed(ids, w, got);
        assert.deepEqual(got, want, `${name}: embed`);
        for (const n of [1, 5]) {
          const x = activations(n * cols, 17 + n);
          const y = new Float32Array(n * rows),
            yRounded = new Float32Array(n * rows);
          referenceOps.matmul(x, n, w, y);
          referenceOps.matmul(roundActivations(x, dtype), n, w, yRounded);
          for (const cpu of PATHS) {
            setCpuPath(cpu);
            const yn = new Float32Array(n * rows);
            nativeOps.matmul(x, n, w, yn);
            // Scalar multiplies the decoded rows by exact activations; SIMD paths are exact given int8 ones.
            const err = relL2(yn, cpu === 'scalar' ? y : yRounded);
            assert.ok(err <= 1e-6, `${name} n=${n} on ${cpu}: relative L2 ${err}`);
            assert.ok(relL2(yn, y) <= 3e-2, `${name} n=${n} on ${cpu}: relative L2 ${relL2(yn, y)} vs raw activations`);
          }
        }
      }
    } finally {
      setCpuPath(info.bestCpuPath);
    }
  });
}
