import { test } from 'node:test';
import assert from 'node:assert/strict';
import { argmax, candidates, createRng, logprobsFor, Rng, sampleToken, selectTop } from '../../src/engine/sampler.js';
import type { SamplingParams } from '../../src/engine/types.js';

const OFF: SamplingParams = { temperature: 1, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 1 };
const params = (p: Partial<SamplingParams>): SamplingParams => ({ ...OFF, ...p });

/** Logits whose softmax (at temperature 1) is exactly `probs`. */
const fromProbs = (probs: number[]) => Float32Array.from(probs.map(Math.log));

function randomLogits(n: number, seed: number, scale = 3): Float32Array {
  const rng = new Rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (rng.next() + rng.next() + rng.next() - 1.5) * scale;
  return out;
}

const sortedIds = (ids: Int32Array) => [...ids].sort((a, b) => a - b);

test('temperature 0 picks the argmax and never touches the RNG', () => {
  const logits = randomLogits(5000, 7);
  const want = argmax(logits);
  const rng = new Rng(3);
  const twin = new Rng(3);
  for (let i = 0; i < 5; i++) assert.equal(sampleToken(logits, params({ temperature: 0 }), rng), want);
  assert.equal(rng.nextU32(), twin.nextU32());
});

test('argmax breaks ties toward the lowest id and ignores NaN', () => {
  assert.equal(argmax(Float32Array.from([1, 3, NaN, 3, 2])), 1);
  assert.equal(argmax(Float32Array.from([NaN, -Infinity, -5])), 2);
});

test('top-k 1 equals greedy at any temperature', () => {
  for (let s = 0; s < 5; s++) {
    const logits = randomLogits(2000, 100 + s);
    assert.equal(sampleToken(logits, params({ topK: 1, temperature: 1.5 }), new Rng(s)), argmax(logits));
  }
});

test('top-k keeps exactly the k best', () => {
  const logits = Float32Array.from([0.1, 5, -2, 3, 4, 3.5, 0]);
  assert.deepEqual(sortedIds(candidates(logits, params({ topK: 3 }))), [1, 4, 5]);
});

test('min-p keeps tokens with p ≥ min_p · p_max, relative to the tempered distribution', () => {
  const logits = fromProbs([0.5, 0.3, 0.15, 0.05]);
  // 0.2 · 0.5 = 0.1: the 0.05 token goes.
  assert.deepEqual(sortedIds(candidates(logits, params({ minP: 0.2 }))), [0, 1, 2]);
  // At temperature 0.5 the ratios square: 0.15/0.5 = 0.3 → 0.09 < 0.2, so only 0 and 1 stay (0.36 ≥ 0.2).
  assert.deepEqual(sortedIds(candidates(logits, params({ minP: 0.2, temperature: 0.5 }))), [0, 1]);
});

test('top-p keeps the smallest most-likely prefix reaching the mass', () => {
  const logits = fromProbs([0.15, 0.5, 0.05, 0.3]);
  assert.deepEqual(sortedIds(candidates(logits, params({ topP: 0.75 }))), [1, 3]);
  assert.deepEqual(sortedIds(candidates(logits, params({ topP: 0.85 }))), [0, 1, 3]);
  assert.deepEqual(sortedIds(candidates(logits, params({ topP: 0.4 }))), [1]);
});

test('top-p is applied to what top-k left, renormalized', () => {
  const logits = fromProbs([0.4, 0.3, 0.2, 0.1]);
  // After top-k 2: 0.4/0.7 = 0.571, so top-p 0.6 needs both.
  assert.deepEqual(sortedIds(candidates(logits, params({ topK: 2, topP: 0.6 }))), [0, 1]);
  assert.deepEqual(sortedIds(candidates(logits, params({ topK: 2, topP: 0.5 }))), [0]);
});

test('top-n-sigma keeps logits within n standard deviations of the max', () => {
  const logits = Float32Array.from([10, 8, 5, 0, 0, 0, 0, 0]);
  const mean = 23 / 8;
  const sigma = Math.sqrt(logits.reduce((s, l) => s + (l - mean) ** 2, 0) / 8); // ≈ 3.92
  assert.ok(sigma > 3.9 && sigma < 3.95);
  // n = 1: threshold 10 − 3.92 ≈ 6.08 keeps 10 and 8; n = 1.5 (threshold ≈ 4.12) also keeps 5.
  assert.deepEqual(sortedIds(candidates(logits, params({ topNSigma: 1 }))), [0, 1]);
  assert.deepEqual(sortedIds(candidates(logits, params({ topNSigma: 1.5 }))), [0, 1, 2]);
  // Scale-invariant: temperature does not change the set.
  assert.deepEqual(sortedIds(candidates(logits, params({ topNSigma: 1, temperature: 0.3 }))), [0, 1]);
});

