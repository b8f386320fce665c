// --scheduling-policy slai (SLO-aware): each step's prefill budget is sized so that the step —
// and so the time between two tokens of every running decode — stays under --tbt-deadline-ms.
//
// When the step has running decodes (sequences with one token to run, which sample in it), the
// budget is the largest number of prefill tokens whose predicted step time (step-time-model.ts,
// fitted online from measured steps), times the model's margin for noise (the 90th percentile of
// measured / predicted), stays within the deadline, up to --max-prefill-tokens. The
// prediction is pessimistic about attention: all those tokens are costed as one chunk starting
// at the deepest context among the prefills that could run — and no bigger than the model has
// seen steps of (StepTimeModel.covers: twice the largest), so the first prefills beside decodes
// grow step by step while the model learns what they cost. A step without running decodes keeps
// the whole budget: nobody waits on its length.
//
// Floor: a step with decodes still prefills at least SLAI_FLOOR_TOKENS (one KV block) whenever
// something needs prefill, so prompts always progress. When even the floor would break the
// deadline (the decodes alone come close to it), the prefill is deferred — budget 0 — but for at
// most SLAI_MAX_DEFERRED_STEPS steps in a row; the step after that takes the floor regardless.
// Until the model has seen enough steps to be trusted, the budget is fifo's.
import { numUncached, type Sequence } from './sequence.js';
import { addChunk, chunkAttention, type StepShape, type StepTimePredictor } from './step-time-model.js';

export type SchedulingPolicy = 'fifo' | 'slai';

/** Prefill tokens a step with decodes gets at least (one KV block), unless deferred. */
export const SLAI_FLOOR_TOKENS = 16;
/** Most steps in a row whose prefill is deferred because even the floor would miss the deadline. */
export const SLAI_MAX_DEFERRED_STEPS = 3;

export interface SlaiOptions {
  /** --tbt-deadline-ms. */
  deadlineMs: number;
  /** --max-prefill-tokens: the budget never exceeds it. */
  maxPrefillTokens: number;
  floorTokens?: number;
  maxDeferredSteps?: number;
}

export class SlaiPolicy {
  readonly deadlineMs: number;
  private readonly maxPrefillTokens: number;
  private readonly floorTokens: number;
  private readonly maxDeferredSteps: number;
  /** Steps deferred in a row so far. */
  private deferredInARow = 0;
  /** Steps whose prefill was deferred, and steps whose budget the deadline cut below the maximum (for stats and tests). */
  numDeferred = 0;
  numLimited = 0;

  constructor(
    private readonly model: StepTimePredictor,
    options: SlaiOptions,
  ) {
    this.deadlineMs = options.deadlineMs;
    this.maxPrefillTokens = options.maxPrefillTokens;
    this.floorTokens = Math.min(options.floorTokens ?? SLAI_FLOOR_TOKENS, options.maxPrefillTokens);
    this.maxDeferredSteps = options.maxDeferredSteps ?? SLAI_MAX_DEFERRED_STEPS;
  }

  /**
   * The next step's prefill budget. `running`: the running sequences; `admissible`: the waiting
   * ones there is room to admit; `fifoBudget`: fifo's budget, used until the model is ready;
   * `draftRoom`: draft tokens a decode may verify (speculative decoding), counted as if all come.
   */
  prefillBudget(running: readonly Sequence[], admissible: readonly Sequence[], fifoBudget: number, draftRoom = 0): number {
    const decodes: StepShape = { tokens: 0, samples: 0, attention: 0 };
    let need = 0;
    let deepest = 0;
    for (const seq of running) {
      if (numUncached(seq) === 1) {
        addChunk(decodes, seq.numCached, 1 + draftRoom, 1 + draftRoom);
      } else {
        need += numUncached(seq);
        deepest = Math.max(deepest, seq.numCached);
      }
    }
    for (const seq of admissible) {
      need += numUncached(seq);
      deepest = Math.max(deepest, seq.numCached);
    }
    if (decodes.samples === 0 || need === 0) {
      this.deferredInARow = 0;
      return this.maxPrefillTokens;
    }
    if (!this.model.ready) return fifoBudget;

    const fits = (n: number) => {
      const shape = { tokens: decodes.tokens + n, samples: decodes.samples, attention: decodes.attention + chunkAttention(deepest, n) };
      return this.model.predict(shape) * this.model.margin <= this.deadlineMs && this.model.covers(shape);
    };
    // Both tests are monotone in n (costs are non-negative): the largest n that fits, by bisection.
    let fit = 0;
    if (fits(this.maxPrefillTokens)) fit = this.maxPrefillTokens;
    else {
      let hi = this.maxPrefillTokens;
      while (hi - fit > 1) {
        const mid = (fit + hi) >> 1;
        if (fits(mid)) fit = mid;
        else hi = mid;
      }
      this.numLimited++;
    }
    // (A prompt tail shorter than the floor that fits runs at once.)
    if (fit >= Math.min(this.floorTokens, need)) {
      this.deferredInARow = 0;
      return fit;
    }
    if (this.deferredInARow < this.maxDeferredSteps) {
      this.deferredInARow++;
      this.numDeferred++;
      return 0;
    }
    this.deferredInARow = 0;
    return this.floorTokens;
  }
}
