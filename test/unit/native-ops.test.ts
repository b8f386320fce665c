// Every native op against the plain-TypeScript reference, on every kernel path this CPU has
// (scalar, AVX2, AVX-512, AMX), with odd shapes and several thread counts. Q8_0 / Q4_0 / Q4_1 / Q5_0 /
// Q5_1 / IQ4_NL / Q4_K / Q5_K / Q6_K weights are checked both as loaded (GGUF blocks) and as
// nativeOps.prepareWeight repacks them (16-row groups, native/packed.h), which every path multiplies
// and embeds from.
//
// Tolerances (relative to the reference, which sums in f64):
//   f32 / f16 / bf16 / K-quant weights: f32 accumulation only -> max |err| <= 1e-4 * max |y|.
//   Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL (and K-quants on SIMD paths): activations are quantized
//     to int8 blocks first (32-element types: with f16 block scales, as llama.cpp) -> relative L2 error
//     <= 1e-2 against the reference on the raw activations, and <= 1e-5 against the reference fed the
//     same int8-rounded activations (which pins the integer kernels down exactly).
//   embed: exact decode (1e-6 relative). rmsnorm, rope, ropeMulti, siluMul: 1e-5. add: exact.
//   storeKv: byte-identical cache contents, every KV dtype (the shared encoders round each f32 step as
//     the reference does). attention: 2e-5 (both read the same cache bytes; turbo K / V are taken in
//     the rotated domain natively and un-rotated by the reference, which costs a few f32 roundings);
//     5e-3 where bf16 / fp8 K and V take the bf16 dot products (attentionTolerance).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  isPackedWeight,
  nativeArgmax,
  nativeDTypeTraits,
  nativeOps,
  nativeInfo,
  setCpuPath,
  setNumThreads,
  type CpuPath,
} from '../../src/kernels/native.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { f32ToBf16, f32ToF16, quantizeRowQ4_0, quantizeRowQ8_0 } from '../../src/kernels/dequant.js';
import { decodeFp8 } from '../../src/kernels/kv-codec.js';
import { ALL_DTYPES, ALL_KV_DTYPES, KV_DTYPES, WEIGHT_DTYPES, type DType, type KvDType } from '../../src/kernels/dtypes.js';
import { matmulParts, type AttentionSeq, type KvLayer, type WeightMatrix } from '../../src/kernels/ops.js';
import { readGgufHeader } from '../../src/model/loaders/gguf-header.js';
import { argmaxLoop } from '../../src/engine/sampler.js';
import { FIXTURES } from '../helpers/paths.js';
import { maxAbs, randomF32, rng } from '../helpers/random-arrays.js';
import { relL2, roundActivations } from '../helpers/int8-activations.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// ---- helpers ----

/** max |actual - expected| <= tol * max |expected| (plus a tiny floor for all-zero outputs). */
function assertClose(actual: Float32Array, expected: Float32Array, tol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  const scale = Math.max(maxAbs(expected), 1e-30);
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

/** A [rows, cols] weight in `dtype` built from random values (K-quants: random blocks with sane scales). */
function makeWeight(rand: () => number, dtype: DType, rows: number, cols: number): WeightMatrix {
  const { blockElements: elements, blockBytes: bytes } = WEIGHT_DTYPES[dtype];
  const data = new Uint8Array(rows * (cols / elements) * bytes);
  const put16 = (p: number, h: number) => {
    data[p] = h & 0xff;
    data[p + 1] = h >> 8;
  };
  const src = randomF32(rand, rows * cols);
  switch (dtype) {
    case 'f32':
      new Uint8Array(src.buffer).forEach((b, i) => {
        data[i] = b;
      });
      break;
    case 'f16':
      for (let i = 0; i < src.length; i++) put16(2 * i, f32ToF16(src[i]));
      break;
    case 'bf16':
      for (let i = 0; i < src.length; i++) put16(2 * i, f32ToBf16(src[i]));
      break;
    case 'q8_0':
    case 'q4_0': {
      const rowBytes = (cols / 32) * bytes;
      for (let r = 0; r < rows; r++) {
        const q = dtype === 'q8_0' ? quantizeRowQ8_0(src, cols, r * cols) : quantizeRowQ4_0(src, cols, r * cols);
        data.set(q, r * rowBytes);
      }
      break;
    }
    default: {
      // Any bit pattern is a valid K-quant block except for the f16 scale fields: keep those small and finite.
      for (let i = 0; i < data.length; i++) data[i] = Math.floor(rand() * 256);
      const nblocks = data.length / bytes;
      for (let b = 0; b < nblocks; b++) {
        const p = b * bytes;
        const d = () => f32ToF16(0.002 + rand() * 0.01);
        if (dtype === 'q2_k') {
          put16(p + 80, d());
          put16(p + 82, d());
        } else if (dtype === 'q6_k') put16(p + 208, d());
        else if (dtype in SUPER_BLOCK_SCALE_AT) put16(p + SUPER_BLOCK_SCALE_AT[dtype as keyof typeof SUPER_BLOCK_SCALE_AT], d());
        else {
          put16(p, d());
          put16(p + 2, d());
        }
      }
    }
  }
  return { dtype, rows, cols, data };
}

/** Where the f16 super-block scale sits in the Q3_K / IQ / TQ2_0 blocks (ggml-common.h). */
const SUPER_BLOCK_SCALE_AT = { q3_k: 108, iq4_xs: 0, iq3_xxs: 0, iq3_s: 0, tq2_0: 64 } as const;

/** A zeroed layer; `dtype` is both sides' dtype, or K's and V's. */
function makeLayer(
  dtype: KvDType | { k: KvDType; v: KvDType },
  numBlocks: number,
  blockSize: number,
  numKvHeads: number,
  headDim: number,
  kScale = 1,
  vScale = 1,
): KvLayer {
  const { k: kDtype, v: vDtype } = typeof dtype === 'string' ? { k: dtype, v: dtype } : dtype;
  const rows = numBlocks * blockSize * numKvHeads;
  return {
    kDtype,
    vDtype,
    numBlocks,
    blockSize,
    numKvHeads,
    headDim,
    k: new Uint8Array(rows * KV_DTYPES[kDtype].rowBytes(headDim)),
    v: new Uint8Array(rows * KV_DTYPES[vDtype].rowBytes(headDim)),
    kScale,
    vScale,
  };
}

/**
 * Attention's tolerance (relative to the largest output). bf16 and fp8 K / V on an AVX512_BF16 CPU take
 * the bf16 dot products (native/attention.cc): queries and softmax weights are rounded to bf16 (8
 * significant bits), which measured up to 3.0e-3 here; everything else reads the same cache bytes as
 * the reference in f32 (2e-5).
 */
function attentionTolerance(path: CpuPath, k: KvDType, v: KvDType, headDim: number): number {
  const bf16Dots = (path === 'avx512' || path === 'amx') && info.features.avx512bf16 && headDim % 32 === 0;
  const side = (d: KvDType) => d === 'bf16' || d === 'fp8';
  return bf16Dots && side(k) && side(v) ? 5e-3 : 2e-5;
}

// ---- the suites ----

const info = nativeInfo();
const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);
const DEFAULT_THREADS = info.threads;

