// The Anthropic Messages protocol over a scripted engine: the decoder (what reaches ChatRequest),
// the `message` body and the named-event stream, errors in Anthropic's shape under /v1/messages
// (statuses included: 529 for a busy engine), count_tokens, keep-alive pings, disconnects. The
// tokenizer and chat template are svc-tiny-chat's real ones; the e2e test runs the real model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import Fastify from 'fastify';
import { planChatOutput, type ChatOutputFactory } from '../../src/chat/output-plan.js';
import { EngineAdmissionError } from '../../src/engine/types.js';
import { ApiKeys } from '../../src/ops/auth.js';
import { decodeMessagesRequest, type MessagesBody } from '../../src/protocols/anthropic/messages.js';
import { MessageStreamEncoder } from '../../src/protocols/anthropic/stream.js';
import { renderAnthropicError, anthropicErrorStatus } from '../../src/protocols/anthropic/errors.js';
import { ApiError, modelNotLoaded, serverBusy, engineFailure, invalidParam, requestTimedOut } from '../../src/common/api-error.js';
import { SseStream, streamSteps } from '../../src/server/sse.js';
import type { IndexedStep } from '../../src/server/generate.js';
import { IM_END, scriptedApp, tinyTokenizer as tokenizer, type ScriptedAppSetup } from '../helpers/scripted-app.js';

const DEFAULTS = { defaultMinP: 0.08, defaultTopNSigma: 1 };
/** A valid 1×1 PNG. */
const PNG_1X1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const USER = [{ role: 'user' as const, content: 'What is the capital of France?' }];
const WEATHER = {
  name: 'get_weather',
  description: 'Get the weather.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const TOOL_OUTPUT =
  '<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

/** The real chat output plan, for a model that reasons (svc-tiny-chat's MODEL.toml says so). */
const reasoningPlan: ChatOutputFactory = (ctx) =>
  planChatOutput({ ...ctx, runtime: { ...ctx.runtime, chat: { ...ctx.runtime.chat, reasoning: true } } });

function setup(over: ScriptedAppSetup = {}) {
  return scriptedApp(over);
}

type App = ReturnType<typeof setup>['app'];

async function post(app: App, url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url,
    payload: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers },
  });
  return { status: res.statusCode, headers: res.headers, body: res.body, json: () => JSON.parse(res.body) };
}

/** Named SSE events: each `event:` line must name the type its data carries. */
function sseEvents(body: string): { event: string; data: Record<string, unknown> & { type: string } }[] {
  return body
    .split('\n\n')
    .filter((f) => f.trim() !== '')
    .map((f) => {
      const lines = f.split('\n');
      assert.match(lines[0]!, /^event: /, `every frame is named: ${f}`);
      assert.equal(lines.length, 2, 'one event line and one data line');
      const event = lines[0]!.slice('event: '.length);
      const data = JSON.parse(lines[1]!.replace(/^data: /, '')) as Record<string, unknown> & { type: string };
      assert.equal(data.type, event);
      return { event, data };
    });
}

const promptOf = (engine: ReturnType<typeof setup>['engine'], i = 0): string => tokenizer.decode(engine.jobs[i]!.req.promptTokens);

// ---------------------------------------------------------------------------------------------
// Decoding

