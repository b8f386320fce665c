// The seams a protocol plugs into: ApiError (no wire shape) and a protocol's renderer, SSE frames
// (typed events, the terminator left to the encoder), and a protocol plugin that renders every
// error under its prefix, 404/405 included, in its own shape while the rest keep OpenAI's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import Fastify, { type FastifyPluginAsync } from 'fastify';
import pino from 'pino';
import {
  ApiError,
  contextLengthExceeded,
  engineFailure,
  invalidParam,
  modelNotLoaded,
  requestTimedOut,
  type ErrorRenderer,
} from '../../src/common/api-error.js';
import { renderOpenAiError } from '../../src/protocols/openai/errors.js';
import { ChatChunkEncoder } from '../../src/protocols/openai/chat.js';
import type { SseFrame, StreamEncoder, TokenUsage } from '../../src/protocols/stream.js';
import { buildApp, type AppOptions, type RouteDeps } from '../../src/server/app.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import { registerProtocol } from '../../src/server/protocol-plugin.js';
import { SseStream, sseBytes, streamSteps } from '../../src/server/sse.js';
import type { IndexedStep } from '../../src/server/generate.js';
import { RecordStore } from '../../src/server/store.js';

// ---------------------------------------------------------------------------------------------
// ApiError and the OpenAI renderer

test('ApiError carries status, neutral code, message, param and headers; no wire shape', () => {
  const err = modelNotLoaded();
  assert.equal(err.status, 503);
  assert.equal(err.code, 'model_not_loaded');
  assert.equal(err.param, null);
  assert.deepEqual(err.headers, { 'retry-after': '1' });
  assert.ok(!('type' in err), 'the OpenAI type is the renderer’s business');
  assert.ok(!('toBody' in err));
});

test('the OpenAI renderer: {error: {message, type, code, param}}, type derived from status and code', () => {
  assert.equal(
    JSON.stringify(renderOpenAiError(invalidParam('messages[0].role', 'bad role'))),
    '{"error":{"message":"bad role","type":"invalid_request_error","code":null,"param":"messages[0].role"}}',
  );
  assert.deepEqual(renderOpenAiError(contextLengthExceeded('too long', 'max_tokens')), {
    error: { message: 'too long', type: 'invalid_request_error', code: 'context_length_exceeded', param: 'max_tokens' },
  });
  assert.equal(renderOpenAiError(modelNotLoaded()).error.type, 'server_error');
  assert.equal(renderOpenAiError(engineFailure('x')).error.type, 'server_error');
  // A generation stopped by --request-timeout is a 408 the server caused.
  const timeout = requestTimedOut();
  assert.equal(timeout.status, 408);
  assert.equal(renderOpenAiError(timeout).error.type, 'server_error');
  assert.equal(renderOpenAiError(new ApiError(404, 'nope', { code: 'not_found' })).error.type, 'invalid_request_error');
});

// ---------------------------------------------------------------------------------------------
// SSE frames

test('SSE frame bytes: optional event line, JSON data, raw text data (one data line per line)', () => {
  assert.equal(sseBytes({ data: { a: 1 } }), 'data: {"a":1}\n\n');
  assert.equal(
    sseBytes({ event: 'message_start', data: { type: 'message_start' } }),
    'event: message_start\ndata: {"type":"message_start"}\n\n',
  );
  assert.equal(sseBytes({ text: '[DONE]' }), 'data: [DONE]\n\n');
  assert.equal(sseBytes({ event: 'note', text: 'a\nb' }), 'event: note\ndata: a\ndata: b\n\n');
});

test('SseStream writes the frames it is given and nothing else: end() adds no terminator', async () => {
  const app = Fastify();
  app.get('/s', async (_request, reply) => {
    const sse = new SseStream(reply);
    sse.send({ event: 'ping', data: { n: 1 } });
    sse.send({ data: 'x' });
    sse.end();
    sse.send({ data: 'after the end' });
    return reply;
  });
  const res = await app.inject({ method: 'GET', url: '/s' });
  assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
  assert.equal(res.body, 'event: ping\ndata: {"n":1}\n\ndata: "x"\n\n');
});

