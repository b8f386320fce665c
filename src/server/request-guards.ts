// What every request passes before a route sees it, besides auth and rate limits (src/ops/):
//
// - Host check (DNS rebinding): when the server is bound to a loopback address, the Host header
//   must name loopback (localhost, 127.x.x.x, [::1], any port) or be in --allowed-hosts; 403
//   otherwise, /health included. Bound to any other address, any Host is accepted.
// - CORS: none unless --allowed-origins (then @fastify/cors for those origins; `*` = any).
// - JSON only: a request with a body must say Content-Type application/json or */*+json, with no
//   charset other than UTF-8 (415 otherwise; a body without a Content-Type too). That refuses
//   the "simple" requests a cross-origin page can send without a preflight (text/plain, form
//   types, none at all).
// - Body idle timeout: a body that stops arriving for SVC_BODY_IDLE_TIMEOUT_S is cut with a 408.
// - The body parser: UTF-8 (invalid bytes → 400), JSON, nesting depth (json-limits.ts).
import { PassThrough, type Readable } from 'node:stream';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../common/api-error.js';
import { checkBodyDepth } from '../protocols/json-limits.js';
import { invalidJson } from './framework-errors.js';
import { clientTimeout } from './http-server.js';
import { COMPACTED_HEADER } from './chat-prompt.js';

// ---------------------------------------------------------------------------------------------
// Host check

/** The host name of a Host header (lower case, port and IPv6 brackets' port removed); null if malformed. */
export function hostName(header: string): string | null {
  const h = header.trim().toLowerCase();
  if (h === '') return null;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end < 0) return null;
    const rest = h.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return null;
    return h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  if (colon < 0) return h;
  if (!/^:\d{1,5}$/.test(h.slice(colon))) return null;
  return h.slice(0, colon);
}

const IPV4_LOOPBACK = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** A name only this machine answers to. */
export function isLoopbackName(name: string): boolean {
  return name === 'localhost' || name === '[::1]' || IPV4_LOOPBACK.test(name);
}

/** A bound address that only this machine can reach. */
export function isLoopbackAddress(address: string): boolean {
  return address === '::1' || IPV4_LOOPBACK.test(address) || address === '::ffff:127.0.0.1' || address === 'localhost';
}

/**
 * Whether `host` (the Host header) may reach a server bound to loopback: loopback names, and the
 * --allowed-hosts entries (`name`, `.domain` for it and its subdomains, `*` for any).
 */
export function hostAllowed(host: string | undefined, allowed: readonly string[]): boolean {
  if (allowed.includes('*')) return true;
  const name = host === undefined ? null : hostName(host);
  if (name === null) return false;
  if (isLoopbackName(name)) return true;
  return allowed.some((entry) => {
    const e = entry.toLowerCase();
    if (e.startsWith('.')) return name === e.slice(1) || name.endsWith(e);
    return name === (hostName(e) ?? e);
  });
}

function hostNotAllowed(host: string | undefined): ApiError {
  const shown = host === undefined ? 'no Host header' : `the Host header '${host.slice(0, 200)}'`;
  return new ApiError(
    403,
    `Refused ${shown}: the server is bound to a loopback address and answers only requests for localhost, 127.0.0.1 or [::1] ` +
      '(this stops DNS rebinding); to reach it under another name, start it with --allowed-hosts NAME.',
    { code: 'host_not_allowed' },
  );
}

// ---------------------------------------------------------------------------------------------
// Content type and body

/** Whether the request says it carries a body. */
function hasBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function unsupportedMediaType(detail: string): ApiError {
  return new ApiError(
    415,
    `Unsupported Content-Type: ${detail}. Request bodies must be JSON sent as 'Content-Type: application/json' (UTF-8).`,
    { code: 'unsupported_media_type', headers: { connection: 'close' } },
  );
}

/** 415 unless `header` is application/json or *\/*+json, with no charset but UTF-8. */
export function checkJsonContentType(header: string | undefined): void {
  if (header === undefined || header.trim() === '') throw unsupportedMediaType('the request has a body but no Content-Type');
  const [type = '', ...params] = header.split(';').map((p) => p.trim());
  const media = type.toLowerCase();
  if (!/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(media) || (media !== 'application/json' && !media.endsWith('+json'))) {
    throw unsupportedMediaType(`'${header.slice(0, 100)}'`);
  }
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') throw unsupportedMediaType(`charset '${charset.slice(0, 40)}' (only UTF-8 is accepted)`);
  }
}

