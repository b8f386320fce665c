// GET /metrics and the request log line over the real app with a scripted engine: every response
// is counted and logged — the 401s, 429s, 404s, 413s and 400s answered before any route runs
// included —, the exposition passes the strict text-format parser (test/helpers/prom-text.ts),
// /metrics is behind the API key, the engine gauges follow the engine's stats (0 without a
// model), and a log line never carries message contents, tokens or keys. The strict parser is
// itself checked here against malformed expositions. (The real model: test/e2e/metrics.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { InjectOptions } from 'fastify';
import { ApiKeys } from '../../src/ops/auth.js';
import { ServerMetrics } from '../../src/ops/metrics.js';
import { RateLimiter } from '../../src/ops/rate-limiter.js';
import { parsePromText, PromParseError, sampleValue, type Family } from '../helpers/prom-text.js';
import { IM_END, scriptedApp, tinyTokenizer } from '../helpers/scripted-app.js';

const KEY = 'sk-metrics-test-key-0123';
const OTHER = 'sk-metrics-other-key-4567';
const SECRET_WORDS = 'zebracorn marmalade';
const USER = [{ role: 'user', content: `Tell me about ${SECRET_WORDS}.` }];
const ANSWER = 'Paris is lovely.';
const MODEL = 'svc-tiny-chat';

type App = ReturnType<typeof scriptedApp>['app'];

async function call(app: App, method: 'GET' | 'POST', url: string, key: string | null, body?: unknown, raw?: string) {
  const opts: InjectOptions = {
    method,
    url,
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    ...(method === 'POST' ? { payload: raw ?? JSON.stringify(body ?? {}) } : {}),
  };
  const res = await app.inject(opts);
  return { status: res.statusCode, headers: res.headers, body: res.body };
}

async function scrape(app: App, key: string | null = KEY): Promise<Map<string, Family>> {
  const res = await call(app, 'GET', '/metrics', key);
  assert.equal(res.status, 200, res.body);
  assert.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  return parsePromText(res.body);
}

/** A record's own fields: pino's (level, msg, time, pid, hostname) and fastify's reqId left out. */
const fieldsOf = (l: Record<string, unknown>) =>
  Object.keys(l)
    .filter((k) => !['level', 'msg', 'time', 'pid', 'hostname', 'reqId'].includes(k))
    .sort();

const v = (f: Map<string, Family>, name: string, labels: Record<string, string> = {}) => sampleValue(f, name, labels) ?? 0;

