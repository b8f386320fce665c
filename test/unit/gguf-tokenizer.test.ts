// Tokenizers built from GGUF metadata: the SentencePiece vocabulary of stories260K.gguf against llama.cpp's
// own tokenization, and byte-level BPE GGUFs (written here with gguf-writer) against the Hugging Face tokenizers
// they were made from.
//
// The llama.cpp vocab GGUFs in MODELS/llamacpp-vocab-gguf/ cannot be used as tokenizers: their bytes went through
// a lossy UTF-8 conversion on the way here (the llama-spm header no longer even parses), so their .out id lists
// do not apply. Their .inp texts are still a good varied input set, and are used below for round trips and for
// HF equivalence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { MODELS, TINY_CHAT } from '../helpers/paths.js';
import { readGgufHeader } from '../../src/model/loaders/gguf-header.js';
import { writeGguf, typed } from '../../src/model/loaders/gguf-writer.js';
import { tokenizerFromGguf, loadGgufTokenizer, ggufChatTemplate, GgufTokenizerError } from '../../src/model/gguf-tokenizer.js';
import { loadTokenizer, type Tokenizer } from '../../src/model/tokenizer.js';

const STORIES = join(MODELS, 'stories260k-gguf', 'stories260K.gguf');

/** The test texts of a llama.cpp .inp file (each followed by a separator line). */
function llamaCppInputs(file: string): string[] {
  const parts = readFileSync(join(MODELS, 'llamacpp-vocab-gguf', file), 'utf8').split('\n__ggml_vocab_test__\n');
  parts.pop(); // after the last separator
  return parts;
}
const INP_TEXTS = llamaCppInputs('ggml-vocab-gpt-2.gguf.inp');

const EXTRA_TEXTS = [
  'def f(x):\r\n    return x ** 2  # square\r\n',
  'if (a && b) { return "ok"; }\n\n\n\tfoo();',
  '12345678901234567890 3.14159 1,000,000 0x1F',
  "I'M SURE YOU'RE RIGHT, we'LL see",
  'Ünïcödé Ω ≈ ç √ ∫ — naïve café',
  'Emoji 😀🚀👍🏽 👨‍👩‍👧 and CJK 你好，世界 and RTL مرحبا',
  'spaces:     five, tabs:\t\t\ttwo, newlines:\n\n\n',
  '\u00a0non-breaking\u3000ideographic space',
  'e\u0301 and A\u030a: not NFC (the Qwen2 tokenizer normalizes them, llama.cpp does not)',
];

// ---------------------------------------------------------------------------------------------------------
// stories260K.gguf: llama (SentencePiece) vocabulary, 512 pieces with scores and byte fallback.

// Expected ids from llama.cpp itself (node-llama-cpp 3.22.1, model.tokenize(text, true): special tokens parsed,
// no BOS), so they carry its SPM behaviour: the leading space prefix, the space after a special token,
// <0xXX> byte fallback for characters outside the vocabulary.
const LLAMA_CPP_STORIES: [string, number[]][] = [
  ['Once upon a time', [403, 407, 261, 378]],
  ['Once upon a time, there was a little girl named Lily.', [403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426]],
  ['Hello world', [346, 306, 414, 263, 304, 341]],
  [' Hello world', [410, 346, 306, 414, 263, 304, 341]],
  ['  leading spaces', [410, 410, 278, 411, 380, 299, 262, 427, 412, 331, 419]],
  ['trailing  ', [259, 420, 412, 290, 299, 410, 410]],
  ['x\n\ny', [410, 444, 13, 13, 422]],
  ['\t\ttabs', [410, 12, 12, 413, 412, 430, 419]],
  ['café 你好', [280, 412, 431, 485, 410, 231, 192, 163, 232, 168, 192]],
  ['🦙.cpp', [410, 243, 162, 169, 156, 426, 429, 339]],
  ['Zürich ☃', [410, 469, 198, 191, 325, 402, 410, 229, 155, 134]],
  ['<s>x</s>y', [1, 410, 444, 2, 348]],
  ['ok</s>', [334, 433, 2]],
  ['3333 33', [410, 472, 472, 472, 472, 410, 472, 472]],
  ["I'm sure it's fine.", [359, 439, 423, 262, 425, 276, 312, 439, 419, 272, 271, 411, 426]],
  ['Äpfel', [410, 198, 135, 427, 431, 411, 421]],
  ['', []],
];

