// The OpenAI routes over a scripted engine: request validation (exact status, code and param),
// the response and stream shapes, how request fields reach the engine, errors, disconnects.
// The tokenizer and chat template are svc-tiny-chat's real ones; only the engine is scripted,
// so these run in milliseconds (the e2e test runs the real model).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import pino from 'pino';
import {
  EngineAdmissionError,
  type Engine,
  type EngineEvent,
  type EngineFinishReason,
  type GenerationHandle,
  type GenerationRequest,
} from '../../src/engine/types.js';
import { buildApp, type AppOptions } from '../../src/server/app.js';
import { planChatOutput, type ChatOutputFactory } from '../../src/chat/output-plan.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import type { ModelRuntime } from '../../src/chat/model-runtime.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { findChatTemplate } from '../../src/chat/template.js';
import { configFromHf } from '../../src/model/model-config.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { Rng } from '../../src/engine/sampler.js';
import { IDLE_ENGINE_STATS } from '../helpers/engine-stats.js';

const tokenizer = loadTokenizer(TINY_CHAT);
const chatTemplate = findChatTemplate(TINY_CHAT);
const modelConfig = configFromHf(JSON.parse(readFileSync(join(TINY_CHAT, 'config.json'), 'utf8')));
const IM_END = 151645;
const ANSWER = 'The capital of France is Paris. 🇫🇷';

interface Script {
  ids: number[];
  /** How the job ends once the ids are out (default: stop, or length when max_tokens cut it). */
  reason?: EngineFinishReason;
  message?: string;
  /** Ids per tokens event. */
  chunk?: number;
  delayMs?: number;
}

/** An Engine that plays back a script; records what it was asked and what was cancelled. */
class ScriptedEngine implements Engine {
  readonly maxSequences = 16;
  readonly jobs: { req: GenerationRequest; cancelled: boolean }[] = [];
  refuse: EngineAdmissionError | Error | null = null;

  constructor(public script: Script) {}

  submit(req: GenerationRequest): GenerationHandle {
    if (this.refuse) throw this.refuse;
    const job = { req, cancelled: false };
    this.jobs.push(job);
    const s = this.script;
    async function* events(): AsyncGenerator<EngineEvent> {
      const ids = s.ids.slice(0, req.maxTokens);
      const chunk = s.chunk ?? 2;
      for (let i = 0; i < ids.length; i += chunk) {
        await delay(s.delayMs ?? 0);
        if (job.cancelled) {
          yield { type: 'done', reason: 'cancelled' };
          return;
        }
        const part = ids.slice(i, i + chunk);
        const logprobs = part.map((id) => ({
          id,
          logprob: -0.25,
          top: [
            { id, logprob: -0.25 },
            { id: 9707, logprob: -3 },
          ],
        }));
        yield req.logprobs > 0 ? { type: 'tokens', ids: part, logprobs } : { type: 'tokens', ids: part };
      }
      const reason = s.reason ?? (ids.length < s.ids.length ? 'length' : 'stop');
      yield {
        type: 'done',
        reason,
        message: s.message,
      };
    }
    return { events: events(), cancel: () => void (job.cancelled = true) };
  }

  stats() {
    return { ...IDLE_ENGINE_STATS };
  }

  async shutdown(): Promise<void> {}
}

const OPTIONS: AppOptions = {
  modelName: 'svc-tiny-chat',
  maxBodyBytes: 64 * 1024,
  defaultMinP: 0.08,
  defaultTopNSigma: 1.0,
  toolMaxTokens: 300,
  requestTimeoutSec: 300,
};
const MAX_SEQ_LEN = 512;

function setup(script: Script = { ids: [...tokenizer.encode(ANSWER), IM_END] }, ready = true, chatOutput?: ChatOutputFactory) {
  const engine = new ScriptedEngine(script);
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  const lifecycle = new Lifecycle();
  const runtime: ModelRuntime = {
    engine,
    tokenizer,
    chatTemplate,
    eosTokenIds: [IM_END, 151643],
    modelConfig,
    maxSeqLen: MAX_SEQ_LEN,
    samplingDefaults: {},
    chat: { toolCallParser: 'hermes', reasoning: false, disableThinking: false, maxThinkingBudget: null },
  };
  if (ready) lifecycle.setReady(runtime);
  const app = buildApp({ options: OPTIONS, logger: pino({ level: 'info' }, sink), lifecycle, chatOutput });
  return { app, engine, lines, lifecycle, runtime };
}

const USER = [{ role: 'user', content: 'What is the capital of France?' }];

async function post(app: ReturnType<typeof setup>['app'], url: string, body: unknown) {
  const res = await app.inject({
    method: 'POST',
    url,
    payload: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return { status: res.statusCode, headers: res.headers, body: res.body, json: () => JSON.parse(res.body) };
}

function sseFrames(body: string): string[] {
  assert.ok(body.endsWith('\n\n'), 'frames end with a blank line');
  return body
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      assert.ok(f.startsWith('data: '), f);
      return f.slice(6);
    });
}

// ---------------------------------------------------------------------------------------------
// Validation: status, code, param

