// Auth and rate limits around the real app (scripted engine): every route the app has — listed
// from the app itself, so a route added later is covered without editing this file — refuses a
// missing, wrong, different-length or malformed key with one 401 in the route's protocol shape,
// and serves the right key from either header; /health stays open. Then the per-key limits as
// clients see them: 429 with Retry-After, keyed by API key or client address, tokens charged at
// admission and settled at the end (client disconnects too), refunded when the engine refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyPluginAsync, InjectOptions } from 'fastify';
import pino from 'pino';
import type { ErrorRenderer } from '../../src/common/api-error.js';
import { EngineAdmissionError } from '../../src/engine/types.js';
import { ApiKeys, loadApiKeys } from '../../src/ops/auth.js';
import { RateLimiter, type RateLimits } from '../../src/ops/rate-limiter.js';
import { buildApp, type RouteDeps } from '../../src/server/app.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import { registerProtocol } from '../../src/server/protocol-plugin.js';
import { IM_END, SCRIPTED_OPTIONS, scriptedApp, tinyTokenizer } from '../helpers/scripted-app.js';
import { RecordStore } from '../../src/server/store.js';

const KEY = 'sk-svc-test-0123456789abcdef';
const OTHER_KEY = 'sk-other-key';
const USER = [{ role: 'user', content: 'What is the capital of France?' }];

/** A body each known route accepts (so the right key gets a 200); other routes get `{}`. */
const BODIES: Record<string, unknown> = {
  '/v1/chat/completions': { messages: USER, max_tokens: 2 },
  '/v1/completions': { prompt: 'Hello', max_tokens: 2 },
  '/v1/messages': { model: 'm', messages: USER, max_tokens: 2 },
  '/v1/messages/count_tokens': { model: 'm', messages: USER },
  '/tokenize': { prompt: 'Hello' },
  '/detokenize': { tokens: [9707] },
  '/v1/responses': { input: 'Hello', max_output_tokens: 2 },
  '/v1/conversations/x': { metadata: {} },
  '/v1/conversations/x/items': { items: [] },
};

/**
 * Status of a served request: stored records under a placeholder id (`x`) are a 404 past auth, and
 * so is /debug/profile without --profile.
 */
/** What a route answers with a good key (ids that do not exist, a disabled feature, a dashboard file that is not there: 404). */
const served = (url: string): number =>
  /^\/v1\/(responses|conversations)\/x/.test(url) || url === '/debug/profile' || url === '/dashboard/x' ? 404 : 200;

type App = ReturnType<typeof scriptedApp>['app'];

/** Every (method, url) the app serves, HEAD twins left out, path parameters filled in. */
async function routesOf(app: App): Promise<{ method: string; url: string }[]> {
  const routes: { method: string; url: string }[] = [];
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) {
      if (method !== 'HEAD') routes.push({ method, url: r.url.replace(':model', 'svc-tiny-chat').replace(/:\w+/g, 'x') });
    }
  });
  await app.ready();
  return routes;
}

async function call(app: App, method: string, url: string, headers: Record<string, string> = {}, extra: Partial<InjectOptions> = {}) {
  const body = method === 'POST' ? JSON.stringify(BODIES[url.replace(/(.)\/$/, '$1')] ?? {}) : undefined;
  const res = await app.inject({
    method: method as InjectOptions['method'],
    url,
    payload: body,
    // A body-less DELETE with a JSON content type would be an invalid_json 400 (as a bodiless POST).
    headers: { ...(method === 'DELETE' ? {} : { 'content-type': 'application/json' }), ...headers },
    ...extra,
  });
  return { status: res.statusCode, headers: res.headers, body: res.body, json: () => JSON.parse(res.body) };
}

