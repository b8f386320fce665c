// Tokenizers built from a packed definition (the serve path: main thread, prompt workers, the
// grammar's vocabulary thread): the same ids, text and token bytes as a tokenizer built from the
// definition object, for every tokenizer kind the loaders make; and the definition's tables are let go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { MODELS, TINY_CHAT } from '../helpers/paths.js';
import {
  loadTokenizerDefinition,
  packTokenizerDefinition,
  tokenizerFromDefinition,
  tokenizerFromPacked,
  unpackTokenizerDefinition,
  type Tokenizer,
  type TokenizerDefinition,
} from '../../src/model/tokenizer.js';
import { releaseHeapMemory } from '../../src/kernels/release-heap.js';

const SOURCES: [string, string][] = [
  ['byte-level BPE, tokenizer.json (Qwen3)', TINY_CHAT],
  ['byte-level BPE, vocab.json + merges.txt (Qwen2.5)', join(MODELS, 'qwen2.5-0.5b-instruct-tokenizer')],
  ['byte-level BPE, tokenizer.json (SmolLM2)', join(MODELS, 'smollm2-135m-instruct-tokenizer')],
  ['SentencePiece-style BPE, tokenizer.json (TinyStories)', join(MODELS, 'tinystories-656k')],
  ['SentencePiece BPE from GGUF metadata (stories260K)', join(MODELS, 'stories260k-gguf', 'stories260K.gguf')],
];

const TEXTS = [
  ...readFileSync(join(MODELS, 'llamacpp-vocab-gguf', 'ggml-vocab-gpt-2.gguf.inp'), 'utf8')
    .split('\n__ggml_vocab_test__\n')
    .slice(0, -1),
  'Once upon a time, there was a little girl named Lily.',
  '<|im_start|>user\nHi<|im_end|>\n<think>\n</think>',
  'Emoji 😀🚀👍🏽 and CJK 你好，世界 and café',
  '  leading and trailing  ',
];

function sameTokenizer(lean: Tokenizer, full: Tokenizer, label: string): void {
  assert.equal(lean.vocabSize, full.vocabSize, label);
  assert.deepEqual([...lean.specialTokenIds].sort(), [...full.specialTokenIds].sort(), label);
  assert.equal(lean.bosToken, full.bosToken, label);
  assert.equal(lean.addBosToken, full.addBosToken, label);
  assert.equal(lean.maxInputCharsPerToken, full.maxInputCharsPerToken, label);
  for (const text of TEXTS) {
    const ids = full.encode(text, { addSpecialTokens: true });
    assert.deepEqual(lean.encode(text, { addSpecialTokens: true }), ids, `${label}: ${JSON.stringify(text)}`);
    assert.equal(lean.decode(ids), full.decode(ids), label);
    assert.equal(lean.decode(ids, { skipSpecialTokens: true }), full.decode(ids, { skipSpecialTokens: true }), label);
  }
  for (let id = 0; id < full.vocabSize; id += Math.max(1, Math.floor(full.vocabSize / 500))) {
    assert.deepEqual(lean.tokenBytes(id), full.tokenBytes(id), `${label}: token ${id}`);
    assert.equal(lean.idToToken(id), full.idToToken(id), label);
    const token = full.idToToken(id);
    if (token !== undefined) assert.equal(lean.tokenToId(token), full.tokenToId(token), label);
  }
}

for (const [label, source] of SOURCES) {
  test(`packed definition: ${label}: the same tokenizer as from the definition object`, () => {
    const full = tokenizerFromDefinition(loadTokenizerDefinition(source));
    const packed = packTokenizerDefinition(loadTokenizerDefinition(source));
    const lean = tokenizerFromPacked(packed);
    assert.equal(lean.packed, packed, 'a tokenizer built from packed bytes keeps them');
    sameTokenizer(lean, full, label);
    // A tokenizer built from the object packs it on demand: the bytes rebuild the same tokenizer.
    sameTokenizer(tokenizerFromPacked(full.packed), full, `${label} (repacked)`);
    assert.deepEqual(unpackTokenizerDefinition(full.packed), loadTokenizerDefinition(source));
  });
}

/** A definition only the returned WeakRefs point at, and the tokenizer built from it with its packed bytes. */
function buildLean(): { tokenizer: Tokenizer; vocab: WeakRef<object>; json: WeakRef<object> } {
  const definition: TokenizerDefinition = loadTokenizerDefinition(TINY_CHAT);
  const model = (definition.tokenizerJson as { model: { vocab: object } }).model;
  const tokenizer = tokenizerFromDefinition(definition, packTokenizerDefinition(definition));
  return { tokenizer, vocab: new WeakRef(model.vocab), json: new WeakRef(definition.tokenizerJson) };
}

test('a tokenizer built with its packed bytes keeps nothing of the definition object', async () => {
  const { tokenizer, vocab, json } = buildLean();
  // WeakRef targets live until the current job ends.
  await new Promise((resolve) => setImmediate(resolve));
  releaseHeapMemory();
  assert.equal(json.deref(), undefined, 'the tokenizer.json object was collected');
  assert.equal(vocab.deref(), undefined, "the definition's vocab object was collected");
  assert.deepEqual(tokenizer.decode(tokenizer.encode('still works')), 'still works');
});

/** Grows the heap by ~40 MB of objects that are garbage once it returns; the physical heap size then. */
function growHeap(): number {
  const garbage = Array.from({ length: 400_000 }, (_, i) => ({ i, s: `item ${i}` }));
  assert.equal(garbage.length, 400_000);
  return getHeapStatistics().total_physical_size;
}

test('releaseHeapMemory hands the pages of freed objects back (the young generation shrinks too)', async () => {
  const grown = growHeap();
  await new Promise((resolve) => setImmediate(resolve));
  releaseHeapMemory();
  const after = getHeapStatistics().total_physical_size;
  assert.ok(after < grown - 20e6, `physical heap ${(grown / 1e6).toFixed(0)} MB -> ${(after / 1e6).toFixed(0)} MB`);
});
