// End to end: the Anthropic Messages protocol against the real engine running svc-tiny-chat,
// driven by the official `@anthropic-ai/sdk` client (and raw HTTP for the event sequence, error
// shapes and hang-ups). The tiny model's facts are unreliable: these assert structure and
// protocol behaviour, not content.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { pino } from 'pino';
import { planChatOutput } from '../../src/chat/output-plan.js';
import { ApiKeys } from '../../src/ops/auth.js';
import { buildApp } from '../../src/server/app.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import { startTinyServer, TINY_OPTIONS, type TinyServer } from '../helpers/tiny-server.js';

const QUESTION: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the capital of France?' }];
const WEATHER: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Get the current weather for a city.',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
};
const WEATHER_QUESTION: Anthropic.MessageParam[] = [{ role: 'user', content: "What's the weather in Prague?" }];
const STOP_REASONS = ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use'];
/** Greedy sampling, for repeatable runs (this SDK version's types no longer list `temperature`; the API takes it). */
const GREEDY = { temperature: 0 } as object;

let server: TinyServer;
let client: Anthropic;
before(async () => {
  server = await startTinyServer();
  client = new Anthropic({ baseURL: server.base, apiKey: 'x', maxRetries: 0 });
});
after(async () => {
  await server?.close();
});

/** Blocks of a message are well formed whatever the model said. */
function checkBlocks(content: Anthropic.ContentBlock[]): void {
  for (const b of content) {
    if (b.type === 'text') assert.equal(typeof b.text, 'string');
    else if (b.type === 'thinking') assert.ok(typeof b.thinking === 'string' && b.signature.length > 0, 'thinking has a signature');
    else if (b.type === 'tool_use') {
      assert.match(b.id, /^toolu_/);
      assert.ok(b.input !== null && typeof b.input === 'object' && !Array.isArray(b.input));
    } else assert.fail(`unexpected block ${b.type}`);
  }
}

test('messages.create: a message with content blocks, stop_reason and usage', async () => {
  const msg = await client.messages.create({ model: 'm', ...GREEDY, max_tokens: 200, messages: QUESTION });
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.model, 'svc-tiny-chat');
  assert.ok(msg.content.length > 0);
  checkBlocks(msg.content);
  assert.ok(STOP_REASONS.includes(msg.stop_reason!));
  assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0);
  // The tiny model reasons first (Qwen3 template): a thinking block comes before the text.
  const types = msg.content.map((b) => b.type);
  if (types.includes('thinking') && types.includes('text')) assert.ok(types.indexOf('thinking') < types.indexOf('text'));
});

test('messages.stream with a tool: events accumulate into finalMessage() with a tool_use block', async () => {
  const stream = client.messages.stream({
    model: 'm',
    ...GREEDY,
    max_tokens: 400,
    messages: WEATHER_QUESTION,
    tools: [WEATHER],
    tool_choice: { type: 'tool', name: 'get_weather' },
  });
  const seen: string[] = [];
  stream.on('streamEvent', (e) => seen.push(e.type));
  const msg = await stream.finalMessage();
  assert.equal(seen[0], 'message_start');
  assert.equal(seen.at(-1), 'message_stop');
  checkBlocks(msg.content);
  assert.equal(msg.stop_reason, 'tool_use');
  const call = msg.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
  assert.ok(call, 'the forced tool was called');
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof (call.input as { city?: unknown }).city, 'string', 'schema-valid input (grammar enforced)');
  assert.ok(msg.usage.output_tokens > 0);
});