const stories = loadGgufTokenizer(STORIES);

test('stories260K: encodes as llama.cpp does', () => {
  for (const [text, ids] of LLAMA_CPP_STORIES) assert.deepEqual(stories.encode(text), ids, JSON.stringify(text));
});

test('stories260K: BOS/EOS and special tokens from the metadata', () => {
  assert.equal(stories.bosToken, '<s>');
  assert.equal(stories.eosToken, '</s>');
  assert.equal(stories.addBosToken, true); // llama vocabularies add BOS unless add_bos_token says otherwise
  assert.equal(stories.vocabSize, 512);
  assert.deepEqual(
    [...stories.specialTokenIds].sort((a, b) => a - b),
    [0, 1, 2],
  );
  assert.deepEqual(stories.encode('Once upon a time', { addSpecialTokens: true }), [1, 403, 407, 261, 378]);
});

test('stories260K: the space prefix and byte fallback', () => {
  assert.equal(stories.idToToken(stories.encode('Once')[0]), '▁Once');
  const ids = stories.encode('你');
  assert.deepEqual(
    ids.map((id) => stories.idToToken(id)),
    ['▁', '<0xE4>', '<0xBD>', '<0xA0>'],
  );
  assert.equal(stories.decode(ids), '你');
});

test('stories260K: decode(encode(x)) == x for plain text (llama.cpp .inp texts and stories)', () => {
  const texts = [...llamaCppInputs('ggml-vocab-llama-spm.gguf.inp'), ...EXTRA_TEXTS, 'One day, Lily went to the park with her mom.'];
  for (const text of texts) assert.equal(stories.decode(stories.encode(text)), text, JSON.stringify(text));
  // With BOS: skipped as special, kept otherwise (as llama.cpp renders it).
  const withBos = stories.encode('The end.', { addSpecialTokens: true });
  assert.equal(stories.decode(withBos, { skipSpecialTokens: true }), 'The end.');
  assert.equal(stories.decode(withBos), '<s> The end.');
});

// ---------------------------------------------------------------------------------------------------------
// Byte-level BPE GGUFs written from Hugging Face vocabularies.

function withTempDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'svc-ggufvocab-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Write a vocabulary-only GGUF the way llama.cpp's converter lays out a gpt2 vocabulary, and load it back. */
function writeAndLoadBpeGguf(opts: {
  tokens: string[];
  types: Int32Array;
  merges: string[];
  pre: string;
  bos: number;
  eos: number;
  addBos: boolean;
}): Tokenizer {
  return withTempDir((dir) => {
    const path = join(dir, 'vocab.gguf');
    writeGguf(path, {
      metadata: {
        'general.architecture': 'llama',
        'tokenizer.ggml.model': 'gpt2',
        'tokenizer.ggml.pre': opts.pre,
        'tokenizer.ggml.tokens': opts.tokens,
        'tokenizer.ggml.token_type': opts.types,
        'tokenizer.ggml.merges': opts.merges,
        'tokenizer.ggml.bos_token_id': typed('u32', opts.bos),
        'tokenizer.ggml.eos_token_id': typed('u32', opts.eos),
        'tokenizer.ggml.add_bos_token': opts.addBos,
      },
    });
    return tokenizerFromGguf(readGgufHeader(path).metadata);
  });
}

const NORMAL = 1,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5;

