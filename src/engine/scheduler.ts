// Continuous batching: which sequences run in the next forward pass, and how many tokens each.
//
// Each step:
//   1. running sequences, oldest first: a decode (1 token) each, or the next prefill chunk of a
//      partially prefilled one, while the prefill budget (maxPrefillTokens) lasts;
//   2. then waiting sequences are admitted in FIFO order while fewer than maxBatchSize hold KV
//      and the prefill budget and free blocks allow (a long prompt is spread over steps).
// Decodes do not draw on the prefill budget. The budget is shared so that one long prompt cannot
// hold back the others: every sequence that needs prefill this step (partial prefills and the
// waiting ones there is room for) is promised min(its need, maxPrefillTokens / maxBatchSize)
// tokens, and a chunk leaves what is promised to those after it. A new arrival therefore gets a
// step within one prefill chunk, its whole prompt when it is short; an older prefill still takes
// the rest of the budget, and a lone prompt all of it.
// A step that prefills beside a sequence that samples in it (a decode, or a prompt that fits in
// its share) prefills at most maxPrefillTokens / SHARED_STEP_PREFILL_DIVISOR tokens (or the
// shares promised, if more): each token of a running sequence waits for one step,
// and a full chunk deep into a long prompt takes seconds (attention grows with the context), so a
// new arrival would wait a whole chunk for its first token and the decodes beside it would crawl
// at one token per chunk. The long prefill pays a few more, smaller steps only while others run.
// With --scheduling-policy slai, a step with decodes takes its budget from slo-policy.ts instead
// (sized from measured step times to keep the step under --tbt-deadline-ms).
// When a running sequence needs a block and none is free, the newest running sequence is
// preempted: its KV is written to the swap space (--swap-space-gb) when there is room there, its
// blocks go back to the pool, and it waits at the head of the queue — to be read back into fresh
// blocks when room returns, or, without swap room (or when the disk fails), to be recomputed
// (prompt + tokens generated so far). The memory budget guarantees the pool holds at least one
// max-length sequence, so the oldest running sequence can always finish: no request is dropped
// for lack of KV.
//
// With prefix caching, a sequence starts from the longest whole-block prefix of its tokens found
// in the cache (at least its last token is always run, for its logits: a prompt found whole gets a
// copy of its last block to write into). A sequence whose next block another running sequence is
// computing right now (the n > 1 siblings of one request, the same prompt sent twice) waits a step
// for it instead of computing it again. After each forward pass the full blocks a sequence
// completed go into the cache. A recompute after preemption finds its own blocks there unless
// they were evicted meanwhile.
//
// Hybrid models (recurrent layers beside attention) keep each running sequence's recurrent state in
// a slot of its own (StateSlots), taken at admission and given back when it finishes or is
// preempted (always recomputed: the state is not swapped). With prefix caching, a sequence resumes
// only where a state snapshot exists: the hit is cut back to the latest cached block with one, the
// snapshot is copied into its slot, and the rest is computed. Snapshots are taken after the step
// that ends a prompt's prefill at a checkpoint — every `checkpointBlocks` blocks, and the prompt's
// last whole block (what a next turn, which extends the prompt, resumes from) — so prefill chunks
// are cut at those positions.
//
// Speculative decoding: with a drafter on (draftRoom > 0), a decoding sequence also gets KV blocks
// for `room` more positions, when they are free (drafts never preempt anyone). The step loop fills
// the chunk's draft and lengthens the chunk by it, so the draft is verified in the same forward
// pass as everything else in the step; the draft does not draw on the prefill budget.
//
// After the forward pass, postprocess hands each sampling sequence its new tokens and ends the
// sequences they finish. A verify chunk keeps the KV of the draft tokens that were taken (all
// but the last new token, which was sampled); the slots of rejected ones are rolled back (blocks
// past the kept KV go back to the pool, and the next chunk overwrites the rest). Tokens a plain
// chunk's sequence took beyond the first are not in the KV cache yet: the next step runs them
// through the model as one chunk (drawing on the prefill budget, like a recompute).
import type { BlockManager } from './block-manager.js';
import type { KvSwapSpace } from './kv-swap.js';
import type { EngineFinishReason } from './types.js';
import { cacheKeyTokens, numCompletionTokens, numUncached, type Sequence } from './sequence.js';
import type { SlaiPolicy } from './slo-policy.js';
import type { StateSlots } from './state-slots.js';

/** A step that prefills beside a sampling sequence prefills at most maxPrefillTokens / this (2048 of the default 8192). */
export const SHARED_STEP_PREFILL_DIVISOR = 4;