/** A JSON value nested `depth` levels of objects. */
function nest(depth: number): unknown {
  let v: unknown = { type: 'string' };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

function tool(parameters: unknown): unknown {
  return { type: 'function', function: { name: 'f', parameters } };
}

const chatCases: [string, unknown, string | null][] = [
  ['messages missing', { model: 'x' }, 'messages'],
  ['messages not an array', { messages: 'hi' }, 'messages'],
  ['messages empty', { messages: [] }, 'messages'],
  ['unknown role', { messages: [{ role: 'wizard', content: 'hi' }] }, 'messages[0].role'],
  ['role missing', { messages: [{ content: 'hi' }] }, 'messages[0].role'],
  ['content of a wrong type', { messages: [USER[0], { role: 'user', content: 5 }] }, 'messages[1].content'],
  [
    'content part text of a wrong type',
    { messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] },
    'messages[0].content[0].text',
  ],
  ['max_tokens as a string', { messages: USER, max_tokens: '5' }, 'max_tokens'],
  ['max_tokens zero', { messages: USER, max_tokens: 0 }, 'max_tokens'],
  ['temperature above 2', { messages: USER, temperature: 3 }, 'temperature'],
  ['n of a wrong type', { messages: USER, n: 1.5 }, 'n'],
  ['stop of a wrong type', { messages: USER, stop: 7 }, 'stop'],
  ['stream not a boolean', { messages: USER, stream: 'yes' }, 'stream'],
  ['presence_penalty above 2', { messages: USER, presence_penalty: 2.5 }, 'presence_penalty'],
  ['frequency_penalty below -2', { messages: USER, frequency_penalty: -3 }, 'frequency_penalty'],
  ['logit_bias key not a token id', { messages: USER, logit_bias: { hello: 5 } }, 'logit_bias'],
  ['logit_bias negative key', { messages: USER, logit_bias: { '-1': 5 } }, 'logit_bias'],
  ['logit_bias key past the vocabulary', { messages: USER, logit_bias: { '151669': 5 } }, 'logit_bias'],
  ['logit_bias value above 100', { messages: USER, logit_bias: { '5': 101 } }, 'logit_bias[5]'],
  ['logit_bias value not a number', { messages: USER, logit_bias: { '5': 'x' } }, 'logit_bias[5]'],
  ['repetition_penalty zero', { messages: USER, repetition_penalty: 0 }, 'repetition_penalty'],
  ['min_tokens negative', { messages: USER, min_tokens: -1 }, 'min_tokens'],
  ['min_tokens above max_tokens', { messages: USER, min_tokens: 10, max_tokens: 5 }, 'min_tokens'],
  ['min_tokens above max_completion_tokens', { messages: USER, min_tokens: 10, max_tokens: 50, max_completion_tokens: 5 }, 'min_tokens'],
  ['bad_words not strings', { messages: USER, bad_words: [1] }, 'bad_words[0]'],
  ['bad_words too many', { messages: USER, bad_words: Array.from({ length: 257 }, (_, i) => `w${i}`) }, 'bad_words'],
  ['response_format unknown type', { messages: USER, response_format: { type: 'structural_tag' } }, 'response_format.type'],
  ['guided_regex too long', { messages: USER, guided_regex: 'a'.repeat(4097) }, 'guided_regex'],
  ['guided_choice too many', { messages: USER, guided_choice: Array.from({ length: 1025 }, (_, i) => `c${i}`) }, 'guided_choice'],
  ['tool_choice required without tools', { messages: USER, tool_choice: 'required' }, 'tool_choice'],
  ['tool message without tool_call_id', { messages: [USER[0], { role: 'tool', content: '{}' }] }, 'messages[1].tool_call_id'],
  ['user message with null content', { messages: [{ role: 'user', content: null }] }, 'messages[0].content'],
  [
    'image input',
    { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] },
    'messages[0].content[0]',
  ],
  ['top_logprobs without logprobs', { messages: USER, top_logprobs: 2 }, 'top_logprobs'],
  ['body is an array', [1, 2], 'body'],
  ['tool without a name', { messages: USER, tools: [{ type: 'function', function: { description: 'x' } }] }, 'tools[0].function.name'],
  ['stream_options without stream', { messages: USER, stream_options: { include_usage: true } }, 'stream_options'],
  ['stream_options with stream false', { messages: USER, stream: false, stream_options: {} }, 'stream_options'],
  ['seed 2^63 (above int64)', { messages: USER, seed: 2 ** 63 }, 'seed'],
  ['seed below int64', { messages: USER, seed: -1e19 }, 'seed'],
  ['content an empty array', { messages: [{ role: 'user', content: [] }] }, 'messages[0].content'],
  ['text content part without text', { messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages[0].content[0].text'],
  ['tool parameters nested 40 levels', { messages: USER, tools: [tool(nest(40))] }, 'tools[0].function.parameters'],
  [
    'tool parameters of 10500 nodes',
    { messages: USER, tools: [tool({ type: 'object', enum: Array.from({ length: 10_500 }, () => 0) })] },
    'tools[0].function.parameters',
  ],
  ['chat_template_kwargs nested 20 levels', { messages: USER, chat_template_kwargs: { x: nest(20) } }, 'chat_template_kwargs'],
  [
    'chat_template_kwargs of 2000 keys',
    { messages: USER, chat_template_kwargs: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, i])) },
    'chat_template_kwargs',
  ],
  ['messages nested 100 levels', { messages: nest(100) }, 'messages'],
  [
    'messages nested 30000 levels of arrays (raw text: JSON.stringify would overflow)',
    `{"messages":${'['.repeat(30_000)}${']'.repeat(30_000)}}`,
    'messages',
  ],
  ['tool parameters nested 3000 levels (the body limit names the field)', { messages: USER, tools: [tool(nest(3000))] }, 'tools'],
];

for (const [name, body, param] of chatCases) {
  test(`chat 400: ${name} → param ${param}`, async () => {
    const { app, engine } = setup();
    const res = await post(app, '/v1/chat/completions', body);
    assert.equal(res.status, 400, res.body);
    const err = res.json().error;
    assert.equal(err.type, 'invalid_request_error');
    assert.equal(err.param, param);
    assert.ok(err.message.includes(String(param)), `message names the field: ${err.message}`);
    assert.equal(engine.jobs.length, 0, 'nothing reached the engine');
  });
}

