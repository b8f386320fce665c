// The measurement method, shared by both engines so their numbers mean the same thing.
//
// Every figure comes from whole-request latencies (start → last token), never from counting
// streamed chunks: svc's stream holds back tokens whose text is not yet a full character (or
// has none), so chunk times are not token times. Instead each quantity is a difference of two
// runs that share everything but the part being measured:
//   TTFT         = latency of a max_tokens=1 request with a P-token prompt (prefill + first token)
//   prefill      = P / TTFT
//   decode       = (N − 1) / (latency(P prompt, N tokens) − TTFT)       — decode at context ≈ P
//   aggregate@k  = k·(N − 1) / (latency(k short prompts, N) − latency(k short prompts, 1))
// where a k-request latency is until the last of the k finishes. Medians over `reps` runs.
// Prompts are random token ids from a seeded stream, different for every request (no prefix
// cache hits) and identical between engines.
import type { LoadStats } from './server-process.js';
import { hashString, randomInts } from './weights.js';

export interface RequestTiming {
  /** ms from the common start until the request's last token arrived. */
  endMs: number;
  /** Tokens generated, as the engine reports them. */
  tokens: number;
  /**
   * ms from the common start until the first streamed frame carrying output (HTTP engines): the
   * first token, or the one after it when the first is part of a character and held back.
   */
  firstMs?: number;
  /** Prompt tokens the server took from a cache (svc's usage.prompt_tokens_details), when it says. */
  cachedTokens?: number;
  /** The server's own timings, when it reports them (llama-server's final frame). */
  server?: ServerTimings;
}

/** llama-server's `timings`: prompt and generation as the server measured them. */
export interface ServerTimings {
  promptTokens: number;
  promptMs: number;
  predictedTokens: number;
  predictedMs: number;
}

export interface BenchEngine {
  readonly name: string;
  /** Spawn → serving and peak RSS while loading; absent for an in-process engine (node-llama-cpp). */
  readonly load?: LoadStats;
  /**
   * Runs all prompts concurrently, greedy, each to exactly `maxTokens` new tokens (EOS ignored).
   * Timings are relative to one common start.
   */
  generate(prompts: number[][], maxTokens: number): Promise<RequestTiming[]>;
  close(): Promise<void>;
}

export interface BenchSettings {
  /** P: prompt length for TTFT, prefill and single-stream decode. */
  promptTokens: number;
  /** N: tokens generated per request in the decode measurements. */
  decodeTokens: number;
  /** Prompt length of each concurrent request in the aggregate measurements. */
  shortPromptTokens: number;
  concurrency: number[];
  reps: number;
}

export interface EngineResult {
  prefillTokS: number;
  decodeTokS: number;
  ttftMs: number;
  /** Aggregate decode tok/s by concurrency ("1", "4", "8"). */
  aggregateTokS: Record<string, number>;
  /** Median latencies (ms) behind each figure, for auditing. */
  latenciesMs: Record<string, number>;
  /** Spawn → serving, ms (NaN when not measured: in-process engines). */
  loadMs: number;
  /** Peak RSS while loading, bytes (NaN when not measured). */
  peakLoadRssBytes: number;
}

/** First id of Qwen2.5's added tokens: prompts stay within the plain byte-level vocabulary. */
const PLAIN_VOCAB = 151643;

/** Deterministic prompts: the i-th request of a run gets the same ids on every engine. */
export class PromptStream {
  private next = 0;
  constructor(private readonly seed: string) {}
  take(length: number): number[] {
    return randomInts(hashString(`${this.seed}:${this.next++}`), length, PLAIN_VOCAB);
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** A rate from a token count and a positive duration; NaN when noise made the duration ≤ 0. */
function rate(tokens: number, ms: number): number {
  return ms > 0 ? (tokens * 1000) / ms : NaN;
}

async function timed(engine: BenchEngine, prompts: number[][], maxTokens: number): Promise<number> {
  const timings = await engine.generate(prompts, maxTokens);
  for (const t of timings) {
    if (t.tokens !== maxTokens) {
      throw new Error(`${engine.name} produced ${t.tokens} tokens where ${maxTokens} were asked (EOS must be ignored)`);
    }
  }
  return Math.max(...timings.map((t) => t.endMs));
}

export async function measureEngine(engine: BenchEngine, s: BenchSettings, log: (line: string) => void): Promise<EngineResult> {
  const prompts = new PromptStream('svc-bench');
  const N = s.decodeTokens;
  // Warm-up: first-touch of weights, thread pools, allocator, JIT; both request shapes.
  await timed(engine, [prompts.take(s.shortPromptTokens)], 4);
  await timed(engine, [prompts.take(s.promptTokens)], 2);
  // No concurrency levels (bench/moe.ts: single-stream decode only): nothing concurrent to warm.
  if (s.concurrency.length)
    await timed(
      engine,
      Array.from({ length: Math.max(...s.concurrency) }, () => prompts.take(s.shortPromptTokens)),
      2,
    );

  const first: number[] = [];
  const full: number[] = [];
  for (let r = 0; r < s.reps; r++) {
    first.push(await timed(engine, [prompts.take(s.promptTokens)], 1));
    full.push(await timed(engine, [prompts.take(s.promptTokens)], N));
  }
  const ttftMs = median(first);
  const fullMs = median(full);
  log(`    ${engine.name}: TTFT(${s.promptTokens}) ${ttftMs.toFixed(1)} ms, ${N} tokens ${fullMs.toFixed(1)} ms`);
  const latenciesMs: Record<string, number> = { ttft: ttftMs, [`single_${N}`]: fullMs };

  const aggregateTokS: Record<string, number> = {};
  for (const k of s.concurrency) {
    const one: number[] = [];
    const many: number[] = [];
    for (let r = 0; r < s.reps; r++) {
      one.push(
        await timed(
          engine,
          Array.from({ length: k }, () => prompts.take(s.shortPromptTokens)),
          1,
        ),
      );
      many.push(
        await timed(
          engine,
          Array.from({ length: k }, () => prompts.take(s.shortPromptTokens)),
          N,
        ),
      );
    }
    latenciesMs[`x${k}_1`] = median(one);
    latenciesMs[`x${k}_${N}`] = median(many);
    aggregateTokS[String(k)] = rate(k * (N - 1), median(many) - median(one));
    log(
      `    ${engine.name}: @${k} ${latenciesMs[`x${k}_1`].toFixed(1)} ms → ${latenciesMs[`x${k}_${N}`].toFixed(1)} ms, ${aggregateTokS[String(k)].toFixed(1)} tok/s`,
    );
  }

  return {
    prefillTokS: rate(s.promptTokens, ttftMs),
    decodeTokS: rate(N - 1, fullMs - ttftMs),
    ttftMs,
    aggregateTokS,
    latenciesMs,
    loadMs: engine.load?.ms ?? NaN,
    peakLoadRssBytes: engine.load?.peakRssBytes ?? NaN,
  };
}
