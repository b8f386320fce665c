// The prompt of a generating chat route (chat completions, Messages, Responses): the request's
// images loaded (src/server/images/: a 400 for a bad one, or for any on a text-only model), then its
// chat rendered as it is, or, under --auto-compact, compacted once it passes the threshold
// (src/chat/auto-compact.ts). A compacted prompt is announced to the client in the response
// header COMPACTED_HEADER (set before the body or the SSE stream starts, so both carry it) and in
// the log by one info line with the request id.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { buildChatPromptCompacting, type CompactionReport } from '../chat/auto-compact.js';
import type { ModelRuntime } from '../chat/model-runtime.js';
import { buildChatPrompt, type ChatPrompt } from '../chat/prompt.js';
import type { ChatRequest } from '../chat/request.js';
import { withImageTokens } from '../chat/image-prompt.js';
import type { AppOptions } from './app.js';
import { loadChatImages } from './images/load.js';

/** `<tokens before> -> <tokens after>` (before as `>=N` when it was longer than could be counted), then the counts. */
export const COMPACTED_HEADER = 'x-svc-context-compacted';

/** The header's value: `1873 -> 598; summarized=14; omitted=0; truncated=0`. */
export function compactedHeaderValue(r: CompactionReport): string {
  const before = r.exactBefore ? `${r.tokensBefore}` : `>=${r.tokensBefore}`;
  return `${before} -> ${r.tokensAfter}; summarized=${r.summarizedMessages}; omitted=${r.omittedMessages}; truncated=${r.truncatedToolOutputs}`;
}

/**
 * The chat and its prompt as the route runs them. `reserveTokens`: the completion length the
 * request insists on (chat completions' max_tokens), which compaction leaves room for.
 */
export async function routeChatPrompt(
  chat: ChatRequest,
  runtime: ModelRuntime,
  options: AppOptions,
  request: FastifyRequest,
  reply: FastifyReply,
  reserveTokens: number | null,
): Promise<{ chat: ChatRequest; prompt: ChatPrompt }> {
  // Images first: fetched and decoded (or the request refused) before any prompt work.
  chat = await loadChatImages(chat, runtime, options, request.log);
  const fraction = options.autoCompact ?? null;
  if (fraction === null) return { chat, prompt: withImageTokens(chat, await buildChatPrompt(chat, runtime), runtime) };
  // A client that hangs up while the summary is written cancels it.
  const gone = new AbortController();
  const onClose = (): void => {
    if (!reply.raw.writableFinished) gone.abort();
  };
  reply.raw.once('close', onClose);
  let result;
  try {
    result = await buildChatPromptCompacting(chat, runtime, {
      fraction,
      reserveTokens,
      timeoutSec: options.requestTimeoutSec,
      signal: gone.signal,
    });
  } finally {
    reply.raw.off('close', onClose);
  }
  const r = result.report;
  if (r !== null) {
    reply.header(COMPACTED_HEADER, compactedHeaderValue(r));
    request.log.info(
      {
        tokensBefore: r.tokensBefore,
        ...(r.exactBefore ? {} : { tokensBeforeAtLeast: true }),
        tokensAfter: r.tokensAfter,
        threshold: r.threshold,
        target: r.target,
        summarizedTurns: r.summarizedTurns,
        summarizedMessages: r.summarizedMessages,
        summaryTokens: r.summaryTokens,
        summaryReused: r.summaryReused,
        omittedMessages: r.omittedMessages,
        truncatedToolOutputs: r.truncatedToolOutputs,
        ...(r.summaryError !== null ? { summaryError: r.summaryError } : {}),
      },
      'context compacted',
    );
  }
  return { chat: result.request, prompt: withImageTokens(result.request, result.prompt, runtime) };
}
