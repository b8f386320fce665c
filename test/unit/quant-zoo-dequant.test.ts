// Every GGUF type svc supports, decoded from the quant-zoo files and compared bit for bit with the
// dequantization of llama.cpp's gguf-py (two tensors per type, `<file>.<tensor>.f32`, manifest.json).
// The types checked come from WEIGHT_DTYPES (whatever the GGUF loader accepts), so a new dtype row
// is checked as soon as it exists; the zoo's other types are listed as not yet supported. Both the
// TypeScript reference decoders and the native ones (embed, on every CPU path) are checked.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALL_DTYPES, WEIGHT_DTYPES, dequantize, type DType } from '../../src/kernels/dtypes.js';
import { nativeInfo, nativeOps, setCpuPath, type CpuPath } from '../../src/kernels/native.js';
import { GGML_TYPE, readGgufHeader } from '../../src/model/loaders/gguf-header.js';
import { MODELS } from '../helpers/paths.js';

const ZOO = join(MODELS, 'quant-zoo');
const MANIFEST = join(ZOO, 'manifest.json');

interface ZooType {
  file: string;
  dequantized: Record<string, { file: string; shape: number[]; gguf_type: string }>;
}

const manifest = existsSync(MANIFEST) ? (JSON.parse(readFileSync(MANIFEST, 'utf8')) as { types: Record<string, ZooType> }) : null;

/** The weight dtype of each GGUF type name svc supports. */
const DTYPE_OF_GGUF_NAME = new Map<string, DType>(
  ALL_DTYPES.map((d) => [Object.entries(GGML_TYPE).find(([, id]) => id === WEIGHT_DTYPES[d].ggmlType)![0], d]),
);

/** Raw bytes of a tensor as stored in the GGUF file, with its row count and row length. */
function rawTensor(path: string, name: string): { data: Uint8Array; rows: number; cols: number; ggmlType: number } {
  const header = readGgufHeader(path);
  const info = header.tensors.find((t) => t.name === name);
  assert.ok(info, `${path}: no tensor ${name}`);
  const cols = info.dims[0];
  const rows = info.dims.slice(1).reduce((a, b) => a * b, 1);
  const t = Object.values(WEIGHT_DTYPES).find((w) => w.ggmlType === info.ggmlType)!;
  const bytes = (rows * cols * t.blockBytes) / t.blockElements;
  const file = readFileSync(path);
  return { data: new Uint8Array(file.buffer, file.byteOffset + info.offset, bytes), rows, cols, ggmlType: info.ggmlType };
}

function readF32(path: string): Float32Array {
  const b = readFileSync(path);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** Index of the first element whose bits differ (-1: identical). */
function firstDiff(a: Float32Array, b: Float32Array): number {
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}

const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(nativeInfo().bestCpuPath) + 1);

describe('quant-zoo: dequantization matches gguf-py bit for bit', { skip: !manifest && 'quant-zoo missing' }, () => {
  after(() => setCpuPath(nativeInfo().bestCpuPath));
  const types = Object.entries(manifest?.types ?? {});

  it('checks every supported dtype the zoo has (F16, BF16, Q8_0, Q4_0, the K-quants and the 32-element types at least)', (t) => {
    const checked = types.filter(([name]) => DTYPE_OF_GGUF_NAME.has(name)).map(([name]) => name);
    for (const name of ['F16', 'BF16', 'Q8_0', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'IQ4_NL', 'Q2_K', 'Q4_K', 'Q5_K', 'Q6_K']) {
      assert.ok(checked.includes(name), `${name} is not checked`);
    }
    const skipped = types.filter(([name]) => !DTYPE_OF_GGUF_NAME.has(name)).map(([name]) => name);
    t.diagnostic(`checked: ${checked.join(' ')}; not supported yet: ${skipped.join(' ') || 'none'}`);
  });

  for (const [name, entry] of types) {
    const dtype = DTYPE_OF_GGUF_NAME.get(name);
    if (!dtype) continue;
    it(`${name}: the reference decoder and the native one on every path (${PATHS.join(', ')})`, () => {
      for (const [tensor, ref] of Object.entries(entry.dequantized)) {
        const { data, rows, cols, ggmlType } = rawTensor(join(ZOO, entry.file), tensor);
        assert.equal(ggmlType, WEIGHT_DTYPES[dtype].ggmlType, `${name} ${tensor}: stored type`);
        assert.deepEqual([rows, cols], ref.shape, `${name} ${tensor}: shape`);
        const want = readF32(join(ZOO, ref.file));
        const got = dequantize(dtype, data, rows, cols);
        const at = firstDiff(got, want);
        assert.equal(at, -1, `${name} ${tensor}: reference decoder differs at ${at}: ${got[at]} vs gguf-py ${want[at]}`);
        const ids = Int32Array.from({ length: rows }, (_, i) => i);
        for (const path of PATHS) {
          setCpuPath(path);
          const native = new Float32Array(rows * cols);
          nativeOps.embed(ids, { dtype, rows, cols, data }, native);
          const n = firstDiff(native, want);
          assert.equal(n, -1, `${name} ${tensor} on ${path}: native decoder differs at ${n}: ${native[n]} vs gguf-py ${want[n]}`);
        }
      }
    });
  }
});