test('decode: system (string or blocks, cache_control ignored, billing line stripped), sampling, stop, thinking', () => {
  const body: MessagesBody = {
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    system: [
      { type: 'text', text: 'x-anthropic-billing-header: cc_version=1.0.0; cch=abc;\nYou are Claude Code.' },
      { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
    ],
    messages: USER,
    temperature: 0.5,
    top_p: 0.9,
    top_k: 7,
    stop_sequences: ['END'],
    metadata: { user_id: 'u' },
    thinking: { type: 'enabled', budget_tokens: 1024 },
  };
  const { chat, warnings } = decodeMessagesRequest(body, DEFAULTS);
  assert.deepEqual(warnings, []);
  assert.deepEqual(chat.messages[0], { role: 'system', content: 'You are Claude Code.\nBe brief.' });
  assert.deepEqual(chat.sampling, { temperature: 0.5, topP: 0.9, topK: 7, minP: 0.08, topNSigma: 1, seed: null });
  assert.deepEqual(chat.stop, ['END']);
  assert.equal(chat.maxTokens, 64);
  assert.equal(chat.n, 1);
  assert.equal(chat.thinkingBudget, 1024);
  assert.deepEqual(chat.chatTemplateKwargs, { enable_thinking: true });

  // A system block that is only the billing line disappears; thinking disabled → enable_thinking false.
  const only = decodeMessagesRequest(
    { ...body, system: 'x-anthropic-billing-header: cc_version=2', thinking: { type: 'disabled' } },
    DEFAULTS,
  ).chat;
  assert.equal(only.messages[0]!.role, 'user');
  assert.deepEqual(only.chatTemplateKwargs, { enable_thinking: false });
  assert.equal(only.thinkingBudget, null);
  const adaptive = decodeMessagesRequest({ ...body, thinking: { type: 'adaptive' } }, DEFAULTS).chat;
  assert.deepEqual(adaptive.chatTemplateKwargs, { enable_thinking: true });
  assert.equal(adaptive.thinkingBudget, null, 'adaptive: the model’s own budget');
  // --disable-thinking wins over a request that asks for thinking.
  assert.deepEqual(decodeMessagesRequest(body, { ...DEFAULTS, disableThinking: true }).chat.chatTemplateKwargs, {
    enable_thinking: false,
  });
  // No sampling fields: the model's defaults, then Anthropic's.
  const plain = decodeMessagesRequest({ max_tokens: 5, messages: USER }, { ...DEFAULTS, model: { temperature: 0.6, top_k: 20 } }).chat;
  assert.deepEqual(plain.sampling, { temperature: 0.6, topP: 1, topK: 20, minP: 0.08, topNSigma: 1, seed: null });
  assert.deepEqual(plain.chatTemplateKwargs, {}, 'no thinking field: the model decides');
});

test('decode: blocks → chat messages (tool_use, tool_result with is_error, thinking, redacted_thinking)', () => {
  const { chat } = decodeMessagesRequest(
    {
      max_tokens: 10,
      tools: [WEATHER],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Need the tool.', signature: 'sig' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Lyon' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny, 21 C' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'no data' }], is_error: true },
            { type: 'text', text: 'And tomorrow?' },
          ],
        },
      ],
    },
    DEFAULTS,
  );
  assert.deepEqual(chat.messages, [
    { role: 'user', content: 'Weather in Paris?' },
    {
      role: 'assistant',
      content: 'Let me check.',
      reasoning: 'Need the tool.',
      toolCalls: [
        { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lyon"}' } },
      ],
    },
    { role: 'tool', content: 'Sunny, 21 C', toolCallId: 'toolu_1', name: 'get_weather' },
    { role: 'tool', content: 'Error: no data', toolCallId: 'toolu_2', name: 'get_weather' },
    { role: 'user', content: 'And tomorrow?' },
  ]);
  assert.deepEqual(chat.tools, [
    { type: 'function', function: { name: 'get_weather', description: 'Get the weather.', parameters: WEATHER.input_schema } },
  ]);
  assert.equal(chat.toolChoice, 'auto');
  assert.equal(chat.parallelToolCalls, true);
});

test('decode: tools and tool_choice (server tools skipped with a warning; auto/any/tool/none; disable_parallel_tool_use)', () => {
  const base = { max_tokens: 10, messages: USER };
  const server = decodeMessagesRequest({ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }, WEATHER] }, DEFAULTS);
  assert.equal(server.chat.tools.length, 1);
  assert.equal(server.warnings.length, 1);
  assert.match(server.warnings[0]!, /web_search_20250305/);
  const choice = (tool_choice: MessagesBody['tool_choice']) =>
    decodeMessagesRequest({ ...base, tools: [WEATHER], tool_choice }, DEFAULTS).chat;
  assert.equal(choice({ type: 'auto' }).toolChoice, 'auto');
  assert.equal(choice({ type: 'any' }).toolChoice, 'required');
  assert.deepEqual(choice({ type: 'tool', name: 'get_weather' }).toolChoice, { type: 'function', function: { name: 'get_weather' } });
  const none = choice({ type: 'none' });
  assert.equal(none.toolChoice, 'none');
  assert.deepEqual(none.tools, []);
  assert.equal(choice({ type: 'any', disable_parallel_tool_use: true }).parallelToolCalls, false);
  assert.throws(() => choice({ type: 'tool', name: 'nope' }), /not in tools/);
  assert.throws(() => decodeMessagesRequest({ ...base, tool_choice: { type: 'any' } }, DEFAULTS), /requires tools/);
  assert.equal(decodeMessagesRequest(base, DEFAULTS).chat.toolChoice, 'none');
});

