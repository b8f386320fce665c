// `svc serve` with short HTTP timeouts and a small connection cap set through the environment
// (SVC_HEADERS_TIMEOUT_S, SVC_REQUEST_RECEIVE_TIMEOUT_S, SVC_BODY_IDLE_TIMEOUT_S,
// SVC_MAX_CONNECTIONS): slow-header, stalled-body and trickled-body clients get a 408 in the
// OpenAI error shape and are closed; an fd-exhaustion attempt (hundreds of connections sending
// headers and `{`, then nothing) is capped, logged once, and cleared by the timeouts, after
// which a normal request succeeds. Oversize headers get a 431. A start-up error never shows a key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { TINY_CHAT } from '../helpers/paths.js';
import { freePort, runSvc } from '../helpers/svc-cli.js';

const HEADERS_TIMEOUT_S = 2;
const RECEIVE_TIMEOUT_S = 4;
const BODY_IDLE_TIMEOUT_S = 1;
const MAX_CONNECTIONS = 64;

let port: number;
let svc: ReturnType<typeof runSvc>;

before(async () => {
  port = await freePort();
  // Bound to every interface: the exposure warning is checked too (requests still go to 127.0.0.1).
  svc = runSvc(
    ['serve', '--model-from-path', TINY_CHAT, '--port', String(port), '--bind', '0.0.0.0', '--max-seq-len', '256'],
    /^Listening on /m,
    {
      SVC_HEADERS_TIMEOUT_S: String(HEADERS_TIMEOUT_S),
      SVC_REQUEST_RECEIVE_TIMEOUT_S: String(RECEIVE_TIMEOUT_S),
      SVC_BODY_IDLE_TIMEOUT_S: String(BODY_IDLE_TIMEOUT_S),
      SVC_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
      SVC_KEEP_ALIVE_TIMEOUT_S: '1',
    },
  );
  await svc.ready;
  assert.match(svc.output().stderr, /^Listening on /m, svc.output().stderr);
});

test('--bind 0.0.0.0 without auth: the warning recommends flags start-up accepts (--require-auth with a key source)', () => {
  const warning = /^.*exposed on all interfaces.*$/m.exec(svc.output().stderr)?.[0] ?? '';
  assert.match(warning, /--require-auth with --auth-tokens-file FILE \(or --auth-token KEY\)/, svc.output().stderr);
  assert.match(warning, /--bind 127\.0\.0\.1/);
});

after(async () => {
  svc?.child.kill('SIGTERM');
  await svc?.exited;
});

interface Outcome {
  /** Everything the server sent before it closed the connection. */
  text: string;
  /** Milliseconds from connecting to the close. */
  closedAfterMs: number;
}

/** A raw connection that sends `parts` (one every `gapMs`) and waits for the server to close it. */
function rawClient(parts: string[], gapMs = 0, giveUpMs = 20_000): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect(port, '127.0.0.1');
    let text = '';
    let i = 0;
    let timer: NodeJS.Timeout | undefined;
    const next = (): void => {
      if (i >= parts.length || socket.destroyed) return;
      socket.write(parts[i++]!);
      if (i < parts.length) timer = setTimeout(next, gapMs);
    };
    socket.on('connect', next);
    socket.on('data', (c: Buffer) => (text += c.toString('utf8')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedAfterMs: Date.now() - started });
    });
    socket.setTimeout(giveUpMs, () => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${giveUpMs} ms; got: ${text.slice(0, 200)}`));
    });
  });
}

function errorOf(text: string): { status: number; code: string; type: string; connection: string } {
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0);
  const connection = /\r\nconnection: ([^\r]+)\r\n/i.exec(text)?.[1] ?? '';
  const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { error: { code: string; type: string; message: string } };
  assert.equal(typeof body.error.message, 'string');
  return { status, code: body.error.code, type: body.error.type, connection: connection.toLowerCase() };
}

const POST_HEAD = (length: number) =>
  `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

async function normalRequestWorks(): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }),
  });
  assert.equal(res.status, 200, await res.text());
}

