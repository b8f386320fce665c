// A short-lived thread that rebuilds the main thread's tokenizer (from its packed definition; no
// file is read) and works out each token's bytes for the grammar's vocabulary index (about 2 s for
// a 152k vocabulary), so the engine's step loop keeps serving other sequences meanwhile. Replies
// with the bytes packed into two transferable arrays.
import { parentPort, workerData } from 'node:worker_threads';
import { tokenizerFromPacked } from '../../model/tokenizer.js';
import { tokenByteStrings } from './token-bytes.js';
import type { PackedVocab } from './vocab-index.js';

const port = parentPort!;
try {
  const tokens = tokenByteStrings(tokenizerFromPacked(workerData as SharedArrayBuffer));
  const offsets = new Int32Array(tokens.length + 1);
  let total = 0;
  tokens.forEach((t, id) => {
    offsets[id] = total;
    total += t?.length ?? 0;
  });
  offsets[tokens.length] = total;
  const bytes = new Uint8Array(total);
  tokens.forEach((t, id) => t && bytes.set(t, offsets[id]));
  const packed: PackedVocab = { bytes, offsets };
  port.postMessage({ ok: true, packed }, [bytes.buffer, offsets.buffer]);
} catch (err) {
  port.postMessage({ ok: false, message: err instanceof Error ? err.message : String(err) });
}
