// What every request passes before a route (src/server/request-guards.ts), on the real app over a
// scripted engine: the Host check against DNS rebinding (loopback bind vs any other, the
// --allowed-hosts list, /health included), CORS off by default and on with --allowed-origins
// (preflights answered before auth), CSRF-style requests refused (form and text/plain bodies,
// foreign Host), and the body guards' pieces (content types, host names).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildChatPrompt } from '../../src/chat/prompt.js';
import type { ChatRequest } from '../../src/chat/request.js';
import { loadApiKeys } from '../../src/ops/auth.js';
import { checkJsonContentType, hostAllowed, hostName } from '../../src/server/request-guards.js';
import { scriptedApp } from '../helpers/scripted-app.js';

const CHAT = { messages: [{ role: 'user', content: 'What is the capital of France?' }], max_tokens: 2 };
const KEY = 'sk-guards-test-key';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over real HTTP with exactly these headers (Host included). */
function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, method, path, headers: { connection: 'close', ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

async function listening(host: string, options: Parameters<typeof scriptedApp>[0] = {}) {
  const setup = scriptedApp(options);
  await setup.app.listen({ host, port: 0 });
  return { ...setup, port: (setup.app.server.address() as AddressInfo).port };
}

test('host names: ports and brackets removed, loopback names and the allow-list', () => {
  assert.equal(hostName('LocalHost:8888'), 'localhost');
  assert.equal(hostName('[::1]:80'), '[::1]');
  assert.equal(hostName('evil.example'), 'evil.example');
  assert.equal(hostName('a:b:c'), null);
  assert.equal(hostName('[::1'), null);
  for (const h of ['localhost', 'localhost:1', '127.0.0.1:8888', '127.1.2.3', '[::1]', '[::1]:9']) assert.ok(hostAllowed(h, []), h);
  for (const h of [undefined, '', 'evil.example', 'localhost.evil.example', '127.0.0.1.evil.example', '0.0.0.0', '[::2]']) {
    assert.ok(!hostAllowed(h, []), String(h));
  }
  assert.ok(hostAllowed('my.box:8888', ['my.box']));
  assert.ok(hostAllowed('a.corp.example', ['.corp.example']));
  assert.ok(hostAllowed('corp.example', ['.corp.example']));
  assert.ok(!hostAllowed('evilcorp.example', ['.corp.example']));
  assert.ok(hostAllowed('anything', ['*']));
});

test('content types: application/json and +json with UTF-8 only', () => {
  for (const ok of ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON;charset=UTF8', 'application/problem+json']) {
    assert.doesNotThrow(() => checkJsonContentType(ok), ok);
  }
  for (const bad of [
    undefined,
    '',
    'text/plain',
    'text/json',
    'application/x-www-form-urlencoded',
    'multipart/form-data',
    'application/json; charset=utf-16',
    'json',
  ]) {
    assert.throws(
      () => checkJsonContentType(bad),
      (err: { status: number }) => err.status === 415,
      String(bad),
    );
  }
});

test('bound to loopback: a foreign Host gets 403 in the OpenAI shape on every route, /health included; loopback names and --allowed-hosts pass', async () => {
  const { app, port, engine } = await listening('127.0.0.1', { options: { allowedHosts: ['my.box'] } });
  try {
    const json = { 'content-type': 'application/json' };
    for (const [method, path, body] of [
      ['POST', '/v1/chat/completions', JSON.stringify(CHAT)],
      ['GET', '/v1/models', undefined],
      ['GET', '/health', undefined],
      ['GET', '/nope', undefined],
    ] as const) {
      const res = await send(port, method, path, { ...json, host: 'attacker.example:' + port }, body);
      assert.equal(res.status, 403, `${method} ${path}: ${res.body}`);
      const err = JSON.parse(res.body).error;
      assert.equal(err.code, 'host_not_allowed');
      assert.equal(err.type, 'invalid_request_error');
      assert.match(err.message, /--allowed-hosts/);
    }
    assert.equal(engine.jobs.length, 0);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'my.box', `my.box:${port}`]) {
      assert.equal((await send(port, 'GET', '/v1/models', { host })).status, 200, host);
    }
    assert.equal((await send(port, 'POST', '/v1/chat/completions', { ...json, host: 'my.box' }, JSON.stringify(CHAT))).status, 200);
  } finally {
    await app.close();
  }
});

