// End to end, tool calling and reasoning through the official `openai` client against the real
// engine running svc-tiny-chat. The tiny model knows the formats but not many facts: it copies
// some argument values (paths, commands, "Prague") and not others, so the prompts are ones it
// handles; the assertions are about structure and protocol behaviour.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type OpenAI from 'openai';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';

type Tool = OpenAI.Chat.Completions.ChatCompletionFunctionTool;
type Message = OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning?: string };

const WEATHER: Tool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather for a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'],
    },
  },
};
const EMAIL: Tool = {
  type: 'function',
  function: {
    name: 'send_email',
    description: 'Send an email message to a recipient.',
    parameters: {
      type: 'object',
      properties: {
        to: { type: 'string', description: 'Recipient email address' },
        subject: { type: 'string', description: 'Subject line' },
        body: { type: 'string', description: 'Message body' },
      },
      required: ['to', 'subject', 'body'],
    },
  },
};
const TIMER: Tool = {
  type: 'function',
  function: {
    name: 'set_timer',
    description: 'Start a countdown timer.',
    parameters: { type: 'object', properties: { minutes: { type: 'integer', description: 'Duration in minutes' } }, required: ['minutes'] },
  },
};
const TOOLS = [WEATHER, EMAIL, TIMER];
const WEATHER_QUESTION = [{ role: 'user' as const, content: "What's the weather in Prague?" }];

let server: TinyServer;
let client: OpenAI;
before(async () => {
  server = await startTinyServer();
  client = server.client;
});
after(async () => {
  await server?.close();
});

/** A minimal JSON-schema check for the tools above: required keys present, known keys typed right. */
function validates(tool: Tool, args: Record<string, unknown>): boolean {
  const schema = tool.function.parameters as { properties: Record<string, { type: string; enum?: string[] }>; required: string[] };
  if (!schema.required.every((k) => k in args)) return false;
  return Object.entries(args).every(([k, v]) => {
    const p = schema.properties[k];
    if (!p) return false;
    if (p.type === 'integer') return Number.isInteger(v);
    if (p.type !== typeof v) return false;
    return !p.enum || p.enum.includes(v as string);
  });
}

test('a weather question with tools returns a get_weather call with the city from the prompt', async () => {
  const res = await client.chat.completions.create({ model: 'm', messages: WEATHER_QUESTION, tools: TOOLS, temperature: 0 });
  const choice = res.choices[0]!;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  const calls = choice.message.tool_calls!;
  assert.equal(calls.length, 1);
  const call = calls[0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
  assert.match(call.id, /^call_\d+$/);
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.equal(JSON.parse(call.function.arguments).city, 'Prague');
  // Reasoning (thinking is on by default) comes back on its own channel, never in content.
  assert.ok((choice.message as Message).reasoning?.includes('weather'));
});

test('streamed tool call: id, type and name first with empty arguments, then argument fragments only', async () => {
  const stream = await client.chat.completions.create({
    model: 'm',
    messages: WEATHER_QUESTION,
    tools: TOOLS,
    temperature: 0,
    stream: true,
  });
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
  const toolDeltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
  assert.ok(toolDeltas.length >= 2);
  const first = toolDeltas[0]!;
  assert.equal(first.index, 0);
  assert.match(first.id!, /^call_\d+$/);
  assert.equal(first.type, 'function');
  assert.equal(first.function!.name, 'get_weather');
  assert.equal(first.function!.arguments, '');
  for (const d of toolDeltas.slice(1)) {
    assert.equal(d.id, undefined);
    assert.equal(d.function!.name, undefined);
  }
  const args = toolDeltas.map((d) => d.function!.arguments ?? '').join('');
  assert.equal(JSON.parse(args).city, 'Prague');
  const reasoning = chunks.map((c) => (c.choices[0]?.delta as { reasoning?: string } | undefined)?.reasoning ?? '').join('');
  assert.ok(reasoning.length > 0, 'reasoning streamed as delta.reasoning');
  assert.ok(!chunks.some((c) => c.choices[0]?.delta.content?.includes('<tool_call>')), 'no wire format leaks into content');
  const last = chunks[chunks.length - 1]!.choices[0]!;
  assert.deepEqual(last.delta, {});
  assert.equal(last.finish_reason, 'tool_calls');
});

test('after a tool result the model answers in text', async () => {
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
    { role: 'user', content: 'Can you start a timer for 25 minutes?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'set_timer', arguments: '{"minutes": 25}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '{"status": "ok", "minutes": 25}' },
  ];
  const res = await client.chat.completions.create({ model: 'm', messages, tools: TOOLS, temperature: 0 });
  const choice = res.choices[0]!;
  assert.equal(choice.finish_reason, 'stop');
  assert.ok(!choice.message.tool_calls || choice.message.tool_calls.length === 0);
  assert.ok(choice.message.content && choice.message.content.trim().length > 0);
  assert.ok(!choice.message.content.includes('<think>') && !choice.message.content.includes('<tool_call>'));
});

