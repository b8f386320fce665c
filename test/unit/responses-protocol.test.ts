// The Responses API over a scripted engine: decoding input items into the chat conversation, the
// output items and the event sequence (numbering, ids), the store's cap and eviction, list
// pagination, and the conversation routes without a model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planChatOutput } from '../../src/chat/output-plan.js';
import { ApiError } from '../../src/common/api-error.js';
import { normalizeInput, page, type Item } from '../../src/protocols/responses/items.js';
import { OutputItems, responseObject, type ResponseEcho } from '../../src/protocols/responses/output.js';
import { decodeResponsesRequest, type ResponsesBody } from '../../src/protocols/responses/request.js';
import { ResponseStreamEncoder } from '../../src/protocols/responses/stream.js';
import { RecordStore } from '../../src/server/store.js';
import { IM_END, scriptedApp, tinyTokenizer as tokenizer } from '../helpers/scripted-app.js';

const DEFAULTS = { defaultMinP: 0, defaultTopNSigma: 0 };

function decode(body: ResponsesBody, context: Item[] = []) {
  return decodeResponsesRequest(body, context, normalizeInput(body.input ?? [], 'input'), DEFAULTS);
}

test('decoding: instructions, one assistant turn from reasoning + message + function_call, tool outputs named', () => {
  const { chat, warnings, tools } = decode({
    instructions: 'Be brief.',
    input: [
      { role: 'developer', content: 'dev note' },
      { role: 'user', content: [{ type: 'input_text', text: 'weather?' }] },
      { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'think' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.' }] },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'snow' },
    ],
    tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object' } }, { type: 'web_search' }],
    reasoning: { effort: 'low' },
  });
  assert.deepEqual(chat.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'developer', content: 'dev note' },
    { role: 'user', content: 'weather?' },
    {
      role: 'assistant',
      content: 'Let me check.',
      reasoning: 'think',
      toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
    },
    { role: 'tool', content: 'snow', toolCallId: 'call_1', name: 'get_weather' },
  ]);
  assert.equal(warnings.length, 1);
  assert.equal(tools.length, 1);
  assert.equal(chat.tools.length, 1);
  assert.equal(chat.toolChoice, 'auto');
  assert.equal(chat.thinkingBudget, 1024);
});

test('decoding: the context comes before the input; effort none turns thinking off; bad input is a 400', () => {
  const context = normalizeInput('earlier', 'input');
  const { chat } = decode({ input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }], reasoning: { effort: 'none' } }, context);
  assert.deepEqual(
    chat.messages.map((m) => m.role),
    ['user', 'tool'],
  );
  assert.equal(chat.chatTemplateKwargs.enable_thinking, false);
  const bad = (body: ResponsesBody, status = 400) =>
    assert.throws(
      () => decode(body),
      (e: ApiError) => e.status === status,
    );
  bad({ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] });
  bad({ input: [{ role: 'user', content: [{ type: 'input_image' }] }] });
  bad({ input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'data:,' }] }] });
  bad({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] });
  // Images in user messages and function outputs become image parts; their URLs are loaded by the route.
  const images = decode({
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'a' },
          { type: 'input_image', image_url: 'https://h/i.png', detail: 'low' },
        ],
      },
      { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] },
    ],
  }).chat.messages;
  assert.deepEqual(images[0]!.parts, [
    { type: 'text', text: 'a' },
    { type: 'image', source: { kind: 'url', url: 'https://h/i.png' }, param: 'input.0.content.1.image_url' },
  ]);
  assert.equal(images[2]!.role, 'tool');
  assert.equal(images[2]!.parts![0]!.type, 'image');
  bad({ input: [{ type: 'function_call', name: 'f' }] });
  bad({ input: [{ type: 'item_reference' }] });
  bad({ input: 'x', tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'g' } });
  bad({ input: 'x', tool_choice: 'required' });
});

const ECHO: ResponseEcho = {
  instructions: null,
  tools: [],
  tool_choice: 'auto',
  parallel_tool_calls: true,
  temperature: 1,
  top_p: 1,
  max_output_tokens: null,
  previous_response_id: null,
  conversation: null,
  store: true,
  metadata: {},
  reasoning: { effort: null, summary: null },
  text: { format: { type: 'text' } },
  truncation: 'disabled',
  user: null,
};

