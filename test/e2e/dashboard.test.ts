// The web dashboard in a real browser: playwright-core driving the headless Chromium of
// @sparticuz/chromium (runs offline), against the real svc app with svc-tiny-chat and, until the
// server's /admin/ API lands, the test-only fake of it (test/helpers/fake-admin-server.ts).
// With --require-auth: the page loads without a key, asks for it, and every call then sends it.
// Screenshots go to test-artifacts/dashboard/ (git-ignored).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import chromium from '@sparticuz/chromium';
import { chromium as pw, type Browser, type Page } from 'playwright-core';
import { ApiKeys } from '../../src/ops/auth.js';
import { REFUSED_MODEL, REFUSED_REASON, startFakeAdminServer, type FakeAdminServer } from '../helpers/fake-admin-server.js';
import { REPO_ROOT } from '../helpers/paths.js';

const KEY = 'dashboard-test-key';
const SHOTS = join(REPO_ROOT, 'test-artifacts', 'dashboard');
const WEATHER_TOOL = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the current weather for a city.',
      parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'] },
    },
  },
];

let server: FakeAdminServer;
let browser: Browser | null = null;
let noBrowser = '';
let page: Page;

before(async () => {
  server = await startFakeAdminServer(new ApiKeys([KEY]));
  try {
    browser = await pw.launch({ executablePath: await chromium.executablePath(), args: chromium.args, headless: true });
  } catch (err) {
    noBrowser = `headless Chromium (@sparticuz/chromium) cannot launch here: ${(err as Error).message.split('\n')[0]}`;
    return;
  }
  mkdirSync(SHOTS, { recursive: true });
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.setDefaultTimeout(20_000);
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

test('the page and its assets are open, with content types and caching headers; the API is not', async () => {
  const index = await fetch(`${server.base}/`);
  assert.equal(index.status, 200);
  assert.match(index.headers.get('content-type')!, /^text\/html; charset=utf-8/);
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  const etag = index.headers.get('etag')!;
  assert.ok(etag);
  assert.equal((await fetch(`${server.base}/`, { headers: { 'if-none-match': etag } })).status, 304);
  const js = await fetch(`${server.base}/dashboard/app.js`);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type')!, /^text\/javascript/);
  const css = await fetch(`${server.base}/dashboard/style.css`);
  assert.match(css.headers.get('content-type')!, /^text\/css/);
  assert.equal((await fetch(`${server.base}/dashboard/nope.js`)).status, 404);
  // Nothing else bypasses auth.
  assert.equal((await fetch(`${server.base}/admin/state`)).status, 401);
  assert.equal((await fetch(`${server.base}/dashboard`)).status, 401);
  assert.equal((await fetch(`${server.base}/admin/state`, { headers: { authorization: `Bearer ${KEY}` } })).status, 200);
});

test('in a browser: key, Library, refused load, load with progress, Ready, streamed chat, tool call, Main numbers', async (t) => {
  if (browser === null) return t.skip(noBrowser);

  await page.goto(server.base);
  // Without a key the API answers 401 and the page asks for one.
  await page.getByRole('alert').filter({ hasText: 'needs an API key' }).waitFor();
  await page.getByLabel('API key').fill(KEY);
  await page.getByRole('button', { name: 'Use key', exact: true }).click();
  await page.locator('#state-badge', { hasText: 'no_model' }).waitFor();
  assert.equal(await page.locator('#auth-message').isHidden(), true);
  await shot('01-no-model');

  // Chat with no model: 503 model_not_loaded shown plainly.
  await page.getByRole('button', { name: 'Chat', exact: true }).click();
  await page.getByLabel('Message').fill('Hello');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  const notLoaded = page.locator('#chat-log .error');
  await notLoaded.waitFor();
  assert.match(await notLoaded.innerText(), /No model is loaded.*model_not_loaded/s);
  await page.getByRole('button', { name: 'Clear', exact: true }).click();

  // The Library, and a refused load with its reason.
  await page.getByRole('button', { name: 'Library', exact: true }).click();
  await page.locator('#library tr', { hasText: 'svc-tiny-chat' }).waitFor();
  await page.getByRole('button', { name: `Load ${REFUSED_MODEL} with recipe default` }).click();
  const libraryError = page.locator('#library-error');
  await libraryError.filter({ hasText: REFUSED_REASON }).waitFor();
  assert.match(await libraryError.innerText(), /model_refused/);
  await shot('02-refused');

  // Adding a path that holds no model: the 400 shown.
  await page.getByLabel(/Add by path/).fill('/no/such/model');
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await libraryError.filter({ hasText: 'No model at /no/such/model' }).waitFor();

  // Load svc-tiny-chat: the progress bar while loading, then Ready.
  await page.getByRole('button', { name: 'Load svc-tiny-chat with recipe default' }).click();
  await page.locator('#loading:not([hidden])').waitFor();
  assert.match(await page.locator('#load-label').innerText(), /Loading svc-tiny-chat: \d+ \/ 30 tensors/);
  await shot('03-loading');
  await page.locator('#state-badge', { hasText: 'ready' }).waitFor();
  await page.locator('#loading[hidden]').waitFor({ state: 'attached' });
  assert.equal(await libraryError.isHidden(), true);

  // A streamed chat answer; reasoning (the tiny model thinks by default) apart from it.
  await page.getByRole('button', { name: 'Chat', exact: true }).click();
  await page.getByLabel('Message').fill('Hello! Who are you?');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.getByRole('button', { name: 'Stop', exact: true }).waitFor({ state: 'visible' });
  await page.locator('#chat-send:not([disabled])').waitFor({ timeout: 60_000 });
  const assistant = page.locator('#chat-log li.assistant').last();
  assert.equal(await assistant.locator('.error').count(), 0);
  const answer = await assistant.locator('.answer').innerText();
  assert.ok(answer.trim().length > 0, 'an answer appeared');
  assert.ok(!answer.includes('<think>') && !answer.includes('</think>'));
  if ((await assistant.locator('details.reasoning').count()) > 0) {
    const reasoning = await assistant.locator('.reasoning-text').textContent();
    assert.ok(reasoning!.trim().length > 0);
  }
  await shot('04-chat');

  // With a tool offered, the model's call is shown as a call.
  await page.getByRole('button', { name: 'Clear', exact: true }).click();
  await page.locator('summary', { hasText: 'Tools' }).click();
  await page.getByLabel(/Tools offered/).fill(JSON.stringify(WEATHER_TOOL));
  await page.getByLabel('Message').fill("What's the weather in Prague?");
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.locator('#chat-send:not([disabled])').waitFor({ timeout: 60_000 });
  const call = page.locator('#chat-log li.assistant .tool-call');
  await call.first().waitFor();
  assert.match(await call.first().innerText(), /^Tool call: get_weather\(\{.*Prague.*\}\)$/s);
  assert.ok((await page.locator('#chat-log li.assistant details.reasoning').count()) > 0, 'reasoning shown apart');
  await shot('05-tool-call');

  // The Main view's numbers.
  await page.getByRole('button', { name: 'Main', exact: true }).click();
  await page.locator('#recent tr', { hasText: '/v1/chat/completions' }).first().waitFor();
  assert.equal(await page.locator('#stat-state').innerText(), 'ready');
  assert.match(await page.locator('#stat-model').innerText(), /^svc-tiny-chat/);
  assert.equal(await page.locator('#stat-recipe').innerText(), 'default');
  assert.match(await page.locator('#stat-uptime').innerText(), /^\d+(m|s)/);
  assert.ok(Number(await page.locator('#stat-requests').innerText()) >= 3);
  assert.match(await page.locator('#stat-kv').innerText(), /^\d+\.\d %$/);
  assert.match(await page.locator('#stat-running').innerText(), /^\d+$/);
  await shot('06-main');
});
