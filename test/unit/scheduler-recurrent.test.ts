// The real scheduler, block manager and state slots of a hybrid model, over plain sequences: "the
// model" is a fixed next token, and the state store records what it was asked to do. Checks where
// prefill chunks are cut for snapshots, which snapshots are taken and restored, and that slots and
// snapshots are given back (finish, preemption, eviction).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockManager } from '../../src/engine/block-manager.js';
import { Scheduler, type ScheduledBatch } from '../../src/engine/scheduler.js';
import { createSequence, type Sequence } from '../../src/engine/sequence.js';
import { StateSlots, type StateStore } from '../../src/engine/state-slots.js';

const BS = 4;

/** A state store that records the calls it gets. */
class RecordingStore implements StateStore {
  readonly calls: string[] = [];
  reset(slot: number): void {
    this.calls.push(`reset ${slot}`);
  }
  copy(from: number, to: number): void {
    this.calls.push(`copy ${from}->${to}`);
  }
}

function seq(id: number, tokens: number[], maxTokens = 2): Sequence {
  return createSequence(
    id,
    {
      promptTokens: tokens,
      maxTokens,
      sampling: { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 0 },
      stopTokenIds: [],
      timeoutMs: 0,
      logprobs: 0,
    },
    Date.now(),
  );
}

function step(s: Scheduler): ScheduledBatch {
  const batch = s.schedule();
  s.postprocess(
    batch,
    batch.chunks.filter((c) => c.sample).map(() => [7]),
  );
  return batch;
}

function setup(options: { snapshots?: number; checkpointBlocks?: number; blocks?: number; maxPrefill?: number; prefix?: boolean } = {}) {
  const store = new RecordingStore();
  const slots = new StateSlots(store, 2, options.snapshots ?? 4);
  const uncached: number[] = [];
  const bm = new BlockManager(options.blocks ?? 64, BS, {
    prefixCaching: options.prefix ?? true,
    copyBlock: () => {},
    onUncached: (blocks) => {
      uncached.push(...blocks);
      slots.forget(blocks);
    },
  });
  const s = new Scheduler(
    { maxBatchSize: 2, maxPrefillTokens: options.maxPrefill ?? 64, recurrent: { slots, checkpointBlocks: options.checkpointBlocks ?? 2 } },
    bm,
  );
  return { store, slots, bm, s, uncached };
}

const range = (n: number, from = 100) => Array.from({ length: n }, (_, i) => from + i);

test('prefill is cut at every checkpoint (each 2 blocks) and at the prompt’s last whole block; a snapshot after each', () => {
  const { s, slots, store } = setup();
  const a = seq(1, range(19));
  s.add(a);
  const shapes: [number, number][] = [];
  while (a.status !== 'finished') shapes.push(...step(s).chunks.map((c): [number, number] => [c.start, c.length]));
  // Checkpoints at 8 and 16 (2 blocks of 4); the last whole block before the last token ends at 16 too.
  assert.deepEqual(shapes, [
    [0, 8],
    [8, 8],
    [16, 3],
    [19, 1],
  ]);
  assert.equal(slots.taken, 2);
  assert.equal(slots.size, 2);
  assert.deepEqual(store.calls, ['reset 0', 'copy 0->2', 'copy 0->3']); // sequence slot 0; snapshot slots 2 and 3
});

test('a prompt extending a cached one resumes from its latest snapshot; another continuation of the text before it does too', () => {
  const { s, slots, store } = setup({ checkpointBlocks: 100 });
  const first = seq(1, range(14));
  s.add(first);
  while (first.status !== 'finished') step(s);
  // Only the last whole block before the last token is a checkpoint (12): one snapshot.
  assert.equal(slots.taken, 1);
  const second = seq(2, [...range(14), 7, 7, 50, 51, 52]);
  s.add(second);
  const b = step(s);
  assert.equal(b.chunks[0]!.start, 12, 'resumed at the snapshot, not at the end of the cached blocks');
  assert.equal(slots.restored, 1);
  assert.match(store.calls.at(-1)!, /^copy \d->\d$/);
  while (second.status !== 'finished') step(s);
  // A prompt that shares only the first 6 tokens: blocks cached, but no snapshot within them → from scratch.
  const third = seq(3, [...range(6), 1, 2, 3, 4, 5, 6, 7, 8]);
  s.add(third);
  assert.equal(step(s).chunks[0]!.start, 0);
});

