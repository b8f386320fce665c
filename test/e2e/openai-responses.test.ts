// End to end: the Responses API and conversations against the real engine running svc-tiny-chat,
// driven by the official `openai` client (and raw HTTP for the event sequence and a hang-up). The
// tiny model's facts are unreliable: these assert structure and protocol behaviour, not content.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type OpenAI from 'openai';
import type { APIError } from 'openai';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';

const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather for a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', description: 'City name' } },
    required: ['city'],
  },
  strict: true,
};
const FORCE_WEATHER = { type: 'function', name: 'get_weather' } as const;
/** Short answers with thinking off: quick, and enough to check the protocol. */
const QUICK = { temperature: 0, max_output_tokens: 40, reasoning: { effort: 'none' } } as const;

let server: TinyServer;
let client: OpenAI;
before(async () => {
  server = await startTinyServer();
  client = server.client;
});
after(async () => {
  await server?.close();
});

/** Output items are well formed whatever the model said. */
function checkOutput(r: OpenAI.Responses.Response): void {
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.model, 'svc-tiny-chat');
  assert.ok(['completed', 'incomplete'].includes(r.status!));
  if (r.status === 'incomplete') assert.equal(r.incomplete_details?.reason, 'max_output_tokens');
  const ids = new Set<string>();
  for (const item of r.output) {
    assert.ok(!ids.has(item.id!), 'item ids are unique');
    ids.add(item.id!);
    if (item.type === 'message') {
      assert.match(item.id, /^msg_/);
      assert.equal(item.role, 'assistant');
      for (const p of item.content) assert.equal(p.type, 'output_text');
    } else if (item.type === 'reasoning') {
      assert.match(item.id, /^rs_/);
      for (const p of item.content ?? []) assert.equal(p.type, 'reasoning_text');
    } else if (item.type === 'function_call') {
      assert.match(item.id!, /^fc_/);
      assert.match(item.call_id, /^call_/);
      assert.equal(typeof JSON.parse(item.arguments), 'object');
    } else assert.fail(`unexpected item ${item.type}`);
  }
  assert.ok(r.usage!.input_tokens > 0 && r.usage!.output_tokens > 0);
  assert.equal(r.usage!.total_tokens, r.usage!.input_tokens + r.usage!.output_tokens);
}

test('responses.create: a stored response with output items, output_text and usage; GET returns it, DELETE removes it', async () => {
  const r = await client.responses.create({
    model: 'm',
    input: 'What is the capital of France?',
    instructions: 'Answer briefly.',
    ...QUICK,
  });
  checkOutput(r);
  assert.equal((r as unknown as { store: boolean }).store, true);
  assert.equal(r.instructions, 'Answer briefly.');
  assert.equal(typeof r.output_text, 'string');
  const got = await client.responses.retrieve(r.id);
  assert.deepEqual(got.output, r.output);
  assert.equal(got.status, r.status);
  const items = await client.responses.inputItems.list(r.id);
  assert.equal(items.data.length, 1);
  assert.equal(items.data[0]!.type, 'message');
  const deleted = (await client.responses.delete(r.id)) as unknown;
  assert.deepEqual(deleted, { id: r.id, object: 'response.deleted', deleted: true });
  await assert.rejects(client.responses.retrieve(r.id), (err: APIError) => err.status === 404);
});

test('reasoning: with thinking on, a reasoning item comes first and its tokens are counted', async () => {
  const r = await client.responses.create({
    model: 'm',
    input: 'Say hi.',
    temperature: 0,
    max_output_tokens: 300,
    reasoning: { effort: 'low' },
  });
  checkOutput(r);
  const types = r.output.map((i) => i.type);
  if (types.includes('reasoning')) {
    assert.equal(types[0], 'reasoning');
    assert.ok(r.usage!.output_tokens_details.reasoning_tokens > 0);
  }
});

test('responses.create streamed, and the responses.stream() helper with finalResponse()', async () => {
  const stream = await client.responses.create({ model: 'm', input: 'Hello!', stream: true, ...QUICK });
  const seen: string[] = [];
  let last = -1;
  let final: OpenAI.Responses.Response | null = null;
  for await (const e of stream) {
    seen.push(e.type);
    assert.equal(e.sequence_number, last + 1);
    last = e.sequence_number;
    if (e.type === 'response.completed' || e.type === 'response.incomplete') final = e.response;
  }
  assert.deepEqual(seen.slice(0, 2), ['response.created', 'response.in_progress']);
  assert.ok(final !== null);
  checkOutput(final);

  const helper = client.responses.stream({ model: 'm', input: 'Hello again!', ...QUICK });
  let deltas = '';
  helper.on('response.output_text.delta', (e) => (deltas += e.delta));
  const done = await helper.finalResponse();
  checkOutput(done);
  assert.equal(deltas, done.output_text);
  const stored = await client.responses.retrieve(done.id);
  assert.deepEqual(
    stored.output.map((i) => [i.type, i.id]),
    done.output.map((i) => [i.type, i.id]),
  );
  assert.equal(stored.output_text, done.output_text);
});

