// The multi-token-prediction drafter (--speculative): drafts with the checkpoint's MTP layer
// (src/model/architectures/mtp.ts), which reads the main model's final hidden states.
//
// observe(): after each step, every row whose next token is now known — positions
// [chunk.start, seq.numCached) of each chunk, prefill chunks included, after a verify only the
// accepted rows — goes through the MTP layer with its main hidden state and the token after it,
// writing the MTP layer's KV (its own KvLayer, addressed by the sequence's block table like the
// main layers) at those positions. For a sequence that decodes next, the MTP output of its last
// row is kept: its argmax is the first draft, its hidden state seeds the next.
// propose(): the first draft from what was kept; each further one by running the MTP layer again
// on its own previous output and the token it just drafted, one position on (writing MTP KV at
// draft positions, which observe rewrites for the rows the verify accepts). Drafts are greedy over
// the ids the head scores (--mtp-vocab); the verify decides what is kept, so any draft is safe.
// A preempted sequence loses what was kept (forget) and rebuilds its MTP KV as its prefill is
// recomputed; a swapped one gets it back with the other layers.
import type { KvLayer } from '../../kernels/ops.js';
import type { MtpLayer } from '../../model/architectures/index.js';
import type { Sequence } from '../sequence.js';
import type { DraftRequest, Drafter, StepOutcome } from './drafter.js';

/** What observe kept for a sequence: the MTP output at its last cached position. */
interface Kept {
  /** The position it is at: seq.numCached - 1 when it was kept. */
  pos: number;
  /** The MTP layer's output hidden state there. */
  hidden: Float32Array;
  /** Its greedy token: the draft for position pos + 2. */
  token: number;
}

/** Rows gathered for one MTP forward. */
class RowBuffer {
  tokens = new Int32Array(0);
  positions = new Int32Array(0);
  slots = new Int32Array(0);
  hidden = new Float32Array(0);

  constructor(private readonly hiddenSize: number) {}

  ensure(rows: number): void {
    if (rows <= this.tokens.length) return;
    const cap = Math.max(rows, Math.ceil(this.tokens.length * 1.5));
    this.tokens = new Int32Array(cap);
    this.positions = new Int32Array(cap);
    this.slots = new Int32Array(cap);
    this.hidden = new Float32Array(cap * this.hiddenSize);
  }
}

export class MtpDrafter implements Drafter {
  readonly mode = 'mtp' as const;
  private readonly kept = new Map<number, Kept>();
  private readonly rows: RowBuffer;

  constructor(
    private readonly mtp: MtpLayer,
    /** The MTP layer's KV, allocated beside the main layers (same blocks). */
    private readonly kv: KvLayer,
    private readonly blockSize: number,
  ) {
    this.rows = new RowBuffer(mtp.config.hiddenSize);
  }

