// Pure helpers of the KV-cache quality report (bench/kv-quality.ts): how a text longer than the
// model's context is cut into perplexity windows, how a long generation is continued across
// windows, and the two reductions of a logits row it needs.

/** One perplexity window: tokens [start, end) are run; targets [firstTarget, end) are scored. */
export interface PplWindow {
  start: number;
  end: number;
  /** First token position scored in this window (predicted from the row before it). */
  firstTarget: number;
}

/**
 * Strided windows over `length` tokens (HF's sliding-window perplexity): each window runs at most
 * `window` tokens and starts `stride` after the previous one; it scores only the targets no earlier
 * window scored, so every position from 1 to length − 1 is scored exactly once, and after the first
 * window each scored token sees at least window − stride tokens of context.
 */
export function perplexityWindows(length: number, window: number, stride: number): PplWindow[] {
  if (!Number.isInteger(window) || window < 2) throw new RangeError(`window must be an integer ≥ 2, got ${window}`);
  // A stride of the whole window would leave each window's first token unscored (no row predicts it).
  if (!Number.isInteger(stride) || stride < 1 || stride >= window) throw new RangeError(`stride must be in [1, window − 1], got ${stride}`);
  const out: PplWindow[] = [];
  let scoredTo = 1;
  for (let start = 0; scoredTo < length; start += stride) {
    const end = Math.min(start + window, length);
    if (end > scoredTo) out.push({ start, end, firstTarget: Math.max(scoredTo, start + 1) });
    scoredTo = Math.max(scoredTo, end);
  }
  return out;
}

/**
 * The prompt of a generation window after the first: BOS (when the model has one) and the last
 * `keep` tokens of everything so far, so a generation longer than the context continues the text.
 */
export function continuationPrompt(sofar: readonly number[], keep: number, bos: number | null): number[] {
  const tail = sofar.slice(Math.max(0, sofar.length - keep));
  return bos === null ? tail : [bos, ...tail];
}

/** Index of the largest of `count` values from x[offset] (the first one on a tie). */
export function argmax(x: Float32Array, offset: number, count: number): number {
  let best = 0;
  let max = -Infinity;
  for (let i = 0; i < count; i++) {
    const v = x[offset + i];
    if (v > max) {
      max = v;
      best = i;
    }
  }
  return best;
}

/** −log softmax(x[offset .. offset+count))[target], in float64. */
export function negLogProb(x: Float32Array, offset: number, count: number, target: number): number {
  let max = -Infinity;
  for (let i = 0; i < count; i++) if (x[offset + i] > max) max = x[offset + i];
  let sum = 0;
  for (let i = 0; i < count; i++) sum += Math.exp(x[offset + i] - max);
  return Math.log(sum) - (x[offset + target] - max);
}
