// The scheduler under --scheduling-policy slai, with a fake step-time model whose costs are
// known: the prefill budget of a step with decodes is what fits the deadline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from '../../src/engine/block-manager.js';
import { Scheduler, type ScheduledBatch } from '../../src/engine/scheduler.js';
import { createSequence, type Sequence } from '../../src/engine/sequence.js';
import { SLAI_FLOOR_TOKENS, SlaiPolicy } from '../../src/engine/slo-policy.js';
import { StepTimeModel, chunkAttention, stepShape, type StepShape, type StepTimePredictor } from '../../src/engine/step-time-model.js';
import type { GenerationRequest } from '../../src/engine/types.js';

let nextId = 1;
function seq(promptLen: number, maxTokens: number): Sequence {
  const req: GenerationRequest = {
    promptTokens: Array.from({ length: promptLen }, (_, i) => 100 + i),
    maxTokens,
    sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 0 },
    stopTokenIds: [],
    timeoutMs: 0,
    logprobs: 0,
  };
  return createSequence(nextId++, req, Date.now());
}

function step(s: Scheduler): ScheduledBatch {
  const batch = s.schedule();
  s.postprocess(
    batch,
    batch.chunks.filter((c) => c.sample).map(() => [7]),
  );
  return batch;
}

/** ms = perStep + perToken·tokens + perSample·samples + perAttention·attention. */
function fakeModel(perStep: number, perToken: number, perSample: number, perAttention = 0, ready = true): StepTimePredictor {
  return {
    ready,
    predict: (s: StepShape) => perStep + perToken * s.tokens + perSample * s.samples + perAttention * s.attention,
    covers: () => true,
    margin: 1,
  };
}

function slaiScheduler(model: StepTimePredictor, deadlineMs: number, maxPrefillTokens = 256, maxBatchSize = 4) {
  const slai = new SlaiPolicy(model, { deadlineMs, maxPrefillTokens });
  const s = new Scheduler({ maxBatchSize, maxPrefillTokens, slai }, new BlockManager(512, 16));
  return { s, slai };
}

const shape = (b: ScheduledBatch) => b.chunks.map((c) => [c.seq.id, c.start, c.length]);

/** A running decode: a short prompt that has sampled its first token. */
function decoding(s: Scheduler): Sequence {
  const a = seq(4, 1000);
  s.add(a);
  step(s);
  return a;
}

test('slai: with a decode running, the prefill chunk is the most that keeps the step under the deadline', () => {
  // The decode alone: 2 + 0.1 + 1 = 3.1 ms; each prefill token 0.1 ms more. 20 ms fits 169 tokens.
  const model = fakeModel(2, 0.1, 1);
  const { s, slai } = slaiScheduler(model, 20);
  const a = decoding(s);
  const b = seq(1000, 1);
  s.add(b);
  let batch = step(s);
  assert.deepEqual(shape(batch), [
    [a.id, 4, 1],
    [b.id, 0, 169],
  ]);
  assert.ok(model.predict(stepShape(batch.chunks)) <= 20);
  // The next step continues the prompt at the same size; fifo would have taken 256 / 4 = 64.
  batch = step(s);
  assert.deepEqual(shape(batch), [
    [a.id, 5, 1],
    [b.id, 169, 169],
  ]);
  assert.equal(slai.numLimited, 2);
  assert.equal(slai.numDeferred, 0);
});

test('slai: a tighter deadline shrinks the chunk; attention cost shrinks it as the context grows', () => {
  const { s } = slaiScheduler(fakeModel(2, 0.1, 1), 10);
  decoding(s);
  const b = seq(1000, 1);
  s.add(b);
  assert.equal(step(s).chunks[1].length, 69); // 3.1 + 0.1·69 = 10.0

  // Attention only: each step's chunk is smaller than the one before it, deeper in the prompt.
  const deep = slaiScheduler(fakeModel(1, 0, 0, 0.001), 10, 2048);
  decoding(deep.s);
  const c = seq(3000, 1);
  deep.s.add(c);
  const lengths: number[] = [];
  for (let i = 0; i < 5; i++) lengths.push(step(deep.s).chunks[1].length);
  for (let i = 1; i < lengths.length; i++) assert.ok(lengths[i] < lengths[i - 1], `chunks ${lengths.join(', ')}`);
  assert.equal(lengths[0], 133); // 1 + 0.001·(5 + 133·134/2) ≤ 10 < 1 + 0.001·(5 + 134·135/2)
});

