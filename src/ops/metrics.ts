// Prometheus metrics (prom-client), served as text by GET /metrics (src/server/routes/metrics.ts).
//
// Each app has its own Registry (tests build many apps in one process; prom-client's global
// registry is never used). Process metrics (prom-client's defaults: CPU, memory, heap, event-loop
// lag, GC, handles, file descriptors) describe the process, not an app: they live in one registry
// per process, made on the first scrape, and every app's /metrics appends it.
//
// Request metrics are recorded once per request when its response closes (request-log.ts's
// outcome hook, which also sees the 401s, 429s and 404s answered before any route runs). Token
// counts are added when a generation ends, however it ends (finished, failed, cut off by the
// client). Engine gauges are read at scrape time from the engine's stats snapshot, which the
// worker posts with every step (no message is sent to the worker to scrape); with no model loaded
// they read 0.
//
//   svc_requests_total{status,model}                 counter    every response; status 499: the client left before any header
//   svc_request_duration_seconds{model,route}        histogram  arrival → response end; route: the pattern, "unmatched" for 404s
//   svc_prompt_tokens_total{model}                   counter    prompt tokens of admitted generations
//   svc_tokens_generated_total{model}                counter    generated tokens (usage.completion_tokens summed)
//   svc_ttft_seconds{model}                          histogram  arrival → first generated token, once per generation that produced one
//   svc_decode_throughput_tok_per_sec{model}         histogram  per generation: tokens after the first / time from first to last token
//   svc_kv_pool_utilization_ratio                    gauge      KV blocks in use / KV blocks in the pool (0–1)
//   svc_active_sequences                             gauge      sequences the engine is running (holding KV, stepping)
//   svc_queue_depth                                  gauge      sequences admitted but waiting to run
//
// With expert parallelism (--world-size 2) only, read at scrape time from the link's shared counters:
//   svc_expert_parallel_bytes_total{direction}       counter    bytes on the socket to rank 1, "sent" / "received"
//   svc_expert_parallel_rows_total                   counter    activation rows sent to rank 1
//   svc_expert_parallel_peer_connected               gauge      1 while rank 1 is connected, else 0
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineStats, ExpertParallelStatus } from '../engine/types.js';
import { decodeThroughput, type OutcomeSink, type RequestOutcome } from './request-log.js';

/** Request duration (s): fast refusals in milliseconds up to long generations in minutes. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Time to first token (s): a warm short prompt in milliseconds, a long prefill or a queue wait in tens of seconds. */
export const TTFT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80];
/** Decode throughput (tokens/s) of one generation. */
export const THROUGHPUT_BUCKETS = [1, 2.5, 5, 10, 15, 20, 30, 40, 50, 75, 100, 150, 200, 300, 500, 1000];

/** Route label of requests no route matched (one value, whatever the path: bounded cardinality). */
export const UNMATCHED_ROUTE = 'unmatched';

let processRegistry: Registry | null = null;

/** The process's default metrics (made once: their collectors watch the whole process). */
function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export interface MetricsOptions {
  /** The served model name, the `model` label: read per request, so a model swap relabels what follows. */
  model: string | (() => string);
  /** The loaded engine's stats, or null when no model is loaded (read at scrape time). */
  engineStats: () => EngineStats | null;
  /** Append the process metrics (default true). */
  processMetrics?: boolean;
  /** --world-size 2: the head's expert-parallel state (counters absent while loading); absent: one rank, no such metrics. */
  expertParallel?: () => Pick<ExpertParallelStatus, 'peers'> & Partial<ExpertParallelStatus>;
}

export class ServerMetrics {
  /** This app's registry (request, token and engine metrics). */
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly modelName: () => string;
  private readonly withProcess: boolean;
  private readonly requests: Counter<'status' | 'model'>;
  private readonly duration: Histogram<'model' | 'route'>;
  private readonly promptTokens: Counter<'model'>;
  private readonly cachedTokens: Counter<'model'>;
  private readonly generated: Counter<'model'>;
  private readonly ttft: Histogram<'model'>;
  private readonly throughput: Histogram<'model'>;

