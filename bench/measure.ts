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

/** One engine's measurements in progress: its prompt stream and the latencies gathered so far. */
interface Lane {
  engine: BenchEngine;
  prompts: PromptStream;
  first: number[];
  full: number[];
  one: Map<number, number[]>;
  many: Map<number, number[]>;
}

/**
 * Measures several engines rep by rep, alternating them (the first engine of a rep goes last in the
 * next), so a machine whose speed drifts over minutes (shared hosts) skews them alike instead of
 * whichever ran while it was slow. Each engine gets the same prompts in the same order. One
 * engine alone is measured exactly as before.
 */
export async function measureEngines(engines: BenchEngine[], s: BenchSettings, log: (line: string) => void): Promise<EngineResult[]> {
  const N = s.decodeTokens;
  const lanes: Lane[] = engines.map((engine) => ({
    engine,
    prompts: new PromptStream('svc-bench'),
    first: [],
    full: [],
    one: new Map(s.concurrency.map((k) => [k, []])),
    many: new Map(s.concurrency.map((k) => [k, []])),
  }));
  const short = (l: Lane, k: number) => Array.from({ length: k }, () => l.prompts.take(s.shortPromptTokens));
  // The engines of rep r, in alternating order.
  const order = (r: number) => (r % 2 ? [...lanes].reverse() : lanes);
  for (const l of lanes) {
    // Warm-up: first-touch of weights, thread pools, allocator, JIT; both request shapes.
    await timed(l.engine, [l.prompts.take(s.shortPromptTokens)], 4);
    await timed(l.engine, [l.prompts.take(s.promptTokens)], 2);
    // No concurrency levels (bench/moe.ts: single-stream decode only): nothing concurrent to warm.
    if (s.concurrency.length) await timed(l.engine, short(l, Math.max(...s.concurrency)), 2);
  }
  for (let r = 0; r < s.reps; r++)
    for (const l of order(r)) {
      l.first.push(await timed(l.engine, [l.prompts.take(s.promptTokens)], 1));
      l.full.push(await timed(l.engine, [l.prompts.take(s.promptTokens)], N));
    }
  for (const k of s.concurrency)
    for (let r = 0; r < s.reps; r++)
      for (const l of order(r)) {
        l.one.get(k)!.push(await timed(l.engine, short(l, k), 1));
        l.many.get(k)!.push(await timed(l.engine, short(l, k), N));
      }

  return lanes.map((l) => {
    const name = l.engine.name;
    const ttftMs = median(l.first);
    const fullMs = median(l.full);
    log(`    ${name}: TTFT(${s.promptTokens}) ${ttftMs.toFixed(1)} ms, ${N} tokens ${fullMs.toFixed(1)} ms`);
    const latenciesMs: Record<string, number> = { ttft: ttftMs, [`single_${N}`]: fullMs };
    const aggregateTokS: Record<string, number> = {};
    for (const k of s.concurrency) {
      latenciesMs[`x${k}_1`] = median(l.one.get(k)!);
      latenciesMs[`x${k}_${N}`] = median(l.many.get(k)!);
      aggregateTokS[String(k)] = rate(k * (N - 1), latenciesMs[`x${k}_${N}`] - latenciesMs[`x${k}_1`]);
      log(
        `    ${name}: @${k} ${latenciesMs[`x${k}_1`].toFixed(1)} ms → ${latenciesMs[`x${k}_${N}`].toFixed(1)} ms, ${aggregateTokS[String(k)].toFixed(1)} tok/s`,
      );
    }
    return {
      prefillTokS: rate(s.promptTokens, ttftMs),
      decodeTokS: rate(N - 1, fullMs - ttftMs),
      ttftMs,
      aggregateTokS,
      latenciesMs,
      loadMs: l.engine.load?.ms ?? NaN,
      peakLoadRssBytes: l.engine.load?.peakRssBytes ?? NaN,
    };
  });
}

export async function measureEngine(engine: BenchEngine, s: BenchSettings, log: (line: string) => void): Promise<EngineResult> {
  return (await measureEngines([engine], s, log))[0]!;
}