  observe(step: StepOutcome): void {
    const H = this.mtp.config.hiddenSize;
    const { batch, forward, hidden } = step;
    const seqs: { qStart: number; qLen: number; kvLen: number; blockTable: Int32Array }[] = [];
    /** Per sequence to keep: its row in this forward and its position. */
    const keep: { seq: Sequence; row: number; pos: number }[] = [];
    let total = 0;
    for (const chunk of batch.chunks) total += chunk.length;
    const b = this.rows;
    b.ensure(total);
    let n = 0;
    batch.chunks.forEach((chunk, i) => {
      const seq = chunk.seq;
      // Rows whose following token is known: those now cached (a verify's accepted ones) —
      // even for a sequence that just finished, so prefix-cached blocks carry MTP KV too.
      const end = Math.min(chunk.start + chunk.length, seq.numCached, seq.tokens.length - 1);
      const count = end - chunk.start;
      if (count <= 0) {
        this.kept.delete(seq.id);
        return;
      }
      const at = forward.seqs[i];
      seqs.push({ qStart: n, qLen: count, kvLen: end, blockTable: at.blockTable });
      for (let j = 0; j < count; j++, n++) {
        const src = at.qStart + j;
        b.tokens[n] = seq.tokens[chunk.start + j + 1];
        b.positions[n] = forward.positions[src];
        b.slots[n] = forward.slots[src];
        b.hidden.set(hidden.subarray(src * H, (src + 1) * H), n * H);
      }
      // It decodes next when exactly its last token is uncached: then its first draft is ours.
      if (seq.status !== 'finished' && end === seq.numCached && seq.tokens.length === seq.numCached + 1) {
        keep.push({ seq, row: n - 1, pos: end - 1 });
      } else {
        this.kept.delete(seq.id);
      }
    });
    if (n === 0) return;
    const out = this.mtp.forward({ tokens: b.tokens, positions: b.positions, slots: b.slots, hidden: b.hidden, seqs }, n, this.kv);
    if (keep.length === 0) return;
    // The head only on the rows kept: it is the largest matmul here.
    const last = new Float32Array(keep.length * H);
    keep.forEach((k, i) => last.set(out.subarray(k.row * H, (k.row + 1) * H), i * H));
    const logits = this.mtp.logits(last, keep.length);
    keep.forEach((k, i) => {
      this.kept.set(k.seq.id, { pos: k.pos, hidden: last.slice(i * H, (i + 1) * H), token: this.argmax(logits, i) });
    });
  }

  propose(requests: readonly DraftRequest[]): number[][] {
    const H = this.mtp.config.hiddenSize;
    const bs = this.blockSize;
    const drafts: number[][] = requests.map(() => []);
    /** Requests still drafting: the last draft's MTP state, one position on. */
    let active: { i: number; seq: Sequence; room: number; hidden: Float32Array; token: number; pos: number }[] = [];
    requests.forEach(({ seq, room }, i) => {
      const k = this.kept.get(seq.id);
      if (!k || room < 1 || k.pos !== seq.numCached - 1 || seq.tokens.length !== seq.numCached + 1) return;
      drafts[i].push(k.token);
      if (room > 1 && !seq.stopTokenIds.has(k.token)) active.push({ i, seq, room, hidden: k.hidden, token: k.token, pos: k.pos + 1 });
    });
    const b = this.rows;
    while (active.length > 0) {
      const n = active.length;
      b.ensure(n);
      const seqs = active.map((a, r) => {
        b.tokens[r] = a.token;
        b.positions[r] = a.pos;
        // The scheduler gave the sequence blocks up to numCached + room; a.pos < numCached + room - 1.
        b.slots[r] = a.seq.blockTable[Math.floor(a.pos / bs)] * bs + (a.pos % bs);
        b.hidden.set(a.hidden, r * H);
        return {
          qStart: r,
          qLen: 1,
          kvLen: a.pos + 1,
          blockTable: Int32Array.from(a.seq.blockTable.slice(0, Math.ceil((a.pos + 1) / bs))),
        };
      });
      const out = this.mtp.forward({ tokens: b.tokens, positions: b.positions, slots: b.slots, hidden: b.hidden, seqs }, n, this.kv);
      const logits = this.mtp.logits(out, n);
      const next: typeof active = [];
      active.forEach((a, r) => {
        const token = this.argmax(logits, r);
        const d = drafts[a.i];
        d.push(token);
        if (d.length < a.room && !a.seq.stopTokenIds.has(token)) {
          next.push({ ...a, hidden: out.slice(r * H, (r + 1) * H), token, pos: a.pos + 1 });
        }
      });
      active = next;
    }
    return drafts;
  }

  forget(seqId: number): void {
    this.kept.delete(seqId);
  }

  /** Greedy over row r of draft logits (the ids the head scores); the first of equals wins. */
  private argmax(logits: Float32Array, r: number): number {
    const v = this.mtp.draftVocab;
    let best = 0;
    let max = -Infinity;
    for (let t = 0; t < v; t++) {
      const x = logits[r * v + t];
      if (x > max) {
        max = x;
        best = t;
      }
    }
    return best;
  }
}
