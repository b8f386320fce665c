// The per-key rate limiter: two token buckets per key, one counting requests and one counting
// tokens, off unless SVC_RATE_LIMIT_RPM and/or SVC_RATE_LIMIT_TPM is above 0. A key is the API
// key a request presented (auth.ts), or the client address when auth is off.
//
// - Requests: a bucket of SVC_RATE_LIMIT_BURST_RPM (default: the RPM cap) refilled at RPM per
//   minute; each request takes one in an onRequest hook, before the route runs.
// - Tokens: a bucket of SVC_RATE_LIMIT_BURST_TPM (default: the TPM cap) refilled at TPM per
//   minute. A generation's prompt tokens are taken when it is admitted (runSequences, where the
//   prompt is known); its generated tokens are charged when it ends, however it ends (finished,
//   failed, cut off by the client), and may leave the bucket below zero: that debt delays the
//   key's next admission. A prompt larger than the whole bucket is admitted when the bucket is
//   full (it could never be otherwise), and leaves it in debt.
// - Over a limit: 429 `rate_limit_exceeded` with Retry-After (whole seconds, rounded up) until
//   the bucket holds what was asked; nothing is taken from a bucket for a refused request.
// - The key table holds at most MAX_KEYS keys; the least recently used is dropped when a new key
//   comes (a dropped key starts again with full buckets).
//
// Time comes from an injectable clock (ms), and bucket levels are kept in units of 1/60000 of a
// request or token, so with a whole-millisecond clock refills are exact integer arithmetic:
// RPM per minute is RPM units per millisecond.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../common/api-error.js';
import { readEnv } from '../common/env.js';

/**
 * Keys tracked at once. With auth on, a key is an API key (a handful); with auth off, a client
 * address, and this bounds the memory a stream of new addresses can claim (a few hundred bytes
 * each, about 3 MB in all).
 */
export const MAX_KEYS = 10_000;

/** Per minute, per key; 0 turns that bucket off. Bursts are bucket sizes (≥ 1 when their cap is on). */
export interface RateLimits {
  readonly rpm: number;
  readonly tpm: number;
  readonly burstRpm: number;
  readonly burstTpm: number;
}

/** Milliseconds per minute: a bucket level counts 1/MS_PER_MINUTE of a request or token. */
const MS_PER_MINUTE = 60_000;

/** Rate-limit environment variables that contradict each other (a start-up error). */
export class RateLimitConfigError extends Error {}

/** The limits from SVC_RATE_LIMIT_*; null when both caps are 0 (the limiter is off). */
export function rateLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): RateLimits | null {
  const rpm = readEnv('SVC_RATE_LIMIT_RPM', env);
  const tpm = readEnv('SVC_RATE_LIMIT_TPM', env);
  const burstRpm = readEnv('SVC_RATE_LIMIT_BURST_RPM', env);
  const burstTpm = readEnv('SVC_RATE_LIMIT_BURST_TPM', env);
  // A burst without its cap would be silently ignored: most likely a mistyped deployment.
  if (burstRpm !== null && rpm === 0) throw new RateLimitConfigError('SVC_RATE_LIMIT_BURST_RPM: set, but SVC_RATE_LIMIT_RPM is 0 (off)');
  if (burstTpm !== null && tpm === 0) throw new RateLimitConfigError('SVC_RATE_LIMIT_BURST_TPM: set, but SVC_RATE_LIMIT_TPM is 0 (off)');
  if (rpm === 0 && tpm === 0) return null;
  return { rpm, tpm, burstRpm: burstRpm ?? rpm, burstTpm: burstTpm ?? tpm };
}

/** One line for the start-up log. */
export function describeRateLimits(l: RateLimits): string {
  const parts: string[] = [];
  if (l.rpm > 0) parts.push(`${l.rpm} requests/min (burst ${l.burstRpm})`);
  if (l.tpm > 0) parts.push(`${l.tpm} tokens/min (burst ${l.burstTpm})`);
  return `Rate limit per key: ${parts.join(', ')}`;
}

/** A token bucket; `level` and `capacity` in 1/MS_PER_MINUTE units, refilled `perMinute` units per ms. */
class Bucket {
  private level: number;
  private readonly capacity: number;

  constructor(
    private readonly perMinute: number,
    burst: number,
    private last: number,
  ) {
    this.capacity = burst * MS_PER_MINUTE;
    this.level = this.capacity;
  }

  private refill(now: number): void {
    this.level = Math.min(this.capacity, this.level + Math.max(0, now - this.last) * this.perMinute);
    this.last = now;
  }

  /**
   * Whole seconds until `cost` could be taken: 0 when it can be now. A cost above the capacity
   * waits for a full bucket; a bucket in debt waits until the debt is paid and `cost` is back.
   */
  wait(cost: number, now: number): number {
    this.refill(now);
    const need = Math.min(cost * MS_PER_MINUTE, this.capacity);
    if (this.level >= need) return 0;
    return Math.max(1, Math.ceil((need - this.level) / (this.perMinute * 1000)));
  }

  /** Takes `cost` (negative: gives it back), whatever the level: debt is allowed. */
  charge(cost: number, now: number): void {
    this.refill(now);
    this.level = Math.min(this.capacity, this.level - cost * MS_PER_MINUTE);
  }

  /** What is in the bucket now, in requests or tokens (tests, diagnostics). */
  available(now: number): number {
    this.refill(now);
    return this.level / MS_PER_MINUTE;
  }
}

interface KeyBuckets {
  readonly requests: Bucket | null;
  readonly tokens: Bucket | null;
}