test('bound to 0.0.0.0: any Host is accepted', async () => {
  const { app, port } = await listening('0.0.0.0');
  try {
    assert.equal((await send(port, 'GET', '/v1/models', { host: 'some.lan.name:1234' })).status, 200);
    assert.equal((await send(port, 'GET', '/health', { host: 'whatever' })).status, 200);
  } finally {
    await app.close();
  }
});

test('GET and DELETE labelled JSON with an empty body are requests without a body; a POST with one is a 400', async () => {
  const { app, port } = await listening('127.0.0.1');
  try {
    const json = { 'content-type': 'application/json', 'content-length': '0' };
    assert.equal((await send(port, 'GET', '/v1/models', json)).status, 200);
    const del = await send(port, 'DELETE', '/v1/responses/resp_unknown', json);
    assert.equal(del.status, 404, del.body);
    const post = await send(port, 'POST', '/v1/chat/completions', json);
    assert.equal(post.status, 400);
    assert.equal(JSON.parse(post.body).error.code, 'invalid_json');
  } finally {
    await app.close();
  }
});

test('a wrong method is a 405 with Allow on parametric paths too (/v1/conversations/{id}); an unknown path a 404', async () => {
  const { app, port } = await listening('127.0.0.1');
  try {
    const json = { 'content-type': 'application/json' };
    const put = await send(port, 'PUT', '/v1/conversations/conv_abc', json, '{}');
    assert.equal(put.status, 405, put.body);
    assert.equal(put.headers.allow, 'GET, POST, DELETE');
    const items = await send(port, 'PATCH', '/v1/conversations/conv_abc/items/item_1', json, '{}');
    assert.equal(items.status, 405, items.body);
    assert.equal(items.headers.allow, 'GET, DELETE');
    assert.equal((await send(port, 'GET', '/tokenize', {})).status, 405);
    assert.equal((await send(port, 'PUT', '/v1/conversations/conv_abc/nope', json, '{}')).status, 404);
  } finally {
    await app.close();
  }
});

test('CSRF-style requests are refused: text/plain or form POSTs with a foreign Origin (415), a foreign Host (403); nothing generated', async () => {
  const { app, port, engine } = await listening('127.0.0.1');
  try {
    const origin = { origin: 'https://attacker.example' };
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await send(port, 'POST', '/v1/chat/completions', { ...origin, 'content-type': type }, JSON.stringify(CHAT));
      assert.equal(res.status, 415, type);
      assert.equal(JSON.parse(res.body).error.code, 'unsupported_media_type');
      assert.equal(res.headers['access-control-allow-origin'], undefined);
    }
    // A body with no Content-Type at all (fetch with a Blob body) is refused too.
    assert.equal((await send(port, 'POST', '/v1/completions', origin, JSON.stringify({ prompt: 'Hi' }))).status, 415);
    // DNS rebinding: the page's own name as Host, JSON and all.
    const rebound = await send(
      port,
      'POST',
      '/v1/chat/completions',
      { host: 'attacker.example', 'content-type': 'application/json' },
      JSON.stringify(CHAT),
    );
    assert.equal(rebound.status, 403);
    assert.equal(engine.jobs.length, 0);
  } finally {
    await app.close();
  }
});

test('CORS off by default: no Access-Control-* header, preflight refused', async () => {
  const { app, port } = await listening('127.0.0.1');
  try {
    const pre = await send(port, 'OPTIONS', '/v1/chat/completions', {
      origin: 'http://ui.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type',
    });
    assert.ok(pre.status >= 400, `preflight status ${pre.status}`);
    assert.ok(!Object.keys(pre.headers).some((h) => h.startsWith('access-control-')), JSON.stringify(pre.headers));
    const get = await send(port, 'GET', '/v1/models', { origin: 'http://ui.example' });
    assert.equal(get.status, 200);
    assert.ok(!Object.keys(get.headers).some((h) => h.startsWith('access-control-')));
  } finally {
    await app.close();
  }
});

