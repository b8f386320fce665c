// What grammars need to know about a model's vocabulary: each token's bytes and the byte trie over
// them, plus the token-mask cache for nodes every grammar shares. Built once per model: the token
// bytes in a background thread (loadVocabIndex) from the main thread's tokenizer (Tokenizer.packed),
// the trie in the engine worker.

import { Worker } from 'node:worker_threads';
import type { Tokenizer } from '../../model/tokenizer.js';
import { tokenByteStrings } from './token-bytes.js';
import { MaskCache } from './token-mask.js';
import { VocabTrie } from './vocab-trie.js';

export class VocabIndex {
  /** Token ids are 0 .. size - 1. */
  readonly size: number;
  readonly trie: VocabTrie;
  /** Masks of shared nodes (JSON strings, numbers, free text), reused across grammars and requests. */
  readonly sharedMasks = new MaskCache(1024);
  /** The longest token's length in bytes: how far one token can move a matcher (mask-cache keys use it). */
  readonly maxTokenBytes: number;
  private readonly bytes: Uint8Array;
  private readonly offsets: Int32Array;

  /** tokens[id]: the bytes token id adds to the text; null or empty = never allowed by a grammar. */
  constructor(tokens: readonly (Uint8Array | null)[]) {
    this.size = tokens.length;
    this.trie = VocabTrie.build(tokens);
    this.offsets = new Int32Array(tokens.length + 1);
    let total = 0;
    tokens.forEach((t, id) => {
      this.offsets[id] = total;
      total += t?.length ?? 0;
    });
    this.offsets[tokens.length] = total;
    this.maxTokenBytes = tokens.reduce((max, t) => Math.max(max, t?.length ?? 0), 0);
    this.bytes = new Uint8Array(total);
    tokens.forEach((t, id) => t && this.bytes.set(t, this.offsets[id]));
  }

  /** The bytes of token `id` (empty for special, unknown or unmappable tokens). */
  tokenBytes(id: number): Uint8Array {
    if (!(id >= 0 && id < this.size)) return this.bytes.subarray(0, 0);
    return this.bytes.subarray(this.offsets[id], this.offsets[id + 1]);
  }
}

/** Token bytes packed: token id's bytes are bytes[offsets[id] .. offsets[id + 1]). */
export interface PackedVocab {
  bytes: Uint8Array;
  offsets: Int32Array;
}

/** The vocabulary index of a model's tokenizer, built on this thread. */
export function buildVocabIndex(tokenizer: Tokenizer): VocabIndex {
  return new VocabIndex(tokenByteStrings(tokenizer));
}

/**
 * The vocabulary index of a tokenizer from its packed definition (Tokenizer.packed: bytes rather than
 * the object graph, so the engine worker only holds and forwards them, and only the short-lived
 * vocabulary thread pays for rebuilding): the tokenizer is rebuilt and the token bytes worked out in
 * a background thread (no file is read); only the trie is built on the calling thread.
 */
export function loadVocabIndex(packedTokenizer: SharedArrayBuffer): Promise<VocabIndex> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./vocab-worker.js', import.meta.url), { workerData: packedTokenizer });
    worker.once('message', (msg: { ok: true; packed: PackedVocab } | { ok: false; message: string }) => {
      void worker.terminate();
      if (!msg.ok) return reject(new Error(msg.message));
      const { bytes, offsets } = msg.packed;
      const tokens = Array.from({ length: offsets.length - 1 }, (_, id) => bytes.subarray(offsets[id], offsets[id + 1]));
      resolve(new VocabIndex(tokens));
    });
    worker.once('error', reject);
  });
}
