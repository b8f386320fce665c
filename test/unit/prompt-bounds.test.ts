// Bounds on prompt work: the characters-per-token bound (refuse before tokenizing), the per-word
// cap in tokenization (exactly as before without long runs), early stop, and the prompt worker pool
// (errors come back as the same ApiErrors; a worker that saw a huge input is recycled).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer as HfCore } from '@huggingface/tokenizers';
import { MODELS, TINY_CHAT } from '../helpers/paths.js';
import { loadTokenizer, unpackTokenizerDefinition } from '../../src/model/tokenizer.js';
import { MAX_WORD_CHARS, maxInputCharsPerToken, wordCapCuts } from '../../src/model/tokenizers/input-bounds.js';
import { findChatTemplate } from '../../src/chat/template.js';
import { buildTextPrompt, encodeTextPrompt, maxPromptChars, renderChatPrompt, type PromptModel } from '../../src/chat/prompt.js';
import { PromptWorkers, RECYCLE_CHARS } from '../../src/chat/prompt-workers.js';
import { ApiError } from '../../src/common/api-error.js';
import type { ModelRuntime } from '../../src/chat/model-runtime.js';

const MODEL_DIRS = ['svc-tiny-chat', 'smollm2-135m-instruct-tokenizer', 'tinystories-656k'].map((m) => join(MODELS, m));
const tokenizers = MODEL_DIRS.map((d) => loadTokenizer(d));

test('maxInputCharsPerToken: the longest token × the normalizer slack, for the real tokenizers', () => {
  // svc-tiny-chat (Qwen): longest token 128, NFC (×4); SmolLM2: 81, no normalizer; TinyStories: a fused
  // unknown token (its byte fallback lacks byte tokens: 1000 emoji encode as 2 tokens), so no bound.
  assert.deepEqual(
    tokenizers.map((t) => t.maxInputCharsPerToken),
    [512, 81, Infinity],
  );
});

test('maxInputCharsPerToken: Infinity where a tokenizer can drop text or fold a run of any length into one token', () => {
  const bpe = { type: 'BPE', vocab: { a: 0, ab: 1 }, merges: [] };
  assert.equal(maxInputCharsPerToken({ model: bpe }), 2);
  assert.equal(maxInputCharsPerToken({ model: bpe, normalizer: { type: 'NFKC' } }), 16);
  const none = [
    { model: { type: 'WordPiece', vocab: {} } },
    { model: { type: 'Unigram', vocab: [] } },
    { model: { ...bpe, unk_token: '<unk>', fuse_unk: true } },
    { model: { ...bpe, unk_token: '<unk>', fuse_unk: true, byte_fallback: true } },
    { model: bpe, normalizer: { type: 'Strip' } },
    { model: bpe, normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'StripAccents' }] } },
    { model: bpe, normalizer: { type: 'Replace', pattern: { String: '  ' }, content: ' ' } },
    { model: bpe, pre_tokenizer: { type: 'Whitespace' } },
    { model: bpe, pre_tokenizer: { type: 'Split', pattern: { String: ' ' }, behavior: 'Removed' } },
    { model: bpe, added_tokens: [{ id: 2, content: '<mask>', lstrip: true }] },
  ];
  for (const json of none) assert.equal(maxInputCharsPerToken(json), Infinity, JSON.stringify(json));
});

test('the bound holds: no text has more characters than its tokens × maxInputCharsPerToken', () => {
  const texts = [
    'a'.repeat(5000),
    ' '.repeat(3000),
    '='.repeat(3000) + '-'.repeat(3000),
    'hello '.repeat(500),
    '\n'.repeat(2000),
    'e\u0301'.repeat(1000) + 'ᄀ\u1161\u11a8'.repeat(500) + 'Ω\u0314\u0342\u0345'.repeat(500),
    '😀'.repeat(1000),
    '<|im_start|>'.repeat(200),
    readFileSync(join(TINY_CHAT, 'tokenizer_config.json'), 'utf8').slice(0, 20000),
  ];
  for (const [i, tok] of tokenizers.entries()) {
    for (const text of texts) {
      const n = tok.encode(text).length;
      if (tok.maxInputCharsPerToken === Infinity) continue;
      assert.ok(text.length <= n * tok.maxInputCharsPerToken, `${MODEL_DIRS[i]}: ${text.slice(0, 20)}…: ${text.length} chars, ${n} tokens`);
    }
  }
});

