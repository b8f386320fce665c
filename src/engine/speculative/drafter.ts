// The drafter seam of speculative decoding. Before a step, a drafter proposes tokens to follow
// each decoding sequence that has room for them; the step runs the sequence's next token and the
// draft through the model as one chunk (the verify), and the step loop keeps the longest prefix
// of the draft that sampling agrees with, plus one token of its own. Each verify step takes
// 1..K = room + 1 tokens for the cost of one forward pass over K rows.
import type { ForwardBatch } from '../../model/architectures/index.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { Sequence } from '../sequence.js';

/** Drafting modes; when several are asked for, the first in this order wins (the spec's precedence). */
export const DRAFT_MODES = ['ngram', 'self', 'mtp'] as const;
export type DraftMode = (typeof DRAFT_MODES)[number];

/** A decoding sequence the drafter may draft for this step. */
export interface DraftRequest {
  readonly seq: Sequence;
  /**
   * Most tokens to propose. The scheduler has given the sequence KV blocks for positions up to
   * seq.numCached + room: a drafter that runs forward passes of its own may write KV at positions
   * [seq.numCached, seq.numCached + room) — the verify step rewrites every one of them.
   */
  readonly room: number;
}

/** What one finished step looked like, for drafters that follow the model's hidden states (MTP). */
export interface StepOutcome {
  /** The step's chunks; their sequences already hold the tokens taken and the new numCached. */
  readonly batch: ScheduledBatch;
  /** The forward batch the model ran (rows in chunk order). */
  readonly forward: ForwardBatch;
  /** The model's final hidden state (before the final norm) of every row of `forward`, row-major. */
  readonly hidden: Float32Array;
}

export interface Drafter {
  readonly mode: DraftMode;
  /** Proposals: result[i] (at most requests[i].room tokens, possibly none) follows requests[i].seq.tokens. */
  propose(requests: readonly DraftRequest[]): number[][];
  /** After every step that ran the model, before the next propose. */
  observe?(step: StepOutcome): void;
  /** The sequence ended or lost its KV (finished, preempted): drop what is kept for it. */
  forget?(seqId: number): void;
}
