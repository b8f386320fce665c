// --profile: the timing decorator over the ops, the step-part timers, the snapshot the engine
// returns and the table printed from it (src/engine/profile.ts, src/ops/profile-table.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpProfile, timeMethod, withProfile } from '../../src/engine/profile.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeOps } from '../../src/kernels/native.js';
import type { WeightMatrix } from '../../src/kernels/ops.js';
import { formatProfileTable } from '../../src/ops/profile-table.js';

function f32Weight(rows: number, cols: number): WeightMatrix {
  const values = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i));
  return { dtype: 'f32', rows, cols, data: new Uint8Array(values.buffer) };
}

test('every op is timed by name; results are those of the wrapped ops', () => {
  const profile = new OpProfile();
  const ops = withProfile(referenceOps, profile);
  assert.equal(ops.name, referenceOps.name);
  const w = ops.prepareWeight(f32Weight(8, 16));
  const x = Float32Array.from({ length: 3 * 16 }, (_, i) => Math.cos(i));
  const y = new Float32Array(3 * 8);
  const want = new Float32Array(3 * 8);
  ops.matmul(x, 3, w, y);
  referenceOps.matmul(x, 3, w, want);
  assert.deepStrictEqual(y, want);
  ops.matmul(x, 1, w, y);
  const out = new Float32Array(16);
  ops.rmsnorm(x, 1, 16, new Float32Array(16).fill(1), 1e-6, out);
  ops.add(out, out, out, 16);
  ops.add(out, out, out, 16);

  const snap = profile.snapshot();
  const calls = Object.fromEntries(snap.ops.map((r) => [r.name, r.calls]));
  assert.deepStrictEqual(calls, { prepareWeight: 1, matmul: 2, rmsnorm: 1, add: 2 });
  // The matmul breakdown by weight dtype and activation rows.
  assert.deepStrictEqual(snap.matmul.map((r) => [r.name, r.calls]).sort(), [
    ['f32 n=1', 1],
    ['f32 n=2-8', 1],
  ]);
  for (const r of [...snap.ops, ...snap.matmul]) assert.ok(r.totalMs >= 0 && r.maxMs <= r.totalMs && r.maxMs >= 0);
  assert.ok(snap.wallMs > 0);
  // Longest first.
  for (let i = 1; i < snap.ops.length; i++) assert.ok(snap.ops[i - 1]!.totalMs >= snap.ops[i]!.totalMs);
});

test('timeMethod times a method in place, keeping its receiver and result; timed wraps a function', () => {
  const profile = new OpProfile();
  const counter = {
    n: 0,
    bump(by: number): number {
      this.n += by;
      return this.n;
    },
  };
  timeMethod(profile, 'schedule', counter, 'bump');
  assert.equal(counter.bump(2), 2);
  assert.equal(counter.bump(3), 5);
  const sample = profile.timed('step', 'sample', (a: number, b: number) => a * b);
  assert.equal(sample(6, 7), 42);
  const step = Object.fromEntries(profile.snapshot().step.map((r) => [r.name, r.calls]));
  assert.deepStrictEqual(step, { schedule: 2, sample: 1 });
});

test('the table: one aligned section per group, shares of forward time, load ops without a share', () => {
  const text = formatProfileTable({
    wallMs: 12_345,
    ops: [
      { name: 'matmul', calls: 100, totalMs: 800, maxMs: 20 },
      { name: 'prepareWeight', calls: 10, totalMs: 500, maxMs: 90 },
      { name: 'attention', calls: 100, totalMs: 100, maxMs: 2 },
    ],
    matmul: [{ name: 'q8_0 n=1', calls: 100, totalMs: 800, maxMs: 20 }],
    step: [
      { name: 'forward', calls: 10, totalMs: 1000, maxMs: 150 },
      { name: 'sample', calls: 10, totalMs: 50, maxMs: 6 },
    ],
  });
  const lines = text.split('\n');
  assert.match(
    lines[0]!,
    /^Profile \(--profile\): 12\.3 s since the engine started; ops 900\.0 ms of 1000\.0 ms in forward passes \(90\.0%\)$/,
  );
  assert.ok(text.endsWith('\n'));
  const row = (name: string) =>
    lines
      .find((l) => l.startsWith(`${name} `))!
      .trim()
      .split(/\s+/);
  assert.deepStrictEqual(row('matmul'), ['matmul', '100', '800.0', '80.0%', '8000.0', '20.00']);
  assert.deepStrictEqual(row('prepareWeight'), ['prepareWeight', '10', '500.0', '—', '50000.0', '90.00']);
  assert.deepStrictEqual(row('q8_0'), ['q8_0', 'n=1', '100', '800.0', '80.0%', '8000.0', '20.00']);
  assert.deepStrictEqual(row('sample'), ['sample', '10', '50.0', '4.8%', '5000.0', '6.00']);
  // Columns line up: every row of the table has the same width.
  const table = lines.slice(1).filter((l) => l !== '');
  assert.equal(new Set(table.map((l) => l.length)).size, 1);
});

test('attention is timed once as an op and again as decode-only or with-prefill calls', () => {
  const profile = new OpProfile();
  const ops = withProfile(referenceOps, profile);
  const headDim = 4;
  const kv = {
    kDtype: 'f32' as const,
    vDtype: 'f32' as const,
    numBlocks: 2,
    blockSize: 4,
    numKvHeads: 1,
    headDim,
    k: new Uint8Array(2 * 4 * headDim * 4),
    v: new Uint8Array(2 * 4 * headDim * 4),
    kScale: 1,
    vScale: 1,
  };
  const q = Float32Array.from({ length: 3 * headDim }, (_, i) => Math.sin(i));
  const out = new Float32Array(3 * headDim);
  const params = { numHeads: 1, scale: 0.5, slidingWindow: null, softcap: null };
  const decode = [{ qStart: 0, qLen: 1, kvLen: 3, blockTable: Int32Array.of(0) }];
  ops.attention(q, kv, decode, params, out);
  ops.attention(q, kv, decode, params, out);
  ops.attention(q, kv, [...decode, { qStart: 1, qLen: 2, kvLen: 2, blockTable: Int32Array.of(1) }], params, out);
  const snap = profile.snapshot();
  assert.equal(snap.ops.find((r) => r.name === 'attention')?.calls, 3);
  assert.deepStrictEqual(snap.matmul.map((r) => [r.name, r.calls]).sort(), [
    ['attention, decode rows only', 2],
    ['attention, with prefill rows', 1],
  ]);
});

test('matmulShared is kept and timed when the backend has it, and absent when it does not', () => {
  assert.equal(withProfile(referenceOps, new OpProfile()).matmulShared, undefined);
  const profile = new OpProfile();
  const ops = withProfile(nativeOps, profile);
  const a = ops.prepareWeight(f32Weight(8, 32));
  const b = ops.prepareWeight(f32Weight(4, 32));
  const x = Float32Array.from({ length: 32 }, (_, i) => Math.cos(i));
  const ya = new Float32Array(8);
  const yb = new Float32Array(4);
  ops.matmulShared!(x, 1, [
    { w: a, y: ya },
    { w: b, y: yb },
  ]);
  const want = new Float32Array(8);
  nativeOps.matmul(x, 1, a, want);
  assert.deepStrictEqual(ya, want);
  const snap = profile.snapshot();
  assert.equal(snap.ops.find((r) => r.name === 'matmulShared')?.calls, 1);
  assert.deepStrictEqual(
    snap.matmul.map((r) => [r.name, r.calls]),
    [['shared f32+f32 n=1', 1]],
  );
});