test('qwen2 GGUF from vocab.json + merges.txt encodes like the HF Qwen3 tokenizer', () => {
  const dir = join(MODELS, 'qwen2.5-0.5b-instruct-tokenizer');
  const vocab = JSON.parse(readFileSync(join(dir, 'vocab.json'), 'utf8')) as Record<string, number>;
  const merges = readFileSync(join(dir, 'merges.txt'), 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#version'));
  const added = JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer_config.json'), 'utf8')).added_tokens_decoder as Record<
    string,
    { content: string; special: boolean }
  >;
  // As convert_hf_to_gguf.py does: the embedding table's 151936 rows, special added tokens as CONTROL,
  // the others as USER_DEFINED, unfilled rows as [PADn] UNUSED.
  const n = 151936;
  const tokens: string[] = new Array(n);
  const types = new Int32Array(n);
  for (const [token, id] of Object.entries(vocab)) [tokens[id], types[id]] = [token, NORMAL];
  for (const [id, t] of Object.entries(added)) [tokens[Number(id)], types[Number(id)]] = [t.content, t.special ? CONTROL : USER_DEFINED];
  for (let i = 0; i < n; i++) if (tokens[i] === undefined) [tokens[i], types[i]] = [`[PAD${i}]`, UNUSED];

  const gguf = writeAndLoadBpeGguf({ tokens, types, merges, pre: 'qwen2', bos: 151643, eos: 151645, addBos: false });
  const hf = loadTokenizer(TINY_CHAT);
  const chat =
    '<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>';
  for (const text of [...INP_TEXTS, ...EXTRA_TEXTS, chat]) {
    const ids = gguf.encode(text);
    assert.deepEqual(ids, hf.encode(text), JSON.stringify(text));
    assert.equal(gguf.decode(ids), hf.decode(ids), JSON.stringify(text));
  }
  assert.equal(gguf.bosToken, '<|endoftext|>');
  assert.equal(gguf.eosToken, '<|im_end|>');
  assert.equal(gguf.addBosToken, false);
  assert.equal(gguf.vocabSize, hf.vocabSize, 'unused [PADn] rows are not tokens');
  assert.deepEqual([...gguf.specialTokenIds].sort(), [...hf.specialTokenIds].sort());
  assert.equal(gguf.decode([9707, 151700]), 'Hello');
});

test('smollm GGUF from the SmolLM2 tokenizer.json vocabulary encodes like the HF tokenizer', () => {
  const dir = join(MODELS, 'smollm2-135m-instruct-tokenizer');
  const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as {
    model: { vocab: Record<string, number>; merges: (string | [string, string])[] };
    added_tokens: { id: number; special: boolean }[];
  };
  const tokens: string[] = [];
  const types = new Int32Array(Object.keys(json.model.vocab).length).fill(NORMAL);
  for (const [token, id] of Object.entries(json.model.vocab)) tokens[id] = token;
  for (const t of json.added_tokens) types[t.id] = t.special ? CONTROL : USER_DEFINED;
  const gguf = writeAndLoadBpeGguf({
    tokens,
    types,
    merges: json.model.merges.map((m) => (typeof m === 'string' ? m : m.join(' '))),
    pre: 'smollm',
    bos: 1,
    eos: 2,
    addBos: false,
  });
  const hf = loadTokenizer(dir);
  for (const text of [...INP_TEXTS, ...EXTRA_TEXTS, '<|im_start|>user\nHi<|im_end|>']) {
    assert.deepEqual(gguf.encode(text), hf.encode(text), JSON.stringify(text));
  }
});

// ---------------------------------------------------------------------------------------------------------
// Pre-tokenizer choice, on a small synthetic byte-level vocabulary.

/** Printable ASCII (byte-level form, space = Ġ) plus a few merged tokens. */
function syntheticBpe(pre: string | undefined): Tokenizer {
  const base = ['Ġ', ...Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i))];
  const merged = ['12', '123', '1234', '12345', '45', 'world'];
  const tokens = [...base, ...merged, '<|eot|>'];
  const types = new Int32Array(tokens.length).fill(NORMAL);
  types[tokens.length - 1] = CONTROL;
  const metadata: Record<string, unknown> = {
    'tokenizer.ggml.model': 'gpt2',
    'tokenizer.ggml.tokens': tokens,
    'tokenizer.ggml.token_type': types,
    // No merge builds "world": only ignore_merges (Llama 3) takes it whole.
    'tokenizer.ggml.merges': ['1 2', '12 3', '123 4', '1234 5', '4 5'],
    'tokenizer.ggml.eos_token_id': tokens.length - 1,
  };
  if (pre !== undefined) metadata['tokenizer.ggml.pre'] = pre;
  return tokenizerFromGguf(metadata);
}