test('chat 400: a wrong type says what was expected and what came', async () => {
  const { app } = setup();
  const err = (await post(app, '/v1/chat/completions', { messages: USER, max_tokens: '5' })).json().error;
  assert.equal(err.message, "Invalid type for 'max_tokens': expected an integer or null, but got a string instead.");
});

test('400: malformed JSON says the body is not valid JSON', async () => {
  const { app } = setup();
  const res = await post(app, '/v1/chat/completions', '{"messages": [');
  assert.equal(res.status, 400);
  const err = res.json().error;
  assert.equal(err.type, 'invalid_request_error');
  assert.equal(err.code, 'invalid_json');
  assert.match(err.message, /not valid JSON/);
});

test('415: a body that is not declared JSON (curl -d sends a form type) is refused; application/json and +json are read', async () => {
  const { app, engine } = setup();
  const body = JSON.stringify({ messages: USER });
  const send = (type?: string) =>
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload: body, headers: type === undefined ? {} : { 'content-type': type } });
  for (const type of [
    'application/x-www-form-urlencoded',
    'text/plain',
    'text/plain; charset=utf-8',
    'multipart/form-data; boundary=x',
    'application/json; charset=latin1',
    undefined,
  ]) {
    const res = await send(type);
    assert.equal(res.statusCode, 415, `${type}: ${res.body}`);
    assert.equal(res.json().error.code, 'unsupported_media_type');
    assert.equal(res.json().error.type, 'invalid_request_error');
  }
  assert.equal(engine.jobs.length, 0);
  for (const type of [
    'application/json',
    'Application/JSON; charset=UTF-8',
    'application/vnd.api+json',
    'application/json; charset="utf-8"',
  ]) {
    const res = await send(type);
    assert.equal(res.statusCode, 200, `${type}: ${res.body}`);
  }
});

test('400: invalid UTF-8 in a JSON body is refused, not replaced', async () => {
  const { app, engine } = setup();
  const bytes = Buffer.concat([Buffer.from('{"messages":[{"role":"user","content":"Hi '), Buffer.from([0xff, 0xc3]), Buffer.from('"}]}')]);
  const res = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    payload: bytes,
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().error.code, 'invalid_json');
  assert.match(res.json().error.message, /not valid UTF-8/);
  assert.equal(engine.jobs.length, 0);
});

