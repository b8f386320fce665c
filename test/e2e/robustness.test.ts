// Robustness against the real server (svc-tiny-chat, real HTTP): thousands of generated malformed
// requests (bad JSON, wrong types, wrong content types, invalid UTF-8, bad Host, deep nesting, huge
// strings) and hundreds of damaged HTTP messages (request line, headers, framing, oversize headers)
// on every route never crash it or get a 5xx, every answer is in the documented status
// set and error shape, and a normal request works afterwards; rounds of concurrent streams with
// random hang-ups leave no sequence or KV block behind and RSS flat.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';

// Short context: a fuzzed body that happens to be valid generates at most a few hundred tokens.
const MAX_SEQ_LEN = 256;
let server: TinyServer;
let port: number;

before(async () => {
  server = await startTinyServer({ disableThinking: false }, {}, { maxSeqLen: MAX_SEQ_LEN });
  port = Number(new URL(server.base).port);
});

after(async () => {
  await server?.close();
});

/** Deterministic PRNG (mulberry32), so a failing case can be replayed from its index. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
}

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request over a fresh connection, with exactly the bytes and headers given (fetch would fix some up). */
function send(req: RawRequest, timeoutMs = 30_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const r = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: req.method,
        path: req.path,
        headers: { connection: 'close', ...(req.body ? { 'content-length': String(req.body.length) } : {}), ...req.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    r.setTimeout(timeoutMs, () => r.destroy(new Error(`no answer within ${timeoutMs} ms: ${req.method} ${req.path}`)));
    r.on('error', reject);
    r.end(req.body);
  });
}

const CHAT = '/v1/chat/completions';
const COMPLETIONS = '/v1/completions';
const VALID_CHAT = { model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 };
const VALID_COMPLETION = { model: 'm', prompt: 'Once upon a time', max_tokens: 4 };
/** Every route, each with a valid body that the cases below break (chat weighted up: it has the most fields). */
const ROUTES: [string, Record<string, unknown>][] = [
  [CHAT, VALID_CHAT],
  [CHAT, VALID_CHAT],
  [COMPLETIONS, VALID_COMPLETION],
  ['/v1/messages', { model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] }],
  ['/v1/messages/count_tokens', { model: 'm', messages: [{ role: 'user', content: 'Hi' }] }],
  ['/v1/responses', { model: 'm', input: 'Hi', max_output_tokens: 4 }],
  ['/v1/conversations', { items: [{ type: 'message', role: 'user', content: 'Hi' }] }],
  ['/v1/conversations/conv_x/items', { items: [] }],
  ['/tokenize', { prompt: 'Hi' }],
  ['/detokenize', { tokens: [9707] }],
  ['/v1/models', VALID_CHAT],
  ['/health', VALID_CHAT],
  ['/metrics', VALID_CHAT],
  ['/v1/nope', VALID_CHAT],
  ['/v1/chat', VALID_CHAT],
  ['/', VALID_CHAT],
];

/** Values of every JSON type and some nasty sizes. */
function randomValue(r: () => number, depth = 0): unknown {
  const pick = Math.floor(r() * (depth > 2 ? 7 : 10));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return r() < 0.5;
    case 2:
      return Math.floor((r() - 0.5) * 2 ** (1 + Math.floor(r() * 70)));
    case 3:
      return (r() - 0.5) * 1e6;
    case 4:
      return '';
    case 5:
      return 'x'.repeat(Math.floor(r() * 5000));
    case 6:
      return ['user', 'assistant', 'system', 'tool', 'function', 'text', 'auto', 'none', '\u0000', '\ud800'][Math.floor(r() * 10)];
    case 7:
      return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    case 8:
      return Object.fromEntries(Array.from({ length: Math.floor(r() * 4) }, (_, i) => [`k${i}`, randomValue(r, depth + 1)]));
    default:
      return { role: 'user', content: randomValue(r, depth + 1) };
  }
}

/** A JSON value nested `depth` levels (arrays or objects). */
function deep(depth: number, objects: boolean): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = objects ? { a: v } : [v];
  return v;
}

const encoder = new TextEncoder();
const json = (v: unknown) => encoder.encode(JSON.stringify(v));
const JSON_TYPE = { 'content-type': 'application/json' };

