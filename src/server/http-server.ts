// The Node HTTP server under fastify, with the connection-level limits (SVC_HEADERS_TIMEOUT_S,
// SVC_REQUEST_RECEIVE_TIMEOUT_S, SVC_KEEP_ALIVE_TIMEOUT_S, SVC_MAX_REQUESTS_PER_SOCKET,
// SVC_MAX_CONNECTIONS) and the answers to what never reaches a route: malformed HTTP (400),
// headers too large (431) and requests not received in time (408) are written on the socket in
// the error shape of the app's root (OpenAI's), with `Connection: close`.
//
// None of these timeouts covers a response: Node's requestTimeout stops counting once the whole
// request is in, and the socket inactivity timeout stays off, so a non-streamed completion may
// compute for minutes on a silent socket (--request-timeout is the limit on generation).
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { ApiError, type ErrorRenderer } from '../common/api-error.js';
import { readEnv } from '../common/env.js';

export interface HttpLimits {
  /** Request line and headers (SVC_HEADERS_TIMEOUT_S); 0 = none. */
  readonly headersTimeoutSec: number;
  /** The whole request, body included (SVC_REQUEST_RECEIVE_TIMEOUT_S); 0 = none. */
  readonly requestReceiveTimeoutSec: number;
  /** No byte for this long while a body is being received (SVC_BODY_IDLE_TIMEOUT_S); 0 = none. */
  readonly bodyIdleTimeoutSec: number;
  /** Idle keep-alive connections (SVC_KEEP_ALIVE_TIMEOUT_S). */
  readonly keepAliveTimeoutSec: number;
  /** SVC_MAX_REQUESTS_PER_SOCKET; 0 = none. */
  readonly maxRequestsPerSocket: number;
  /** SVC_MAX_CONNECTIONS; 0 = none. */
  readonly maxConnections: number;
}

/** The limits from the environment (an invalid value throws EnvError naming the variable). */
export function httpLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): HttpLimits {
  return {
    headersTimeoutSec: readEnv('SVC_HEADERS_TIMEOUT_S', env),
    requestReceiveTimeoutSec: readEnv('SVC_REQUEST_RECEIVE_TIMEOUT_S', env),
    bodyIdleTimeoutSec: readEnv('SVC_BODY_IDLE_TIMEOUT_S', env),
    keepAliveTimeoutSec: readEnv('SVC_KEEP_ALIVE_TIMEOUT_S', env),
    maxRequestsPerSocket: readEnv('SVC_MAX_REQUESTS_PER_SOCKET', env),
    maxConnections: readEnv('SVC_MAX_CONNECTIONS', env),
  };
}

/** A request (or its headers) not received within the limits. */
export function clientTimeout(message: string): ApiError {
  return new ApiError(408, message, { code: 'client_timeout', headers: { connection: 'close' } });
}

/** What a 'clientError' from Node's HTTP parser or its timeout checks is answered with. */
export function clientErrorToApiError(err: NodeJS.ErrnoException): ApiError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return clientTimeout(
      'The request was not received in time (SVC_HEADERS_TIMEOUT_S for the headers, SVC_REQUEST_RECEIVE_TIMEOUT_S for the whole request).',
    );
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return new ApiError(431, 'The request headers are too large (16 KiB at most, all headers together).', {
      code: 'headers_too_large',
    });
  }
  return new ApiError(400, `Malformed HTTP request (${err.code ?? 'parse error'}).`, { code: 'malformed_http' });
}

/** The raw HTTP/1.1 response for an error answered outside fastify. */
export function rawErrorResponse(err: ApiError, render: ErrorRenderer): string {
  const body = JSON.stringify(render(err));
  return (
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** Refused connections are logged at most this often. */
const DROP_LOG_INTERVAL_MS = 10_000;

/**
 * fastify's `serverFactory` (used for every address fastify binds, `localhost`'s second one
 * included) and its `clientErrorHandler`: the same function answers both registrations once.
 */
export function httpServer(limits: HttpLimits, log: FastifyBaseLogger, render: ErrorRenderer) {
  const answered = new WeakSet<Socket>();
  function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
    if (answered.has(socket)) return;
    answered.add(socket);
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || socket.destroyed) {
      socket.destroy();
      return;
    }
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (socket.writable && (!inFlight || !inFlight.headersSent)) {
      const api = clientErrorToApiError(err);
      log.debug({ code: err.code, status: api.status }, 'client error');
      socket.end(rawErrorResponse(api, render));
      // The answer is flushed, then the socket closes even if the client never reads it.
      setTimeout(() => socket.destroy(), 2000).unref();
    } else {
      socket.destroy();
    }
  }

  let dropped = 0;
  let lastLog = 0;
  function onDrop(): void {
    dropped++;
    const now = Date.now();
    if (now - lastLog < DROP_LOG_INTERVAL_MS) return;
    log.warn(
      `connection limit reached: refused ${dropped} connection${dropped === 1 ? '' : 's'} ` +
        `(SVC_MAX_CONNECTIONS=${limits.maxConnections} open at most; logged at most every ${DROP_LOG_INTERVAL_MS / 1000} s)`,
    );
    dropped = 0;
    lastLog = now;
  }

  function serverFactory(handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
    const requestMs = limits.requestReceiveTimeoutSec * 1000;
    // Node refuses a header timeout above the request timeout.
    let headersMs = limits.headersTimeoutSec * 1000;
    if (requestMs > 0 && (headersMs === 0 || headersMs > requestMs)) headersMs = requestMs;
    // Node checks both timeouts every `connectionsCheckingInterval` (30 s by default): often
    // enough that a timeout is not overshot by more than a second.
    const shortest = Math.min(...[headersMs, requestMs].filter((ms) => ms > 0), 2000);
    const server = createServer(
      {
        headersTimeout: headersMs,
        requestTimeout: requestMs,
        connectionsCheckingInterval: Math.max(100, Math.floor(shortest / 2)),
        keepAliveTimeout: limits.keepAliveTimeoutSec * 1000,
        // A request without Host is answered by the Host check (403 on a loopback bind) in the
        // protocol's shape, not by Node's bare 400.
        requireHostHeader: false,
      },
      handler,
    );
    server.timeout = 0;
    server.keepAliveTimeout = limits.keepAliveTimeoutSec * 1000;
    if (limits.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
    if (limits.maxConnections > 0) {
      server.maxConnections = limits.maxConnections;
      server.on('drop', onDrop);
    }
    server.on('clientError', onClientError);
    return server;
  }

  return { serverFactory, clientErrorHandler: onClientError };
}