test('stream encoder: event order, sequence numbers from 0, item ids shared with the final object', () => {
  const items = new OutputItems();
  const meta = { id: 'resp_x', createdAt: 1, model: 'm' };
  let final: unknown = null;
  const enc = new ResponseStreamEncoder(items, {
    snapshot: (state) => responseObject(meta, ECHO, { ...state, output: structuredClone(items.items) }),
    done: (r) => (final = r),
    usage: () => null,
  });
  const frames = [
    ...enc.start(),
    ...enc.step(0, [
      { type: 'reasoning', text: 'hm' },
      { type: 'reasoning', text: 'm' },
    ]),
    ...enc.step(0, [{ type: 'text', text: 'Hi' }]),
    ...enc.step(0, [
      { type: 'tool_call_start', index: 0, id: 'call_9', name: 'f' },
      { type: 'tool_call_args', index: 0, fragment: '{}' },
    ]),
    ...enc.step(0, [{ type: 'finish', reason: 'tool_calls' }]),
    ...enc.finish({ promptTokens: 3, cachedTokens: 0, completionTokens: 4 }),
  ];
  const data = frames.map((f) => (f as { event: string; data: Record<string, unknown> }).data);
  assert.deepEqual(
    data.map((d) => d.sequence_number),
    data.map((_, i) => i),
  );
  assert.deepEqual(
    frames.map((f) => f.event),
    data.map((d) => d.type),
  );
  assert.deepEqual(
    data.map((d) => d.type),
    [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ],
  );
  assert.equal(data[4]!.delta, 'hmm');
  const response = data[data.length - 1]!.response as { output: { id: string; type: string }[]; output_text: string; status: string };
  assert.deepEqual(response, final);
  assert.equal(response.status, 'completed');
  assert.equal(response.output_text, 'Hi');
  const added = data.filter((d) => d.type === 'response.output_item.added').map((d) => (d.item as { id: string }).id);
  assert.deepEqual(
    added,
    response.output.map((i) => i.id),
  );
  assert.deepEqual(response.output[2], {
    type: 'function_call',
    id: added[2],
    call_id: 'call_9',
    name: 'f',
    arguments: '{}',
    status: 'completed',
  });
  // The created snapshot did not change when the items grew.
  assert.deepEqual((data[0]!.response as { output: unknown[] }).output, []);
});

test('length finish → incomplete with max_output_tokens; an error → response.failed', () => {
  const enc = (items: OutputItems) =>
    new ResponseStreamEncoder(items, {
      snapshot: (state) => responseObject({ id: 'r', createdAt: 0, model: 'm' }, ECHO, { ...state, output: items.items }),
      done: () => {},
      usage: () => null,
    });
  const a = new OutputItems();
  const e1 = enc(a);
  e1.step(0, [
    { type: 'text', text: 'x' },
    { type: 'finish', reason: 'length' },
  ]);
  const last = e1.finish(null).pop() as { event: string; data: { response: { status: string; incomplete_details: unknown } } };
  assert.equal(last.event, 'response.incomplete');
  assert.deepEqual(last.data.response.incomplete_details, { reason: 'max_output_tokens' });
  const e2 = enc(new OutputItems());
  const failed = e2.error(new ApiError(500, 'boom', { code: 'engine_error' })).pop() as {
    event: string;
    data: { response: { error: unknown } };
  };
  assert.equal(failed.event, 'response.failed');
  assert.deepEqual(failed.data.response.error, { code: 'engine_error', message: 'boom' });
});

