// `svc serve --require-auth --auth-tokens-file` as a user runs it, with the per-key rate limit
// from SVC_RATE_LIMIT_*: keys from the file (comments and blank lines skipped), the official
// OpenAI client with the right and a wrong key, /health open, 429 with Retry-After; and start-up
// errors about keys that exit 1 with one line naming the file or flag, never a key. No key ever
// shows in anything svc prints, debug request logs included.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { TINY_CHAT } from '../helpers/paths.js';
import { freePort, runSvc } from '../helpers/svc-cli.js';

const KEY_A = 'sk-e2e-alpha-4f1c9b2e7d';
const KEY_B = 'sk-e2e-bravo-93ad01';
const FLAG_KEY = 'sk-e2e-flag-key-77aa';

function tokensFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'svc-keys-')), 'keys.txt');
  writeFileSync(file, text);
  return file;
}

function assertNoKey(text: string): void {
  for (const key of [KEY_A, KEY_B, FLAG_KEY]) assert.ok(!text.includes(key), `a key was printed:\n${text}`);
}

test('svc serve --require-auth --auth-tokens-file: keys from the file, 401 without one, /health open, 429 per key; no key printed', async () => {
  const file = tokensFile(`# svc API keys\n\n${KEY_A}\n   # indented comment\n  ${KEY_B}  \r\n\n`);
  const port = await freePort();
  const svc = runSvc(
    ['serve', '--model-from-path', TINY_CHAT, '--port', String(port), '--require-auth', '--auth-tokens-file', file, '--max-seq-len', '512'],
    /^Listening on /m,
    // 600/min = 10 per second, bursts of 8 requests per key.
    { SVC_LOG_LEVEL: 'debug', SVC_RATE_LIMIT_RPM: '600', SVC_RATE_LIMIT_BURST_RPM: '8' },
  );
  try {
    await svc.ready;
    const base = `http://127.0.0.1:${port}`;
    assert.match(svc.output().stderr, /^Authentication: on \(2 API keys\)$/m);
    assert.match(svc.output().stderr, /^Rate limit per key: 600 requests\/min \(burst 8\)$/m);

    assert.equal((await fetch(`${base}/health`)).status, 200);
    const refused = await fetch(`${base}/v1/models`);
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer');
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
    assert.equal((await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${KEY_A}x` } })).status, 401);
    assert.equal((await fetch(`${base}/v1/models`, { headers: { 'x-api-key': KEY_B } })).status, 200);

    // The official client: its apiKey goes out as `Authorization: Bearer`.
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY_A, maxRetries: 0 });
    const chat = await client.chat.completions.create({
      model: 'x',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 3,
      temperature: 0,
    });
    assert.ok(chat.usage!.completion_tokens >= 1);
    const wrong = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (err: unknown) => err instanceof OpenAI.AuthenticationError && err.status === 401);

    // Key A has made 2 requests of its 8; hammering it gets a 429 with Retry-After, key B is unaffected.
    let limited: Response | undefined;
    for (let i = 0; i < 50 && limited === undefined; i++) {
      const res = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${KEY_A}` } });
      if (res.status === 429) limited = res;
      else assert.equal(res.status, 200);
    }
    assert.ok(limited, 'key A was rate limited');
    assert.equal(limited.headers.get('retry-after'), '1');
    assert.equal(((await limited.json()) as { error: { code: string } }).error.code, 'rate_limit_exceeded');
    assert.equal((await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${KEY_B}` } })).status, 200);
  } finally {
    svc.child.kill('SIGTERM');
  }
  assert.equal(await svc.exited, 0);
  const { stderr, stdout } = svc.output();
  assert.match(stderr, /"url":"\/v1\/models"/, 'debug request lines were logged');
  assertNoKey(stderr + stdout);
});

test('start-up errors about keys: exit 1, one line naming the file or flag, never a key', async () => {
  const model = ['serve', '--model-from-path', TINY_CHAT, '--port', String(await freePort())];
  const dir = mkdtempSync(join(tmpdir(), 'svc-keys-'));
  const cases: [string, string[], RegExp][] = [
    [
      'a missing file',
      ['--require-auth', '--auth-token', FLAG_KEY, '--auth-tokens-file', join(dir, 'nope.txt')],
      /^svc: --auth-tokens-file \S+nope\.txt: cannot read it \(ENOENT\)\n$/,
    ],
    ['a directory', ['--require-auth', '--auth-tokens-file', dir], /^svc: --auth-tokens-file \S+: cannot read it \(EISDIR\)\n$/],
    [
      'a file of comments only',
      ['--require-auth', '--auth-token', FLAG_KEY, '--auth-tokens-file', tokensFile('# no keys yet\n\n   \n')],
      /^svc: --auth-tokens-file \S+keys\.txt: holds no API key \(only blank lines and # comments\)\n$/,
    ],
    [
      'a key with a space in the file',
      ['--require-auth', '--auth-tokens-file', tokensFile(`${KEY_A}\n# ok\n${KEY_B} ${KEY_A}\n`)],
      /^svc: --auth-tokens-file \S+keys\.txt: line 3: an API key must be printable ASCII without spaces\n$/,
    ],
    [
      'a flag key with a space',
      ['--require-auth', '--auth-token', FLAG_KEY, '--auth-token', `${KEY_B} x`],
      /^svc: --auth-token \(the 2nd\): an API key must be printable ASCII without spaces\n$/,
    ],
  ];
  for (const [what, args, expected] of cases) {
    const svc = runSvc([...model, ...args]);
    assert.equal(await svc.exited, 1, what);
    const { stderr, stdout } = svc.output();
    assert.match(stderr, expected, what);
    assertNoKey(stderr + stdout);
  }

  // --require-auth with no key at all is a usage error (exit 2) before start-up.
  const none = runSvc([...model, '--require-auth']);
  assert.equal(await none.exited, 2);
  assert.equal(none.output().stderr, 'svc: --require-auth: needs --auth-token or --auth-tokens-file\n');

  // A failure after the keys were loaded (the model) does not print them either.
  const missingModel = runSvc(['serve', '--model-from-path', join(dir, 'no-model'), '--require-auth', '--auth-token', FLAG_KEY]);
  assert.equal(await missingModel.exited, 1);
  assert.match(missingModel.output().stderr, /^svc: /);
  assertNoKey(missingModel.output().stderr);

  // A burst without its cap is a contradiction, not silently ignored.
  const burst = runSvc(model, undefined, { SVC_RATE_LIMIT_BURST_RPM: '5' });
  assert.equal(await burst.exited, 1);
  assert.equal(burst.output().stderr, 'svc: SVC_RATE_LIMIT_BURST_RPM: set, but SVC_RATE_LIMIT_RPM is 0 (off)\n');
});
