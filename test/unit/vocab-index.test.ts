// The grammar vocabulary's token bytes, worked out in a background thread from the main thread's
// tokenizer (Tokenizer.packed → loadVocabIndex): the same bytes as on the calling thread, and no
// tokenizer file is read — here the files are gone before the thread starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { buildVocabIndex, loadVocabIndex } from '../../src/engine/grammar/index.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { MODELS, TINY_CHAT } from '../helpers/paths.js';

/** Loads the tokenizer from a copy of `files`, then deletes the copy. */
function tokenizerFromVanishingCopy(dir: string, files: string[], path: (copy: string) => string) {
  const copy = mkdtempSync(join(tmpdir(), 'svc-vocab-'));
  for (const f of files) copyFileSync(join(dir, f), join(copy, f));
  try {
    return loadTokenizer(path(copy));
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

async function checkSameBytes(tokenizer: ReturnType<typeof loadTokenizer>): Promise<number> {
  const here = buildVocabIndex(tokenizer);
  const there = await loadVocabIndex(tokenizer.packed);
  assert.equal(there.size, here.size);
  let nonEmpty = 0;
  for (let id = 0; id < here.size; id++) {
    assert.deepEqual(there.tokenBytes(id), here.tokenBytes(id), `token ${id}`);
    if (here.tokenBytes(id).length > 0) nonEmpty++;
  }
  assert.equal(there.trie.nodeCount, here.trie.nodeCount);
  return nonEmpty;
}

test('a Hugging Face directory tokenizer (byte-level BPE): same token bytes, no file read', async () => {
  const tk = tokenizerFromVanishingCopy(TINY_CHAT, ['tokenizer.json', 'tokenizer_config.json'], (copy) => copy);
  assert.ok((await checkSameBytes(tk)) > 150_000);
});

test('a GGUF-embedded tokenizer (SentencePiece): same token bytes, no file read', async () => {
  const tk = tokenizerFromVanishingCopy(join(MODELS, 'stories260k-gguf'), ['stories260K.gguf'], (copy) => join(copy, 'stories260K.gguf'));
  assert.ok((await checkSameBytes(tk)) > 250);
});