  constructor(options: MetricsOptions) {
    const model = options.model;
    this.modelName = typeof model === 'string' ? () => model : model;
    this.withProcess = options.processMetrics ?? true;
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'svc_requests_total',
      help: 'HTTP responses, by status (499: the client left before any response header) and served model.',
      labelNames: ['status', 'model'],
      registers,
    });
    this.duration = new Histogram({
      name: 'svc_request_duration_seconds',
      help: 'Seconds from a request arriving to its response ending, by route pattern ("unmatched" when none matched).',
      labelNames: ['model', 'route'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.promptTokens = new Counter({
      name: 'svc_prompt_tokens_total',
      help: 'Prompt tokens of admitted generations (once per distinct prompt).',
      labelNames: ['model'],
      registers,
    });
    this.cachedTokens = new Counter({
      name: 'svc_prompt_tokens_cached_total',
      help: 'Of svc_prompt_tokens_total, the tokens whose KV came from the prefix cache (--enable-prefix-caching).',
      labelNames: ['model'],
      registers,
    });
    this.generated = new Counter({
      name: 'svc_tokens_generated_total',
      help: 'Generated tokens (the sum of usage.completion_tokens), added when each generation ends.',
      labelNames: ['model'],
      registers,
    });
    this.ttft = new Histogram({
      name: 'svc_ttft_seconds',
      help: 'Seconds from a generation request arriving to its first generated token.',
      labelNames: ['model'],
      buckets: TTFT_BUCKETS,
      registers,
    });
    this.throughput = new Histogram({
      name: 'svc_decode_throughput_tok_per_sec',
      help: 'Per generation: tokens generated after the first, divided by the seconds from the first token to the last.',
      labelNames: ['model'],
      buckets: THROUGHPUT_BUCKETS,
      registers,
    });
    const stats = options.engineStats;
    new Gauge({
      name: 'svc_kv_pool_utilization_ratio',
      help: 'KV-cache blocks in use divided by the blocks in the pool (0 when no model is loaded).',
      registers,
      collect() {
        const s = stats();
        this.set(s !== null && s.kvBlocksTotal > 0 ? s.kvBlocksUsed / s.kvBlocksTotal : 0);
      },
    });
    new Gauge({
      name: 'svc_prefix_cache_hit_ratio',
      help: 'Prompt tokens found in the prefix cache divided by the prompt tokens looked up, since start (0 without prefix caching).',
      registers,
      collect() {
        const s = stats();
        this.set(s !== null && s.prefixQueriedTokens > 0 ? s.prefixHitTokens / s.prefixQueriedTokens : 0);
      },
    });
    // Speculative decoding: engine counters since start, read at scrape time.
    const engineCounter = (name: string, help: string, read: (s: EngineStats) => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          const s = stats();
          this.reset();
          this.inc(s === null ? 0 : read(s));
        },
      });
    engineCounter('svc_spec_draft_tokens_total', 'Tokens proposed by the speculative drafter.', (s) => s.draftedTokens);
    engineCounter(
      'svc_spec_accepted_tokens_total',
      'Drafted tokens the model agreed with (taken without a step of their own).',
      (s) => s.acceptedDraftTokens,
    );
    engineCounter('svc_spec_verify_steps_total', 'Sequence steps that verified a draft.', (s) => s.verifySteps);
    new Gauge({
      name: 'svc_spec_acceptance_ratio',
      help: 'Accepted divided by drafted tokens since start (0 before any draft).',
      registers,
      collect() {
        const s = stats();
        this.set(s !== null && s.draftedTokens > 0 ? s.acceptedDraftTokens / s.draftedTokens : 0);
      },
    });
    new Gauge({
      name: 'svc_prefix_cache_blocks',
      help: 'KV blocks held in the prefix cache (in use by a sequence or evictable).',
      registers,
      collect() {
        this.set(stats()?.kvBlocksCached ?? 0);
      },
    });
    new Gauge({
      name: 'svc_active_sequences',
      help: 'Sequences the engine is running: holding KV blocks and stepping.',
      registers,
      collect() {
        this.set(stats()?.running ?? 0);
      },
    });
    new Gauge({
      name: 'svc_queue_depth',
      help: 'Sequences admitted but waiting to be scheduled.',
      registers,
      collect() {
        this.set(stats()?.waiting ?? 0);
      },
    });
    const ep = options.expertParallel;
    if (ep !== undefined) {
      new Counter({
        name: 'svc_expert_parallel_bytes_total',
        help: 'Bytes on the expert-parallel link to rank 1 (frames and handshakes), by direction: sent or received.',
        labelNames: ['direction'],
        registers,
        collect() {
          const s = ep();
          this.reset();
          this.inc({ direction: 'sent' }, s.bytesSent ?? 0);
          this.inc({ direction: 'received' }, s.bytesReceived ?? 0);
        },
      });
      new Counter({
        name: 'svc_expert_parallel_rows_total',
        help: 'Activation rows sent to rank 1 for its experts (a row routed to none of them is not sent).',
        registers,
        collect() {
          this.reset();
          this.inc(ep().rowsSent ?? 0);
        },
      });
      new Gauge({
        name: 'svc_expert_parallel_peer_connected',
        help: 'Whether expert-parallel rank 1 is connected (1) or not (0: waiting or lost; the model cannot run).',
        registers,
        collect() {
          this.set(ep().peers === 'connected' ? 1 : 0);
        },
      });
    }
    // The served model's series exist from the start, at 0.
    const m = { model: this.modelName() };
    this.promptTokens.inc(m, 0);
    this.cachedTokens.inc(m, 0);
    this.generated.inc(m, 0);
    this.ttft.zero(m);
    this.throughput.zero(m);
  }

  /** Records one finished request (an OutcomeSink). */
  readonly record: OutcomeSink = (o: RequestOutcome) => {
    const model = this.modelName();
    this.requests.inc({ status: String(o.status), model });
    this.duration.observe({ model, route: o.route ?? UNMATCHED_ROUTE }, o.elapsedSec);
    const g = o.generation;
    if (g === null) return;
    this.promptTokens.inc({ model }, g.promptTokens);
    this.cachedTokens.inc({ model }, g.cachedTokens);
    this.generated.inc({ model }, g.completionTokens);
    if (g.ttftMs !== null) this.ttft.observe({ model }, g.ttftMs / 1000);
    const tps = decodeThroughput(g);
    if (tps !== null) this.throughput.observe({ model }, tps);
  };

  /** The exposition text: this app's metrics, then the process's. */
  async render(): Promise<string> {
    const own = await this.registry.metrics();
    return this.withProcess ? `${own}\n${await processMetrics().metrics()}` : own;
  }
}
