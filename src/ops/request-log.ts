// What every request ends with: its outcome (status, route, timing and, for a generation, the
// token counts), worked out once when its response closes and handed to the sinks that want it
// (the request log line here, the metrics in metrics.ts).
//
// The hook is registered at the top of buildApp, before auth and the rate limiter, so requests
// answered early (401, 429, 404, 413, a 400 from the body parser or the schema) end here too. A
// response "ends" when it is fully written ('finish'), or when its connection closes first (the
// client went away: `aborted`). Connections fastify refuses before routing (malformed HTTP, a
// header timeout) never reach onRequest and are not seen.
//
// The log line: one JSON record per request, never per token, never tokens or message contents,
// never an API key or a query string. At info for every request, except the answers of routes
// marked `config.polled` (/health, /metrics: probes and scrapers call them every few seconds)
// that are routine — 2xx, or 503 while no model is loaded —, which are at debug (a refused
// scrape, 401 or 429, is at info).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** What a generation request reports (request.generation; set by the server when its jobs are admitted). */
export interface GenerationLog {
  promptTokens: number;
  /** Of promptTokens, those whose KV came from the prefix cache. */
  cachedTokens: number;
  completionTokens: number;
  /** ms from request arrival to the first generated token; null when none came. */
  ttftMs: number | null;
  /** ms from the first generated token to the last (0 while only one step has brought tokens). */
  decodeMs: number;
  /** Tokens that came after each sequence's first step (the ones decodeMs covers). */
  decodeTokens: number;
  /** Tool names the output called, in order. */
  toolsUsed: string[];
  /** Per sequence: stop, length, tool_calls, … ('' while unfinished). */
  finishReasons: string[];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Polled by probes or scrapers (/health, /metrics): its routine answers (2xx, 503) are logged at debug, not info. */
    polled?: boolean;
  }
  interface FastifyRequest {
    generation: GenerationLog | null;
  }
}

/** Status reported for a request whose client left before any response header was sent (nginx's "client closed request"). */
export const CLIENT_CLOSED = 499;

/** How a request ended. */
export interface RequestOutcome {
  method: string;
  /** The matched route's pattern (`/v1/models/:model`); null when no route matched (404). */
  route: string | null;
  /** The path, without the query string. */
  path: string;
  /** The status sent, or CLIENT_CLOSED when the client left before it was. */
  status: number;
  /** The response was cut off: the connection closed before it was fully written. */
  aborted: boolean;
  /** Seconds from the request's arrival to the end of its response. */
  elapsedSec: number;
  polled: boolean;
  generation: GenerationLog | null;
}

export type OutcomeSink = (outcome: RequestOutcome, request: FastifyRequest) => void;

function outcomeOf(request: FastifyRequest, reply: FastifyReply, aborted: boolean): RequestOutcome {
  const config = request.routeOptions.config;
  return {
    method: request.method,
    // The 404 handler's route has no url.
    route: request.routeOptions.url ?? null,
    path: request.url.split('?')[0]!,
    status: reply.raw.headersSent ? reply.statusCode : CLIENT_CLOSED,
    aborted,
    elapsedSec: reply.elapsedTime / 1000,
    polled: config?.polled === true,
    generation: request.generation,
  };
}

/**
 * Registers the outcome hook on `app` (the root instance, before any other onRequest hook):
 * every sink is called once per request when its response closes.
 */
export function registerRequestOutcome(app: FastifyInstance, sinks: OutcomeSink[]): void {
  app.decorateRequest('generation', null);
  app.addHook('onRequest', async (request, reply) => {
    let done = false;
    const end = (aborted: boolean): void => {
      if (done) return;
      done = true;
      const outcome = outcomeOf(request, reply, aborted);
      for (const sink of sinks) sink(outcome, request);
    };
    reply.raw.once('finish', () => end(false));
    reply.raw.once('close', () => end(!reply.raw.writableFinished));
  });
}

/** The log line's fields (exported for tests): never contents, tokens, keys or query strings. */
export function logFields(o: RequestOutcome, model: string): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    model,
    method: o.method,
    route: o.route,
    url: o.path,
    status: o.status,
    elapsedMs: Math.round(o.elapsedSec * 1000),
  };
  if (o.aborted) fields.aborted = true;
  const g = o.generation;
  if (g !== null) {
    fields.promptTokens = g.promptTokens;
    fields.completionTokens = g.completionTokens;
    fields.ttftMs = g.ttftMs;
    const tps = decodeThroughput(g);
    fields.decodeTokPerSec = tps === null ? null : Math.round(tps * 10) / 10;
    fields.toolsUsed = g.toolsUsed;
    fields.finish = g.finishReasons;
  }
  return fields;
}

/** Tokens per second after the first token (decodeTokens / decodeMs); null when there was no second step. */
export function decodeThroughput(g: GenerationLog): number | null {
  return g.decodeTokens > 0 && g.decodeMs > 0 ? g.decodeTokens / (g.decodeMs / 1000) : null;
}

/** The sink that writes the request log line (with the request's logger, so it carries reqId). */
/** The per-request log line; `model` is read per request (a model swap renames what follows). */
export function requestLogSink(model: () => string): OutcomeSink {
  return (o, request) => {
    const log = request.log;
    const message = o.aborted ? 'request aborted by the client' : 'request completed';
    const fields = logFields(o, model());
    if (o.polled && ((o.status >= 200 && o.status < 300) || o.status === 503)) log.debug(fields, message);
    else log.info(fields, message);
  };
}
