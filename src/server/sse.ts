// Server-sent events: the frames a protocol's StreamEncoder produces, written as
// `event: <name>\n` (when the frame has one) and `data: <payload>\n\n`. What the frames are,
// the terminator included, is the encoder's business. The frames go through a stream handed to
// reply.send(), so fastify still owns the response (its onResponse hooks run when the stream ends).
import { PassThrough } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { generationError } from '../common/api-error.js';
import type { SseFrame, StreamEncoder } from '../protocols/stream.js';
import { toApiError } from './framework-errors.js';
import { tokenUsage, type IndexedStep } from './generate.js';

/** The bytes of one frame. Text payloads with line breaks take one `data:` line per line. */
export function sseBytes(frame: SseFrame): string {
  const event = frame.event === undefined ? '' : `event: ${frame.event}\n`;
  const data = 'text' in frame ? frame.text.split('\n').join('\ndata: ') : JSON.stringify(frame.data);
  return `${event}data: ${data}\n\n`;
}

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

  send(frame: SseFrame): void {
    if (this.open) this.body.write(sseBytes(frame));
  }

  /** Ends the response; it writes nothing itself (the encoder's last frames are the terminator). */
  end(): void {
    if (!this.open) return;
    this.body.end();
    this.ended = true;
  }
}

/**
 * Pumps a request's steps to the client through the protocol's encoder. Headers are already out,
 * so failures can no longer change the status: an engine error or a bug becomes the encoder's
 * error frames. If the client goes away the loop is left, which cancels the engine jobs.
 */
export async function streamSteps(
  sse: SseStream,
  encoder: StreamEncoder,
  steps: AsyncGenerator<IndexedStep>,
  request: FastifyRequest,
): Promise<void> {
  let quiet = true;
  const send = (frames: SseFrame[]): void => {
    frames.forEach((frame) => sse.send(frame));
    if (frames.length > 0) quiet = false;
  };
  // While the model is silent (queued, prefilling), the protocol's keep-alive frames.
  const keepAlive = encoder.keepAlive;
  const timer =
    keepAlive === undefined
      ? null
      : setInterval(() => {
          if (quiet) keepAlive.frames().forEach((frame) => sse.send(frame));
          quiet = true;
        }, keepAlive.everyMs);
  timer?.unref();
  try {
    send(encoder.start());
    for await (const { index, step } of steps) {
      if (!sse.open) return;
      const failed = generationError(step.done);
      // A cut-off or failed sequence ends with the error frame alone, not a finish reason first.
      const events = failed ? step.events.filter((e) => e.type !== 'finish') : step.events;
      send(encoder.step(index, events, step.logprobs));
      if (failed) {
        send(encoder.error(failed));
        return;
      }
    }
    const g = request.generation;
    send(encoder.finish(g ? tokenUsage(g) : null));
  } catch (err) {
    request.log.error({ err }, 'stream failed');
    send(encoder.error(toApiError(err, 0)));
  } finally {
    if (timer !== null) clearInterval(timer);
    sse.end();
  }
}