/** Case `i` of the fuzz set: a malformed (or occasionally valid) request to one of the routes. */
function fuzzCase(i: number): RawRequest {
  const r = rng(1000 + i);
  const [path, valid] = ROUTES[Math.floor(r() * ROUTES.length)]!;
  switch (Math.floor(r() * 13)) {
    case 0: {
      // Truncated or corrupted JSON.
      const text = JSON.stringify(valid);
      const cut = text.slice(0, Math.floor(r() * text.length));
      return { method: 'POST', path, headers: JSON_TYPE, body: encoder.encode(r() < 0.5 ? cut : cut + '\u0007}{') };
    }
    case 1: {
      // One field replaced by a value of a random type (or added).
      const body: Record<string, unknown> = { ...valid };
      const fields = [...Object.keys(valid), 'temperature', 'top_p', 'n', 'stop', 'seed', 'tools', 'tool_choice', 'logprobs', 'stream'];
      body[fields[Math.floor(r() * fields.length)]!] = randomValue(r);
      body.max_tokens = 4;
      return { method: 'POST', path, headers: JSON_TYPE, body: json(body) };
    }
    case 2: {
      // Messages with random shapes.
      const messages = Array.from({ length: Math.floor(r() * 3) }, () => randomValue(r));
      return { method: 'POST', path, headers: JSON_TYPE, body: json({ model: 'm', messages, prompt: randomValue(r), max_tokens: 4 }) };
    }
    case 3: {
      // Deep nesting in a tool schema, template kwargs, or the body itself.
      const nested = deep(500 + Math.floor(r() * 3000), r() < 0.5);
      const where = Math.floor(r() * 3);
      const body =
        where === 0
          ? { ...valid, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: nested } } } }] }
          : where === 1
            ? { ...valid, chat_template_kwargs: { x: nested } }
            : { ...valid, messages: nested };
      return { method: 'POST', path, headers: JSON_TYPE, body: json(body) };
    }
    case 4: {
      // Invalid UTF-8 inside a string.
      const text = JSON.stringify(valid);
      // Inside the prompt text, else inside the first string.
      const word = ['Hi', 'Once'].find((w) => text.includes(w));
      const at = word ? text.indexOf(word) : text.indexOf('"') + 1;
      const bytes = encoder.encode(text);
      const bad = new Uint8Array(bytes.length + 2);
      bad.set(bytes.subarray(0, at));
      bad.set([0xff, 0xc3], at);
      bad.set(bytes.subarray(at), at + 2);
      return { method: 'POST', path, headers: JSON_TYPE, body: bad };
    }
    case 5: {
      // Wrong or missing content type on an otherwise valid body.
      const type = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', ''][
        Math.floor(r() * 5)
      ];
      return { method: 'POST', path, headers: type ? { 'content-type': type } : {}, body: json(valid) };
    }
    case 6: {
      // Odd headers: bad authorization, odd accept, unusual host port.
      const headers: Record<string, string> = { ...JSON_TYPE };
      const h = Math.floor(r() * 3);
      if (h === 0) headers.authorization = ['Bearer', 'Basic Zm9vOmJhcg==', 'Bearer ' + 'k'.repeat(2000)][Math.floor(r() * 3)]!;
      if (h === 1) headers.accept = 'application/x-nonsense';
      if (h === 2) headers.host = `127.0.0.1:${Math.floor(r() * 65535)}`;
      return { method: 'POST', path, headers, body: json(valid) };
    }
    case 7: {
      // Wrong methods.
      const method = ['PUT', 'DELETE', 'PATCH', 'GET', 'OPTIONS'][Math.floor(r() * 5)]!;
      return { method, path, headers: method === 'GET' ? {} : JSON_TYPE, body: method === 'GET' ? undefined : json(valid) };
    }
    case 9: {
      // A Host the loopback-bound server must refuse (403), or one it accepts.
      const host = [
        'attacker.example',
        'localhost.attacker.example',
        '127.0.0.1.nip.io',
        'LOCALHOST',
        '[::1]',
        '[::1',
        '127.0.0.1:99',
        'a:b:c',
        'h'.repeat(3000),
      ][Math.floor(r() * 9)]!;
      return { method: r() < 0.5 ? 'GET' : 'POST', path, headers: { ...JSON_TYPE, host }, body: json(valid) };
    }
    case 10: {
      // Huge strings (under the 1 MiB body limit) in random places.
      const huge = (r() < 0.5 ? 'a' : 'word ').repeat(10_000 + Math.floor(r() * 60_000));
      const body: Record<string, unknown> = { ...valid };
      const where = ['model', 'stop', 'user', 'prompt', 'messages', 'tools', 'chat_template_kwargs', 'seed'][Math.floor(r() * 8)]!;
      body[where] =
        where === 'messages'
          ? [
              { role: 'user', content: huge.slice(0, 4000) },
              { role: 'user', name: huge, content: 'x' },
            ]
          : where === 'tools'
            ? [{ type: 'function', function: { name: huge, parameters: { type: 'object' } } }]
            : where === 'chat_template_kwargs'
              ? { [huge.slice(0, 50_000)]: huge }
              : huge;
      return { method: 'POST', path, headers: JSON_TYPE, body: json(body) };
    }
    case 11: {
      // Content types near application/json: parameters, charsets, wildcards, +json.
      const type = [
        'application/json; charset=utf-16',
        'application/json;charset=iso-8859-1',
        'application/json; charset="UTF-8"',
        'application/ld+json',
        'APPLICATION/JSON',
        'application/json; boundary=x',
        '*/*',
        'application/*',
        'application/json, text/plain',
        'application/jsonx',
        'text/json',
        ';',
      ][Math.floor(r() * 12)]!;
      return { method: 'POST', path, headers: { 'content-type': type }, body: json(valid) };
    }
    case 12: {
      // Nesting around the limits in every other free-form field.
      const nested = deep(10 + Math.floor(r() * 120), r() < 0.5);
      const field = ['stop', 'response_format', 'tool_choice', 'stream_options', 'prompt', 'logit_bias', 'metadata', 'n'][
        Math.floor(r() * 8)
      ]!;
      return { method: 'POST', path, headers: JSON_TYPE, body: json({ ...valid, [field]: nested }) };
    }
    default: {
      // Random bytes.
      const bytes = new Uint8Array(Math.floor(r() * 300));
      for (let k = 0; k < bytes.length; k++) bytes[k] = Math.floor(r() * 256);
      return { method: 'POST', path, headers: JSON_TYPE, body: bytes };
    }
  }
}