/** A rate limiter on a hand-driven clock (`clock.t`, ms). */
function limited(limits: Partial<RateLimits>) {
  const clock = { t: 0 };
  const limiter = new RateLimiter({ rpm: 0, tpm: 0, burstRpm: 0, burstTpm: 0, ...limits }, { now: () => clock.t });
  return { limiter, clock };
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Ways to get it wrong, each of which must read exactly the same. */
const WRONG: [string, Record<string, string>][] = [
  ['no header', {}],
  ['a wrong key of the same length', bearer(KEY.slice(0, -1) + (KEY.endsWith('f') ? 'e' : 'f'))],
  ['a shorter key (a prefix of the right one)', bearer(KEY.slice(0, 10))],
  ['a longer key (the right one and more)', bearer(`${KEY}0`)],
  ['the other key', bearer('sk-not-loaded')],
  ['an empty bearer', { authorization: 'Bearer ' }],
  ['another scheme', { authorization: `Basic ${KEY}` }],
  ['the key without a scheme', { authorization: KEY }],
  ['a wrong x-api-key', { 'x-api-key': 'nope' }],
];

test('auth on every route: 401 for every wrong key, in the protocol shape, identical whatever was wrong; /health and the dashboard page open', async () => {
  const { app, engine } = scriptedApp({ apiKeys: new ApiKeys([KEY, OTHER_KEY]) });
  const routes = await routesOf(app);
  const paths = routes.map((r) => `${r.method} ${r.url}`);
  for (const expected of [
    'GET /health',
    'GET /v1/models',
    'GET /v1/models/svc-tiny-chat',
    'POST /v1/chat/completions',
    'POST /v1/completions',
    'POST /v1/messages',
    'POST /v1/messages/count_tokens',
    'POST /tokenize',
    'POST /detokenize',
  ]) {
    assert.ok(paths.includes(expected), `routes listed: ${paths.join(', ')}`);
  }
  // Open: /health (probes), and the dashboard's page and assets (it asks for the key itself;
  // every API call it makes needs one — test/unit/dashboard-routes.test.ts).
  const open = new Set(['/health', '/', '/dashboard/x']);
  for (const { method, url } of routes) {
    if (open.has(url)) continue;
    const bodies = new Set<string>();
    for (const [what, headers] of WRONG) {
      const res = await call(app, method, url, headers);
      assert.equal(res.status, 401, `${method} ${url} with ${what}: ${res.body}`);
      assert.equal(res.headers['www-authenticate'], 'Bearer');
      if (url.startsWith('/v1/messages')) {
        assert.deepEqual(res.json(), {
          type: 'error',
          error: {
            type: 'authentication_error',
            message: 'Invalid or missing API key: send it as `Authorization: Bearer <key>` (or `x-api-key: <key>`).',
          },
        });
      } else if (url.startsWith('/v1/') || url === '/tokenize' || url === '/detokenize') {
        assert.deepEqual(res.json(), {
          error: {
            message: 'Invalid or missing API key: send it as `Authorization: Bearer <key>` (or `x-api-key: <key>`).',
            type: 'invalid_request_error',
            code: 'invalid_api_key',
            param: null,
          },
        });
      }
      assert.ok(!res.body.includes(KEY.slice(0, 10)), 'no key in the answer');
      bodies.add(res.body);
    }
    assert.equal(bodies.size, 1, `${method} ${url}: one answer for every failure`);
  }
  assert.equal(engine.jobs.length, 0, 'nothing reached the engine');

  for (const { method, url } of routes) {
    for (const headers of [bearer(KEY), bearer(OTHER_KEY), { authorization: `bearer  ${KEY}` }, { 'x-api-key': KEY }]) {
      const res = await call(app, method, url, headers);
      assert.equal(res.status, served(url), `${method} ${url} with ${JSON.stringify(headers)}: ${res.body}`);
    }
  }
  assert.ok(engine.jobs.length > 0);
  // /health needs nothing.
  assert.equal((await call(app, 'GET', '/health')).status, 200);
  assert.equal((await call(app, 'GET', '/health', bearer('wrong'))).status, 200);
  // Outside every route: 401 first (nothing about which paths exist), 404 with a key.
  assert.equal((await call(app, 'GET', '/v1/nope')).status, 401);
  assert.equal((await call(app, 'GET', '/nope')).status, 401);
  assert.equal((await call(app, 'GET', '/v1/nope', bearer(KEY))).status, 404);
  await app.close();
});

test('auth comes before the model gate: no key → 401 even while no model is loaded; /health reports 503', async () => {
  const { app } = scriptedApp({ apiKeys: new ApiKeys([KEY]), ready: false });
  assert.equal((await call(app, 'GET', '/v1/models')).status, 401);
  assert.equal((await call(app, 'GET', '/v1/models', bearer(KEY))).status, 503);
  assert.equal((await call(app, 'GET', '/health')).status, 503);
  await app.close();
});

test('auth off: every route answers without a key; a stray Authorization header is ignored', async () => {
  const { app } = scriptedApp();
  assert.equal((await call(app, 'GET', '/v1/models')).status, 200);
  assert.equal((await call(app, 'GET', '/v1/models', bearer('anything'))).status, 200);
  await app.close();
});

test('API keys: duplicates count once; the identity is stable and is not the key', () => {
  const keys = new ApiKeys([KEY, OTHER_KEY, KEY]);
  assert.equal(keys.size, 2);
  const id = keys.match(KEY);
  assert.match(id ?? '', /^key:[0-9a-f]{24}$/);
  assert.equal(keys.match(KEY), id);
  assert.notEqual(keys.match(OTHER_KEY), id);
  assert.ok(!id!.includes(KEY));
  assert.equal(keys.match(''), null);
  assert.equal(keys.match(`${KEY} `), null);
  assert.equal(loadApiKeys({ tokens: [KEY] }).match(KEY), id);
});

test('401 and 429 come out in the shape of the protocol the route belongs to', async () => {
  // A made-up protocol with Anthropic's error shape, beside OpenAI's.
  const renderFake: ErrorRenderer = (err) => ({ type: 'error', error: { type: err.code, message: err.message } });
  const fakeRoutes: FastifyPluginAsync<RouteDeps> = async (scope) => {
    scope.post('/messages', async () => ({ ok: true }));
  };
  const { limiter } = limited({ rpm: 60, burstRpm: 1 });
  const app = buildApp({
    options: SCRIPTED_OPTIONS,
    logger: pino({ level: 'silent' }),
    lifecycle: new Lifecycle('no_model'),
    apiKeys: new ApiKeys([KEY]),
    rateLimiter: limiter,
  });
  registerProtocol(
    app,
    { prefix: '/fake', renderError: renderFake, routes: [fakeRoutes] },
    { options: SCRIPTED_OPTIONS, chatOutput: () => ({ stages: [] }), store: new RecordStore() },
  );
  const denied = await call(app, 'POST', '/fake/messages', { authorization: 'Bearer nope' });
  assert.equal(denied.status, 401);
  assert.equal(denied.headers['www-authenticate'], 'Bearer');
  assert.deepEqual(denied.json().error.type, 'invalid_api_key');
  assert.equal(denied.json().type, 'error');
  assert.equal((await call(app, 'POST', '/fake/messages', { 'x-api-key': KEY })).status, 200);
  const limitedRes = await call(app, 'POST', '/fake/messages', { 'x-api-key': KEY });
  assert.equal(limitedRes.status, 429);
  assert.equal(limitedRes.headers['retry-after'], '1');
  assert.deepEqual(limitedRes.json(), {
    type: 'error',
    error: { type: 'rate_limit_exceeded', message: 'Rate limit reached for requests per minute (60/min, burst 1); retry in 1 s.' },
  });
  // OpenAI's routes keep OpenAI's shape.
  assert.equal((await call(app, 'GET', '/v1/models')).json().error.code, 'invalid_api_key');
  await app.close();
});

// ---------------------------------------------------------------------------------------------
// Rate limits through the app

test('rate limit: requests per key (API key); 429 in the OpenAI shape with Retry-After; refills on time; /health and 401s not counted', async () => {
  const { limiter, clock } = limited({ rpm: 60, burstRpm: 2 });
  const keys = new ApiKeys([KEY, OTHER_KEY]);
  const { app } = scriptedApp({ apiKeys: keys, rateLimiter: limiter });
  // Refused keys and /health take nothing from anyone's bucket.
  for (let i = 0; i < 5; i++) assert.equal((await call(app, 'GET', '/v1/models', bearer('wrong'))).status, 401);
  for (let i = 0; i < 5; i++) assert.equal((await call(app, 'GET', '/health')).status, 200);
  assert.equal((await call(app, 'GET', '/v1/models', bearer(KEY))).status, 200);
  assert.equal((await call(app, 'GET', '/v1/models', { 'x-api-key': KEY })).status, 200);
  const refused = await call(app, 'GET', '/v1/models', bearer(KEY));
  assert.equal(refused.status, 429);
  assert.equal(refused.headers['retry-after'], '1');
  assert.deepEqual(refused.json(), {
    error: {
      message: 'Rate limit reached for requests per minute (60/min, burst 2); retry in 1 s.',
      type: 'invalid_request_error',
      code: 'rate_limit_exceeded',
      param: null,
    },
  });
  // The other key has its own bucket.
  assert.equal((await call(app, 'GET', '/v1/models', bearer(OTHER_KEY))).status, 200);
  assert.equal((await call(app, 'GET', '/health')).status, 200);
  clock.t = 999;
  assert.equal((await call(app, 'GET', '/v1/models', bearer(KEY))).status, 429);
  clock.t = 1000;
  assert.equal((await call(app, 'GET', '/v1/models', bearer(KEY))).status, 200);
  assert.equal((await call(app, 'GET', '/v1/models', bearer(KEY))).status, 429);
  await app.close();
});

test('rate limit with auth off: keyed by client address', async () => {
  const { limiter } = limited({ rpm: 60, burstRpm: 1 });
  const { app } = scriptedApp({ rateLimiter: limiter });
  const from = (remoteAddress: string) => call(app, 'GET', '/v1/models', {}, { remoteAddress });
  assert.equal((await from('10.0.0.1')).status, 200);
  assert.equal((await from('10.0.0.1')).status, 429);
  assert.equal((await from('10.0.0.2')).status, 200);
  assert.ok(limiter.has('ip:10.0.0.1') && limiter.has('ip:10.0.0.2'));
  await app.close();
});

/** The usage numbers of a non-streamed chat completion. */
async function chat(app: App, headers: Record<string, string>) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    payload: { messages: USER },
    headers: { 'content-type': 'application/json', ...headers },
  });
  return { status: res.statusCode, headers: res.headers, json: () => JSON.parse(res.body) };
}