test('tokenizer.ggml.pre picks the pre-tokenizer: digit grouping and ignore_merges', () => {
  const pieces = (tok: Tokenizer, text: string) => tok.encode(text).map((id) => tok.idToToken(id));
  assert.deepEqual(pieces(syntheticBpe('qwen2'), '12345'), ['1', '2', '3', '4', '5']); // \p{N}: one digit each
  assert.deepEqual(pieces(syntheticBpe('smollm'), '12345'), ['1', '2', '3', '4', '5']); // Digits(individual)
  assert.deepEqual(pieces(syntheticBpe('llama-bpe'), '12345'), ['123', '45']); // \p{N}{1,3}
  assert.deepEqual(pieces(syntheticBpe('gpt-2'), '12345'), ['12345']); // ' ?\p{N}+'
  assert.deepEqual(pieces(syntheticBpe('default'), '12345'), ['123', '45']); // llama.cpp's fallback: [0-9]{3}
  assert.deepEqual(pieces(syntheticBpe(undefined), '12345'), ['123', '45']); // no pre = default
  assert.deepEqual(pieces(syntheticBpe('llama-bpe'), 'world'), ['world']);
  assert.deepEqual(pieces(syntheticBpe('qwen2'), 'world'), ['w', 'o', 'r', 'l', 'd']);
  assert.deepEqual(pieces(syntheticBpe('gpt-2'), 'a 12<|eot|>'), ['a', 'Ġ', '12', '<|eot|>']);
});

test('BOS policy: llama-bpe adds BOS by default, tokenizer.ggml.add_bos_token overrides', () => {
  const metadata = (extra: Record<string, unknown>) => ({
    'tokenizer.ggml.model': 'gpt2',
    'tokenizer.ggml.pre': 'llama-bpe',
    'tokenizer.ggml.tokens': ['a', 'b', '<s>'],
    'tokenizer.ggml.token_type': new Int32Array([NORMAL, NORMAL, CONTROL]),
    'tokenizer.ggml.merges': [],
    'tokenizer.ggml.bos_token_id': 2,
    ...extra,
  });
  assert.deepEqual(tokenizerFromGguf(metadata({})).encode('ab', { addSpecialTokens: true }), [2, 0, 1]);
  assert.deepEqual(tokenizerFromGguf(metadata({ 'tokenizer.ggml.add_bos_token': false })).encode('ab', { addSpecialTokens: true }), [0, 1]);
  assert.equal(tokenizerFromGguf(metadata({ 'tokenizer.ggml.add_bos_token': false })).addBosToken, false);
});

test('unsupported tokenizer models and pre-tokenizers are errors, not silent mis-tokenization', () => {
  const base = { 'tokenizer.ggml.tokens': ['a'], 'tokenizer.ggml.merges': [] };
  assert.throws(() => tokenizerFromGguf({ ...base, 'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': 'kimi-k2' }), GgufTokenizerError);
  assert.throws(() => tokenizerFromGguf({ ...base, 'tokenizer.ggml.model': 'bert' }), GgufTokenizerError);
  assert.throws(() => tokenizerFromGguf({ 'tokenizer.ggml.model': 'llama' }), GgufTokenizerError);
});

test('ggufChatTemplate reads tokenizer.chat_template and named templates', () => {
  const metadata = { 'tokenizer.chat_template': '{{ messages }}', 'tokenizer.chat_template.tool_use': '{{ tools }}' };
  assert.equal(ggufChatTemplate(metadata), '{{ messages }}');
  assert.equal(ggufChatTemplate(metadata, 'tool_use'), '{{ tools }}');
  assert.equal(ggufChatTemplate(readGgufHeader(STORIES).metadata), null);
});

test('stories260K: tokenBytes gives byte-fallback tokens their byte, and a word its leading space', () => {
  const tok = loadGgufTokenizer(STORIES);
  const text = 'Emoji 😀 and 你好 ok';
  const ids = tok.encode(text);
  assert.ok(
    ids.some((id) => /^<0x[0-9A-F]{2}>$/.test(tok.idToToken(id)!)),
    'byte-fallback tokens',
  );
  // SentencePiece's dummy prefix: the first token is "▁Emoji", whose bytes hold the space decode strips.
  assert.deepEqual(Buffer.concat(ids.map((id) => tok.tokenBytes(id))), Buffer.from(` ${text}`, 'utf8'));
});
