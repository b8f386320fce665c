// The native moe op (native/moe.cc) on every kernel path this CPU has (scalar, AVX2, AVX-512, AMX),
// for every weight dtype, as nativeOps.prepareWeight leaves it (packed where the dtype packs).
//
// Two oracles:
//   the composition: per pick, the three native matmuls of the row alone, the native siluMul, and
//     the f32 weighted sum in j order. The op must give exactly these bits (same kernels, same
//     activation rounding, batch-invariant kernels, a deterministic sum), whatever the dtype, batch,
//     k, thread count, or pass split, so any slip in grouping, slots, quantization or scatter shows.
//   the reference (referenceOps.moe on the weights as loaded, f64 sums):
//     f32 kernels (f32 / f16 / bf16 weights; every dtype the scalar path decodes to f32, i.e. all
//       but Q8_0 / Q4_0): max |err| <= 1e-4 * max |out|;
//     int8 activations (gate/up inputs and h are quantized to int8 blocks): relative L2 <= 2e-2
//       (1e-2 per quantized matmul in native-ops.test.ts, and here two of them in a row; ~1.2% seen),
//       4e-2 for the random-block dtypes (no quantizer here: blocks with large mins make an output a
//       small difference of large sums, which int8 activations move more; Q5_1 ~3% seen).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  loadAddon,
  nativeInfo,
  nativeOps,
  setCpuPath,
  setNumThreads,
  type CpuPath,
  type MoeLayerHandle,
} from '../../src/kernels/native.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { f32ToBf16, f32ToF16, quantizeRowQ4_0, quantizeRowQ8_0 } from '../../src/kernels/dequant.js';
import { quantizeRowQ4K, quantizeRowQ5K, quantizeRowQ6K } from '../../src/kernels/quantize.js';
import { ALL_DTYPES, WEIGHT_DTYPES, type DType } from '../../src/kernels/dtypes.js';
import type { MoeExperts, WeightMatrix } from '../../src/kernels/ops.js';
import { maxAbs, randomF32, rng } from '../helpers/random-arrays.js';
import { relL2 } from '../helpers/int8-activations.js';

// ---- helpers ----

/** Where the f16 super-block scale(s) sit in the blocks no quantizer here writes (ggml-common.h). */
const SCALE_AT: Partial<Record<DType, number[]>> = {
  q4_1: [0, 2],
  q5_0: [0],
  q5_1: [0, 2],
  iq4_nl: [0],
  q2_k: [80, 82],
  q3_k: [108],
  iq4_xs: [0],
  iq3_xxs: [0],
  iq3_s: [0],
  tq2_0: [64],
};

/**
 * A [rows, cols] weight in `dtype`: random values quantized (f32 / f16 / bf16, Q8_0 / Q4_0 and the
 * K-quants quantize.ts writes), or random blocks with small finite scales for the other types.
 */
function makeWeight(rand: () => number, dtype: DType, rows: number, cols: number): WeightMatrix {
  const { blockElements, blockBytes } = WEIGHT_DTYPES[dtype];
  const rowBytes = (cols / blockElements) * blockBytes;
  const data = new Uint8Array(rows * rowBytes);
  const src = randomF32(rand, rows * cols);
  const put16 = (p: number, h: number) => {
    data[p] = h & 0xff;
    data[p + 1] = h >> 8;
  };
  const rowQuantizer = {
    q8_0: quantizeRowQ8_0,
    q4_0: quantizeRowQ4_0,
    q4_k: quantizeRowQ4K,
    q5_k: quantizeRowQ5K,
    q6_k: quantizeRowQ6K,
  }[dtype as string] as ((x: Float32Array, cols: number, off: number) => Uint8Array) | undefined;
  if (dtype === 'f32') data.set(new Uint8Array(src.buffer));
  else if (dtype === 'f16') src.forEach((v, i) => put16(2 * i, f32ToF16(v)));
  else if (dtype === 'bf16') src.forEach((v, i) => put16(2 * i, f32ToBf16(v)));
  else if (rowQuantizer) for (let r = 0; r < rows; r++) data.set(rowQuantizer(src, cols, r * cols), r * rowBytes);
  else {
    for (let i = 0; i < data.length; i++) data[i] = Math.floor(rand() * 256);
    for (let p = 0; p < data.length; p += blockBytes) for (const at of SCALE_AT[dtype]!) put16(p + at, f32ToF16(0.002 + rand() * 0.01));
  }
  return { dtype, rows, cols, data };
}

