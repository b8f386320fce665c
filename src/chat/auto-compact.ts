// Context auto-compaction (--auto-compact F): a chat prompt of more than F × the context length
// (or more than the context holds) is compacted instead of refused. Verbatim: the system and
// developer messages, the tool definitions, the latest user message, and as many of the newest
// turns as fit (an assistant turn stays with its tool results: compaction.ts). The older turns are
// replaced by one message holding a summary the served model writes (compaction-summary.ts).
// Where that cannot be done or is not enough: tool outputs are middle-elided, then the oldest kept
// turns are left out, then the summary itself. The result is rendered and counted again; a prompt
// that still does not fit the context gets today's 400 context_length_exceeded.
//
// Sizes: the threshold is floor(F × maxSeqLen), at most maxSeqLen - 1. Compaction aims at
// TARGET_SHARE of the threshold — and at most maxSeqLen - max_tokens where the request's max_tokens
// is strict (chat completions) — so the completion has room and the conversation can grow a while
// before it passes the threshold again.
import { ApiError } from '../common/api-error.js';
import {
  capToCut,
  compactableCount,
  compactConversation,
  compactionNote,
  keepRecent,
  largestFitting,
  minimumRecent,
  removedMessages,
  segmentConversation,
  toolOutputLengths,
  truncateToolOutputs,
  type Segment,
} from './compaction.js';
import { writeSummary } from './compaction-summary.js';
import type { ModelRuntime } from './model-runtime.js';
import { prefixKeys, summaryCacheOf, type CachedSummary, type SummaryCache } from './summary-cache.js';
import { chatTemplateInput, measureChatPrompt, promptTooLong, type ChatPrompt } from './prompt.js';
import type { ChatMessage, ChatRequest } from './request.js';

/** The request is counted up to this many times the context; a longer one is compacted all the same (its size is then a lower bound). */
export const COUNT_LIMIT_FACTOR = 8;
/** Compaction aims at this share of the threshold. */
export const TARGET_SHARE = 0.75;
/** Most tokens of a summary (and at most a quarter of the target). */
export const SUMMARY_MAX_TOKENS = 512;
/** Tool outputs are never cut below this many characters. */
export const MIN_TOOL_OUTPUT_CHARS = 256;
/** Cached summaries tried before writing a new one. */
const REUSE_TRIES = 3;
/** Rounds of tool-output elision, each cutting what the last count says is still over. */
const TRUNCATE_ROUNDS = 4;
/** About the length of an elision marker line (compaction.ts's elisionMarker). */
const ELISION_MARKER_CHARS = 40;
/** Characters per token assumed until a prompt of this conversation has been measured. */
const DEFAULT_CHARS_PER_TOKEN = 3;

export interface AutoCompactSettings {
  /** --auto-compact: the threshold as a fraction of the context length, in (0, 1]. */
  fraction: number;
  /** Completion tokens the request insists on (a strict max_tokens); null: none. */
  reserveTokens: number | null;
  /** Time limit of the summary job, in seconds; 0 = none. */
  timeoutSec: number;
  /** Aborted when the client goes away: the summary job is cancelled and compaction stops. */
  signal?: AbortSignal;
}

/** What a compaction did, for the response header and the log line. */
export interface CompactionReport {
  /** Prompt tokens before; a lower bound when not `exactBefore` (longer than could be counted). */
  tokensBefore: number;
  exactBefore: boolean;
  tokensAfter: number;
  threshold: number;
  target: number;
  /** Messages (and segments: turns that stay whole) the model's summary replaced. */
  summarizedMessages: number;
  summarizedTurns: number;
  /** Tokens the model wrote for the summary. */
  summaryTokens: number;
  /** The summary was written for an earlier request with the same oldest turns (summary-cache.ts). */
  summaryReused: boolean;
  /** Why there is no summary where one was wanted. */
  summaryError: string | null;
  /** Messages left out without a summary. */
  omittedMessages: number;
  /** Tool outputs middle-elided. */
  truncatedToolOutputs: number;
}

export interface CompactedPrompt {
  /** The request with its messages compacted (the same object when nothing was done). */
  request: ChatRequest;
  prompt: ChatPrompt;
  /** null: the prompt was under the threshold and is as the request has it. */
  report: CompactionReport | null;
}

