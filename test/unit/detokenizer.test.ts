// Incremental detokenization with real tokenizers: a character split over several byte-level
// tokens is never emitted in halves, and the pieces always add up to the full decode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { IncrementalDetokenizer } from '../../src/chat/detokenizer.js';
import { loadGgufTokenizer } from '../../src/model/gguf-tokenizer.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { MODELS, TINY_CHAT } from '../helpers/paths.js';

const qwen = loadTokenizer(TINY_CHAT);

const TEXTS = [
  'Hi 😀 你好世界 🇫🇷 ok',
  '👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag, e\u0301 combining, Ελληνικά, עברית, العربية',
  '日本語のテキスト：「こんにちは」と𠮷野家。',
  '<think>\n考え中…\n</think>\n\n答え: 42 ✅',
];

/** Pushes `ids` in the given group sizes; returns the emitted pieces (finish() last). */
function pieces(ids: number[], groups: number[], skipSpecialTokens = true): string[] {
  const d = new IncrementalDetokenizer(qwen, skipSpecialTokens);
  const out: string[] = [];
  let i = 0;
  for (let g = 0; i < ids.length; g++) {
    const n = groups[g % groups.length]!;
    out.push(d.push(ids.slice(i, i + n)));
    i += n;
  }
  out.push(d.finish());
  return out;
}

test('the test texts really split characters across tokens', () => {
  const ids = qwen.encode(TEXTS[0]!);
  assert.ok(
    ids.some((id) => qwen.decode([id]).includes('\uFFFD')),
    'some single token decodes to a partial character',
  );
});

for (const text of TEXTS) {
  test(`one token at a time: no half characters, pieces add up (${text.slice(0, 12)}…)`, () => {
    const ids = qwen.encode(text);
    const out = pieces(ids, [1]);
    for (const p of out) assert.ok(!p.includes('\uFFFD'), `piece ${JSON.stringify(p)} holds a half character`);
    assert.equal(out.join(''), qwen.decode(ids));
    // The tokenizer NFC-normalizes (e + combining accent → é).
    assert.equal(out.join(''), text.normalize('NFC'));
  });

  test(`uneven groups of tokens: same text (${text.slice(0, 12)}…)`, () => {
    const ids = qwen.encode(text);
    for (const groups of [[2], [3, 1], [1, 4, 2], [ids.length]]) {
      const out = pieces(ids, groups);
      for (const p of out) assert.ok(!p.includes('\uFFFD'));
      assert.equal(out.join(''), text.normalize('NFC'), `groups ${groups}`);
    }
  });
}

test('a character split over three tokens comes out whole with its last token', () => {
  // ' 🇫' is three tokens in this vocabulary: ' \xF0\x9F', '\x87', '\xAB'.
  const ids = qwen.encode(' 🇫');
  assert.equal(ids.length, 3);
  const d = new IncrementalDetokenizer(qwen);
  assert.equal(d.push([ids[0]!]), '');
  assert.equal(d.push([ids[1]!]), '');
  assert.equal(d.push([ids[2]!]), ' 🇫');
  assert.equal(d.finish(), '');
});

test('finish releases a character that will never be completed, as the full decode shows it', () => {
  const ids = qwen.encode('ok 🇫').slice(0, -1);
  const d = new IncrementalDetokenizer(qwen);
  const emitted = ids.map((id) => d.push([id])).join('');
  assert.equal(emitted, 'ok', 'the cut character is held back');
  const rest = d.finish();
  assert.ok(rest.endsWith('\uFFFD'));
  assert.equal(emitted + rest, qwen.decode(ids));
});

test('special tokens are dropped by default and kept when asked', () => {
  const ids = qwen.encode('Hello<|im_end|>');
  assert.equal(pieces(ids, [1]).join(''), 'Hello');
  assert.equal(pieces(ids, [1], false).join(''), 'Hello<|im_end|>');
});

test('SentencePiece-style decoder (TinyStories): the leading-space rule is applied once, at the start', () => {
  // Its decoder strips one leading space of whatever it decodes, so decoding token by token would
  // lose every word boundary that starts a token; decoding against a context window does not.
  const sp = loadTokenizer(join(MODELS, 'tinystories-656k'));
  const text = 'He had 3 dogs and 12 cats. Tom said:  "Hi!"  Then he ran.';
  const ids = sp.encode(text, { addSpecialTokens: true });
  const naive = ids.map((id) => sp.decode([id], { skipSpecialTokens: true })).join('');
  assert.notEqual(naive, sp.decode(ids, { skipSpecialTokens: true }), 'token-by-token decoding is wrong for this tokenizer');
  const d = new IncrementalDetokenizer(sp);
  const out = ids.map((id) => d.push([id])).join('') + d.finish();
  assert.equal(out, sp.decode(ids, { skipSpecialTokens: true }));
  assert.equal(out, text);
});

test('a continuation decoded after its prompt keeps its leading space (SentencePiece and byte-level BPE); without context the text starts bare', () => {
  const stories = loadGgufTokenizer(join(MODELS, 'stories260k-gguf', 'stories260K.gguf'));
  for (const tokenizer of [stories, qwen]) {
    const prompt = tokenizer.encode('Lily went to the park', { addSpecialTokens: true });
    const whole = tokenizer.encode('Lily went to the park with her mom.', { addSpecialTokens: true });
    assert.deepEqual(whole.slice(0, prompt.length), prompt, 'the continuation tokenizes after the prompt unchanged');
    const generated = whole.slice(prompt.length);
    const withContext = new IncrementalDetokenizer(tokenizer, true, prompt);
    const text = generated.map((id) => withContext.push([id])).join('') + withContext.finish();
    assert.equal(text, ' with her mom.');
    const bare = new IncrementalDetokenizer(tokenizer, true);
    const bareText = generated.map((id) => bare.push([id])).join('') + bare.finish();
    assert.equal(bareText.trimStart(), 'with her mom.');
  }
});