describe('native kernels: runtime', () => {
  it('reports its path and threads', () => {
    assert.ok(ORDER.includes(info.cpuPath));
    assert.ok(info.threads >= 1);
    assert.equal(typeof info.features.avx2, 'boolean');
  });
  it('honours SVC_CPU_FEATURES and SVC_THREADS at start-up', () => {
    const script = `import('${new URL('../../src/kernels/native.js', import.meta.url).href}').then((m) => console.log(JSON.stringify(m.nativeInfo())))`;
    const r = spawnSync(process.execPath, ['-e', script], {
      env: { ...process.env, SVC_CPU_FEATURES: 'scalar', SVC_THREADS: '3' },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const child = JSON.parse(r.stdout) as { cpuPath: string; threads: number };
    assert.equal(child.cpuPath, 'scalar');
    assert.equal(child.threads, 3);
  });
  it('takes SVC_SPIN_US at start-up, and fails on an invalid SVC_THREADS with the EnvError message', () => {
    const script = `import('${new URL('../../src/kernels/native.js', import.meta.url).href}').then((m) => console.log(JSON.stringify(m.nativeInfo())))`;
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['-e', script], { env: { ...process.env, ...env }, encoding: 'utf8' });
    const spin = run({ SVC_SPIN_US: '250' });
    assert.equal(spin.status, 0, spin.stderr);
    assert.equal((JSON.parse(spin.stdout) as { spinUs: number }).spinUs, 250);
    const bad = run({ SVC_THREADS: 'many' });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /SVC_THREADS: expected an integer from 1 to 1024, got "many"/);
    const missing = ORDER.slice(ORDER.indexOf(info.bestCpuPath) + 1)[0];
    if (missing) {
      // A path this CPU lacks: a warning, and the best path stays.
      const r = run({ SVC_CPU_FEATURES: missing });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, new RegExp(`SVC_CPU_FEATURES=${missing} is not supported by this CPU; using ${info.bestCpuPath}`));
      assert.equal((JSON.parse(r.stdout) as { cpuPath: string }).cpuPath, info.bestCpuPath);
    }
  });
  it('has the same dtype traits rows as src/kernels/dtypes.ts, at the same codes', () => {
    const native = nativeDTypeTraits();
    for (const dtype of ALL_DTYPES) {
      const t = WEIGHT_DTYPES[dtype];
      const row = native.weights[t.code];
      assert.deepEqual(
        [row.name, row.blockElements, row.blockBytes, row.packed],
        [dtype, t.blockElements, t.blockBytes, t.packedCode ?? -1],
        `weight dtype ${dtype}`,
      );
      if (t.packedCode !== null) {
        const packed = native.weights[t.packedCode];
        assert.deepEqual([packed.blockElements, packed.blockBytes], [t.blockElements, t.blockBytes], `${dtype} packed`);
      }
    }
    const rows = native.weights;
    assert.equal(rows.length, ALL_DTYPES.length + ALL_DTYPES.filter((d) => WEIGHT_DTYPES[d].packedCode !== null).length);
    assert.deepEqual(
      native.kv.map((r) => [r.name, r.align, r.scaled, r.rotated]),
      ALL_KV_DTYPES.map((d) => [d, KV_DTYPES[d].align, KV_DTYPES[d].scaled, KV_DTYPES[d].rotated]),
    );
    ALL_KV_DTYPES.forEach((d, i) => {
      assert.equal(KV_DTYPES[d].code, i, d);
      assert.deepEqual(
        native.kv[i].rowBytes,
        native.kv[i].rowBytes.map((_, hd) => KV_DTYPES[d].rowBytes(hd)),
        `${d} row bytes per head dim`,
      );
      assert.equal(native.kv[i].rowBytes.length, 513);
    });
  });
  it('rejects a path the CPU lacks and unknown names', () => {
    assert.throws(() => setCpuPath('sse9' as CpuPath), TypeError);
    for (const path of ORDER.slice(ORDER.indexOf(info.bestCpuPath) + 1)) assert.throws(() => setCpuPath(path), path);
  });
  it('repacks Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / K-quant weights once and leaves other dtypes as they are', () => {
    const rand = rng(14);
    // Padded to whole 16-row groups; the 32-element types and Q6_K keep their bytes per block, Q4_K /
    // Q5_K add 4 per row and super-block (native/packed.h).
    const perBlock: Partial<Record<DType, number>> = {
      q8_0: 34,
      q4_0: 18,
      q4_1: 20,
      q5_0: 22,
      q5_1: 24,
      iq4_nl: 18,
      q4_k: 148,
      q5_k: 180,
      q6_k: 210,
    };
    for (const [dtype, bytes] of Object.entries(perBlock) as [DType, number][]) {
      const cols = WEIGHT_DTYPES[dtype].blockElements * 2;
      const w = makeWeight(rand, dtype, 21, cols);
      const p = nativeOps.prepareWeight(w);
      assert.ok(isPackedWeight(p) && !isPackedWeight(w), dtype);
      assert.deepEqual([p.dtype, p.rows, p.cols], [w.dtype, w.rows, w.cols]);
      assert.equal(p.data.byteLength, 32 * 2 * bytes, dtype);
      assert.equal(nativeOps.prepareWeight(p), p, 'preparing twice is a no-op');
    }
    for (const dtype of ['f32', 'bf16', 'q2_k'] as DType[]) {
      const w = makeWeight(rand, dtype, 3, 256);
      assert.equal(nativeOps.prepareWeight(w), w, dtype);
    }
  });
});