/** The threshold and the target of a context length: see the top of this file. */
export function compactionSizes(fraction: number, maxSeqLen: number, reserveTokens: number | null): { threshold: number; target: number } {
  const threshold = Math.min(Math.floor(fraction * maxSeqLen), maxSeqLen - 1);
  const target = Math.max(1, Math.min(Math.floor(TARGET_SHARE * threshold), maxSeqLen - 1 - (reserveTokens ?? 0)));
  return { threshold, target };
}

/** The client closed the connection while its prompt was compacted (nobody reads the answer; the log shows 499). */
function clientGone(): ApiError {
  return new ApiError(499, 'The client closed the connection during context compaction.', { code: 'client_closed_request' });
}

/** Characters of a message list as the template sees them (for estimates where no count is had). */
function contentChars(messages: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    n += (m.content ?? '').length + (m.reasoning ?? '').length;
    for (const c of m.toolCalls ?? []) n += c.function.name.length + c.function.arguments.length;
  }
  return n;
}

interface Summary {
  text: string;
  /** Messages it stands for. */
  covers: number;
  /** Unpinned segments (turns) it stands for: the oldest ones. */
  turns: number;
  /** Written for an earlier request (summary-cache.ts). */
  reused: boolean;
}

interface Candidate {
  messages: ChatMessage[];
  removed: number;
  truncated: number;
}

/** One request's compaction: its segments, the measuring, and the candidate message lists. */
class Compaction {
  /** Characters per token of the last prompt measured. */
  charsPerToken: number;
  /** How many segments are not pinned. */
  readonly unpinned: number;

  constructor(
    private readonly req: ChatRequest,
    private readonly runtime: ModelRuntime,
    readonly segments: Segment[],
    full: ChatPrompt | null,
  ) {
    this.charsPerToken = full ? full.text.length / full.tokens.length : DEFAULT_CHARS_PER_TOKEN;
    this.unpinned = compactableCount(segments);
  }

  /** The messages of the oldest `turns` unpinned segments, less those of the oldest `skip`. */
  oldest(turns: number, skip = 0): ChatMessage[] {
    return this.segments
      .filter((s) => !s.pinned)
      .slice(skip, turns)
      .flatMap((s) => s.messages);
  }

  /** The prompt of `messages` when it fits the context (with room for one token), else null. */
  async measure(messages: ChatMessage[]): Promise<ChatPrompt | null> {
    const prompt = await measureChatPrompt(chatTemplateInput({ ...this.req, messages }), this.runtime, this.runtime.maxSeqLen);
    if (prompt) this.charsPerToken = prompt.text.length / prompt.tokens.length;
    return prompt;
  }

  /** Tokens of a measured candidate, or an estimate (at least the context) for one that did not fit. */
  tokens(prompt: ChatPrompt | null, messages: readonly ChatMessage[]): number {
    return prompt ? prompt.tokens.length : Math.max(this.runtime.maxSeqLen, Math.ceil(contentChars(messages) / this.charsPerToken));
  }

  /** The newest `recent` unpinned segments kept, the rest behind one note, tool outputs cut to `cap`. */
  candidate(recent: number, summary: Summary | null, cap: number): Candidate {
    const keep = keepRecent(this.segments, recent);
    const removed = removedMessages(this.segments, keep).length;
    const summarized = summary === null ? 0 : Math.min(summary.covers, removed);
    const note = compactionNote(summary?.text ?? null, summarized, removed - summarized);
    const { messages, truncated } = truncateToolOutputs(compactConversation(this.segments, keep, note), cap);
    return { messages, removed, truncated };
  }

  /** The most unpinned segments in [lo, hi] whose candidate's prompt satisfies `ok`; lo - 1 when none does. */
  async mostRecent(lo: number, hi: number, summary: Summary | null, cap: number, ok: (p: ChatPrompt | null) => boolean): Promise<number> {
    return largestFitting(lo, hi, async (k) => ok(await this.measure(this.candidate(k, summary, cap).messages)));
  }
}

const within =
  (limit: number) =>
  (p: ChatPrompt | null): boolean =>
    p !== null && p.tokens.length <= limit;

