// The plain-TypeScript reference ops against hand-computed values and a dense attention oracle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { referenceOps as ops } from '../../src/kernels/reference.js';
import type { AttentionSeq, KvDType, KvLayer, WeightMatrix } from '../../src/kernels/ops.js';
import { f32ToBf16, quantizeRowQ8_0 } from '../../src/kernels/dequant.js';
import { ALL_KV_DTYPES, dequantize, KV_DTYPES } from '../../src/kernels/dtypes.js';
import { allocateKvCache } from '../../src/engine/kv-cache.js';
import type { ModelConfig } from '../../src/model/types.js';
import { llamaConfig } from '../helpers/model-config.js';

function f32Weight(rows: number, cols: number, values: number[]): WeightMatrix {
  return { dtype: 'f32', rows, cols, data: new Uint8Array(new Float32Array(values).buffer) };
}

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= tol, `${what}[${i}]: ${actual[i]} vs ${expected[i]} (tol ${tol})`);
  }
}

function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

test('matmul: f32 weights with bias, two input rows', () => {
  const w = f32Weight(2, 3, [1, 0, -1, 2, 1, 0]);
  const x = new Float32Array([1, 2, 3, -1, 0.5, 4]);
  const y = new Float32Array(4);
  ops.matmul(x, 2, w, y, new Float32Array([0.5, -1]));
  assertClose(y, [1 - 3 + 0.5, 2 + 2 - 1, -1 - 4 + 0.5, -2 + 0.5 - 1], 1e-6, 'y');
});

test('matmul: bf16 and q8_0 weights equal f32 matmul over their dequantized values', () => {
  const rand = seededRandom(7);
  const rows = 5;
  const cols = 64;
  const values = Float32Array.from({ length: rows * cols }, rand);
  const bf16 = new Uint16Array(rows * cols).map((_, i) => f32ToBf16(values[i]));
  const q8 = new Uint8Array(rows * 68);
  for (let r = 0; r < rows; r++) q8.set(quantizeRowQ8_0(values, cols, r * cols), r * 68);
  const x = Float32Array.from({ length: 3 * cols }, rand);
  for (const w of [
    { dtype: 'bf16', rows, cols, data: new Uint8Array(bf16.buffer) },
    { dtype: 'q8_0', rows, cols, data: q8 },
  ] as WeightMatrix[]) {
    const dense = dequantize(w.dtype, w.data, rows, cols);
    const y = new Float32Array(3 * rows);
    ops.matmul(x, 3, w, y);
    const want = new Float32Array(3 * rows);
    for (let i = 0; i < 3; i++)
      for (let r = 0; r < rows; r++) {
        let s = 0;
        for (let c = 0; c < cols; c++) s += x[i * cols + c] * dense[r * cols + c];
        want[i * rows + r] = s;
      }
    assertClose(y, want, 1e-5, w.dtype);
    // And the quantized weights are close to the originals, so this is the same product.
    assertClose(dense, values, w.dtype === 'bf16' ? 2e-3 : 5e-3, `${w.dtype} weights`);
  }
});

test('embed: copies the requested rows and rejects ids outside the table', () => {
  const table = f32Weight(3, 2, [0, 1, 10, 11, 20, 21]);
  const out = new Float32Array(6);
  ops.embed(new Int32Array([2, 0, 2]), table, out);
  assert.deepEqual([...out], [20, 21, 0, 1, 20, 21]);
  assert.throws(() => ops.embed(new Int32Array([3]), table, out), RangeError);
});

test('rmsnorm: x / rms(x) * weight, in place allowed', () => {
  const x = new Float32Array([3, 4, 1, 1]);
  ops.rmsnorm(x, 2, 2, new Float32Array([1, 2]), 0, x);
  const r = Math.sqrt(12.5);
  assertClose(x, [3 / r, 8 / r, 1, 2], 1e-6, 'out');
  const y = new Float32Array(2);
  ops.rmsnorm(new Float32Array([0, 0]), 1, 2, new Float32Array([1, 1]), 1e-6, y);
  assert.deepEqual([...y], [0, 0]);
});