/** The error body of the path's protocol: Anthropic's `{type: "error", error: {type, message}}` under /v1/messages, else OpenAI's `{error: {message, type, code, param}}`. */
function isErrorShape(text: string, path = '/'): boolean {
  try {
    const body = JSON.parse(text) as {
      type?: unknown;
      error?: { message?: unknown; type?: unknown; code?: unknown; param?: unknown };
    } | null;
    const e = body?.error;
    if (typeof e?.message !== 'string' || typeof e.type !== 'string') return false;
    return path.startsWith('/v1/messages') ? body!.type === 'error' : 'code' in e && 'param' in e;
  } catch {
    return false;
  }
}

/** Statuses a malformed request may get (documented in the README); never a 5xx but a retriable 503. */
const ALLOWED = new Set([200, 400, 401, 403, 404, 405, 408, 413, 415, 429, 431, 503, 529]);

test("fuzz: 3000 malformed requests on every route: no crash, no 5xx, every error in its protocol's shape", async () => {
  const CASES = 3000;
  const CONCURRENCY = 8;
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < CASES; i = next++) {
      const req = fuzzCase(i);
      let res: RawResponse;
      try {
        res = await send(req);
      } catch (err) {
        failures.push(`case ${i} ${req.method} ${req.path}: ${(err as Error).message}`);
        continue;
      }
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (!ALLOWED.has(res.status)) failures.push(`case ${i} ${req.method} ${req.path}: status ${res.status}: ${res.text.slice(0, 200)}`);
      if (res.status >= 400 && !isErrorShape(res.text, req.path.split('?')[0])) {
        failures.push(`case ${i} ${req.method} ${req.path}: ${res.status} body not in the error shape: ${res.text.slice(0, 200)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  console.log(`# fuzz statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`);
  assert.deepEqual(failures.slice(0, 20), []);

  // Still serving, and nothing left running.
  assert.equal((await send({ method: 'GET', path: '/health', headers: {} })).status, 200);
  const ok = await server.client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 });
  assert.equal(ok.choices.length, 1);
  await idle();
});

