// The Responses stream: every frame a named event (`event: <type>`, `data: {type, sequence_number,
// …}`), numbered from 0. response.created and response.in_progress with the response so far; per
// output item output_item.added, its content_part.added, deltas (output_text / reasoning_text /
// function_call_arguments), their .done, content_part.done and output_item.done; then
// response.completed, response.incomplete (max_output_tokens) or response.failed, the last frame.
import type { OutputEvent } from '../../chat/events.js';
import type { ApiError } from '../../common/api-error.js';
import type { SseFrame, StreamEncoder, TokenUsage } from '../stream.js';
import { finishStatus, responseError, type OutputItems, type ResponseEvent, type ResponseObject, type ResponseUsage } from './output.js';

export interface ResponseStreamHooks {
  /** The response object in a state: the stream's in_progress snapshot, and the final one. */
  snapshot(state: {
    status: ResponseObject['status'];
    usage: ResponseUsage | null;
    error?: { code: string; message: string } | null;
    incompleteReason?: string | null;
  }): ResponseObject;
  /** The final response object, once (the route stores it). */
  done(response: ResponseObject): void;
  /** Usage from the token counts. */
  usage(counts: TokenUsage | null): ResponseUsage | null;
}

export class ResponseStreamEncoder implements StreamEncoder {
  private sequence = 0;

  constructor(
    private readonly items: OutputItems,
    private readonly hooks: ResponseStreamHooks,
  ) {}

  start(): SseFrame[] {
    const response = this.hooks.snapshot({ status: 'in_progress', usage: null });
    return this.frames([
      { type: 'response.created', response },
      { type: 'response.in_progress', response },
    ]);
  }

  step(_index: number, events: OutputEvent[]): SseFrame[] {
    return this.frames(this.items.push(events));
  }

  finish(usage: TokenUsage | null): SseFrame[] {
    const out = this.items.close();
    const { status, incompleteReason } = finishStatus(this.items.finishReason);
    const response = this.hooks.snapshot({ status, usage: this.hooks.usage(usage), incompleteReason });
    this.hooks.done(response);
    const type = status === 'incomplete' ? 'response.incomplete' : status === 'failed' ? 'response.failed' : 'response.completed';
    out.push({ type, response });
    return this.frames(out);
  }

  error(err: ApiError): SseFrame[] {
    const out = this.items.close();
    const response = this.hooks.snapshot({ status: 'failed', usage: null, error: responseError(err) });
    this.hooks.done(response);
    out.push({ type: 'response.failed', response });
    return this.frames(out);
  }

  private frames(events: ResponseEvent[]): SseFrame[] {
    return events.map((e) => ({ event: e.type, data: { ...e, sequence_number: this.sequence++ } }));
  }
}