test('pagination: order, after, limit, has_more; an unknown cursor is a 400', () => {
  const items = ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id }));
  const p1 = page(items, { limit: 2 });
  assert.deepEqual(p1, { object: 'list', data: [{ id: 'e' }, { id: 'd' }], first_id: 'e', last_id: 'd', has_more: true });
  const p2 = page(items, { limit: 2, after: 'd' });
  assert.deepEqual(
    p2.data.map((i) => i.id),
    ['c', 'b'],
  );
  const p3 = page(items, { limit: 2, after: 'b' });
  assert.deepEqual(p3.data, [{ id: 'a' }]);
  assert.equal(p3.has_more, false);
  assert.deepEqual(
    page(items, { order: 'asc', after: 'c' }).data.map((i) => i.id),
    ['d', 'e'],
  );
  assert.throws(
    () => page(items, { after: 'zz' }),
    (e: ApiError) => e.status === 400,
  );
});

test('store: capped, oldest first evicted, evicted ids answer 404', async () => {
  const store = new RecordStore(2);
  const { app } = scriptedApp({ store, ready: false });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ method: 'POST', url: '/v1/conversations', payload: { metadata: { n: String(i) } } });
    assert.equal(res.statusCode, 200);
    ids.push(res.json().id);
  }
  assert.equal(store.size, 2);
  const gone = await app.inject({ method: 'GET', url: `/v1/conversations/${ids[0]}` });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().error.code, 'not_found');
  assert.match(gone.json().error.message, /evicted/);
  // No model loaded: the conversation routes still answer; responses need the model.
  assert.equal((await app.inject({ method: 'GET', url: `/v1/conversations/${ids[2]}` })).statusCode, 200);
  assert.equal((await app.inject({ method: 'POST', url: '/v1/responses', payload: { input: 'hi' } })).statusCode, 503);
});

test('store: bounded in bytes too; appending items makes a conversation the newest', async () => {
  const store = new RecordStore(100, 3000);
  const { app } = scriptedApp({ store, ready: false });
  const text = 'x'.repeat(900);
  const create = async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/conversations', payload: { items: [{ role: 'user', content: text }] } });
    assert.equal(res.statusCode, 200);
    return res.json().id as string;
  };
  const [a, b] = [await create(), await create()];
  // Items for a: it becomes the newest, so b is the oldest when c pushes the store over 3000 bytes.
  const added = await app.inject({
    method: 'POST',
    url: `/v1/conversations/${a}/items`,
    payload: { items: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(added.statusCode, 200);
  const c = await create();
  assert.equal((await app.inject({ method: 'GET', url: `/v1/conversations/${b}` })).statusCode, 404);
  for (const id of [a, c]) assert.equal((await app.inject({ method: 'GET', url: `/v1/conversations/${id}` })).statusCode, 200);
  assert.equal(store.size, 2);
});

test('scripted: a parsed tool call is a function_call item, stored with its input and listed by input_items', async () => {
  const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>';
  const { app } = scriptedApp({ script: { ids: [...tokenizer.encode(call), IM_END] }, chatOutput: planChatOutput });
  const res = await app.inject({
    method: 'POST',
    url: '/v1/responses',
    payload: {
      input: [{ role: 'user', content: 'weather in Oslo?' }],
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
      reasoning: { effort: 'none' },
      metadata: { k: 'v' },
    },
  });
  assert.equal(res.statusCode, 200);
  const body = res.json();
  assert.equal(body.status, 'completed');
  assert.deepEqual(body.metadata, { k: 'v' });
  const fc = body.output.find((i: { type: string }) => i.type === 'function_call');
  assert.equal(fc.name, 'get_weather');
  assert.deepEqual(JSON.parse(fc.arguments), { city: 'Oslo' });
  const got = await app.inject({ method: 'GET', url: `/v1/responses/${body.id}` });
  assert.deepEqual(got.json(), body);
  const listed = await app.inject({ method: 'GET', url: `/v1/responses/${body.id}/input_items?order=asc&limit=5` });
  assert.equal(listed.json().data.length, 1);
  assert.equal(listed.json().data[0].role, 'user');
  const del = await app.inject({ method: 'DELETE', url: `/v1/responses/${body.id}` });
  assert.deepEqual(del.json(), { id: body.id, object: 'response.deleted', deleted: true });
  assert.equal((await app.inject({ method: 'DELETE', url: `/v1/responses/${body.id}` })).statusCode, 404);
});
