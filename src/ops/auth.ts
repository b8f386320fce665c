// API-key authentication (--require-auth): the accepted keys, loaded once at start-up from
// --auth-token values and --auth-tokens-file, and the fastify onRequest hook that admits a
// request only when it presents one of them. Every route needs a key except those whose route
// config says `openAccess: true` (/health). A key is presented as `Authorization: Bearer <key>`
// (OpenAI clients) or `x-api-key: <key>` (Anthropic clients); both headers are accepted on every
// route, so one client library works against every protocol. Keys are compared as SHA-256
// digests with crypto.timingSafeEqual against every loaded key, without stopping at a match, so
// neither a key's length nor how much of it matched shows in the timing; a refusal says the same
// whatever was wrong (missing header, unknown key). No key is ever logged or printed: start-up
// errors name the file and the line, never the text on it.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../common/api-error.js';

/** Where the keys come from (ServeOptions.auth; null there when --require-auth is off). */
export interface AuthSettings {
  /** --auth-token values, in order. */
  readonly tokens: readonly string[];
  /** --auth-tokens-file. */
  readonly tokensFile?: string;
}

/** A start-up problem with the keys: one line for the operator, naming the source, never a key. */
export class AuthConfigError extends Error {}

/** A key: printable ASCII without spaces, as an HTTP header carries it unchanged (RFC 6750 b64token and more). */
const KEY_TEXT = /^[\x21-\x7e]+$/;

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** The accepted keys, kept only as digests. */
export class ApiKeys {
  private readonly digests: Buffer[];

  constructor(keys: readonly string[]) {
    if (keys.length === 0) throw new AuthConfigError('--require-auth: no API key was given');
    const unique = new Map<string, Buffer>();
    for (const key of keys) {
      const d = digest(key);
      unique.set(d.toString('hex'), d);
    }
    this.digests = [...unique.values()];
  }

  get size(): number {
    return this.digests.length;
  }

  /**
   * The presented key's identity when it is one of the accepted keys (a digest prefix: stable,
   * not the key, safe to use as a map key), else null. Compares against every key, every time.
   */
  match(presented: string): string | null {
    const d = digest(presented);
    let found: Buffer | null = null;
    for (const accepted of this.digests) {
      if (timingSafeEqual(d, accepted)) found = accepted;
    }
    return found === null ? null : `key:${found.toString('hex', 0, 12)}`;
  }
}

/** 1st, 2nd, 3rd, 4th … */
function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/**
 * The key set from --auth-token values and the tokens file. The file: one key per line, blank
 * lines and lines whose first non-blank character is `#` skipped, surrounding spaces trimmed.
 * An unreadable file, a file with no key, or a key with spaces or non-ASCII characters is an
 * AuthConfigError.
 */
export function loadApiKeys(settings: AuthSettings): ApiKeys {
  const keys: string[] = [];
  settings.tokens.forEach((token, i) => {
    if (!KEY_TEXT.test(token)) {
      throw new AuthConfigError(`--auth-token (the ${ordinal(i + 1)}): an API key must be printable ASCII without spaces`);
    }
    keys.push(token);
  });
  const file = settings.tokensFile;
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      // The code only (ENOENT, EACCES, EISDIR): the message is fs's, and the path is ours to name.
      throw new AuthConfigError(`--auth-tokens-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    let inFile = 0;
    text.split(/\r?\n/).forEach((raw, i) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      if (!KEY_TEXT.test(line)) {
        throw new AuthConfigError(`--auth-tokens-file ${file}: line ${i + 1}: an API key must be printable ASCII without spaces`);
      }
      keys.push(line);
      inFile++;
    });
    if (inFile === 0) throw new AuthConfigError(`--auth-tokens-file ${file}: holds no API key (only blank lines and # comments)`);
  }
  return new ApiKeys(keys);
}

/** The one refusal: missing header, malformed header and unknown key all read the same. */
export function invalidApiKey(): ApiError {
  return new ApiError(401, 'Invalid or missing API key: send it as `Authorization: Bearer <key>` (or `x-api-key: <key>`).', {
    code: 'invalid_api_key',
    headers: { 'www-authenticate': 'Bearer' },
  });
}

/** The keys a request presents: the bearer credential of Authorization, then x-api-key. */
function presentedKeys(request: FastifyRequest): string[] {
  const out: string[] = [];
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    // The scheme is case-insensitive (RFC 9110 §11.1).
    const m = /^bearer +(\S+) *$/i.exec(authorization);
    if (m) out.push(m[1]!);
  }
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string') out.push(apiKey.trim());
  return out;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Open to every client: no API key, no rate limit (/health). */
    openAccess?: boolean;
  }
  interface FastifyRequest {
    /** The identity of the API key the request presented (`key:<digest prefix>`); null when auth is off or the route is open. */
    apiKeyId: string | null;
  }
}

/**
 * Registers the API-key check on `app` (the root instance, before any route plugin, so that it
 * covers every route and the 404 handler). With `keys` null (auth off) it only declares
 * request.apiKeyId. A refusal is a thrown ApiError: the route's protocol renders it.
 */
export function registerAuth(app: FastifyInstance, keys: ApiKeys | null): void {
  app.decorateRequest('apiKeyId', null);
  if (keys === null) return;
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config?.openAccess) return;
    let id: string | null = null;
    // Both candidates are compared, so which header held the key does not show in the timing.
    for (const key of presentedKeys(request)) id = keys.match(key) ?? id;
    if (id === null) throw invalidApiKey();
    request.apiKeyId = id;
  });
}