test('400 messages: stream_options, token ids, text parts and depth limits say what is wrong', async () => {
  const { app } = setup();
  const message = async (url: string, body: unknown) => (await post(app, url, body)).json().error.message as string;
  assert.equal(
    await message('/v1/chat/completions', { messages: USER, stream_options: { include_usage: true } }),
    "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
  );
  assert.match(await message('/v1/completions', { prompt: [-1] }), /token ids must be non-negative integers, but got -1/);
  assert.match(
    await message('/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'text' }] }] }),
    /Missing required parameter: 'messages\[0\]\.content\[0\]\.text'/,
  );
  assert.match(await message('/v1/chat/completions', { messages: USER, tools: [tool(nest(40))] }), /at most 32 levels/);
  assert.match(await message('/v1/chat/completions', { messages: USER, chat_template_kwargs: { x: nest(20) } }), /at most 16 levels/);
  assert.match(await message('/v1/chat/completions', { messages: nest(100) }), /at most 64 levels/);
  // Within the limits a deep schema renders.
  assert.equal((await post(app, '/v1/chat/completions', { messages: USER, tools: [tool(nest(30))] })).status, 200);
});

test('seeds: the int64 range is accepted, and seeds that differ only in their high bits give different RNG streams', async () => {
  const { app, engine } = setup();
  for (const seed of [-(2 ** 63), -1, 0, 2 ** 53, 9223372036854774784]) {
    assert.equal((await post(app, '/v1/chat/completions', { messages: USER, seed })).status, 200, String(seed));
  }
  assert.equal(engine.jobs.at(-1)!.req.sampling.seed, 9223372036854774784);
  const draws = (seed: number) => {
    const rng = new Rng(seed);
    return Array.from({ length: 4 }, () => rng.nextU32());
  };
  assert.notDeepEqual(draws(-1), draws(4294967297));
  assert.notDeepEqual(draws(1), draws(2 ** 32 + 1));
  assert.deepEqual(draws(12345), draws(12345));
});

test('--request-timeout cut of a stream: the text so far, then the error frame alone (no finish_reason)', async () => {
  const { app } = setup({ ids: tokenizer.encode('Hello there, how are you'), reason: 'timeout' });
  const frames = sseFrames((await post(app, '/v1/chat/completions', { messages: USER, stream: true })).body);
  assert.equal(frames.at(-1), '[DONE]');
  assert.equal(JSON.parse(frames.at(-2)!).error.code, 'request_timeout');
  assert.ok(frames.length > 3, 'text was streamed before the error');
  assert.ok(!frames.slice(0, -2).some((f) => JSON.parse(f).choices[0]?.finish_reason), 'no finish reason before the error');
  const legacy = sseFrames((await post(app, '/v1/completions', { prompt: 'Hi', stream: true })).body);
  assert.equal(JSON.parse(legacy.at(-2)!).error.code, 'request_timeout');
  assert.ok(!legacy.slice(0, -2).some((f) => JSON.parse(f).choices[0]?.finish_reason), 'no finish reason before the error');
});

test('413: a body over the limit, in the OpenAI shape', async () => {
  const { app } = setup();
  const res = await post(app, '/v1/chat/completions', { messages: [{ role: 'user', content: 'x'.repeat(OPTIONS.maxBodyBytes) }] });
  assert.equal(res.status, 413);
  assert.equal(res.json().error.code, 'request_too_large');
});

test('400 context_length_exceeded: prompt + max_tokens over the context', async () => {
  const { app, engine } = setup();
  const res = await post(app, '/v1/chat/completions', { messages: USER, max_tokens: MAX_SEQ_LEN });
  assert.equal(res.status, 400);
  const err = res.json().error;
  assert.equal(err.code, 'context_length_exceeded');
  assert.equal(err.param, 'max_tokens');
  assert.match(err.message, /maximum context length is 512 tokens/);
  assert.equal(engine.jobs.length, 0);
});

test('404 for an unknown route, 405 for a known one with the wrong method', async () => {
  const { app } = setup();
  const res = await app.inject({ method: 'POST', url: '/v1/nope' });
  assert.equal(res.statusCode, 404);
  assert.deepEqual(res.json(), {
    error: { message: 'Invalid URL (POST /v1/nope)', type: 'invalid_request_error', code: 'not_found', param: null },
  });
  const wrong = await app.inject({ method: 'GET', url: '/v1/chat/completions' });
  assert.equal(wrong.statusCode, 405);
  assert.equal(wrong.headers.allow, 'POST');
  assert.equal(wrong.json().error.code, 'method_not_allowed');
});

const completionCases: [string, unknown, string][] = [
  ['prompt missing', {}, 'prompt'],
  ['prompt empty array', { prompt: [] }, 'prompt'],
  ['prompt of a wrong type', { prompt: { text: 'hi' } }, 'prompt'],
  ['token id out of the vocabulary', { prompt: [1, 2, 10_000_000] }, 'prompt'],
  ['a negative token id', { prompt: [5, -1] }, 'prompt[1]'],
  ['a negative token id in a batch', { prompt: [[5], [7, -3]] }, 'prompt[1][1]'],
  ['an empty prompt in a batch', { prompt: ['ok', ''] }, 'prompt[1]'],
  ['suffix', { prompt: 'a', suffix: 'b' }, 'suffix'],
  ['echo with logprobs', { prompt: 'a', echo: true, logprobs: 1 }, 'echo'],
  ['logprobs as a boolean', { prompt: 'a', logprobs: true }, 'logprobs'],
  ['logit_bias key past the vocabulary', { prompt: 'a', logit_bias: { '999999': 1 } }, 'logit_bias'],
  ['min_tokens above max_tokens', { prompt: 'a', min_tokens: 20, max_tokens: 19 }, 'min_tokens'],
];

for (const [name, body, param] of completionCases) {
  test(`completions 400: ${name} → param ${param}`, async () => {
    const { app, engine } = setup();
    const res = await post(app, '/v1/completions', body);
    assert.equal(res.status, 400, res.body);
    assert.equal(res.json().error.param, param);
    assert.equal(engine.jobs.length, 0);
  });
}

// ---------------------------------------------------------------------------------------------
// Lifecycle, models, health

test('before a model is ready: 503 model_not_loaded on /health, /v1/models and the protocol routes', async () => {
  const { app, lifecycle, runtime } = setup(undefined, false);
  for (const [method, url] of [
    ['GET', '/health'],
    ['GET', '/v1/models'],
    ['POST', '/v1/chat/completions'],
    ['POST', '/v1/completions'],
  ] as const) {
    const res = await app.inject({ method, url, payload: method === 'POST' ? { messages: USER, prompt: 'x' } : undefined });
    assert.equal(res.statusCode, 503, url);
    assert.equal(res.json().error.code, 'model_not_loaded');
    assert.equal(res.headers['retry-after'], '1');
  }
  lifecycle.setReady(runtime);
  const health = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(health.statusCode, 200);
  assert.deepEqual(health.json(), { status: 'ok', state: 'ready' });
  lifecycle.setLoading();
  assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 503, 'a swap in progress');
});

test('/v1/models lists exactly the served model', async () => {
  const { app } = setup();
  const body = (await app.inject({ method: 'GET', url: '/v1/models' })).json();
  assert.equal(body.object, 'list');
  assert.equal(body.data.length, 1);
  assert.equal(body.data[0].id, 'svc-tiny-chat');
  assert.equal(body.data[0].object, 'model');
  assert.equal(body.data[0].owned_by, 'svc');
  assert.equal(typeof body.data[0].created, 'number');
  assert.equal((await app.inject({ method: 'GET', url: '/v1/models/svc-tiny-chat' })).json().id, 'svc-tiny-chat');
  assert.equal((await app.inject({ method: 'GET', url: '/v1/models/gpt-4' })).statusCode, 404);
});

// ---------------------------------------------------------------------------------------------
// What reaches the engine

test('request fields → engine job: defaults, vLLM extensions, EOS handling, max_tokens', async () => {
  const { app, engine } = setup();
  await post(app, '/v1/chat/completions', { model: 'anything', messages: USER });
  const job = engine.jobs[0]!.req;
  assert.deepEqual(job.sampling, { temperature: 1, topK: 0, topP: 1, minP: 0.08, topNSigma: 1, seed: null });
  assert.deepEqual(job.stopTokenIds, [IM_END, 151643]);
  assert.equal(job.maxTokens, MAX_SEQ_LEN - job.promptTokens.length, 'default: the rest of the context');
  assert.equal(job.timeoutMs, 300_000);
  assert.equal(job.logprobs, 0);
  const rendered = tokenizer.decode(job.promptTokens);
  assert.ok(rendered.startsWith('<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n'), rendered);

  await post(app, '/v1/chat/completions', {
    messages: USER,
    temperature: 0.5,
    top_p: 0.9,
    top_k: -1,
    min_p: 0,
    seed: 42,
    ignore_eos: true,
    stop_token_ids: [13],
    max_completion_tokens: 7,
    chat_template_kwargs: { enable_thinking: false },
  });
  const job2 = engine.jobs[1]!.req;
  assert.deepEqual(job2.sampling, { temperature: 0.5, topK: 0, topP: 0.9, minP: 0, topNSigma: 1, seed: 42 });
  assert.deepEqual(job2.stopTokenIds, [13]);
  assert.equal(job2.maxTokens, 7);
  assert.ok(
    tokenizer.decode(job2.promptTokens).endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'),
    'chat_template_kwargs reach the template',
  );
});

