// `svc serve --max-seq-len 1024 --auto-compact 0.8` as a user runs it, on svc-tiny-chat, with the
// official clients: a long tool loop that is twice the context comes back 200 with the
// x-svc-context-compacted header (JSON and streaming chat completions, Anthropic Messages,
// Responses), the served model having written the summary, and one "context compacted" log line
// per request. The same request to a server without --auto-compact is today's 400.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { TINY_CHAT } from '../helpers/paths.js';
import { freePort, runSvc } from '../helpers/svc-cli.js';

const CONTEXT = 1024;
const HEADER = 'x-svc-context-compacted';
const HEADER_VALUE = /^(\d+) -> (\d+); summarized=(\d+); omitted=(\d+); truncated=(\d+)$/;

type Svc = ReturnType<typeof runSvc>;
let compacting: Svc;
let plain: Svc;
let openai: OpenAI;
let plainOpenai: OpenAI;
let anthropic: Anthropic;

async function start(extra: string[]): Promise<{ svc: Svc; base: string }> {
  const port = await freePort();
  const svc = runSvc(
    ['serve', '--model-from-path', TINY_CHAT, '--port', String(port), '--max-seq-len', String(CONTEXT), ...extra],
    /^Listening on /m,
  );
  await svc.ready;
  assert.match(svc.output().stderr, /^Listening on /m, svc.output().stderr);
  return { svc, base: `http://127.0.0.1:${port}` };
}

before(async () => {
  const [a, b] = await Promise.all([start(['--auto-compact', '0.8']), start([])]);
  compacting = a.svc;
  plain = b.svc;
  openai = new OpenAI({ baseURL: `${a.base}/v1`, apiKey: 'x', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: a.base, apiKey: 'x', maxRetries: 0 });
  plainOpenai = new OpenAI({ baseURL: `${b.base}/v1`, apiKey: 'x', maxRetries: 0 });
});

after(() => {
  compacting?.child.kill('SIGTERM');
  plain?.child.kill('SIGTERM');
});

const SYSTEM = 'You are a helpful assistant with file tools.';
const TASK = 'Read the log files one by one and tell me which one has an error.';
const READ_FILE: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'read_file',
    description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
};

function logText(i: number): string {
  return Array.from({ length: 10 }, (_, j) => `app${i} line ${j}: request served ok in ${j * 3} ms`).join('\n');
}

/** Twelve read_file calls, each answered by a ten-line log: about twice the context. */
const EXCHANGES = Array.from({ length: 12 }, (_, i) => ({ id: `call_${i}`, path: `/var/log/app${i}.log`, output: logText(i) }));

const chatMessages: ChatCompletionMessageParam[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: TASK },
  ...EXCHANGES.flatMap((e): ChatCompletionMessageParam[] => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: e.id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: e.path }) } }],
    },
    { role: 'tool', tool_call_id: e.id, content: e.output },
  ]),
];

/** The header's numbers, checked: longer than the context before, under the threshold after. */
function compacted(value: string | null): { before: number; after: number; summarized: number } {
  const m = HEADER_VALUE.exec(value ?? '');
  assert.ok(m, `header: ${value}`);
  const [before, after, summarized] = [Number(m[1]), Number(m[2]), Number(m[3])];
  assert.ok(before > CONTEXT, `before ${before}`);
  assert.ok(after <= 0.8 * CONTEXT, `after ${after}`);
  assert.ok(summarized >= 2, `summarized ${summarized}`);
  return { before, after, summarized };
}

/** The log lines "context compacted" so far. */
function logLines(): Record<string, unknown>[] {
  return compacting
    .output()
    .stderr.split('\n')
    .filter((l) => l.startsWith('context compacted '))
    .map((l) => JSON.parse(l.slice('context compacted '.length)) as Record<string, unknown>);
}

