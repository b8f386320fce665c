// Deterministic random numbers: checkpoint weights and benchmark prompts. Every row of every
// tensor is seeded from (shape seed, tensor name, row index) alone, so any row can be produced on
// its own: files are written row by row in any order (llama.cpp's Q/K row interleave needs that)
// and every format holds the same values.
import { expertSpecs, type TensorSpec } from './shapes.js';

/** Standard deviation of matrix weights: small enough that activations stay finite over many layers. */
export const WEIGHT_STD = 0.02;

/** 32-bit FNV-1a of a string: the per-tensor seed. */
export function hashString(s: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** splitmix32-style finalizer: decorrelates nearby seeds (row r and r+1). */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

// The sum of the four bytes of a uniform 32-bit word is bell-shaped (Irwin–Hall of four discrete
// uniforms): mean 510, variance 4·(256²−1)/12. One PRNG call per weight keeps generation fast.
const BYTE_SUM_MEAN = 510;
const BYTE_SUM_STD = Math.sqrt((4 * (256 * 256 - 1)) / 12);

/** Fill `out` with `out.length` normal-ish values of standard deviation `std`, from `seed` (mulberry32 stream). */
export function fillNormalish(out: Float32Array, seed: number, std: number): void {
  const scale = std / BYTE_SUM_STD;
  let a = seed | 0;
  for (let i = 0; i < out.length; i++) {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    t = (t ^ (t >>> 14)) >>> 0;
    const sum = (t & 0xff) + ((t >>> 8) & 0xff) + ((t >>> 16) & 0xff) + (t >>> 24);
    out[i] = (sum - BYTE_SUM_MEAN) * scale;
  }
}

/** Fill `out` with uniform values in [lo, hi) from `seed` (the same mulberry32 stream). */
export function fillUniform(out: Float32Array, seed: number, lo: number, hi: number): void {
  let a = seed | 0;
  for (let i = 0; i < out.length; i++) {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    out[i] = lo + (((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * (hi - lo);
  }
}

/** `length` uniform integers in [0, bound) from `seed` (the same mulberry32 stream): benchmark prompts. */
export function randomInts(seed: number, length: number, bound: number): number[] {
  const out: number[] = new Array(length);
  let a = seed | 0;
  for (let i = 0; i < length; i++) {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    out[i] = Math.floor((((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * bound);
  }
  return out;
}

/**
 * Produces rows of one tensor in its Hugging Face layout. An expert stack's rows are its experts'
 * rows one expert after another, each seeded by that expert's own HF tensor name, so the stack
 * holds exactly the values of the per-expert tensors (expertSpecs).
 */
export class RowSource {
  /** One seed per expert (one for an ordinary tensor). */
  private readonly tensorSeeds: number[];
  private readonly rowsPerExpert: number;
  constructor(
    private readonly spec: TensorSpec,
    modelSeed: number,
  ) {
    this.tensorSeeds = expertSpecs(spec).map((s) => hashString(s.hfName, modelSeed));
    // An expert stack's rows per expert; otherwise every dimension but the last (a conv1d kernel
    // [channels, 1, kernel] is a row per channel).
    this.rowsPerExpert = spec.experts ? spec.shape[spec.shape.length - 2] : spec.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  }

  get rows(): number {
    return this.rowsPerExpert * this.tensorSeeds.length;
  }

  get cols(): number {
    return this.spec.shape[this.spec.shape.length - 1];
  }

  /** Hugging Face row `row` into out (length cols), by the tensor's role (TensorRole). */
  fill(row: number, out: Float32Array): void {
    const role = this.spec.role;
    if (role === 'norm' || role === 'dtBias') {
      out.fill(1);
      return;
    }
    if (role === 'centredNorm') {
      out.fill(0);
      return;
    }
    const expert = Math.floor(row / this.rowsPerExpert);
    const r = row - expert * this.rowsPerExpert;
    const seed = mix(this.tensorSeeds[expert] ^ mix(r + 1));
    if (role === 'aLog') {
      fillUniform(out, seed, 1, 16);
      for (let i = 0; i < out.length; i++) out[i] = Math.log(out[i]);
      return;
    }
    fillNormalish(out, seed, role === 'conv' ? 1 / Math.sqrt(this.cols) : WEIGHT_STD);
  }
}

/**
 * The Hugging Face row stored at GGUF row `stored` after convert_hf_to_gguf's permute() for
 * llama-arch Q/K: within each head, HF row (half j, index i) is stored at row 2i + j.
 */
export function hfRowOfPermuted(stored: number, rows: number, heads: number): number {
  const headDim = rows / heads;
  const half = headDim / 2;
  const head = Math.floor(stored / headDim);
  const within = stored % headDim;
  const i = within >> 1;
  const j = within & 1;
  return head * headDim + j * half + i;
}