test('decode: image blocks become image parts in order (user turns and tool results); documents, file sources and unknown block types are 400s', () => {
  const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } };
  const { chat } = decodeMessagesRequest(
    {
      max_tokens: 5,
      messages: [
        {
          role: 'user',
          content: [{ type: 'text', text: 'Compare' }, image, { type: 'image', source: { type: 'url', url: 'https://a/b.png' } }],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true, content: [image, { type: 'text', text: 'x' }] }],
        },
      ],
    },
    DEFAULTS,
  );
  const [user, , tool] = chat.messages;
  assert.equal(user!.content, 'Compare');
  assert.deepEqual(user!.parts, [
    { type: 'text', text: 'Compare' },
    { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'AAAA' }, param: 'messages.0.content.1' },
    { type: 'image', source: { kind: 'url', url: 'https://a/b.png' }, param: 'messages.0.content.2' },
  ]);
  assert.equal(tool!.role, 'tool');
  assert.equal(tool!.content, 'Error: \nx');
  assert.deepEqual(
    tool!.parts!.map((p) => p.type),
    ['text', 'image', 'text'],
  );
  const refused = (block: object, param: RegExp) =>
    assert.throws(
      () => decodeMessagesRequest({ max_tokens: 5, messages: [{ role: 'user', content: [block as never] }] }, DEFAULTS),
      (err: { status: number; param: string }) => err.status === 400 && param.test(err.param),
    );
  refused({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'AAAA' } }, /^messages\.0\.content\.0$/);
  refused({ type: 'image', source: { type: 'file', file_id: 'f' } }, /source$/);
  refused({ type: 'image', source: { type: 'base64', data: 'AAAA' } }, /media_type$/);
  refused({ type: 'image', source: { type: 'ftp', url: 'x' } }, /source\.type$/);
  assert.throws(
    () =>
      decodeMessagesRequest(
        { max_tokens: 5, messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x' }] }] },
        DEFAULTS,
      ),
    (err: { status: number }) => err.status === 400,
  );
});

// ---------------------------------------------------------------------------------------------
// Errors

test('the Anthropic renderer: {type: error, error: {type, message}}; 529 for a busy engine', () => {
  assert.deepEqual(renderAnthropicError(invalidParam('max_tokens', 'bad')), {
    type: 'error',
    error: { type: 'invalid_request_error', message: 'bad' },
  });
  assert.equal(renderAnthropicError(serverBusy('queue full')).error.type, 'overloaded_error');
  assert.equal(anthropicErrorStatus(serverBusy('queue full')), 529);
  assert.equal(anthropicErrorStatus(modelNotLoaded()), 503);
  assert.equal(renderAnthropicError(modelNotLoaded()).error.type, 'overloaded_error');
  assert.equal(renderAnthropicError(engineFailure('x')).error.type, 'api_error');
  assert.equal(renderAnthropicError(requestTimedOut()).error.type, 'api_error');
  const byStatus = (status: number) => renderAnthropicError(new ApiError(status, 'x')).error.type;
  assert.deepEqual([401, 403, 404, 405, 413, 429, 500].map(byStatus), [
    'authentication_error',
    'permission_error',
    'not_found_error',
    'invalid_request_error',
    'request_too_large',
    'rate_limit_error',
    'api_error',
  ]);
});

