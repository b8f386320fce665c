// --adaptive-sampling: the entropy gate in front of the sampler (src/engine/adaptive-sampling.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADAPTIVE_ENTROPY_THRESHOLD,
  adaptiveGreedy,
  adaptiveSampleToken,
  plainSampleToken,
  rowEntropy,
  tokenSampler,
} from '../../src/engine/adaptive-sampling.js';
import { argmax, Rng, sampleToken, verifyDraft } from '../../src/engine/sampler.js';
import type { SamplingParams } from '../../src/engine/types.js';

const OFF: SamplingParams = { temperature: 1, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 1 };
const params = (p: Partial<SamplingParams>): SamplingParams => ({ ...OFF, ...p });

/** Logits whose softmax (at temperature 1) is `probs`, padded with a long tail of masked and tiny entries. */
function fromProbs(probs: number[], tail = 0): Float32Array {
  const row = new Float32Array(probs.length + tail);
  probs.forEach((p, i) => (row[i] = Math.log(p)));
  for (let i = probs.length; i < row.length; i++) row[i] = i % 3 === 0 ? -Infinity : -80;
  return row;
}

/** Entropy the plain two-pass way, in float64. */
function entropy(row: Float32Array, t: number): number {
  let max = -Infinity;
  for (const l of row) if (l > max) max = l;
  let z = 0;
  for (const l of row) if (l > -Infinity) z += Math.exp((l - max) / t);
  let h = 0;
  for (const l of row) {
    if (!(l > -Infinity)) continue;
    const p = Math.exp((l - max) / t) / z;
    if (p > 0) h -= p * Math.log(p);
  }
  return h;
}

function randomLogits(n: number, seed: number, scale: number): Float32Array {
  const rng = new Rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (rng.next() + rng.next() + rng.next() - 1.5) * scale;
  return out;
}

test('the threshold is h(0.9): the argmax holds over 90% of the mass below it', () => {
  assert.ok(Math.abs(ADAPTIVE_ENTROPY_THRESHOLD - 0.3250829733914482) < 1e-12);
  // Just above the threshold (0.89 / 0.11) it samples; just below (0.91 / 0.09) it is greedy.
  assert.equal(adaptiveGreedy(fromProbs([0.11, 0.89]), OFF), null);
  assert.equal(adaptiveGreedy(fromProbs([0.09, 0.91]), OFF), 1);
});

test('rowEntropy matches the two-pass entropy, in one pass, at any temperature; masked and NaN entries are skipped', () => {
  for (let s = 0; s < 6; s++) {
    // The largest logit late in the row, so the running maximum is rescaled many times.
    const row = randomLogits(20000, 40 + s, 2 + 4 * s);
    row[19000] = 30;
    for (const t of [0.3, 1, 2.5]) {
      const r = rowEntropy(row, t)!;
      assert.ok(Math.abs(r.entropy - entropy(row, t)) < 1e-6, `seed ${s}, T ${t}: ${r.entropy} vs ${entropy(row, t)}`);
      assert.equal(r.argmax, argmax(row));
    }
  }
  const masked = Float32Array.from([NaN, -Infinity, 2, NaN, 2, -Infinity]);
  const r = rowEntropy(masked, 1)!;
  assert.ok(Math.abs(r.entropy - Math.LN2) < 1e-12);
  assert.equal(r.argmax, 2, 'ties go to the lowest id');
  assert.equal(rowEntropy(Float32Array.from([-Infinity, NaN]), 1), null);
});

test('a low-entropy row always takes the argmax and never touches the RNG', () => {
  // p_max 0.95 over a 150k vocabulary with a tail: 0.26 nats.
  const row = fromProbs([0.01, 0.02, 0.95, 0.01, 0.01], 150000);
  assert.ok(rowEntropy(row, 1)!.entropy < ADAPTIVE_ENTROPY_THRESHOLD);
  for (let seed = 0; seed < 200; seed++) {
    const rng = new Rng(seed);
    const twin = new Rng(seed);
    assert.equal(adaptiveSampleToken(row, params({ seed }), rng, -1), 2);
    // A draft row at a gated position keeps the draft only when it is the argmax.
    assert.equal(adaptiveSampleToken(row, params({ seed }), new Rng(seed), 0), 2);
    assert.equal(rng.nextU32(), twin.nextU32(), 'no random number was drawn');
  }
  // The plain sampler does leave the argmax at some of those seeds.
  const picks = new Set<number>();
  for (let seed = 0; seed < 200; seed++) picks.add(sampleToken(row, params({ seed }), new Rng(seed)));
  assert.ok(picks.size > 1);
});

test('a high-entropy row is sampled as the plain sampler samples it: the draws vary', () => {
  const row = fromProbs([0.3, 0.25, 0.2, 0.15, 0.1]);
  assert.equal(adaptiveGreedy(row, OFF), null);
  const picks = new Set<number>();
  for (let seed = 0; seed < 100; seed++) {
    const token = adaptiveSampleToken(row, params({ seed }), new Rng(seed), -1);
    assert.equal(token, sampleToken(row, params({ seed }), new Rng(seed)));
    picks.add(token);
  }
  assert.equal(picks.size, 5);
});

test('temperature counts: a confident row at T 1 is sampled at T 3; greedy parameters are left to the sampler', () => {
  const row = fromProbs([0.02, 0.95, 0.02, 0.01]);
  assert.equal(adaptiveGreedy(row, params({ temperature: 1 })), 1);
  assert.equal(adaptiveGreedy(row, params({ temperature: 3 })), null);
  assert.equal(adaptiveGreedy(row, params({ temperature: 0 })), null);
  assert.equal(adaptiveGreedy(row, params({ topK: 1 })), null);
});

test('off, the step loop gets the plain sampler: sampleToken, and verifyDraft at draft rows', () => {
  assert.equal(tokenSampler(false), plainSampleToken);
  assert.equal(tokenSampler(true), adaptiveSampleToken);
  const row = fromProbs([0.3, 0.25, 0.2, 0.15, 0.1]);
  for (let seed = 0; seed < 50; seed++) {
    assert.equal(plainSampleToken(row, params({ seed }), new Rng(seed), -1), sampleToken(row, params({ seed }), new Rng(seed)));
    assert.equal(plainSampleToken(row, params({ seed }), new Rng(seed), 3), verifyDraft(row, params({ seed }), new Rng(seed), 3));
  }
});