export interface SchedulerConfig {
  /** Most sequences holding KV (and so in one forward pass) at once. */
  maxBatchSize: number;
  /** Most prompt tokens prefilled per step, over all sequences. */
  maxPrefillTokens: number;
  /** --scheduling-policy slai: sizes the prefill budget of steps with decodes; absent = fifo. */
  slai?: SlaiPolicy | null;
  /** Hybrid models: the recurrent-state slots, and the blocks between snapshot checkpoints (--ssm-checkpoint-interval). */
  recurrent?: { slots: StateSlots; checkpointBlocks: number } | null;
}

/** One sequence's share of a step: tokens [start, start + length) go through the model. */
export interface ScheduledChunk {
  seq: Sequence;
  start: number;
  length: number;
  /** The chunk reaches the end of the sequence, so its last row's logits pick the next token. */
  sample: boolean;
  /** KV positions reserved past the chunk for a draft (a decode with a drafter on); 0 = none. */
  room: number;
  /**
   * Drafted tokens to follow the sequence's tokens, verified in this step (at most `room`; set by
   * the step loop, which adds them to `length`). Each of their rows yields logits too.
   */
  draft: number[];
}

export interface ScheduledBatch {
  chunks: ScheduledChunk[];
  numTokens: number;
}

/** A sequence that reached the end this step, with its reason. */
export interface Finished {
  seq: Sequence;
  reason: EngineFinishReason;
  /** How many of the step's tokens it took: up to the one that ended it (those after it are dropped). */
  taken: number;
}

export class Scheduler {
  readonly waiting: Sequence[] = [];
  readonly running: Sequence[] = [];
  /** Total preemptions so far (for stats and tests). */
  numPreemptions = 0;
  /** Prompt tokens looked up in the prefix cache and found there, over first admissions (for stats). */
  prefixQueriedTokens = 0;
  prefixHitTokens = 0;
  /** Preemptions written to swap, and sequences read back from it (for stats and tests). */
  numSwapOuts = 0;
  numSwapIns = 0;
  /** Most draft tokens per decode step (--num-drafts; 0 = no speculative decoding). */
  draftRoom = 0;

  constructor(
    private readonly config: SchedulerConfig,
    private readonly blocks: BlockManager,
    /** Disk swap for preempted sequences; null = always recompute. */
    private readonly swap: Pick<KvSwapSpace, 'canSwapOut' | 'swapOut' | 'swapIn' | 'discard'> | null = null,
  ) {}

  add(seq: Sequence): void {
    seq.status = 'waiting';
    this.waiting.push(seq);
  }

  hasWork(): boolean {
    return this.waiting.length > 0 || this.running.length > 0;
  }