test('masked (-Infinity) tokens are never sampled', () => {
  const logits = Float32Array.from([-Infinity, 0, -Infinity, 0]);
  const rng = new Rng(9);
  for (let i = 0; i < 200; i++) assert.ok([1, 3].includes(sampleToken(logits, OFF, rng)));
});

test('the same seed gives the same samples; another seed gives others', () => {
  const logits = randomLogits(1000, 5, 1);
  const p = params({ temperature: 1, topK: 50 });
  const draw = (seed: number) => {
    const rng = createRng(seed);
    return Array.from({ length: 40 }, () => sampleToken(logits, p, rng));
  };
  assert.deepEqual(draw(42), draw(42));
  assert.notDeepEqual(draw(42), draw(43));
  // Seeds beyond 32 bits and negative seeds are distinct seeds too.
  assert.notDeepEqual(draw(2 ** 40 + 42), draw(42));
  assert.notDeepEqual(draw(-42), draw(42));
});

test('draw frequencies follow the tempered, filtered distribution', () => {
  const N = 20000;
  const count = (logits: Float32Array, p: SamplingParams) => {
    const rng = new Rng(1234);
    const c = new Array(logits.length).fill(0);
    for (let i = 0; i < N; i++) c[sampleToken(logits, p, rng)]++;
    return c.map((x) => x / N);
  };
  const logits = fromProbs([0.5, 0.3, 0.15, 0.05]);
  const near = (got: number[], want: number[]) => got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) < 0.015, `${got} vs ${want}`));
  near(count(logits, OFF), [0.5, 0.3, 0.15, 0.05]);
  // Temperature 0.5 squares the probabilities before renormalizing.
  const sq = [0.25, 0.09, 0.0225, 0.0025];
  const z = sq.reduce((a, b) => a + b);
  near(
    count(logits, params({ temperature: 0.5 })),
    sq.map((x) => x / z),
  );
  // Top-k 2 renormalizes over the two survivors.
  near(count(logits, params({ topK: 2 })), [0.625, 0.375, 0, 0]);
});

test('top-p over a 152k vocabulary matches a brute-force full sort', () => {
  const V = 151936;
  const logits = randomLogits(V, 77, 4);
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
  const probs = Array.from(logits, (l) => Math.exp(l));
  const total = probs.reduce((a, b) => a + b);
  let cum = 0;
  let want = 0;
  while (cum < 0.9 * total) cum += probs[order[want++]];
  const got = candidates(logits, params({ topP: 0.9 }));
  assert.equal(got.length, want);
  assert.deepEqual(
    sortedIds(got),
    order.slice(0, want).sort((a, b) => a - b),
  );
});

test('selectTop puts the k best first, with ties broken by id', () => {
  const logits = Float32Array.from({ length: 300 }, (_, i) => (i * 37) % 11);
  for (const k of [1, 5, 27, 299, 300]) {
    const idx = Int32Array.from({ length: 300 }, (_, i) => 299 - i);
    selectTop(idx, 300, k, logits);
    const want = Array.from({ length: 300 }, (_, i) => i)
      .sort((a, b) => logits[b] - logits[a] || a - b)
      .slice(0, k);
    assert.deepEqual(
      sortedIds(idx.subarray(0, k)),
      [...want].sort((a, b) => a - b),
    );
  }
});

test('logprobs are the log-softmax of the raw logits, top-N sorted', () => {
  const logits = fromProbs([0.1, 0.6, 0.3]);
  const lp = logprobsFor(logits, 2, 2);
  assert.equal(lp.id, 2);
  assert.ok(Math.abs(lp.logprob - Math.log(0.3)) < 1e-6);
  assert.deepEqual(
    lp.top.map((t) => t.id),
    [1, 2],
  );
  assert.ok(Math.abs(lp.top[0].logprob - Math.log(0.6)) < 1e-6);
  assert.equal(logprobsFor(logits, 0, 0).top.length, 0);
});

test('top-p over many equal logits keeps exactly the needed share', () => {
  const logits = new Float32Array(5000).fill(1.5);
  assert.equal(candidates(logits, params({ topP: 0.5 })).length, 2500);
});

test("top-p when most of the vocabulary shares one logit (a trained model's unused tokens)", () => {
  const V = 151936;
  const logits = new Float32Array(V);
  for (let i = 0; i < 2000; i++) logits[(i * 7919) % V] = ((i % 41) - 20) / 4;
  const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => logits[b] - logits[a] || a - b);
  for (const [topP, temperature] of [
    [0.5, 1],
    [0.99, 1.5],
  ]) {
    const w = Array.from(logits, (l) => Math.exp(l / temperature));
    const total = w.reduce((a, b) => a + b);
    let cum = 0;
    let want = 0;
    while (cum < topP * total) cum += w[order[want++]];
    const got = candidates(logits, params({ topP, temperature }));
    assert.equal(got.length, want);
    assert.deepEqual(
      sortedIds(got),
      order.slice(0, want).sort((a, b) => a - b),
    );
  }
});
