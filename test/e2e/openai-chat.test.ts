// End to end: the real engine running svc-tiny-chat, the real app on a random port, driven by
// the official `openai` client (and raw fetch for the error cases a client would not send).
// The tiny model's answers are often wrong, so these assert structure and consistency, not facts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import { pino } from 'pino';
import { buildApp } from '../../src/server/app.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { findChatTemplate, renderChatTemplate } from '../../src/chat/template.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { startTinyServer, TINY_MAX_SEQ_LEN as MAX_SEQ_LEN, TINY_OPTIONS as OPTIONS, type TinyServer } from '../helpers/tiny-server.js';

const QUESTION = 'What is the capital of France?';
const MESSAGES = [{ role: 'user' as const, content: QUESTION }];

const tokenizer = loadTokenizer(TINY_CHAT);
const chatTemplate = findChatTemplate(TINY_CHAT);
let server: TinyServer;
let base: string;
let client: OpenAI;

before(async () => {
  server = await startTinyServer();
  base = server.base;
  client = server.client;
});

after(async () => {
  await server?.close();
});

/** Prompt length as the template and tokenizer give it, independently of the server's code path. */
function promptTokens(messages: { role: string; content: string }[]): number {
  const text = renderChatTemplate(chatTemplate!, { messages, addGenerationPrompt: true, bosToken: null, eosToken: null });
  return tokenizer.encode(text).length;
}

/** The greedy answer, computed once and reused as the reference by several tests. */
let greedy: Promise<OpenAI.Chat.Completions.ChatCompletion> | null = null;
function greedyAnswer() {
  greedy ??= client.chat.completions.create({ model: 'anything', messages: MESSAGES, temperature: 0, logprobs: true });
  return greedy;
}

test('GET /v1/models lists the one served model', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  assert.equal(models.length, 1);
  assert.equal(models[0]!.id, 'svc-tiny-chat');
  assert.equal(models[0]!.owned_by, 'svc');
});

test('non-streamed chat: content, finish_reason stop, usage consistent with the tokens', async () => {
  const res = await greedyAnswer();
  assert.match(res.id, /^chatcmpl-/);
  assert.equal(res.object, 'chat.completion');
  assert.equal(res.choices.length, 1);
  const choice = res.choices[0]!;
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(choice.message.content!.trim().length > 0, 'non-empty answer');
  assert.ok(!choice.message.content!.includes('<|im_end|>'), 'the end-of-turn token is not text');
  assert.equal(choice.finish_reason, 'stop');
  const usage = res.usage!;
  assert.equal(usage.prompt_tokens, promptTokens(MESSAGES));
  // One logprob record per generated token (the closing <|im_end|> included).
  assert.equal(usage.completion_tokens, choice.logprobs!.content!.length);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  assert.ok(usage.completion_tokens < MAX_SEQ_LEN - usage.prompt_tokens, 'it stopped on its own');
});