for (const path of PATHS) {
  describe(`native kernels on the ${path} path`, () => {
    before(() => setCpuPath(path));
    after(() => setCpuPath(info.bestCpuPath));

    const FLOAT_DTYPES: DType[] = ['f32', 'f16', 'bf16'];
    const K_DTYPES: DType[] = ['q2_k', 'q4_k', 'q5_k', 'q6_k', 'q3_k', 'iq4_xs', 'iq3_xxs', 'iq3_s', 'tq2_0'];
    // The other 32-element block types: int8 kernels on the SIMD paths, decoded to f32 on scalar.
    const B32_DTYPES: DType[] = ['q4_1', 'q5_0', 'q5_1', 'iq4_nl'];

    it('argmax picks what the sampler loop picks: first of ties, NaN never, 0 when nothing beats -Infinity', () => {
      const rand = rng(17);
      const cases: Float32Array[] = [new Float32Array(0), Float32Array.of(NaN), Float32Array.of(-Infinity, -Infinity)];
      for (const n of [1, 7, 15, 16, 17, 63, 64, 65, 130, 1000, 151936]) {
        const x = randomF32(rand, n, 10);
        cases.push(x);
        // The largest value repeated later (the first must win), NaN and -0 / +0 ties sprinkled in.
        const y = x.slice();
        const at = Math.floor(rand() * n);
        y[at] = 1e6;
        y[Math.min(n - 1, at + 1 + Math.floor(rand() * n))] = 1e6;
        for (let i = 0; i < n; i += 5) if (i !== at) y[i] = NaN;
        cases.push(y);
        cases.push(new Float32Array(n).fill(NaN));
        const z = new Float32Array(n).fill(-Infinity);
        z[n - 1] = -0;
        if (n > 2) z[n - 2] = 0;
        cases.push(z);
        const w = x.slice();
        w[n - 1] = Infinity;
        cases.push(w);
      }
      for (const c of cases) assert.equal(nativeArgmax(c), argmaxLoop(c), `length ${c.length}`);
    });

    it('matmulShared gives each part the bits of its own matmul (mixed dtypes and activation formats, n = 1 … 40, bias)', () => {
      const rand = rng(91);
      const groups: DType[][] = [
        ['q8_0', 'q8_0', 'q8_0'],
        ['q4_k', 'q4_k', 'q6_k'],
        ['q5_k', 'q8_0', 'q4_0', 'f32'],
        ['bf16', 'iq4_xs'],
        ['q5_0', 'q4_1', 'iq4_nl'],
      ];
      for (const dtypes of groups) {
        const cols = 512;
        const ws = dtypes.map((dt, i) => nativeOps.prepareWeight(makeWeight(rand, dt, [48, 16, 200, 33][i]!, cols)));
        for (const n of [1, 2, 5, 17, 40]) {
          const x = randomF32(rand, n * cols);
          const parts = ws.map((w, i) => ({
            w,
            y: new Float32Array(n * w.rows),
            bias: i === 1 ? randomF32(rand, w.rows) : undefined,
          }));
          nativeOps.matmulShared!(x, n, parts);
          for (const p of parts) {
            const want = new Float32Array(n * p.w.rows);
            nativeOps.matmul(x, n, p.w, want, p.bias);
            assert.deepStrictEqual(p.y, want, `${dtypes.join('+')} ${p.w.dtype} n=${n}`);
          }
        }
      }
      // matmulParts without matmulShared (the reference ops) runs the separate matmuls.
      const w = makeWeight(rand, 'f32', 8, 64);
      const x = randomF32(rand, 2 * 64);
      const y = new Float32Array(16);
      const want = new Float32Array(16);
      matmulParts(referenceOps, x, 2, [{ w, y }]);
      referenceOps.matmul(x, 2, w, want);
      assert.deepStrictEqual(y, want);
      const q = nativeOps.prepareWeight(makeWeight(rand, 'q8_0', 16, 64));
      assert.throws(
        () =>
          nativeOps.matmulShared!(x, 2, [
            { w: q, y: new Float32Array(32) },
            { w: makeWeight(rand, 'f32', 4, 32), y },
          ]),
        /x's width/,
      );
      assert.throws(() => nativeOps.matmulShared!(x, 2, [{ w: q, y: x.subarray(0, 32) }]), /overlap/);
      const shared = new Float32Array(32);
      assert.throws(
        () =>
          nativeOps.matmulShared!(x, 2, [
            { w: q, y: shared },
            { w: q, y: shared },
          ]),
        /overlap each other/,
      );
    });

    it('matmul with f32 / f16 / bf16 weights matches the reference (odd shapes, n = 1, 3, 17, bias)', () => {
      const rand = rng(1);
      for (const dtype of FLOAT_DTYPES) {
        // 2100 columns span three 1024-column blocks with a ragged end.
        for (const [rows, cols] of [
          [19, 37],
          [64, 128],
          [5, 200],
          [9, 2100],
        ]) {
          const w = makeWeight(rand, dtype, rows, cols);
          for (const n of [1, 3, 17]) {
            const x = randomF32(rand, n * cols);
            const bias = n === 3 ? randomF32(rand, rows) : undefined;
            const want = new Float32Array(n * rows),
              got = new Float32Array(n * rows);
            referenceOps.matmul(x, n, w, want, bias);
            nativeOps.matmul(x, n, w, got, bias);
            assertClose(got, want, 1e-4, `${dtype} [${rows}x${cols}] n=${n}`);
          }
        }
      }
    });

    /**
     * The int8-activation contract: close to the reference, and exact given the int8-rounded activations.
     * `native` is the weight nativeOps multiplies (w itself, or w as prepareWeight packed it).
     */
    function checkInt8Matmul(
      x: Float32Array,
      n: number,
      w: WeightMatrix,
      bias: Float32Array | undefined,
      what: string,
      native = w,
      rawTol = 1e-2,
    ): void {
      const got = new Float32Array(n * w.rows);
      nativeOps.matmul(x, n, native, got, bias);
      const want = new Float32Array(n * w.rows);
      referenceOps.matmul(x, n, w, want, bias);
      const err = relL2(got, want);
      assert.ok(err <= rawTol, `${what}: relative L2 ${err} vs raw activations`);
      const wantExact = new Float32Array(n * w.rows);
      referenceOps.matmul(roundActivations(x, w.dtype), n, w, wantExact, bias);
      assertClose(got, wantExact, 1e-5, `${what} vs int8-rounded activations`);
    }

    it('matmul with Q8_0 / Q4_0 weights: int8 activations within 1e-2, exact kernels within 1e-5', () => {
      const rand = rng(2);
      for (const dtype of ['q8_0', 'q4_0'] as DType[]) {
        // 96 columns = 3 blocks: an odd block count takes the single-block tail.
        for (const [rows, cols] of [
          [19, 96],
          [33, 256],
          [8, 32],
          [5, 2080],
        ]) {
          const w = makeWeight(rand, dtype, rows, cols);
          for (const n of [1, 3, 17]) {
            const x = randomF32(rand, n * cols);
            checkInt8Matmul(x, n, w, n === 17 ? randomF32(rand, rows) : undefined, `${dtype} [${rows}x${cols}] n=${n}`);
          }
        }
      }
    });

    it('matmul with packed Q8_0 / Q4_0 weights: int8 activations within 1e-2, exact kernels within 1e-5', () => {
      const rand = rng(15);
      for (const dtype of ['q8_0', 'q4_0'] as DType[]) {
        // Row counts below, at and past a 16-row group; n covers single rows, VNNI tiles and remainders,
        // and 16+ rows (AMX tiles plus leftover rows on the amx path).
        for (const [rows, cols] of [
          [19, 96],
          [33, 256],
          [8, 32],
          [5, 2080],
          [64, 1024],
          [16, 3072],
        ]) {
          const w = makeWeight(rand, dtype, rows, cols);
          const packed = nativeOps.prepareWeight(w);
          for (const n of [1, 2, 4, 5, 16, 17, 35]) {
            if (cols >= 2048 && n > 17) continue; // keep the f64 reference quick
            const x = randomF32(rand, n * cols);
            checkInt8Matmul(
              x,
              n,
              w,
              n === 5 || n === 17 ? randomF32(rand, rows) : undefined,
              `packed ${dtype} [${rows}x${cols}] n=${n}`,
              packed,
            );
          }
        }
      }
    });

    it('matmul with K-quant weights matches the reference (int8 activations on SIMD paths, f32 on scalar)', () => {
      const rand = rng(3);
      for (const dtype of K_DTYPES) {
        for (const [rows, cols] of [
          [7, 256],
          [21, 512],
          [3, 2304],
        ]) {
          const w = makeWeight(rand, dtype, rows, cols);
          for (const n of [1, 3, 17]) {
            const x = randomF32(rand, n * cols);
            const bias = n === 1 ? randomF32(rand, rows) : undefined;
            const what = `${dtype} [${rows}x${cols}] n=${n}`;
            if (path !== 'scalar') {
              checkInt8Matmul(x, n, w, bias, what);
              continue;
            }
            const want = new Float32Array(n * rows),
              got = new Float32Array(n * rows);
            referenceOps.matmul(x, n, w, want, bias);
            nativeOps.matmul(x, n, w, got, bias);
            assertClose(got, want, 1e-4, what);
          }
        }
      }
    });

    it('matmul with Q4_1 / Q5_0 / Q5_1 / IQ4_NL weights matches the reference (int8 activations on SIMD paths, f32 on scalar)', () => {
      const rand = rng(16);
      for (const dtype of B32_DTYPES) {
        // Row lengths these types exist for (not multiples of 256): 2 blocks, an odd 3, Qwen2.5-0.5B's
        // 896 (28 blocks), and 2080 (three column blocks with a ragged end).
        for (const [rows, cols] of [
          [19, 64],
          [7, 96],
          [33, 896],
          [5, 2080],
        ]) {
          const w = makeWeight(rand, dtype, rows, cols);
          for (const n of [1, 3, 17]) {
            const x = randomF32(rand, n * cols);
            const bias = n === 3 ? randomF32(rand, rows) : undefined;
            const what = `${dtype} [${rows}x${cols}] n=${n}`;
            if (path !== 'scalar') {
              checkInt8Matmul(x, n, w, bias, what);
              continue;
            }
            const want = new Float32Array(n * rows),
              got = new Float32Array(n * rows);
            referenceOps.matmul(x, n, w, want, bias);
            nativeOps.matmul(x, n, w, got, bias);
            assertClose(got, want, 1e-4, what);
          }
        }
      }
    });

    it('matmul with packed Q4_K / Q5_K / Q6_K weights matches the reference (int8 activations on SIMD paths, f32 on scalar)', () => {
      const rand = rng(16);
      for (const dtype of ['q4_k', 'q5_k', 'q6_k'] as DType[]) {
        // Row counts below, at and past a 16-row group (odd tails); n covers single rows, the
        // four-group decode tile, 2- and 4-row tiles and their remainders.
        for (const [rows, cols] of [
          [19, 256],
          [33, 512],
          [5, 2304],
          [64, 1024],
          [71, 768],
        ]) {
          const w = makeWeight(rand, dtype, rows, cols);
          const packed = nativeOps.prepareWeight(w);
          assert.ok(isPackedWeight(packed), dtype);
          for (const n of [1, 2, 3, 5, 17]) {
            const x = randomF32(rand, n * cols);
            const bias = n === 5 ? randomF32(rand, rows) : undefined;
            const what = `packed ${dtype} [${rows}x${cols}] n=${n}`;
            if (path !== 'scalar') {
              // Random K-quant blocks carry large mins, so a row's result is a small difference of
              // large sums and int8 activations move it by up to ~1.5% here (the unpacked kernels
              // by exactly as much); the int8-rounded check inside pins the kernels down.
              checkInt8Matmul(x, n, w, bias, what, packed, 3e-2);
              continue;
            }
            const want = new Float32Array(n * rows),
              got = new Float32Array(n * rows);
            referenceOps.matmul(x, n, w, want, bias);
            nativeOps.matmul(x, n, packed, got, bias);
            assertClose(got, want, 1e-4, what);
          }
        }
      }
    });

    it('matmul with packed Q4_1 / Q5_0 / Q5_1 / IQ4_NL weights matches the reference (int8 activations on SIMD paths, f32 on scalar)', () => {
      const rand = rng(17);
      for (const dtype of B32_DTYPES) {
        // Row counts below, at and past a 16-row group (odd tails); row lengths of 2, an odd 3, 28
        // (Qwen2.5-0.5B's 896) and 65 blocks; n covers single rows, the four-group decode tile, 2-
        // and 4-row tiles and their remainders.
        for (const [rows, cols] of [
          [19, 64],
          [7, 96],
          [71, 896],
          [33, 2080],
          [64, 896],
        ]) {
          const w = makeWeight(rand, dtype, rows, cols);
          const packed = nativeOps.prepareWeight(w);
          assert.ok(isPackedWeight(packed), dtype);
          for (const n of [1, 2, 3, 5, 17]) {
            const x = randomF32(rand, n * cols);
            const bias = n === 5 ? randomF32(rand, rows) : undefined;
            const what = `packed ${dtype} [${rows}x${cols}] n=${n}`;
            if (path !== 'scalar') {
              checkInt8Matmul(x, n, w, bias, what, packed);
              continue;
            }
            const want = new Float32Array(n * rows),
              got = new Float32Array(n * rows);
            referenceOps.matmul(x, n, w, want, bias);
            nativeOps.matmul(x, n, packed, got, bias);
            assertClose(got, want, 1e-4, what);
          }
        }
      }
    });

    it('matmul is batch-invariant: a row gives the same bits alone or inside a batch', () => {
      const rand = rng(13);
      const cases: [DType, boolean][] = [...FLOAT_DTYPES, 'q8_0', 'q4_0', ...K_DTYPES, ...B32_DTYPES].map((d) => [d as DType, false]);
      cases.push(['q8_0', true], ['q4_0', true], ['q4_k', true], ['q5_k', true], ['q6_k', true]);
      for (const d of B32_DTYPES) cases.push([d, true]);
      for (const [dtype, pack] of cases) {
        const cols = WEIGHT_DTYPES[dtype].blockElements === 256 ? 1280 : 1088;
        const rows = pack ? 37 : 13;
        const raw = makeWeight(rand, dtype, rows, cols);
        const w = pack ? nativeOps.prepareWeight(raw) : raw;
        // 37 rows: two full 16-row tiles and a remainder (AMX tiles and VNNI rows on the amx path).
        const n = pack ? 37 : 17;
        const x = randomF32(rand, n * cols);
        const all = new Float32Array(n * rows);
        nativeOps.matmul(x, n, w, all);
        for (const i of [0, 5, 16, n - 1]) {
          const one = new Float32Array(rows);
          nativeOps.matmul(x.subarray(i * cols, (i + 1) * cols), 1, w, one);
          assert.deepEqual(one, all.subarray(i * rows, (i + 1) * rows), `${dtype}${pack ? ' packed' : ''} row ${i}`);
          // The same row inside a different batch (another tile position).
          const some = new Float32Array(3 * rows);
          const at = Math.min(i, n - 3);
          nativeOps.matmul(x.subarray(at * cols, (at + 3) * cols), 3, w, some);
          assert.deepEqual(
            some.subarray((i - at) * rows, (i - at + 1) * rows),
            all.subarray(i * rows, (i + 1) * rows),
            `${dtype}${pack ? ' packed' : ''} row ${i} in 3`,
          );
        }
      }
    });

    it('embed decodes rows of every dtype, packed tables too', () => {
      const rand = rng(4);
      for (const dtype of [...FLOAT_DTYPES, 'q8_0', 'q4_0', ...K_DTYPES, ...B32_DTYPES] as DType[]) {
        const cols = WEIGHT_DTYPES[dtype].blockElements === 256 ? 512 : 64;
        const table = makeWeight(rand, dtype, 19, cols);
        const ids = Int32Array.from([0, 10, 3, 3, 7, 15, 16, 18]);
        const want = new Float32Array(ids.length * cols),
          got = new Float32Array(ids.length * cols);
        referenceOps.embed(ids, table, want);
        nativeOps.embed(ids, table, got);
        assertClose(got, want, 1e-6, `embed ${dtype}`);
        const packed = nativeOps.prepareWeight(table);
        if (packed !== table) {
          const fromPacked = new Float32Array(ids.length * cols);
          nativeOps.embed(ids, packed, fromPacked);
          assert.deepEqual(fromPacked, want, `embed packed ${dtype}`);
        }
      }
    });

    it('rmsnorm matches, in place too', () => {
      const rand = rng(5);
      for (const [rows, dim] of [
        [3, 37],
        [5, 896],
        [40, 2048],
      ]) {
        const x = randomF32(rand, rows * dim, 3);
        const w = randomF32(rand, dim);
        const want = new Float32Array(rows * dim),
          got = new Float32Array(rows * dim);
        referenceOps.rmsnorm(x, rows, dim, w, 1e-6, want);
        nativeOps.rmsnorm(x, rows, dim, w, 1e-6, got);
        assertClose(got, want, 1e-5, `rmsnorm ${rows}x${dim}`);
        nativeOps.rmsnorm(x, rows, dim, w, 1e-6, x);
        assertClose(x, want, 1e-5, `rmsnorm in place ${rows}x${dim}`);
      }
    });

    it('rope (neox and normal) matches at far positions', () => {
      const rand = rng(6);
      for (const style of ['neox', 'normal'] as const) {
        for (const [n, heads, hd, theta] of [
          [5, 3, 16, 10000],
          [9, 2, 64, 1000000],
          [300, 4, 64, 10000],
        ]) {
          const x = randomF32(rand, n * heads * hd);
          const pos = Int32Array.from({ length: n }, (_, i) => (i % 2 ? i : Math.floor(rand() * 30000)));
          const want = x.slice(),
            got = x.slice();
          referenceOps.rope(want, n, heads, hd, pos, theta, style);
          nativeOps.rope(got, n, heads, hd, pos, theta, style);
          assertClose(got, want, 1e-5, `rope ${style} n=${n} hd=${hd}`);
          // Second call with the same positions takes the cached cos/sin table.
          const again = x.slice();
          nativeOps.rope(again, n, heads, hd, pos, theta, style);
          assert.deepEqual(again, got);
        }
      }
    });

    it('ropeMulti (M-RoPE) matches at far positions; equal rows give neox rope; sections key the cached table', () => {
      const rand = rng(16);
      for (const [n, heads, hd, theta, sections] of [
        [5, 3, 8, 10000, [1, 1, 2]],
        [9, 2, 128, 1000000, [16, 24, 24]],
        [300, 4, 64, 10000, [8, 12, 12]],
        [7, 2, 16, 10000, [3, 0, 5]],
        [6, 1, 12, 10000, [6]],
      ] as [number, number, number, number, number[]][]) {
        const secs = Int32Array.from(sections);
        const x = randomF32(rand, n * heads * hd);
        const pos = Int32Array.from({ length: secs.length * n }, (_, i) => (i % 3 ? i : Math.floor(rand() * 30000)));
        const want = x.slice(),
          got = x.slice();
        referenceOps.ropeMulti(want, n, heads, hd, pos, secs, theta);
        nativeOps.ropeMulti(got, n, heads, hd, pos, secs, theta);
        assertClose(got, want, 1e-5, `ropeMulti n=${n} hd=${hd} sections=${sections.join(',')}`);
        const again = x.slice();
        nativeOps.ropeMulti(again, n, heads, hd, pos, secs, theta);
        assert.deepEqual(again, got);
        // Every row the same: the plain rope's table and result, bit for bit.
        const row = pos.subarray(0, n);
        const same = Int32Array.from({ length: secs.length * n }, (_, i) => row[i % n]);
        const multi = x.slice(),
          plain = x.slice();
        nativeOps.ropeMulti(multi, n, heads, hd, same, secs, theta);
        nativeOps.rope(plain, n, heads, hd, row, theta, 'neox');
        assert.deepEqual(multi, plain);
      }
      // Same positions, other sections: the cached table must not be reused.
      const x = randomF32(rand, 2 * 8);
      const pos = Int32Array.from([1, 2, 30, 40, 500, 600]);
      for (const sections of [
        [1, 1, 2],
        [2, 1, 1],
      ]) {
        const want = x.slice(),
          got = x.slice();
        referenceOps.ropeMulti(want, 2, 1, 8, pos, Int32Array.from(sections), 10000);
        nativeOps.ropeMulti(got, 2, 1, 8, pos, Int32Array.from(sections), 10000);
        assertClose(got, want, 1e-5, `ropeMulti sections=${sections.join(',')}`);
      }
    });

    it('siluMul and add match (tails, large values, parallel lengths, in place)', () => {
      const rand = rng(7);
      for (const len of [1, 15, 1000, 300001]) {
        const g = randomF32(rand, len, 30),
          u = randomF32(rand, len, 2);
        g[0] = -200;
        const want = new Float32Array(len),
          got = new Float32Array(len);
        referenceOps.siluMul(g, u, want, len);
        nativeOps.siluMul(g, u, got, len);
        assertClose(got, want, 1e-5, `siluMul len=${len}`);
        const g2 = g.slice();
        nativeOps.siluMul(g2, u, g2, len);
        assertClose(g2, want, 1e-5, `siluMul in place len=${len}`);
        referenceOps.add(g, u, want, len);
        nativeOps.add(g, u, got, len);
        assert.deepEqual(got, want, `add len=${len}`);
      }
    });

    it('storeKv writes the same bytes as the reference for every KV dtype and head dim', () => {
      const rand = rng(8);
      for (const dtype of ALL_KV_DTYPES) {
        for (const headDim of [8, 13, 24, 64, 96, 128]) {
          const mk = () => makeLayer(dtype, 6, 4, 2, headDim, 0.5, 2);
          const ref = mk(),
            nat = mk();
          const n = 9,
            width = 2 * headDim;
          const k = randomF32(rand, n * width, 300),
            v = randomF32(rand, n * width, 1000);
          // Specials: NaN, infinities, saturation, signed zero, fp8 subnormals and rounding ties; a
          // zero head vector and an all-NaN one (rows 3 and 4, first head).
          k.set([NaN, Infinity, -Infinity, 500, -0, 1e-3, 2 ** -10, 3 * 2 ** -10, 1e-40, 17]);
          k.fill(0, 3 * width, 3 * width + headDim);
          k.fill(NaN, 4 * width, 4 * width + headDim);
          // E2M1 ties (group amax 6 → block scale 1: 0.25, 0.75, 2.5, 5 ...) and tiny groups.
          v.set([6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, -0.25, -5, 1e-30, 0, 0, 0, 0, 0], width);
          // Structured head vectors, whose rotations hold exact zeros and repeated values (centroid
          // thresholds hit exactly): one-hot, two equal entries, constant.
          v.fill(0, 2 * width, 3 * width);
          v[2 * width + 5] = 3;
          v.fill(0, 5 * width, 6 * width);
          v[5 * width + 1] = v[5 * width + 2] = -2;
          v.fill(0.5, 6 * width, 7 * width);
          const slots = Int32Array.from([0, 5, 23, 7, 8, 12, 13, 2, 19]);
          referenceOps.storeKv(ref, k, v, n, slots);
          nativeOps.storeKv(nat, k, v, n, slots);
          assert.deepEqual(nat.k, ref.k, `${dtype} hd=${headDim} k bytes`);
          assert.deepEqual(nat.v, ref.v, `${dtype} hd=${headDim} v bytes`);
        }
      }
    });

    it('storeKv encodes the block dtypes byte for byte in parallel batches, any scale', () => {
      const rand = rng(18);
      const n = 40,
        headDim = 72,
        width = 4 * headDim;
      const k = new Float32Array(n * width),
        v = new Float32Array(n * width);
      for (let i = 0; i < k.length; i++) {
        // Magnitudes across many binades, so block scales and norms vary from row to row.
        k[i] = (rand() < 0.5 ? -1 : 1) * 2 ** (rand() * 20 - 10) * rand();
        v[i] = (rand() * 2 - 1) * 2 ** ((i % 97) / 8 - 6);
      }
      const slots = Int32Array.from({ length: n }, (_, i) => (i * 7) % 48);
      for (const dtype of ['nvfp4', 'turbo2', 'turbo3', 'turbo4', 'turbo8'] as KvDType[]) {
        for (const [kScale, vScale] of [
          [1, 1],
          [0.37, 3.1],
        ]) {
          const ref = makeLayer(dtype, 12, 4, 4, headDim, kScale, vScale),
            nat = makeLayer(dtype, 12, 4, 4, headDim, kScale, vScale);
          referenceOps.storeKv(ref, k, v, n, slots);
          nativeOps.storeKv(nat, k, v, n, slots);
          assert.deepEqual(nat.k, ref.k, `${dtype} k bytes, scale ${kScale}`);
          assert.deepEqual(nat.v, ref.v, `${dtype} v bytes, scale ${vScale}`);
        }
      }
    });

    it('decodes every KV dtype like the reference (each V row read back through one-key attention)', () => {
      const rand = rng(19);
      for (const dtype of ALL_KV_DTYPES) {
        for (const headDim of [5, 8, 13, 20, 24, 64, 96, 128]) {
          // One token per block and one sequence per token: out row i, head h is V row (i, h).
          const tokens = 11,
            numKvHeads = 2,
            width = numKvHeads * headDim;
          const layer = makeLayer({ k: 'f32', v: dtype }, tokens, 1, numKvHeads, headDim, 1, 0.75);
          const v = randomF32(rand, tokens * width, 4);
          v.fill(0, 0, headDim); // a zero vector
          referenceOps.storeKv(
            layer,
            randomF32(rand, tokens * width),
            v,
            tokens,
            Int32Array.from({ length: tokens }, (_, i) => i),
          );
          const seqs = Array.from({ length: tokens }, (_, i) => ({ qStart: i, qLen: 1, kvLen: 1, blockTable: Int32Array.from([i]) }));
          const q = randomF32(rand, tokens * width);
          const params = { numHeads: numKvHeads, scale: 1 / Math.sqrt(headDim), slidingWindow: null };
          const want = new Float32Array(q.length),
            got = new Float32Array(q.length);
          referenceOps.attention(q, layer, seqs, params, want);
          nativeOps.attention(q, layer, seqs, params, got);
          const decoded = new Float32Array(q.length);
          for (let r = 0; r < tokens * numKvHeads; r++)
            KV_DTYPES[dtype].decode(0.75, layer.v, r * KV_DTYPES[dtype].rowBytes(headDim), headDim, decoded, r * headDim);
          assertClose(want, decoded, 1e-6, `${dtype} hd=${headDim}: reference`);
          assertClose(got, decoded, 1e-6, `${dtype} hd=${headDim}: native decode`);
          assert.ok(
            got.subarray(0, headDim).every((x) => x === 0),
            `${dtype} hd=${headDim}: zero row`,
          );
        }
      }
    });

    it('storeKv encodes fp8 byte for byte across exponents, ties and specials (parallel rows, any scale)', () => {
      const rand = rng(16);
      const n = 40,
        width = 2 * 64;
      const values = new Float32Array(n * width);
      for (let i = 0; i < values.length; i++) {
        // Magnitudes from 2^-14 to 2^10 (subnormals through saturation), both signs.
        values[i] = (rand() < 0.5 ? -1 : 1) * 2 ** (rand() * 24 - 14) * (1 + rand());
      }
      // Exact E4M3 midpoints (ties to even) and the specials, in every lane position.
      const specials = [
        NaN,
        Infinity,
        -Infinity,
        448,
        464,
        480,
        -0,
        0,
        1.0625,
        1.1875,
        2 ** -7 * 1.5,
        2 ** -9 * 0.5,
        2 ** -9 * 1.5,
        1e-40,
        0.015625,
        0.0155,
      ];
      for (let i = 0; i < 16 * 17; i++) values[(i * 37) % values.length] = specials[i % specials.length];
      const slots = Int32Array.from({ length: n }, (_, i) => (i * 7) % 48);
      for (const [kScale, vScale] of [
        [1, 1],
        [0.37, 3.1],
      ]) {
        const ref = makeLayer('fp8', 12, 4, 2, 64, kScale, vScale),
          nat = makeLayer('fp8', 12, 4, 2, 64, kScale, vScale);
        const v = values.map((x) => x * 0.75);
        referenceOps.storeKv(ref, values, v, n, slots);
        nativeOps.storeKv(nat, values, v, n, slots);
        assert.deepEqual(nat.k, ref.k, `k bytes, scale ${kScale}`);
        assert.deepEqual(nat.v, ref.v, `v bytes, scale ${vScale}`);
      }
    });

    it('storeKv and attention with K and V in different dtypes match the reference', () => {
      const rand = rng(17);
      const pairs: Array<{ k: KvDType; v: KvDType }> = [
        { k: 'bf16', v: 'fp8' },
        { k: 'fp8', v: 'bf16' },
        { k: 'f32', v: 'fp8' },
        { k: 'bf16', v: 'f32' },
        { k: 'bf16', v: 'turbo3' },
        { k: 'turbo4', v: 'turbo8' },
        { k: 'fp8', v: 'turbo2' },
        { k: 'turbo3', v: 'nvfp4' },
        { k: 'nvfp4', v: 'bf16' },
        { k: 'turbo8', v: 'f32' },
        { k: 'f32', v: 'turbo4' },
      ];
      const blockSize = 4,
        numKvHeads = 2,
        numHeads = 6,
        headDim = 40,
        width = numKvHeads * headDim;
      const lens = [
        [5, 13],
        [1, 9],
      ];
      for (const dtypes of pairs) {
        const mk = () => makeLayer(dtypes, 8, blockSize, numKvHeads, headDim, 0.5, 0.25);
        const ref = mk(),
          nat = mk();
        const seqs: AttentionSeq[] = [];
        let qStart = 0,
          block = 7;
        for (const [qLen, kvLen] of lens) {
          const blockTable = Int32Array.from({ length: Math.ceil(kvLen / blockSize) }, () => block--);
          const slots = Int32Array.from({ length: kvLen }, (_, t) => blockTable[Math.floor(t / blockSize)] * blockSize + (t % blockSize));
          const k = randomF32(rand, kvLen * width, 3),
            v = randomF32(rand, kvLen * width, 2);
          referenceOps.storeKv(ref, k, v, kvLen, slots);
          nativeOps.storeKv(nat, k, v, kvLen, slots);
          seqs.push({ qStart, qLen, kvLen, blockTable });
          qStart += qLen;
        }
        const what = `K ${dtypes.k}, V ${dtypes.v}`;
        assert.deepEqual(nat.k, ref.k, `${what}: k bytes`);
        assert.deepEqual(nat.v, ref.v, `${what}: v bytes`);
        const q = randomF32(rand, qStart * numHeads * headDim, 2);
        for (const slidingWindow of [null, 6]) {
          const params = { numHeads, scale: 1 / Math.sqrt(headDim), slidingWindow };
          const want = new Float32Array(q.length),
            got = new Float32Array(q.length);
          referenceOps.attention(q, ref, seqs, params, want);
          nativeOps.attention(q, nat, seqs, params, got);
          assertClose(got, want, attentionTolerance(path, dtypes.k, dtypes.v, headDim), `attention ${what}, window ${slidingWindow}`);
        }
      }
    });

    it('attention over the paged cache matches (GQA, block crossings, prefill + decode, windows, every KV dtype)', () => {
      const rand = rng(9);
      const cases = [
        {
          blockSize: 4,
          numKvHeads: 2,
          numHeads: 6,
          headDim: 32,
          lens: [
            [1, 9],
            [7, 7],
            [5, 13],
          ],
        },
        {
          blockSize: 16,
          numKvHeads: 1,
          numHeads: 4,
          headDim: 20,
          lens: [
            [40, 100],
            [1, 33],
          ],
        },
        { blockSize: 8, numKvHeads: 2, numHeads: 2, headDim: 64, lens: [[1, 70]] },
        {
          blockSize: 3,
          numKvHeads: 4,
          numHeads: 8,
          headDim: 72,
          lens: [
            [17, 17],
            [3, 5],
            [1, 1],
          ],
        },
        {
          blockSize: 16,
          numKvHeads: 2,
          numHeads: 8,
          headDim: 128,
          lens: [
            [1, 40],
            [6, 6],
          ],
        },
        { blockSize: 8, numKvHeads: 1, numHeads: 3, headDim: 96, lens: [[9, 21]] },
      ];
      for (const dtype of ALL_KV_DTYPES) {
        for (const c of cases) {
          const blocksPer = c.lens.map(([, kv]) => Math.ceil(kv / c.blockSize));
          const numBlocks = blocksPer.reduce((a, b) => a + b, 0) + 3;
          const layer = makeLayer(
            dtype,
            numBlocks,
            c.blockSize,
            c.numKvHeads,
            c.headDim,
            KV_DTYPES[dtype].scaled ? 0.25 : 1,
            KV_DTYPES[dtype].scaled ? 0.5 : 1,
          );
          // Physical blocks in shuffled order, so sequences interleave in the pool.
          const free = Array.from({ length: numBlocks }, (_, i) => i).sort(() => rand() - 0.5);
          const width = c.numKvHeads * c.headDim;
          const seqs: AttentionSeq[] = [];
          let qStart = 0;
          c.lens.forEach(([qLen, kvLen], s) => {
            const blockTable = Int32Array.from(free.splice(0, blocksPer[s]));
            const slots = Int32Array.from(
              { length: kvLen },
              (_, t) => blockTable[Math.floor(t / c.blockSize)] * c.blockSize + (t % c.blockSize),
            );
            referenceOps.storeKv(layer, randomF32(rand, kvLen * width), randomF32(rand, kvLen * width, 2), kvLen, slots);
            seqs.push({ qStart, qLen, kvLen, blockTable });
            qStart += qLen;
          });
          const q = randomF32(rand, qStart * c.numHeads * c.headDim, 2);
          for (const slidingWindow of [null, 5]) {
            const params = { numHeads: c.numHeads, scale: 1 / Math.sqrt(c.headDim), slidingWindow };
            const want = new Float32Array(q.length),
              got = new Float32Array(q.length);
            referenceOps.attention(q, layer, seqs, params, want);
            nativeOps.attention(q, layer, seqs, params, got);
            assertClose(
              got,
              want,
              attentionTolerance(path, dtype, dtype, c.headDim),
              `attention ${dtype} bs=${c.blockSize} hd=${c.headDim} window=${slidingWindow}`,
            );
          }
        }
      }
    });

    it('fp8 K / V give the bits of a bf16 cache holding the same values (every code, decode and prefill rows)', () => {
      // Every e4m3 value is a bf16 value, so the fp8 path's decode (table lookup or arithmetic,
      // native/kernels_avx512.cc fp8_to_bf16) must feed the dot products exactly what bf16 rows do.
      const rand = rng(33);
      for (const headDim of [32, 64]) {
        const blockSize = 16,
          numKvHeads = 2,
          numHeads = 8;
        const lens = [
          [1, 37],
          [1, 700],
          [19, 61],
        ];
        const numBlocks = lens.reduce((a, [, kv]) => a + Math.ceil(kv / blockSize), 0) + 1;
        const fp8 = makeLayer('fp8', numBlocks, blockSize, numKvHeads, headDim);
        const bf16 = makeLayer('bf16', numBlocks, blockSize, numKvHeads, headDim);
        for (const side of ['k', 'v'] as const) {
          const codes = fp8[side];
          const wide = new DataView(bf16[side].buffer);
          for (let i = 0; i < codes.length; i++) {
            // Every code but the two NaNs, the first 254 in order.
            let c = i < 254 ? i : Math.floor(rand() * 256);
            if ((c & 0x7f) === 0x7f) c ^= 1;
            codes[i] = c;
            wide.setUint16(2 * i, f32ToBf16(decodeFp8(c)), true);
          }
        }
        const free = Array.from({ length: numBlocks }, (_, i) => i).sort(() => rand() - 0.5);
        let qStart = 0;
        const seqs: AttentionSeq[] = lens.map(([qLen, kvLen]) => {
          const seq = { qStart, qLen, kvLen, blockTable: Int32Array.from(free.splice(0, Math.ceil(kvLen / blockSize))) };
          qStart += qLen;
          return seq;
        });
        const q = randomF32(rand, qStart * numHeads * headDim, 0.05);
        const params = { numHeads, scale: 1 / Math.sqrt(headDim), slidingWindow: null };
        const fromFp8 = new Float32Array(q.length),
          fromBf16 = new Float32Array(q.length);
        nativeOps.attention(q, fp8, seqs, params, fromFp8);
        nativeOps.attention(q, bf16, seqs, params, fromBf16);
        assert.ok(fromFp8.every(Number.isFinite), `finite outputs hd=${headDim}`);
        assert.deepEqual(fromFp8, fromBf16, `fp8 vs bf16 rows hd=${headDim}`);
      }
    });

    it('long decodes split across tasks (split-K) and merged match the reference, beside prefill rows', () => {
      // Decode rows over hundreds of keys take the split-K path (native/attention.cc: every KV head per
      // task, keys split, partial states merged); a prefill chunk in the same call takes per-head tasks.
      const rand = rng(21);
      const blockSize = 16,
        numKvHeads = 2,
        numHeads = 8,
        headDim = 64;
      // Alone, a decode row splits its keys (one unit for the pool's threads); beside other work it splits less.
      const calls = [
        [[1, 1500]],
        [
          [1, 1500],
          [2, 700],
        ],
        [
          [1, 1500],
          [2, 700],
          [20, 530],
          [1, 257],
        ],
      ];
      const pairs: Array<{ k: KvDType; v: KvDType }> = [
        { k: 'f32', v: 'f32' },
        { k: 'bf16', v: 'bf16' },
        { k: 'fp8', v: 'fp8' },
        { k: 'turbo3', v: 'turbo3' },
        { k: 'bf16', v: 'fp8' },
        { k: 'fp8', v: 'turbo4' },
      ];
      for (const [dtypes, lens] of pairs.flatMap((d) => calls.map((c) => [d, c] as const))) {
        const dtype = `${dtypes.k}/${dtypes.v}`;
        const blocksPer = lens.map(([, kv]) => Math.ceil(kv / blockSize));
        const numBlocks = blocksPer.reduce((a, b) => a + b, 0) + 2;
        const scale = (d: KvDType) => (KV_DTYPES[d].scaled ? 0.25 : 1);
        const layer = makeLayer(dtypes, numBlocks, blockSize, numKvHeads, headDim, scale(dtypes.k), scale(dtypes.v) * 2);
        const free = Array.from({ length: numBlocks }, (_, i) => i).sort(() => rand() - 0.5);
        const width = numKvHeads * headDim;
        const seqs: AttentionSeq[] = [];
        let qStart = 0;
        lens.forEach(([qLen, kvLen], s) => {
          const blockTable = Int32Array.from(free.splice(0, blocksPer[s]));
          const slots = Int32Array.from({ length: kvLen }, (_, t) => blockTable[Math.floor(t / blockSize)] * blockSize + (t % blockSize));
          referenceOps.storeKv(layer, randomF32(rand, kvLen * width), randomF32(rand, kvLen * width, 2), kvLen, slots);
          seqs.push({ qStart, qLen, kvLen, blockTable });
          qStart += qLen;
        });
        const q = randomF32(rand, qStart * numHeads * headDim, 2);
        const sinks = randomF32(rand, numHeads, 2);
        for (const extra of [{ slidingWindow: null }, { slidingWindow: 300 }, { slidingWindow: null, softcap: 5, sinks }]) {
          const params = { numHeads, scale: 1 / Math.sqrt(headDim), ...extra };
          const want = new Float32Array(q.length),
            got = new Float32Array(q.length);
          referenceOps.attention(q, layer, seqs, params, want);
          nativeOps.attention(q, layer, seqs, params, got);
          assertClose(
            got,
            want,
            attentionTolerance(path, dtypes.k, dtypes.v, headDim),
            `split-K attention ${dtype} ${JSON.stringify({ ...extra, sinks: undefined })}`,
          );
          // Batch invariance: each sequence alone gives the same bits as inside the batch.
          const rowWidth = numHeads * headDim;
          for (const seq of seqs) {
            const alone = new Float32Array(seq.qLen * rowWidth);
            const qAlone = q.subarray(seq.qStart * rowWidth, (seq.qStart + seq.qLen) * rowWidth);
            nativeOps.attention(qAlone, layer, [{ ...seq, qStart: 0 }], params, alone);
            assert.deepEqual(alone, got.subarray(seq.qStart * rowWidth, (seq.qStart + seq.qLen) * rowWidth), `alone vs batched ${dtype}`);
          }
        }
      }
    });
  });
}

