// What the in-process engine benchmarks (tbt.ts, prefill-fairness.ts) share: deterministic prompts,
// greedy jobs for the engine worker (no HTTP), the time of a job's first token and percentiles.
import type { GenerationHandle, GenerationRequest } from '../src/engine/types.js';

export const GREEDY = { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null };

/** Deterministic token ids, different per seed: no two prompts share a prefix. */
export function tokens(n: number, seed: number): number[] {
  let s = (seed * 2654435761) >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return 1000 + (s % 100_000);
  });
}

/** A greedy job of `maxTokens` tokens, no stop tokens (EOS ignored). */
export function request(promptTokens: number[], maxTokens: number): GenerationRequest {
  return { promptTokens, maxTokens, sampling: GREEDY, stopTokenIds: [], timeoutMs: 0, logprobs: 0 };
}

/** Resolves with the time of the job's first token event; the rest of its events are drained. */
export async function firstToken(handle: GenerationHandle): Promise<number> {
  let at = NaN;
  for await (const ev of handle.events) if (ev.type === 'tokens' && Number.isNaN(at)) at = performance.now();
  return at;
}

/** Nearest-rank percentile; NaN for no values. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
