// Engines for engine-level tests: options with test-sized defaults (svc-tiny-chat unless another
// model is given), greedy jobs, a job's collected output, and every started engine shut down after
// the test file.
import { after } from 'node:test';
import { startEngine, type EngineOptions, type RunningEngine } from '../../src/engine/engine-client.js';
import type { GenerationHandle, GenerationRequest, SamplingParams, TokenLogprob } from '../../src/engine/types.js';
import { TINY_CHAT } from './paths.js';

export const GREEDY: SamplingParams = { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null };

/** Options for a small engine: a 512-token context, 64-token prefill chunks, bf16 KV, no caching. */
export function engineOptions(over: Partial<EngineOptions> = {}): EngineOptions {
  return {
    modelPath: TINY_CHAT,
    fastLoad: true,
    kvCacheDtype: 'bf16',
    maxSeqLen: 512,
    maxBatchSize: 8,
    maxPrefillTokens: 64,
    maxNumSeqs: 16,
    gpuMemoryUtilization: 0.9,
    oomGuardMb: 256,
    blockSize: 16,
    enablePrefixCaching: false,
    swapSpaceBytes: 0,
    ...over,
  };
}

/** A greedy job of `maxTokens` that stops at `stopTokenIds`. */
export function greedyJob(
  promptTokens: number[],
  maxTokens: number,
  stopTokenIds: number[],
  extra: Partial<GenerationRequest> = {},
): GenerationRequest {
  return { promptTokens, maxTokens, sampling: GREEDY, stopTokenIds, timeoutMs: 0, logprobs: 0, ...extra };
}

/** Everything a job produced: its tokens, their log-probabilities (when asked), how it ended. */
export async function collectJob(handle: GenerationHandle): Promise<{ ids: number[]; logprobs: TokenLogprob[]; reason: string }> {
  const ids: number[] = [];
  const logprobs: TokenLogprob[] = [];
  let reason = '';
  for await (const ev of handle.events) {
    if (ev.type === 'tokens') {
      ids.push(...ev.ids);
      logprobs.push(...(ev.logprobs ?? []));
    } else reason = ev.reason;
  }
  return { ids, logprobs, reason };
}

/** The greedy token of one logits row and its log-probability (what an engine job with logprobs reports for it). */
export function greedyPick(logits: Float32Array, vocab: number): { id: number; logprob: number } {
  let best = 0;
  for (let v = 1; v < vocab; v++) if (logits[v] > logits[best]) best = v;
  let sum = 0;
  for (let v = 0; v < vocab; v++) sum += Math.exp(logits[v] - logits[best]);
  return { id: best, logprob: -Math.log(sum) };
}

const started: RunningEngine[] = [];
after(async () => {
  for (const e of started.splice(0)) await e.shutdown();
});

/** Starts an engine that is shut down after the test file. */
export async function startTestEngine(options: EngineOptions): Promise<RunningEngine> {
  const engine = await startEngine(options);
  started.push(engine);
  return engine;
}
