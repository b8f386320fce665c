// A TokenizerDefinition as bytes in shared memory: what every thread that builds the model's
// tokenizer (the main thread, the prompt workers, the grammar's vocabulary thread) reads, in place.
import { deserialize, serialize } from 'node:v8';
import type { TokenizerDefinition } from '../tokenizer.js';

/** The definition v8-serialized into shared memory (~6 MB for a 151k vocabulary, where the object graph is ~22 MB of heap). */
export function packTokenizerDefinition(definition: TokenizerDefinition): SharedArrayBuffer {
  const bytes = serialize(definition);
  const shared = new SharedArrayBuffer(bytes.byteLength);
  new Uint8Array(shared).set(bytes);
  return shared;
}

export function unpackTokenizerDefinition(packed: SharedArrayBuffer): TokenizerDefinition {
  return deserialize(new Uint8Array(packed)) as TokenizerDefinition;
}
