// The real scheduler and block manager over plain sequences; "the model" is a fixed next token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from '../../src/engine/block-manager.js';
import { Scheduler, type ScheduledBatch } from '../../src/engine/scheduler.js';
import { createSequence, numCompletionTokens, type Sequence } from '../../src/engine/sequence.js';
import type { GenerationRequest } from '../../src/engine/types.js';

let nextId = 1;
function seq(promptLen: number, maxTokens: number, stop: number[] = []): Sequence {
  const req: GenerationRequest = {
    promptTokens: Array.from({ length: promptLen }, (_, i) => 100 + i),
    maxTokens,
    sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 0 },
    stopTokenIds: stop,
    timeoutMs: 0,
    logprobs: 0,
  };
  return createSequence(nextId++, req, Date.now());
}

const TOKEN = 7;
/** One engine step without a model: every sampling chunk yields TOKEN. */
function step(s: Scheduler): ScheduledBatch {
  const batch = s.schedule();
  s.postprocess(
    batch,
    batch.chunks.filter((c) => c.sample).map(() => [TOKEN]),
  );
  return batch;
}

/** Checks that every scheduled chunk's tokens have KV slots and no two running sequences share a block. */
function checkInvariants(s: Scheduler, bm: BlockManager): void {
  const owned = s.running.flatMap((q) => q.blockTable);
  assert.equal(new Set(owned).size, owned.length, 'a block is owned twice');
  assert.equal(bm.usedBlocks(), owned.length, 'used blocks not owned by a running sequence');
  for (const q of s.waiting) assert.equal(q.blockTable.length, 0);
}

test('a long prompt is prefilled in chunks within the prefill budget, then decodes', () => {
  const bm = new BlockManager(64, 16);
  const s = new Scheduler({ maxBatchSize: 4, maxPrefillTokens: 16 }, bm);
  const a = seq(50, 3);
  s.add(a);
  const shapes: [number, number, boolean][] = [];
  while (s.hasWork()) {
    const b = step(s);
    shapes.push(...b.chunks.map((c): [number, number, boolean] => [c.start, c.length, c.sample]));
    if (a.status !== 'finished') checkInvariants(s, bm);
  }
  assert.deepEqual(shapes, [
    [0, 16, false],
    [16, 16, false],
    [32, 16, false],
    [48, 2, true],
    [50, 1, true],
    [51, 1, true],
  ]);
  assert.deepEqual(a.tokens.slice(50), [TOKEN, TOKEN, TOKEN]);
  assert.equal(a.finishReason, 'length');
  assert.equal(bm.usedBlocks(), 0);
});

test('decodes run beside prefill chunks, which shrink to a quarter of the budget while others decode', () => {
  const bm = new BlockManager(64, 16);
  // Budget 32, a quarter (8) in steps with decodes; 4 slots, so each prefill is promised up to 8.
  const s = new Scheduler({ maxBatchSize: 4, maxPrefillTokens: 32 }, bm);
  const a = seq(4, 10);
  s.add(a);
  step(s); // a prefilled and sampled its first token
  const b = seq(20, 10);
  s.add(b);
  const batch = step(s);
  assert.deepEqual(
    batch.chunks.map((c) => [c.seq.id, c.start, c.length]),
    [
      [a.id, 4, 1],
      [b.id, 0, 8],
    ],
  );
  assert.equal(batch.numTokens, 9);
});

test('at most maxBatchSize sequences run; the rest wait in FIFO order', () => {
  const bm = new BlockManager(64, 16);
  const s = new Scheduler({ maxBatchSize: 2, maxPrefillTokens: 1000 }, bm);
  const seqs = [seq(5, 2), seq(5, 4), seq(5, 2)];
  for (const q of seqs) s.add(q);
  let batch = step(s);
  assert.deepEqual(
    batch.chunks.map((c) => c.seq.id),
    [seqs[0].id, seqs[1].id],
  );
  assert.equal(s.waiting.length, 1);
  step(s); // seqs[0] finishes (2 tokens)
  assert.equal(seqs[0].status, 'finished');
  batch = step(s); // seqs[2] joins between steps
  assert.deepEqual(
    batch.chunks.map((c) => c.seq.id),
    [seqs[1].id, seqs[2].id],
  );
  while (s.hasWork()) step(s);
  assert.equal(bm.usedBlocks(), 0);
});

