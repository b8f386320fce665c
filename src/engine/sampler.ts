// Turns one row of logits into a token id, and reports log-probabilities.
//
// Filter order (documented because the filters do not commute):
//   1. top-n-sigma on the raw logits (llama.cpp applies it first; it is scale-invariant, so
//      temperature does not change the kept set),
//   2. temperature (vLLM applies it before the probability filters; 0 = greedy argmax),
//   3. min-p, relative to the most likely token after temperature (vLLM: before top-k/top-p),
//   4. top-k,
//   5. top-p over what is left, renormalized,
//   6. one draw from the per-sequence RNG.
// Top-n-sigma and min-p are thresholds on the raw logit, so they are applied together in one
// pass; only the survivors are ever sorted, and top-k uses partial selection, never a full-vocab
// sort. Every non-greedy draw consumes exactly one random number, so a sequence's samples depend
// only on its own seed and logits — never on what else is in the batch.
import { randomInt } from 'node:crypto';
import type { SamplingParams, TokenLogprob } from './types.js';
import { defaultOps, nativeArgmax, nativeOps } from '../kernels/index.js';

// ---------------------------------------------------------------------------------------------
// RNG: xoshiro128** seeded through splitmix32, so any integer seed gives a well-mixed state.

export class Rng {
  private readonly s = new Uint32Array(4);

  constructor(seed: number) {
    // The seed as a 64-bit two's-complement integer (seeds can exceed 2^32 or be negative): the
    // low 32 bits seed the splitmix32 sequence, the high ones are mixed into the last word by a
    // bijection that maps 0 to 0. Distinct int64 seeds give distinct states (-1 ≠ 2^32 + 1), and
    // seeds in [0, 2^32) give the same state as before the high bits counted.
    const lo = seed >>> 0;
    const hi = Math.floor(seed / 0x100000000) >>> 0;
    let x = lo;
    for (let i = 0; i < 4; i++) {
      x = (x + 0x9e3779b9) >>> 0;
      this.s[i] = fmix32(x);
    }
    this.s[3] = (this.s[3]! ^ fmix32(hi)) >>> 0;
    if ((this.s[0] | this.s[1] | this.s[2] | this.s[3]) === 0) this.s[0] = 1;
  }

  /** Next 32 random bits. */
  nextU32(): number {
    const s = this.s;
    const r = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return r;
  }

  /** Uniform in [0, 1) with 32 bits of resolution. */
  next(): number {
    return this.nextU32() / 0x100000000;
  }
}

/** murmur3's 32-bit finalizer: a bijection on 32-bit words with fmix32(0) = 0. */
function fmix32(v: number): number {
  let z = v >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return (z ^ (z >>> 16)) >>> 0;
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** A sequence's RNG: from its request seed, or a random one when the seed is null. */
export function createRng(seed: number | null): Rng {
  return new Rng(seed ?? randomInt(0, 2 ** 48 - 1));
}

// ---------------------------------------------------------------------------------------------
// Sampling

let nativeKernels: boolean | null = null;

/**
 * Index of the largest logit; ties go to the lowest id. NaN never wins. Native (nativeArgmax: a few
 * µs over a 150k vocabulary, where this loop takes ~0.2 ms of every greedy step) unless
 * SVC_KERNELS=reference.
 */
export function argmax(logits: Float32Array): number {
  nativeKernels ??= defaultOps() === nativeOps;
  return nativeKernels ? nativeArgmax(logits) : argmaxLoop(logits);
}

/** argmax() in plain TypeScript: the reference the native kernel is tested against. */
export function argmaxLoop(logits: Float32Array): number {
  let best = 0;
  let bestVal = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    if (logits[i] > bestVal) {
      bestVal = logits[i];
      best = i;
    }
  }
  return best;
}

/** True when these parameters always pick the argmax (no random number is consumed). */
export function isGreedy(p: SamplingParams): boolean {
  return p.temperature <= 0 || p.topK === 1;
}

// Scratch index buffer, grown on demand; the worker samples one row at a time.
let scratch = new Int32Array(0);
function indexScratch(n: number): Int32Array {
  if (scratch.length < n) scratch = new Int32Array(n);
  return scratch;
}
let tokenWeights = new Float64Array(0);
function tokenWeightScratch(n: number): Float64Array {
  if (tokenWeights.length < n) tokenWeights = new Float64Array(n);
  return tokenWeights;
}
let bucketIds = new Uint16Array(0);
function bucketScratch(n: number): Uint16Array {
  if (bucketIds.length < n) bucketIds = new Uint16Array(n);
  return bucketIds;
}
let weights = new Float64Array(0);
function weightScratch(n: number): Float64Array {
  if (weights.length < n) weights = new Float64Array(n);
  return weights;
}

/**
 * The candidate token ids that survive every filter, in an unspecified (but deterministic) order.
 * Returned as a view of a shared scratch buffer: use it before the next call.
 */