  schedule(): ScheduledBatch {
    const chunks: ScheduledChunk[] = [];
    let preempted = false;
    // The share promised to each prefill of this step, and what is promised to those not yet planned.
    const share = Math.max(1, Math.floor(this.config.maxPrefillTokens / this.config.maxBatchSize));
    let promised = share; // (slai may lower it to fit its budget)
    const promise = (seq: Sequence): number => Math.min(numUncached(seq), promised);
    let promisedLater = 0;
    for (const seq of this.running) if (numUncached(seq) > 1) promisedLater += promise(seq);
    const slots = this.config.maxBatchSize - this.running.length;
    for (let i = 0; i < Math.min(slots, this.waiting.length); i++) promisedLater += promise(this.waiting[i]);
    // A sequence that samples this step (a decode, or a prompt that ends within its share) waits
    // on the step's length: then a smaller budget (never below what is promised); else all of it.
    const samples = (seq: Sequence): boolean => numUncached(seq) <= share;
    const shared =
      this.running.length + Math.min(slots, this.waiting.length) > 1 &&
      (this.running.some(samples) || this.waiting.slice(0, slots).some(samples));
    const sharedBudget = Math.max(Math.floor(this.config.maxPrefillTokens / SHARED_STEP_PREFILL_DIVISOR), promisedLater);
    let budget = shared ? Math.min(this.config.maxPrefillTokens, sharedBudget) : this.config.maxPrefillTokens;
    const slai = this.config.slai;
    if (slai) {
      const admissible = this.waiting.slice(0, slots);
      budget = slai.prefillBudget(this.running, admissible, budget, this.draftRoom);
      // Shares beyond the deadline's budget shrink alike (to 0 when it cannot cover one token
      // each), so the oldest prefill still gets what is left over: none is starved by newer ones.
      if (promisedLater > budget) {
        const prefills = [...this.running.filter((seq) => numUncached(seq) > 1), ...admissible];
        promised = Math.floor(budget / prefills.length);
        promisedLater = prefills.reduce((sum, seq) => sum + promise(seq), 0);
      }
    }

    for (let i = 0; i < this.running.length; i++) {
      const seq = this.running[i];
      const uncached = numUncached(seq);
      if (uncached > 1) promisedLater -= promise(seq);
      const length = uncached === 1 ? 1 : this.cutAtCheckpoint(seq, Math.max(0, Math.min(uncached, budget - promisedLater)));
      if (length === 0) continue; // a prefill waiting for budget keeps its blocks
      const target = seq.numCached + length;
      // Make room by preempting from the newest end; never a sequence already in this batch.
      while (!this.canWrite(seq, target)) {
        const victim = this.running[this.running.length - 1];
        this.preempt(victim);
        preempted = true;
        if (victim === seq) break;
      }
      if (seq.status !== 'running') break; // it was the newest and preempted itself
      // A decode's draft gets its KV positions only when blocks are free for them.
      let room = uncached === 1 ? this.roomFor(seq) : 0;
      if (room > 0 && !this.canWrite(seq, target + room)) room = 0;
      this.prepareWrite(seq, target + room);
      if (uncached > 1) budget -= length;
      chunks.push({ seq, start: seq.numCached, length, sample: target === seq.tokens.length, room, draft: [] });
    }

    // Admitting right after a preemption would only take the blocks back from the one preempted.
    while (!preempted && this.waiting.length > 0 && this.running.length < this.config.maxBatchSize && budget > 0) {
      const seq = this.waiting[0];
      promisedLater -= promise(seq);
      if (seq.swapped) {
        // Read it back only when its next chunk fits too: blocks holding swapped-in KV are never given up.
        const next = Math.min(numUncached(seq), budget - promisedLater);
        if (next <= 0 || !this.blocks.canGrow(seq.blockTable, seq.numCached + next)) break;
        this.restore(seq);
      }
      if (this.config.recurrent && seq.stateSlot === null) {
        seq.stateSlot = this.config.recurrent.slots.acquire();
        if (seq.stateSlot === null) break; // (never: a slot per sequence the batch can hold)
      }
      if (this.blocks.prefixCaching && !this.takeCachedPrefix(seq)) {
        this.releaseState(seq);
        break;
      }
      const length = this.cutAtCheckpoint(seq, Math.min(numUncached(seq), budget - promisedLater));
      const target = seq.numCached + length;
      if (length <= 0 || !this.canWrite(seq, target)) {
        this.dropCachedPrefix(seq);
        this.releaseState(seq);
        break;
      }
      this.waiting.shift();
      seq.status = 'running';
      this.running.push(seq);
      this.noteFirstAdmission(seq);
      this.prepareWrite(seq, target);
      budget -= length;
      chunks.push({ seq, start: seq.numCached, length, sample: target === seq.tokens.length, room: 0, draft: [] });
    }

    let numTokens = 0;
    for (const c of chunks) numTokens += c.length;
    return { chunks, numTokens };
  }

  /**
   * Records a finished forward pass: chunks' tokens are now cached, and each sampling chunk's
   * sequence takes its new tokens (`tokens[i]`, at least one, for the i-th sampling chunk; the
   * step loop has already moved the sequence's logits processors past them). Each token in order
   * is appended, and a stop token or max tokens ends the sequence — the tokens after that one are
   * dropped. A verify chunk keeps the KV of the draft tokens taken before the last new token.
   * Returns the sequences that ended; they are out of the queues and their blocks are back in the pool.
   */
  postprocess(batch: ScheduledBatch, tokens: readonly (readonly number[])[]): Finished[] {
    const finished: Finished[] = [];
    let k = 0;
    for (const chunk of batch.chunks) {
      const seq = chunk.seq;
      let cached = chunk.start + chunk.length;
      let ended: Finished | null = null;
      if (chunk.sample) {
        const taken = tokens[k++];
        let n = taken.length;
        for (let i = 0; i < taken.length; i++) {
          const token = taken[i];
          seq.tokens.push(token);
          let reason: EngineFinishReason | null = null;
          if (seq.stopTokenIds.has(token)) reason = 'stop';
          else if (numCompletionTokens(seq) >= seq.maxTokens) reason = 'length';
          if (reason) {
            ended = { seq, reason, taken: i + 1 };
            n = i + 1;
            break;
          }
        }
        // Draft positions past the taken ones hold rejected tokens' KV: not cached.
        cached -= chunk.draft.length - Math.min(chunk.draft.length, n - 1);
      }
      seq.numCached = cached;
      const bs = this.blocks.blockSize;
      const full = Math.floor(cached / bs);
      if (this.blocks.prefixCaching && full > seq.numRegistered) {
        this.blocks.register(cacheKeyTokens(seq), seq.blockTable, seq.numRegistered, full);
        seq.numRegistered = full;
      }
      if (!chunk.sample && this.isCheckpoint(seq, cached) && cached / bs <= seq.numRegistered) {
        this.config.recurrent!.slots.snapshot(seq.blockTable[cached / bs - 1], seq.stateSlot!);
      }
      // Blocks reserved for a draft beyond what was kept go back to the pool.
      const needed = Math.ceil(cached / bs);
      if (seq.blockTable.length > needed) this.blocks.release(seq.blockTable.splice(needed));
      if (ended) {
        this.finish(seq, ended.reason);
        finished.push(ended);
      }
    }
    return finished;
  }