test('a new arrival gets a step within one prefill chunk while a long prompt is prefilled', () => {
  // Budget 64 over 4 slots: each prefill of a step is promised min(need, 16) tokens.
  const bm = new BlockManager(256, 16);
  const s = new Scheduler({ maxBatchSize: 4, maxPrefillTokens: 64 }, bm);
  const long = seq(1000, 2);
  s.add(long);
  let batch = step(s);
  assert.deepEqual(
    batch.chunks.map((c) => [c.seq.id, c.start, c.length]),
    [[long.id, 0, 64]],
    'alone, the long prompt takes the whole budget',
  );
  // A 5-token prompt arrives mid-prefill: the very next step prefills all of it and samples its first token.
  const short = seq(5, 3);
  s.add(short);
  batch = step(s);
  assert.deepEqual(
    batch.chunks.map((c) => [c.seq.id, c.start, c.length, c.sample]),
    [
      [long.id, 64, 16, false],
      [short.id, 0, 5, true],
    ],
    'a shared step prefills a quarter of the budget (16) or the shares promised (16 + 5), whichever is more',
  );
  // A longer arrival is chunked at its share; the older prefill keeps the rest.
  const medium = seq(100, 1);
  s.add(medium);
  batch = step(s);
  assert.deepEqual(
    batch.chunks.map((c) => [c.seq.id, c.start, c.length]),
    [
      [long.id, 80, 16],
      [short.id, 5, 1],
      [medium.id, 0, 16],
    ],
    'with a decode in the step, the prefills get their shares (more than a quarter of the budget), no more',
  );
  // Everyone finishes; decodes never waited for the long prefill.
  let steps = 0;
  while (short.status !== 'finished') {
    step(s);
    steps++;
  }
  assert.equal(steps, 1, 'the short sequence decodes every step');
  while (s.hasWork()) {
    step(s);
    checkInvariants(s, bm);
  }
  assert.equal(long.finishReason, 'length');
  assert.equal(medium.finishReason, 'length');
  assert.equal(bm.usedBlocks(), 0);
});

test('a lone long prompt gets the whole prefill budget every step (no throughput lost to fairness)', () => {
  const bm = new BlockManager(256, 16);
  const s = new Scheduler({ maxBatchSize: 8, maxPrefillTokens: 100 }, bm);
  const a = seq(450, 1);
  s.add(a);
  const lengths: number[] = [];
  while (s.hasWork()) lengths.push(...step(s).chunks.map((c) => c.length));
  assert.deepEqual(lengths, [100, 100, 100, 100, 50]);
});

test('prefills of equal age keep FIFO preference: the older takes the budget beyond the shares', () => {
  const bm = new BlockManager(256, 16);
  const s = new Scheduler({ maxBatchSize: 4, maxPrefillTokens: 64 }, bm);
  const a = seq(200, 1);
  const b = seq(200, 1);
  const c = seq(200, 1);
  s.add(a);
  s.add(b);
  s.add(c);
  const batch = step(s);
  assert.deepEqual(
    batch.chunks.map((ch) => [ch.seq.id, ch.length]),
    [
      [a.id, 32],
      [b.id, 16],
      [c.id, 16],
    ],
  );
  while (s.hasWork()) {
    step(s);
    checkInvariants(s, bm);
  }
  assert.equal(bm.usedBlocks(), 0);
});

test('a stop token ends a sequence before max tokens', () => {
  const bm = new BlockManager(8, 16);
  const s = new Scheduler({ maxBatchSize: 2, maxPrefillTokens: 100 }, bm);
  const a = seq(3, 10, [TOKEN]);
  s.add(a);
  step(s);
  assert.equal(a.finishReason, 'stop');
  assert.equal(numCompletionTokens(a), 1);
  assert.equal(s.hasWork(), false);
});

test('when blocks run out the newest sequence is preempted and later recomputed', () => {
  // 6 blocks of 4 tokens = 24 tokens; each sequence grows to 6 + 10 = 16 tokens (4 blocks).
  const bm = new BlockManager(6, 4);
  const s = new Scheduler({ maxBatchSize: 4, maxPrefillTokens: 64 }, bm);
  const old = seq(6, 10);
  const young = seq(6, 10);
  s.add(old);
  s.add(young);
  let sawPreemption = false;
  let sawRecompute = false;
  for (let i = 0; s.hasWork(); i++) {
    assert.ok(i < 100, 'no progress');
    const batch = s.schedule();
    if (young.numPreemptions > 0 && !sawPreemption) {
      sawPreemption = true;
      // The oldest keeps running; the victim is back at the head of the queue with no blocks.
      assert.equal(old.numPreemptions, 0);
      assert.equal(s.waiting[0], young);
      assert.equal(young.numCached, 0);
    }
    for (const c of batch.chunks) {
      // After preemption the victim re-runs prompt and generated tokens from position 0.
      if (c.seq === young && young.numPreemptions > 0 && c.start === 0) {
        sawRecompute = true;
        assert.ok(c.length > young.numPromptTokens);
      }
    }
    s.postprocess(
      batch,
      batch.chunks.filter((c) => c.sample).map(() => [TOKEN]),
    );
    checkInvariants(s, bm);
  }
  assert.ok(sawPreemption && sawRecompute);
  assert.equal(old.finishReason, 'length');
  assert.equal(young.finishReason, 'length');
  assert.equal(numCompletionTokens(young), 10);
  assert.equal(bm.usedBlocks(), 0);
});