export function candidates(logits: Float32Array, p: SamplingParams): Int32Array {
  const n = logits.length;
  let max = -Infinity;
  let count = 0;
  let mean = 0;
  let m2 = 0;
  for (let i = 0; i < n; i++) {
    const l = logits[i];
    if (!(l > -Infinity && l < Infinity)) continue; // skip NaN, ±inf (masked tokens)
    if (l > max) max = l;
    if (p.topNSigma > 0) {
      // Welford: one pass, numerically stable.
      count++;
      const d = l - mean;
      mean += d / count;
      m2 += d * (l - mean);
    }
  }
  if (max === -Infinity) throw new Error('sampler: no finite logit');

  let threshold = -Infinity;
  if (p.topNSigma > 0) threshold = Math.max(threshold, max - p.topNSigma * Math.sqrt(m2 / count));
  // p_i ≥ minP · p_max  ⇔  l_i / T ≥ l_max / T + ln(minP)
  if (p.minP > 0) threshold = Math.max(threshold, max + p.temperature * Math.log(p.minP));

  const idx = indexScratch(n);
  let len = 0;
  for (let i = 0; i < n; i++) {
    const l = logits[i];
    if (l >= threshold && l > -Infinity && l < Infinity) idx[len++] = i;
  }

  if (p.topK > 0 && len > p.topK) {
    selectTop(idx, len, p.topK, logits);
    len = p.topK;
    sortDescending(idx, 0, len, logits);
  }
  if (p.topP < 1 && len > 1) len = topPLength(idx, len, logits, max, p);
  return idx.subarray(0, len);
}

/**
 * The candidates (candidates()) and their weights exp((logit - max) / T), w[j] for cand[j], with
 * their sum: the distribution a draw is made from. Views of shared scratch buffers.
 */
function candidateWeights(logits: Float32Array, p: SamplingParams): { cand: Int32Array; w: Float64Array; sum: number } {
  const cand = candidates(logits, p);
  let max = -Infinity;
  for (let j = 0; j < cand.length; j++) max = Math.max(max, logits[cand[j]]);
  const invT = 1 / p.temperature;
  const w = weightScratch(cand.length);
  let sum = 0;
  for (let j = 0; j < cand.length; j++) sum += w[j] = Math.exp((logits[cand[j]] - max) * invT);
  return { cand, w, sum };
}

/** Draw the next token. Greedy parameters return the argmax without touching the RNG. */
export function sampleToken(logits: Float32Array, p: SamplingParams, rng: Rng): number {
  if (isGreedy(p)) return argmax(logits);
  const { cand, w, sum } = candidateWeights(logits, p);
  let u = rng.next() * sum;
  for (let j = 0; j < cand.length; j++) {
    u -= w[j];
    if (u < 0) return cand[j];
  }
  return cand[cand.length - 1]; // rounding left u ≥ 0 at the very end
}

/**
 * Keeps the smallest most-likely set whose mass reaches topP of the survivors' mass; returns its
 * size (the kept ids are moved to the front of idx).
 */
function topPLength(idx: Int32Array, len: number, logits: Float32Array, max: number, p: SamplingParams): number {
  const invT = 1 / p.temperature;
  // Each candidate's weight, computed once and indexed by token id.
  const w = tokenWeightScratch(logits.length);
  let total = 0;
  for (let j = 0; j < len; j++) {
    const id = idx[j];
    total += w[id] = Math.exp((logits[id] - max) * invT);
  }
  return keepMass(idx, len, p.topP * total, logits, w);
}

const SORT_LIMIT = 1024;
const NUM_BUCKETS = 4096;

/**
 * Moves the most likely ids of idx[0, len) to the front until their weight `w[id]` reaches
 * `target`; returns how many. Small sets are sorted. Large ones are bucketed by logit: buckets
 * above the one where the mass crosses the target are kept whole and only the crossing bucket is
 * refined, recursively — no full-vocabulary sort, even when most of the vocabulary shares one
 * logit (a trained model's unused tokens).
 */
function keepMass(idx: Int32Array, len: number, target: number, logits: Float32Array, w: Float64Array): number {
  if (len <= SORT_LIMIT) {
    sortDescending(idx, 0, len, logits);
    let cum = 0;
    for (let j = 0; j < len; j++) {
      cum += w[idx[j]];
      if (cum >= target) return j + 1;
    }
    return len;
  }
  let hi = -Infinity;
  let lo = Infinity;
  for (let j = 0; j < len; j++) {
    const l = logits[idx[j]];
    if (l > hi) hi = l;
    if (l < lo) lo = l;
  }
  if (hi === lo) {
    // All equal: ties rank by id, and each adds the same weight. The partitioning below keeps
    // the scan's ascending id order, so the sort is normally skipped.
    let ascending = true;
    for (let j = 1; j < len && ascending; j++) ascending = idx[j - 1] < idx[j];
    if (!ascending) idx.subarray(0, len).sort();
    return Math.min(len, Math.max(1, Math.ceil(target / w[idx[0]] - 1e-9)));
  }
  // Bucket 0 holds the highest logits.
  const scale = NUM_BUCKETS / (hi - lo);
  const buckets = bucketScratch(len);
  const mass = new Float64Array(NUM_BUCKETS);
  for (let j = 0; j < len; j++) {
    const id = idx[j];
    const b = Math.min(NUM_BUCKETS - 1, Math.floor((hi - logits[id]) * scale));
    buckets[j] = b;
    mass[b] += w[id];
  }
  let above = 0; // mass of the buckets before the crossing one
  let crossing = 0;
  while (crossing < NUM_BUCKETS - 1 && above + mass[crossing] < target) above += mass[crossing++];
  // Partition (stable): whole buckets before `crossing` first, then the crossing bucket's members.
  let kept = 0;
  const inCrossing: number[] = [];
  for (let j = 0; j < len; j++) {
    if (buckets[j] < crossing) idx[kept++] = idx[j];
    else if (buckets[j] === crossing) inCrossing.push(idx[j]);
  }
  const rest = idx.subarray(kept, kept + inCrossing.length);
  rest.set(inCrossing);
  return kept + keepMass(rest, inCrossing.length, target - above, logits, w);
}