/** Shapes that fit a dtype's blocks: hidden and inter (odd block counts, f32 tails past 16). */
function shapeFor(dtype: DType): { hidden: number; inter: number } {
  const be = WEIGHT_DTYPES[dtype].blockElements;
  if (be === 256) return { hidden: 256, inter: 512 };
  if (be === 32) return { hidden: 96, inter: 160 };
  return { hidden: 40, inter: 72 };
}

interface Layer {
  /** As loaded (the reference reads these). */
  raw: MoeExperts;
  /** As nativeOps.prepareWeight leaves them. */
  prepared: MoeExperts;
  hidden: number;
  inter: number;
}

/** E experts of gate / up / down dtypes `dt`; the experts in `missing` are not held (null). */
function makeLayer(rand: () => number, dt: [DType, DType, DType], E: number, hidden: number, inter: number, missing: number[] = []): Layer {
  const raw = { gate: [] as (WeightMatrix | null)[], up: [] as (WeightMatrix | null)[], down: [] as (WeightMatrix | null)[] };
  for (let e = 0; e < E; e++) {
    const held = !missing.includes(e);
    raw.gate.push(held ? makeWeight(rand, dt[0], inter, hidden) : null);
    raw.up.push(held ? makeWeight(rand, dt[1], inter, hidden) : null);
    raw.down.push(held ? makeWeight(rand, dt[2], hidden, inter) : null);
  }
  const prep = (l: (WeightMatrix | null)[]) => l.map((w) => (w === null ? null : nativeOps.prepareWeight(w)));
  return { raw, prepared: { gate: prep(raw.gate), up: prep(raw.up), down: prep(raw.down) }, hidden, inter };
}

/** ids [n, k] drawn from `pool` (so repeats within a row happen when k is large), weights in (0, 1). */
function makeRouting(rand: () => number, n: number, k: number, pool: number[]): { ids: Int32Array; weights: Float32Array } {
  const ids = new Int32Array(n * k),
    weights = new Float32Array(n * k);
  for (let i = 0; i < n * k; i++) {
    ids[i] = pool[Math.floor(rand() * pool.length)];
    weights[i] = 0.05 + rand() * 0.9;
  }
  return { ids, weights };
}

/** The op's contract built from the other native ops, pick by pick (see the file comment). */
function composition(x: Float32Array, n: number, experts: MoeExperts, ids: Int32Array, weights: Float32Array, k: number): Float32Array {
  const gate0 = experts.gate.find((g) => g !== null)!;
  const hidden = gate0.cols,
    inter = gate0.rows;
  const out = new Float32Array(n * hidden);
  const g = new Float32Array(inter),
    u = new Float32Array(inter),
    y = new Float32Array(hidden);
  for (let i = 0; i < n; i++) {
    const row = x.subarray(i * hidden, (i + 1) * hidden);
    for (let j = 0; j < k; j++) {
      const e = ids[i * k + j];
      const gate = experts.gate[e],
        up = experts.up[e],
        down = experts.down[e];
      if (gate === null || up === null || down === null) continue;
      nativeOps.matmul(row, 1, gate, g);
      nativeOps.matmul(row, 1, up, u);
      nativeOps.siluMul(g, u, g, inter);
      nativeOps.matmul(g, 1, down, y);
      const w = weights[i * k + j];
      // f32 arithmetic: a product of two f32 is exact in f64, so fround gives the f32 product; the
      // sum of two f32 rounded through f64 is the f32 sum.
      for (let h = 0; h < hidden; h++) out[i * hidden + h] = Math.fround(out[i * hidden + h] + Math.fround(w * y[h]));
    }
  }
  return out;
}