/** 429 `rate_limit_exceeded`, retriable after `seconds`. */
export function rateLimitExceeded(what: string, seconds: number): ApiError {
  return new ApiError(429, `Rate limit reached for ${what}; retry in ${seconds} s.`, {
    code: 'rate_limit_exceeded',
    headers: { 'retry-after': String(seconds) },
  });
}

export interface RateLimiterOptions {
  /** Milliseconds on a monotonic clock (default performance.now). */
  now?: () => number;
  /** Key-table size (default MAX_KEYS). */
  maxKeys?: number;
}

export class RateLimiter {
  private readonly keys = new Map<string, KeyBuckets>();
  private readonly now: () => number;
  private readonly maxKeys: number;

  constructor(
    readonly limits: RateLimits,
    options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.maxKeys = options.maxKeys ?? MAX_KEYS;
  }

  /** Keys tracked now (≤ maxKeys). */
  get size(): number {
    return this.keys.size;
  }

  /** Whether `key` is in the table (tests: which key was dropped). */
  has(key: string): boolean {
    return this.keys.has(key);
  }

  /** The key's buckets, made most recently used; a new key gets full buckets and may push out the least recently used. */
  private buckets(key: string, now: number): KeyBuckets {
    let b = this.keys.get(key);
    if (b !== undefined) {
      // A Map iterates in insertion order: re-inserting makes it the most recently used.
      this.keys.delete(key);
    } else {
      const { rpm, tpm, burstRpm, burstTpm } = this.limits;
      b = { requests: rpm > 0 ? new Bucket(rpm, burstRpm, now) : null, tokens: tpm > 0 ? new Bucket(tpm, burstTpm, now) : null };
      if (this.keys.size >= this.maxKeys) this.keys.delete(this.keys.keys().next().value!);
    }
    this.keys.set(key, b);
    return b;
  }

  /** One request for `key`: taken, or a 429 thrown (nothing taken). */
  admitRequest(key: string): void {
    const now = this.now();
    const bucket = this.buckets(key, now).requests;
    if (bucket === null) return;
    const wait = bucket.wait(1, now);
    if (wait > 0) throw rateLimitExceeded(`requests per minute (${this.limits.rpm}/min, burst ${this.limits.burstRpm})`, wait);
    bucket.charge(1, now);
  }

  /** A prompt of `tokens` for `key`: taken, or a 429 thrown (nothing taken). */
  admitTokens(key: string, tokens: number): void {
    const now = this.now();
    const bucket = this.buckets(key, now).tokens;
    if (bucket === null) return;
    const wait = bucket.wait(tokens, now);
    if (wait > 0) {
      throw rateLimitExceeded(
        `tokens per minute (${this.limits.tpm}/min, burst ${this.limits.burstTpm}; this prompt is ${tokens} tokens)`,
        wait,
      );
    }
    bucket.charge(tokens, now);
  }

  /** Charges `tokens` to `key` whatever its level (generated tokens; negative gives tokens back). */
  chargeTokens(key: string, tokens: number): void {
    if (tokens === 0) return;
    const now = this.now();
    this.buckets(key, now).tokens?.charge(tokens, now);
  }

  /** Requests `key` could make now (Infinity when requests are not limited). */
  requestsAvailable(key: string): number {
    const now = this.now();
    return this.buckets(key, now).requests?.available(now) ?? Infinity;
  }

  /** Tokens `key` has now, negative when in debt (Infinity when tokens are not limited). */
  tokensAvailable(key: string): number {
    const now = this.now();
    return this.buckets(key, now).tokens?.available(now) ?? Infinity;
  }

  /** A request's token account, for the generation code (request.rateLimitTokens). */
  tokensFor(key: string): RequestTokens {
    return new TokenAccount(this, key);
  }
}

/** What generation code does with a rate-limited request's tokens. */
export interface RequestTokens {
  /** Takes the prompt's tokens, or throws 429 rate_limit_exceeded. */
  admit(promptTokens: number): void;
  /** The generation never ran (the engine refused it): the prompt's tokens go back. */
  refund(): void;
  /** The generation ended, however: charges the generated tokens. Only the first call counts. */
  settle(generatedTokens: number): void;
}

class TokenAccount implements RequestTokens {
  private admitted = 0;
  private settled = false;

  constructor(
    private readonly limiter: RateLimiter,
    private readonly key: string,
  ) {}

  admit(promptTokens: number): void {
    this.limiter.admitTokens(this.key, promptTokens);
    this.admitted += promptTokens;
  }

  refund(): void {
    this.limiter.chargeTokens(this.key, -this.admitted);
    this.admitted = 0;
  }

  settle(generatedTokens: number): void {
    if (this.settled) return;
    this.settled = true;
    this.limiter.chargeTokens(this.key, generatedTokens);
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's token account when the limiter is on (null otherwise, and on open routes). */
    rateLimitTokens: RequestTokens | null;
  }
}

/**
 * Registers the request bucket's hook on `app` (the root instance, after registerAuth: the key is
 * request.apiKeyId, set by auth's hook, else the client address). With `limiter` null it only
 * declares request.rateLimitTokens.
 */
export function registerRateLimit(app: FastifyInstance, limiter: RateLimiter | null): void {
  app.decorateRequest('rateLimitTokens', null);
  if (limiter === null) return;
  app.addHook('onRequest', async (request) => {
    // Open routes, and the state a dashboard polls every second: neither spends a key's requests.
    if (request.routeOptions.config?.openAccess || request.routeOptions.config?.polled) return;
    const key = request.apiKeyId ?? `ip:${request.ip}`;
    limiter.admitRequest(key);
    request.rateLimitTokens = limiter.tokensFor(key);
  });
}