/** An encoder in a made-up protocol's style: typed events, no terminator. */
class EventEncoder implements StreamEncoder {
  start(): SseFrame[] {
    return [{ event: 'start', data: {} }];
  }
  step(index: number, events: IndexedStep['step']['events']): SseFrame[] {
    return events.flatMap((e) => (e.type === 'text' ? [{ event: 'delta', data: { index, text: e.text } }] : []));
  }
  finish(usage: TokenUsage | null): SseFrame[] {
    return [{ event: 'stop', data: { usage } }];
  }
  error(err: ApiError): SseFrame[] {
    return [{ event: 'error', data: { code: err.code } }];
  }
}

async function* steps(list: IndexedStep['step'][]): AsyncGenerator<IndexedStep> {
  for (const step of list) yield { index: 0, step };
}

function streamApp(encoder: StreamEncoder, list: IndexedStep['step'][]) {
  const app = Fastify();
  app.decorateRequest('generation', null);
  app.get('/s', async (request, reply) => {
    request.generation = {
      promptTokens: 3,
      cachedTokens: 0,
      completionTokens: 2,
      ttftMs: null,
      decodeMs: 0,
      decodeTokens: 0,
      toolsUsed: [],
      finishReasons: [],
    };
    void streamSteps(new SseStream(reply), encoder, steps(list), request);
    return reply;
  });
  return app;
}

test('streamSteps: the encoder’s start, step and finish(usage) frames, nothing added', async () => {
  const app = streamApp(new EventEncoder(), [
    { events: [{ type: 'text', text: 'Hi' }], logprobs: [], ids: [1] },
    { events: [{ type: 'finish', reason: 'stop' }], logprobs: [], ids: [2], done: { engineReason: 'stop' } },
  ]);
  const res = await app.inject({ method: 'GET', url: '/s' });
  assert.equal(
    res.body,
    'event: start\ndata: {}\n\n' +
      'event: delta\ndata: {"index":0,"text":"Hi"}\n\n' +
      'event: stop\ndata: {"usage":{"promptTokens":3,"cachedTokens":0,"completionTokens":2}}\n\n',
  );
});

test('streamSteps: a failed generation ends with the encoder’s error frames, not finish', async () => {
  const app = streamApp(new EventEncoder(), [
    { events: [{ type: 'text', text: 'Hi' }], logprobs: [], ids: [1] },
    { events: [{ type: 'finish', reason: 'error' }], logprobs: [], ids: [], done: { engineReason: 'error', message: 'boom' } },
  ]);
  const res = await app.inject({ method: 'GET', url: '/s' });
  assert.equal(
    res.body,
    'event: start\ndata: {}\n\nevent: delta\ndata: {"index":0,"text":"Hi"}\n\nevent: error\ndata: {"code":"engine_error"}\n\n',
  );
});

test('OpenAI encoder: finish is the optional usage chunk then [DONE]; error is the error body then [DONE]', () => {
  const meta = { id: 'chatcmpl-1', created: 0, model: 'm' };
  const plain = new ChatChunkEncoder(meta, 1, null, false, () => new Uint8Array());
  assert.deepEqual(plain.finish({ promptTokens: 3, cachedTokens: 0, completionTokens: 2 }), [{ text: '[DONE]' }]);
  const withUsage = new ChatChunkEncoder(meta, 1, null, true, () => new Uint8Array());
  assert.deepEqual(withUsage.finish({ promptTokens: 3, cachedTokens: 0, completionTokens: 2 }), [
    {
      data: {
        id: 'chatcmpl-1',
        object: 'chat.completion.chunk',
        created: 0,
        model: 'm',
        choices: [],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } },
      },
    },
    { text: '[DONE]' },
  ]);
  assert.deepEqual(plain.error(engineFailure('x')), [{ data: renderOpenAiError(engineFailure('x')) }, { text: '[DONE]' }]);
});

// ---------------------------------------------------------------------------------------------
// A protocol plugin: its own error shape under its prefix

