// The pure helpers of the KV-cache quality report (bench/kv-windows.ts): strided perplexity windows
// score every position exactly once within the window length, continuation prompts, and the
// reductions of a logits row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { argmax, continuationPrompt, negLogProb, perplexityWindows } from '../../bench/kv-windows.js';

test('perplexity windows score every position from 1 exactly once, each inside its window', () => {
  for (const [length, window, stride] of [
    [2, 2, 1],
    [10, 4, 2],
    [511, 512, 256],
    [512, 512, 256],
    [513, 512, 256],
    [2068, 512, 256],
    [1000, 300, 299],
    [7, 3, 1],
  ]) {
    const windows = perplexityWindows(length, window, stride);
    const seen = new Array<number>(length).fill(0);
    for (const w of windows) {
      assert.ok(w.end - w.start <= window && w.end <= length, `${length}/${window}/${stride}: window too long`);
      assert.ok(w.firstTarget > w.start && w.firstTarget < w.end, `${length}/${window}/${stride}: target outside its window`);
      for (let t = w.firstTarget; t < w.end; t++) seen[t]++;
    }
    assert.deepEqual(seen, [0, ...new Array<number>(length - 1).fill(1)], `${length}/${window}/${stride}`);
  }
});

test('after the first window, a scored token has at least window − stride tokens before it in its window', () => {
  const windows = perplexityWindows(2068, 512, 256);
  assert.deepEqual(windows[0], { start: 0, end: 512, firstTarget: 1 });
  for (const w of windows.slice(1)) assert.ok(w.firstTarget - w.start >= 256);
  assert.equal(windows.at(-1)!.end, 2068);
});

test('bad window arguments throw', () => {
  assert.throws(() => perplexityWindows(10, 1, 1), RangeError);
  assert.throws(() => perplexityWindows(10, 4, 4), RangeError);
  assert.throws(() => perplexityWindows(10, 4, 0), RangeError);
});

test('a continuation prompt is BOS and the tail, or the tail alone', () => {
  assert.deepEqual(continuationPrompt([5, 6, 7, 8], 2, 1), [1, 7, 8]);
  assert.deepEqual(continuationPrompt([5, 6], 4, null), [5, 6]);
});

test('argmax takes the first maximum; negLogProb is −log softmax', () => {
  const x = Float32Array.from([9, 1, 3, 3, 2]);
  assert.equal(argmax(x, 1, 4), 1);
  const p = [1, 3, 3, 2].map((v) => Math.exp(v));
  const z = p.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(negLogProb(x, 1, 4, 3) - -Math.log(p[3] / z)) < 1e-12);
  assert.ok(Math.abs(negLogProb(Float32Array.from([1000, 0]), 0, 2, 0)) < 1e-12);
});