test('--allowed-origins: listed origins get CORS headers, preflights are answered without a key, others get none', async () => {
  const { app, port } = await listening('127.0.0.1', {
    options: { allowedOrigins: ['http://ui.example'] },
    apiKeys: loadApiKeys({ tokens: [KEY] }),
  });
  try {
    const pre = await send(port, 'OPTIONS', '/v1/chat/completions', {
      origin: 'http://ui.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], 'http://ui.example');
    assert.match(String(pre.headers['access-control-allow-headers']), /Authorization/i);
    const ok = await send(
      port,
      'POST',
      '/v1/chat/completions',
      { origin: 'http://ui.example', 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      JSON.stringify(CHAT),
    );
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.headers['access-control-allow-origin'], 'http://ui.example');
    // Pages may read the --auto-compact header.
    assert.match(String(ok.headers['access-control-expose-headers']), /x-svc-context-compacted/);
    // Still no key, no answer: CORS opens the browser's door, not the server's.
    assert.equal((await send(port, 'GET', '/v1/models', { origin: 'http://ui.example' })).status, 401);
    const other = await send(port, 'GET', '/v1/models', { origin: 'https://attacker.example', authorization: `Bearer ${KEY}` });
    assert.equal(other.headers['access-control-allow-origin'], undefined);
  } finally {
    await app.close();
  }
  const any = await listening('127.0.0.1', { options: { allowedOrigins: ['*'] } });
  try {
    const res = await send(any.port, 'GET', '/v1/models', { origin: 'https://anywhere.example' });
    assert.equal(res.headers['access-control-allow-origin'], '*');
  } finally {
    await any.app.close();
  }
});

test('no HTTP timeout cuts a response: a non-streamed answer computed on a silent socket and a pausing stream both finish', async () => {
  const short = {
    headersTimeoutSec: 1,
    requestReceiveTimeoutSec: 1,
    bodyIdleTimeoutSec: 1,
    keepAliveTimeoutSec: 1,
    maxRequestsPerSocket: 0,
    maxConnections: 0,
  };
  // 3 steps of 1.2 s each: the socket is silent (or paused) longer than every limit above.
  const { app, port } = await listening('127.0.0.1', {
    options: { http: short },
    script: { ids: [9707, 11, 1879, 13, 3555, 13], chunk: 2, delayMs: 1200 },
  });
  try {
    const json = { 'content-type': 'application/json' };
    const [plain, stream] = await Promise.all([
      send(port, 'POST', '/v1/chat/completions', json, JSON.stringify({ ...CHAT, max_tokens: 10 })),
      send(port, 'POST', '/v1/chat/completions', json, JSON.stringify({ ...CHAT, max_tokens: 10, stream: true })),
    ]);
    assert.equal(plain.status, 200, plain.body);
    assert.ok(JSON.parse(plain.body).choices[0].message.content.length > 0);
    assert.equal(stream.status, 200);
    assert.ok(stream.body.trimEnd().endsWith('data: [DONE]'), stream.body);
    assert.ok(!stream.body.includes('"error"'), stream.body);
  } finally {
    await app.close();
  }
});

test('a chat template that runs out of stack is a 400 too_deep, not a 500 (past the request limits, as a last line)', async () => {
  const { runtime } = scriptedApp();
  let parameters: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 20_000; i++) parameters = { a: parameters };
  const req = {
    messages: [{ role: 'user', content: 'Hi' }],
    tools: [{ type: 'function', function: { name: 'f', parameters } }],
    chatTemplateKwargs: {},
  } as unknown as ChatRequest;
  await assert.rejects(
    () => buildChatPrompt(req, runtime),
    (err: { status: number; code: string }) => err.status === 400 && err.code === 'too_deep',
  );
});
