// The self-speculative drafter (--self-speculative): the model itself with some layers skipped
// drafts each sequence's next tokens greedily, all requesting sequences batched, one token per
// forward pass; the full model verifies them. Skipped layers neither run nor write KV; kept layers
// write KV only at the draft positions the scheduler reserved, which the verify rewrites.
import type { AttentionSeq, KvLayer } from '../../kernels/ops.js';
import type { ForwardBatch, Model, OutputHead } from '../../model/architectures/index.js';
import { numCompletionTokens, type Sequence } from '../sequence.js';
import type { DraftRequest, Drafter } from './drafter.js';

export interface SelfDrafterOptions {
  /** The layers the draft passes leave out, when up to `numDrafts` tokens are drafted per sequence. */
  readonly skipLayers: (numDrafts: number) => ReadonlySet<number>;
  /** The draft passes' logits over these tokens only (null: the whole vocabulary). */
  readonly head: OutputHead | null;
  /**
   * A sequence stops drafting when its draft token's probability under the draft model falls below
   * this: a likely rejection would only add a verify row. 0 = draft all `room` tokens.
   */
  readonly minConfidence: number;
}

/** What one sequence is drafting this propose call. */
interface Drafting {
  readonly seq: Sequence;
  readonly out: number[];
  /** Most tokens it may draft. */
  readonly limit: number;
  readonly blockTable: Int32Array;
}

export class SelfDrafter implements Drafter {
  readonly mode = 'self';
  /** Batch buffers, grown to the largest pass seen and reused (passes are one row per sequence but the first). */
  private tokens = new Int32Array(0);
  private positions = new Int32Array(0);
  private slots = new Int32Array(0);
  private logitRows = new Int32Array(0);
  /** Draft passes run and tokens drafted since start (the bench reads them). */
  passes = 0;
  drafted = 0;

  constructor(
    private readonly model: Model,
    private readonly kv: KvLayer[],
    private readonly blockSize: number,
    private readonly options: SelfDrafterOptions,
  ) {}

  propose(requests: readonly DraftRequest[]): number[][] {
    const result = requests.map((): number[] => []);
    const bs = this.blockSize;
    let active: Drafting[] = [];
    requests.forEach(({ seq, room }, i) => {
      const uncached = seq.tokens.length - seq.numCached;
      // Pass j writes KV at position tokens.length - 1 + j (the first pass all uncached ones): stay below numCached + room.
      // Beyond what max_tokens lets it take, a draft is never used.
      const limit = Math.min(room - uncached + 1, seq.maxTokens - numCompletionTokens(seq) - 1);
      if (uncached < 1 || limit < 1) return;
      const blocks = Math.ceil((seq.tokens.length + limit - 1) / bs);
      active.push({ seq, out: result[i], limit, blockTable: Int32Array.from(seq.blockTable.slice(0, blocks)) });
    });
    if (active.length === 0) return result;
    const options = { skipLayers: this.options.skipLayers(Math.max(...active.map((d) => d.limit))), head: this.options.head ?? undefined };
    while (active.length > 0) {
      const logits = this.model.forward(this.batch(active), this.kv, options);
      this.passes++;
      const width = logits.length / active.length;
      active = active.filter((d, r) => {
        const best = argmax(logits, r * width, width);
        const token = this.options.head ? this.options.head.ids[best] : best;
        d.out.push(token);
        this.drafted++;
        if (d.out.length >= d.limit || d.seq.stopTokenIds.has(token)) return false;
        return this.options.minConfidence <= 0 || topProbability(logits, r * width, width, best) >= this.options.minConfidence;
      });
    }
    return result;
  }

  /**
   * The next draft pass: per sequence, its uncached tokens on the first pass (it has drafted
   * nothing yet), else its last draft token; each row at its position, KV in the reserved blocks.
   */
  private batch(active: readonly Drafting[]): ForwardBatch {
    const bs = this.blockSize;
    let n = 0;
    for (const { seq, out } of active) n += out.length === 0 ? seq.tokens.length - seq.numCached : 1;
    this.ensure(n, active.length);
    const seqs: AttentionSeq[] = [];
    let row = 0;
    active.forEach(({ seq, out, blockTable }, i) => {
      const qStart = row;
      const first = out.length === 0 ? seq.numCached : seq.tokens.length - 1 + out.length;
      const end = seq.tokens.length + out.length;
      for (let pos = first; pos < end; pos++, row++) {
        this.tokens[row] = pos < seq.tokens.length ? seq.tokens[pos] : out[pos - seq.tokens.length];
        this.positions[row] = pos;
        this.slots[row] = blockTable[Math.floor(pos / bs)] * bs + (pos % bs);
      }
      seqs.push({ qStart, qLen: row - qStart, kvLen: end, blockTable });
      this.logitRows[i] = row - 1;
    });
    return {
      tokens: this.tokens.subarray(0, n),
      positions: this.positions.subarray(0, n),
      slots: this.slots.subarray(0, n),
      seqs,
      logitRows: this.logitRows.subarray(0, active.length),
    };
  }

  private ensure(rows: number, numSeqs: number): void {
    if (rows > this.tokens.length) {
      this.tokens = new Int32Array(rows);
      this.positions = new Int32Array(rows);
      this.slots = new Int32Array(rows);
    }
    if (numSeqs > this.logitRows.length) this.logitRows = new Int32Array(numSeqs);
  }
}

function argmax(a: Float32Array, offset: number, len: number): number {
  let best = 0;
  let max = a[offset];
  for (let i = 1; i < len; i++) {
    if (a[offset + i] > max) {
      max = a[offset + i];
      best = i;
    }
  }
  return best;
}

/** softmax(row)[best], best being the row's argmax. */
function topProbability(a: Float32Array, offset: number, len: number, best: number): number {
  const max = a[offset + best];
  let sum = 0;
  for (let i = 0; i < len; i++) sum += Math.exp(a[offset + i] - max);
  return 1 / sum;
}