test('errors under /v1/messages in Anthropic shape: 400, 404, 405, 413, 503, 529; /v1 keeps OpenAI’s', async () => {
  const { app, engine } = setup();
  const isAnthropic = (r: { json: () => { type: string; error: { type: string; message: string } } }, type: string) => {
    const body = r.json();
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, type);
    assert.equal(typeof body.error.message, 'string');
  };
  const missing = await post(app, '/v1/messages', { model: 'm', messages: USER });
  assert.equal(missing.status, 400);
  isAnthropic(missing, 'invalid_request_error');
  assert.match(missing.json().error.message, /max_tokens/);
  const badJson = await post(app, '/v1/messages', '{"model": ');
  assert.equal(badJson.status, 400);
  isAnthropic(badJson, 'invalid_request_error');
  const image = await post(app, '/v1/messages', {
    model: 'm',
    max_tokens: 5,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1X1 } }] }],
  });
  assert.equal(image.status, 400);
  isAnthropic(image, 'invalid_request_error');
  assert.match(image.json().error.message, /no vision support/);

  const notFound = await post(app, '/v1/messages/nope', {});
  assert.equal(notFound.status, 404);
  isAnthropic(notFound, 'not_found_error');
  const wrongMethod = await app.inject({ method: 'GET', url: '/v1/messages' });
  assert.equal(wrongMethod.statusCode, 405);
  assert.equal(JSON.parse(wrongMethod.body).type, 'error');
  const big = await post(app, '/v1/messages', { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x'.repeat(70_000) }] });
  assert.equal(big.status, 413);
  isAnthropic(big, 'request_too_large');
  // Outside the prefix nothing changed.
  const openAi = await post(app, '/v1/nope', {});
  assert.equal(openAi.status, 404);
  assert.ok(openAi.json().error.code === 'not_found' && openAi.json().type === undefined);

  engine.refuse = new EngineAdmissionError('queue_full', 'the queue is full');
  const busy = await post(app, '/v1/messages', { model: 'm', max_tokens: 5, messages: USER });
  assert.equal(busy.status, 529);
  isAnthropic(busy, 'overloaded_error');
  assert.equal(busy.headers['retry-after'], '1');

  const starting = setup({ ready: false });
  const early = await post(starting.app, '/v1/messages', { model: 'm', max_tokens: 5, messages: USER });
  assert.equal(early.status, 503);
  isAnthropic(early, 'overloaded_error');
});

test('auth: x-api-key (or bearer) admits, a wrong or missing key is a 401 authentication_error', async () => {
  const { app } = setup({ apiKeys: new ApiKeys(['sk-right']) });
  const body = { model: 'm', max_tokens: 5, messages: USER };
  const none = await post(app, '/v1/messages', body);
  assert.equal(none.status, 401);
  assert.deepEqual(none.json().error.type, 'authentication_error');
  const wrong = await post(app, '/v1/messages', body, { 'x-api-key': 'sk-wrong' });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.json().type, 'error');
  assert.equal((await post(app, '/v1/messages', body, { 'x-api-key': 'sk-right' })).status, 200);
  assert.equal((await post(app, '/v1/messages/count_tokens', body, { authorization: 'Bearer sk-right' })).status, 200);
  const unknownPath = await post(app, '/v1/messages/nope', body, { 'x-api-key': 'sk-wrong' });
  assert.equal(unknownPath.status, 401);
  assert.equal(unknownPath.json().error.type, 'authentication_error');
});

// ---------------------------------------------------------------------------------------------
// Responses

test('non-streamed: message shape, usage from the prompt and the generated tokens, ?beta=true; fields reach the engine', async () => {
  const { app, engine } = setup();
  const res = await post(app, '/v1/messages?beta=true', {
    model: 'claude-opus-4',
    max_tokens: 50,
    system: 'x-anthropic-billing-header: cc_version=1; cch=1;\nYou answer briefly.',
    messages: USER,
    temperature: 0,
  });
  assert.equal(res.status, 200);
  const body = res.json();
  assert.match(body.id, /^msg_\w{24}$/);
  assert.equal(body.type, 'message');
  assert.equal(body.role, 'assistant');
  assert.equal(body.model, 'svc-tiny-chat');
  assert.deepEqual(body.content, [{ type: 'text', text: 'Paris.' }]);
  assert.equal(body.stop_reason, 'end_turn');
  assert.equal(body.stop_sequence, null);
  const job = engine.jobs[0]!.req;
  assert.equal(body.usage.input_tokens, job.promptTokens.length);
  assert.equal(body.usage.output_tokens, tokenizer.encode('Paris.').length + 1);
  assert.equal(job.sampling.temperature, 0);
  assert.equal(job.maxTokens, 50);
  const prompt = promptOf(engine);
  assert.ok(!prompt.includes('billing'), 'the billing line is stripped');
  assert.ok(prompt.startsWith('<|im_start|>system\nYou answer briefly.<|im_end|>'));
  // max_tokens beyond the context is a ceiling, not an error.
  assert.equal((await post(app, '/v1/messages', { model: 'm', max_tokens: 32000, messages: USER })).status, 200);
  assert.equal(engine.jobs[1]!.req.maxTokens, 512 - engine.jobs[1]!.req.promptTokens.length);
});