test('thinking on: reasoning is separate; enable_thinking false: none', async () => {
  const q = [{ role: 'user' as const, content: 'What city is the capital of Mexico?' }];
  const on = (await client.chat.completions.create({ model: 'm', messages: q, temperature: 0 })).choices[0]!.message as Message;
  assert.ok(on.reasoning && on.reasoning.length > 0);
  assert.ok(on.content && !on.content.includes('think>'));
  const off = (
    await client.chat.completions.create({
      model: 'm',
      messages: q,
      temperature: 0,
      chat_template_kwargs: { enable_thinking: false },
    } as never)
  ).choices[0]!.message as Message;
  assert.equal(off.reasoning, undefined);
  assert.ok(off.content && !off.content.includes('think>'));
});

test('tool_choice required on a prompt that needs no tool still returns a schema-valid call', async () => {
  for (const seed of [1, 2, 3]) {
    const res = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Say hello to me in one word.' }],
      tools: TOOLS,
      tool_choice: 'required',
      temperature: 0.7,
      seed,
    });
    const choice = res.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.ok(choice.message.tool_calls!.length >= 1);
    for (const call of choice.message.tool_calls! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[]) {
      const tool = TOOLS.find((t) => t.function.name === call.function.name);
      assert.ok(tool, `${call.function.name} is a listed tool`);
      assert.ok(validates(tool, JSON.parse(call.function.arguments)), `arguments ${call.function.arguments} fit the schema`);
    }
  }
});

test('a named tool_choice forces that tool, with valid arguments', async () => {
  const res = await client.chat.completions.create({
    model: 'm',
    messages: WEATHER_QUESTION,
    tools: TOOLS,
    tool_choice: { type: 'function', function: { name: 'send_email' } },
    temperature: 0,
  });
  const calls = res.choices[0]!.message.tool_calls! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall[];
  assert.equal(calls.length, 1);
  assert.equal(calls[0]!.function.name, 'send_email');
  assert.ok(validates(EMAIL, JSON.parse(calls[0]!.function.arguments)));
});

test('tool_choice none returns text; an unknown forced tool is a 400', async () => {
  const res = await client.chat.completions.create({
    model: 'm',
    messages: WEATHER_QUESTION,
    tools: TOOLS,
    tool_choice: 'none',
    temperature: 0,
  });
  const choice = res.choices[0]!;
  assert.equal(choice.finish_reason, 'stop');
  assert.ok(!choice.message.tool_calls || choice.message.tool_calls.length === 0);
  assert.ok(choice.message.content && !choice.message.content.includes('<tool_call>'));
  await assert.rejects(
    client.chat.completions.create({
      model: 'm',
      messages: WEATHER_QUESTION,
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'nope' } },
    }),
    (err: { status?: number }) => err.status === 400,
  );
});

test('--disable-thinking: no reasoning comes back, even when the request asks for thinking', async () => {
  const off = await startTinyServer({ disableThinking: true });
  try {
    const q = [{ role: 'user' as const, content: 'What city is the capital of Mexico?' }];
    const m = (
      await off.client.chat.completions.create({
        model: 'm',
        messages: q,
        temperature: 0,
        chat_template_kwargs: { enable_thinking: true },
      } as never)
    ).choices[0]!.message as Message;
    assert.equal(m.reasoning, undefined);
    assert.ok(m.content && !m.content.includes('think>'));
  } finally {
    await off.close();
  }
});

test('--max-thinking-budget: reasoning is cut at the budget and the answer still follows', async () => {
  const budget = 4;
  const capped = await startTinyServer({ disableThinking: false, maxThinkingBudget: budget });
  try {
    const q = [{ role: 'user' as const, content: 'What city is the capital of Mexico?' }];
    const m = (await capped.client.chat.completions.create({ model: 'm', messages: q, temperature: 0 })).choices[0]!.message as Message;
    assert.ok(m.reasoning !== undefined && m.reasoning.length > 0);
    // The budget counts tokens after <think> (the first is its newline): the reasoning text is at most that long.
    const reasoningTokens = capped.runtime.tokenizer.encode(m.reasoning).length;
    assert.ok(reasoningTokens <= budget, `reasoning "${m.reasoning}" has ${reasoningTokens} tokens`);
    const uncapped = (await client.chat.completions.create({ model: 'm', messages: q, temperature: 0 })).choices[0]!.message as Message;
    assert.ok(uncapped.reasoning!.length > m.reasoning.length, 'the uncapped reasoning is longer');
    assert.ok(m.content && m.content.length > 0 && !m.content.includes('think>'));
  } finally {
    await capped.close();
  }
});