function nativeMoe(x: Float32Array, n: number, experts: MoeExperts, ids: Int32Array, weights: Float32Array, k: number): Float32Array {
  const hidden = experts.gate.find((g) => g !== null)!.cols;
  const out = new Float32Array(n * hidden).fill(NaN); // every element must be written
  nativeOps.moe(x, n, experts, ids, weights, k, out);
  return out;
}

/** First element where a and b differ in bits (NaN-aware), or -1. */
function firstDiff(a: Float32Array, b: Float32Array): number {
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length),
    ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  if (a.length !== b.length) return 0;
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) return i;
  return -1;
}

function assertSameBits(got: Float32Array, want: Float32Array, what: string): void {
  const at = firstDiff(got, want);
  assert.equal(at, -1, `${what}: differs at ${at} (got ${got[at]}, want ${want[at]})`);
}

// ---- the suites ----

const info = nativeInfo();
const ORDER: CpuPath[] = ['scalar', 'avx2', 'avx512', 'amx'];
const PATHS = ORDER.slice(0, ORDER.indexOf(info.bestCpuPath) + 1);
const DEFAULT_THREADS = info.threads;
const FLOAT_DTYPES: DType[] = ['f32', 'f16', 'bf16'];

/** True when `path` multiplies `dtype` with f32 activations (no int8 rounding anywhere). */
function f32Kernels(path: CpuPath, dtype: DType): boolean {
  return FLOAT_DTYPES.includes(dtype) || (path === 'scalar' && dtype !== 'q8_0' && dtype !== 'q4_0');
}

// Six experts: expert 4 not held, expert 5 held but never picked; rows pick from 0-4.
const E = 6;
const MISSING = [4];
const PICKS = [0, 1, 2, 3, 4];

// The reference is path-independent and slow: one layer and one set of expected outputs per dtype.
interface RefCase {
  layer: Layer;
  x: Float32Array;
  n: number;
  k: number;
  ids: Int32Array;
  weights: Float32Array;
  want: Float32Array;
}
const refCases = new Map<DType, RefCase[]>();
function referenceCases(dtype: DType): RefCase[] {
  let cases = refCases.get(dtype);
  if (cases) return cases;
  const rand = rng(100 + ALL_DTYPES.indexOf(dtype));
  const { hidden, inter } = shapeFor(dtype);
  const layer = makeLayer(rand, [dtype, dtype, dtype], E, hidden, inter, MISSING);
  cases = [
    [1, 8],
    [3, 2],
    [2, 1],
  ].map(([n, k]) => {
    const x = randomF32(rand, n * hidden);
    const { ids, weights } = makeRouting(rand, n, k, PICKS);
    const want = new Float32Array(n * hidden);
    referenceOps.moe(x, n, layer.raw, ids, weights, k, want);
    return { layer, x, n, k, ids, weights, want };
  });
  refCases.set(dtype, cases);
  return cases;
}

