// One request must never take the server down: huge prompts (a 16 MiB single-word chat message,
// ~31 MiB of "hello " to /v1/completions, 1 MB just under the character bound) get their 400
// context_length_exceeded quickly while /health, polled every 100 ms, keeps answering; a normal
// request succeeds afterwards and memory comes back. The real engine on svc-tiny-chat, real HTTP.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTinyServer, TINY_MAX_SEQ_LEN, type TinyServer } from '../helpers/tiny-server.js';

const MIB = 2 ** 20;
let server: TinyServer;

before(async () => {
  server = await startTinyServer({ disableThinking: false }, { maxBodyBytes: 32 * MIB });
});

after(async () => {
  await server?.close();
});

/** Polls /health every 100 ms while `work` runs; the slowest answer and how many came. */
async function whileHealthPolled<T>(work: () => Promise<T>): Promise<{ result: T; ms: number; worstHealthMs: number; polls: number }> {
  const latencies: Promise<number>[] = [];
  const timer = setInterval(() => {
    const sent = performance.now();
    latencies.push(
      fetch(`${server.base}/health`).then(async (r) => {
        assert.equal(r.status, 200);
        await r.arrayBuffer();
        return performance.now() - sent;
      }),
    );
  }, 100);
  const started = performance.now();
  try {
    const result = await work();
    const ms = performance.now() - started;
    clearInterval(timer);
    const all = await Promise.all(latencies);
    return { result, ms, worstHealthMs: Math.max(0, ...all), polls: all.length };
  } finally {
    clearInterval(timer);
  }
}

async function post(path: string, body: string): Promise<{ status: number; error: { code: string; param: string; message: string } }> {
  const r = await fetch(`${server.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: r.status, ...((await r.json()) as { error: { code: string; param: string; message: string } }) };
}

function log(what: string, m: { ms: number; worstHealthMs: number; polls: number }) {
  console.log(`${what}: answered in ${m.ms.toFixed(0)} ms; /health worst ${m.worstHealthMs.toFixed(0)} ms over ${m.polls} polls`);
}

test('huge prompts: 400 context_length_exceeded quickly, /health live throughout, a normal request after, RSS back', async () => {
  // Settle first (prompt workers loaded, a request served) so the RSS baseline is the steady state.
  await server.client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
  const rssBefore = process.memoryUsage().rss;

  const word = 'a'.repeat(16 * MIB);
  const chat = await whileHealthPolled(() => post('/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: word }] })));
  log('chat, 16 MiB single word', chat);
  assert.equal(chat.result.status, 400);
  assert.equal(chat.result.error.code, 'context_length_exceeded');
  assert.equal(chat.result.error.param, 'messages');

  const hello = 'hello '.repeat(Math.floor((31 * MIB) / 6));
  const completion = await whileHealthPolled(() => post('/v1/completions', JSON.stringify({ prompt: hello, max_tokens: 1 })));
  log('completions, 31 MiB of "hello "', completion);
  assert.equal(completion.result.status, 400);
  assert.equal(completion.result.error.code, 'context_length_exceeded');
  assert.equal(completion.result.error.param, 'prompt');

  for (const m of [chat, completion]) {
    assert.ok(m.ms < 10_000, `answered in ${m.ms} ms`);
    assert.ok(m.polls >= 1);
    assert.ok(m.worstHealthMs < 1000, `/health took ${m.worstHealthMs} ms`);
  }

  const ok = await server.client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
  assert.ok(ok.choices[0]!.message.content !== undefined);
  assert.ok(server.runtime.prompts!.recycled >= 1, 'the worker that rendered 16 MiB was recycled');

  // Memory comes back: the bodies are garbage, the worker that held them is gone.
  let rssAfter = process.memoryUsage().rss;
  for (let i = 0; i < 20 && rssAfter - rssBefore > 256 * MIB; i++) {
    await new Promise((r) => setTimeout(r, 250));
    rssAfter = process.memoryUsage().rss;
  }
  console.log(`RSS before ${(rssBefore / MIB).toFixed(0)} MiB, after ${(rssAfter / MIB).toFixed(0)} MiB`);
  assert.ok(rssAfter - rssBefore < 512 * MIB, `RSS ${rssBefore / MIB} → ${rssAfter / MIB} MiB`);
});

test('a prompt just under the character bound but over the context: tokenized in a worker, 400, /health live', async () => {
  const bound = TINY_MAX_SEQ_LEN * server.runtime.tokenizer.maxInputCharsPerToken;
  // One long word (stops after a few capped pieces) and a million characters of words (tokenized whole).
  for (const prompt of ['a'.repeat(bound - 10), 'hello '.repeat(Math.floor((bound - 10) / 6))]) {
    const m = await whileHealthPolled(() => post('/v1/completions', JSON.stringify({ prompt, max_tokens: 1 })));
    log(`completions, ${prompt.length} chars (${prompt.slice(0, 6)}…)`, m);
    assert.equal(m.result.status, 400);
    assert.equal(m.result.error.code, 'context_length_exceeded');
    assert.match(m.result.error.message, /at least \d+ tokens/);
    assert.ok(m.worstHealthMs < 1000, `/health took ${m.worstHealthMs} ms`);
  }
  const chat = await whileHealthPolled(() =>
    post('/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: 'word '.repeat(100_000) }] })),
  );
  log('chat, 500k chars of words', chat);
  assert.equal(chat.result.status, 400);
  assert.equal(chat.result.error.code, 'context_length_exceeded');
  assert.ok(chat.worstHealthMs < 1000, `/health took ${chat.worstHealthMs} ms`);
});