test('chat completions: a tool loop twice the context is compacted — 200, the header, a completion, a log line with the request id', async () => {
  const { data, response } = await openai.chat.completions
    .create({ model: 'm', messages: chatMessages, tools: [READ_FILE], max_tokens: 48, temperature: 0 })
    .withResponse();
  const h = compacted(response.headers.get(HEADER));
  assert.equal(data.usage!.prompt_tokens, h.after);
  assert.ok(data.usage!.completion_tokens >= 1);
  const choice = data.choices[0]!;
  assert.ok(['stop', 'length', 'tool_calls'].includes(choice.finish_reason), choice.finish_reason);
  assert.ok((choice.message.content ?? '') !== '' || (choice.message.tool_calls?.length ?? 0) > 0 || choice.finish_reason === 'length');
  const line = logLines().at(-1)!;
  assert.equal(typeof line.reqId, 'string');
  assert.equal(line.tokensBefore, h.before);
  assert.equal(line.tokensAfter, h.after);
  assert.equal(line.summarizedMessages, h.summarized);
  // The served model wrote the summary (no fallback).
  assert.ok(Number(line.summaryTokens) > 0, JSON.stringify(line));
  assert.equal(line.summaryError, undefined);
});

test('chat completions, streaming: the header comes with the stream, which ends with a finish reason; the summary is reused', async () => {
  const { data: stream, response } = await openai.chat.completions
    .create({ model: 'm', messages: chatMessages, tools: [READ_FILE], max_tokens: 24, temperature: 0, stream: true })
    .withResponse();
  compacted(response.headers.get(HEADER));
  let finish: string | null = null;
  for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
  assert.ok(finish !== null);
  // The same history as the test before: its summary is reused, not written again.
  assert.equal(logLines().at(-1)!.summaryReused, true);
});

test('Anthropic Messages (official SDK): the same tool loop as tool_use / tool_result blocks is compacted', async () => {
  const { data, response } = await anthropic.messages
    .create({
      model: 'm',
      max_tokens: 32,
      system: SYSTEM,
      tools: [
        { name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
      ],
      messages: [
        { role: 'user', content: TASK },
        ...EXCHANGES.flatMap((e): Anthropic.MessageParam[] => [
          { role: 'assistant', content: [{ type: 'tool_use', id: e.id, name: 'read_file', input: { path: e.path } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: e.id, content: e.output }] },
        ]),
      ],
    })
    .withResponse();
  const h = compacted(response.headers.get(HEADER));
  assert.equal(data.usage.input_tokens, h.after);
  assert.ok(data.stop_reason !== null);
});

test('Responses: function_call / function_call_output items are compacted', async () => {
  const { data, response } = await openai.responses
    .create({
      model: 'm',
      instructions: SYSTEM,
      max_output_tokens: 32,
      store: false,
      tools: [{ type: 'function', name: 'read_file', parameters: READ_FILE.function.parameters ?? null, strict: false }],
      input: [
        { role: 'user', content: TASK },
        ...EXCHANGES.flatMap((e): OpenAI.Responses.ResponseInputItem[] => [
          { type: 'function_call', call_id: e.id, name: 'read_file', arguments: JSON.stringify({ path: e.path }) },
          { type: 'function_call_output', call_id: e.id, output: e.output },
        ]),
      ],
    })
    .withResponse();
  const h = compacted(response.headers.get(HEADER));
  assert.equal(data.usage!.input_tokens, h.after);
  assert.equal(data.status === 'completed' || data.status === 'incomplete', true);
});

test('a request within the threshold is served as before: no header, no log line', async () => {
  const linesBefore = logLines().length;
  const { response } = await openai.chat.completions
    .create({ model: 'm', messages: chatMessages.slice(0, 4), tools: [READ_FILE], max_tokens: 8, temperature: 0 })
    .withResponse();
  assert.equal(response.headers.get(HEADER), null);
  assert.equal(logLines().length, linesBefore);
});

test('without --auto-compact the same request is 400 context_length_exceeded, as before', async () => {
  await assert.rejects(
    plainOpenai.chat.completions.create({ model: 'm', messages: chatMessages, tools: [READ_FILE], max_tokens: 48 }),
    (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError, String(err));
      assert.equal(err.code, 'context_length_exceeded');
      assert.equal(err.headers?.get?.(HEADER) ?? null, null);
      return true;
    },
  );
  assert.doesNotMatch(plain.output().stderr, /context compacted/);
});