  /** Draft tokens a decoding sequence may verify this step: it takes at most room + 1 tokens. */
  private roomFor(seq: Sequence): number {
    return Math.max(0, Math.min(this.draftRoom, seq.maxTokens - numCompletionTokens(seq) - 1));
  }

  /** Ends a sequence wherever it is (cancel, timeout, error): out of its queue, blocks freed. */
  finish(seq: Sequence, reason: EngineFinishReason): void {
    if (seq.status === 'finished') return;
    const queue = seq.status === 'running' ? this.running : this.waiting;
    const at = queue.indexOf(seq);
    if (at >= 0) queue.splice(at, 1);
    this.blocks.release(seq.blockTable);
    this.releaseState(seq);
    if (seq.swapped) this.swap!.discard(seq.swapped);
    seq.swapped = null;
    seq.status = 'finished';
    seq.finishReason = reason;
  }

  /**
   * Whether `seq` can be given what it needs to write tokens up to `target`: blocks to grow into,
   * and a private copy of its partial last block when that one is shared (copy-on-write).
   */
  private canWrite(seq: Sequence, target: number): boolean {
    const cow = this.blocks.isShared(seq.blockTable, Math.floor(seq.numCached / this.blocks.blockSize)) ? 1 : 0;
    return this.blocks.canGrow(seq.blockTable, target, cow);
  }

  private prepareWrite(seq: Sequence, target: number): void {
    const index = Math.floor(seq.numCached / this.blocks.blockSize);
    if (index < seq.blockTable.length && this.blocks.isShared(seq.blockTable, index)) {
      this.blocks.makeWritable(seq.blockTable, index);
      seq.numRegistered = Math.min(seq.numRegistered, index);
    }
    this.blocks.grow(seq.blockTable, target);
  }

  /**
   * Before a sequence holding no blocks is admitted: takes the longest cached prefix of its tokens
   * (retaining those blocks). Returns false, taking nothing, when a running sequence is computing
   * the block after that prefix right now: it waits a step for it.
   */
  private takeCachedPrefix(seq: Sequence): boolean {
    if (seq.blockTable.length > 0) return true;
    const bs = this.blocks.blockSize;
    let hit = this.blocks.match(cacheKeyTokens(seq));
    if (this.beingComputed(seq, hit)) return false;
    if (this.config.recurrent) hit = this.resumeFromSnapshot(seq, hit);
    for (const b of hit) this.blocks.retain(b);
    seq.blockTable.push(...hit);
    seq.numRegistered = hit.length;
    // At least the last token runs, for its logits.
    seq.numCached = Math.min(hit.length * bs, seq.tokens.length - 1);
    // A prompt found whole writes its last token into a copy of the last block; without room for
    // the copy it recomputes that block instead.
    if (seq.numCached < hit.length * bs && !this.canWrite(seq, seq.numCached + 1)) {
      this.blocks.release(seq.blockTable.splice(hit.length - 1, 1));
      seq.numRegistered = hit.length - 1;
      seq.numCached = (hit.length - 1) * bs;
    }
    return true;
  }

  /** Undoes takeCachedPrefix for a sequence that stays waiting. */
  private dropCachedPrefix(seq: Sequence): void {
    if (seq.status !== 'waiting' || seq.blockTable.length === 0) return;
    this.blocks.release(seq.blockTable);
    seq.numRegistered = 0;
    seq.numCached = 0;
  }

