// Runs a model through the paged KV cache as the engine does (non-contiguous block tables, several
// sequences per batch) and measures its logits against Hugging Face's: whole-sequence prefill and
// token-by-token decode.
import { readFileSync } from 'node:fs';
import type { KvDType, KvLayer } from '../../src/kernels/ops.js';
import { allocateKvCache } from '../../src/engine/kv-cache.js';
import type { ForwardBatch, ForwardOptions, Model } from '../../src/model/architectures/index.js';
import type { RecurrentState } from '../../src/model/architectures/model.js';
import { writeMropeRows, type MropeLayout } from '../../src/model/vision/mrope-positions.js';

/** New tokens for one sequence; embeddings[j], where set, replaces token j's embedding (an image row). */
export interface PagedChunk {
  seq: number;
  tokens: number[];
  embeddings?: (Float32Array | undefined)[];
}

/** Sequences sharing one paged cache; each gets interleaved, reversed blocks so its table is non-contiguous. */
export class PagedRun {
  readonly kv: KvLayer[];
  private readonly tables: Int32Array[];
  private readonly lengths: number[];
  /** Set (one entry per sequence, null for text-only ones): batches carry M-RoPE positions from these layouts. */
  mrope: (MropeLayout | null)[] | null = null;
  /**
   * Models with recurrent layers (Model.createRecurrentState): the state every step passes and the
   * slot of each sequence (batch.stateSlots), made with slot = sequence; tests may re-point slots.
   */
  readonly recurrent: { state: RecurrentState; slots: number[] } | null;

  constructor(
    private readonly model: Model,
    maxLens: number[],
    private readonly blockSize: number,
    dtype: KvDType = 'f32',
  ) {
    const perSeq = Math.max(...maxLens.map((l) => Math.ceil(l / blockSize)));
    const numSeqs = maxLens.length;
    this.kv = allocateKvCache(model.config, perSeq * numSeqs, blockSize, dtype);
    this.tables = maxLens.map((_, s) => Int32Array.from({ length: perSeq }, (_, b) => (perSeq - 1 - b) * numSeqs + s));
    this.lengths = maxLens.map(() => 0);
    const state = model.createRecurrentState?.(numSeqs);
    this.recurrent = state ? { state, slots: maxLens.map((_, s) => s) } : null;
  }

  /** Sequence `seq` starts over at position 0 (its blocks are rewritten; its recurrent slot is reset by the model). */
  restart(seq: number): void {
    this.lengths[seq] = 0;
  }

  /**
   * One forward step: appends `chunks[i].tokens` to sequence `chunks[i].seq`, all in one batch.
   * Returns the logits of every new row (allRows) or of each chunk's last row.
   */
  step(chunks: PagedChunk[], allRows: boolean, options?: ForwardOptions): Float32Array {
    const tokens: number[] = [];
    const positions: number[] = [];
    const slots: number[] = [];
    const logitRows: number[] = [];
    const seqs = [];
    const inputRows: number[] = [];
    const inputValues: Float32Array[] = [];
    const total = chunks.reduce((a, c) => a + c.tokens.length, 0);
    const layouts = this.mrope;
    const recurrent = this.recurrent;
    const mrope = layouts ? new Int32Array(3 * total) : undefined;
    for (const { seq, tokens: ids, embeddings } of chunks) {
      const qStart = tokens.length;
      if (layouts && mrope) writeMropeRows(layouts[seq], this.lengths[seq], ids.length, mrope, qStart, total);
      for (const [j, id] of ids.entries()) {
        const pos = this.lengths[seq]++;
        const embedding = embeddings?.[j];
        if (embedding) {
          inputRows.push(tokens.length);
          inputValues.push(embedding);
        }
        tokens.push(id);
        positions.push(pos);
        slots.push(this.tables[seq][Math.floor(pos / this.blockSize)] * this.blockSize + (pos % this.blockSize));
        if (allRows) logitRows.push(tokens.length - 1);
      }
      if (!allRows) logitRows.push(tokens.length - 1);
      seqs.push({ qStart, qLen: ids.length, kvLen: this.lengths[seq], blockTable: this.tables[seq] });
    }
    const batch: ForwardBatch = {
      tokens: Int32Array.from(tokens),
      positions: Int32Array.from(positions),
      slots: Int32Array.from(slots),
      seqs,
      logitRows: Int32Array.from(logitRows),
      ...(mrope ? { mropePositions: mrope } : {}),
      ...(recurrent ? { stateSlots: Int32Array.from(chunks, (c) => recurrent.slots[c.seq]) } : {}),
      ...(inputRows.length > 0
        ? { inputEmbeddings: { rows: Int32Array.from(inputRows), values: Float32Array.from(inputValues.flatMap((v) => [...v])) } }
        : {}),
    };
    return this.model.forward(batch, this.kv, options, this.recurrent?.state);
  }
}

export interface ReferenceLogits {
  sequences: number[][];
  logits: number[][][];
}

export function readReferenceLogits(path: string): ReferenceLogits {
  return JSON.parse(readFileSync(path, 'utf8')) as ReferenceLogits;
}