test('streamed chat: role first, deltas add up to the greedy answer, finish, usage', async () => {
  const reference = (await greedyAnswer()).choices[0]!.message.content!;
  const stream = await client.chat.completions.create({
    model: 'anything',
    messages: MESSAGES,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  assert.equal(text, reference, 'streaming and non-streaming give the same greedy text');
  assert.ok(chunks.filter((c) => c.choices[0]?.delta.content).length > 1, 'more than one content delta');
  const withFinish = chunks.filter((c) => c.choices[0]?.finish_reason);
  assert.equal(withFinish.length, 1);
  assert.equal(withFinish[0]!.choices[0]!.finish_reason, 'stop');
  const last = chunks.at(-1)!;
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage!.prompt_tokens, promptTokens(MESSAGES));
  assert.equal(last.usage!.completion_tokens, (await greedyAnswer()).usage!.completion_tokens);
});

test('stop string: the answer ends right before it', async () => {
  const message = (await greedyAnswer()).choices[0]!.message as { content: string; reasoning?: string };
  const reference = message.content;
  // Stop strings apply to the whole output, reasoning first: pick one that only the answer contains.
  const reasoning = `<think>${message.reasoning ?? ''}</think>`;
  let at = 0;
  while (at + 3 <= reference.length && reasoning.includes(reference.slice(at, at + 3))) at++;
  assert.ok(at + 3 <= reference.length, 'the answer has a 3-character piece the reasoning lacks');
  const stop = reference.slice(at, at + 3);
  const res = await client.chat.completions.create({ model: 'm', messages: MESSAGES, temperature: 0, stop: [stop] });
  assert.equal(res.choices[0]!.message.content, reference.slice(0, reference.indexOf(stop)));
  assert.equal(res.choices[0]!.finish_reason, 'stop');
});

test('max_tokens reached → finish_reason length', async () => {
  const res = await client.chat.completions.create({ model: 'm', messages: MESSAGES, temperature: 0, max_tokens: 5 });
  assert.equal(res.choices[0]!.finish_reason, 'length');
  assert.equal(res.usage!.completion_tokens, 5);
  const reference = (await greedyAnswer()).choices[0]!.message.content!;
  assert.ok(reference.startsWith(res.choices[0]!.message.content!), 'a prefix of the full greedy answer');
});

test('same seed and temperature 0.8 → identical text', async () => {
  const ask = () => client.chat.completions.create({ model: 'm', messages: MESSAGES, temperature: 0.8, seed: 1234, max_tokens: 60 });
  const [a, b] = await Promise.all([ask(), ask()]);
  assert.ok(a.choices[0]!.message.content!.length > 0);
  assert.equal(a.choices[0]!.message.content, b.choices[0]!.message.content);
});

test('n=2: two choices, usage adds both up', async () => {
  const res = await client.chat.completions.create({ model: 'm', messages: MESSAGES, n: 2, temperature: 0.8, seed: 7, max_tokens: 40 });
  assert.deepEqual(
    res.choices.map((c) => c.index),
    [0, 1],
  );
  for (const c of res.choices) assert.ok(['stop', 'length'].includes(c.finish_reason));
  assert.equal(res.usage!.prompt_tokens, promptTokens(MESSAGES));
  assert.ok(res.usage!.completion_tokens >= 2);
});

test('completions: a string prompt and the same prompt as token ids give the same greedy text', async () => {
  const prompt = '<|im_start|>user\nWhat is the capital of Spain?<|im_end|>\n<|im_start|>assistant\n';
  const fromText = await client.completions.create({ model: 'm', prompt, temperature: 0, max_tokens: 40 });
  assert.equal(fromText.object, 'text_completion');
  assert.ok(fromText.choices[0]!.text.length > 0);
  assert.ok(['stop', 'length'].includes(fromText.choices[0]!.finish_reason));
  const ids = tokenizer.encode(prompt, { addSpecialTokens: true });
  assert.equal(fromText.usage!.prompt_tokens, ids.length);
  const fromIds = await client.completions.create({ model: 'm', prompt: ids, temperature: 0, max_tokens: 40 });
  assert.equal(fromIds.choices[0]!.text, fromText.choices[0]!.text);

  const stream = await client.completions.create({ model: 'm', prompt, temperature: 0, max_tokens: 40, stream: true });
  let text = '';
  for await (const c of stream) text += c.choices[0]?.text ?? '';
  assert.equal(text, fromText.choices[0]!.text);
});

test('400s: the client sees the field in param', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'm', messages: [] }),
    (err: InstanceType<typeof OpenAI.APIError>) => err.status === 400 && err.param === 'messages',
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'm', messages: MESSAGES, max_tokens: MAX_SEQ_LEN }),
    (err: InstanceType<typeof OpenAI.APIError>) => err.status === 400 && err.code === 'context_length_exceeded',
  );
});

test('raw HTTP errors: bad JSON, wrong types, unknown route, body too large', async () => {
  const postRaw = (path: string, body: string) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const badJson = await postRaw('/v1/chat/completions', '{"messages": ');
  assert.equal(badJson.status, 400);
  assert.match(((await badJson.json()) as { error: { message: string } }).error.message, /not valid JSON/);

  const wrongType = await postRaw('/v1/chat/completions', JSON.stringify({ messages: MESSAGES, temperature: 'hot' }));
  assert.equal(wrongType.status, 400);
  const err = ((await wrongType.json()) as { error: { param: string; type: string } }).error;
  assert.equal(err.param, 'temperature');
  assert.equal(err.type, 'invalid_request_error');

  const unknown = await fetch(`${base}/v1/unknown`);
  assert.equal(unknown.status, 404);
  assert.ok(((await unknown.json()) as { error: unknown }).error);

  const big = await postRaw(
    '/v1/chat/completions',
    JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(OPTIONS.maxBodyBytes) }] }),
  );
  assert.equal(big.status, 413);
  assert.equal(((await big.json()) as { error: { code: string } }).error.code, 'request_too_large');

  // Still serving after all that.
  assert.equal((await fetch(`${base}/health`)).status, 200);
});

test('503 model_not_loaded before the model is ready', async () => {
  const starting = buildApp({ options: OPTIONS, logger: pino({ level: 'warn' }), lifecycle: new Lifecycle() });
  await starting.listen({ port: 0, host: '127.0.0.1' });
  try {
    const url = `http://127.0.0.1:${(starting.server.address() as AddressInfo).port}`;
    const health = await fetch(`${url}/health`);
    assert.equal(health.status, 503);
    assert.equal(((await health.json()) as { error: { code: string } }).error.code, 'model_not_loaded');
    const early = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
    await assert.rejects(
      early.chat.completions.create({ model: 'm', messages: MESSAGES }),
      (err: InstanceType<typeof OpenAI.APIError>) => err.status === 503 && err.code === 'model_not_loaded',
    );
  } finally {
    await starting.close();
  }
});

