// The dashboard's static routes (src/server/routes/dashboard.ts) through the whole app with auth
// on: only GET / and the three asset files are open; every other method or path needs the key.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { pino } from 'pino';
import { ApiKeys } from '../../src/ops/auth.js';
import { buildApp } from '../../src/server/app.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import { dashboardRoutes, loadDashboardAssets } from '../../src/server/routes/dashboard.js';

const app = buildApp({
  options: { modelName: 'm', maxBodyBytes: 1e6, defaultMinP: 0, defaultTopNSigma: 1, toolMaxTokens: 10, requestTimeoutSec: 0 },
  logger: pino({ level: 'silent' }),
  lifecycle: new Lifecycle('no_model'),
  apiKeys: new ApiKeys(['k']),
});
after(() => app.close());

test('the assets are found from dist/ and served without a key, with types, ETag and no-cache', async () => {
  assert.deepEqual([...loadDashboardAssets().keys()].sort(), ['app.js', 'index.html', 'style.css']);
  for (const [url, type] of [
    ['/', 'text/html'],
    ['/dashboard/index.html', 'text/html'],
    ['/dashboard/app.js', 'text/javascript'],
    ['/dashboard/style.css', 'text/css'],
  ] as const) {
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 200, url);
    assert.ok(res.headers['content-type']!.toString().startsWith(`${type}; charset=utf-8`), url);
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.match(res.headers['content-security-policy']!.toString(), /default-src 'none'/);
    const again = await app.inject({ method: 'GET', url, headers: { 'if-none-match': res.headers.etag!.toString() } });
    assert.equal(again.statusCode, 304);
  }
});

test('nothing else is open: other methods, paths, traversal', async () => {
  for (const [method, url] of [
    ['POST', '/'],
    ['DELETE', '/dashboard/app.js'],
    ['GET', '/dashboard/app.js/x'],
    ['GET', '/dashboard'],
    ['GET', '/admin/state'],
  ] as const) {
    assert.equal((await app.inject({ method, url })).statusCode, 401, `${method} ${url}`);
  }
  const traversal = await app.inject({ method: 'GET', url: '/dashboard/..%2Fpackage.json' });
  assert.equal(traversal.statusCode, 404);
  assert.equal(JSON.parse(traversal.body).error.code, 'not_found');
});

test('without the assets folder nothing is served at /', async () => {
  const bare = Fastify({ logger: false });
  await bare.register(dashboardRoutes, { dir: mkdtempSync(join(tmpdir(), 'no-dashboard-')) });
  assert.equal((await bare.inject({ method: 'GET', url: '/' })).statusCode, 404);
  await bare.close();
});