test('finish (cancel, timeout) frees a sequence from either queue', () => {
  const bm = new BlockManager(16, 4);
  const s = new Scheduler({ maxBatchSize: 1, maxPrefillTokens: 64 }, bm);
  const a = seq(10, 5);
  const b = seq(10, 5);
  s.add(a);
  s.add(b);
  step(s);
  assert.equal(a.status, 'running');
  assert.ok(bm.usedBlocks() > 0);
  s.finish(b, 'cancelled');
  s.finish(a, 'timeout');
  s.finish(a, 'timeout'); // idempotent
  assert.equal(s.hasWork(), false);
  assert.equal(bm.usedBlocks(), 0);
  assert.equal(a.finishReason, 'timeout');
  assert.equal(b.finishReason, 'cancelled');
});

// ---------------------------------------------------------------------------------------------
// Several tokens per step (what speculative verification will hand postprocess)

const STOP = 2;

/** Prefills `q` alone and hands it `tokens` in the step that samples its first token. */
function prefillThenTake(s: Scheduler, q: Sequence, tokens: number[]) {
  s.add(q);
  const batch = s.schedule();
  assert.deepEqual(
    batch.chunks.map((c) => [c.seq.id, c.sample]),
    [[q.id, true]],
  );
  return s.postprocess(batch, [tokens]);
}

test('several tokens in one step: a stop token in the middle ends the sequence and drops the rest', () => {
  const bm = new BlockManager(8, 4);
  const s = new Scheduler({ maxBatchSize: 2, maxPrefillTokens: 100 }, bm);
  const a = seq(3, 10, [STOP]);
  const finished = prefillThenTake(s, a, [5, 6, STOP, 8, 9]);
  assert.deepEqual(
    finished.map((f) => [f.seq, f.reason, f.taken]),
    [[a, 'stop', 3]],
  );
  assert.deepEqual(a.tokens.slice(3), [5, 6, STOP]);
  assert.equal(a.finishReason, 'stop');
  assert.equal(bm.usedBlocks(), 0);
  assert.equal(s.hasWork(), false);
});

test('several tokens in one step: reaching max tokens in the middle ends it with length', () => {
  const bm = new BlockManager(8, 4);
  const s = new Scheduler({ maxBatchSize: 2, maxPrefillTokens: 100 }, bm);
  const a = seq(3, 2, [STOP]);
  const finished = prefillThenTake(s, a, [5, 6, 7, STOP]);
  assert.deepEqual(
    finished.map((f) => [f.reason, f.taken]),
    [['length', 2]],
  );
  assert.deepEqual(a.tokens.slice(3), [5, 6]);
  assert.equal(numCompletionTokens(a), 2);
  assert.equal(bm.usedBlocks(), 0);
});

test('several tokens in one step: all are appended, and the next step runs them through the model with KV for each', () => {
  const bm = new BlockManager(8, 4);
  const s = new Scheduler({ maxBatchSize: 2, maxPrefillTokens: 100 }, bm);
  const a = seq(5, 10);
  assert.deepEqual(prefillThenTake(s, a, [11, 12, 13]), []);
  assert.deepEqual(a.tokens.slice(5), [11, 12, 13]);
  assert.equal(a.numCached, 5); // the prompt; the three new tokens are not in the cache yet
  assert.equal(a.blockTable.length, 2);
  const b = seq(3, 10);
  s.add(b);

  // Next step: a's three tokens as one sampling chunk (blocks for all of them), b's prefill beside it.
  const batch = s.schedule();
  assert.deepEqual(
    batch.chunks.map((c) => [c.seq.id, c.start, c.length, c.sample]),
    [
      [a.id, 5, 3, true],
      [b.id, 0, 3, true],
    ],
  );
  assert.equal(a.blockTable.length, 2); // 8 tokens = 2 blocks of 4
  assert.deepEqual(s.postprocess(batch, [[14], [21, 22]]), []);
  assert.equal(a.numCached, 8);
  assert.deepEqual(a.tokens.slice(5), [11, 12, 13, 14]);
  assert.deepEqual(b.tokens.slice(3), [21, 22]);
  checkInvariants(s, bm);

  // Then a decodes one token at a time again; b runs its extra token.
  const next = s.schedule();
  assert.deepEqual(
    next.chunks.map((c) => [c.seq.id, c.start, c.length]),
    [
      [a.id, 8, 1],
      [b.id, 3, 2],
    ],
  );
  assert.equal(a.blockTable.length, 3);
  checkInvariants(s, bm);
});
