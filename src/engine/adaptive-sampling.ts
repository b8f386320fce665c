// --adaptive-sampling: entropy-gated greedy. For a row that samples (temperature > 0, top-k ≠ 1),
// the Shannon entropy of the distribution a draw starts from — softmax(logits / T) over the row
// after the logits processors, before the truncation filters — is measured in one pass; below
// ADAPTIVE_ENTROPY_THRESHOLD the argmax is taken and no random number is consumed, else the row
// is sampled as usual.
//
// The threshold is h(0.9) ≈ 0.325 nats, h being the binary entropy. Grouping the argmax apart,
// H = h(p_max) + (1 − p_max)·H(rest) ≥ h(p_max), and H ≥ −ln p_max puts p_max above 1/2, where h
// falls; so H < h(0.9) means the argmax holds more than 90% of the mass. The truncation filters
// (top-n-sigma, min-p, top-k, top-p) always keep the argmax and only raise its share, so a draw
// would pick it at least 9 times in 10 anyway: the gate removes only the rare tail draw inside a
// confident span (a wrong digit, a broken identifier) and leaves every uncertain position to
// sampling. Measuring before the filters needs no sort, and temperature counts: a hotter request
// is gated less often.
//
// Skipping the RNG at gated positions changes which random numbers later draws get, so a seeded
// request gives other (still reproducible, still batch-independent) tokens with the flag on.
import { isGreedy, sampleToken, type Rng } from './sampler.js';
import type { SamplingParams } from './types.js';

/** Binary entropy in nats. */
function binaryEntropy(p: number): number {
  return -p * Math.log(p) - (1 - p) * Math.log(1 - p);
}

/** Entropy (nats) below which the argmax is taken: the argmax then holds over 90% of the mass. */
export const ADAPTIVE_ENTROPY_THRESHOLD = binaryEntropy(0.9);

/**
 * Tokens more than this far below the running maximum (in logit / T) are left out of the entropy:
 * each has p < e^-30, so all of them together change it by under 1e-6 nats for vocabularies
 * below a million — and the common tail costs a comparison, not an exp.
 */
const TAIL = 30;

/**
 * The row's entropy (nats) at temperature T, and its argmax (ties to the lowest id, as argmax()).
 * One pass: the sums are kept relative to the running maximum and rescaled when it rises.
 * Masked (-inf) and NaN entries are skipped; null when no logit is finite.
 */
export function rowEntropy(row: Float32Array, temperature: number): { entropy: number; argmax: number } | null {
  const invT = 1 / temperature;
  let max = -Infinity;
  let best = -1;
  // z = Σ e^s, a = Σ s·e^s, with s = (l − max) / T.
  let z = 0;
  let a = 0;
  for (let i = 0; i < row.length; i++) {
    const l = row[i];
    if (!(l > -Infinity && l < Infinity)) continue;
    if (l > max) {
      if (z > 0) {
        const d = (max - l) * invT;
        const r = Math.exp(d);
        a = r * (a + d * z);
        z *= r;
      }
      max = l;
      best = i;
    }
    const s = (l - max) * invT;
    if (s > -TAIL) {
      const e = Math.exp(s);
      z += e;
      a += s * e;
    }
  }
  if (best < 0) return null;
  // p_i = e^s_i / z, so H = −Σ p_i ln p_i = ln z − a / z.
  return { entropy: Math.max(0, Math.log(z) - a / z), argmax: best };
}

/**
 * The argmax when the row is confident enough to skip the draw (entropy below the threshold),
 * else null (sample it). Greedy parameters give null: the sampler takes their argmax itself.
 */
export function adaptiveGreedy(row: Float32Array, p: SamplingParams): number | null {
  if (isGreedy(p)) return null;
  const r = rowEntropy(row, p.temperature);
  return r !== null && r.entropy < ADAPTIVE_ENTROPY_THRESHOLD ? r.argmax : null;
}

/** Draws a token from a processed logits row. */
export type TokenSampler = (row: Float32Array, p: SamplingParams, rng: Rng) => number;

/** sampleToken behind the entropy gate. */
export const adaptiveSampleToken: TokenSampler = (row, p, rng) => adaptiveGreedy(row, p) ?? sampleToken(row, p, rng);

/** The step loop's sampler: plain sampleToken unless --adaptive-sampling. */
export function tokenSampler(adaptive: boolean): TokenSampler {
  return adaptive ? adaptiveSampleToken : sampleToken;
}