  /**
   * Hybrid models: the part of a prefix-cache hit a sequence can resume from — up to the latest
   * block with a state snapshot (copied into the sequence's slot), before its last token (which
   * runs for its logits, after the state). Nothing when no block of the hit has one.
   */
  private resumeFromSnapshot(seq: Sequence, hit: number[]): number[] {
    const slots = this.config.recurrent!.slots;
    const bs = this.blocks.blockSize;
    for (let k = Math.min(hit.length, Math.floor((seq.tokens.length - 1) / bs)); k > 0; k--) {
      if (slots.restore(hit[k - 1], seq.stateSlot!)) return hit.slice(0, k);
    }
    return [];
  }

  /** Hybrid models with prefix caching: whether the state after `position` prompt tokens is snapshotted (see the top of this file). */
  private isCheckpoint(seq: Sequence, position: number): boolean {
    const recurrent = this.config.recurrent;
    if (!recurrent || !this.blocks.prefixCaching || recurrent.slots.numSnapshotSlots === 0) return false;
    const bs = this.blocks.blockSize;
    if (position <= 0 || position % bs !== 0 || position >= seq.numPromptTokens) return false;
    return position % (recurrent.checkpointBlocks * bs) === 0 || position === Math.floor((seq.numPromptTokens - 1) / bs) * bs;
  }

  /** A prefill chunk of `length` from seq.numCached, ending at the first snapshot checkpoint inside it. */
  private cutAtCheckpoint(seq: Sequence, length: number): number {
    const recurrent = this.config.recurrent;
    if (!recurrent || !this.blocks.prefixCaching || length <= 1) return length;
    const bs = this.blocks.blockSize;
    const end = Math.min(seq.numCached + length, seq.numPromptTokens);
    for (let p = (Math.floor(seq.numCached / bs) + 1) * bs; p < end; p += bs) {
      if (this.isCheckpoint(seq, p)) return p - seq.numCached;
    }
    return length;
  }

  private releaseState(seq: Sequence): void {
    if (seq.stateSlot === null) return;
    this.config.recurrent!.slots.release(seq.stateSlot);
    seq.stateSlot = null;
  }

  /** Whether a running sequence sharing `hit` is computing the whole block that follows it in `seq`. */
  private beingComputed(seq: Sequence, hit: readonly number[]): boolean {
    const bs = this.blocks.blockSize;
    const start = hit.length * bs;
    const end = start + bs;
    if (end > seq.tokens.length) return false;
    const keys = cacheKeyTokens(seq);
    next: for (const other of this.running) {
      if (other.numCached >= end || other.tokens.length < end) continue;
      for (let i = 0; i < hit.length; i++) if (other.blockTable[i] !== hit[i]) continue next;
      const otherKeys = cacheKeyTokens(other);
      for (let t = start; t < end; t++) if (otherKeys[t] !== keys[t]) continue next;
      return true;
    }
    return false;
  }

  /** Counts the prompt's prefix-cache hit the first time a sequence is admitted (usage and stats). */
  private noteFirstAdmission(seq: Sequence): void {
    if (seq.cachedPromptTokens !== null) return;
    seq.cachedPromptTokens = Math.min(seq.numCached, seq.numPromptTokens);
    if (!this.blocks.prefixCaching) return;
    this.prefixQueriedTokens += seq.numPromptTokens;
    this.prefixHitTokens += seq.cachedPromptTokens;
  }

  /** A swapped-out sequence's KV back into fresh blocks; on a read error it is recomputed instead. */
  private restore(seq: Sequence): void {
    const handle = seq.swapped!;
    seq.swapped = null;
    this.blocks.grow(seq.blockTable, seq.numCached);
    try {
      this.swap!.swapIn(handle, seq.blockTable);
      this.numSwapIns++;
    } catch {
      this.blocks.release(seq.blockTable);
      seq.numCached = 0;
    }
  }

  private preempt(seq: Sequence): void {
    const at = this.running.indexOf(seq);
    this.running.splice(at, 1);
    // Its blocks cover exactly the tokens it has cached (blocks are grown in the step that fills them).
    const used = seq.blockTable.slice(0, Math.ceil(seq.numCached / this.blocks.blockSize));
    if (this.swap && used.length > 0 && this.swap.canSwapOut(used.length)) {
      try {
        seq.swapped = this.swap.swapOut(used);
        this.numSwapOuts++;
      } catch {
        seq.swapped = null; // the disk failed: recompute
      }
    }
    this.blocks.release(seq.blockTable);
    this.releaseState(seq); // (never swapped: its KV is recomputed, and its state with it)
    if (!seq.swapped) seq.numCached = 0;
    seq.numRegistered = 0;
    seq.status = 'waiting';
    seq.numPreemptions++;
    this.numPreemptions++;
    // Victims are taken newest first, so unshifting keeps older ones ahead.
    this.waiting.unshift(seq);
  }
}