test('a tool_result follow-up turn (with the thinking block sent back) is answered', async () => {
  const first = await client.messages.create({
    model: 'm',
    ...GREEDY,
    max_tokens: 400,
    messages: WEATHER_QUESTION,
    tools: [WEATHER],
    tool_choice: { type: 'any' },
  });
  const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
  assert.ok(call);
  const second = await client.messages.create({
    model: 'm',
    ...GREEDY,
    max_tokens: 200,
    tools: [WEATHER],
    messages: [
      ...WEATHER_QUESTION,
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"temperature": 21, "unit": "celsius", "sky": "clear"}' }],
      },
    ],
  });
  checkBlocks(second.content);
  assert.ok(STOP_REASONS.includes(second.stop_reason!));
  assert.ok(second.usage.input_tokens > first.usage.input_tokens, 'the history is in the prompt');
});

test('thinking and redacted_thinking blocks in history are accepted; thinking enabled / disabled', async () => {
  const history: Anthropic.MessageParam[] = [
    ...QUESTION,
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user asks for a capital.', signature: 'anything' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: 'Paris.' },
      ],
    },
    { role: 'user', content: 'And of Italy?' },
  ];
  const enabled = await client.messages.create({
    model: 'm',
    ...GREEDY,
    max_tokens: 300,
    messages: history,
    thinking: { type: 'enabled', budget_tokens: 1024 },
  });
  checkBlocks(enabled.content);
  const disabled = await client.messages.create({
    model: 'm',
    ...GREEDY,
    max_tokens: 100,
    messages: history,
    thinking: { type: 'disabled' },
  });
  checkBlocks(disabled.content);
  assert.ok(!disabled.content.some((b) => b.type === 'thinking'), 'thinking disabled: no thinking block');
});

test('count_tokens: input_tokens equals what messages.create reports (system and tools included)', async () => {
  const body = { model: 'm', system: 'You are terse.', messages: WEATHER_QUESTION, tools: [WEATHER] };
  const counted = await client.messages.countTokens(body);
  const run = await client.messages.create({ ...body, max_tokens: 1 });
  assert.equal(counted.input_tokens, run.usage.input_tokens);
  const bare = await client.messages.countTokens({ model: 'm', messages: WEATHER_QUESTION });
  assert.ok(bare.input_tokens < counted.input_tokens);
});

test('error shapes: 400 through the SDK, 404 under the prefix, 413, all {type: error, error: {type, message}}', async () => {
  await assert.rejects(
    client.messages.create({ model: 'm', max_tokens: 5, messages: [] }),
    (err: InstanceType<typeof Anthropic.APIError>) => {
      const body = err.error as { type: string; error: { type: string; message: string } };
      return err instanceof Anthropic.BadRequestError && body.type === 'error' && body.error.type === 'invalid_request_error';
    },
  );
  const post = (path: string, body: string) =>
    fetch(`${server.base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body,
    });
  const missing = await post('/v1/messages?beta=true', JSON.stringify({ model: 'm', messages: QUESTION }));
  assert.equal(missing.status, 400);
  assert.deepEqual(Object.keys((await missing.json()) as object), ['type', 'error']);
  const unknown = await post('/v1/messages/unknown', '{}');
  assert.equal(unknown.status, 404);
  assert.equal(((await unknown.json()) as { error: { type: string } }).error.type, 'not_found_error');
  const big = await post(
    '/v1/messages',
    JSON.stringify({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x'.repeat(TINY_OPTIONS.maxBodyBytes) }] }),
  );
  assert.equal(big.status, 413);
  assert.equal(((await big.json()) as { error: { type: string } }).error.type, 'request_too_large');
});

test('auth on: a wrong x-api-key is a 401 authentication_error, the right one is served', async () => {
  const lifecycle = new Lifecycle();
  lifecycle.setReady(server.runtime);
  const guarded = buildApp({
    options: TINY_OPTIONS,
    logger: pino({ level: 'warn' }),
    lifecycle,
    chatOutput: planChatOutput,
    apiKeys: new ApiKeys(['sk-ant-right']),
  });
  await guarded.listen({ port: 0, host: '127.0.0.1' });
  try {
    const baseURL = `http://127.0.0.1:${(guarded.server.address() as AddressInfo).port}`;
    await assert.rejects(
      new Anthropic({ baseURL, apiKey: 'sk-ant-wrong', maxRetries: 0 }).messages.create({ model: 'm', max_tokens: 3, messages: QUESTION }),
      (err: InstanceType<typeof Anthropic.APIError>) =>
        err instanceof Anthropic.AuthenticationError && (err.error as { error: { type: string } }).error.type === 'authentication_error',
    );
    const ok = await new Anthropic({ baseURL, apiKey: 'sk-ant-right', maxRetries: 0 }).messages.create({
      model: 'm',
      max_tokens: 3,
      messages: QUESTION,
    });
    assert.equal(ok.type, 'message');
  } finally {
    await guarded.close();
  }
});