test('tools: passed to the template, completion capped by --tool-max-tokens; tool_choice none drops them', async () => {
  const { app, engine } = setup();
  const tools = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    },
  ];
  await post(app, '/v1/chat/completions', { messages: USER, tools });
  const job = engine.jobs[0]!.req;
  assert.equal(job.maxTokens, OPTIONS.toolMaxTokens);
  assert.match(tokenizer.decode(job.promptTokens), /<tools>\n\{"type": "function", "function": \{"name": "get_weather"/);
  await post(app, '/v1/chat/completions', { messages: USER, tools, tool_choice: 'none' });
  assert.doesNotMatch(tokenizer.decode(engine.jobs[1]!.req.promptTokens), /<tools>/);
});

test('a tool-call conversation turn renders through the template', async () => {
  const { app, engine } = setup();
  const res = await post(app, '/v1/chat/completions', {
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', name: 'get_weather', content: '{"temp": 21}' },
    ],
  });
  assert.equal(res.status, 200, res.body);
  const prompt = tokenizer.decode(engine.jobs[0]!.req.promptTokens);
  assert.match(prompt, /<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "Paris"\}\}\n<\/tool_call>/);
  assert.match(prompt, /<tool_response>\n\{"temp": 21\}\n<\/tool_response>/);
});

// ---------------------------------------------------------------------------------------------
// Response shapes

test('non-streamed chat: shape, content, finish_reason, usage; one log line', async () => {
  const { app, engine, lines } = setup();
  const res = await post(app, '/v1/chat/completions', { messages: USER });
  assert.equal(res.status, 200);
  const body = res.json();
  assert.match(body.id, /^chatcmpl-/);
  assert.equal(body.object, 'chat.completion');
  assert.equal(body.model, 'svc-tiny-chat');
  assert.equal(body.choices.length, 1);
  assert.deepEqual(body.choices[0], { index: 0, message: { role: 'assistant', content: ANSWER }, logprobs: null, finish_reason: 'stop' });
  const promptTokens = engine.jobs[0]!.req.promptTokens.length;
  const completionTokens = tokenizer.encode(ANSWER).length + 1;
  assert.deepEqual(body.usage, {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0 },
  });
  const logged = lines.filter((l) => l.msg === 'request completed');
  assert.equal(logged.length, 1);
  assert.equal(logged[0]!.promptTokens, promptTokens);
  assert.equal(logged[0]!.completionTokens, completionTokens);
  assert.equal(logged[0]!.model, 'svc-tiny-chat');
  assert.equal(typeof logged[0]!.ttftMs, 'number');
  assert.equal(typeof logged[0]!.elapsedMs, 'number');
  assert.deepEqual(logged[0]!.toolsUsed, []);
});

test('streamed chat: role first, content deltas, empty-delta finish, usage frame, [DONE]', async () => {
  const { app, engine } = setup({ ids: [...tokenizer.encode(ANSWER), IM_END], chunk: 1 });
  const res = await post(app, '/v1/chat/completions', { messages: USER, stream: true, stream_options: { include_usage: true } });
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  const frames = sseFrames(res.body);
  assert.equal(frames.at(-1), '[DONE]');
  const chunks = frames.slice(0, -1).map((f) => JSON.parse(f));
  const id = chunks[0].id;
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.id, id, 'one id for the whole stream');
  }
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  const usageFrame = chunks.at(-1);
  assert.deepEqual(usageFrame.choices, []);
  const prompt = engine.jobs[0]!.req.promptTokens.length;
  assert.deepEqual(usageFrame.usage, {
    prompt_tokens: prompt,
    completion_tokens: tokenizer.encode(ANSWER).length + 1,
    total_tokens: prompt + tokenizer.encode(ANSWER).length + 1,
    prompt_tokens_details: { cached_tokens: 0 },
  });
  const finish = chunks.at(-2);
  assert.deepEqual(finish.choices[0].delta, {});
  assert.equal(finish.choices[0].finish_reason, 'stop');
  const content = chunks.slice(1, -2).map((c) => {
    assert.equal(c.choices[0].finish_reason, null);
    assert.equal(c.usage, null, 'with include_usage, other chunks carry usage: null');
    return c.choices[0].delta.content as string;
  });
  assert.ok(content.length > 3, 'content arrives in several deltas');
  for (const piece of content) assert.ok(!piece.includes('\uFFFD'), 'no half characters');
  assert.equal(content.join(''), ANSWER);
});

test('stop string: text cut before it, finish_reason stop, engine job cancelled', async () => {
  const { app, engine } = setup({ ids: [...tokenizer.encode(ANSWER), IM_END], chunk: 1 });
  const body = (await post(app, '/v1/chat/completions', { messages: USER, stop: ['Paris', 'nowhere'] })).json();
  assert.equal(body.choices[0].message.content, 'The capital of France is ');
  assert.equal(body.choices[0].finish_reason, 'stop');
  assert.equal(engine.jobs[0]!.cancelled, true);
  const streamed = sseFrames((await post(app, '/v1/chat/completions', { messages: USER, stop: 'France', stream: true })).body);
  const text = streamed
    .slice(0, -1)
    .map((f) => JSON.parse(f).choices[0]?.delta.content ?? '')
    .join('');
  assert.equal(text, 'The capital of ');
});