test('rate limit: tokens — the prompt at admission, the completion when it ends; a prompt that does not fit gets 429 and never reaches the engine', async () => {
  // 6000/min = 100 per second.
  const { limiter, clock } = limited({ tpm: 6000, burstTpm: 200 });
  const keys = new ApiKeys([KEY]);
  const ids = [...tinyTokenizer.encode('The capital of France is Paris.'), IM_END];
  const { app, engine } = scriptedApp({ apiKeys: keys, rateLimiter: limiter, script: { ids } });
  const id = keys.match(KEY)!;
  const first = await chat(app, bearer(KEY));
  assert.equal(first.status, 200);
  const usage = first.json().usage as { prompt_tokens: number; completion_tokens: number };
  assert.equal(usage.completion_tokens, ids.length);
  assert.equal(limiter.tokensAvailable(id), 200 - usage.prompt_tokens - usage.completion_tokens);
  // Spend what is left, then a prompt of the same size is short by exactly what it needs.
  const left = limiter.tokensAvailable(id);
  limiter.admitTokens(id, left);
  const jobs = engine.jobs.length;
  const refused = await chat(app, bearer(KEY));
  assert.equal(refused.status, 429);
  assert.equal(refused.json().error.code, 'rate_limit_exceeded');
  assert.equal(refused.headers['retry-after'], String(Math.ceil(usage.prompt_tokens / 100)));
  assert.equal(engine.jobs.length, jobs, 'the refused request never reached the engine');
  assert.equal(limiter.tokensAvailable(id), 0, 'a refused request takes nothing');
  clock.t = Math.ceil(usage.prompt_tokens / 100) * 1000;
  assert.equal((await chat(app, bearer(KEY))).status, 200);
  await app.close();
});

