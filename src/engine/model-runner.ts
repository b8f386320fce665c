// Turns a scheduled batch into the model's ForwardBatch (token ids, positions, KV slots, block
// tables) and runs one forward pass. Rows of different sequences never mix: each sequence's
// attention reads only its own blocks, and logits come back only for rows that sample: a chunk's
// last row, or every row of a verify chunk from its last real token on (its draft's rows).
import type { KvLayer } from '../kernels/ops.js';
import type { ForwardBatch, Model } from '../model/architectures/index.js';
import type { ScheduledBatch } from './scheduler.js';

export class ModelRunner {
  constructor(
    private readonly model: Model,
    private readonly kv: KvLayer[],
    private readonly blockSize: number,
  ) {}

  get vocabSize(): number {
    return this.model.config.vocabSize;
  }

  /** Logits [sampling rows, vocab], in chunk order: 1 + draft length rows per sampling chunk. */
  run(batch: ScheduledBatch): { logits: Float32Array; forward: ForwardBatch } {
    const forward = this.prepare(batch);
    return { logits: this.model.forward(forward, this.kv), forward };
  }

  /** The last forward's final hidden states (Model.lastHidden). */
  lastHidden(): Float32Array {
    return this.model.lastHidden();
  }

  prepare(batch: ScheduledBatch): ForwardBatch {
    const n = batch.numTokens;
    const tokens = new Int32Array(n);
    const positions = new Int32Array(n);
    const slots = new Int32Array(n);
    const seqs: ForwardBatch['seqs'] = [];
    const logitRows: number[] = [];
    const bs = this.blockSize;
    let row = 0;
    for (const { seq, start, length, sample, draft } of batch.chunks) {
      const qStart = row;
      const known = seq.tokens.length;
      for (let pos = start; pos < start + length; pos++, row++) {
        tokens[row] = pos < known ? seq.tokens[pos] : draft[pos - known];
        positions[row] = pos;
        slots[row] = seq.blockTable[Math.floor(pos / bs)] * bs + (pos % bs);
      }
      const kvLen = start + length;
      seqs.push({ qStart, qLen: length, kvLen, blockTable: Int32Array.from(seq.blockTable.slice(0, Math.ceil(kvLen / bs))) });
      if (sample) for (let r = row - 1 - draft.length; r < row; r++) logitRows.push(r);
    }
    return { tokens, positions, slots, seqs, logitRows: Int32Array.from(logitRows) };
  }
}