test('stop_sequences → stop_reason stop_sequence with the sequence; max_tokens → stop_reason max_tokens', async () => {
  const { app, engine } = setup({ script: { ids: [...tokenizer.encode('The capital is Paris. END more'), IM_END] } });
  const stopped = (await post(app, '/v1/messages', { model: 'm', max_tokens: 50, messages: USER, stop_sequences: ['END'] })).json();
  assert.equal(stopped.stop_reason, 'stop_sequence');
  assert.equal(stopped.stop_sequence, 'END');
  assert.equal(stopped.content[0].text, 'The capital is Paris. ');
  assert.equal(engine.jobs[0]!.cancelled, true);
  const cut = (await post(app, '/v1/messages', { model: 'm', max_tokens: 2, messages: USER })).json();
  assert.equal(cut.stop_reason, 'max_tokens');
  assert.equal(cut.usage.output_tokens, 2);
});

test('thinking and a tool call: thinking block with a signature, tool_use with toolu_ id and an input object', async () => {
  const { app, lines } = setup({ script: { ids: [...tokenizer.encode(TOOL_OUTPUT), IM_END] }, chatOutput: reasoningPlan });
  const body = (await post(app, '/v1/messages', { model: 'm', max_tokens: 100, messages: USER, tools: [WEATHER] })).json();
  assert.equal(body.stop_reason, 'tool_use');
  assert.equal(body.content.length, 2);
  const [thinking, call] = body.content;
  assert.equal(thinking.type, 'thinking');
  assert.equal(thinking.thinking, 'The user wants the weather.');
  assert.ok(typeof thinking.signature === 'string' && thinking.signature.length > 0);
  assert.equal(call.type, 'tool_use');
  assert.match(call.id, /^toolu_\w+$/);
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(call.input, { city: 'Paris' });
  assert.deepEqual(lines.find((l) => l.msg === 'request completed')!.toolsUsed, ['get_weather']);
});

test('thinking budget and tool_choice reach the engine: budget_tokens caps the model’s, any → grammar', async () => {
  const { app, engine } = setup({ script: { ids: [...tokenizer.encode(TOOL_OUTPUT), IM_END] }, chatOutput: reasoningPlan });
  await post(app, '/v1/messages', { model: 'm', max_tokens: 100, messages: USER, thinking: { type: 'enabled', budget_tokens: 16 } });
  assert.equal(engine.jobs[0]!.req.thinkingBudget?.maxTokens, 16);
  await post(app, '/v1/messages', { model: 'm', max_tokens: 100, messages: USER, thinking: { type: 'disabled' } });
  assert.ok(promptOf(engine, 1).endsWith('<think>\n\n</think>\n\n'), 'thinking disabled: the template closes the think block');
  assert.equal(engine.jobs[1]!.req.thinkingBudget ?? null, null);
  await post(app, '/v1/messages', { model: 'm', max_tokens: 100, messages: USER, tools: [WEATHER], tool_choice: { type: 'any' } });
  assert.ok(engine.jobs[2]!.req.constraint, 'tool_choice any is enforced by the tool grammar');
  const server = await post(app, '/v1/messages', {
    model: 'm',
    max_tokens: 100,
    messages: USER,
    tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
  });
  assert.equal(server.status, 200, 'a server tool is skipped, not refused');
});