test('raw stream: named events in Anthropic order, block indexes consistent, message_delta then message_stop', async () => {
  const res = await fetch(`${server.base}/v1/messages?beta=true`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'x',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'fine-grained-tool-streaming-2025-05-14',
    },
    body: JSON.stringify({ model: 'm', max_tokens: 300, messages: WEATHER_QUESTION, tools: [WEATHER], stream: true, temperature: 0 }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const frames = (await res.text()).split('\n\n').filter((f) => f.trim() !== '');
  const events = frames.map((f) => {
    const [eventLine, dataLine, ...rest] = f.split('\n');
    assert.equal(rest.length, 0);
    assert.match(eventLine!, /^event: \w+$/);
    const data = JSON.parse(dataLine!.replace(/^data: /, '')) as {
      type: string;
      index?: number;
      content_block?: { type: string };
      delta?: { type: string };
    };
    assert.equal(data.type, eventLine!.slice('event: '.length));
    return data;
  });
  assert.equal(events[0]!.type, 'message_start');
  assert.deepEqual(
    events.slice(-2).map((e) => e.type),
    ['message_delta', 'message_stop'],
  );
  let open: number | null = null;
  let next = 0;
  let openType = '';
  for (const e of events.slice(1, -2)) {
    switch (e.type) {
      case 'ping':
        break;
      case 'content_block_start':
        assert.equal(open, null);
        assert.equal(e.index, next++);
        open = e.index!;
        openType = e.content_block!.type;
        break;
      case 'content_block_delta': {
        assert.equal(e.index, open);
        const allowed: Record<string, string[]> = {
          text: ['text_delta'],
          thinking: ['thinking_delta', 'signature_delta'],
          tool_use: ['input_json_delta'],
        };
        assert.ok(allowed[openType]!.includes(e.delta!.type), `${e.delta!.type} in a ${openType} block`);
        break;
      }
      case 'content_block_stop':
        assert.equal(e.index, open);
        open = null;
        break;
      default:
        assert.fail(`unexpected event ${e.type}`);
    }
  }
  assert.equal(open, null, 'every block was stopped');
  assert.ok(next > 0, 'at least one block');
});

/** Streams a message over node:http and drops the connection after `frames` chunks. */
function streamAndHangUp(frames: number): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest(`${server.base}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' } });
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
    req.end(JSON.stringify({ model: 'm', max_tokens: 1500, messages: QUESTION, stream: true, temperature: 1 }));
  });
}

test('clients hanging up mid-stream: every sequence and KV block is freed', async () => {
  await Promise.all([2, 3, 4, 5].map((frames) => streamAndHangUp(frames)));
  let stats = server.engine.stats();
  for (let t = 0; t < 300 && (stats.running > 0 || stats.waiting > 0 || stats.kvBlocksUsed > 0); t++) {
    await new Promise((r) => setTimeout(r, 20));
    stats = server.engine.stats();
  }
  assert.deepEqual(
    { running: stats.running, waiting: stats.waiting, kvBlocksUsed: stats.kvBlocksUsed },
    { running: 0, waiting: 0, kvBlocksUsed: 0 },
  );
  const after = await client.messages.create({ model: 'm', max_tokens: 3, messages: QUESTION });
  assert.equal(after.type, 'message');
});
