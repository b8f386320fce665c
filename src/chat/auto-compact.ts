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

  constructor(
    private readonly req: ChatRequest,
    private readonly runtime: ModelRuntime,
    readonly segments: Segment[],
    full: ChatPrompt | null,
  ) {
    this.charsPerToken = full ? full.text.length / full.tokens.length : DEFAULT_CHARS_PER_TOKEN;
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

  const c = new Compaction(req, runtime, segmentConversation(req.messages), full);
  const others = compactableCount(c.segments);
  const minRecent = Math.min(minimumRecent(c.segments), others);
  const summaryMaxTokens = Math.max(1, Math.min(SUMMARY_MAX_TOKENS, Math.floor(target / 4)));
  const within = (limit: number) => (p: ChatPrompt | null) => p !== null && p.tokens.length <= limit;
  const checkClient = (): void => {
    if (settings.signal?.aborted) throw clientGone();
  };

  // 1. The newest turns that fit the target with room for the summary.
  let recent = others;
  if (others > minRecent) {
    recent = Math.max(minRecent, await c.mostRecent(minRecent, others - 1, null, Infinity, within(target - summaryMaxTokens)));
  }

  // 2. The model's summary of the rest.
  let summary: Summary | null = null;
  let summaryTokens = 0;
  let summaryError: string | null = null;
  let summarizedTurns = 0;
  const keep = keepRecent(c.segments, recent);
  const removed = removedMessages(c.segments, keep);
  if (removed.length > 0) {
    const written = await writeSummary(runtime, removed, {
      maxTokens: summaryMaxTokens,
      charsPerToken: c.charsPerToken,
      timeoutSec: settings.timeoutSec,
      signal: settings.signal,
    });
    checkClient();
    if ('text' in written) {
      summary = { text: written.text, covers: removed.length };
      summaryTokens = written.tokens;
      summarizedTurns = keep.filter((k) => !k).length;
    } else summaryError = written.error;
  }
  let cap = Infinity;
  let cand = c.candidate(recent, summary, cap);
  let prompt = await c.measure(cand.messages);

  // 3. Tool outputs middle-elided, longest first, to what the count says is still over.
  for (let round = 0; round < TRUNCATE_ROUNDS && !within(target)(prompt); round++) {
    const lengths = toolOutputLengths(cand.messages);
    const over = c.tokens(prompt, cand.messages) - target;
    // Each elided output gains a marker line; the next round corrects what the estimate missed.
    const cut = Math.ceil(over * c.charsPerToken) + ELISION_MARKER_CHARS * lengths.length;
    const next = Math.max(MIN_TOOL_OUTPUT_CHARS, Math.min(cap - 1, capToCut(lengths, cut)));
    if (!lengths.some((n) => n > next)) break;
    cap = next;
    cand = c.candidate(recent, summary, cap);
    prompt = await c.measure(cand.messages);
  }

  // 4. The oldest kept turns left out: as few as reach the target, else as few as fit the context.
  if (!within(target)(prompt) && recent > minRecent) {
    let k = await c.mostRecent(minRecent, recent - 1, summary, cap, within(target));
    if (k < minRecent && prompt === null) k = await c.mostRecent(minRecent, recent - 1, summary, cap, within(maxSeqLen));
    if (k >= minRecent || prompt === null) {
      recent = Math.max(minRecent, k);
      cand = c.candidate(recent, summary, cap);
      prompt = await c.measure(cand.messages);
    }
  }

  // 5. The summary itself, when without it the prompt fits the context and with it does not.
  if (prompt === null && summary !== null) {
    const bare = c.candidate(recent, null, cap);
    const barePrompt = await c.measure(bare.messages);
    if (barePrompt !== null) {
      cand = bare;
      prompt = barePrompt;
      summary = null;
      summaryTokens = 0;
      summarizedTurns = 0;
      summaryError = 'the summary did not fit';
    }
  }
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
      summarizedTurns,
      summaryTokens,
      summaryError,
      omittedMessages: cand.removed - summarizedMessages,
      truncatedToolOutputs: cand.truncated,
    },
  };
}
