// Random mixture-of-experts layers for expert-parallel tests and bench/expert-parallel.ts: every expert a SwiGLU FFN of seeded
// random weights (f32 or Q8_0, prepared for the ops), and the same set cut to one rank's share.
import { quantizeRowQ8_0 } from '../src/kernels/dequant.js';
import type { MoeExperts, Ops, WeightMatrix } from '../src/kernels/ops.js';

export interface ExpertSetShape {
  numLayers: number;
  numExperts: number;
  hidden: number;
  inter: number;
  dtype: 'f32' | 'q8_0';
  seed: number;
}

/** mulberry32: a small deterministic PRNG (uniform in [0, 1)). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function matrix(rand: () => number, rows: number, cols: number, dtype: 'f32' | 'q8_0', scale: number): WeightMatrix {
  const src = new Float32Array(rows * cols);
  for (let i = 0; i < src.length; i++) src[i] = (rand() * 2 - 1) * scale;
  if (dtype === 'f32') return { dtype, rows, cols, data: new Uint8Array(src.buffer) };
  const rowBytes = (cols / 32) * 34;
  const data = new Uint8Array(rows * rowBytes);
  for (let r = 0; r < rows; r++) data.set(quantizeRowQ8_0(src, cols, r * cols), r * rowBytes);
  return { dtype, rows, cols, data };
}

/** Every layer's experts, all held (the same for a given shape and seed). */
export function randomExperts(shape: ExpertSetShape, ops: Ops): MoeExperts[] {
  const rand = rng(shape.seed);
  const layers: MoeExperts[] = [];
  for (let l = 0; l < shape.numLayers; l++) {
    const gate: WeightMatrix[] = [],
      up: WeightMatrix[] = [],
      down: WeightMatrix[] = [];
    for (let e = 0; e < shape.numExperts; e++) {
      gate.push(ops.prepareWeight(matrix(rand, shape.inter, shape.hidden, shape.dtype, 1 / Math.sqrt(shape.hidden))));
      up.push(ops.prepareWeight(matrix(rand, shape.inter, shape.hidden, shape.dtype, 1 / Math.sqrt(shape.hidden))));
      down.push(ops.prepareWeight(matrix(rand, shape.hidden, shape.inter, shape.dtype, 1 / Math.sqrt(shape.inter))));
    }
    layers.push({ gate, up, down });
  }
  return layers;
}

/** The experts [first, end) of each layer kept, the others null (what one rank holds). */
export function shardOf(layers: readonly MoeExperts[], [first, end]: [number, number]): MoeExperts[] {
  const keep = <T>(list: readonly (T | null)[]) => list.map((w, e) => (e >= first && e < end ? w : null));
  return layers.map((l) => ({ gate: keep(l.gate), up: keep(l.up), down: keep(l.down) }));
}

/** A routing step: n rows of x, k distinct expert ids per row, softmax-like positive weights. */
export function randomRouting(rand: () => number, n: number, k: number, numExperts: number, hidden: number) {
  const x = new Float32Array(n * hidden);
  for (let i = 0; i < x.length; i++) x[i] = rand() * 2 - 1;
  const ids = new Int32Array(n * k);
  const weights = new Float32Array(n * k);
  for (let i = 0; i < n; i++) {
    const chosen = new Set<number>();
    while (chosen.size < k) chosen.add(Math.floor(rand() * numExperts));
    let sum = 0;
    [...chosen].forEach((e, j) => {
      ids[i * k + j] = e;
      weights[i * k + j] = 0.1 + rand();
      sum += weights[i * k + j];
    });
    for (let j = 0; j < k; j++) weights[i * k + j] /= sum;
  }
  return { x, ids, weights };
}
