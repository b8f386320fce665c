// Speculative decoding without a model: the n-gram lookup, the scheduler's draft room and KV
// rollback, and speculative sampling keeping the distribution of plain sampling.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from '../../src/engine/block-manager.js';
import { Scheduler } from '../../src/engine/scheduler.js';
import { createSequence } from '../../src/engine/sequence.js';
import { Rng, sampleToken, verifyDraft } from '../../src/engine/sampler.js';
import { lookup } from '../../src/engine/speculative/ngram-drafter.js';
import type { GenerationRequest, SamplingParams } from '../../src/engine/types.js';

test('n-gram lookup: the tokens after the latest occurrence of the longest matching suffix', () => {
  // No 3- or 4-token suffix repeats; [2, 3] last occurred at positions 6..7, followed by 4, 6, 2, 3.
  const tokens = [1, 2, 3, 4, 5, 9, 2, 3, 4, 6, 2, 3];
  assert.deepEqual(lookup(tokens, 3), [4, 6, 2]);
  assert.deepEqual(lookup(tokens, 10), [4, 6, 2, 3]);
  const longer = [7, 8, 9, 1, 5, 8, 9, 2, 7, 8, 9];
  // [7, 8, 9] occurs at 0..2 (followed by 1); [8, 9] more recently at 5..6 (followed by 2): the longer wins.
  assert.deepEqual(lookup(longer, 2), [1, 5]);
  assert.deepEqual(lookup([1, 2, 3, 4], 4), [], 'no repeat, no draft');
  assert.deepEqual(lookup([5, 5], 4), [], 'one-token matches are below the minimum');
  assert.deepEqual(lookup([1, 2, 1, 2], 4), [1, 2], 'a match right before the suffix proposes the overlap');
  assert.deepEqual(lookup(tokens, 0), []);
});

function seq(promptLen: number, maxTokens: number) {
  const req: GenerationRequest = {
    promptTokens: Array.from({ length: promptLen }, (_, i) => 100 + i),
    maxTokens,
    sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 0 },
    stopTokenIds: [2],
    timeoutMs: 0,
    logprobs: 0,
  };
  return createSequence(1, req, Date.now());
}

test('scheduler: a decode gets room for its draft; a verify keeps the accepted KV and rolls back the rest', () => {
  const bm = new BlockManager(16, 4);
  const s = new Scheduler({ maxBatchSize: 2, maxPrefillTokens: 100 }, bm);
  s.draftRoom = 5;
  const a = seq(6, 20);
  s.add(a);
  // The prefill step: no room (only decodes draft).
  let batch = s.schedule();
  assert.deepEqual(
    batch.chunks.map((c) => [c.start, c.length, c.room]),
    [[0, 6, 0]],
  );
  s.postprocess(batch, [[50]]);
  assert.equal(a.numCached, 6);
  // The decode: blocks for position 6 and five draft positions (7..11): 12 tokens = 3 blocks.
  batch = s.schedule();
  const chunk = batch.chunks[0];
  assert.deepEqual([chunk.start, chunk.length, chunk.room], [6, 1, 5]);
  assert.equal(a.blockTable.length, 3);
  // The step loop puts a draft of 4 in; the model agreed with 2 of them and took a third token of its own.
  chunk.draft = [51, 52, 53, 54];
  chunk.length += 4;
  assert.deepEqual(s.postprocess(batch, [[51, 52, 60]]), []);
  assert.deepEqual(a.tokens.slice(6), [50, 51, 52, 60]);
  // KV kept for 50, 51, 52 (positions 6..8); 60 is the next decode's token.
  assert.equal(a.numCached, 9);
  assert.equal(a.blockTable.length, 3, 'ceil(9 / 4) blocks kept');
  // Max tokens bound the room: 16 more may be generated, room stays 5; near the end it shrinks.
  batch = s.schedule();
  assert.equal(batch.chunks[0].room, 5);
  s.postprocess(batch, [[61]]);
  assert.equal(a.numCached, 10);
  assert.equal(a.blockTable.length, 3, 'the reserved fourth block went back to the pool');
  assert.equal(bm.usedBlocks(), 3);
});

test('scheduler: room is capped by max tokens, and drafts never take blocks another sequence needs', () => {
  const bm = new BlockManager(4, 4);
  const s = new Scheduler({ maxBatchSize: 2, maxPrefillTokens: 100 }, bm);
  s.draftRoom = 8;
  const a = seq(3, 3);
  s.add(a);
  let batch = s.schedule();
  s.postprocess(batch, [[50]]);
  batch = s.schedule();
  // Two more tokens may come: one sampled, so room for one draft.
  assert.equal(batch.chunks[0].room, 1);
  s.postprocess(batch, [[51]]);
  // A long sequence beside it takes most of the pool: a's draft room is dropped rather than preempting.
  const b = seq(11, 5);
  s.add(b);
  batch = s.schedule();
  const byId = new Map(batch.chunks.map((c) => [c.seq, c]));
  assert.equal(byId.get(a)!.room, 0);
  assert.equal(s.numPreemptions, 0);
});

test('speculative sampling: the taken token has the distribution of plain sampling, whatever the draft', () => {
  const logits = Float32Array.from([2, 1.5, 1, 0.2, -1, -3]);
  const p: SamplingParams = { temperature: 0.8, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 1 };
  const n = 40000;
  const expect = new Array<number>(logits.length).fill(0);
  const rng0 = new Rng(7);
  for (let i = 0; i < n; i++) expect[sampleToken(logits, p, rng0)]++;
  for (const draft of [0, 2, 5]) {
    const counts = new Array<number>(logits.length).fill(0);
    const rng = new Rng(11 + draft);
    for (let i = 0; i < n; i++) counts[verifyDraft(logits, p, rng, draft)]++;
    counts.forEach((c, t) => {
      const diff = Math.abs(c - expect[t]) / n;
      assert.ok(diff < 0.015, `draft ${draft}, token ${t}: ${c} vs ${expect[t]}`);
    });
  }
  // Greedy: the argmax, whatever the draft.
  const greedy = { ...p, temperature: 0 };
  assert.equal(verifyDraft(logits, greedy, new Rng(1), 3), 0);
  // A draft the filters removed is never taken.
  const topK = { ...p, topK: 2 };
  const rng = new Rng(3);
  for (let i = 0; i < 2000; i++) assert.ok(verifyDraft(logits, topK, rng, 4) <= 1);
});