test('streamed: exact event sequence, consistent block indexes, deltas add up, message_delta usage', async () => {
  const { app } = setup({ script: { ids: [...tokenizer.encode(TOOL_OUTPUT), IM_END] }, chatOutput: reasoningPlan });
  const res = await post(app, '/v1/messages', { model: 'm', max_tokens: 100, messages: USER, tools: [WEATHER], stream: true });
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  const events = sseEvents(res.body);
  // Collapse runs of the same delta kind for the sequence check.
  const kinds = events.map((e) =>
    e.event === 'content_block_delta'
      ? `delta:${(e.data.delta as { type: string }).type}`
      : e.event === 'content_block_start'
        ? `start:${(e.data.content_block as { type: string }).type}`
        : e.event,
  );
  const collapsed = kinds.filter((k, i) => k !== kinds[i - 1]);
  assert.deepEqual(collapsed, [
    'message_start',
    'ping',
    'start:thinking',
    'delta:thinking_delta',
    'delta:signature_delta',
    'content_block_stop',
    'start:tool_use',
    'delta:input_json_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  const start = events[0]!.data.message as { id: string; content: unknown[]; usage: { input_tokens: number; output_tokens: number } };
  assert.match(start.id, /^msg_/);
  assert.deepEqual(start.content, []);
  assert.ok(start.usage.input_tokens > 0);
  // Indexes: starts count 0, 1, …; every delta and stop names the block open at the time.
  let open = -1;
  let next = 0;
  for (const { event, data } of events) {
    if (event === 'content_block_start') {
      assert.equal(open, -1, 'one block open at a time');
      assert.equal(data.index, next++);
      open = data.index as number;
    } else if (event === 'content_block_delta') assert.equal(data.index, open);
    else if (event === 'content_block_stop') {
      assert.equal(data.index, open);
      open = -1;
    }
  }
  const deltas = (i: number, field: string) =>
    events
      .filter((e) => e.event === 'content_block_delta' && e.data.index === i)
      .map((e) => (e.data.delta as Record<string, string>)[field] ?? '')
      .join('');
  assert.equal(deltas(0, 'thinking'), 'The user wants the weather.');
  assert.ok(deltas(0, 'signature').length > 0);
  assert.deepEqual(JSON.parse(deltas(1, 'partial_json')), { city: 'Paris' });
  const toolStart = events.find((e) => e.event === 'content_block_start' && e.data.index === 1)!.data.content_block as Record<
    string,
    unknown
  >;
  assert.match(String(toolStart.id), /^toolu_/);
  assert.deepEqual(toolStart.input, {});
  const messageDelta = events.at(-2)!.data as unknown as {
    delta: { stop_reason: string; stop_sequence: null };
    usage: { output_tokens: number };
  };
  assert.deepEqual(messageDelta.delta, { stop_reason: 'tool_use', stop_sequence: null });
  assert.equal(messageDelta.usage.output_tokens, tokenizer.encode(TOOL_OUTPUT).length + 1);
});

test('streamed text with a stop sequence: text block, message_delta carries stop_sequence', async () => {
  const { app } = setup({ script: { ids: [...tokenizer.encode('Paris is the capital. STOP'), IM_END] } });
  const events = sseEvents(
    (await post(app, '/v1/messages', { model: 'm', max_tokens: 50, messages: USER, stream: true, stop_sequences: ['STOP'] })).body,
  );
  const text = events
    .filter((e) => e.event === 'content_block_delta')
    .map((e) => (e.data.delta as { type: string; text: string }).text)
    .join('');
  assert.equal(text, 'Paris is the capital. ');
  assert.deepEqual((events.at(-2)!.data as unknown as { delta: unknown }).delta, { stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
  assert.equal(events.at(-1)!.event, 'message_stop');
});

test('engine failure: non-streamed → 500 api_error; streamed → an error event, last', async () => {
  const { app, engine } = setup();
  // A job cancelled by the server while the client still listens is an engine error.
  engine.script = { ids: Array.from({ length: 40 }, () => 9707), delayMs: 1 };
  const run = post(app, '/v1/messages', { model: 'm', max_tokens: 40, messages: USER });
  for (let t = 0; t < 100 && engine.jobs.length === 0; t++) await delay(1);
  engine.jobs[0]!.cancelled = true;
  const failed = await run;
  assert.equal(failed.status, 500);
  assert.equal(failed.json().error.type, 'api_error');

  const stream = post(app, '/v1/messages', { model: 'm', max_tokens: 40, messages: USER, stream: true });
  for (let t = 0; t < 100 && engine.jobs.length === 1; t++) await delay(1);
  engine.jobs[1]!.cancelled = true;
  const events = sseEvents((await stream).body);
  assert.equal(events.at(-1)!.event, 'error');
  assert.equal((events.at(-1)!.data.error as { type: string }).type, 'api_error');
  assert.ok(!events.some((e) => e.event === 'message_stop'));
});

test('count_tokens: {input_tokens} equal to the prompt the messages route runs (system and tools included)', async () => {
  const { app, engine } = setup();
  const body = { model: 'm', system: 'Be brief.', messages: USER, tools: [WEATHER] };
  const counted = await post(app, '/v1/messages/count_tokens', body);
  assert.equal(counted.status, 200);
  assert.deepEqual(Object.keys(counted.json()), ['input_tokens']);
  await post(app, '/v1/messages', { ...body, max_tokens: 5 });
  assert.equal(counted.json().input_tokens, engine.jobs[0]!.req.promptTokens.length);
  const bare = (await post(app, '/v1/messages/count_tokens', { model: 'm', messages: USER })).json().input_tokens;
  assert.ok(bare < counted.json().input_tokens, 'tools and system are counted');
  assert.equal(engine.jobs.length, 1, 'count_tokens runs no generation');
  const bad = await post(app, '/v1/messages/count_tokens', { model: 'm' });
  assert.equal(bad.status, 400);
  assert.equal(bad.json().error.type, 'invalid_request_error');
});

test('a client hanging up mid-stream cancels the engine job', async () => {
  const { app, engine, lines } = setup({ script: { ids: Array.from({ length: 400 }, () => 9707), chunk: 1, delayMs: 5 } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = app.server.address() as AddressInfo;
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        port,
        host: '127.0.0.1',
        method: 'POST',
        path: '/v1/messages',
        headers: { 'content-type': 'application/json' },
      });
      req.on('error', () => resolve());
      req.on('response', (res) => {
        let seen = 0;
        res.on('data', () => {
          if (++seen >= 3) {
            req.destroy();
            resolve();
          }
        });
      });
      req.end(JSON.stringify({ model: 'm', max_tokens: 400, messages: USER, stream: true }));
    });
    for (let t = 0; t < 200 && !engine.jobs[0]?.cancelled; t++) await delay(10);
    assert.equal(engine.jobs[0]?.cancelled, true);
    for (let t = 0; t < 100 && !lines.some((l) => l.msg === 'request aborted by the client'); t++) await delay(10);
    assert.ok(lines.some((l) => l.msg === 'request aborted by the client'));
  } finally {
    await app.close();
  }
});

test('keep-alive: ping events while the model is silent, none once it speaks', async () => {
  const app = Fastify();
  app.decorateRequest('generation', null);
  app.get('/s', async (request, reply) => {
    async function* steps(): AsyncGenerator<IndexedStep> {
      await delay(140);
      yield { index: 0, step: { events: [{ type: 'text', text: 'hi' }], logprobs: [], ids: [1] } };
      yield { index: 0, step: { events: [{ type: 'finish', reason: 'stop' }], logprobs: [], ids: [], done: { engineReason: 'stop' } } };
    }
    void streamSteps(new SseStream(reply), new MessageStreamEncoder('msg_x', 'm', 3, 30), steps(), request);
    return reply;
  });
  const res = await app.inject({ method: 'GET', url: '/s' });
  const names = sseEvents(res.body).map((e) => e.event);
  const firstBlock = names.indexOf('content_block_start');
  assert.ok(names.slice(0, firstBlock).filter((n) => n === 'ping').length >= 3, names.join(' '));
  assert.ok(!names.slice(firstBlock).includes('ping'));
  assert.equal(names.at(-1), 'message_stop');
});