test('previous_response_id continues the chain: the prompt holds the earlier turns', async () => {
  const first = await client.responses.create({ model: 'm', input: 'My name is Ada.', ...QUICK });
  const second = await client.responses.create({ model: 'm', input: 'What is my name?', previous_response_id: first.id, ...QUICK });
  checkOutput(second);
  assert.equal(second.previous_response_id, first.id);
  assert.ok(second.usage!.input_tokens > first.usage!.input_tokens, 'the earlier turn is in the prompt');
  await assert.rejects(
    client.responses.create({ model: 'm', input: 'x', previous_response_id: 'resp_unknown', ...QUICK }),
    (err: APIError) => err.status === 404 && (err.error as { code: string }).code === 'not_found',
  );
});

test('a forced function_call, then its function_call_output answered in the next turn', async () => {
  const r = await client.responses.create({
    model: 'm',
    input: "What's the weather in Prague?",
    tools: [WEATHER],
    tool_choice: FORCE_WEATHER,
    ...QUICK,
    max_output_tokens: 100,
  });
  checkOutput(r);
  const call = r.output.find((i) => i.type === 'function_call');
  assert.ok(call !== undefined && call.type === 'function_call', 'a function_call item');
  assert.equal(call.name, 'get_weather');
  const next = await client.responses.create({
    model: 'm',
    previous_response_id: r.id,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temperature": 21, "unit": "celsius"}' }],
    tools: [WEATHER],
    ...QUICK,
  });
  checkOutput(next);
  // Without the chain: the call and its output given as input items.
  const manual = await client.responses.create({
    model: 'm',
    input: [
      { role: 'user', content: "What's the weather in Prague?" },
      { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
      { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
    ],
    tools: [WEATHER],
    store: false,
    ...QUICK,
  });
  checkOutput(manual);
  await assert.rejects(client.responses.retrieve(manual.id), (err: APIError) => err.status === 404);
});

test('raw stream: named events, item ids the same in the events and the final object', async () => {
  const res = await fetch(`${server.base}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      input: "What's the weather in Paris?",
      tools: [WEATHER],
      tool_choice: FORCE_WEATHER,
      stream: true,
      ...QUICK,
      max_output_tokens: 100,
    }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const frames = (await res.text()).split('\n\n').filter((f) => f.trim() !== '');
  const events = frames.map((f) => {
    const [eventLine, dataLine] = f.split('\n');
    const data = JSON.parse(dataLine!.replace(/^data: /, '')) as {
      type: string;
      item?: { id: string };
      item_id?: string;
      response?: OpenAI.Responses.Response;
    };
    assert.equal(`event: ${data.type}`, eventLine);
    return data;
  });
  const final = events[events.length - 1]!;
  assert.ok(['response.completed', 'response.incomplete'].includes(final.type));
  const ids = final.response!.output.map((i) => i.id);
  const added = events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item!.id);
  const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item!.id);
  assert.deepEqual(added, ids);
  assert.deepEqual(done, ids);
  for (const e of events) if (e.item_id !== undefined) assert.ok(ids.includes(e.item_id));
  assert.ok(events.some((e) => e.type === 'response.function_call_arguments.done'));
});

/** Streams a forced tool call over node:http and hangs up right after its output_item.done; the response id. */
function streamCallAndHangUp(): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.base}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    let id = '';
    let buffer = '';
    req.on('error', reject);
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        const frames = buffer.split('\n\n');
        buffer = frames.pop()!;
        for (const f of frames) {
          const data = JSON.parse(f.split('\n')[1]!.replace(/^data: /, '')) as {
            type: string;
            response?: { id: string };
            item?: { type: string };
          };
          if (data.type === 'response.created') id = data.response!.id;
          if (data.type === 'response.output_item.done' && data.item?.type === 'function_call') {
            req.destroy();
            resolve(id);
            return;
          }
        }
      });
      res.on('end', () => resolve(id));
    });
    req.end(
      JSON.stringify({
        input: "What's the weather in Oslo?",
        tools: [WEATHER],
        tool_choice: FORCE_WEATHER,
        stream: true,
        ...QUICK,
        max_output_tokens: 100,
      }),
    );
  });
}

test('a client hanging up right after a streamed call: the stored response has the call, and the next turn sees it', async () => {
  const id = await streamCallAndHangUp();
  assert.match(id, /^resp_/);
  const stored = await client.responses.retrieve(id);
  const call = stored.output.find((i) => i.type === 'function_call');
  assert.ok(call !== undefined && call.type === 'function_call');
  const next = await client.responses.create({
    model: 'm',
    previous_response_id: id,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'snow' }],
    ...QUICK,
  });
  checkOutput(next);
});

test('conversations: CRUD, items, and responses appending to a conversation', async () => {
  const conv = await client.conversations.create({
    items: [{ type: 'message', role: 'user', content: 'Remember: the code is 42.' }],
    metadata: { topic: 'test' },
  });
  assert.match(conv.id, /^conv_/);
  assert.equal(conv.object, 'conversation');
  assert.deepEqual(conv.metadata, { topic: 'test' });
  assert.deepEqual(await client.conversations.retrieve(conv.id), conv);
  const updated = await client.conversations.update(conv.id, { metadata: { topic: 'changed' } });
  assert.deepEqual(updated.metadata, { topic: 'changed' });

  const r = await client.responses.create({ model: 'm', conversation: conv.id, input: 'What is the code?', ...QUICK });
  checkOutput(r);
  assert.deepEqual(r.conversation, { id: conv.id });
  const list = await client.conversations.items.list(conv.id, { order: 'asc' });
  assert.equal(list.data.length, 2 + r.output.length);
  assert.deepEqual(
    list.data.slice(2).map((i) => i.id),
    r.output.map((i) => i.id),
  );

  const added = await client.conversations.items.create(conv.id, {
    items: [{ type: 'message', role: 'user', content: 'And another thing.' }],
  });
  assert.equal(added.data.length, 1);
  const itemId = added.data[0]!.id!;
  const item = await client.conversations.items.retrieve(itemId, { conversation_id: conv.id });
  assert.equal(item.type, 'message');
  // Pagination: one at a time, newest first, follows the cursor to the end.
  const ids: string[] = [];
  for await (const i of client.conversations.items.list(conv.id, { limit: 1 })) ids.push(i.id!);
  assert.equal(ids.length, 3 + r.output.length);
  assert.equal(ids[0], itemId);
  await client.conversations.items.delete(itemId, { conversation_id: conv.id });
  await assert.rejects(client.conversations.items.retrieve(itemId, { conversation_id: conv.id }), (err: APIError) => err.status === 404);

  const deleted = await client.conversations.delete(conv.id);
  assert.deepEqual(deleted, { id: conv.id, object: 'conversation.deleted', deleted: true });
  await assert.rejects(client.conversations.retrieve(conv.id), (err: APIError) => err.status === 404);
});

/** A valid 1×1 PNG. */
const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

test('bad input on every route: 400 / 404 in OpenAI error shape', async () => {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.base}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as { error: { message: string; type: string; code: string | null; param: string | null } };
    assert.equal(typeof json.error.message, 'string');
    assert.ok(['invalid_request_error', 'server_error'].includes(json.error.type));
    return { status: res.status, error: json.error };
  };
  assert.equal((await call('POST', '/v1/responses', { input: 5 })).status, 400);
  assert.equal((await call('POST', '/v1/responses', { input: [{ role: 'robot', content: 'x' }] })).status, 400);
  const image = await call('POST', '/v1/responses', {
    input: [{ role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${PNG_1X1}` }] }],
  });
  assert.equal(image.status, 400);
  assert.equal(image.error.code, 'no_vision_support');
  assert.match(image.error.message, /no vision support/);
  assert.equal((await call('POST', '/v1/responses', { input: 'x', tool_choice: 'required' })).status, 400);
  assert.equal((await call('POST', '/v1/responses', { input: 'x', max_output_tokens: 0 })).status, 400);
  assert.equal((await call('POST', '/v1/responses', { input: 'x', conversation: 'conv_nope' })).status, 404);
  assert.equal((await call('GET', '/v1/responses/resp_nope')).error.code, 'not_found');
  assert.equal((await call('DELETE', '/v1/responses/resp_nope')).status, 404);
  assert.equal((await call('GET', '/v1/responses/resp_nope/input_items')).status, 404);
  assert.equal((await call('GET', '/v1/conversations/conv_nope')).status, 404);
  assert.equal((await call('POST', '/v1/conversations/conv_nope', { metadata: {} })).status, 404);
  assert.equal((await call('DELETE', '/v1/conversations/conv_nope')).status, 404);
  assert.equal((await call('GET', '/v1/conversations/conv_nope/items')).status, 404);
  assert.equal((await call('POST', '/v1/conversations/conv_nope/items', { items: [] })).status, 404);
  assert.equal((await call('POST', '/v1/conversations', { items: 'x' })).status, 400);
  const conv = (await client.conversations.create({})).id;
  assert.equal((await call('POST', `/v1/conversations/${conv}`, {})).status, 400);
  assert.equal((await call('POST', `/v1/conversations/${conv}/items`, { items: [{ type: 'bogus' }] })).status, 400);
  assert.equal((await call('GET', `/v1/conversations/${conv}/items?limit=0`)).status, 400);
  assert.equal((await call('GET', `/v1/conversations/${conv}/items?order=sideways`)).status, 400);
  assert.equal((await call('GET', `/v1/conversations/${conv}/items?after=msg_nope`)).status, 400);
  assert.equal((await call('GET', `/v1/conversations/${conv}/items/msg_nope`)).status, 404);
  assert.equal((await call('DELETE', `/v1/conversations/${conv}/items/msg_nope`)).status, 404);
  assert.equal((await call('GET', `/v1/conversations/${conv}/nothing/here`)).status, 404);
  assert.equal((await call('PUT', '/v1/responses')).status, 405);
});