test('every response is counted and logged once: generations, early 401/429/404/413/400s, /metrics itself', async () => {
  const clock = { t: 0 };
  // The request bucket: 40 per key, no refill on a frozen clock.
  const limiter = new RateLimiter({ rpm: 60, tpm: 0, burstRpm: 40, burstTpm: 0 }, { now: () => clock.t });
  const { app, engine, lines } = scriptedApp({
    apiKeys: new ApiKeys([KEY, OTHER]),
    rateLimiter: limiter,
    script: { ids: [...tinyTokenizer.encode(ANSWER), IM_END] },
  });
  const statuses = new Map<number, number>();
  const tally = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
  let completionTokens = 0;
  let promptTokens = 0;
  let generations = 0;

  // A plain chat and a streamed one.
  const plain = await call(app, 'POST', '/v1/chat/completions', KEY, { messages: USER });
  assert.equal(plain.status, 200);
  tally(200);
  const usage = JSON.parse(plain.body).usage;
  completionTokens += usage.completion_tokens;
  promptTokens += usage.prompt_tokens;
  generations++;
  const streamed = await call(app, 'POST', '/v1/chat/completions', KEY, {
    messages: USER,
    stream: true,
    stream_options: { include_usage: true },
  });
  assert.equal(streamed.status, 200);
  tally(200);
  const usageFrame = streamed.body
    .split('\n\n')
    .map((f) => f.replace(/^data: /, ''))
    .filter((f) => f.startsWith('{'))
    .map((f) => JSON.parse(f))
    .find((f) => f.usage);
  completionTokens += usageFrame.usage.completion_tokens;
  promptTokens += usageFrame.usage.prompt_tokens;
  generations++;
  // A legacy completion.
  const legacy = await call(app, 'POST', '/v1/completions', KEY, { prompt: 'Hello', max_tokens: 3 });
  assert.equal(legacy.status, 200);
  tally(200);
  completionTokens += JSON.parse(legacy.body).usage.completion_tokens;
  promptTokens += JSON.parse(legacy.body).usage.prompt_tokens;
  generations++;

  // Early answers: 400 (schema, malformed JSON), 404, 413, 401 (no key, wrong key, /metrics without a key).
  assert.equal((await call(app, 'POST', '/v1/chat/completions', KEY, { messages: 'nope' })).status, 400);
  tally(400);
  assert.equal((await call(app, 'POST', '/v1/chat/completions', KEY, undefined, '{"messages": [')).status, 400);
  tally(400);
  assert.equal((await call(app, 'GET', '/v1/nothing-here?q=1', KEY)).status, 404);
  tally(404);
  assert.equal((await call(app, 'GET', '/also/nothing', KEY)).status, 404);
  tally(404);
  const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(70_000) }] });
  assert.equal((await call(app, 'POST', '/v1/chat/completions', KEY, undefined, big)).status, 413);
  tally(413);
  assert.equal((await call(app, 'POST', '/v1/chat/completions', null, { messages: USER })).status, 401);
  tally(401);
  assert.equal((await call(app, 'GET', '/v1/models', 'sk-wrong')).status, 401);
  tally(401);
  assert.equal((await call(app, 'GET', '/metrics', null)).status, 401, '/metrics needs the key');
  tally(401);
  assert.equal((await call(app, 'GET', '/metrics', 'sk-wrong')).status, 401);
  tally(401);
  // 429: the other key spends its 40 requests, then is refused.
  for (let i = 0; i < 40; i++) {
    assert.equal((await call(app, 'GET', '/v1/models', OTHER)).status, 200);
    tally(200);
  }
  const limited = await call(app, 'GET', '/v1/models', OTHER);
  assert.equal(limited.status, 429);
  tally(429);
  // /health is open and counted too.
  assert.equal((await call(app, 'GET', '/health', null)).status, 200);
  tally(200);

  const first = await scrape(app);
  // The scrape itself is counted once it ends: in the next one.
  const model = MODEL;
  for (const [status, n] of statuses)
    assert.equal(v(first, 'svc_requests_total', { status: String(status), model }), n, `status ${status}`);
  const total = (f: Map<string, Family>) => f.get('svc_requests_total')!.samples.reduce((a, s) => a + s.value, 0);
  assert.equal(
    total(first),
    [...statuses.values()].reduce((a, b) => a + b, 0),
  );
  assert.equal(v(first, 'svc_tokens_generated_total', { model }), completionTokens);
  assert.equal(v(first, 'svc_prompt_tokens_total', { model }), promptTokens);
  assert.equal(v(first, 'svc_ttft_seconds_count', { model }), generations);
  assert.equal(v(first, 'svc_ttft_seconds_bucket', { model, le: '+Inf' }), generations);
  assert.ok(v(first, 'svc_ttft_seconds_sum', { model }) >= 0);
  // Every generation here had more than one step (the script sends two ids per event).
  assert.equal(v(first, 'svc_decode_throughput_tok_per_sec_count', { model }), generations);
  assert.equal(v(first, 'svc_request_duration_seconds_count', { model, route: '/v1/chat/completions' }), 2 + 2 + 1 + 1);
  assert.equal(v(first, 'svc_request_duration_seconds_count', { model, route: '/v1/completions' }), 1);
  assert.equal(v(first, 'svc_request_duration_seconds_count', { model, route: '/v1/models' }), 42);
  assert.equal(v(first, 'svc_request_duration_seconds_count', { model, route: 'unmatched' }), 2);
  assert.equal(v(first, 'svc_request_duration_seconds_count', { model, route: '/metrics' }), 2);
  assert.equal(v(first, 'svc_request_duration_seconds_count', { model, route: '/health' }), 1);
  // The scripted engine reports an idle pool.
  assert.equal(v(first, 'svc_kv_pool_utilization_ratio'), 0);
  assert.equal(v(first, 'svc_active_sequences'), 0);
  assert.equal(v(first, 'svc_queue_depth'), 0);
  // Process metrics come along.
  assert.ok(first.has('process_cpu_user_seconds_total') && first.has('nodejs_eventloop_lag_seconds'));
  assert.equal(first.get('process_cpu_user_seconds_total')!.type, 'counter');
  assert.equal(first.get('svc_ttft_seconds')!.type, 'histogram');
  assert.equal(first.get('svc_requests_total')!.type, 'counter');
  assert.equal(first.get('svc_kv_pool_utilization_ratio')!.type, 'gauge');

  const second = await scrape(app);
  assert.equal(v(second, 'svc_requests_total', { status: '200', model }), statuses.get(200)! + 1, 'the first scrape, counted');

  // The log: one line per request (the two scrapes at debug), with the fields, and nothing of
  // the messages, the answer or the keys.
  await delay(10);
  const logged = lines.filter((l) => l.msg === 'request completed');
  assert.equal(logged.length, total(first) + 2);
  for (const status of statuses.keys()) {
    assert.equal(logged.filter((l) => l.status === status).length, statuses.get(status)! + (status === 200 ? 2 : 0), `logged ${status}`);
  }
  const gens = logged.filter((l) => 'promptTokens' in l);
  assert.equal(gens.length, generations);
  for (const g of gens) {
    assert.deepEqual(fieldsOf(g), [
      'completionTokens',
      'decodeTokPerSec',
      'elapsedMs',
      'finish',
      'method',
      'model',
      'promptTokens',
      'route',
      'status',
      'toolsUsed',
      'ttftMs',
      'url',
    ]);
    assert.equal(g.level, 30, 'info');
    assert.equal(g.model, MODEL);
    assert.equal(typeof g.ttftMs, 'number');
    assert.deepEqual(g.finish, [g.route === '/v1/completions' ? 'length' : 'stop']);
  }
  assert.equal(
    gens.reduce((a, g) => a + (g.completionTokens as number), 0),
    completionTokens,
  );
  const early = logged.filter((l) => l.status === 401 || l.status === 429 || l.status === 404 || l.status === 413 || l.status === 400);
  assert.equal(early.length, 10);
  for (const l of early) {
    assert.equal(l.level, 30, `${l.status} at info`);
    assert.deepEqual(fieldsOf(l), ['elapsedMs', 'method', 'model', 'route', 'status', 'url']);
  }
  assert.ok(
    logged.some((l) => l.status === 404 && l.url === '/v1/nothing-here' && l.route === null),
    'path without the query string',
  );
  const scrapes = logged.filter((l) => l.route === '/metrics' && l.status === 200);
  assert.equal(scrapes.length, 2);
  for (const l of scrapes) assert.equal(l.level, 20, '/metrics at debug');
  assert.equal(logged.find((l) => l.route === '/health')!.level, 20, '/health at debug');
  const text = JSON.stringify(lines);
  for (const secret of ['zebracorn', 'marmalade', 'Paris', 'lovely', KEY, OTHER, 'sk-wrong', 'xxxxxxxx']) {
    assert.ok(!text.includes(secret), `the log holds no ${secret}`);
  }
  assert.ok(engine.jobs.length === generations);
  await app.close();
});

