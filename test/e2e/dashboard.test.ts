// The web dashboard in a real browser: playwright-core driving the headless Chromium of
// @sparticuz/chromium (runs offline), against a real `svc serve` started with no model and
// --require-auth: the page loads without a key, asks for it, and every call then sends it; the
// Library refuses an unsupported model, loads svc-tiny-chat, chats (streamed, reasoning apart,
// tool calls as calls), swaps to the demo model, and a stored conversation survives the swap.
// Screenshots go to test-artifacts/dashboard/ (git-ignored).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import chromium from '@sparticuz/chromium';
import { chromium as pw, type Browser, type Page } from 'playwright-core';
import { writeGguf } from '../../src/model/loaders/gguf-writer.js';
import { freePort, runSvc } from '../helpers/svc-cli.js';
import { REPO_ROOT, TINY_CHAT } from '../helpers/paths.js';

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

/** A real svc with no model; `call` sends the key. */
let server: { base: string; stop: () => Promise<void>; call: (method: string, path: string, body?: unknown) => Promise<Response> };
let scratch: string;
let refusedPath: string;
let browser: Browser | null = null;
let noBrowser = '';
let page: Page;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'svc-dashboard-'));
  refusedPath = join(scratch, 'mamba.gguf');
  writeGguf(refusedPath, { metadata: { 'general.architecture': 'mamba' } });
  const port = await freePort();
  const svc = runSvc(
    [
      'serve',
      '--port',
      String(port),
      '--max-seq-len',
      '512',
      '--max-num-seqs',
      '4',
      '--swap-space-gb',
      '0',
      '--require-auth',
      '--auth-token',
      KEY,
    ],
    /^Listening on /m,
  );
  await svc.ready;
  const base = `http://127.0.0.1:${port}`;
  server = {
    base,
    stop: async () => {
      svc.child.kill('SIGTERM');
      await svc.exited;
    },
    call: (method, path, body) =>
      fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
  };
  // The unsupported model in the Library, for the refusal the page shows.
  assert.equal((await server.call('POST', '/admin/library', { path: refusedPath })).status, 200);
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
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
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

test('in a browser: key, Library, refused load, load, Ready, streamed chat, tool call, Main numbers, swap, conversation kept', async (t) => {
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
  await page.locator('#library tr', { hasText: 'stories260K' }).waitFor();
  await page.getByRole('button', { name: `Load ${refusedPath} with recipe default` }).click();
  const libraryError = page.locator('#library-error');
  await libraryError.filter({ hasText: 'unsupported architecture mamba' }).waitFor();
  assert.match(await libraryError.innerText(), /model_refused/);
  await shot('02-refused');

  // Adding a path that holds no model: the 400 shown.
  await page.getByLabel(/Add by path/).fill('/no/such/model');
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await libraryError.filter({ hasText: /not_a_model|no model/i }).waitFor();

  // Add svc-tiny-chat by its path, load it: Ready.
  await page.getByLabel(/Add by path/).fill(TINY_CHAT);
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await page.getByRole('button', { name: `Load ${TINY_CHAT} with recipe default` }).click();
  await shot('03-loading');
  await page.locator('#state-badge', { hasText: 'ready' }).waitFor({ timeout: 60_000 });
  // A successful load returns to the Main view.
  await page.locator('.tab[data-view="main"][aria-pressed="true"]').waitFor();
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
  assert.match(await page.locator('#stat-model').innerText(), /svc-tiny-chat/);
  assert.equal(await page.locator('#stat-recipe').innerText(), 'default');
  assert.match(await page.locator('#stat-uptime').innerText(), /^\d+(m|s)/);
  assert.ok(Number(await page.locator('#stat-requests').innerText()) >= 3);
  assert.match(await page.locator('#stat-kv').innerText(), /^\d+\.\d %$/);
  assert.match(await page.locator('#stat-running').innerText(), /^\d+$/);
  await shot('06-main');

  // A stored conversation, then a swap to the demo from the Library: the state changes, and the
  // conversation is still there.
  const conversation = (await (await server.call('POST', '/v1/conversations', { metadata: { k: 'v' } })).json()) as { id: string };
  await page.getByRole('button', { name: 'Library', exact: true }).click();
  await page.getByRole('button', { name: 'Load demo/stories260K with recipe default' }).click();
  await page.getByRole('button', { name: 'Main', exact: true }).click();
  await page.locator('#stat-model', { hasText: 'stories260K' }).waitFor({ timeout: 60_000 });
  assert.equal(await page.locator('#stat-state').innerText(), 'ready');
  const kept = await server.call('GET', `/v1/conversations/${conversation.id}`);
  assert.equal(kept.status, 200);
  assert.equal(((await kept.json()) as { metadata: { k: string } }).metadata.k, 'v');
  await shot('07-swapped');
});