/**
 * Passes the body through, cutting it with a 408 after `ms` without a byte. The timer ends with
 * the body, and with the response (a 413 or 415 sent before the body was read).
 */
function bodyIdleGuard(payload: Readable, response: ServerResponse, ms: number, seconds: number): Readable {
  const out = new PassThrough();
  // Once the parser has given up on the body nobody listens: an error then must not be thrown.
  out.on('error', () => undefined);
  response.once('close', () => clearTimeout(timer));
  payload.once('close', () => clearTimeout(timer));
  const timer = setTimeout(() => {
    payload.unpipe(out);
    out.destroy(clientTimeout(`The request body stopped arriving: no data for ${seconds} s (SVC_BODY_IDLE_TIMEOUT_S).`));
  }, ms);
  payload.on('data', () => timer.refresh());
  payload.on('end', () => clearTimeout(timer));
  payload.on('error', (err) => {
    clearTimeout(timer);
    out.destroy(err);
  });
  out.on('close', () => clearTimeout(timer));
  payload.pipe(out);
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A body's bytes → its JSON value: 400 when they are not UTF-8, not JSON, or nested too deeply. */
export function parseJsonBody(bytes: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalidJson('the body is not valid UTF-8');
  }
  if (text.trim() === '') throw invalidJson('the body is empty');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalidJson((err as Error).message);
  }
  checkBodyDepth(value);
  return value;
}

// ---------------------------------------------------------------------------------------------

export interface GuardOptions {
  /** --allowed-hosts: more Host names a loopback-bound server answers. */
  allowedHosts: readonly string[];
  /** --allowed-origins: CORS origins (`*` = any); empty = no CORS. */
  allowedOrigins: readonly string[];
  /** SVC_BODY_IDLE_TIMEOUT_S; 0 = none. */
  bodyIdleTimeoutSec: number;
}

/**
 * The Host check (first of all onRequest hooks), CORS when asked for, and the body guards. Call it
 * before registering auth: CORS preflights are answered before a key is asked for (browsers send
 * none with them).
 */
export function registerRequestGuards(app: FastifyInstance, opts: GuardOptions): void {
  let loopback: boolean | null = null;
  app.addHook('onRequest', async (request) => {
    // The bound address decides; until it is known (app.inject in tests) the strict rule holds.
    if (loopback === null) {
      const address = app.server.address();
      if (address === null || typeof address === 'string') {
        if (!hostAllowed(request.headers.host, opts.allowedHosts)) throw hostNotAllowed(request.headers.host);
        return;
      }
      loopback = isLoopbackAddress(address.address);
    }
    if (loopback && !hostAllowed(request.headers.host, opts.allowedHosts)) throw hostNotAllowed(request.headers.host);
  });

  if (opts.allowedOrigins.length > 0) {
    // Applied in place rather than registered (a registered plugin loads after every hook added
    // here, auth's included): its hook must answer preflights before auth asks for a key.
    cors(
      app,
      {
        origin: opts.allowedOrigins.includes('*') ? '*' : [...opts.allowedOrigins],
        methods: ['GET', 'POST', 'DELETE'],
        allowedHeaders: ['Authorization', 'Content-Type', 'x-api-key', 'anthropic-version', 'anthropic-beta'],
        // Browser clients may read that their context was compacted (--auto-compact).
        exposedHeaders: [COMPACTED_HEADER],
        // A preflight without the headers gets the plain answer, not a text/plain 400.
        strictPreflight: false,
        maxAge: 600,
      },
      (err) => {
        if (err) throw err;
      },
    );
  }

  app.addHook('preParsing', async (request, reply, payload) => {
    if (!hasBody(request.headers)) return payload;
    checkJsonContentType(request.headers['content-type']);
    if (opts.bodyIdleTimeoutSec <= 0 || (payload as IncomingMessage).complete) return payload;
    return bodyIdleGuard(payload, reply.raw, opts.bodyIdleTimeoutSec * 1000, opts.bodyIdleTimeoutSec);
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    // Some clients label every request JSON: an empty body where none is expected is no body.
    if ((req.method === 'GET' || req.method === 'DELETE') && (body as Buffer).length === 0) return done(null, undefined);
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
