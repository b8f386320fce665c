// Hugging Face tokenizers: the fixture cases with expected ids, the real Qwen3 / SmolLM2 / TinyStories
// tokenizers, and the Qwen2 tokenizer.json built from vocab.json + merges.txt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { FIXTURES, MODELS, TINY_CHAT } from '../helpers/paths.js';
import {
  loadTokenizer,
  loadTokenizerFromVocabMerges,
  tokenizerFromHfJson,
  tokenizerJsonFromVocabMerges,
  TokenizerLoadError,
  type Tokenizer,
} from '../../src/model/tokenizer.js';
import { readSentencePieceModel, SentencePieceModelError } from '../../src/model/tokenizers/sentencepiece-model.js';
import { sentencePieceBpeTokenizerJson } from '../../src/model/tokenizers/sentencepiece-bpe.js';
import { HfTokenizer } from '../../src/model/tokenizers/hf-tokenizer.js';

type Json = Record<string, unknown>;
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Json;

// Texts that must survive encode → decode unchanged.
const ROUND_TRIP_TEXTS = [
  'Hello, world! How are you today?',
  'naïve café résumé — “quotes” and ‘apostrophes’',
  'Emoji: 😀🚀👍🏽 👨‍👩‍👧 🦙',
  '中文测试：你好，世界！日本語のテキスト。한국어 문장.',
  'مرحبا بالعالم — עברית — Русский текст',
  'line one\r\nline two\n\n\tindented\ttabs   and   spaces  ',
  '{"name": "Alice", "age": 30, "tags": ["a", "b"], "nested": {"x": null}}',
  'def square(x):\n    return x ** 2  # comment\n\nprint(square(12345))',
];

// ---------------------------------------------------------------------------------------------------------
// tiny-hf-fixtures/hf_tokenizer_cases.json: ids and decoded text produced by HF transformers.

interface TokenizerCase {
  text: string;
  ids: number[];
  decoded: string;
}
const cases = readJson(join(FIXTURES, 'hf_tokenizer_cases.json')) as Record<string, { tokenizer: string; cases: TokenizerCase[] }>;

/** How to build a fixture's tokenizer, or why it cannot be. */
function fixtureTokenizer(file: string): Tokenizer | string {
  const path = join(FIXTURES, file);
  if (file.endsWith('.json')) return tokenizerFromHfJson(readJson(path));
  // SentencePiece .model files: @huggingface/tokenizers cannot read them; our reader takes the BPE ones.
  try {
    const model = readSentencePieceModel(readFileSync(path));
    return new HfTokenizer(sentencePieceBpeTokenizerJson(model), {});
  } catch (err) {
    if (err instanceof SentencePieceModelError)
      return `${file} is a unigram SentencePiece model (${err.message}); neither @huggingface/tokenizers nor our reader runs those`;
    throw err;
  }
}

for (const [family, { tokenizer: file, cases: list }] of Object.entries(cases)) {
  const tok = fixtureTokenizer(file);
  const skip = typeof tok === 'string' ? tok : false;
  test(`hf_tokenizer_cases ${family} (${file}): ${list.length} cases${skip ? ' — skipped: unigram SentencePiece' : ''}`, { skip }, () => {
    const t = tok as Tokenizer;
    for (const c of list) {
      assert.deepEqual(t.encode(c.text), c.ids, `encode ${JSON.stringify(c.text)}`);
      assert.equal(t.decode(c.ids, { skipSpecialTokens: true }), c.decoded, `decode ${JSON.stringify(c.ids)}`);
    }
  });
}

// ---------------------------------------------------------------------------------------------------------
// svc-tiny-chat: the real Qwen3 tokenizer (tokenizer.json + tokenizer_config.json).

const qwen3 = loadTokenizer(TINY_CHAT);

test('svc-tiny-chat: the encodings its README states', () => {
  assert.deepEqual(qwen3.encode(' Paris'), [12095]);
  assert.deepEqual(qwen3.encode('Hello world'), [9707, 1879]);
  assert.deepEqual(qwen3.encode('<|im_start|>'), [151644]);
  assert.deepEqual(qwen3.encode('<think>'), [151667]);
  assert.deepEqual(qwen3.encode('</tool_call>'), [151658]);
  assert.deepEqual(qwen3.encode('<tool_response>'), [151665]);
  assert.deepEqual(qwen3.encode('<tool_call>'), [151657]);
  // digits one per token
  assert.deepEqual(
    qwen3.encode('2024').map((id) => qwen3.idToToken(id)),
    ['2', '0', '2', '4'],
  );
});

