// --dump: the dump file (src/ops/dump-file.ts) and the hook that records every exchange
// (src/ops/dump.ts), over the real app with a scripted engine: JSON bodies and SSE streams as sent,
// credentials removed, probes skipped, refusals recorded, and a client that leaves mid-stream still
// cancels its generation through the tap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { ApiKeys } from '../../src/ops/auth.js';
import { DumpFile } from '../../src/ops/dump-file.js';
import { sseEvents, type DumpRecord } from '../../src/ops/dump.js';
import { IM_END, scriptedApp, tinyTokenizer } from '../helpers/scripted-app.js';

const KEY = 'sk-dump-unit-5be1c0a7';
const COOKIE = 'session=dump-cookie-93f2';

test('sseEvents: named and unnamed frames, JSON or text data, multi-line data', () => {
  const text = 'event: message_start\ndata: {"a":1}\n\ndata: {"b":[2]}\n\ndata: line one\ndata: line two\n\ndata: [DONE]\n\n';
  assert.deepStrictEqual(sseEvents(text), [
    { event: 'message_start', data: { a: 1 } },
    { data: { b: [2] } },
    { data: 'line one\nline two' },
    { data: '[DONE]' },
  ]);
});

test('DumpFile: makes the directory, one private file per process start, lines in order; a failed write warns once', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'svc-dump-')), 'nested', 'dir');
  const warnings: string[] = [];
  const dump = await DumpFile.open(dir, (m) => warnings.push(m));
  assert.match(dump.path, new RegExp(`/svc-dump-\\d{4}-\\d\\d-\\d\\dT\\d\\d-\\d\\d-\\d\\d\\.\\d{3}Z-${process.pid}\\.jsonl$`));
  assert.equal(statSync(dump.path).mode & 0o777, 0o600);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  for (let i = 0; i < 50; i++) dump.write({ i });
  await dump.close();
  const lines = readFileSync(dump.path, 'utf8').trimEnd().split('\n');
  assert.deepStrictEqual(
    lines.map((l) => (JSON.parse(l) as { i: number }).i),
    Array.from({ length: 50 }, (_, i) => i),
  );
  // Written after close: the writes fail, one warning says so.
  dump.write({ late: 1 });
  dump.write({ late: 2 });
  await delay(50);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /^--dump: cannot write to \S+\.jsonl \(EBADF\); requests are served/);
});

async function readRecords(dump: DumpFile): Promise<{ text: string; records: DumpRecord[] }> {
  await dump.close();
  const text = readFileSync(dump.path, 'utf8');
  return {
    text,
    records: text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as DumpRecord),
  };
}

test('every exchange is recorded: body and response, the stream as sent, refusals; no credential, no probe', async () => {
  const dump = await DumpFile.open(mkdtempSync(join(tmpdir(), 'svc-dump-')), () => undefined);
  const { app } = scriptedApp({ apiKeys: new ApiKeys([KEY]), dump });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, cookie: COOKIE };
  const body = { model: 'm', messages: [{ role: 'user', content: 'Capital of France?' }], max_tokens: 8 };
  try {
    const plain = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body) });
    assert.equal(plain.status, 200);
    const plainJson = await plain.json();
    const streamed = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...headers, authorization: '', 'x-api-key': KEY },
      body: JSON.stringify({ ...body, stream: true }),
    });
    assert.equal(streamed.status, 200);
    const streamText = await streamed.text();
    assert.equal((await fetch(`${base}/health`)).status, 200);
    assert.equal((await fetch(`${base}/v1/models`, { headers: { authorization: 'Bearer sk-wrong-key-1234' } })).status, 401);

    await app.close();
    const { text, records } = await readRecords(dump);
    for (const secret of [KEY, COOKIE, 'sk-wrong-key-1234']) assert.ok(!text.includes(secret), `${secret} is in the dump`);
    assert.deepStrictEqual(
      records.map((r) => [r.method, r.url, r.status]),
      [
        ['POST', '/v1/chat/completions', 200],
        ['POST', '/v1/chat/completions', 200],
        ['GET', '/v1/models', 401],
      ],
    );
    const [first, second, refused] = records as [DumpRecord, DumpRecord, DumpRecord];
    assert.deepStrictEqual(first.body, body);
    assert.deepStrictEqual(first.response, plainJson);
    assert.equal(first.events, undefined);
    assert.equal(first.headers['content-type'], 'application/json');
    for (const name of ['authorization', 'cookie', 'x-api-key']) assert.equal(first.headers[name], undefined, name);
    assert.match(String(first.responseHeaders['content-type']), /^application\/json/);
    assert.ok(first.durationMs >= 0 && !Number.isNaN(Date.parse(first.time)) && first.id !== '');

    assert.deepStrictEqual(second.body, { ...body, stream: true });
    assert.equal(second.response, undefined);
    assert.deepStrictEqual(second.events, sseEvents(streamText));
    const events = second.events!;
    assert.equal(events.at(-1)!.data, '[DONE]');
    const content = events
      .slice(0, -1)
      .map((e) => (e.data as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '')
      .join('');
    assert.equal(content, 'Paris.');
    assert.equal((refused.response as { error: { code: string } }).error.code, 'invalid_api_key');
    assert.equal(refused.body, null);
  } finally {
    await app.close();
  }
});

test('a client that leaves mid-stream: the generation is cancelled and the record says aborted', async () => {
  const dump = await DumpFile.open(mkdtempSync(join(tmpdir(), 'svc-dump-')), () => undefined);
  const ids = tinyTokenizer.encode(' word'.repeat(200)).concat(IM_END);
  const { app, engine } = scriptedApp({ dump, script: { ids, chunk: 1, delayMs: 5 } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  try {
    const abort = new AbortController();
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Talk.' }], max_tokens: 150, stream: true }),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    abort.abort();
    for (let i = 0; i < 200 && !engine.jobs[0]?.ended; i++) await delay(10);
    assert.equal(engine.jobs[0]!.cancelled, true, 'the generation was cancelled');
    assert.ok(engine.jobs[0]!.sent < 150);
    await app.close();
    const { records } = await readRecords(dump);
    assert.equal(records.length, 1);
    assert.equal(records[0]!.aborted, true);
    assert.equal(records[0]!.status, 200);
    assert.ok(records[0]!.events!.length >= 1);
  } finally {
    await app.close();
  }
});
