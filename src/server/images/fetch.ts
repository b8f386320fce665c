// Fetching an image URL (http: or https:) for a request, guarded: one deadline for the whole
// fetch (redirects and body included), at most MAX_IMAGE_REDIRECTS redirects, a size cap checked
// on Content-Length and again while the body streams, a content-type check, and no connection to
// a loopback, private, link-local or otherwise non-public address unless the operator allows it.
//
// The address check sits where the connection is made: the socket's `lookup` resolves the host
// name, checks every address it resolves to and hands only checked addresses to connect(), so a
// name cannot resolve to a public address for the check and to a private one for the connection
// (DNS rebinding). A literal IP host is checked directly (no lookup is made for it), and each
// redirect is a new request, checked anew.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { classifyAddress, type AddressClass } from './address.js';
import { ImageInputError, normalizeMediaType } from './image-error.js';
import { tooManyBytes } from './data-url.js';

/** Redirects followed before a fetch fails. */
export const MAX_IMAGE_REDIRECTS = 5;

export interface FetchLimits {
  /** Largest body read, in bytes (--max-image-bytes). */
  maxBytes: number;
  /** The whole fetch, redirects and body included, in milliseconds (--image-fetch-timeout). */
  timeoutMs: number;
  /** --allow-private-image-urls: fetch from any address. */
  allowPrivate: boolean;
  /**
   * Which addresses may be connected to; default: public ones, or any with allowPrivate. (Tests
   * narrow it to one loopback address, to show that a redirect and every resolved address are
   * checked without sending traffic anywhere but loopback.)
   */
  allowAddress?: (address: string, cls: AddressClass | null) => boolean;
}

function addressPolicy(limits: FetchLimits): (address: string, cls: AddressClass | null) => boolean {
  return limits.allowAddress ?? ((_, cls) => limits.allowPrivate || cls === 'public');
}

export interface FetchedImage {
  bytes: Buffer;
  /** The response's media type ('' when it sent none). */
  contentType: string;
  /** Where the bytes came from, after redirects. */
  url: string;
}

/** Content types an image may be served as: any image/*, a generic binary type, or none (the bytes' signature decides). */
function acceptableContentType(type: string): boolean {
  return type === '' || type.startsWith('image/') || type === 'application/octet-stream' || type === 'binary/octet-stream';
}

function refused(host: string, address: string, cls: string): ImageInputError {
  const via = host === address ? '' : ` resolves to ${address}, which`;
  return new ImageInputError(
    'image_url_forbidden',
    `the image URL's host '${host}'${via} is a ${cls} address; fetching from loopback, private and link-local addresses is off (the operator allows it with --allow-private-image-urls)`,
  );
}

/** A lookup that refuses (through `onRefused`, then as an error) the name when any address it resolves to is not allowed. */
function guardedLookup(host: string, allowed: ReturnType<typeof addressPolicy>, onRefused: (err: ImageInputError) => void): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0, hints: options.hints ?? 0 }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      for (const a of addresses) {
        const cls = classifyAddress(a.address);
        if (!allowed(a.address, cls)) {
          const refusal = refused(host, a.address, cls ?? 'unknown');
          onRefused(refusal);
          return callback(refusal, '', 0);
        }
      }
      if (addresses.length === 0) return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Why a connection failed, in words (ENOTFOUND, ECONNREFUSED … as people read them). */
function networkReason(err: NodeJS.ErrnoException, host: string): string {
  switch (err.code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NODATA':
      return `the host name '${host}' does not resolve`;
    case 'ECONNREFUSED':
      return `the connection to '${host}' was refused`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `the connection to '${host}' was reset`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `'${host}' is unreachable`;
  }
  if (err.code?.startsWith('ERR_TLS') || err.code?.startsWith('CERT_') || /certificate|SSL|TLS/i.test(err.message)) {
    return `the TLS connection to '${host}' failed (${err.code ?? err.message})`;
  }
  return `${err.code ?? 'error'}: ${err.message}`;
}

function fetchFailed(message: string): ImageInputError {
  return new ImageInputError('image_fetch_failed', `the image URL could not be fetched: ${message}`);
}

interface Hop {
  response: IncomingMessage;
  host: string;
}

/** One request: resolves with the response's head, or rejects with why there is none. */
function requestOnce(url: URL, limits: FetchLimits, signal: AbortSignal): Promise<Hop> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const allowed = addressPolicy(limits);
  if (isIP(host) !== 0) {
    const cls = classifyAddress(host);
    if (!allowed(host, cls)) return Promise.reject(refused(host, host, cls ?? 'unknown'));
  }
  return new Promise<Hop>((resolve, reject) => {
    let refusal: ImageInputError | null = null;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, {
      method: 'GET',
      headers: { accept: 'image/*', 'user-agent': 'svc-image-fetch' },
      // A connection of its own: never a pooled socket to an address checked for another request.
      agent: false,
      lookup: guardedLookup(host, allowed, (err) => (refusal = err)),
      signal,
    });
    req.once('response', (response) => resolve({ response, host }));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (refusal) reject(refusal);
      else if (signal.aborted) reject(signal.reason);
      else reject(fetchFailed(networkReason(err, host)));
    });
    req.end();
  });
}

/** The body, refused once it passes `maxBytes`. */
async function readBody(response: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    throw tooManyBytes(declared, maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      response.destroy();
      throw new ImageInputError('image_too_large', `the image is over the limit of ${maxBytes} bytes (--max-image-bytes)`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, size);
}

/** The image at `url`, fetched under `limits` (see the top of this file); `signal` cancels it. */
export async function fetchImage(url: string, limits: FetchLimits, signal?: AbortSignal): Promise<FetchedImage> {
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const abort = signal ? AbortSignal.any([deadline, signal]) : deadline;
  const timedOut = (): ImageInputError => fetchFailed(`no complete answer within ${limits.timeoutMs / 1000} s (--image-fetch-timeout)`);
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new ImageInputError('invalid_image', 'the image URL is not a valid URL');
  }
  for (let redirects = 0; ; redirects++) {
    if (current.protocol !== 'http:' && current.protocol !== 'https:') {
      throw new ImageInputError(
        redirects === 0 ? 'invalid_image' : 'image_fetch_failed',
        `the image URL's scheme '${current.protocol}' is not one svc fetches (data:, http: and https: are)`,
      );
    }
    let hop: Hop;
    try {
      hop = await requestOnce(current, limits, abort);
    } catch (err) {
      if (deadline.aborted) throw timedOut();
      throw err;
    }
    const { response, host } = hop;
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status >= 300 && status < 400 && location !== undefined) {
      response.destroy();
      if (redirects >= MAX_IMAGE_REDIRECTS) throw fetchFailed(`more than ${MAX_IMAGE_REDIRECTS} redirects`);
      try {
        current = new URL(location, current);
      } catch {
        throw fetchFailed(`'${host}' redirected to an invalid URL`);
      }
      continue;
    }
    if (status < 200 || status >= 300) {
      response.destroy();
      throw fetchFailed(`'${host}' answered HTTP ${status}`);
    }
    const contentType = normalizeMediaType(response.headers['content-type'] ?? '');
    if (!acceptableContentType(contentType)) {
      response.destroy();
      throw fetchFailed(`'${host}' answered with content type '${contentType}', not an image`);
    }
    try {
      return { bytes: await readBody(response, limits.maxBytes), contentType, url: current.href };
    } catch (err) {
      if (deadline.aborted) throw timedOut();
      if (err instanceof ImageInputError || abort.aborted) throw err;
      throw fetchFailed(networkReason(err as NodeJS.ErrnoException, host));
    }
  }
}