/** Logits of every position of every sequence: all sequences whole in one batch, or one token per sequence per step. */
export function pagedLogits(model: Model, sequences: number[][], mode: 'prefill' | 'decode'): Float32Array[][] {
  const lens = sequences.map((s) => s.length);
  const vocab = model.config.vocabSize;
  const out = sequences.map(() => [] as Float32Array[]);
  if (mode === 'prefill') {
    const whole = new PagedRun(model, lens, 4).step(
      sequences.map((tokens, seq) => ({ seq, tokens })),
      true,
    );
    let row = 0;
    sequences.forEach((seq, s) => seq.forEach(() => out[s].push(whole.slice(row * vocab, ++row * vocab))));
    return out;
  }
  // Blocks of 4 are crossed every 4 steps.
  const run = new PagedRun(model, lens, 4);
  for (let pos = 0; pos < Math.max(...lens); pos++) {
    const live = sequences.map((tokens, seq) => ({ seq, tokens: [tokens[pos]] })).filter((c) => c.tokens[0] !== undefined);
    const logits = run.step(live, false);
    live.forEach((c, i) => out[c.seq].push(logits.slice(i * vocab, (i + 1) * vocab)));
  }
  return out;
}

/** Max |ours − reference| over every position of every sequence, for the prefill path and the decode path. */
export function referenceErrors(model: Model, ref: ReferenceLogits): { prefill: number; decode: number } {
  const err = (ours: Float32Array[][]): number => {
    let max = 0;
    ours.forEach((rows, s) =>
      rows.forEach((row, pos) => row.forEach((v, i) => (max = Math.max(max, Math.abs(v - ref.logits[s][pos][i]))))),
    );
    return max;
  };
  return { prefill: err(pagedLogits(model, ref.sequences, 'prefill')), decode: err(pagedLogits(model, ref.sequences, 'decode')) };
}

/** Max |a − b| over two runs' logits. */
export function maxDifference(a: Float32Array[][], b: Float32Array[][]): number {
  let max = 0;
  a.forEach((rows, s) => rows.forEach((row, pos) => row.forEach((v, i) => (max = Math.max(max, Math.abs(v - b[s][pos][i]))))));
  return max;
}

/** Logits rows as [sequence index in the reference, position, logits]. */
export type ReferenceRows = [number, number, Float32Array][];

/** max |logits − HF| / max |HF| over the rows given. */
export function referenceRelError(ref: ReferenceLogits, rows: ReferenceRows): number {
  let err = 0;
  let scale = 0;
  for (const [s, pos, row] of rows) {
    const want = ref.logits[s][pos];
    if (row.length !== want.length) throw new Error(`row ${s}:${pos}: ${row.length} logits, the reference has ${want.length}`);
    for (let v = 0; v < row.length; v++) {
      err = Math.max(err, Math.abs(row[v] - want[v]));
      scale = Math.max(scale, Math.abs(want[v]));
    }
  }
  return err / scale;
}

/** Each reference sequence prefilled alone (blocks of 4), logits for every row. */
export function prefillRows(model: Model, ref: ReferenceLogits): ReferenceRows {
  const vocab = model.config.vocabSize;
  const rows: ReferenceRows = [];
  ref.sequences.forEach((tokens, s) => {
    const logits = new PagedRun(model, [tokens.length], 4).step([{ seq: 0, tokens }], true);
    tokens.forEach((_, pos) => rows.push([s, pos, logits.slice(pos * vocab, (pos + 1) * vocab)]));
  });
  return rows;
}

/**
 * Two reference sequences per batch through one paged cache (blocks of 3, interleaved and reversed
 * so each table is non-contiguous): a prefill of chunks[0] tokens, then a chunk of chunks[1], then
 * the rest one token per step. `swapSlots`: recurrent models run with their state slots swapped.
 */
export function pagedRows(
  model: Model,
  ref: ReferenceLogits,
  pair: [number, number],
  options: { chunks?: [number, number]; dtype?: KvDType; swapSlots?: boolean } = {},
): ReferenceRows {
  const vocab = model.config.vocabSize;
  const seqs = pair.map((s) => ref.sequences[s]);
  const run = new PagedRun(
    model,
    seqs.map((t) => t.length),
    3,
    options.dtype ?? 'f32',
  );
  if (options.swapSlots) run.recurrent?.slots.splice(0, 2, 1, 0);
  const rows: ReferenceRows = [];
  const done = [0, 0];
  const step = (lens: number[]): void => {
    const chunks = lens.map((len, i) => ({ seq: i, tokens: seqs[i].slice(done[i], done[i] + len) })).filter((c) => c.tokens.length > 0);
    const logits = run.step(chunks, true);
    let row = 0;
    for (const c of chunks) {
      for (let j = 0; j < c.tokens.length; j++, row++)
        rows.push([pair[c.seq], done[c.seq] + j, logits.slice(row * vocab, (row + 1) * vocab)]);
      done[c.seq] += c.tokens.length;
    }
  };
  const [first, second] = options.chunks ?? [5, 4];
  step([first, first]);
  step([second, second]);
  while (done.some((d, i) => d < seqs[i].length)) step([1, 1]);
  return rows;
}