for (const path of PATHS) {
  describe(`native moe on the ${path} path`, () => {
    before(() => setCpuPath(path));
    after(() => setCpuPath(info.bestCpuPath));

    it('matches the reference for every weight dtype (n = 1, 2, 3; k = 1, 2, 8; an expert not held, one never picked)', () => {
      for (const dtype of ALL_DTYPES) {
        for (const c of referenceCases(dtype)) {
          const got = nativeMoe(c.x, c.n, c.layer.prepared, c.ids, c.weights, c.k);
          const what = `${dtype} n=${c.n} k=${c.k}`;
          if (f32Kernels(path, dtype)) {
            const scale = maxAbs(c.want);
            for (let i = 0; i < got.length; i++)
              assert.ok(Math.abs(got[i] - c.want[i]) <= 1e-4 * scale, `${what}: ${got[i]} vs ${c.want[i]} at ${i} (max |out| ${scale})`);
          } else {
            const err = relL2(got, c.want);
            const tol = dtype in SCALE_AT ? 4e-2 : 2e-2;
            assert.ok(err <= tol, `${what}: relative L2 ${err} > ${tol}`);
          }
        }
      }
    });

    it('is bit for bit the per-pick composition of native matmuls for every weight dtype (n = 1, 8, 70; k = 1, 2, 8)', () => {
      const rand = rng(200);
      for (const dtype of ALL_DTYPES) {
        const { hidden, inter } = shapeFor(dtype);
        const layer = makeLayer(rand, [dtype, dtype, dtype], E, hidden, inter, MISSING);
        // n = 70 gives every expert 16+ rows (AMX tiles on the amx path, plus leftover rows).
        for (const [n, k] of [
          [1, 1],
          [1, 8],
          [8, 2],
          [70, 2],
          [70, 8],
        ]) {
          const x = randomF32(rand, n * hidden, 2);
          const { ids, weights } = makeRouting(rand, n, k, PICKS);
          const got = nativeMoe(x, n, layer.prepared, ids, weights, k);
          assertSameBits(got, composition(x, n, layer.prepared, ids, weights, k), `${dtype} n=${n} k=${k}`);
        }
      }
    });

    it('takes a different dtype per projection (f32 down after int8 gate / up, f32 gate beside int8 up, Q4_K_M-style Q6_K down)', () => {
      const rand = rng(300);
      const mixes: [DType, DType, DType][] = [
        ['q4_k', 'q4_k', 'q6_k'],
        ['q8_0', 'q8_0', 'f16'],
        ['f16', 'q8_0', 'q4_0'],
        ['q4_0', 'q8_0', 'bf16'],
        ['q5_k', 'iq4_xs', 'q2_k'],
      ];
      for (const dt of mixes) {
        const layer = makeLayer(rand, dt, E, 256, 512, MISSING);
        for (const [n, k] of [
          [1, 8],
          [40, 2],
        ]) {
          const x = randomF32(rand, n * 256);
          const { ids, weights } = makeRouting(rand, n, k, PICKS);
          const got = nativeMoe(x, n, layer.prepared, ids, weights, k);
          assertSameBits(got, composition(x, n, layer.prepared, ids, weights, k), `${dt.join('/')} n=${n} k=${k}`);
        }
      }
    });

    it('gives the same bits on 1, 2, 3 and the default threads, and on a repeated call', () => {
      const rand = rng(400);
      try {
        for (const dtype of ['q8_0', 'q4_k', 'f16', 'q2_k', 'iq4_nl'] as DType[]) {
          const { hidden, inter } = shapeFor(dtype);
          const layer = makeLayer(rand, [dtype, dtype, dtype], E, hidden, inter, MISSING);
          for (const [n, k] of [
            [1, 8],
            [70, 4],
          ]) {
            const x = randomF32(rand, n * hidden);
            const { ids, weights } = makeRouting(rand, n, k, PICKS);
            setNumThreads(DEFAULT_THREADS);
            const first = nativeMoe(x, n, layer.prepared, ids, weights, k);
            assertSameBits(nativeMoe(x, n, layer.prepared, ids, weights, k), first, `${dtype} n=${n} repeated`);
            for (const threads of [1, 2, 3]) {
              setNumThreads(threads);
              assertSameBits(nativeMoe(x, n, layer.prepared, ids, weights, k), first, `${dtype} n=${n} on ${threads} threads`);
            }
          }
        }
      } finally {
        setNumThreads(DEFAULT_THREADS);
      }
    });

    it('splits a batch of more than 4096 picks into passes without changing a bit', () => {
      const rand = rng(500);
      const layer = makeLayer(rand, ['q8_0', 'q8_0', 'q8_0'], E, 64, 96, MISSING);
      const n = 600,
        k = 8,
        hidden = 64;
      const x = randomF32(rand, n * hidden);
      const { ids, weights } = makeRouting(rand, n, k, PICKS);
      const all = nativeMoe(x, n, layer.prepared, ids, weights, k);
      // Rows are independent, so any split of the batch must give the same rows.
      for (const [a, b] of [
        [0, 300],
        [300, 600],
        [17, 18],
      ]) {
        const part = nativeMoe(
          x.subarray(a * hidden, b * hidden),
          b - a,
          layer.prepared,
          ids.subarray(a * k, b * k),
          weights.subarray(a * k, b * k),
          k,
        );
        assertSameBits(part, all.subarray(a * hidden, b * hidden), `rows [${a}, ${b})`);
      }
    });
  });
}

