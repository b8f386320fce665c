// The ops vision encoders add (layerNorm, gelu, bidirectionalAttention): native against the
// plain-TypeScript reference on every kernel path this CPU has, odd shapes, in place, serial and
// pooled sizes.
//
// Tolerances (the reference computes in f64):
//   layerNorm: max |err| <= 1e-5 * max |y| (f32 lanes, rows offset far from zero too).
//   gelu: per element, |err| <= 2e-5 * |y| over x in [-8, 8] (both tails keep relative precision: the
//     SIMD erf is Numerical Recipes' erfc, rel. error 1.2e-7, and tanh / quick go through exp), and
//     max |err| <= 1e-6 * max |y| over [-60, 60].
//   bidirectionalAttention: max |err| <= 1e-5 * max |y| (f32 GEMMs for both products).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { nativeInfo, nativeOps, setCpuPath, type CpuPath } from '../../src/kernels/native.js';
import { referenceOps } from '../../src/kernels/reference.js';
import type { GeluKind } from '../../src/kernels/ops.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomF32(rand: () => number, len: number, amp = 1, offset = 0): Float32Array {
  const a = new Float32Array(len);
  for (let i = 0; i < len; i++) a[i] = offset + (rand() * 2 - 1) * amp;
  return a;
}

/** max |actual - expected| <= tol * max |expected|. */
function assertClose(actual: Float32Array, expected: Float32Array, tol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let scale = 1e-30;
  for (const v of expected) scale = Math.max(scale, Math.abs(v));
  let worst = 0,
    at = -1;
  for (let i = 0; i < actual.length; i++) {
    const e = Math.abs(actual[i] - expected[i]);
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  assert.ok(
    worst <= tol * scale,
    `${what}: max error ${worst} at ${at} (got ${actual[at]}, want ${expected[at]}) exceeds ${tol} * ${scale}`,
  );
}

const info = nativeInfo();
const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);
const KINDS: GeluKind[] = ['erf', 'tanh', 'quick'];

for (const path of PATHS) {
  describe(`vision ops on the ${path} path`, () => {
    before(() => setCpuPath(path));
    after(() => setCpuPath(info.bestCpuPath));

    it('layerNorm matches, rows far from zero and in place too', () => {
      const rand = rng(1);
      for (const [rows, dim, offset] of [
        [3, 37, 0],
        [5, 1152, 40],
        [40, 2048, -3],
      ]) {
        const x = randomF32(rand, rows * dim, 3, offset);
        const w = randomF32(rand, dim, 1, 1);
        const b = randomF32(rand, dim);
        const want = new Float32Array(rows * dim),
          got = new Float32Array(rows * dim);
        referenceOps.layerNorm(x, rows, dim, w, b, 1e-6, want);
        nativeOps.layerNorm(x, rows, dim, w, b, 1e-6, got);
        assertClose(got, want, 1e-5, `layerNorm ${rows}x${dim}`);
        nativeOps.layerNorm(x, rows, dim, w, b, 1e-6, x);
        assertClose(x, want, 1e-5, `layerNorm in place ${rows}x${dim}`);
      }
    });

    it('gelu (erf, tanh, quick) matches element by element in both tails, in place and at parallel lengths', () => {
      const rand = rng(2);
      for (const kind of KINDS) {
        // A ramp over [-8, 8] (every tail element checked relatively), then random wide values.
        const ramp = Float32Array.from({ length: 16001 }, (_, i) => -8 + i / 1000);
        const want = new Float32Array(ramp.length),
          got = new Float32Array(ramp.length);
        referenceOps.gelu(ramp, want, ramp.length, kind);
        nativeOps.gelu(ramp, got, ramp.length, kind);
        for (let i = 0; i < ramp.length; i++) {
          const err = Math.abs(got[i] - want[i]);
          assert.ok(err <= 2e-5 * Math.abs(want[i]), `gelu ${kind}(${ramp[i]}): got ${got[i]}, want ${want[i]}`);
        }
        for (const len of [1, 15, 1000, 300001]) {
          const x = randomF32(rand, len, 60);
          const w = new Float32Array(len),
            g = new Float32Array(len);
          referenceOps.gelu(x, w, len, kind);
          nativeOps.gelu(x, g, len, kind);
          assertClose(g, w, 1e-6, `gelu ${kind} len=${len}`);
          nativeOps.gelu(x, x, len, kind);
          assert.deepEqual(x, g, `gelu ${kind} in place len=${len}`);
        }
      }
    });

    it('bidirectionalAttention matches (single key, pooling query, odd head sizes, pooled sizes, out aliasing q)', () => {
      const rand = rng(3);
      for (const [nq, nk, heads, hd] of [
        [1, 1, 1, 1],
        [9, 9, 4, 6],
        [1, 9, 2, 8],
        [70, 45, 3, 72],
        [300, 260, 2, 64],
      ]) {
        const width = heads * hd;
        const q = randomF32(rand, nq * width, 2),
          k = randomF32(rand, nk * width, 2),
          v = randomF32(rand, nk * width);
        const scale = 1 / Math.sqrt(hd);
        const want = new Float32Array(nq * width),
          got = new Float32Array(nq * width);
        referenceOps.bidirectionalAttention(q, nq, k, v, nk, heads, hd, scale, want);
        nativeOps.bidirectionalAttention(q, nq, k, v, nk, heads, hd, scale, got);
        assertClose(got, want, 1e-5, `attention nq=${nq} nk=${nk} heads=${heads} hd=${hd}`);
        nativeOps.bidirectionalAttention(q, nq, k, v, nk, heads, hd, scale, q);
        assertClose(q, want, 1e-5, `attention into q, nq=${nq} nk=${nk}`);
      }
      // No queries: nothing to do, nothing written.
      nativeOps.bidirectionalAttention(new Float32Array(0), 0, new Float32Array(4), new Float32Array(4), 1, 1, 4, 1, new Float32Array(0));
    });
  });
}

describe('vision ops: argument checks', () => {
  it('throws TypeError for wrong sizes, kinds and overlaps instead of crashing', () => {
    const f = (n: number) => new Float32Array(n);
    assert.throws(() => nativeOps.layerNorm(f(15), 2, 8, f(8), f(8), 1e-6, f(16)), TypeError);
    assert.throws(() => nativeOps.layerNorm(f(16), 2, 8, f(8), f(7), 1e-6, f(16)), TypeError);
    assert.throws(() => nativeOps.gelu(f(4), f(3), 4, 'erf'), TypeError);
    assert.throws(() => nativeOps.gelu(f(4), f(4), 4, 'relu' as GeluKind), /kind must be/);
    assert.throws(() => nativeOps.bidirectionalAttention(f(8), 1, f(7), f(8), 1, 2, 4, 1, f(8)), TypeError);
    assert.throws(() => nativeOps.bidirectionalAttention(f(8), 1, f(8), f(8), 0, 2, 4, 1, f(8)), TypeError);
    const kv = f(16);
    assert.throws(
      () => nativeOps.bidirectionalAttention(f(8), 1, kv.subarray(0, 8), kv.subarray(8), 1, 2, 4, 1, kv.subarray(4, 12)),
      /overlap/,
    );
  });
});