const OPTIONS: AppOptions = {
  modelName: 'm',
  maxBodyBytes: 1024,
  defaultMinP: 0,
  defaultTopNSigma: 0,
  toolMaxTokens: 100,
  requestTimeoutSec: 0,
};

/** Anthropic's error shape, for the made-up protocol below. */
const renderFake: ErrorRenderer = (err) => ({ type: 'error', error: { type: `fake_${err.code ?? 'invalid'}`, message: err.message } });

const fakeRoutes: FastifyPluginAsync<RouteDeps> = async (app) => {
  app.post('/', { schema: { body: { type: 'object', required: ['messages'] } } }, async (request) => {
    const body = request.body as { messages: unknown };
    if (!Array.isArray(body.messages)) throw invalidParam('messages', 'messages must be a list');
    return { ok: true };
  });
  app.get('/gated', { config: { needsModel: true } }, async () => ({ ok: true }));
  app.get('/boom', async () => {
    throw new TypeError('kaput');
  });
};

function fakeApp() {
  const sink = new Writable({ write: (_c, _e, done) => done() });
  const app = buildApp({ options: OPTIONS, logger: pino({ level: 'info' }, sink), lifecycle: new Lifecycle('no_model') });
  registerProtocol(
    app,
    { prefix: '/v1/fake', renderError: renderFake, routes: [fakeRoutes] },
    { options: OPTIONS, chatOutput: () => ({ stages: [] }), store: new RecordStore() },
  );
  return app;
}

test('a protocol plugin renders its own errors: thrown, schema, JSON, body size, model gate, bugs', async () => {
  const app = fakeApp();
  const post = (payload: string) =>
    app.inject({ method: 'POST', url: '/v1/fake', payload, headers: { 'content-type': 'application/json' } });
  assert.deepEqual((await post('{"messages": 1}')).json(), {
    type: 'error',
    error: { type: 'fake_invalid', message: 'messages must be a list' },
  });
  assert.deepEqual((await post('{}')).json(), {
    type: 'error',
    error: { type: 'fake_invalid', message: "Missing required parameter: 'messages'." },
  });
  const bad = await post('{');
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().error.type, 'fake_invalid_json');
  const big = await post(JSON.stringify({ messages: ['x'.repeat(2000)] }));
  assert.equal(big.statusCode, 413);
  assert.equal(big.json().error.type, 'fake_request_too_large');
  const gated = await app.inject({ method: 'GET', url: '/v1/fake/gated' });
  assert.equal(gated.statusCode, 503);
  assert.equal(gated.headers['retry-after'], '1');
  assert.equal(gated.json().error.type, 'fake_model_not_loaded');
  const boom = await app.inject({ method: 'GET', url: '/v1/fake/boom' });
  assert.equal(boom.statusCode, 500);
  assert.equal(boom.json().error.type, 'fake_internal_error');
  assert.equal((await post('{"messages": []}')).statusCode, 200);
});

test('a protocol plugin answers 404 and 405 under its prefix in its shape; OpenAI’s shape elsewhere', async () => {
  const app = fakeApp();
  const notFound = await app.inject({ method: 'GET', url: '/v1/fake/nope' });
  assert.equal(notFound.statusCode, 404);
  assert.deepEqual(notFound.json(), { type: 'error', error: { type: 'fake_not_found', message: 'Invalid URL (GET /v1/fake/nope)' } });
  const wrongMethod = await app.inject({ method: 'GET', url: '/v1/fake' });
  assert.equal(wrongMethod.statusCode, 405);
  assert.equal(wrongMethod.headers.allow, 'POST');
  assert.equal(wrongMethod.json().error.type, 'fake_method_not_allowed');
  // The OpenAI plugin's /v1 and the root keep OpenAI's shape.
  for (const url of ['/v1/nope', '/nope']) {
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), {
      error: { message: `Invalid URL (GET ${url})`, type: 'invalid_request_error', code: 'not_found', param: null },
    });
  }
  const openAi405 = await app.inject({ method: 'GET', url: '/v1/completions' });
  assert.equal(openAi405.statusCode, 405);
  assert.equal(openAi405.json().error.code, 'method_not_allowed');
});