test('max_tokens reached → finish_reason length', async () => {
  const { app } = setup();
  const body = (await post(app, '/v1/chat/completions', { messages: USER, max_tokens: 3 })).json();
  assert.equal(body.choices[0].finish_reason, 'length');
  assert.equal(body.usage.completion_tokens, 3);
});

test('n=2: two choices, distinct seeds per sequence, prompt counted once', async () => {
  const { app, engine } = setup();
  const body = (await post(app, '/v1/chat/completions', { messages: USER, n: 2, seed: 5 })).json();
  assert.deepEqual(
    body.choices.map((c: { index: number }) => c.index),
    [0, 1],
  );
  assert.deepEqual(
    engine.jobs.map((j) => j.req.sampling.seed),
    [5, 6],
  );
  assert.equal(body.usage.prompt_tokens, engine.jobs[0]!.req.promptTokens.length);
  assert.equal(body.usage.completion_tokens, 2 * (tokenizer.encode(ANSWER).length + 1));
  const frames = sseFrames((await post(app, '/v1/chat/completions', { messages: USER, n: 2, stream: true })).body);
  const finishes = frames
    .slice(0, -1)
    .map((f) => JSON.parse(f).choices[0])
    .filter((c) => c.finish_reason);
  assert.deepEqual(finishes.map((c) => c.index).sort(), [0, 1]);
});

test('sampling fields → engine job: logit_bias, penalties, min_tokens, bad_words; left out = off; same for every sequence', async () => {
  const { app, engine } = setup();
  await post(app, '/v1/chat/completions', { messages: USER });
  const plain = engine.jobs[0]!.req;
  assert.equal(plain.logitBias, null);
  assert.deepEqual(
    [plain.presencePenalty, plain.frequencyPenalty, plain.repetitionPenalty, plain.minTokens, plain.badWords],
    [0, 0, 1, 0, []],
  );
  const res = await post(app, '/v1/chat/completions', {
    messages: USER,
    n: 2,
    logit_bias: { '12095': -100, '9707': 2.5, '0009707': 3 },
    presence_penalty: 0.5,
    frequency_penalty: -0.25,
    repetition_penalty: 1.3,
    min_tokens: 4,
    max_tokens: 4,
    bad_words: ['Paris', 'Hello world'],
  });
  assert.equal(res.status, 200, res.body);
  for (const { req } of engine.jobs.slice(1)) {
    // "0009707" is 9707 again: the last one written wins.
    assert.deepEqual(req.logitBias, { ids: [9707, 12095], biases: [3, -100] });
    assert.deepEqual([req.presencePenalty, req.frequencyPenalty, req.repetitionPenalty, req.minTokens], [0.5, -0.25, 1.3, 4]);
    assert.deepEqual(req.badWords, [[59604], [12095], [9707, 1879], [21927, 1879]]);
  }
  assert.equal(engine.jobs[1]!.req.badWords, engine.jobs[2]!.req.badWords, 'tokenized once per request');
  // Legacy completions: the same fields; min_tokens stretches the default max_tokens (16).
  await post(app, '/v1/completions', { prompt: 'Hi', min_tokens: 40, presence_penalty: 1, logit_bias: { '5': 1 } });
  const completion = engine.jobs.at(-1)!.req;
  assert.equal(completion.maxTokens, 40);
  assert.deepEqual([completion.minTokens, completion.presencePenalty, completion.logitBias], [40, 1, { ids: [5], biases: [1] }]);
});

test('min_tokens: a stop string inside the first min_tokens tokens does not end the output', async () => {
  const { app } = setup({ ids: tokenizer.encode('Paris is Paris. Done'), chunk: 1 });
  const cut = (await post(app, '/v1/chat/completions', { messages: USER, stop: ['Paris'] })).json();
  assert.equal(cut.choices[0].message.content, '');
  // "Paris" (1 token) then " is" " Paris": the second match ends in token 3, past min_tokens 2.
  const later = (await post(app, '/v1/chat/completions', { messages: USER, stop: ['Paris'], min_tokens: 2 })).json();
  assert.equal(later.choices[0].message.content, 'Paris is ');
  assert.equal(later.choices[0].finish_reason, 'stop');
  const none = (await post(app, '/v1/chat/completions', { messages: USER, stop: ['Paris'], min_tokens: 3, stream: true })).body;
  const text = sseFrames(none)
    .slice(0, -1)
    .map((f) => JSON.parse(f).choices[0]?.delta?.content ?? '')
    .join('');
  assert.equal(text, 'Paris is Paris. Done', 'the only later match would end in token 3: min_tokens 3 lets it through');
});