test('engine gauges: KV utilization, active sequences, queue depth, speculative counters from the engine stats; 0 without a model', async () => {
  const { app, engine, lifecycle } = scriptedApp();
  engine.stats = () => ({
    running: 3,
    waiting: 5,
    kvBlocksTotal: 64,
    kvBlocksUsed: 16,
    kvPoolTokens: 1024,
    kvBlocksCached: 0,
    prefixQueriedTokens: 0,
    prefixHitTokens: 0,
    draftedTokens: 40,
    acceptedDraftTokens: 30,
    verifySteps: 12,
  });
  let f = await scrape(app, null);
  assert.equal(v(f, 'svc_kv_pool_utilization_ratio'), 0.25);
  assert.equal(v(f, 'svc_spec_draft_tokens_total'), 40);
  assert.equal(v(f, 'svc_spec_accepted_tokens_total'), 30);
  assert.equal(v(f, 'svc_spec_verify_steps_total'), 12);
  assert.equal(v(f, 'svc_spec_acceptance_ratio'), 0.75);
  assert.equal(v(f, 'svc_active_sequences'), 3);
  assert.equal(v(f, 'svc_queue_depth'), 5);
  lifecycle.setNoModel();
  f = await scrape(app, null);
  assert.equal(v(f, 'svc_kv_pool_utilization_ratio'), 0);
  assert.equal(v(f, 'svc_active_sequences'), 0);
  assert.equal(v(f, 'svc_queue_depth'), 0);
  // Without a model, generations get 503 and are counted as such.
  assert.equal((await call(app, 'POST', '/v1/chat/completions', null, { messages: USER })).status, 503);
  f = await scrape(app, null);
  assert.equal(v(f, 'svc_requests_total', { status: '503', model: MODEL }), 1);
  await app.close();
});