test('a stalled body (headers and `{`, then nothing) gets a 408 in the OpenAI shape after SVC_BODY_IDLE_TIMEOUT_S and is closed', async () => {
  const out = await rawClient([POST_HEAD(100) + '{']);
  const err = errorOf(out.text);
  assert.deepEqual([err.status, err.code, err.connection], [408, 'client_timeout', 'close']);
  assert.ok(
    out.closedAfterMs >= BODY_IDLE_TIMEOUT_S * 1000 - 100 && out.closedAfterMs < RECEIVE_TIMEOUT_S * 1000,
    `${out.closedAfterMs} ms`,
  );
});

test('slow headers get a 408 after SVC_HEADERS_TIMEOUT_S; a body trickled a byte at a time gets one at SVC_REQUEST_RECEIVE_TIMEOUT_S', async () => {
  const [headers, trickle] = await Promise.all([
    rawClient([`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n`, 'X-Slow: 1\r\n'], 500),
    rawClient([POST_HEAD(100), ...'{"messages": [{"role": "user", "content": "Hi"}]'.split('')], 400),
  ]);
  const h = errorOf(headers.text);
  assert.deepEqual([h.status, h.code, h.connection], [408, 'client_timeout', 'close']);
  assert.ok(headers.closedAfterMs < HEADERS_TIMEOUT_S * 1000 + 1500, `${headers.closedAfterMs} ms`);
  const t = errorOf(trickle.text);
  assert.deepEqual([t.status, t.code], [408, 'client_timeout']);
  assert.ok(
    trickle.closedAfterMs >= RECEIVE_TIMEOUT_S * 1000 - 100 && trickle.closedAfterMs < RECEIVE_TIMEOUT_S * 1000 + 2500,
    `${trickle.closedAfterMs} ms`,
  );
  await normalRequestWorks();
});

test('oversize headers get a 431 and malformed HTTP a 400, both in the OpenAI shape', async () => {
  const big = await rawClient([`GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]);
  assert.deepEqual([errorOf(big.text).status, errorOf(big.text).code], [431, 'headers_too_large']);
  const bad = await rawClient(['GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n']);
  assert.deepEqual([errorOf(bad.text).status, errorOf(bad.text).type], [400, 'invalid_request_error']);
});

test('fd exhaustion: 300 stalled connections are capped at SVC_MAX_CONNECTIONS (one warning), then cleared by the timeouts', async () => {
  const before = svc.output().stderr;
  const outcomes = await Promise.all(Array.from({ length: 300 }, () => rawClient([POST_HEAD(1000) + '{'])));
  const answered = outcomes.filter((o) => o.text.startsWith('HTTP/1.1 408 '));
  const refused = outcomes.filter((o) => o.text === '');
  assert.equal(answered.length + refused.length, 300);
  assert.ok(answered.length <= MAX_CONNECTIONS, `${answered.length} connections were served`);
  assert.ok(refused.length >= 300 - MAX_CONNECTIONS, `${refused.length} refused`);
  const log = svc.output().stderr.slice(before.length);
  assert.equal(log.match(/connection limit reached/g)?.length, 1, log);
  assert.match(log, /SVC_MAX_CONNECTIONS=64/);
  // Every stalled connection is gone: a normal request gets through.
  await normalRequestWorks();
});

test('start-up errors never show an --auth-token value', async () => {
  for (const args of [
    ['--require-auth', '--auth-token', 'secret123', '--port', 'abc'],
    ['--require-auth', '--auth-token', 'secret123', '--model-from-path', '/nonexistent'],
    ['--auth-token', 'secret123', '--model-from-path', '/nonexistent'],
    ['--require-auth', '--auth-token', 'secret 123', '--model-from-path', TINY_CHAT],
    ['--require-auth', '--auth-token=secret123', '--bogus'],
  ]) {
    const run = runSvc(['serve', ...args]);
    const code = await run.exited;
    const { stderr, stdout } = run.output();
    assert.notEqual(code, 0, args.join(' '));
    assert.ok(!/secret.?123/.test(stderr + stdout), `${args.join(' ')}: ${stderr}`);
  }
});
