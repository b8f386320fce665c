// `svc serve --dump DIR --require-auth --auth-token KEY` as a user runs it, with the official
// OpenAI client: a plain and a streamed chat completion each land in the dump file as one JSON line
// (request body, and the response body or the stream's events as sent), and the key is nowhere in
// the file. Without --profile, GET /debug/profile is a 404 that says how to turn it on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { DumpRecord } from '../../src/ops/dump.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { freePort, runSvc } from '../helpers/svc-cli.js';

const KEY = 'sk-e2e-dump-8c41d07e';

test('svc serve --dump: plain and streamed chat completions as JSON lines, the API key nowhere in the file', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'svc-dump-e2e-')), 'dumps');
  const port = await freePort();
  const svc = runSvc(
    [
      'serve',
      '--model-from-path',
      TINY_CHAT,
      '--port',
      String(port),
      '--max-seq-len',
      '512',
      '--dump',
      dir,
      '--require-auth',
      '--auth-token',
      KEY,
    ],
    /^Listening on /m,
  );
  const messages = [{ role: 'user' as const, content: 'What is the capital of France?' }];
  let plainContent: string;
  let streamedContent = '';
  try {
    await svc.ready;
    assert.match(svc.output().stderr, /^Dump: every request and its response are written to \S+\/svc-dump-\S+\.jsonl$/m);
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, maxRetries: 0 });
    const plain = await client.chat.completions.create({ model: 'x', messages, max_tokens: 8, temperature: 0 });
    plainContent = plain.choices[0]!.message.content ?? '';
    const stream = await client.chat.completions.create({ model: 'x', messages, max_tokens: 8, temperature: 0, stream: true });
    for await (const chunk of stream) streamedContent += chunk.choices[0]?.delta.content ?? '';

    const off = await fetch(`http://127.0.0.1:${port}/debug/profile`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(off.status, 404);
    const error = ((await off.json()) as { error: { code: string; message: string } }).error;
    assert.equal(error.code, 'profiling_disabled');
    assert.match(error.message, /--profile/);
  } finally {
    svc.child.kill('SIGTERM');
  }
  assert.equal(await svc.exited, 0);

  const files = readdirSync(dir);
  assert.equal(files.length, 1);
  const text = readFileSync(join(dir, files[0]!), 'utf8');
  assert.ok(!text.includes(KEY), 'the API key is in the dump file');
  const records = text
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as DumpRecord);
  const chats = records.filter((r) => r.url === '/v1/chat/completions');
  assert.equal(chats.length, 2);
  const [plain, streamed] = chats as [DumpRecord, DumpRecord];

  assert.equal(plain.status, 200);
  assert.deepStrictEqual((plain.body as { messages: unknown }).messages, messages);
  const response = plain.response as { object: string; choices: { message: { content: string } }[] };
  assert.equal(response.object, 'chat.completion');
  assert.equal(response.choices[0]!.message.content, plainContent);
  assert.equal(plain.headers.authorization, undefined);

  assert.equal(streamed.status, 200);
  assert.equal((streamed.body as { stream: boolean }).stream, true);
  assert.match(String(streamed.responseHeaders['content-type']), /^text\/event-stream/);
  const events = streamed.events!;
  assert.equal(events.at(-1)!.data, '[DONE]');
  const chunks = events.slice(0, -1).map((e) => e.data as { object: string; choices: { delta: { content?: string } }[] });
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
  assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), streamedContent);
  assert.equal(streamedContent, plainContent, 'greedy: the same answer both ways');
});