/** True when token a ranks before token b: higher logit, then lower id (deterministic ties). */
function before(logits: Float32Array, a: number, b: number): boolean {
  const la = logits[a];
  const lb = logits[b];
  return la > lb || (la === lb && a < b);
}

/** Rearranges idx[0, len) so its first k entries are the k best (in no particular order). */
export function selectTop(idx: Int32Array, len: number, k: number, logits: Float32Array): void {
  let lo = 0;
  let hi = len - 1;
  // Pivots from a fixed pseudo-random sequence: logits are far from random (a trained model
  // leaves most of the vocabulary at one value, in id order), and fixed positions such as
  // first/middle/last then split badly. The selected set is unique, so this changes only speed.
  let x = 0x2545f491;
  const pick = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return idx[lo + ((x >>> 0) % (hi - lo + 1))];
  };
  while (lo < hi) {
    // Median of three random members, Hoare-style partition around it.
    const a = pick();
    const b = pick();
    const c = pick();
    const pivot = before(logits, a, b)
      ? before(logits, b, c)
        ? b
        : before(logits, a, c)
          ? c
          : a
      : before(logits, a, c)
        ? a
        : before(logits, b, c)
          ? c
          : b;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (before(logits, idx[i], pivot)) i++;
      while (before(logits, pivot, idx[j])) j--;
      if (i <= j) {
        const t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        i++;
        j--;
      }
    }
    // Now idx[lo..j] rank before-or-equal pivot, idx[i..hi] after-or-equal.
    if (k - 1 <= j) hi = j;
    else if (k - 1 >= i) lo = i;
    else return;
  }
}

function sortDescending(idx: Int32Array, from: number, to: number, logits: Float32Array): void {
  const part = idx.subarray(from, to);
  part.sort((a, b) => (before(logits, a, b) ? -1 : before(logits, b, a) ? 1 : 0));
}

// ---------------------------------------------------------------------------------------------
// Log-probabilities of the model's distribution (raw logits, temperature 1, before any filter —
// what vLLM reports by default).

export function logprobsFor(logits: Float32Array, token: number, topN: number): TokenLogprob {
  const n = logits.length;
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const l = logits[i];
    if (l > -Infinity) sum += Math.exp(l - max);
  }
  const logZ = max + Math.log(sum);
  const top: { id: number; logprob: number }[] = [];
  if (topN > 0) {
    const idx = indexScratch(n);
    let len = 0;
    for (let i = 0; i < n; i++) if (logits[i] > -Infinity) idx[len++] = i;
    const k = Math.min(topN, len);
    selectTop(idx, len, k, logits);
    sortDescending(idx, 0, k, logits);
    for (let j = 0; j < k; j++) top.push({ id: idx[j], logprob: logits[idx[j]] - logZ });
  }
  return { id: token, logprob: logits[token] - logZ, top };
}

// ---------------------------------------------------------------------------------------------
// Speculative verification

/**
 * The token a sequence takes at a row where a drafter proposed `draft`, with the row's
 * distribution unchanged: greedy takes the argmax (the draft is kept when it is that token). Else
 * standard speculative sampling for a deterministic drafter (a point-mass proposal q): the draft
 * is kept with probability p(draft) under the same filters and temperature as sampleToken, and
 * when it is not, the token is drawn from the residual max(0, p − q), normalized — p without the
 * draft. Overall P(token) = p(token), as when sampling. Draws one or two random numbers.
 */
export function verifyDraft(logits: Float32Array, p: SamplingParams, rng: Rng, draft: number): number {
  if (isGreedy(p)) return argmax(logits);
  const { cand, w, sum } = candidateWeights(logits, p);
  let draftWeight = 0;
  for (let j = 0; j < cand.length; j++) if (cand[j] === draft) draftWeight = w[j];
  if (rng.next() * sum < draftWeight) return draft;
  const rest = sum - draftWeight;
  let u = rng.next() * rest;
  let last = -1;
  for (let j = 0; j < cand.length; j++) {
    if (cand[j] === draft) continue;
    last = cand[j];
    u -= w[j];
    if (u < 0) return last;
  }
  // Rounding left u ≥ 0 at the very end; a draft that was the only candidate is always kept above.
  return last >= 0 ? last : draft;
}