describe('native kernels on real GGUF K-quant blocks (tiny_kquant.gguf)', () => {
  const file = join(FIXTURES, 'tiny_kquant.gguf');
  const GGML_TO_DTYPE: Record<number, DType> = { 10: 'q2_k', 12: 'q4_k', 13: 'q5_k', 14: 'q6_k' };
  it('decodes and multiplies them like the reference on every path', { skip: !existsSync(file) && 'fixture missing' }, () => {
    const header = readGgufHeader(file);
    const bytes = readFileSync(file);
    const rand = rng(12);
    for (const t of header.tensors) {
      const dtype = GGML_TO_DTYPE[t.ggmlType];
      if (!dtype) continue;
      // 1024 elements as a [4, 256] matrix.
      const w: WeightMatrix = {
        dtype,
        rows: 4,
        cols: 256,
        data: new Uint8Array(bytes.buffer, bytes.byteOffset + t.offset, 4 * WEIGHT_DTYPES[dtype].blockBytes),
      };
      const ids = Int32Array.from([3, 0, 2, 1]);
      const want = new Float32Array(4 * 256),
        got = new Float32Array(4 * 256);
      referenceOps.embed(ids, w, want);
      nativeOps.embed(ids, w, got);
      assertClose(got, want, 1e-6, `embed ${t.name}`);
      const x = randomF32(rand, 3 * 256);
      const y = new Float32Array(3 * 4);
      referenceOps.matmul(x, 3, w, y);
      for (const path of PATHS) {
        setCpuPath(path);
        const yn = new Float32Array(3 * 4);
        nativeOps.matmul(x, 3, w, yn);
        assert.ok(relL2(yn, y) <= 1e-2, `${t.name} on ${path}: relative L2 ${relL2(yn, y)}`);
      }
      setCpuPath(info.bestCpuPath);
    }
  });
});

