// --adaptive-sampling: entropy-gated greedy. For a row that samples (temperature > 0, top-k ≠ 1),
// the Shannon entropy of the distribution a draw starts from — softmax(logits / T) over the row
// after the logits processors, before the truncation filters — is measured; below
// ADAPTIVE_ENTROPY_THRESHOLD the argmax is taken and no random number is consumed, else the row
// is sampled as usual. The measuring pass stops as soon as the row is seen not to qualify
// (adaptiveGreedy), so an uncertain row costs little more than finding its maximum.
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
import { isGreedy, sampleToken, verifyDraft, type Rng } from './sampler.js';
import type { SamplingParams } from './types.js';

/** Binary entropy in nats. */
function binaryEntropy(p: number): number {
  return -p * Math.log(p) - (1 - p) * Math.log(1 - p);
}

/** The argmax's least share of the mass where the gate may fire. */
const GATE_P_MAX = 0.9;

/** Entropy (nats) below which the argmax is taken: h(0.9), so the argmax then holds over 90% of the mass. */
export const ADAPTIVE_ENTROPY_THRESHOLD = binaryEntropy(GATE_P_MAX);

/**
 * Tokens more than this far below the maximum (in logit / T) are left out of the entropy: each has
 * p < e^-30, so all of them together change it by under 1e-6 nats for vocabularies below a
 * million — and the common tail costs a comparison, not an exp.
 */
const TAIL = 30;

/** 2^k for k = -64 … 0: the integer part of expTail's power. */
const POW2 = Float64Array.from({ length: 65 }, (_, i) => 2 ** (i - 64));

/**
 * e^s for s in (-TAIL, 0], within 1e-6 relative: 2^k · e^f with k = ⌊s·log2 e⌋ from a table and e^f,
 * f in [0, ln 2), by its Taylor series to degree 7. About twice as fast as Math.exp, which a
 * confident row calls once per token within TAIL of its maximum.
 */
function expTail(s: number): number {
  const x = s * Math.LOG2E;
  const k = Math.floor(x);
  const f = (x - k) * Math.LN2;
  const ef = 1 + f * (1 + f * (1 / 2 + f * (1 / 6 + f * (1 / 24 + f * (1 / 120 + f * (1 / 720 + f / 5040))))));
  return POW2[k + 64]! * ef;
}

/** Index of the largest finite logit (ties to the lowest id, as argmax()); -1 when none is finite. */
function finiteArgmax(row: Float32Array): number {
  let best = -1;
  let max = -Infinity;
  for (let i = 0; i < row.length; i++) {
    const l = row[i];
    if (l > max && l < Infinity) {
      max = l;
      best = i;
    }
  }
  return best;
}

/**
 * Entropy (nats) of softmax(row / T) given its maximum; Infinity as soon as the partition sum
 * reaches `stopAt` (relative to the maximum's e^0 = 1), which bounds p_max = 1 / z from above.
 */
function entropyGivenMax(row: Float32Array, invT: number, max: number, stopAt: number): number {
  // z = Σ e^s, a = Σ s·e^s, with s = (l − max) / T ≤ 0. Masked (-inf) and NaN entries fail the test.
  let z = 0;
  let a = 0;
  for (let i = 0; i < row.length; i++) {
    const s = (row[i] - max) * invT;
    if (s > -TAIL) {
      const e = expTail(s);
      z += e;
      a += s * e;
      if (z >= stopAt) return Infinity;
    }
  }
  // p_i = e^s_i / z, so H = −Σ p_i ln p_i = ln z − a / z.
  return Math.max(0, Math.log(z) - a / z);
}

/**
 * The row's entropy (nats) at temperature T, and its argmax; null when no logit is finite.
 * Masked (-inf) and NaN entries are skipped. (The gate itself stops early: adaptiveGreedy.)
 */
export function rowEntropy(row: Float32Array, temperature: number): { entropy: number; argmax: number } | null {
  const best = finiteArgmax(row);
  if (best < 0) return null;
  return { entropy: entropyGivenMax(row, 1 / temperature, row[best], Infinity), argmax: best };
}

/**
 * The argmax when the row is confident enough to skip the draw (entropy below the threshold),
 * else null (sample it). Greedy parameters give null: the sampler takes their argmax itself.
 *
 * Two passes, the second cut short: the maximum (comparisons only), then the sums, stopped as soon
 * as the mass outside the argmax shows p_max ≤ 0.9 — below h(0.9) needs p_max > 0.9 — so an
 * uncertain row costs a few exps, and only a row that may be gated is summed in full.
 */
export function adaptiveGreedy(row: Float32Array, p: SamplingParams): number | null {
  if (isGreedy(p)) return null;
  const best = finiteArgmax(row);
  if (best < 0) return null;
  const entropy = entropyGivenMax(row, 1 / p.temperature, row[best], 1 / GATE_P_MAX);
  return entropy < ADAPTIVE_ENTROPY_THRESHOLD ? best : null;
}

/**
 * Picks the token at a processed logits row: a draw, or — where a drafter proposed a token
 * (`proposed` ≥ 0) — the verdict on that draft (verifyDraft), which keeps the draw's distribution.
 */
export type TokenSampler = (row: Float32Array, p: SamplingParams, rng: Rng, proposed: number) => number;

/** sampleToken, or verifyDraft at a draft row. */
export const plainSampleToken: TokenSampler = (row, p, rng, proposed) =>
  proposed >= 0 ? verifyDraft(row, p, rng, proposed) : sampleToken(row, p, rng);

/** plainSampleToken behind the entropy gate: a gated row takes its argmax (and keeps a draft only when it is that). */
export const adaptiveSampleToken: TokenSampler = (row, p, rng, proposed) =>
  adaptiveGreedy(row, p) ?? plainSampleToken(row, p, rng, proposed);

/** The step loop's sampler: plain unless --adaptive-sampling. */
export function tokenSampler(adaptive: boolean): TokenSampler {
  return adaptive ? adaptiveSampleToken : plainSampleToken;
}
