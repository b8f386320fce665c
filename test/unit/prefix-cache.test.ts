// The radix prefix cache, the block manager's sharing / eviction / copy-on-write, and the scheduler
// using them, over a fake KV store that records which token each slot holds: every chunk must see
// its own sequence's tokens in every position it attends to, however blocks were shared.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PrefixCache } from '../../src/engine/prefix-cache.js';
import { BlockManager } from '../../src/engine/block-manager.js';
import { Scheduler, type ScheduledBatch } from '../../src/engine/scheduler.js';
import { createSequence, type Sequence } from '../../src/engine/sequence.js';
import type { GenerationRequest } from '../../src/engine/types.js';

const BS = 4;

test('PrefixCache: match walks whole blocks from the start; remove takes the subtree', () => {
  const pc = new PrefixCache(BS);
  const a = [1, 2, 3, 4, 5, 6, 7, 8, 9];
  pc.insert(a, [10, 11], 0, 2, () => assert.fail('no duplicate'));
  assert.deepEqual(pc.match(a), [10, 11]);
  assert.deepEqual(pc.match([1, 2, 3, 4, 5, 6, 7]), [10]); // second block incomplete
  assert.deepEqual(pc.match([1, 2, 3, 5, 5, 6, 7, 8]), []); // first block differs
  // Same second block under a different first block is a different prefix.
  pc.insert([0, 2, 3, 4, 5, 6, 7, 8], [12, 13], 0, 2, () => assert.fail('no duplicate'));
  assert.deepEqual(pc.match([0, 2, 3, 4, 5, 6, 7, 8]), [12, 13]);
  // A branch after the first block.
  pc.insert([1, 2, 3, 4, 9, 9, 9, 9], [10, 14], 1, 2, () => assert.fail('no duplicate'));
  assert.deepEqual(pc.match([1, 2, 3, 4, 9, 9, 9, 9, 1]), [10, 14]);
  const dups: [number, number][] = [];
  pc.insert(a, [10, 15], 1, 2, (i, cached) => dups.push([i, cached]));
  assert.deepEqual(dups, [[1, 11]]);
  assert.deepEqual(pc.remove(10).sort(), [10, 11, 14]);
  assert.equal(pc.size, 2);
  assert.deepEqual(pc.match(a), []);
});

test('BlockManager: released cached blocks stay matchable until the pool needs room (LRU)', () => {
  const copies: [number, number][] = [];
  const bm = new BlockManager(4, BS, { prefixCaching: true, copyBlock: (f, t) => copies.push([f, t]) });
  const tokensA = [1, 1, 1, 1, 2, 2, 2, 2];
  const a: number[] = [];
  bm.grow(a, 8);
  bm.register(tokensA, a, 0, 2);
  bm.release(a);
  assert.equal(bm.usedBlocks(), 0);
  assert.equal(bm.freeBlocks(), 4);
  assert.equal(bm.cachedBlocks(), 2);
  const hit = bm.match(tokensA);
  assert.equal(hit.length, 2);
  for (const b of hit) bm.retain(b);
  assert.equal(bm.usedBlocks(), 2);
  // Copy-on-write of a cached block.
  const table = [...hit];
  assert.ok(bm.isShared(table, 1));
  bm.makeWritable(table, 1);
  assert.deepEqual(copies, [[hit[1], table[1]]]);
  assert.notEqual(table[1], hit[1]);
  bm.release(table);
  // Fill the pool: the cached blocks are evicted last block first, only when nothing is free.
  const big: number[] = [];
  bm.grow(big, 2 * BS);
  assert.equal(bm.cachedBlocks(), 2);
  bm.grow(big, 3 * BS);
  assert.equal(bm.cachedBlocks(), 1);
  assert.equal(bm.match(tokensA).length, 1);
  bm.grow(big, 4 * BS);
  assert.equal(bm.cachedBlocks(), 0);
  assert.equal(bm.freeBlocks(), 0);
  bm.release(big);
  assert.equal(bm.freeBlocks(), 4);
});

test('BlockManager: registering a block whose prefix is cached already swaps in the cached one', () => {
  const bm = new BlockManager(6, BS, { prefixCaching: true, copyBlock: () => {} });
  const tokens = [1, 2, 3, 4, 5, 6, 7, 8];
  const a: number[] = [];
  const b: number[] = [];
  bm.grow(a, 8);
  bm.grow(b, 8);
  bm.register(tokens, a, 0, 2);
  bm.register(tokens, b, 0, 2);
  assert.deepEqual(b, a);
  assert.equal(bm.usedBlocks(), 2);
  assert.equal(bm.refCount(a[0]), 2);
  bm.release(a);
  bm.release(b);
  assert.equal(bm.usedBlocks(), 0);
});

// ---- the scheduler over a fake KV store ----

let nextId = 1;
function seq(prompt: number[], maxTokens: number): Sequence {
  const req: GenerationRequest = {
    promptTokens: prompt,
    maxTokens,
    sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 0 },
    stopTokenIds: [],
    timeoutMs: 0,
    logprobs: 0,
  };
  return createSequence(nextId++, req, Date.now());
}

