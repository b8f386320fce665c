// The dashboard's live numbers besides the engine gauges: requests since start, generated tokens
// per second over the last few seconds, and the last requests (a ring buffer). An OutcomeSink, fed
// by the same hook as the log line and /metrics (request-log.ts), so the three agree.
import type { OutcomeSink, RequestOutcome } from './request-log.js';

export interface RecentRequest {
  time: string;
  route: string;
  status: number;
  ms: number;
  tokens: number | null;
}

/** How many requests the log keeps. */
export const RECENT_MAX = 50;
/** The window tokens/s is averaged over. */
const RATE_WINDOW_MS = 10_000;

export class RecentRequests {
  private readonly ring: RecentRequest[] = [];
  /** (end time, generated tokens) of the generations that ended inside the window. */
  private readonly ended: { at: number; tokens: number }[] = [];
  private total = 0;

  constructor(private readonly now: () => number = Date.now) {}

  readonly record: OutcomeSink = (o: RequestOutcome) => {
    // Probes (/health, /metrics, the dashboard's own polling) would drown the log.
    if (o.polled) return;
    this.total += 1;
    const at = this.now();
    const tokens = o.generation?.completionTokens ?? null;
    this.ring.push({
      time: new Date(at).toISOString(),
      route: o.route ?? o.path,
      status: o.status,
      ms: Math.round(o.elapsedSec * 1000),
      tokens,
    });
    if (this.ring.length > RECENT_MAX) this.ring.shift();
    if (tokens !== null && tokens > 0) this.ended.push({ at, tokens });
  };

  get requestsTotal(): number {
    return this.total;
  }

  /** Generated tokens per second over the last RATE_WINDOW_MS. */
  tokensPerSec(): number {
    const from = this.now() - RATE_WINDOW_MS;
    while (this.ended.length > 0 && this.ended[0]!.at < from) this.ended.shift();
    return this.ended.reduce((sum, e) => sum + e.tokens, 0) / (RATE_WINDOW_MS / 1000);
  }

  /** Newest first. */
  recent(): RecentRequest[] {
    return [...this.ring].reverse();
  }
}
