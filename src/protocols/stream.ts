// What a protocol's stream encoder produces: server-sent events, each an optional `event:` name
// and one data payload. The encoder decides every frame, the terminator included (OpenAI ends
// with `data: [DONE]`; Anthropic and Responses end with their last typed event); the server only
// writes them (src/server/sse.ts).
import type { ApiError } from '../common/api-error.js';
import type { OutputEvent } from '../chat/events.js';
import type { TokenLogprob } from '../engine/types.js';

/** One event: `event: <event>` when set, then `data: <JSON of data>`, or `data: <text>` as it is. */
export type SseFrame = { event?: string; data: unknown } | { event?: string; text: string };

/** Token counts of a finished request, for the protocol's usage report. */
export interface TokenUsage {
  promptTokens: number;
  /** Of promptTokens, those whose KV came from the prefix cache. */
  cachedTokens: number;
  completionTokens: number;
}

/** A protocol's stream: frames to open, per step of sequence `index`, to close, or to report a failure. */
export interface StreamEncoder {
  start(): SseFrame[];
  step(index: number, events: OutputEvent[], logprobs: TokenLogprob[]): SseFrame[];
  /** Every sequence finished: the closing frames (usage, terminator). Null usage: no counts known. */
  finish(usage: TokenUsage | null): SseFrame[];
  /** The generation failed after the headers went out: the protocol's error frame(s), then its terminator. */
  error(err: ApiError): SseFrame[];
  /** Frames to send when the stream has been silent for `everyMs` (Anthropic's ping); none when absent. */
  readonly keepAlive?: { everyMs: number; frames(): SseFrame[] };
}