/** Where a compaction stands: the turns kept, the summary, the tool-output cap, the candidate and its prompt. */
interface State {
  recent: number;
  summary: Summary | null;
  summaryTokens: number;
  summaryError: string | null;
  cap: number;
  cand: Candidate;
  prompt: ChatPrompt | null;
}

/** The cached summary of the most oldest turns, up to `most`; undefined when none is cached. */
function latestCached(keys: readonly string[], cache: SummaryCache, most: number): { turns: number; summary: CachedSummary } | undefined {
  for (let j = most; j >= 1; j--) {
    const summary = cache.peek(keys[j - 1]!);
    if (summary !== undefined) return { turns: j, summary };
  }
  return undefined;
}

/** Step 0: the state with a cached summary of the fewest oldest turns whose candidate fits `threshold`; null when none. */
async function reuseSummary(
  c: Compaction,
  keys: readonly string[],
  cache: SummaryCache,
  most: number,
  threshold: number,
): Promise<State | null> {
  let tries = 0;
  for (let j = 1; j <= most && tries < REUSE_TRIES; j++) {
    const cached = cache.peek(keys[j - 1]!);
    if (cached === undefined) continue;
    tries++;
    const recent = c.unpinned - j;
    const summary: Summary = { text: cached.text, covers: c.oldest(j).length, turns: j, reused: true };
    const cand = c.candidate(recent, summary, Infinity);
    const prompt = await c.measure(cand.messages);
    if (within(threshold)(prompt)) {
      cache.get(keys[j - 1]!);
      return { recent, summary, summaryTokens: cached.tokens, summaryError: null, cap: Infinity, cand, prompt };
    }
  }
  return null;
}

/** Steps 3-5: what still does not fit the target after the summary. */
async function fit(c: Compaction, s: State, sizes: { target: number; minRecent: number; maxSeqLen: number }): Promise<void> {
  const { target, minRecent, maxSeqLen } = sizes;
  const remeasure = async (): Promise<void> => {
    s.cand = c.candidate(s.recent, s.summary, s.cap);
    s.prompt = await c.measure(s.cand.messages);
  };
  // 3. Tool outputs middle-elided, longest first, to what the count says is still over.
  for (let round = 0; round < TRUNCATE_ROUNDS && !within(target)(s.prompt); round++) {
    const lengths = toolOutputLengths(s.cand.messages);
    const over = c.tokens(s.prompt, s.cand.messages) - target;
    // Each elided output gains a marker line; the next round corrects what the estimate missed.
    const cut = Math.ceil(over * c.charsPerToken) + ELISION_MARKER_CHARS * lengths.length;
    const next = Math.max(MIN_TOOL_OUTPUT_CHARS, Math.min(s.cap - 1, capToCut(lengths, cut)));
    if (!lengths.some((n) => n > next)) break;
    s.cap = next;
    await remeasure();
  }
  // 4. The oldest kept turns left out: as few as reach the target, else as few as fit the context.
  if (!within(target)(s.prompt) && s.recent > minRecent) {
    let k = await c.mostRecent(minRecent, s.recent - 1, s.summary, s.cap, within(target));
    if (k < minRecent && s.prompt === null) k = await c.mostRecent(minRecent, s.recent - 1, s.summary, s.cap, within(maxSeqLen));
    if (k >= minRecent || s.prompt === null) {
      s.recent = Math.max(minRecent, k);
      await remeasure();
    }
  }
  // 5. The summary itself, when without it the prompt fits the context and with it does not.
  if (s.prompt === null && s.summary !== null) {
    const bare = c.candidate(s.recent, null, s.cap);
    const prompt = await c.measure(bare.messages);
    if (prompt !== null) {
      Object.assign(s, { cand: bare, prompt, summary: null, summaryTokens: 0, summaryError: 'the summary did not fit' });
    }
  }
}

/**
 * The chat prompt of a request under --auto-compact: as the request has it when it is within the
 * threshold, else compacted (see the top of this file).
 */
