import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from '../../src/engine/block-manager.js';
import { planKvPool, type KvBudgetInput } from '../../src/engine/memory-budget.js';

test('grow allocates whole blocks on demand and release returns them', () => {
  const bm = new BlockManager(8, 16);
  const table: number[] = [];
  bm.grow(table, 1);
  assert.equal(table.length, 1);
  bm.grow(table, 16); // still fits in the first block
  assert.equal(table.length, 1);
  bm.grow(table, 17);
  assert.equal(table.length, 2);
  assert.equal(new Set(table).size, 2);
  assert.equal(bm.usedBlocks(), 2);
  assert.equal(bm.freeBlocks(), 6);
  bm.release(table);
  assert.deepEqual(table, []);
  assert.equal(bm.usedBlocks(), 0);
});

test('two tables never share a block', () => {
  const bm = new BlockManager(6, 4);
  const a: number[] = [];
  const b: number[] = [];
  bm.grow(a, 12);
  bm.grow(b, 12);
  assert.equal(new Set([...a, ...b]).size, 6);
});

test('exhaustion: canGrow says no and grow throws without taking anything', () => {
  const bm = new BlockManager(3, 4);
  const a: number[] = [];
  bm.grow(a, 8);
  const b: number[] = [];
  assert.equal(bm.canGrow(b, 4), true);
  assert.equal(bm.canGrow(b, 5), false);
  assert.throws(() => bm.grow(b, 5), /exhausted/);
  assert.deepEqual(b, []);
  assert.equal(bm.freeBlocks(), 1);
});

test('refcounts: a shared block is freed only by its last owner', () => {
  const bm = new BlockManager(4, 4);
  const a: number[] = [];
  bm.grow(a, 4);
  const shared = a[0];
  bm.retain(shared);
  assert.equal(bm.refCount(shared), 2);
  const b = [shared];
  bm.release(a);
  assert.equal(bm.usedBlocks(), 1);
  assert.equal(bm.refCount(shared), 1);
  bm.release(b);
  assert.equal(bm.usedBlocks(), 0);
  assert.throws(() => bm.release([shared]), /double free/);
  assert.throws(() => bm.retain(shared), /free block/);
});

const budget = (over: Partial<KvBudgetInput>): KvBudgetInput => ({
  memoryBytes: 16 * 2 ** 30,
  gpuMemoryUtilization: 0.9,
  weightBytes: 2 ** 30,
  oomGuardMb: 1024,
  kvBytesPerToken: 1024,
  blockSize: 16,
  maxSeqLen: 4096,
  maxNumSeqs: 1_000_000,
  ...over,
});

test('pool size: utilization × memory − weights − guard, in whole blocks', () => {
  const plan = planKvPool(budget({}));
  const bytes = 0.9 * 16 * 2 ** 30 - 2 ** 30 - 2 ** 30;
  assert.equal(plan.numBlocks, Math.floor(bytes / (1024 * 16)));
  assert.equal(plan.poolTokens, plan.numBlocks * 16);
  assert.equal(plan.limitedBy, 'memory');
});

test('pool size is capped at max-seq-len × max-num-seqs', () => {
  const plan = planKvPool(budget({ maxSeqLen: 1000, maxNumSeqs: 3 }));
  assert.equal(plan.numBlocks, 3 * Math.ceil(1000 / 16));
  assert.equal(plan.limitedBy, 'max-seqs');
});

test('a budget below one max-length sequence fails with advice naming the flags', () => {
  // Negative budget: 0.5 × 4 GiB − 1 GiB − 4 GiB guard.
  assert.throws(
    () => planKvPool(budget({ memoryBytes: 4 * 2 ** 30, gpuMemoryUtilization: 0.5, oomGuardMb: 4096 })),
    (e: Error) => /--gpu-memory-utilization/.test(e.message) && /--max-seq-len/.test(e.message) && /-\d+ MiB/.test(e.message),
  );
  // Positive, but smaller than one 4096-token sequence (4 MiB here).
  const tight = budget({ memoryBytes: 2 ** 30 + 3 * 2 ** 20, gpuMemoryUtilization: 1, oomGuardMb: 0 });
  assert.throws(() => planKvPool(tight), /--max-seq-len 4096/);
  assert.equal(planKvPool({ ...tight, maxSeqLen: 3072 }).numBlocks, 192);
});
