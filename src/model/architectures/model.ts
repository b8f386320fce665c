// What every architecture exposes to the engine: one batched forward step over the paged KV cache.
import type { AttentionSeq, KvLayer } from '../../kernels/ops.js';
import type { ModelConfig } from '../types.js';

/** One engine step: the new tokens of every scheduled sequence, laid out sequence after sequence. */
export interface ForwardBatch {
  /** All new tokens of this step, sequence after sequence. */
  tokens: Int32Array;
  /** Position of each token within its sequence. */
  positions: Int32Array;
  /** KV slot (block * blockSize + offset) where each token's k/v is stored. */
  slots: Int32Array;
  /** Per sequence: its rows [qStart, qStart + qLen) and its kvLen / blockTable. */
  seqs: AttentionSeq[];
  /** Which token rows need logits (usually each sequence's last row). */
  logitRows: Int32Array;
}

export interface Model {
  readonly config: ModelConfig;
  /** Runs the step, writing each token's k/v into `kv` (one KvLayer per layer). Returns logits [logitRows.length, vocab]. */
  forward(batch: ForwardBatch, kv: KvLayer[]): Float32Array;
}