test('malformed HTTP (not even a request line) gets a 400 in the error shape; the server keeps serving', async () => {
  const { connect } = await import('node:net');
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('utf8')));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer')));
  });
  assert.match(answer, /^HTTP\/1\.1 400 /);
  assert.ok(isErrorShape(answer.slice(answer.indexOf('\r\n\r\n') + 4)), answer);
  assert.equal((await send({ method: 'GET', path: '/health', headers: {} })).status, 200);
});

/** Case `i` of the raw-HTTP fuzz set: a request whose request line, headers or framing is damaged. */
function rawCase(i: number): Buffer {
  const r = rng(50_000 + i);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const body = JSON.stringify(VALID_CHAT);
  let line = `POST ${CHAT} HTTP/1.1`;
  let headers = [
    `Host: 127.0.0.1:${port}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  let payload = body;
  switch (Math.floor(r() * 6)) {
    case 0:
      // The request line.
      line = pick([
        `POST ${CHAT} HTTP/9.9`,
        `POST ${CHAT}`,
        `POST  ${CHAT} HTTP/1.1`,
        `P\u0000ST ${CHAT} HTTP/1.1`,
        `POST /v1/chat completions HTTP/1.1`,
        `POST /v1/\u00e9\u0007 HTTP/1.1`,
        `BREW ${CHAT} HTTP/1.1`,
        `POST http://attacker.example${CHAT} HTTP/1.1`,
        `POST ${'/x'.repeat(5000)} HTTP/1.1`,
        '',
        'GET',
      ]);
      break;
    case 1: {
      // One header damaged: a space or control byte in its name, a bare CR or LF, obs-fold, NUL.
      const k = Math.floor(r() * headers.length);
      headers[k] = pick([
        (h: string) => h.replace(':', ' :'),
        (h: string) => h.replace(':', ''),
        (h: string) => h + '\u0000',
        (h: string) => h + '\rX: y',
        (h: string) => h.replace(': ', ':\r\n '),
        (h: string) => '\u0001' + h,
        (h: string) => h + '\u00ff\u00fe',
      ])(headers[k]!);
      break;
    }
    case 2:
      // Framing: Content-Length and Transfer-Encoding conflicts and garbage.
      headers = headers.filter((h) => !h.startsWith('Content-Length'));
      headers.push(
        pick([
          'Content-Length: abc',
          'Content-Length: -1',
          `Content-Length: ${Buffer.byteLength(body)}\r\nContent-Length: 3`,
          `Content-Length: ${Buffer.byteLength(body)}, 9`,
          'Transfer-Encoding: gzip',
          `Transfer-Encoding: chunked\r\nContent-Length: ${Buffer.byteLength(body)}`,
          'Transfer-Encoding: chunked, identity',
        ]),
      );
      break;
    case 3:
      // Chunked bodies with bad chunk sizes or extensions.
      headers = headers.filter((h) => !h.startsWith('Content-Length'));
      headers.push('Transfer-Encoding: chunked');
      payload = pick([
        `zz\r\n${body}\r\n0\r\n\r\n`,
        `${body.length.toString(16)};${'e'.repeat(20_000)}\r\n${body}\r\n0\r\n\r\n`,
        `${body.length.toString(16)}\r\n${body}0\r\n\r\n`,
        `-1\r\n\r\n`,
        `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      ]);
      break;
    case 4:
      // Headers over the size limit, many headers, or an over-long value.
      headers.push(
        ...pick([
          [`X-Big: ${'a'.repeat(17_000)}`],
          Array.from({ length: 3000 }, (_, k) => `X-${k}: ${k}`),
          [`Cookie: ${'c=1; '.repeat(4000)}`],
        ]),
      );
      break;
    default:
      // HTTP/1.0 without Host, and Host oddities.
      if (r() < 0.5) {
        line = `POST ${CHAT} HTTP/1.0`;
        headers = headers.filter((h) => !h.startsWith('Host'));
      } else {
        headers[0] = pick(['Host:', 'Host: a b', `Host: 127.0.0.1:${port}\r\nHost: attacker.example`, 'Host: \u00e9vil']);
      }
  }
  return Buffer.from(`${line}\r\n${headers.join('\r\n')}\r\n\r\n${payload}`, 'latin1');
}

/** Sends `bytes` on a fresh connection and collects the answer until the server closes it (a half-close would be a hang-up). */
async function rawExchange(bytes: Buffer): Promise<string> {
  const { connect } = await import('node:net');
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', () => undefined);
    socket.setTimeout(20_000, () => {
      socket.destroy();
      reject(new Error('no answer within 20 s'));
    });
  });
}

test('raw fuzz: 600 requests with a damaged request line, headers or framing: each answered in the error shape, nothing hangs', async () => {
  const CASES = 600;
  const failures: string[] = [];
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < CASES; i = next++) {
      let text: string;
      const bytes = rawCase(i);
      try {
        text = await rawExchange(bytes);
      } catch (err) {
        failures.push(`raw case ${i}: ${(err as Error).message}`);
        continue;
      }
      const status = Number(/^HTTP\/1\.[01] (\d{3}) /.exec(text)?.[1] ?? 0);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (!ALLOWED.has(status)) {
        failures.push(
          `raw case ${i}: status ${status}: ${JSON.stringify(text.slice(0, 200))} for ${JSON.stringify(bytes.toString('latin1').slice(0, 160))}`,
        );
        continue;
      }
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? -1);
      const body = Buffer.from(text.slice(head.length + 4))
        .subarray(0, length)
        .toString('utf8');
      if (status >= 400 && !isErrorShape(body))
        failures.push(`raw case ${i}: ${status} body not in the error shape: ${body.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  console.log(`# raw fuzz statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`);
  assert.deepEqual(failures.slice(0, 20), []);
  assert.equal((await send({ method: 'GET', path: '/health', headers: {} })).status, 200);
  await idle();
});

/** Waits until the engine holds no sequence and no KV block (fails after a few seconds). */
async function idle(): Promise<void> {
  let stats = server.engine.stats();
  for (let t = 0; t < 500 && (stats.running > 0 || stats.waiting > 0 || stats.kvBlocksUsed > 0); t++) {
    await new Promise((r) => setTimeout(r, 20));
    stats = server.engine.stats();
  }
  assert.deepEqual(
    { running: stats.running, waiting: stats.waiting, kvBlocksUsed: stats.kvBlocksUsed },
    { running: 0, waiting: 0, kvBlocksUsed: 0 },
  );
}

/** A streamed chat that the client abandons after `frames` SSE frames (or reads to the end when 0). */
function streamAndMaybeHangUp(frames: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 64, stream: true });
    const r = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: CHAT, headers: JSON_TYPE }, (res) => {
      let seen = 0;
      res.on('data', (c: Buffer) => {
        seen += c.toString('utf8').split('\n\n').length - 1;
        if (frames > 0 && seen >= frames) {
          r.destroy();
          resolve();
        }
      });
      res.on('end', () => resolve());
      res.on('error', () => resolve());
    });
    r.on('error', (err) => (frames > 0 ? resolve() : reject(err)));
    r.end(body);
  });
}

test('load: rounds of concurrent streams with random hang-ups leave nothing behind, RSS flat', async () => {
  const ROUNDS = 4;
  const STREAMS = 24;
  const rss: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const r = rng(77 + round);
    // About half hang up after 1–8 frames; the rest read to the end.
    await Promise.all(Array.from({ length: STREAMS }, () => streamAndMaybeHangUp(r() < 0.5 ? 1 + Math.floor(r() * 8) : 0)));
    await idle();
    rss.push(process.memoryUsage().rss);
  }
  console.log(`# RSS after each round (MiB): ${rss.map((b) => (b / 2 ** 20).toFixed(0)).join(', ')}`);
  // The first round warms caches (masks, JIT); after it, memory does not keep growing.
  const growth = rss[ROUNDS - 1]! - rss[1]!;
  assert.ok(growth < 64 * 2 ** 20, `RSS grew ${(growth / 2 ** 20).toFixed(0)} MiB from round 2 to round ${ROUNDS}`);
});