test('wordCapCuts: none for ordinary text; cuts every cap characters in a long run, at code points, never inside an added token', () => {
  assert.deepEqual(wordCapCuts('hello world '.repeat(10000), ['<|im_start|>']), []);
  assert.deepEqual(wordCapCuts('a'.repeat(MAX_WORD_CHARS), []), []);
  assert.deepEqual(wordCapCuts('a'.repeat(10), [], 4), [4, 8]);
  assert.deepEqual(wordCapCuts('ab cdefghij k', [], 4), [7]);
  // A surrogate pair straddling the cut: the cut moves before it.
  assert.deepEqual(wordCapCuts('aaa😀aaa', [], 4), [3, 7]);
  // An added token spanning the cut: the cut moves to its start; one starting the piece: cut after it.
  assert.deepEqual(wordCapCuts('xx<tok>yyyyyy', ['<tok>'], 4), [2, 7, 11]);
  assert.deepEqual(wordCapCuts('<tok><tok>', ['<tok>'], 3), [5]);
});

test('per-word cap: text without a run over the cap encodes exactly as the plain tokenizer does', () => {
  const texts = [
    'Hello, world! How are you today?',
    'naïve café — “quotes” 😀🚀 中文测试 한국어 مرحبا',
    '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
    'x'.repeat(MAX_WORD_CHARS) + ' ' + 'y'.repeat(MAX_WORD_CHARS),
    'function f(a, b) {\n\treturn a + b;\n}\n'.repeat(300),
    findChatTemplate(TINY_CHAT)!,
  ];
  for (const [i, tok] of tokenizers.entries()) {
    const core = new HfCore(unpackTokenizerDefinition(tok.packed).tokenizerJson, {});
    for (const text of texts)
      assert.deepEqual(tok.encode(text), core.encode(text, { add_special_tokens: false }).ids, `${MODEL_DIRS[i]}: ${text.slice(0, 30)}`);
  }
});

test('per-word cap: a long run is encoded in pieces; an added token written across a cut stays one token', () => {
  const tok = tokenizers[0]!;
  const core = new HfCore(unpackTokenizerDefinition(tok.packed).tokenizerJson, {});
  const plain = (s: string) => core.encode(s, { add_special_tokens: false }).ids;
  const run = 'b'.repeat(MAX_WORD_CHARS - 5) + '<|im_start|>' + 'c'.repeat(MAX_WORD_CHARS);
  const cuts = wordCapCuts(run, ['<|im_start|>']);
  assert.deepEqual(cuts, [MAX_WORD_CHARS - 5, 2 * MAX_WORD_CHARS - 5]);
  const ids = tok.encode(run);
  assert.deepEqual(ids, [...plain(run.slice(0, cuts[0])), ...plain(run.slice(cuts[0], cuts[1])), ...plain(run.slice(cuts[1]))]);
  assert.equal(ids.filter((id) => id === tok.tokenToId('<|im_start|>')).length, 1);
});

test('encode limit: a long run stops early, past the limit; 4 MiB of one letter costs one piece', () => {
  const tok = tokenizers[0]!;
  const started = performance.now();
  const ids = tok.encode('a'.repeat(4 << 20), { limit: 100 });
  assert.ok(ids.length > 100);
  assert.ok(ids.length <= 100 + MAX_WORD_CHARS);
  assert.ok(performance.now() - started < 5000, 'early stop');
});