describe('native kernels: thread counts', () => {
  after(() => setNumThreads(DEFAULT_THREADS));
  for (const threads of [1, 3]) {
    it(`give the same results with ${threads} thread(s)`, () => {
      setNumThreads(threads);
      assert.equal(nativeInfo().threads, threads);
      const rand = rng(10);
      for (const dtype of ['f32', 'q4_0', 'q6_k', 'q8_0'] as DType[]) {
        const raw = makeWeight(rand, dtype, 70, 256);
        // Q8_0 packed, and enough rows for AMX tiles.
        const w = dtype === 'q8_0' ? nativeOps.prepareWeight(raw) : raw;
        const n = dtype === 'q8_0' ? 37 : 5;
        const x = randomF32(rand, n * 256);
        const a = new Float32Array(n * 70);
        nativeOps.matmul(x, n, w, a);
        setNumThreads(DEFAULT_THREADS);
        const b = new Float32Array(n * 70);
        nativeOps.matmul(x, n, w, b);
        setNumThreads(threads);
        assert.deepEqual(a, b, `${dtype}: results depend on the thread count`);
      }
    });
  }
});

describe('native kernels: pool restarts', () => {
  after(() => setNumThreads(DEFAULT_THREADS));
  it('survives rapid resizes between ops', () => {
    const rand = rng(11);
    const w = makeWeight(rand, 'bf16', 64, 128);
    const x = randomF32(rand, 2 * 128);
    const want = new Float32Array(2 * 64);
    nativeOps.matmul(x, 2, w, want);
    for (let i = 0; i < 60; i++) {
      setNumThreads(1 + (i % 4));
      if (i % 3 === 0) continue; // back-to-back resizes with no op between
      const got = new Float32Array(2 * 64);
      nativeOps.matmul(x, 2, w, got);
      assert.deepEqual(got, want);
    }
  });
});

