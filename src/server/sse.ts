// Server-sent events as the OpenAI protocols use them: `data: <json>\n\n` frames ending with
// `data: [DONE]\n\n`. The frames go through a stream handed to reply.send(), so fastify still owns
// the response (its onResponse hooks run when the stream ends).
import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TokenLogprob } from '../engine/types.js';
import type { OutputEvent } from '../chat/events.js';
import { generationError, toApiError } from './errors.js';
import type { IndexedStep } from './generate.js';

export class SseStream {
  private readonly body = new PassThrough();
  private ended = false;

  /** Sends the headers and starts streaming; the reply is finished by end(). */
  constructor(reply: FastifyReply) {
    reply
      .header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-cache')
      // Proxies such as nginx would otherwise buffer the whole stream.
      .header('x-accel-buffering', 'no')
      .send(this.body);
  }

  /** False once the client went away or the stream was ended: nothing more will be delivered. */
  get open(): boolean {
    return !this.ended && !this.body.destroyed;
  }

  send(frame: unknown): void {
    if (this.open) this.body.write(`data: ${JSON.stringify(frame)}\n\n`);
  }

  /** Writes the closing [DONE] frame and ends the response. */
  end(): void {
    if (!this.open) return;
    this.body.end('data: [DONE]\n\n');
    this.ended = true;
  }
}

/** A protocol's stream encoder: opening frames, frames per step, the optional usage frame. */
export interface StreamEncoder {
  start(): unknown[];
  step(index: number, events: OutputEvent[], logprobs: TokenLogprob[]): unknown[];
  usage(promptTokens: number, completionTokens: number): unknown | null;
}

/**
 * Pumps a request's steps to the client. Headers are already out, so failures can no longer
 * change the status: an engine error or a bug becomes a final `data: {error: …}` frame, then
 * [DONE]. If the client goes away the loop is left, which cancels the engine jobs.
 */
export async function streamSteps(
  sse: SseStream,
  encoder: StreamEncoder,
  steps: AsyncGenerator<IndexedStep>,
  request: FastifyRequest,
): Promise<void> {
  try {
    for (const frame of encoder.start()) sse.send(frame);
    for await (const { index, step } of steps) {
      if (!sse.open) return;
      for (const frame of encoder.step(index, step.events, step.logprobs)) sse.send(frame);
      const failed = generationError(step.done);
      if (failed) {
        sse.send(failed.toBody());
        return;
      }
    }
    const g = request.generation;
    const usage = g ? encoder.usage(g.promptTokens, g.completionTokens) : null;
    if (usage !== null) sse.send(usage);
  } catch (err) {
    request.log.error({ err }, 'stream failed');
    sse.send(toApiError(err, 0).toBody());
  } finally {
    sse.end();
  }
}