/** Streams a chat over node:http and drops the connection after `frames` SSE data events. */
function streamAndHangUp(frames: number, maxTokens: number): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    req.on('error', () => resolve());
    req.on('response', (res) => {
      let seen = 0;
      res.on('data', () => {
        if (++seen >= frames) {
          req.destroy();
          resolve();
        }
      });
      res.on('end', () => resolve());
    });
    // ignore_eos: unless cancelled, each would run all maxTokens, far past the wait below.
    req.end(
      JSON.stringify({
        model: 'm',
        messages: MESSAGES,
        stream: true,
        max_tokens: maxTokens,
        ignore_eos: true,
        temperature: 1,
        seed: frames,
      }),
    );
  });
}

test('many clients hanging up mid-stream: every sequence and KV block is freed', async () => {
  // A fixed pseudo-random pattern of hang-up points (1 to 6 frames) over 16 concurrent streams.
  const hangups = Array.from({ length: 16 }, (_, i) => 1 + ((i * 7) % 6));
  await Promise.all(hangups.map((frames) => streamAndHangUp(frames, 1500)));
  let stats = server.engine.stats();
  for (let t = 0; t < 300 && (stats.running > 0 || stats.waiting > 0 || stats.kvBlocksUsed > 0); t++) {
    await new Promise((r) => setTimeout(r, 20));
    stats = server.engine.stats();
  }
  assert.deepEqual(
    { running: stats.running, waiting: stats.waiting, kvBlocksUsed: stats.kvBlocksUsed },
    { running: 0, waiting: 0, kvBlocksUsed: 0 },
  );
  // And the server still answers.
  const res = await client.chat.completions.create({ model: 'm', messages: MESSAGES, max_tokens: 3 });
  assert.equal(res.choices.length, 1);
});

test('--max-num-seqs: a request beyond the queue limit gets a retriable 503; the others complete', async () => {
  const small = await startTinyServer({ disableThinking: false }, {}, { maxNumSeqs: 2 });
  try {
    const long = { model: 'm', messages: MESSAGES, max_tokens: 300, ignore_eos: true, temperature: 0 } as never;
    const running = [small.client.chat.completions.create(long), small.client.chat.completions.create(long)];
    // Wait until both are admitted, then one more is refused.
    for (let t = 0; t < 1000 && small.engine.stats().running + small.engine.stats().waiting < 2; t++)
      await new Promise((r) => setTimeout(r, 10));
    await assert.rejects(
      small.client.chat.completions.create({ model: 'm', messages: MESSAGES, max_tokens: 5 }),
      (err: InstanceType<typeof OpenAI.APIError>) => {
        assert.equal(err.status, 503);
        assert.equal(err.code, 'server_busy');
        return true;
      },
    );
    // More sequences than the engine ever holds is the client's error, not a reason to retry.
    await assert.rejects(
      small.client.chat.completions.create({ model: 'm', messages: MESSAGES, n: 3, max_tokens: 5 }),
      (err: InstanceType<typeof OpenAI.APIError>) => {
        assert.equal(err.status, 400);
        assert.equal(err.param, 'n');
        return true;
      },
    );
    for (const r of await Promise.all(running)) assert.equal(r.choices[0]!.finish_reason, 'length');
  } finally {
    await small.close();
  }
});

test('--max-seq-len: prompt + max_tokens beyond it is a 400 naming the limit', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'm', messages: MESSAGES, max_tokens: MAX_SEQ_LEN }),
    (err: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(err.status, 400);
      assert.equal(err.code, 'context_length_exceeded');
      assert.match(err.message, new RegExp(String(MAX_SEQ_LEN)));
      return true;
    },
  );
});

test('--request-timeout: non-streamed → 408 request_timeout; streamed → a final error frame; blocks freed', async () => {
  const timed = await startTinyServer({ disableThinking: false }, { requestTimeoutSec: 1 });
  try {
    const long = { model: 'm', messages: MESSAGES, max_tokens: 1500, ignore_eos: true, temperature: 0 };
    await assert.rejects(timed.client.chat.completions.create(long as never), (err: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(err.status, 408);
      assert.equal(err.code, 'request_timeout');
      return true;
    });
    const res = await fetch(`${timed.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...long, stream: true }),
    });
    const frames = (await res.text())
      .split('\n\n')
      .filter((f) => f.startsWith('data: '))
      .map((f) => f.slice(6));
    assert.equal(frames.at(-1), '[DONE]');
    const last = JSON.parse(frames.at(-2)!) as { error?: { code: string } };
    assert.equal(last.error?.code, 'request_timeout');
    assert.ok(frames.length > 5, 'tokens were streamed before the timeout');
    const chunks = frames.slice(0, -2).map((f) => JSON.parse(f) as { choices: { finish_reason: string | null }[] });
    assert.ok(!chunks.some((c) => c.choices[0]?.finish_reason), 'no finish_reason before the error frame');
    const stats = timed.engine.stats();
    assert.equal(stats.kvBlocksUsed, 0);
    assert.equal(stats.running, 0);
  } finally {
    await timed.close();
  }
});