test('rope: neox rotates halves, normal rotates adjacent pairs, position 0 is identity', () => {
  // headDim 4, theta 10000: pair 0 turns at 1 rad/position, pair 1 at 0.01.
  const neox = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0]);
  ops.rope(neox, 2, 1, 4, new Int32Array([1, 2]), 10000, 'neox');
  assertClose(neox, [Math.cos(1), 0, Math.sin(1), 0, 0, Math.cos(0.02), 0, Math.sin(0.02)], 1e-6, 'neox');
  const normal = new Float32Array([1, 0, 0, 0, 0, 0, 1, 0]);
  ops.rope(normal, 2, 1, 4, new Int32Array([1, 2]), 10000, 'normal');
  assertClose(normal, [Math.cos(1), Math.sin(1), 0, 0, 0, 0, Math.cos(0.02), Math.sin(0.02)], 1e-6, 'normal');
  const rand = seededRandom(3);
  const x = Float32Array.from({ length: 2 * 3 * 8 }, rand);
  const copy = x.slice();
  ops.rope(x, 2, 3, 8, new Int32Array([0, 0]), 10000, 'neox');
  assert.deepEqual(x, copy);
});

test('rope: rotating by a then by b equals rotating by a+b, and preserves norms', () => {
  const rand = seededRandom(11);
  const x = Float32Array.from({ length: 2 * 16 }, rand);
  for (const style of ['neox', 'normal'] as const) {
    const twice = x.slice();
    ops.rope(twice, 1, 2, 16, new Int32Array([5]), 500000, style);
    ops.rope(twice, 1, 2, 16, new Int32Array([7]), 500000, style);
    const once = x.slice();
    ops.rope(once, 1, 2, 16, new Int32Array([12]), 500000, style);
    assertClose(twice, once, 1e-5, style);
    const norm = (a: Float32Array) => Math.hypot(...a);
    assert.ok(Math.abs(norm(once) - norm(x)) < 1e-5);
  }
});

test('ropeMulti: each frequency turns at the position row of its section; equal rows are neox rope', () => {
  // headDim 8: pairs 0..3; sections [1, 1, 2] give pair 0 the first (temporal) row, pair 1 the
  // second (height), pairs 2 and 3 the third (width) — HF's mrope_section split, repeated for both halves.
  const rand = seededRandom(5);
  const n = 3;
  const x = Float32Array.from({ length: n * 2 * 8 }, rand);
  const rows = [
    [0, 4, 9],
    [1, 7, 2],
    [3, 3, 30],
  ];
  const got = x.slice();
  ops.ropeMulti(got, n, 2, 8, Int32Array.from(rows.flat()), Int32Array.from([1, 1, 2]), 10000);
  // Rotate with each row on its own; element k (and k + 4) must come from the row of pair k's section.
  const byRow = rows.map((r) => {
    const y = x.slice();
    ops.rope(y, n, 2, 8, Int32Array.from(r), 10000, 'neox');
    return y;
  });
  const sectionOf = [0, 1, 2, 2];
  for (let i = 0; i < got.length; i++) assert.equal(got[i], byRow[sectionOf[(i % 8) % 4]][i], `element ${i}`);
  // Same rows everywhere: plain neox rope, bit for bit.
  const same = x.slice();
  ops.ropeMulti(same, n, 2, 8, Int32Array.from([...rows[2], ...rows[2], ...rows[2]]), Int32Array.from([1, 1, 2]), 10000);
  assert.deepEqual(same, byRow[2]);
  assert.throws(() => ops.ropeMulti(x.slice(), n, 2, 8, new Int32Array(9), Int32Array.from([1, 1, 1]), 10000), RangeError);
});

test('siluMul and add', () => {
  const gate = new Float32Array([0, 1, -2]);
  const out = new Float32Array(3);
  ops.siluMul(gate, new Float32Array([5, 2, 3]), out, 3);
  assertClose(out, [0, 2 / (1 + Math.exp(-1)), (3 * -2) / (1 + Math.exp(2))], 1e-6, 'siluMul');
  ops.add(out, new Float32Array([1, 1, 1]), out, 2);
  assertClose(out, [1, 1 + 2 / (1 + Math.exp(-1)), (3 * -2) / (1 + Math.exp(2))], 1e-6, 'add');
});

// ---- attention ----------------------------------------------------------------------------

const NUM_HEADS = 4;
const NUM_KV_HEADS = 2;
const HEAD_DIM = 8;
const BLOCK_SIZE = 3;

function kvConfig(): ModelConfig {
  return llamaConfig({
    hiddenSize: NUM_HEADS * HEAD_DIM,
    intermediateSize: 8,
    numLayers: 1,
    numHeads: NUM_HEADS,
    numKvHeads: NUM_KV_HEADS,
    headDim: HEAD_DIM,
    vocabSize: 8,
    maxPositionEmbeddings: 64,
    bosTokenId: null,
    eosTokenIds: [],
  });
}

