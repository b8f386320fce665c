// The online step-time model against synthetic linear costs: it learns them, follows a change,
// and never predicts a negative time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepTimeModel, chunkAttention, stepShape, type StepShape } from '../../src/engine/step-time-model.js';

/** A deterministic pseudo-random stream in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Steps like the engine's: d decodes at some context, plus sometimes a prefill chunk. */
function randomShape(r: () => number): StepShape {
  const decodes = Math.floor(r() * 8);
  const chunks = Array.from({ length: decodes }, () => ({ start: Math.floor(r() * 2000), length: 1, sample: true }));
  if (decodes === 0 || r() < 0.6) {
    const length = 1 + Math.floor(r() * 1024);
    chunks.push({ start: Math.floor(r() * 3000), length, sample: r() < 0.3 });
  }
  return stepShape(chunks);
}

const cost = (c: number[], s: StepShape) => c[0] + c[1] * s.tokens + c[2] * s.samples + c[3] * s.attention;

test('step shape: tokens, sampled rows and attended positions of the chunks', () => {
  assert.equal(chunkAttention(0, 4), 1 + 2 + 3 + 4);
  assert.equal(chunkAttention(10, 1), 11);
  assert.deepEqual(
    stepShape([
      { start: 10, length: 1, sample: true },
      { start: 0, length: 4, sample: false },
    ]),
    { tokens: 5, samples: 1, attention: 21 },
  );
});

test('not ready before minSteps; predictions are never negative', () => {
  const m = new StepTimeModel({ minSteps: 3 });
  assert.equal(m.ready, false);
  assert.equal(m.predict({ tokens: 100, samples: 1, attention: 1000 }), 0);
  // Costs that fall as the step grows would fit negative coefficients: they are clamped at 0.
  m.observe({ tokens: 1, samples: 1, attention: 1 }, 10);
  m.observe({ tokens: 100, samples: 1, attention: 5000 }, 5);
  m.observe({ tokens: 1000, samples: 1, attention: 500000 }, 1);
  assert.equal(m.ready, true);
  for (const c of m.costs()) assert.ok(c >= 0, `cost ${c}`);
  assert.ok(m.predict({ tokens: 5000, samples: 0, attention: 1e7 }) >= 0);
});

test('learns a synthetic linear step cost', () => {
  const truth = [2, 0.05, 0.8, 2e-5]; // ms per step, per token, per sample, per attended position
  const m = new StepTimeModel();
  const r = rng(1);
  for (let i = 0; i < 200; i++) {
    const s = randomShape(r);
    m.observe(s, cost(truth, s) * (1 + 0.02 * (r() - 0.5))); // 1% noise
  }
  const costs = m.costs();
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(costs[i] - truth[i]) <= 0.1 * truth[i], `cost ${i}: ${costs[i]} vs ${truth[i]}`);
  for (let i = 0; i < 20; i++) {
    const s = randomShape(r);
    const want = cost(truth, s);
    assert.ok(Math.abs(m.predict(s) - want) <= 0.03 * want, `predicted ${m.predict(s)} for ${want}`);
  }
});

test('adapts when the costs change (the machine got busier)', () => {
  const before = [1, 0.02, 0.5, 1e-5];
  const after = before.map((c) => c * 3);
  const m = new StepTimeModel();
  const r = rng(2);
  for (let i = 0; i < 150; i++) {
    const s = randomShape(r);
    m.observe(s, cost(before, s));
  }
  const probe: StepShape = { tokens: 516, samples: 4, attention: chunkAttention(1000, 512) + 4 * 800 };
  assert.ok(Math.abs(m.predict(probe) - cost(before, probe)) <= 0.02 * cost(before, probe));
  for (let i = 0; i < 150; i++) {
    const s = randomShape(r);
    m.observe(s, cost(after, s));
  }
  assert.ok(Math.abs(m.predict(probe) - cost(after, probe)) <= 0.05 * cost(after, probe), `${m.predict(probe)} vs ${cost(after, probe)}`);
});

test('predictions are trusted up to twice the largest step seen', () => {
  const m = new StepTimeModel();
  assert.equal(m.covers({ tokens: 1, samples: 1, attention: 1 }), false);
  m.observe({ tokens: 100, samples: 1, attention: 5000 }, 10);
  m.observe({ tokens: 4, samples: 4, attention: 9000 }, 10);
  assert.equal(m.covers({ tokens: 200, samples: 8, attention: 18000 }), true);
  assert.equal(m.covers({ tokens: 201, samples: 1, attention: 1 }), false);
  assert.equal(m.covers({ tokens: 1, samples: 1, attention: 18001 }), false);
});

test('margin follows the 90th percentile of measured / predicted time', () => {
  const truth = [2, 0.05, 0.8, 2e-5];
  const m = new StepTimeModel();
  const r = rng(3);
  for (let i = 0; i < 600; i++) {
    const s = randomShape(r);
    m.observe(s, cost(truth, s) * (0.8 + 0.4 * r())); // ±20%, uniform: the 90th percentile is 1.16
  }
  assert.ok(m.margin > 1.08 && m.margin < 1.25, `${m.margin}`);
  for (let i = 0; i < 600; i++) {
    const s = randomShape(r);
    m.observe(s, cost(truth, s));
  }
  assert.ok(m.margin > 0.95 && m.margin < 1.05, `${m.margin}`);
});
