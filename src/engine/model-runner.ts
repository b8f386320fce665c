// Turns a scheduled batch into the model's ForwardBatch (token ids, positions, KV slots, block
// tables) and runs one forward pass. Rows of different sequences never mix: each sequence's
// attention reads only its own blocks, and logits come back only for rows that sample: a chunk's
// last row, or every row of a verify chunk from its last real token on (its draft's rows).
// Vision models: a chunk's image rows take their image's embeddings (encoded by the vision encoder
// the first time a chunk reaches them), and M-RoPE models get each row's three positions.
import type { KvLayer } from '../kernels/ops.js';
import type { ForwardBatch, Model, RecurrentState } from '../model/architectures/index.js';
import { mropePositions, writeMropeRows, type MropeLayout } from '../model/vision/mrope-positions.js';
import type { VisionEncoder } from '../model/vision/types.js';
import type { ScheduledBatch } from './scheduler.js';
import type { Sequence, SequenceImage } from './sequence.js';

export class ModelRunner {
  /** M-RoPE layouts of sequences with images (a text-only sequence's positions are its indices). */
  private readonly layouts = new WeakMap<Sequence, MropeLayout>();

  constructor(
    private readonly model: Model,
    private readonly kv: KvLayer[],
    private readonly blockSize: number,
    /** The checkpoint's vision encoder; null for a text-only model. */
    readonly vision: VisionEncoder | null = null,
    /** Hybrid models: the recurrent state, each running sequence in its slot (Sequence.stateSlot). */
    private readonly state: RecurrentState | null = null,
  ) {}

  get vocabSize(): number {
    return this.model.config.vocabSize;
  }

  /** Logits [sampling rows, vocab], in chunk order: 1 + draft length rows per sampling chunk. */
  run(batch: ScheduledBatch): { logits: Float32Array; forward: ForwardBatch } {
    const forward = this.prepare(batch);
    return { logits: this.model.forward(forward, this.kv, undefined, this.state ?? undefined), forward };
  }

  /** The last forward's final hidden states (Model.lastHidden). */
  lastHidden(): Float32Array {
    return this.model.lastHidden();
  }

  /**
   * Why the model cannot run a job's images, or null when it can: each image's tokens are the
   * encoder's image token, in order, inside the prompt, as many (and, for M-RoPE, the grid) as the
   * encoder's layout makes of the picture.
   */
  checkImages(seq: Sequence): string | null {
    if (seq.images.length === 0) return null;
    const vision = this.vision;
    if (!vision) return 'the model has no vision encoder';
    let end = 0;
    for (const [i, img] of seq.images.entries()) {
      if (img.offset < end || img.offset + img.numTokens > seq.numPromptTokens)
        return `image ${i}'s tokens are out of order or outside the prompt`;
      for (let t = img.offset; t < img.offset + img.numTokens; t++) {
        if (seq.tokens[t] !== vision.imageTokenId) return `image ${i}'s token ${t} is not the image token ${vision.imageTokenId}`;
      }
      const want = vision.layout.tokensFor(img.source!.width, img.source!.height);
      if (want.numTokens !== img.numTokens || JSON.stringify(want.grid) !== JSON.stringify(img.grid)) {
        return `image ${i} (${img.source!.width}×${img.source!.height}) takes ${want.numTokens} tokens, not ${img.numTokens}`;
      }
      end = img.offset + img.numTokens;
    }
    return null;
  }

  prepare(batch: ScheduledBatch): ForwardBatch {
    const n = batch.numTokens;
    const tokens = new Int32Array(n);
    const positions = new Int32Array(n);
    const slots = new Int32Array(n);
    const seqs: ForwardBatch['seqs'] = [];
    const logitRows: number[] = [];
    const imageRows: number[] = [];
    const imageValues: Float32Array[] = [];
    // M-RoPE rows only for batches with images: text positions are M-RoPE's with all three rows equal.
    const withImages = this.model.config.mropeSection !== undefined && batch.chunks.some(({ seq }) => seq.images.length > 0);
    const mrope = withImages ? new Int32Array(3 * n) : undefined;
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
      for (const img of seq.images) this.addImageRows(img, start, length, qStart, imageRows, imageValues);
      if (mrope) writeMropeRows(this.layoutOf(seq), start, length, mrope, qStart, n);
      const kvLen = start + length;
      seqs.push({ qStart, qLen: length, kvLen, blockTable: Int32Array.from(seq.blockTable.slice(0, Math.ceil(kvLen / bs))) });
      if (sample) for (let r = row - 1 - draft.length; r < row; r++) logitRows.push(r);
    }
    const forward: ForwardBatch = { tokens, positions, slots, seqs, logitRows: Int32Array.from(logitRows) };
    if (mrope) forward.mropePositions = mrope;
    if (imageRows.length > 0) forward.inputEmbeddings = { rows: Int32Array.from(imageRows), values: concat(imageValues) };
    if (this.state) {
      forward.stateSlots = Int32Array.from(batch.chunks, ({ seq }) => {
        if (seq.stateSlot === null) throw new Error(`sequence ${seq.id} runs without a recurrent-state slot`);
        return seq.stateSlot;
      });
    }
    return forward;
  }

  /** The rows of `img` among a chunk's tokens [start, start + length) (batch rows from qStart on). */
  private addImageRows(img: SequenceImage, start: number, length: number, qStart: number, rows: number[], values: Float32Array[]): void {
    const from = Math.max(start, img.offset);
    const to = Math.min(start + length, img.offset + img.numTokens);
    if (from >= to) return;
    const embeddings = this.embeddingsOf(img);
    const h = this.model.config.hiddenSize;
    for (let t = from; t < to; t++) rows.push(qStart + t - start);
    values.push(embeddings.subarray((from - img.offset) * h, (to - img.offset) * h));
  }

  /** The image's embeddings, encoded on first use (its pixels are let go then). */
  private embeddingsOf(img: SequenceImage): Float32Array {
    if (img.embeddings) return img.embeddings;
    if (!this.vision || !img.source) throw new Error('an image reached the model without pixels or a vision encoder');
    const encoded = this.vision.encode(img.source);
    if (encoded.numTokens !== img.numTokens)
      throw new Error(`the vision encoder made ${encoded.numTokens} rows of an image of ${img.numTokens} tokens`);
    img.embeddings = encoded.embeddings;
    img.source = null;
    return img.embeddings;
  }

  /** A sequence's M-RoPE layout over its prompt; null (positions = indices) without images. */
  private layoutOf(seq: Sequence): MropeLayout | null {
    if (seq.images.length === 0) return null;
    let layout = this.layouts.get(seq);
    if (!layout) {
      const grids = seq.images.map((img, i) => {
        if (!img.grid) throw new Error(`image ${i} of an M-RoPE model has no patch grid`);
        return img.grid;
      });
      layout = mropePositions(seq.tokens.slice(0, seq.numPromptTokens), this.vision!.imageTokenId, grids);
      this.layouts.set(seq, layout);
    }
    return layout;
  }
}

function concat(parts: Float32Array[]): Float32Array {
  if (parts.length === 1) return parts[0];
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