test('a stream the client leaves is logged as aborted and counted with the tokens it got; a client gone before any header is 499', async () => {
  const { app, engine, lines } = scriptedApp({ script: { ids: Array.from({ length: 400 }, () => 9707), chunk: 1, delayMs: 5 } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = app.server.address() as AddressInfo;
    const hangUp = (stream: boolean, frames: number) =>
      new Promise<void>((resolve) => {
        const req = request({
          host: '127.0.0.1',
          port,
          path: '/v1/chat/completions',
          method: 'POST',
          headers: { 'content-type': 'application/json' },
        });
        req.on('error', () => resolve());
        if (stream) {
          let seen = 0;
          req.on('response', (res) =>
            res.on('data', (d: Buffer) => (seen += String(d).split('data: ').length - 1) >= frames && (req.destroy(), resolve())),
          );
        } else {
          setTimeout(() => (req.destroy(), resolve()), 100);
        }
        req.end(JSON.stringify({ messages: USER, stream }));
      });
    await hangUp(true, 5);
    await hangUp(false, 0);
    let aborted: Record<string, unknown>[] = [];
    for (let t = 0; t < 300 && (aborted = lines.filter((l) => l.msg === 'request aborted by the client')).length < 2; t++) await delay(10);
    assert.equal(aborted.length, 2);
    const streamLine = aborted.find((l) => l.status === 200)!;
    const earlyLine = aborted.find((l) => l.status === 499)!;
    assert.ok(streamLine && earlyLine, JSON.stringify(aborted));
    assert.equal(streamLine.aborted, true);
    assert.ok((streamLine.completionTokens as number) > 0 && (streamLine.completionTokens as number) < 400);
    assert.equal(earlyLine.aborted, true);
    for (let t = 0; t < 300 && engine.jobs.some((j) => !j.ended); t++) await delay(10);
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    const f = parsePromText(await res.text());
    assert.equal(v(f, 'svc_requests_total', { status: '200', model: MODEL }), 1);
    assert.equal(v(f, 'svc_requests_total', { status: '499', model: MODEL }), 1);
    assert.equal(
      v(f, 'svc_tokens_generated_total', { model: MODEL }),
      (streamLine.completionTokens as number) + (earlyLine.completionTokens as number),
    );
  } finally {
    await app.close();
  }
});

test('every exposition of a fresh metrics registry, with the process metrics, passes the strict parser', async () => {
  const m = new ServerMetrics({ model: 'a "quoted\\ model\nname"', engineStats: () => null });
  const f = parsePromText(await m.render());
  // Label values are escaped and read back exactly.
  assert.equal(v(f, 'svc_tokens_generated_total', { model: 'a "quoted\\ model\nname"' }), 0);
  assert.ok(f.size > 20);
});

// -------------------------------------------------------------------------------------------
// The strict parser refuses what a scraper could reject or misread.

const GOOD = [
  '# HELP h_seconds A histogram with \\\\ and \\n in its help.',
  '# TYPE h_seconds histogram',
  'h_seconds_bucket{le="0.1",m="a"} 1',
  'h_seconds_bucket{le="1",m="a"} 3',
  'h_seconds_bucket{le="+Inf",m="a"} 4',
  'h_seconds_sum{m="a"} 7.5',
  'h_seconds_count{m="a"} 4',
  '# HELP c_total A counter.',
  '# TYPE c_total counter',
  'c_total{status="200",model="x \\"y\\" \\\\ z\\n"} 3',
  'c_total{status="404",model="x",} 1 1712345678000',
  '# TYPE g gauge',
  'g NaN',
  'g{a="0"} Nan',
  'g{a="1"} -Inf',
  'g{a="2"} 1.5e-3',
  '',
].join('\n');

test('strict parser: a well-formed exposition reads back exactly', () => {
  const f = parsePromText(GOOD);
  assert.equal(f.get('h_seconds')!.help, 'A histogram with \\ and \n in its help.');
  assert.equal(sampleValue(f, 'c_total', { status: '200', model: 'x "y" \\ z\n' }), 3);
  assert.equal(f.get('c_total')!.samples[1]!.timestamp, 1712345678000);
  assert.ok(Number.isNaN(sampleValue(f, 'g')!));
  assert.equal(sampleValue(f, 'g', { a: '1' }), -Infinity);
  assert.equal(sampleValue(f, 'h_seconds_bucket', { m: 'a', le: '+Inf' }), 4);
});

const BAD: [string, (good: string) => string][] = [
  ['no final newline', (g) => g.slice(0, -1)],
  ['a bad metric name', (g) => g.replace('g{a="2"}', '2g{a="2"}')],
  ['a bad label name', (g) => g.replace('status="200"', 'sta-tus="200"')],
  ['a reserved label name', (g) => g.replace('status="200"', '__status="200"')],
  ['a label twice', (g) => g.replace('status="200",', 'status="200",status="201",')],
  ['an unknown escape in a label value', (g) => g.replace('z\\n', 'z\\t')],
  ['an unterminated label value', (g) => g.replace('model="x",}', 'model="x,}')],
  ['a bad escape in HELP', (g) => g.replace('A counter.', 'A \\counter.')],
  ['a value that is not a float', (g) => g.replace('g{a="2"} 1.5e-3', 'g{a="2"} 1,5')],
  ['two spaces', (g) => g.replace('g NaN', 'g  NaN')],
  ['a bad timestamp', (g) => g.replace('1712345678000', '1.5')],
  ['a series twice', (g) => g.replace('g{a="2"} 1.5e-3', 'g{a="1"} 2')],
  ['TYPE twice', (g) => g.replace('# TYPE g gauge', '# TYPE g gauge\n# TYPE g gauge')],
  ['TYPE after the samples', (g) => `${g}# TYPE c_total counter\n`],
  ['an unknown TYPE', (g) => g.replace('# TYPE g gauge', '# TYPE g meter')],
  ['samples not in one group', (g) => `${g}c_total{status="500",model="x"} 1\n`],
  ['a negative counter', (g) => g.replace('c_total{status="404",model="x",} 1', 'c_total{status="404",model="x",} -1')],
  ['a HELP line with a bad name', (g) => g.replace('# HELP c_total', '# HELP 1c_total')],
  ['a TYPE line without a type', (g) => g.replace('# TYPE g gauge', '# TYPE g')],
  ['a signed NaN', (g) => g.replace('g NaN', 'g -NaN')],
  ['buckets not cumulative', (g) => g.replace('le="1",m="a"} 3', 'le="1",m="a"} 0')],
  ['buckets out of order', (g) => g.replace('le="1",m="a"', 'le="0.05",m="a"')],
  ['no +Inf bucket', (g) => g.replace('h_seconds_bucket{le="+Inf",m="a"} 4\n', '')],
  ['+Inf bucket ≠ _count', (g) => g.replace('h_seconds_count{m="a"} 4', 'h_seconds_count{m="a"} 5')],
  ['no _sum', (g) => g.replace('h_seconds_sum{m="a"} 7.5\n', '')],
  ['a bucket without le', (g) => g.replace('le="0.1",m="a"', 'm="a",x="0.1"')],
  ['a histogram sample under another suffix', (g) => g.replace('h_seconds_sum', 'h_seconds_total')],
  ['a fractional bucket count', (g) => g.replace('le="0.1",m="a"} 1', 'le="0.1",m="a"} 0.5')],
  ['a carriage return', (g) => g.replace('\n# TYPE g', '\r\n# TYPE g')],
];

for (const [what, spoil] of BAD) {
  test(`strict parser refuses ${what}`, () => {
    const bad = spoil(GOOD);
    assert.notEqual(bad, GOOD, 'the case changes the text');
    assert.throws(() => parsePromText(bad), PromParseError);
  });
}