export async function buildChatPromptCompacting(
  req: ChatRequest,
  runtime: ModelRuntime,
  settings: AutoCompactSettings,
): Promise<CompactedPrompt> {
  const { maxSeqLen } = runtime;
  const { threshold, target } = compactionSizes(settings.fraction, maxSeqLen, settings.reserveTokens);
  const countLimit = maxSeqLen * COUNT_LIMIT_FACTOR;
  const full = await measureChatPrompt(chatTemplateInput(req), runtime, countLimit);
  if (full !== null && full.tokens.length <= threshold) return { request: req, prompt: full, report: null };
  const tokensBefore = full?.tokens.length ?? countLimit;
  const tooLong = (): ApiError => promptTooLong(maxSeqLen, tokensBefore, 'messages', full === null);
  // A max_tokens that alone fills the context fails whatever the prompt: today's errors, no work.
  if ((settings.reserveTokens ?? 0) >= maxSeqLen - 1) {
    if (full === null) throw tooLong();
    return { request: req, prompt: full, report: null };
  }

  const c = new Compaction(req, runtime, segmentConversation(req.messages), full);
  const others = compactableCount(c.segments);
  const minRecent = Math.min(minimumRecent(c.segments), others);
  const summaryMaxTokens = Math.max(1, Math.min(SUMMARY_MAX_TOKENS, Math.floor(target / 4)));
  const checkClient = (): void => {
    if (settings.signal?.aborted) throw clientGone();
  };
  const keys = prefixKeys(c.segments);
  const cache = summaryCacheOf(runtime);

  // 0. A summary written for an earlier request with the same oldest turns, while the rest still
  //    fits the threshold: the conversation grows by a quarter of it between summaries.
  let state = await reuseSummary(c, keys, cache, others - minRecent, threshold);
  if (state === null) {
    // 1. The newest turns that fit the target with room for the summary.
    let recent = others;
    if (others > minRecent) {
      recent = Math.max(minRecent, await c.mostRecent(minRecent, others - 1, null, Infinity, within(target - summaryMaxTokens)));
    }
    // 2. The model's summary of the rest (continuing the latest summary of fewer of them, if any).
    const removedTurns = others - recent;
    let summary: Summary | null = null;
    let summaryTokens = 0;
    let summaryError: string | null = null;
    if (removedTurns > 0) {
      const earlier = latestCached(keys, cache, removedTurns - 1);
      const messages = c.oldest(removedTurns, earlier?.turns ?? 0);
      if (earlier) messages.unshift({ role: 'system', content: `Summary of the conversation before: ${earlier.summary.text}` });
      const written = await writeSummary(runtime, messages, {
        maxTokens: summaryMaxTokens,
        charsPerToken: c.charsPerToken,
        timeoutSec: settings.timeoutSec,
        signal: settings.signal,
      });
      checkClient();
      if ('text' in written) {
        summary = { text: written.text, covers: c.oldest(removedTurns).length, turns: removedTurns, reused: false };
        summaryTokens = written.tokens;
        cache.set(keys[removedTurns - 1]!, { text: written.text, tokens: written.tokens });
      } else summaryError = written.error;
    }
    const cand = c.candidate(recent, summary, Infinity);
    state = { recent, summary, summaryTokens, summaryError, cap: Infinity, cand, prompt: await c.measure(cand.messages) };
    // 3-5. Tool outputs elided, then older turns left out, then the summary, while over.
    await fit(c, state, { target, minRecent, maxSeqLen });
  }
  const { cand, prompt, summary } = state;
  checkClient();

  if (prompt === null) throw tooLong();
  // Nothing could be removed or cut: the request as it is (a prompt within the context is served as today).
  if (cand.removed === 0 && cand.truncated === 0) return { request: req, prompt, report: null };
  const summarizedMessages = summary?.covers ?? 0;
  return {
    request: { ...req, messages: cand.messages },
    prompt,
    report: {
      tokensBefore,
      exactBefore: full !== null,
      tokensAfter: prompt.tokens.length,
      threshold,
      target,
      summarizedMessages,
      summarizedTurns: summary?.turns ?? 0,
      summaryTokens: state.summaryTokens,
      summaryReused: summary?.reused ?? false,
      summaryError: state.summaryError,
      omittedMessages: cand.removed - summarizedMessages,
      truncatedToolOutputs: cand.truncated,
    },
  };
}