test('svc-tiny-chat: special tokens inside text become single ids', () => {
  const ids = qwen3.encode('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
  const start = ids.indexOf(151644);
  assert.ok(start === 0 && ids.includes(151645) && ids.includes(151667) && ids.includes(151668), JSON.stringify(ids));
  assert.equal(qwen3.decode(ids), '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
});

test('svc-tiny-chat: round trips of unicode, emoji, CJK, RTL, CRLF, tabs, JSON and code', () => {
  for (const text of ROUND_TRIP_TEXTS) assert.equal(qwen3.decode(qwen3.encode(text)), text, JSON.stringify(text));
});

test('svc-tiny-chat: BOS/EOS, special set and vocabulary size', () => {
  assert.equal(qwen3.bosToken, null);
  assert.equal(qwen3.eosToken, '<|im_end|>');
  assert.equal(qwen3.addBosToken, false);
  assert.equal(qwen3.vocabSize, 151669);
  assert.ok(qwen3.specialTokenIds.has(151643) && qwen3.specialTokenIds.has(151644) && qwen3.specialTokenIds.has(151645));
  // Qwen3 marks <think> and <tool_call> as added but not special: they survive skipSpecialTokens.
  assert.ok(!qwen3.specialTokenIds.has(151667) && !qwen3.specialTokenIds.has(151657));
  assert.equal(qwen3.tokenToId('<|im_end|>'), 151645);
  assert.equal(qwen3.idToToken(12095), 'ĠParis');
  // With no BOS, addSpecialTokens adds nothing.
  assert.deepEqual(qwen3.encode('Hello world', { addSpecialTokens: true }), [9707, 1879]);
});

test('svc-tiny-chat: decode skips special tokens on request and ignores ids past the vocabulary', () => {
  const ids = [151667, ...qwen3.encode('ok'), 151668, 151645];
  assert.equal(qwen3.decode(ids), '<think>ok</think><|im_end|>');
  assert.equal(qwen3.decode(ids, { skipSpecialTokens: true }), '<think>ok</think>');
  // Rows 151669..151935 of the embedding table have no token.
  assert.equal(qwen3.decode([9707, 151700, 1879]), 'Hello world');
  assert.equal(qwen3.decode([]), '');
});

test('svc-tiny-chat: a cut UTF-8 sequence decodes to U+FFFD, the whole one to the character', () => {
  const ids = qwen3.encode('🫠');
  assert.equal(ids.length, 3, 'this emoji is split into byte-level pieces');
  assert.ok(qwen3.decode(ids.slice(0, 2)).endsWith('\uFFFD'));
  assert.equal(qwen3.decode(ids), '🫠');
});

// ---------------------------------------------------------------------------------------------------------
// qwen2.5-0.5b-instruct-tokenizer: vocab.json + merges.txt only.

test("vocab.json + merges.txt: builds the same tokenizer.json as svc-tiny-chat, less Qwen3's 4 added tokens", () => {
  const built = tokenizerJsonFromVocabMerges(join(MODELS, 'qwen2.5-0.5b-instruct-tokenizer'));
  const reference = readJson(join(TINY_CHAT, 'tokenizer.json'));
  const { added_tokens: builtAdded, ...builtRest } = built;
  const { added_tokens: refAdded, ...refRest } = reference;
  assert.deepEqual(builtRest, refRest);
  const ref = refAdded as { content: string }[];
  assert.deepEqual(builtAdded, ref.slice(0, 22));
  assert.deepEqual(
    ref.slice(22).map((t) => t.content),
    ['<tool_response>', '</tool_response>', '<think>', '</think>'],
  );
});

test('vocab.json + merges.txt: encodes like the real tokenizer.json', () => {
  const qwen25 = loadTokenizerFromVocabMerges(join(MODELS, 'qwen2.5-0.5b-instruct-tokenizer'));
  for (const text of [...ROUND_TRIP_TEXTS, ' Paris', '<|im_start|>system\nYou are Qwen.<|im_end|>\n<tool_call>']) {
    assert.deepEqual(qwen25.encode(text), qwen3.encode(text), JSON.stringify(text));
  }
  assert.deepEqual(qwen25.encode('<|im_start|><tool_call>'), [151644, 151657]);
  assert.equal(qwen25.eosToken, '<|im_end|>');
  assert.equal(qwen25.addBosToken, false);
});

// ---------------------------------------------------------------------------------------------------------
// smollm2-135m-instruct-tokenizer: tokenizer.json without tokenizer_config.json.

test('smollm2: BOS/EOS come from config.json ids; digits split; specials single', () => {
  const tok = loadTokenizer(join(MODELS, 'smollm2-135m-instruct-tokenizer'));
  assert.equal(tok.bosToken, '<|im_start|>');
  assert.equal(tok.eosToken, '<|im_end|>');
  assert.equal(tok.addBosToken, false);
  assert.equal(tok.vocabSize, 49152);
  assert.deepEqual(tok.encode('<|im_start|>user\n'), [1, ...tok.encode('user\n')]);
  assert.deepEqual(tok.encode('Hello world'), [tok.tokenToId('Hello'), tok.tokenToId('Ġworld')]);
  assert.deepEqual(
    tok.encode('x 2024').map((id) => tok.idToToken(id)),
    ['x', 'Ġ', '2', '0', '2', '4'],
  );
  for (const text of ROUND_TRIP_TEXTS) assert.equal(tok.decode(tok.encode(text)), text, JSON.stringify(text));
});

// ---------------------------------------------------------------------------------------------------------
// tinystories-656k: SentencePiece-style BPE in tokenizer.json, BOS added by the post-processor.

test('tinystories: BOS policy, space prefix, and <unk> for characters outside its ASCII vocabulary', () => {
  const tok = loadTokenizer(join(MODELS, 'tinystories-656k'));
  assert.equal(tok.bosToken, '<|start_story|>');
  assert.equal(tok.eosToken, '<|end_story|>');
  assert.equal(tok.addBosToken, true);
  const ids = tok.encode('Once upon a time', { addSpecialTokens: true });
  assert.equal(ids[0], 1);
  assert.deepEqual(ids.slice(1), tok.encode('Once upon a time'));
  assert.ok(tok.idToToken(ids[1])!.startsWith('▁'), 'the space prefix is added');
  // byte_fallback is on but the vocabulary has no <0xXX> pieces, so HF (and we) fall back to <unk>.
  assert.deepEqual(
    tok.encode('a😀b').map((id) => tok.idToToken(id)),
    ['▁a', '<unk>', 'b'],
  );
  assert.equal(tok.decode(ids, { skipSpecialTokens: true }), 'Once upon a time');
  for (const text of ['Once upon a time, there was a cat.', 'Lily said: "Hi!"\nTom smiled.', '  two spaces, then a full stop.']) {
    assert.equal(tok.decode(tok.encode(text)), text, JSON.stringify(text));
  }
});

// ---------------------------------------------------------------------------------------------------------
// Loading from other directory layouts.

test('loadTokenizer: a directory with only a SentencePiece BPE tokenizer.model', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-spm-'));
  try {
    copyFileSync(join(FIXTURES, 'tiny_spm_bpe.model'), join(dir, 'tokenizer.model'));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ bos_token: '<s>', eos_token: '</s>', add_bos_token: true }));
    const tok = loadTokenizer(dir);
    assert.equal(tok.bosToken, '<s>');
    assert.equal(tok.addBosToken, true);
    // ids from hf_tokenizer_cases.json (spm_bpe_model), after BOS
    assert.deepEqual(tok.encode('the cat sat', { addSpecialTokens: true }), [1, 264, 275, 282]);
    assert.equal(tok.decode([1, 264, 275, 282], { skipSpecialTokens: true }), 'the cat sat');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('loadTokenizer: a directory without any tokenizer file is an error', () => {
  assert.throws(() => loadTokenizer(join(MODELS, 'qwen3-chat-template')), TokenizerLoadError);
  assert.throws(() => loadTokenizer(join(MODELS, 'no-such-model')), TokenizerLoadError);
});

test('tokenBytes: raw bytes per token, so a character split across tokens concatenates back to its UTF-8', () => {
  const tok = loadTokenizer(TINY_CHAT);
  const text = 'Emoji 😀🚀👍🏽 👨‍👩‍👧 and CJK 你好，世界 and RTL مرحبا 🇫🇷 龘';
  const ids = tok.encode(text);
  const pieces = ids.map((id) => tok.tokenBytes(id));
  assert.ok(
    ids.some((id) => tok.decode([id]).includes('\uFFFD')),
    'some tokens hold part of a character',
  );
  assert.deepEqual(Buffer.concat(pieces), Buffer.from(text, 'utf8'));
  // 🇫🇷 after a space: " \xf0\x9f", "\x87", "\xab", "🇷".
  assert.deepEqual(
    tok.encode(' 🇫🇷').map((id) => Buffer.from(tok.tokenBytes(id)).toString('hex')),
    ['20f09f', '87', 'ab', 'f09f87b7'],
  );
  // Special tokens give their text; an id with no token gives nothing.
  assert.equal(Buffer.from(tok.tokenBytes(151645)).toString(), '<|im_end|>');
  assert.equal(tok.tokenBytes(151900).length, 0);
});