test('the same prompt again resumes before its last token; without prefix caching nothing is snapshotted or cut', () => {
  const { s, slots } = setup();
  const a = seq(1, range(16));
  s.add(a);
  while (a.status !== 'finished') step(s);
  const again = seq(2, range(16));
  s.add(again);
  // The last whole block before the last token (index 15) ends at 12.
  assert.equal(step(s).chunks[0]!.start, 12);
  assert.equal(slots.restored, 1);

  const off = setup({ prefix: false });
  const c = seq(3, range(19));
  off.s.add(c);
  assert.deepEqual(
    step(off.s).chunks.map((x) => [x.start, x.length]),
    [[0, 19]],
  );
  assert.equal(off.slots.taken, 0);
});

test('state slots: one per running sequence, given back on finish and on preemption', () => {
  // 8 blocks: two 12-token prompts growing to 20 tokens each cannot both fit: one is preempted.
  const { s, slots } = setup({ blocks: 8, snapshots: 2, checkpointBlocks: 1 });
  const a = seq(1, range(12), 9);
  const b = seq(2, range(12, 300), 9);
  s.add(a);
  s.add(b);
  let preempted = false;
  let steps = 0;
  while (a.status !== 'finished' || b.status !== 'finished') {
    step(s);
    if (s.numPreemptions > 0) preempted = true;
    const held = s.running.map((q) => q.stateSlot);
    assert.ok(held.every((x) => x !== null));
    assert.equal(new Set(held).size, held.length, 'a state slot is held twice');
    for (const q of s.waiting) assert.equal(q.stateSlot, null);
    assert.ok(++steps < 200);
  }
  assert.ok(preempted, 'the test meant to preempt');
  assert.equal(a.stateSlot, null);
  assert.equal(b.stateSlot, null);
  assert.deepEqual([slots.acquire(), slots.acquire(), slots.acquire()].sort(), [0, 1, null].sort());
});

test('blocks evicted from the prefix cache take their snapshots with them', () => {
  const { s, slots, uncached } = setup({ blocks: 8, checkpointBlocks: 100 });
  const a = seq(1, range(12), 1);
  s.add(a);
  step(s); // [0, 8): the last whole block before its last token ends at 8
  const snapshotBlock = a.blockTable[1]!;
  assert.ok(slots.has(snapshotBlock));
  while (a.status !== 'finished') step(s);
  assert.equal(slots.size, 1);
  // 30 tokens need all 8 blocks: every cached block of `a` is evicted; the filler snapshots at 28.
  const filler = seq(2, range(30, 900), 1);
  s.add(filler);
  while (filler.status !== 'finished') step(s);
  assert.ok(uncached.includes(snapshotBlock), "a's snapshot block was evicted");
  assert.equal(slots.taken, 2);
  assert.equal(slots.size, 1, "only the filler's snapshot is left");
  // Had it been kept under the reused block id, a's state would be restored for the filler's prefix.
  assert.equal(slots.restored, 0);
});

test('StateSlots: snapshots are reused least recently used first, and forgetting frees them', () => {
  const store = new RecordingStore();
  const slots = new StateSlots(store, 1, 2);
  slots.snapshot(10, 0);
  slots.snapshot(11, 0);
  assert.ok(slots.restore(10, 0)); // 10 is now the most recently used
  slots.snapshot(12, 0); // evicts 11
  assert.equal(slots.has(11), false);
  assert.ok(slots.has(10) && slots.has(12));
  slots.forget([10, 12, 99]);
  assert.equal(slots.size, 0);
  assert.equal(slots.restore(10, 0), false);
  assert.throws(() => slots.release(0), /not held/);
  const none = new StateSlots(store, 1, 0);
  none.snapshot(5, 0);
  assert.equal(none.size, 0);
});
