// The model-written summary of auto-compaction (--auto-compact): the messages to be replaced as a
// plain transcript inside a summarization prompt (cut until it fits the context with room for the
// summary), run through the served model on the engine, greedy, with thinking turned off where the
// template supports it; the answer's text is the summary (any reasoning is dropped).
import type { GenerationHandle, GenerationRequest, SamplingParams } from '../engine/types.js';
import type { ModelRuntime } from './model-runtime.js';
import { textStages } from './output-plan.js';
import { OutputPipeline, runSequence } from './pipeline.js';
import { measureChatPrompt, type ChatPrompt, type ChatTemplateInput } from './prompt.js';
import { promptOpensReasoning, REASONING_FORMATS } from './reasoning.js';
import type { ChatMessage } from './request.js';
import { capToCut, elideMiddle } from './compaction.js';

export const SUMMARY_INSTRUCTIONS =
  "You compact conversations that no longer fit in the assistant's context. Summarize the transcript you are given " +
  'so that the assistant can carry on from the summary alone: what the user asked for, what was done (the tools ' +
  'called and what their results showed), the facts, names, numbers, paths and decisions that still matter, and ' +
  'what is left to do. Write plain, dense text: no preamble, no tool calls.';

/** A transcript entry is never cut below this many characters (the oldest entries go first instead). */
export const MIN_ENTRY_CHARS = 200;

/** A summarization prompt with less room than this (instructions and a few entries) is not tried. */
const MIN_SUMMARY_PROMPT_TOKENS = 128;

/** Tries at fitting the transcript before giving up on a summary. */
const FIT_ATTEMPTS = 5;

const GREEDY: SamplingParams = { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null };

/** One message as a transcript entry (role label, text, tool calls as name(arguments)). */
export function transcriptEntry(m: ChatMessage): string {
  const text = m.content ?? '';
  switch (m.role) {
    case 'system':
    case 'developer':
      return `System: ${text}`;
    case 'user':
      return `User: ${text}`;
    case 'tool':
      return `Tool result${m.name !== undefined ? ` (${m.name})` : ''}: ${text}`;
    case 'assistant': {
      const lines = text !== '' ? [`Assistant: ${text}`] : [];
      for (const call of m.toolCalls ?? []) lines.push(`Assistant called ${call.function.name}(${call.function.arguments})`);
      return lines.length > 0 ? lines.join('\n') : 'Assistant: (no text)';
    }
  }
}

/**
 * Transcript entries cut to about `maxChars` in all: the longest are middle-elided to a common
 * length first (not below MIN_ENTRY_CHARS), then the oldest are left out, with a line saying so.
 */
export function fitEntries(entries: readonly string[], maxChars: number): string[] {
  const total = (xs: readonly string[]): number => xs.reduce((n, e) => n + e.length, 0);
  const cap = Math.max(
    MIN_ENTRY_CHARS,
    capToCut(
      entries.map((e) => e.length),
      total(entries) - maxChars,
    ),
  );
  const out = entries.map((e) => elideMiddle(e, cap));
  let dropped = 0;
  while (out.length > 1 && total(out) > maxChars) {
    out.shift();
    dropped++;
  }
  if (dropped > 0) out.unshift(`[… ${dropped} earlier messages omitted …]`);
  return out;
}

/** The summarization prompt over transcript entries. */
export function summaryInput(entries: readonly string[]): ChatTemplateInput {
  const transcript = entries.join('\n\n');
  return {
    messages: [
      { role: 'system', content: SUMMARY_INSTRUCTIONS },
      { role: 'user', content: `Transcript:\n\n${transcript}\n\nWrite the summary of the transcript above.` },
    ],
    tools: [],
    // Templates that know it (Qwen3 …) render no think block; others ignore it.
    chatTemplateKwargs: { enable_thinking: false },
  };
}

export interface SummaryOptions {
  /** Most tokens the summary may have. */
  maxTokens: number;
  /** Characters per token of this conversation (from a measured prompt): sizes the transcript cuts. */
  charsPerToken: number;
  /** The engine job's time limit; 0 = none. */
  timeoutSec: number;
  /** Aborted when the client goes away: the summary job is cancelled. */
  signal?: AbortSignal;
}

export type SummaryResult = { text: string; tokens: number } | { error: string };

/** The summarization prompt of `messages`, cut until it leaves `maxTokens` of room in the context; null when it cannot be. */
async function fittedPrompt(runtime: ModelRuntime, messages: readonly ChatMessage[], opts: SummaryOptions): Promise<ChatPrompt | null> {
  // Prompt + summary must fit the context: prompts are measured against what is left.
  const limit = runtime.maxSeqLen - opts.maxTokens;
  if (limit < MIN_SUMMARY_PROMPT_TOKENS) return null;
  const entries = messages.map(transcriptEntry);
  let maxChars = Infinity;
  for (let attempt = 0; attempt < FIT_ATTEMPTS; attempt++) {
    const fitted = fitEntries(entries, maxChars);
    const prompt = await measureChatPrompt(summaryInput(fitted), runtime, limit);
    if (prompt !== null) return prompt;
    // Too long: aim at what the context holds, and shrink by a third at least each time.
    const chars = fitted.reduce((n, e) => n + e.length, 0);
    maxChars = Math.floor(Math.min(chars * 0.67, limit * opts.charsPerToken * 0.85));
  }
  return null;
}

/** Has the served model summarize `messages` (a failure is a result, so the caller can fall back). */
export async function writeSummary(runtime: ModelRuntime, messages: readonly ChatMessage[], opts: SummaryOptions): Promise<SummaryResult> {
  const prompt = await fittedPrompt(runtime, messages, opts);
  if (prompt === null) return { error: 'the summarization prompt does not fit the context' };
  if (opts.signal?.aborted) return { error: 'the client went away' };
  const format = REASONING_FORMATS[runtime.chat.reasoningFormat ?? 'think'];
  const startsInside = promptOpensReasoning(prompt.text, format);
  const job: GenerationRequest = {
    promptTokens: prompt.tokens,
    maxTokens: opts.maxTokens,
    sampling: GREEDY,
    stopTokenIds: runtime.eosTokenIds,
    timeoutMs: opts.timeoutSec * 1000,
    logprobs: 0,
  };
  let handle: GenerationHandle;
  try {
    handle = runtime.engine.submit(job);
  } catch (err) {
    return { error: `the engine refused the summary job: ${(err as Error).message}` };
  }
  const cancel = (): void => handle.cancel();
  opts.signal?.addEventListener('abort', cancel, { once: true });
  const pipeline = new OutputPipeline({
    decoder: runtime.tokenizer,
    skipSpecialTokens: true,
    stop: [],
    stopTokenIds: job.stopTokenIds,
    // Reasoning is split off and dropped; no tool-call parser: the summary is text.
    stages: textStages({
      reasoning: runtime.chat.reasoning || startsInside,
      startsInReasoning: startsInside,
      reasoningFormat: format,
      toolCallParser: null,
      tools: [],
    }),
  });
  let text = '';
  let tokens = 0;
  try {
    for await (const step of runSequence(handle, pipeline)) {
      tokens += step.ids.length;
      for (const e of step.events) if (e.type === 'text') text += e.text;
      // A summary cut off by its token limit or the time limit is still a summary.
      if (step.done?.engineReason === 'error') return { error: `the summary job failed: ${step.done.message ?? 'unknown error'}` };
    }
  } finally {
    opts.signal?.removeEventListener('abort', cancel);
  }
  text = text.trim();
  return text === '' ? { error: 'the model wrote an empty summary' } : { text, tokens };
}
