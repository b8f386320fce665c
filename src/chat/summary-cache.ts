// Summaries auto-compaction has written, per loaded model. An agent resends its whole history each
// turn, so the same oldest turns are compacted again and again: reusing their summary saves
// generating it, and keeps the compacted prompt's beginning the same from turn to turn (so the
// prefix cache can serve it). A summary is keyed by the oldest compactable segments it stands for:
// key j is a hash of the first j unpinned segments' messages, as the request has them.
import { createHash } from 'node:crypto';
import type { Segment } from './compaction.js';

/** Summaries kept per model (each at most a few KB). */
export const SUMMARY_CACHE_ENTRIES = 64;

export interface CachedSummary {
  text: string;
  /** Tokens the model wrote for it. */
  tokens: number;
}

/** A least-recently-used map of summaries. */
export class SummaryCache {
  private readonly entries = new Map<string, CachedSummary>();

  constructor(private readonly capacity = SUMMARY_CACHE_ENTRIES) {}

  get(key: string): CachedSummary | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  /** The entry without making it the most recently used. */
  peek(key: string): CachedSummary | undefined {
    return this.entries.get(key);
  }

  set(key: string, value: CachedSummary): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }

  get size(): number {
    return this.entries.size;
  }
}

// One cache per model runtime: a swapped-in model starts with none, and the old one's goes with it.
const caches = new WeakMap<object, SummaryCache>();

/** The summary cache of a model runtime. */
export function summaryCacheOf(runtime: object): SummaryCache {
  let cache = caches.get(runtime);
  if (cache === undefined) caches.set(runtime, (cache = new SummaryCache()));
  return cache;
}

/** keys[j - 1]: the key of the first j unpinned segments (one pass, hashing each segment once). */
export function prefixKeys(segments: readonly Segment[]): string[] {
  const hash = createHash('sha256');
  const keys: string[] = [];
  for (const s of segments) {
    if (s.pinned) continue;
    hash.update(JSON.stringify(s.messages));
    // A separator, so that segment boundaries are part of the key.
    hash.update('\u0000');
    keys.push(hash.copy().digest('base64url'));
  }
  return keys;
}