test('rate limit: an engine that refuses the request (503) hands the prompt tokens back', async () => {
  const { limiter } = limited({ tpm: 6000, burstTpm: 1000 });
  const { app, engine } = scriptedApp({ rateLimiter: limiter });
  engine.refuse = new EngineAdmissionError('queue_full', 'the queue is full');
  const res = await chat(app, {});
  assert.equal(res.status, 503);
  assert.equal(limiter.tokensAvailable('ip:127.0.0.1'), 1000);
  await app.close();
});

test('rate limit: a client that disconnects mid-stream is charged the prompt and the tokens it was sent', async () => {
  const { limiter } = limited({ tpm: 600_000, burstTpm: 100_000 });
  const { app, engine, lines } = scriptedApp({
    rateLimiter: limiter,
    script: { ids: Array.from({ length: 400 }, () => 9707), chunk: 1, delayMs: 5 },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = app.server.address() as AddressInfo;
    await new Promise<void>((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port,
        path: '/v1/chat/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      req.on('error', () => resolve());
      // Hang up once a few tokens have come (the first frame is the role alone).
      let frames = 0;
      req.on('response', (res) =>
        res.on('data', (d: Buffer) => (frames += String(d).split('data: ').length - 1) >= 5 && (req.destroy(), resolve())),
      );
      req.end(JSON.stringify({ messages: USER, stream: true }));
    });
    let aborted: Record<string, unknown> | undefined;
    for (let t = 0; t < 200 && !(aborted = lines.find((l) => l.msg === 'request aborted by the client')); t++) await delay(10);
    assert.ok(aborted, 'the disconnect was logged');
    assert.equal(engine.jobs[0]?.cancelled, true);
    const prompt = aborted.promptTokens as number;
    const logged = aborted.completionTokens as number;
    assert.ok(prompt > 0 && logged > 0 && logged < 400, `prompt ${prompt}, logged ${logged}`);
    // The prompt was charged at admission; the completion is settled once the generation winds
    // down: at least what had been sent when the client left, at most what the engine produced.
    const charged = () => 100_000 - limiter.tokensAvailable('ip:127.0.0.1');
    for (let t = 0; t < 200 && charged() === prompt; t++) await delay(10);
    const completion = charged() - prompt;
    assert.ok(
      completion >= logged && completion <= engine.jobs[0]!.sent,
      `settled ${completion}, logged ${logged}, produced ${engine.jobs[0]!.sent}`,
    );
    await delay(50);
    assert.equal(charged(), prompt + completion, 'settled once');
  } finally {
    await app.close();
  }
});