test('logprob bytes: a token holding part of a character carries its raw bytes; records concatenate to the UTF-8 text', async () => {
  const { app } = setup();
  const body = (await post(app, '/v1/chat/completions', { messages: USER, logprobs: true, top_logprobs: 2 })).json();
  const records: { token: string; bytes: number[]; top_logprobs: { token: string; bytes: number[] }[] }[] =
    body.choices[0].logprobs.content;
  // The last record is the end-of-turn token, which is not text.
  const text = records.slice(0, -1).flatMap((r) => r.bytes);
  assert.deepEqual(Buffer.from(text).toString('utf8'), ANSWER);
  assert.deepEqual(text, [...Buffer.from(ANSWER, 'utf8')]);
  // 🇫🇷 comes as " \xf0\x9f", "\x87", "\xab", "🇷": OpenAI's escapes where a token splits a character.
  assert.deepEqual(
    records.slice(-5, -1).map((r) => r.token),
    [' \\xf0\\x9f', '\\x87', '\\xab', '🇷'],
  );
  assert.deepEqual(records.at(-4)!.bytes, [0x87]);
  assert.equal(records.at(-1)!.token, '<|im_end|>');
  for (const r of records) for (const t of r.top_logprobs) assert.ok(Array.isArray(t.bytes));
  // Legacy completions have no bytes field: such a token is written `bytes:` + escapes; offsets point at the character.
  const legacy = (await post(app, '/v1/completions', { prompt: 'Hi', logprobs: 1, max_tokens: 50 })).json().choices[0];
  const lp = legacy.logprobs;
  assert.deepEqual(lp.tokens.slice(-5, -1), ['bytes: \\xf0\\x9f', 'bytes:\\x87', 'bytes:\\xab', '🇷']);
  const flag = ANSWER.indexOf('🇫');
  assert.deepEqual(lp.text_offset.slice(-5, -1), [flag - 1, flag, flag, flag + 2]);
  assert.equal(legacy.text, ANSWER);
});

test('chat logprobs: one record per generated token, top alternatives as asked', async () => {
  const { app, engine } = setup();
  const body = (await post(app, '/v1/chat/completions', { messages: USER, logprobs: true, top_logprobs: 1 })).json();
  assert.equal(engine.jobs[0]!.req.logprobs, 1);
  const records = body.choices[0].logprobs.content;
  assert.equal(records.length, tokenizer.encode(ANSWER).length + 1);
  assert.equal(records[0].token, tokenizer.decode([tokenizer.encode(ANSWER)[0]!]));
  assert.equal(records[0].logprob, -0.25);
  assert.equal(records[0].top_logprobs.length, 1);
  assert.deepEqual(records[0].bytes, [...Buffer.from(records[0].token)]);
});

test('engine error: non-streamed → 500 engine_error; streamed → error frame then [DONE]', async () => {
  const { app } = setup({ ids: tokenizer.encode('Hello there'), reason: 'error', message: 'kernel exploded' });
  const res = await post(app, '/v1/chat/completions', { messages: USER });
  assert.equal(res.status, 500);
  assert.equal(res.json().error.code, 'engine_error');
  assert.match(res.json().error.message, /kernel exploded/);
  const frames = sseFrames((await post(app, '/v1/chat/completions', { messages: USER, stream: true })).body);
  assert.equal(frames.at(-1), '[DONE]');
  const last = JSON.parse(frames.at(-2)!);
  assert.equal(last.error.code, 'engine_error');
  assert.ok(!frames.slice(0, -2).some((f) => JSON.parse(f).choices[0]?.finish_reason), 'no finish reason before the error');
});

test('engine admission: queue_full → 503 server_busy (retriable), too_long → 400 context_length_exceeded', async () => {
  const { app, engine } = setup();
  engine.refuse = new EngineAdmissionError('queue_full', 'queue is full');
  const busy = await post(app, '/v1/chat/completions', { messages: USER });
  assert.equal(busy.status, 503);
  assert.equal(busy.json().error.code, 'server_busy');
  assert.equal(busy.headers['retry-after'], '1');
  engine.refuse = new EngineAdmissionError('too_long', 'too long for the pool');
  const long = await post(app, '/v1/chat/completions', { messages: USER });
  assert.equal(long.status, 400);
  assert.equal(long.json().error.code, 'context_length_exceeded');
});

test('an unexpected exception is a 500 in the shape, and the server keeps serving', async () => {
  const { app, engine } = setup();
  engine.refuse = new TypeError('boom');
  const res = await post(app, '/v1/chat/completions', { messages: USER });
  assert.equal(res.status, 500);
  assert.equal(res.json().error.type, 'server_error');
  engine.refuse = null;
  assert.equal((await post(app, '/v1/chat/completions', { messages: USER })).status, 200);
});

test('completions: string, batch and token-id prompts; choices prompt-major; echo', async () => {
  const { app, engine } = setup();
  const long = `${ANSWER} ${ANSWER} ${ANSWER}`;
  engine.script = { ids: tokenizer.encode(long) };
  const one = (await post(app, '/v1/completions', { prompt: 'Once upon a time' })).json();
  assert.equal(one.object, 'text_completion');
  assert.match(one.id, /^cmpl-/);
  assert.equal(engine.jobs[0]!.req.maxTokens, 16, 'legacy default max_tokens');
  assert.equal(one.choices[0].text, tokenizer.decode(tokenizer.encode(long).slice(0, 16)));
  assert.equal(one.choices[0].finish_reason, 'length');
  engine.script = { ids: [...tokenizer.encode(ANSWER), IM_END] };

  const batch = (await post(app, '/v1/completions', { prompt: ['A', 'B'], n: 2, max_tokens: 50, echo: true })).json();
  assert.deepEqual(
    batch.choices.map((c: { index: number }) => c.index),
    [0, 1, 2, 3],
  );
  assert.deepEqual(
    batch.choices.map((c: { text: string }) => c.text),
    ['A' + ANSWER, 'A' + ANSWER, 'B' + ANSWER, 'B' + ANSWER],
  );
  const jobs = engine.jobs.slice(1);
  assert.deepEqual(
    jobs.map((j) => tokenizer.decode(j.req.promptTokens)),
    ['A', 'A', 'B', 'B'],
  );
  assert.equal(batch.usage.prompt_tokens, 2);

  const ids = tokenizer.encode('Hello world');
  const tok = (await post(app, '/v1/completions', { prompt: [ids, ids], max_tokens: 50 })).json();
  assert.equal(tok.choices.length, 2);
  assert.deepEqual(engine.jobs.at(-1)!.req.promptTokens, ids);
});