/** A pool whose "KV" is the token id each slot holds; copy-on-write copies it. */
function fakePool(numBlocks: number, maxBatchSize = 8, maxPrefillTokens = 64) {
  const slots = new Int32Array(numBlocks * BS).fill(-1);
  const bm = new BlockManager(numBlocks, BS, {
    prefixCaching: true,
    copyBlock: (from, to) => slots.copyWithin(to * BS, from * BS, (from + 1) * BS),
  });
  const s = new Scheduler({ maxBatchSize, maxPrefillTokens }, bm);
  /** "The model": writes each chunk's tokens, checks every position it attends to holds its own token, and picks a next token from the context. */
  const step = (): ScheduledBatch => {
    const batch = s.schedule();
    const next: number[][] = [];
    for (const { seq: q, start, length, sample } of batch.chunks) {
      for (let p = start; p < start + length; p++) slots[q.blockTable[Math.floor(p / BS)] * BS + (p % BS)] = q.tokens[p];
      for (let p = 0; p < start + length; p++) {
        const held = slots[q.blockTable[Math.floor(p / BS)] * BS + (p % BS)];
        assert.equal(held, q.tokens[p], `seq ${q.id} position ${p} reads ${held}, not its token ${q.tokens[p]}`);
      }
      if (sample) next.push([(q.tokens.reduce((x, y) => x * 31 + y, 7) >>> 0) % 50]);
    }
    s.postprocess(batch, next);
    return batch;
  };
  return { bm, s, step };
}

test('scheduler: a repeated prompt starts from its cached blocks and computes only the rest', () => {
  const { bm, s, step } = fakePool(32);
  const prompt = Array.from({ length: 18 }, (_, i) => 60 + i);
  const a = seq(prompt, 3);
  s.add(a);
  while (s.hasWork()) step();
  assert.equal(a.cachedPromptTokens, 0);
  assert.equal(bm.usedBlocks(), 0);
  assert.ok(bm.cachedBlocks() >= 4);
  const b = seq([...prompt, 99, 98], 2);
  s.add(b);
  const first = step();
  assert.equal(first.chunks[0].start, 16); // four whole blocks found
  assert.equal(first.chunks[0].length, 4);
  assert.equal(b.cachedPromptTokens, 16);
  while (s.hasWork()) step();
  assert.equal(s.prefixQueriedTokens, 18 + 20);
  assert.equal(s.prefixHitTokens, 16);
});

test('scheduler: a prompt found whole runs its last token in a copy of the last block', () => {
  const { bm, s, step } = fakePool(16);
  const prompt = Array.from({ length: 8 }, (_, i) => 1 + i);
  const a = seq(prompt, 1);
  s.add(a);
  while (s.hasWork()) step();
  const b = seq(prompt, 5);
  s.add(b);
  const first = step();
  assert.deepEqual([first.chunks[0].start, first.chunks[0].length], [7, 1]);
  assert.equal(b.cachedPromptTokens, 7);
  while (s.hasWork()) step();
  assert.equal(bm.usedBlocks(), 0);
});

test('scheduler: n sequences of one prompt share it — the others wait for the first one’s blocks', () => {
  const { bm, s, step } = fakePool(64, 8, 8);
  const prompt = Array.from({ length: 21 }, (_, i) => 200 + i);
  const n = [seq(prompt, 4), seq(prompt, 4), seq(prompt, 4)];
  for (const q of n) s.add(q);
  let computed = 0;
  while (s.hasWork()) {
    const batch = step();
    for (const c of batch.chunks) if (c.start < prompt.length) computed += Math.min(c.length, prompt.length - c.start);
  }
  // The first computes the 21 prompt tokens; the others only the one after its five whole blocks.
  assert.equal(computed, 21 + 1 + 1);
  assert.deepEqual(
    n.map((q) => q.cachedPromptTokens),
    [0, 20, 20],
  );
  assert.equal(bm.usedBlocks(), 0);
});

test('scheduler: random shared-prefix traffic on a tiny pool (preemption, eviction, copy-on-write) reads only its own tokens', () => {
  let rnd = 12345;
  const rand = (n: number) => ((rnd = (rnd * 1103515245 + 12345) >>> 0) >>> 8) % n;
  const { bm, s, step } = fakePool(24, 4, 12);
  const bases = [0, 1, 2].map((b) => Array.from({ length: 30 }, (_, i) => b * 100 + i));
  const all: Sequence[] = [];
  let steps = 0;
  for (let round = 0; round < 60; round++) {
    if (s.waiting.length + s.running.length < 6) {
      const base = bases[rand(3)];
      const cut = 1 + rand(base.length);
      const prompt = [...base.slice(0, cut), ...Array.from({ length: rand(6) }, () => 500 + rand(3))];
      const q = seq(prompt, 1 + rand(12));
      all.push(q);
      s.add(q);
    }
    step();
    steps++;
  }
  while (s.hasWork()) {
    step();
    assert.ok(++steps < 5000, 'no progress');
  }
  assert.ok(all.every((q) => q.status === 'finished'));
  assert.ok(s.numPreemptions > 0, 'the pool was meant to be tight enough to preempt');
  assert.ok(s.prefixHitTokens > 0);
  assert.equal(bm.usedBlocks(), 0);
});
