// --dump: every exchange — the request and its response, or its stream as sent — as one record in
// the dump file (dump-file.ts), written when the response ends or its connection closes. Hooked in
// at the top of buildApp next to the request outcome (request-log.ts), so requests refused early
// (401, 403, 404, 429, a body that did not parse) are recorded too; routes marked `polled`
// (/health, /metrics: probes and scrapers) are not.
//
// Credentials never reach the file: Authorization, Proxy-Authorization, x-api-key and Cookie are
// removed from the request's headers, Set-Cookie from the response's.
//
// The response is captured as it is written. A streamed body (SSE) passes through a tap, a
// Transform that keeps a copy of each chunk and hands it on at once, joined to the route's stream
// with pipeline() so a client that leaves still ends the route's stream (and its generation); the
// client's stream is neither delayed nor buffered. A copy is kept up to MAX_CAPTURE_BYTES.
import { pipeline, Readable, Transform } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DumpFile } from './dump-file.js';

/** Most response bytes kept per exchange; the record says `truncated` past it. */
export const MAX_CAPTURE_BYTES = 16 * 1024 * 1024;

const SECRET_REQUEST_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'cookie']);
const SECRET_RESPONSE_HEADERS = new Set(['set-cookie']);

/** One SSE frame as sent: its event name (when it has one) and its data, parsed when JSON. */
export interface DumpedEvent {
  event?: string;
  data: unknown;
}

/** One line of the dump file. */
export interface DumpRecord {
  /** When the request arrived (ISO 8601). */
  time: string;
  /** The request id (the log lines' reqId). */
  id: string;
  method: string;
  url: string;
  headers: Record<string, unknown>;
  /** The parsed JSON body; null when there was none or it did not parse. */
  body: unknown;
  /** The status sent; null when the client left before it was. */
  status: number | null;
  responseHeaders: Record<string, unknown>;
  /** A JSON response parsed, any other as text. */
  response?: unknown;
  /** An event stream's frames, in order, instead of `response`. */
  events?: DumpedEvent[];
  /** The response was longer than MAX_CAPTURE_BYTES: what is here is its beginning. */
  truncated?: true;
  /** The connection closed before the response was fully written. */
  aborted?: true;
  durationMs: number;
}

class Capture {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  truncated = false;

  add(chunk: Buffer | string): void {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const room = MAX_CAPTURE_BYTES - this.bytes;
    if (b.length > room) this.truncated = true;
    if (room <= 0) return;
    const kept = b.length > room ? b.subarray(0, room) : b;
    this.chunks.push(kept);
    this.bytes += kept.length;
  }

  /** A pass-through stream that copies what goes through it. */
  tap(): Transform {
    return new Transform({
      transform: (chunk: Buffer | string, _encoding, done) => {
        this.add(chunk);
        done(null, chunk);
      },
    });
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The response being copied for --dump; null when not dumped. */
    dumpCapture: unknown;
  }
}

function without(headers: Record<string, unknown>, secret: Set<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) if (!secret.has(name.toLowerCase()) && value !== undefined) out[name] = value;
  return out;
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The frames of an event stream (`event:` and `data:` lines, frames ending in a blank line). */
export function sseEvents(text: string): DumpedEvent[] {
  const events: DumpedEvent[] = [];
  for (const frame of text.split('\n\n')) {
    if (frame.trim() === '') continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of frame.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trimStart();
      else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    }
    events.push({ ...(event !== undefined ? { event } : {}), data: jsonOrText(data.join('\n')) });
  }
  return events;
}

function recordOf(request: FastifyRequest, reply: FastifyReply, capture: Capture, time: string, aborted: boolean): DumpRecord {
  // fastify's view: the headers it hands to writeHead are not on the raw response.
  const responseHeaders = without(reply.getHeaders(), SECRET_RESPONSE_HEADERS);
  const contentType = String(reply.getHeader('content-type') ?? '');
  const text = capture.text();
  const record: DumpRecord = {
    time,
    id: request.id,
    method: request.method,
    url: request.url,
    headers: without(request.headers, SECRET_REQUEST_HEADERS),
    body: request.body ?? null,
    status: reply.raw.headersSent ? reply.statusCode : null,
    responseHeaders,
    durationMs: Math.round(reply.elapsedTime * 10) / 10,
  };
  if (contentType.startsWith('text/event-stream')) record.events = sseEvents(text);
  else if (text !== '') record.response = contentType.includes('json') && !capture.truncated ? jsonOrText(text) : text;
  if (capture.truncated) record.truncated = true;
  if (aborted) record.aborted = true;
  return record;
}

/**
 * Registers the dump hooks on `app` (the root instance, before auth and the other onRequest
 * hooks); nothing when `dump` is null.
 */
export function registerDump(app: FastifyInstance, dump: DumpFile | null): void {
  if (dump === null) return;
  app.decorateRequest('dumpCapture', null);
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.polled) return;
    const capture = new Capture();
    request.dumpCapture = capture;
    const time = new Date().toISOString();
    let done = false;
    const end = (aborted: boolean): void => {
      if (done) return;
      done = true;
      dump.write(recordOf(request, reply, capture, time, aborted));
    };
    reply.raw.once('finish', () => end(false));
    reply.raw.once('close', () => end(!reply.raw.writableFinished));
  });
  app.addHook('onSend', async (request, _reply, payload) => {
    const capture = request.dumpCapture;
    if (!(capture instanceof Capture)) return payload;
    if (payload instanceof Readable) {
      const tap = capture.tap();
      // Either side ending early (the client left, the route failed) ends the other.
      pipeline(payload, tap, () => undefined);
      return tap;
    }
    if (typeof payload === 'string' || Buffer.isBuffer(payload)) capture.add(payload);
    return payload;
  });
}
