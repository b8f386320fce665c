// What both OpenAI streams (chat and legacy completions) share: each chunk is a plain `data:`
// frame, an optional usage chunk closes the stream, and `data: [DONE]` terminates it, after an
// error frame too.
import type { ApiError } from '../../common/api-error.js';
import type { SseFrame } from '../stream.js';
import { renderOpenAiError } from './errors.js';

export const DONE: SseFrame = { text: '[DONE]' };

export function dataFrames(chunks: unknown[]): SseFrame[] {
  return chunks.map((data) => ({ data }));
}

/** The usage chunk (when the request asked for one), then [DONE]. */
export function closingFrames(usageChunk: unknown | null): SseFrame[] {
  return usageChunk === null ? [DONE] : [{ data: usageChunk }, DONE];
}

/** A failure after the headers went out: the error body as a frame, then [DONE]. */
export function errorFrames(err: ApiError): SseFrame[] {
  return [{ data: renderOpenAiError(err) }, DONE];
}