/** Dense causal GQA attention on contiguous [len, kvHeads, headDim] k/v, queries at the last qLen positions. */
function denseAttention(q: Float32Array, k: Float32Array, v: Float32Array, len: number, qLen: number, window: number | null): Float32Array {
  const out = new Float32Array(qLen * NUM_HEADS * HEAD_DIM);
  const scale = 1 / Math.sqrt(HEAD_DIM);
  for (let j = 0; j < qLen; j++) {
    const pos = len - qLen + j;
    for (let h = 0; h < NUM_HEADS; h++) {
      const g = Math.floor(h / (NUM_HEADS / NUM_KV_HEADS));
      const allowed = (t: number) => t <= pos && (window === null || pos - t < window);
      const logits: number[] = [];
      for (let t = 0; t < len; t++) {
        let s = 0;
        for (let d = 0; d < HEAD_DIM; d++) s += q[(j * NUM_HEADS + h) * HEAD_DIM + d] * k[(t * NUM_KV_HEADS + g) * HEAD_DIM + d];
        logits.push(allowed(t) ? s * scale : -Infinity);
      }
      const m = Math.max(...logits);
      const p = logits.map((l) => Math.exp(l - m));
      const z = p.reduce((a, b) => a + b, 0);
      for (let d = 0; d < HEAD_DIM; d++) {
        let acc = 0;
        for (let t = 0; t < len; t++) acc += (p[t] / z) * v[(t * NUM_KV_HEADS + g) * HEAD_DIM + d];
        out[(j * NUM_HEADS + h) * HEAD_DIM + d] = acc;
      }
    }
  }
  return out;
}

interface SeqData {
  len: number;
  qLen: number;
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  blocks: Int32Array;
}

/** Store each sequence's k/v into shuffled blocks, run paged attention over all of them at once. */
function pagedAttention(seqs: SeqData[], layer: KvLayer, window: number | null): Float32Array {
  const width = NUM_KV_HEADS * HEAD_DIM;
  for (const s of seqs) {
    const slots = Int32Array.from({ length: s.len }, (_, t) => s.blocks[Math.floor(t / BLOCK_SIZE)] * BLOCK_SIZE + (t % BLOCK_SIZE));
    // Store in two calls (cached prefix, then the new rows) as a chunked prefill would.
    const cut = s.len - s.qLen;
    ops.storeKv(layer, s.k, s.v, cut, slots);
    ops.storeKv(layer, s.k.subarray(cut * width), s.v.subarray(cut * width), s.qLen, slots.subarray(cut));
  }
  const rowWidth = NUM_HEADS * HEAD_DIM;
  const totalRows = seqs.reduce((a, s) => a + s.qLen, 0);
  const q = new Float32Array(totalRows * rowWidth);
  const attnSeqs: AttentionSeq[] = [];
  let row = 0;
  for (const s of seqs) {
    q.set(s.q, row * rowWidth);
    attnSeqs.push({ qStart: row, qLen: s.qLen, kvLen: s.len, blockTable: s.blocks });
    row += s.qLen;
  }
  const out = new Float32Array(totalRows * rowWidth);
  ops.attention(q, layer, attnSeqs, { numHeads: NUM_HEADS, scale: 1 / Math.sqrt(HEAD_DIM), slidingWindow: window }, out);
  return out;
}

function makeSeqs(rand: () => number): SeqData[] {
  const width = NUM_KV_HEADS * HEAD_DIM;
  const spec = [
    { len: 7, qLen: 7, blocks: [5, 1, 8] }, // whole prefill over three non-adjacent blocks
    { len: 8, qLen: 3, blocks: [2, 0, 6] }, // chunk after a cached prefix
    { len: 4, qLen: 1, blocks: [7, 3] }, // one decode step
  ];
  return spec.map(({ len, qLen, blocks }) => ({
    len,
    qLen,
    q: Float32Array.from({ length: qLen * NUM_HEADS * HEAD_DIM }, () => 2 * rand()),
    k: Float32Array.from({ length: len * width }, () => 2 * rand()),
    v: Float32Array.from({ length: len * width }, rand),
    blocks: Int32Array.from(blocks),
  }));
}

test('attention: paged, batched, GQA, chunked and decode rows match dense causal attention', () => {
  const seqs = makeSeqs(seededRandom(42));
  for (const window of [null, 2, 5]) {
    const [layer] = allocateKvCache(kvConfig(), 9, BLOCK_SIZE, 'f32');
    const out = pagedAttention(seqs, layer, window);
    let row = 0;
    for (const s of seqs) {
      const want = denseAttention(s.q, s.k, s.v, s.len, s.qLen, window);
      const got = out.subarray(row * NUM_HEADS * HEAD_DIM, (row + s.qLen) * NUM_HEADS * HEAD_DIM);
      assertClose(got, want, 1e-6, `window ${window} seq len ${s.len}`);
      row += s.qLen;
    }
  }
});