describe('native kernels: argument checks', () => {
  const w: WeightMatrix = { dtype: 'q8_0', rows: 4, cols: 64, data: new Uint8Array(4 * 2 * 34) };
  it('throws TypeError for wrong sizes and types instead of crashing', () => {
    assert.throws(() => nativeOps.matmul(new Float32Array(63), 1, w, new Float32Array(4)), TypeError);
    assert.throws(() => nativeOps.matmul(new Float32Array(64), 1, w, new Float32Array(3)), TypeError);
    assert.throws(() => nativeOps.matmul(new Float32Array(64), 1, { ...w, cols: 48 }, new Float32Array(4)), TypeError);
    assert.throws(() => nativeOps.matmul(new Float32Array(64), 1, { ...w, data: new Uint8Array(10) }, new Float32Array(4)), TypeError);
    assert.throws(() => nativeOps.matmul(new Float64Array(64) as unknown as Float32Array, 1, w, new Float32Array(4)), TypeError);
    const shared = new Float32Array(128);
    assert.throws(() => nativeOps.matmul(shared.subarray(0, 64), 1, w, shared.subarray(60, 64)), TypeError);
    assert.throws(() => nativeOps.rmsnorm(new Float32Array(10), 2, 8, new Float32Array(8), 1e-6, new Float32Array(16)), TypeError);
    assert.throws(() => nativeOps.rope(new Float32Array(12), 1, 2, 6, new Int32Array(0), 1e4, 'neox'), TypeError);
    const sections = Int32Array.from([1, 1, 1]);
    assert.throws(() => nativeOps.ropeMulti(new Float32Array(12), 1, 2, 6, new Int32Array(2), sections, 1e4), TypeError);
    assert.throws(() => nativeOps.ropeMulti(new Float32Array(12), 1, 2, 6, new Int32Array(3), Int32Array.from([1, 1]), 1e4), TypeError);
    assert.throws(() => nativeOps.ropeMulti(new Float32Array(12), 1, 2, 6, new Int32Array(3), Int32Array.from([2, 2, -1]), 1e4), TypeError);
    assert.throws(() => nativeOps.siluMul(new Float32Array(4), new Float32Array(3), new Float32Array(4), 4), TypeError);
    // Each side is sized, aligned and scaled by its own dtype.
    const row = new Float32Array(8);
    const mixed = makeLayer({ k: 'f32', v: 'bf16' }, 2, 4, 1, 8);
    assert.throws(
      () => nativeOps.storeKv({ ...mixed, v: mixed.v.subarray(0, 64) }, row, row, 1, new Int32Array([0])),
      /layer\.v has 64 bytes/,
    );
    assert.throws(
      () => nativeOps.storeKv({ ...mixed, v: new Uint8Array(130).subarray(1, 129) }, row, row, 1, new Int32Array([0])),
      /aligned/,
    );
    const fp8v = makeLayer({ k: 'bf16', v: 'fp8' }, 2, 4, 1, 8);
    assert.throws(() => nativeOps.storeKv({ ...fp8v, vScale: 0 }, row, row, 1, new Int32Array([0])), /fp8 vScale must be positive/);
    nativeOps.storeKv({ ...fp8v, kScale: 0 }, row, row, 1, new Int32Array([0])); // bf16 ignores its scale
    const nvfp4k = makeLayer({ k: 'nvfp4', v: 'turbo3' }, 2, 4, 1, 8);
    assert.throws(() => nativeOps.storeKv({ ...nvfp4k, kScale: -1 }, row, row, 1, new Int32Array([0])), /nvfp4 kScale must be positive/);
    nativeOps.storeKv({ ...nvfp4k, vScale: 0 }, row, row, 1, new Int32Array([0])); // turbo ignores its scale
    // Turbo3 rows of 8 values are 2 + 3 bytes: 8 rows need 40.
    assert.throws(
      () => nativeOps.storeKv({ ...nvfp4k, v: nvfp4k.v.subarray(0, 39) }, row, row, 1, new Int32Array([0])),
      /layer\.v has 39 bytes, the layer needs 40/,
    );
    // The raw addon checks bounds too, for callers that skip the TypeScript face.
    assert.throws(
      () => nativeOps.storeKv(makeLayer('f32', 2, 4, 1, 8), new Float32Array(8), new Float32Array(4), 1, new Int32Array([0])),
      TypeError,
    );
  });
  it('throws RangeError for ids, slots and block ids outside their tables', () => {
    assert.throws(() => nativeOps.embed(Int32Array.from([4]), w, new Float32Array(64)), RangeError);
    const layer = makeLayer('bf16', 2, 4, 1, 8);
    assert.throws(() => nativeOps.storeKv(layer, new Float32Array(8), new Float32Array(8), 1, Int32Array.from([8])), RangeError);
    const seq = { qStart: 0, qLen: 1, kvLen: 5, blockTable: Int32Array.from([0, 2]) };
    assert.throws(
      () => nativeOps.attention(new Float32Array(8), layer, [seq], { numHeads: 1, scale: 1, slidingWindow: null }, new Float32Array(8)),
      RangeError,
    );
    const short = { qStart: 0, qLen: 1, kvLen: 5, blockTable: Int32Array.from([0]) };
    assert.throws(
      () => nativeOps.attention(new Float32Array(8), layer, [short], { numHeads: 1, scale: 1, slidingWindow: null }, new Float32Array(8)),
      RangeError,
    );
  });
});