const tiny: PromptModel = { tokenizer: tokenizers[0]!, chatTemplate: findChatTemplate(TINY_CHAT), maxSeqLen: 64 };

function assertApiError(fn: () => unknown, status: number, code: string | null, param: string, message?: RegExp) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ApiError, String(e));
    assert.deepEqual([e.status, e.code, e.param], [status, code, param]);
    if (message) assert.match(e.message, message);
    return true;
  });
}

test('the character bound refuses before tokenizing; a text under it but over the context is refused while encoding', async () => {
  assert.equal(maxPromptChars(tiny), 64 * 512);
  const over = 'a'.repeat(maxPromptChars(tiny) + 1);
  assertApiError(() => encodeTextPrompt(tiny, over, 'prompt'), 400, 'context_length_exceeded', 'prompt', /longer than any text that fits/);
  assertApiError(
    () => encodeTextPrompt(tiny, 'hello '.repeat(100), 'prompt'),
    400,
    'context_length_exceeded',
    'prompt',
    /at least \d+ tokens/,
  );
  assertApiError(
    () => renderChatPrompt(tiny, { messages: [{ role: 'user', content: over }], tools: [] }),
    400,
    'context_length_exceeded',
    'messages',
  );
  assert.ok(encodeTextPrompt(tiny, 'hello', 'prompt').length > 0);
  // Token-id prompts are counted before anything is decoded.
  const runtime = { ...tiny, modelConfig: { vocabSize: 151936 } } as unknown as ModelRuntime;
  await assert.rejects(buildTextPrompt({ tokens: new Array(64).fill(1) }, runtime, 'prompt'), /context length is 64/);
});

test('prompt workers: results as on the calling thread; ApiErrors come back as ApiErrors; a huge input recycles its worker', async () => {
  const refusing = "{{ raise_exception('no system messages') if messages[0].role == 'system' }}{{ messages[0].content }}";
  const pool = new PromptWorkers(tiny.tokenizer.packed, tiny.chatTemplate, 64);
  const refusePool = new PromptWorkers(tiny.tokenizer.packed, refusing, 64, 1);
  try {
    const input = { messages: [{ role: 'user', content: 'What is 2+2?' }], tools: [] };
    assert.deepEqual(await pool.chat(input), renderChatPrompt(tiny, input));
    assert.deepEqual(await pool.text('Hello there', 'prompt'), encodeTextPrompt(tiny, 'Hello there', 'prompt'));
    const expectApi = (status: number, code: string | null, param: string, message: RegExp) => (e: unknown) =>
      e instanceof ApiError && e.status === status && e.code === code && e.param === param && message.test(e.message);
    await assert.rejects(pool.text('hello '.repeat(100), 'prompt[1]'), expectApi(400, 'context_length_exceeded', 'prompt[1]', /at least/));
    await assert.rejects(
      refusePool.chat({ messages: [{ role: 'system', content: 'x' }], tools: [] }),
      expectApi(400, null, 'messages', /refused the conversation: no system messages/),
    );
    await assert.rejects(
      refusePool.chat({ messages: [{ role: 'user', content: '' }], tools: [] }),
      expectApi(400, null, 'messages', /empty/),
    );
    assert.equal(pool.recycled, 0);
    // Over the context after rendering RECYCLE_CHARS: refused, and that worker is replaced.
    await assert.rejects(
      pool.chat({ messages: [{ role: 'user', content: 'a'.repeat(RECYCLE_CHARS) }], tools: [] }),
      expectApi(400, 'context_length_exceeded', 'messages', /./),
    );
    assert.equal(pool.recycled, 1);
    assert.deepEqual(await pool.chat(input), renderChatPrompt(tiny, input));
    assert.deepEqual(await pool.chat(input), renderChatPrompt(tiny, input));
  } finally {
    await pool.close();
    await refusePool.close();
  }
  await assert.rejects(pool.text('x', 'prompt'), /closed/);
});