test("attention: window 1 returns each position's own value; query heads share kv heads as HF groups them", () => {
  const width = NUM_KV_HEADS * HEAD_DIM;
  // Value of kv head g at position t is constant 10*t + g.
  const len = 4;
  const v = Float32Array.from({ length: len * width }, (_, i) => 10 * Math.floor(i / width) + Math.floor((i % width) / HEAD_DIM));
  const rand = seededRandom(5);
  const seq: SeqData = {
    len,
    qLen: len,
    blocks: Int32Array.from([1, 0]),
    q: Float32Array.from({ length: len * NUM_HEADS * HEAD_DIM }, rand),
    k: Float32Array.from({ length: len * width }, rand),
    v,
  };
  const [layer] = allocateKvCache(kvConfig(), 2, BLOCK_SIZE, 'f32');
  const out = pagedAttention([seq], layer, 1);
  for (let t = 0; t < len; t++)
    for (let h = 0; h < NUM_HEADS; h++)
      for (let d = 0; d < HEAD_DIM; d++) assert.equal(out[(t * NUM_HEADS + h) * HEAD_DIM + d], 10 * t + Math.floor(h / 2));
});

test('attention: quantized caches stay close to the f32 result', () => {
  const seqs = makeSeqs(seededRandom(9));
  const outs = new Map<KvDType, Float32Array>();
  for (const dtype of ALL_KV_DTYPES) {
    const [layer] = allocateKvCache(kvConfig(), 9, BLOCK_SIZE, dtype);
    outs.set(dtype, pagedAttention(seqs, layer, null));
  }
  const f32 = outs.get('f32')!;
  // Max absolute error (outputs are averages of values in ±0.5), roughly in step with each dtype's
  // round-trip error at headDim 8.
  const tols: Record<KvDType, number> = {
    f32: 0,
    bf16: 1e-2,
    fp8: 8e-2,
    nvfp4: 0.15,
    turbo2: 0.4,
    turbo3: 0.25,
    turbo4: 0.15,
    turbo8: 1e-2,
  };
  for (const dtype of ALL_KV_DTYPES) {
    assertClose(outs.get(dtype)!, f32, tols[dtype], dtype);
    if (dtype !== 'f32') assert.notDeepEqual(outs.get(dtype), f32, dtype);
  }
});

test('attention: K and V are each stored and read in their own dtype, with their own scale', () => {
  const seqs = makeSeqs(seededRandom(11));
  /** values as a cache of `dtype` gives them back: encoded and decoded with the dtype's codec, a head vector at a time. */
  const through = (dtype: KvDType, scale: number, values: Float32Array): Float32Array => {
    const bytes = new Uint8Array(KV_DTYPES[dtype].rowBytes(HEAD_DIM));
    const out = new Float32Array(values.length);
    for (let o = 0; o < values.length; o += HEAD_DIM) {
      KV_DTYPES[dtype].encode(scale, values, o, HEAD_DIM, bytes, 0);
      KV_DTYPES[dtype].decode(scale, bytes, 0, HEAD_DIM, out, o);
    }
    return out;
  };
  const pairs: Array<[KvDType, KvDType]> = [
    ['bf16', 'fp8'],
    ['fp8', 'f32'],
    ['f32', 'bf16'],
    ['turbo3', 'nvfp4'],
    ['nvfp4', 'turbo8'],
    ['bf16', 'turbo2'],
  ];
  for (const [kDtype, vDtype] of pairs) {
    const [layer] = allocateKvCache(kvConfig(), 9, BLOCK_SIZE, [{ k: kDtype, v: vDtype }]);
    assert.deepEqual([layer.kDtype, layer.vDtype], [kDtype, vDtype]);
    layer.kScale = 0.5;
    layer.vScale = 0.25;
    const out = pagedAttention(seqs, layer, null);
    let row = 0;
    for (const s of seqs) {
      const want = denseAttention(s.q, through(kDtype, 0.5, s.k), through(vDtype, 0.25, s.v), s.len, s.qLen, null);
      const got = out.subarray(row * NUM_HEADS * HEAD_DIM, (row + s.qLen) * NUM_HEADS * HEAD_DIM);
      assertClose(got, want, 1e-6, `K ${kDtype}, V ${vDtype}, seq len ${s.len}`);
      row += s.qLen;
    }
  }
});

test('storeKv: rejects slots outside the cache', () => {
  const [layer] = allocateKvCache(kvConfig(), 2, BLOCK_SIZE, 'f32');
  const row = new Float32Array(NUM_KV_HEADS * HEAD_DIM);
  assert.throws(() => ops.storeKv(layer, row, row, 1, new Int32Array([6])), RangeError);
});