test('completions streamed with legacy logprobs', async () => {
  const { app } = setup();
  const frames = sseFrames(
    (
      await post(app, '/v1/completions', {
        prompt: 'Hi',
        stream: true,
        logprobs: 1,
        max_tokens: 50,
        stream_options: { include_usage: true },
      })
    ).body,
  );
  assert.equal(frames.at(-1), '[DONE]');
  const chunks = frames.slice(0, -1).map((f) => JSON.parse(f));
  assert.deepEqual(chunks.at(-1).choices, []);
  const textChunks = chunks.filter((c) => c.choices[0]?.text);
  assert.equal(textChunks.map((c) => c.choices[0].text).join(''), ANSWER);
  // Every generated token (the end-of-turn one too) has a record, on the chunk with its text or the closing one.
  const withLogprobs = chunks.filter((c) => c.choices[0]?.logprobs);
  const tokens = withLogprobs.flatMap((c) => c.choices[0].logprobs.tokens);
  assert.equal(tokens.length, tokenizer.encode(ANSWER).length + 1);
  assert.equal(tokens.at(-1), '<|im_end|>');
  const offsets = withLogprobs.flatMap((c) => c.choices[0].logprobs.text_offset);
  assert.equal(offsets[0], 0);
  assert.ok(
    offsets.every((o, i) => i === 0 || o >= offsets[i - 1]!),
    'offsets never go back',
  );
  assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
});

/** POSTs with node:http, reads the first bytes (or none), then drops the connection. */
function postAndHangUp(port: number, body: unknown, readFirst: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    });
    req.on('error', () => resolve());
    if (readFirst) req.on('response', (res) => res.once('data', () => (req.destroy(), resolve())));
    else req.on('finish', () => setTimeout(() => (req.destroy(), resolve()), 50));
    req.end(JSON.stringify(body), () => undefined);
    req.on('timeout', reject);
  });
}

test('client disconnect mid-stream or mid-request cancels the engine job, and is logged', async () => {
  const { app, engine, lines } = setup({ ids: Array.from({ length: 400 }, () => 9707), chunk: 1, delayMs: 5 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = app.server.address() as AddressInfo;
    const waitCancelled = async (i: number) => {
      for (let t = 0; t < 200 && !engine.jobs[i]?.cancelled; t++) await delay(10);
      assert.equal(engine.jobs[i]?.cancelled, true, `job ${i} cancelled`);
    };
    await postAndHangUp(port, { messages: USER, stream: true }, true);
    await waitCancelled(0);
    await postAndHangUp(port, { messages: USER }, false);
    await waitCancelled(1);
    for (let t = 0; t < 100 && lines.filter((l) => l.msg === 'request aborted by the client').length < 2; t++) await delay(10);
    assert.equal(lines.filter((l) => l.msg === 'request aborted by the client').length, 2);
  } finally {
    await app.close();
  }
});

// ---------------------------------------------------------------------------------------------
// The text-stage seam: what the real chat output plan (reasoning splitter, hermes parser) makes
// of a scripted model output is encoded in both response shapes.

const TOOL_OUTPUT =
  '<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const WEATHER_TOOL = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const contexts: string[] = [];
const stages: ChatOutputFactory = (ctx) => {
  contexts.push(ctx.promptText);
  return planChatOutput({ ...ctx, runtime: { ...ctx.runtime, chat: { ...ctx.runtime.chat, reasoning: true } } });
};

test('reasoning and tool calls: non-streamed message fields, ids, finish_reason tool_calls, log', async () => {
  const { app, lines } = setup({ ids: [...tokenizer.encode(TOOL_OUTPUT), IM_END] }, true, stages);
  const body = (await post(app, '/v1/chat/completions', { messages: USER, tools: [WEATHER_TOOL] })).json();
  const choice = body.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null, 'content is null when only tool calls came back');
  assert.equal(choice.message.reasoning, 'The user wants the weather.');
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.match(call.id, /^call_\d+$/);
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
  assert.deepEqual(lines.find((l) => l.msg === 'request completed')!.toolsUsed, ['get_weather']);
  assert.ok(contexts.at(-1)!.endsWith('<|im_start|>assistant\n'), 'the plan sees the rendered prompt');
  assert.ok(contexts.at(-1)!.includes('<tools>'), 'the tools are in the prompt');
});

test('reasoning and tool calls: streamed deltas (reasoning, tool call start then argument fragments)', async () => {
  const { app } = setup({ ids: [...tokenizer.encode(TOOL_OUTPUT), IM_END] }, true, stages);
  const frames = sseFrames((await post(app, '/v1/chat/completions', { messages: USER, tools: [WEATHER_TOOL], stream: true })).body);
  const deltas = frames.slice(0, -1).map((f) => JSON.parse(f).choices[0]);
  assert.equal(deltas.map((d) => d.delta.reasoning ?? '').join(''), 'The user wants the weather.');
  const toolDeltas = deltas.filter((d) => d.delta.tool_calls).map((d) => d.delta.tool_calls[0]);
  assert.equal(toolDeltas[0].index, 0);
  assert.match(toolDeltas[0].id, /^call_\d+$/);
  assert.deepEqual(toolDeltas[0].function, { name: 'get_weather', arguments: '' });
  assert.deepEqual(
    JSON.parse(
      toolDeltas
        .slice(1)
        .map((t) => t.function.arguments)
        .join(''),
    ),
    { city: 'Paris' },
  );
  assert.ok(
    toolDeltas.slice(1).every((t) => t.id === undefined && t.function.name === undefined),
    'later chunks carry only arguments',
  );
  const last = deltas.at(-1);
  assert.deepEqual(last.delta, {});
  assert.equal(last.finish_reason, 'tool_calls');
});