describe('native moe: arguments', () => {
  const rand = rng(600);
  const layer = makeLayer(rand, ['q8_0', 'q8_0', 'q8_0'], E, 64, 96, MISSING);
  const experts = layer.prepared;
  const n = 3,
    k = 2;
  const x = randomF32(rand, n * 64);
  const { ids, weights } = makeRouting(rand, n, k, PICKS);

  it('n = 0 touches nothing; rows that picked only experts not held come out zero', () => {
    const out = new Float32Array(64).fill(7);
    nativeOps.moe(x, 0, experts, ids, weights, k, out);
    assert.ok(out.every((v) => v === 7));
    const missingIds = Int32Array.from([4, 4, 0, 4]);
    const got = nativeMoe(x.subarray(0, 128), 2, experts, missingIds, weights.subarray(0, 4), 2);
    assert.ok(
      got.subarray(0, 64).every((v) => v === 0),
      'row 0 picked expert 4 (not held) twice',
    );
    assertSameBits(got, composition(x.subarray(0, 128), 2, experts, missingIds, weights.subarray(0, 4), 2), 'mixed rows');
  });

  it('rejects expert ids outside the layer with a RangeError naming the pick', () => {
    for (const bad of [E, -1, 1 << 30]) {
      const badIds = ids.slice();
      badIds[3] = bad;
      assert.throws(
        () => nativeOps.moe(x, n, experts, badIds, weights, k, new Float32Array(n * 64)),
        (e: unknown) => e instanceof RangeError && new RegExp(`expert id ${bad} at ids\\[3\\] outside the ${E} experts`).test(e.message),
        `id ${bad}`,
      );
    }
  });

  it('rejects bad shapes, kinds and overlaps with a TypeError naming the argument', () => {
    const out = new Float32Array(n * 64);
    const cases: [string, () => void, RegExp][] = [
      ['short x', () => nativeOps.moe(x.subarray(1), n, experts, ids, weights, k, out), /moe: x has 191 elements, needs 192/],
      ['short out', () => nativeOps.moe(x, n, experts, ids, weights, k, out.subarray(1)), /moe: out has/],
      ['short ids', () => nativeOps.moe(x, n, experts, ids.subarray(1), weights, k, out), /moe: ids has 5 elements, needs 6/],
      ['short weights', () => nativeOps.moe(x, n, experts, ids, weights.subarray(1), k, out), /moe: weights has/],
      [
        'ids kind',
        () => nativeOps.moe(x, n, experts, new Float32Array(6) as unknown as Int32Array, weights, k, out),
        /ids must be a Int32Array/,
      ],
      [
        'x kind',
        () => nativeOps.moe(new Float64Array(192) as unknown as Float32Array, n, experts, ids, weights, k, out),
        /x must be a Float32Array/,
      ],
      ['k = 0', () => nativeOps.moe(x, n, experts, ids, weights, 0, out), /k must be an integer >= 1/],
      ['n = 1.5', () => nativeOps.moe(x, 1.5, experts, ids, weights, k, out), /n must be an integer >= 0/],
      ['out over x', () => nativeOps.moe(x, 1, experts, ids, weights, k, x.subarray(32, 96)), /out must not overlap x/],
      [
        'out over weights',
        () => {
          const buf = new Float32Array(64 + 2);
          nativeOps.moe(x, 1, experts, ids, buf.subarray(64), k, buf.subarray(0, 64));
          nativeOps.moe(x, 1, experts, ids, buf.subarray(63), k, buf.subarray(0, 64));
        },
        /out must not overlap ids or weights/,
      ],
    ];
    for (const [what, call, message] of cases) assert.throws(call, (e: unknown) => e instanceof TypeError && message.test(e.message), what);
  });

  it('rejects layers whose experts disagree, and a layer holding no expert', () => {
    const other = makeLayer(rand, ['q4_0', 'q8_0', 'q8_0'], 2, 64, 96);
    const unpacked = makeLayer(rand, ['q8_0', 'q8_0', 'q8_0'], 1, 64, 96).raw;
    const wide = makeLayer(rand, ['q8_0', 'q8_0', 'q8_0'], 1, 64, 128).prepared;
    const out = new Float32Array(n * 64);
    const withGate = (g: WeightMatrix | null, at = 1): MoeExperts => ({ ...experts, gate: experts.gate.map((w, e) => (e === at ? g : w)) });
    const cases: [string, MoeExperts, RegExp][] = [
      [
        'another dtype',
        withGate(other.prepared.gate[0]),
        /experts\.gate\[1\] is q4_0 \(packed\), the layer's other gate weights q8_0 \(packed\)/,
      ],
      ['unpacked beside packed', withGate(unpacked.gate[0]), /experts\.gate\[1\] is q8_0, the layer's other gate weights q8_0 \(packed\)/],
      [
        'another shape',
        { ...experts, down: experts.down.map((w, e) => (e === 2 ? wide.down[0] : w)) },
        /experts\.down\[2\] is \[64, 128\], the layer's down weights are \[64, 96\]/,
      ],
      ['lists of different lengths', { ...experts, up: experts.up.slice(1) }, /experts\.gate, \.up and \.down list 6, 5 and 6 experts/],
      [
        'short weight data',
        { ...layer.raw, gate: layer.raw.gate.map((w, e) => (e === 1 ? { ...w!, data: w!.data.subarray(1) } : w)) },
        /moe: experts\.gate\[1\]: q8_0 weight \[96, 64\] needs 6528 bytes, data has 6527/,
      ],
    ];
    for (const [what, bad, message] of cases)
      assert.throws(
        () => nativeOps.moe(x, n, bad, ids, weights, k, out),
        (e: unknown) => e instanceof TypeError && message.test(e.message),
        what,
      );
    const none: MoeExperts = { gate: [null, null], up: [null, null], down: [null, null] };
    assert.throws(() => nativeOps.moe(x, n, none, Int32Array.from([0, 1, 0, 1, 0, 1]), weights, k, out), /RangeError: moe: no expert held/);
    // The addon takes nothing but its own handles.
    assert.throws(
      () => loadAddon().moe({} as MoeLayerHandle, x, n, ids, weights, k, out),
      (e: unknown) => e instanceof TypeError && /layer must be a handle made by moeLayer/.test(e.message),
    );
    // And still works after all that.
    assertSameBits(nativeMoe(x, n, experts, ids, weights, k), composition(x, n, experts, ids, weights, k), 'after the errors');
  });

  it('follows experts replaced after the first call', () => {
    const gate = experts.gate.slice(),
      up = experts.up.slice(),
      down = experts.down.slice();
    const mutable: MoeExperts = { gate, up, down };
    const before = nativeMoe(x, n, mutable, ids, weights, k);
    assertSameBits(before, composition(x, n, mutable, ids, weights, k), 'first');
    const fresh = makeLayer(rand, ['q8_0', 'q8_0', 'q8_0'], 1, 64, 96).prepared;
    const e = ids[0];
    down[e] = fresh.down[0];
    const after = nativeMoe(x, n, mutable, ids, weights, k);
    assert.notEqual(firstDiff(after, before), -1, 'a new down weight changes the result');
    assertSameBits(after, composition(x, n, mutable, ids, weights, k), 'after replacing down');
    // Dropping an expert (null) makes its picks contribute nothing.
    gate[e] = null;
    assertSameBits(nativeMoe(x, n, mutable, ids, weights, k), composition(x, n, mutable, ids, weights, k), 'after dropping one');
  });
});
