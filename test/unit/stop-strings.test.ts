// Stop strings over streamed text: matches that straddle chunks, held-back partial matches,
// several stops, and results that do not depend on how the text was chunked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StopStringMatcher } from '../../src/chat/stop-strings.js';

/** Feeds chunks and returns [all emitted text including the final flush, the stop that hit]. */
function run(stops: string[], chunks: string[]): [string, string | null] {
  const m = new StopStringMatcher(stops);
  let out = '';
  let stop: string | null = null;
  for (const c of chunks) {
    const r = m.push(c);
    out += r.text;
    stop ??= r.stop;
  }
  if (stop === null) out += m.finish();
  return [out, stop];
}

test('text before the stop is returned, the stop and everything after it are not', () => {
  assert.deepEqual(run(['END'], ['Hello END world']), ['Hello ', 'END']);
});

test('a stop split over chunks is matched and the partial part is never emitted', () => {
  const m = new StopStringMatcher(['###']);
  assert.deepEqual(m.push('abc#'), { text: 'abc', stop: null });
  assert.deepEqual(m.push('#'), { text: '', stop: null });
  assert.deepEqual(m.push('#tail'), { text: '', stop: '###' });
  assert.equal(m.stopped, '###');
  assert.deepEqual(m.push('more'), { text: '', stop: null }, 'nothing after the stop');
});

test('a partial match that breaks off is released', () => {
  const m = new StopStringMatcher(['</s>']);
  assert.deepEqual(m.push('a</'), { text: 'a', stop: null });
  assert.deepEqual(m.push('b>'), { text: '</b>', stop: null });
  assert.equal(m.finish(), '');
});

test('held text is flushed at the end of output', () => {
  const m = new StopStringMatcher(['STOP']);
  assert.deepEqual(m.push('go ST'), { text: 'go ', stop: null });
  assert.equal(m.finish(), 'ST');
  assert.equal(m.stopped, null);
});

test('a stop at the very start yields no text', () => {
  assert.deepEqual(run(['Q:'], ['Q: what']), ['', 'Q:']);
  assert.deepEqual(run(['Q:'], ['Q', ':', ' what']), ['', 'Q:']);
});

test('several stops: the one that completes first wins, whatever the chunking', () => {
  const stops = ['abcd', 'c', 'xyz'];
  const text = 'zzabcdxyz';
  // One character at a time "c" completes before "abcd"; in one chunk it must be the same.
  const expected: [string, string | null] = ['zzab', 'c'];
  assert.deepEqual(run(stops, [text]), expected);
  assert.deepEqual(run(stops, [...text]), expected);
  for (let cut = 1; cut < text.length; cut++) {
    assert.deepEqual(run(stops, [text.slice(0, cut), text.slice(cut)]), expected, `cut at ${cut}`);
  }
});

test('overlapping stops ending together: the longer one (earlier start) cuts', () => {
  assert.deepEqual(run(['bc', 'abc'], ['xabc']), ['x', 'abc']);
});

test('every chunking of a text gives the same result', () => {
  const stops = ['\n\n', 'User:', '<|end|>'];
  const text = 'Answer: 42.\nUser said <|en|> then <|end|> and more';
  const whole = run(stops, [text]);
  assert.deepEqual(whole, ['Answer: 42.\nUser said <|en|> then ', '<|end|>']);
  // Deterministic pseudo-random chunkings.
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let trial = 0; trial < 50; trial++) {
    const chunks: string[] = [];
    for (let i = 0; i < text.length;) {
      const len = 1 + Math.floor(rand() * 6);
      chunks.push(text.slice(i, i + len));
      i += len;
    }
    assert.deepEqual(run(stops, chunks), whole, JSON.stringify(chunks));
  }
});

test('no stops (or only empty ones) pass text straight through', () => {
  assert.deepEqual(new StopStringMatcher([]).push('abc'), { text: 'abc', stop: null });
  assert.deepEqual(run([''], ['a', 'b']), ['ab', null]);
});

test('unarmed text (min_tokens not reached): no stop may end in it; one that ends in later armed text counts', () => {
  const m = new StopStringMatcher(['ab']);
  assert.deepEqual(m.push('xab a', false), { text: 'xab ', stop: null }, 'a whole match in unarmed text is text; "a" is held');
  assert.deepEqual(m.push('b tail', true), { text: '', stop: 'ab' }, 'a match that starts unarmed and ends armed stops');
  // A match wholly inside the held unarmed part is skipped, the next one ending in armed text is found.
  const m2 = new StopStringMatcher(['abc', 'b']);
  assert.deepEqual(m2.push('ab', false), { text: '', stop: null }, '"ab" could become "abc": held');
  assert.deepEqual(m2.push('c', true), { text: '', stop: 'abc' }, '"b" ended unarmed; "abc" ends armed');
  const m3 = new StopStringMatcher(['b']);
  assert.deepEqual(m3.push('bb', false), { text: 'bb', stop: null });
  assert.deepEqual(m3.push('xb', true), { text: 'x', stop: 'b' });
});