test('slai: a step without decodes gets the whole budget', () => {
  const { s } = slaiScheduler(fakeModel(2, 0.1, 1), 10);
  const b = seq(1000, 1);
  s.add(b);
  assert.deepEqual(shape(step(s)), [[b.id, 0, 256]]);
  // A short waiting prompt beside it does not sample in a step it is not in yet: still all of it.
  const c = seq(5, 1);
  s.add(c);
  const batch = step(s);
  assert.equal(batch.numTokens, 256);
});

test('slai: before the model is ready the budget is fifo’s', () => {
  const { s } = slaiScheduler(fakeModel(2, 0.1, 1, 0, false), 10);
  decoding(s);
  s.add(seq(1000, 1));
  assert.equal(step(s).chunks[1].length, 64); // fifo: a quarter of 256 beside a decode
});

test('slai: when even the floor misses the deadline, prefill is deferred a few steps, then the floor runs', () => {
  // Decodes alone take 3.1 ms; a 4 ms deadline fits 9 prefill tokens, under the floor of 16.
  const { s, slai } = slaiScheduler(fakeModel(2, 0.1, 1), 4);
  const a = decoding(s);
  const b = seq(40, 1);
  s.add(b);
  const prefilled: number[] = [];
  while (b.status !== 'finished') {
    const batch = step(s);
    assert.ok(
      batch.chunks.some((c) => c.seq === a),
      'the decode runs every step',
    );
    prefilled.push(batch.numTokens - 1);
  }
  // The last 8 tokens fit the deadline: they run at once.
  assert.deepEqual(prefilled, [0, 0, 0, SLAI_FLOOR_TOKENS, 0, 0, 0, SLAI_FLOOR_TOKENS, 8]);
  assert.equal(slai.numDeferred, 6);
});

test('slai: a tight budget is shared among prefills, the oldest first, so none starves', () => {
  // 3.1 ms of decode; 12 ms fits 89 prefill tokens: under the 2 × 64 promised, so each is promised 44.
  const { s } = slaiScheduler(fakeModel(2, 0.1, 1), 12);
  const a = decoding(s);
  const b = seq(1000, 1);
  const c = seq(1000, 1);
  s.add(b);
  s.add(c);
  assert.deepEqual(shape(step(s)), [
    [a.id, 4, 1],
    [b.id, 0, 45],
    [c.id, 0, 44],
  ]);
  // With a third arrival every prefill still moves each step.
  const d = seq(1000, 1);
  s.add(d);
  const batch = step(s);
  assert.deepEqual(
    batch.chunks.map((ch) => ch.seq.id),
    [a.id, b.id, c.id, d.id],
  );
  assert.equal(batch.numTokens, 1 + 89);
});

test('slai: beside decodes, prefill grows from the largest step measured, not from costs never seen', () => {
  // Decode steps and one 64-token prefill: the fitted cost of a long chunk's attention is ~0.
  const model = new StepTimeModel();
  for (let i = 0; i < 10; i++) model.observe({ tokens: 4, samples: 4, attention: 400 }, 20);
  model.observe({ tokens: 64, samples: 0, attention: chunkAttention(0, 64) }, 30);
  const { s } = slaiScheduler(model, 100, 2048);
  decoding(s);
  s.add(seq(1000, 1));
  // Trusted up to twice the largest attention seen (2 × 2080): 5 + n(n+1)/2 ≤ 4160.
  let batch = step(s);
  assert.equal(batch.chunks[1].length, 90);
  // Once that step is measured, the next may be up to twice as big.
  const first = stepShape(batch.chunks);
  model.observe(first, 40);
  batch = step(s);
  const second = stepShape(batch.chunks);
  assert.ok(second.attention > 1.9 * first.attention && second.attention <= 2 * first.attention, JSON.stringify({ first, second }));
});
