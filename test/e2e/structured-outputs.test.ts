// End to end, structured outputs and the fields around them through the official clients against
// the real engine running svc-tiny-chat: response_format (json_object, json_schema) at temperature
// 1.0 over many seeds, every output checked with Ajv; vLLM's guided_* / structured_outputs;
// Responses' text.format; Anthropic's output_config.format; legacy functions; parallel_tool_calls
// false with tool_choice auto; reasoning_effort / include_reasoning; refused fields and schemas.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { startTinyServer, type TinyServer } from '../helpers/tiny-server.js';
import { E2E_SCHEMAS } from '../helpers/schema-corpus.js';

type Message = OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning?: string };

let server: TinyServer;
let client: OpenAI;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);

before(async () => {
  server = await startTinyServer();
  client = server.client;
});
after(async () => {
  await server?.close();
});

const ask = (content: string) => [{ role: 'user' as const, content }];

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

function errorOf(json: Record<string, unknown>): { message: string; param?: string; code?: string } {
  return json.error as { message: string; param?: string; code?: string };
}

test('response_format json_object: every answer is a JSON object (temperature 1.0, 8 seeds), after free reasoning', async () => {
  let reasoned = 0;
  for (let seed = 0; seed < 8; seed++) {
    const r = await client.chat.completions.create({
      model: 'svc-tiny-chat',
      messages: ask('Describe your favourite animal as JSON.'),
      response_format: { type: 'json_object' },
      temperature: 1.0,
      seed,
      max_tokens: 400,
    });
    const choice = r.choices[0]!;
    assert.equal(choice.finish_reason, 'stop', `seed ${seed}: ${choice.message.content}`);
    const value: unknown = JSON.parse(choice.message.content!);
    assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), choice.message.content!);
    if ((choice.message as Message).reasoning) reasoned++;
  }
  // The model reasons first (svc-tiny-chat thinks by default): the think block stays free text.
  assert.ok(reasoned > 0);
});

test('response_format json_schema: a corpus of real-world schemas, every output valid (Ajv), temperature 1.0, several seeds', async () => {
  const failures: string[] = [];
  for (const [name, schema] of Object.entries(E2E_SCHEMAS)) {
    const validate = ajv.compile(schema);
    for (let seed = 0; seed < 3; seed++) {
      const r = await client.chat.completions.create({
        model: 'svc-tiny-chat',
        messages: ask(`Fill in this ${name.replace(/_/g, ' ')} record as JSON.`),
        response_format: { type: 'json_schema', json_schema: { name, schema, strict: true } },
        temperature: 1.0,
        seed,
        // svc-tiny-chat at temperature 1.0 likes whitespace between JSON tokens (up to 16 bytes a gap).
        max_tokens: 1200,
        // No reasoning: the whole budget goes to the answer.
        reasoning_effort: 'none',
      } as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming);
      const choice = r.choices[0]!;
      const text = choice.message.content ?? '';
      if (choice.finish_reason !== 'stop') {
        failures.push(`${name} seed ${seed}: finish_reason ${choice.finish_reason}: ${text.slice(0, 200)}`);
        continue;
      }
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        failures.push(`${name} seed ${seed}: not JSON: ${text.slice(0, 200)}`);
        continue;
      }
      if (!validate(value)) failures.push(`${name} seed ${seed}: ${ajv.errorsText(validate.errors)}: ${text.slice(0, 200)}`);
    }
  }
  assert.deepEqual(failures, []);
});

test('streamed json_schema: the content deltas join into a valid object', async () => {
  const schema = E2E_SCHEMAS.weather_report!;
  const stream = await client.chat.completions.create({
    model: 'svc-tiny-chat',
    messages: ask('The weather in Prague as JSON.'),
    response_format: { type: 'json_schema', json_schema: { name: 'w', schema } },
    temperature: 0.7,
    seed: 3,
    max_tokens: 600,
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  assert.ok(ajv.validate(schema, JSON.parse(text)), text);
});

test('vLLM extensions: guided_choice, guided_regex, guided_json, guided_grammar and structured_outputs are enforced', async () => {
  const choices = ['positive', 'negative', 'neutral'];
  for (let seed = 0; seed < 4; seed++) {
    const r = await post('/v1/chat/completions', {
      messages: ask('Is "I love it" positive or negative?'),
      guided_choice: choices,
      temperature: 1.0,
      seed,
      reasoning_effort: 'none',
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const msg = (r.json.choices as { message: { content: string } }[])[0]!.message;
    assert.ok(choices.includes(msg.content), msg.content);
  }
  const regex = await post('/v1/chat/completions', {
    messages: ask('Give me a product code.'),
    guided_regex: '[A-Z]{3}-\\d{4}',
    temperature: 1.0,
    seed: 1,
    reasoning_effort: 'none',
  });
  assert.equal(regex.status, 200, JSON.stringify(regex.json));
  assert.match((regex.json.choices as { message: { content: string } }[])[0]!.message.content, /^[A-Z]{3}-\d{4}$/);

  const so = await post('/v1/chat/completions', {
    messages: ask('Pick a colour.'),
    structured_outputs: { choice: ['red', 'green'] },
    temperature: 1.0,
    seed: 2,
    reasoning_effort: 'none',
  });
  assert.equal(so.status, 200, JSON.stringify(so.json));
  assert.ok(['red', 'green'].includes((so.json.choices as { message: { content: string } }[])[0]!.message.content));

  const gj = await post('/v1/completions', {
    prompt: 'A person as JSON:',
    guided_json: {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 20 } },
      required: ['name'],
      additionalProperties: false,
    },
    temperature: 1.0,
    seed: 4,
    max_tokens: 100,
  });
  assert.equal(gj.status, 200, JSON.stringify(gj.json));
  const completion = JSON.parse((gj.json.choices as { text: string }[])[0]!.text) as { name: string };
  assert.equal(typeof completion.name, 'string');
  assert.deepEqual(Object.keys(completion), ['name']);

  const grammar = 'root ::= "yes" | "no" | "maybe " digit\ndigit ::= [0-9]';
  const gg = await post('/v1/chat/completions', {
    messages: ask('Will it rain?'),
    guided_grammar: grammar,
    temperature: 1.0,
    seed: 5,
    reasoning_effort: 'none',
  });
  assert.equal(gg.status, 200, JSON.stringify(gg.json));
  assert.match((gg.json.choices as { message: { content: string } }[])[0]!.message.content, /^(yes|no|maybe [0-9])$/);
});

test('Responses text.format json_schema and Anthropic output_config.format constrain the answer', async () => {
  const schema = E2E_SCHEMAS.contact!;
  const r = await client.responses.create({
    model: 'svc-tiny-chat',
    input: 'A contact card as JSON.',
    text: { format: { type: 'json_schema', name: 'contact', schema, strict: true } },
    temperature: 1.0,
    max_output_tokens: 1200,
    reasoning: { effort: 'none' },
  });
  assert.equal(r.status, 'completed', JSON.stringify(r.output));
  assert.ok(ajv.validate(schema, JSON.parse(r.output_text)), r.output_text);

  const anthropic = new Anthropic({ baseURL: server.base, apiKey: 'x', maxRetries: 0 });
  const msg = await anthropic.messages.create({
    model: 'svc-tiny-chat',
    max_tokens: 1200,
    messages: [{ role: 'user', content: 'A contact card as JSON.' }],
    output_config: { format: { type: 'json_schema', schema } },
  });
  const text = msg.content.find((b): b is Anthropic.TextBlock => b.type === 'text')!.text;
  assert.equal(msg.stop_reason, 'end_turn');
  assert.ok(ajv.validate(schema, JSON.parse(text)), text);
});

test('schemas the grammar cannot enforce are refused with a 400 naming the problem', async () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['unsupported keyword', { type: 'object', properties: { a: { not: { type: 'string' } } } }, /not/],
    ['dangling $ref', { type: 'object', properties: { a: { $ref: '#/$defs/Missing' } } }, /Missing/],
    ['unknown type', { type: 'object', properties: { a: { type: 'nonsense' } } }, /nonsense/],
    ['unsatisfiable lengths', { type: 'object', properties: { a: { type: 'string', minLength: 5, maxLength: 2 } } }, /minLength/],
  ];
  for (const [what, schema, mentions] of cases) {
    const r = await post('/v1/chat/completions', {
      messages: ask('Hi'),
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
    });
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.json)}`);
    const err = errorOf(r.json);
    assert.match(err.message, mentions, what);
    assert.equal(err.param, 'response_format.json_schema.schema', what);
  }
  // The same schema as a tool's parameters under tool_choice required.
  const tool = await post('/v1/chat/completions', {
    messages: ask('Hi'),
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'nonsense' } } } } }],
    tool_choice: 'required',
  });
  assert.equal(tool.status, 400, JSON.stringify(tool.json));
  assert.match(errorOf(tool.json).message, /nonsense/);
  // Two constraints at once.
  const two = await post('/v1/chat/completions', {
    messages: ask('Hi'),
    response_format: { type: 'json_object' },
    guided_regex: 'a+',
  });
  assert.equal(two.status, 400);
  assert.equal(errorOf(two.json).param, 'guided_regex');
  // The server keeps serving.
  const ok = await client.chat.completions.create({ model: 'svc-tiny-chat', messages: ask('Hi'), max_tokens: 4 });
  assert.ok(ok.choices[0]);
});

test('a field svc does not implement is refused with unsupported_parameter naming it', async () => {
  for (const field of ['prediction', 'modalities', 'use_beam_search', 'made_up_field']) {
    const r = await post('/v1/chat/completions', { messages: ask('Hi'), [field]: field === 'modalities' ? ['text'] : true });
    assert.equal(r.status, 400, field);
    assert.equal(errorOf(r.json).code, 'unsupported_parameter', field);
    assert.equal(errorOf(r.json).param, field);
  }
  const c = await post('/v1/completions', { prompt: 'Hi', made_up_field: 1 });
  assert.equal(c.status, 400);
  assert.equal(errorOf(c.json).param, 'made_up_field');
});

const WEATHER_FN = {
  name: 'get_weather',
  description: 'Get the current weather for a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

test('legacy functions / function_call: the call comes back as message.function_call, streamed too', async () => {
  const r = await post('/v1/chat/completions', {
    messages: ask("What's the weather in Prague?"),
    functions: [WEATHER_FN],
    function_call: { name: 'get_weather' },
    temperature: 0,
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const choice = (r.json.choices as { message: Record<string, unknown>; finish_reason: string }[])[0]!;
  assert.equal(choice.finish_reason, 'function_call');
  const call = choice.message.function_call as { name: string; arguments: string };
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof (JSON.parse(call.arguments) as { city: string }).city, 'string');
  assert.equal(choice.message.tool_calls, undefined);

  // The call and its result sent back in the legacy shapes.
  const next = await post('/v1/chat/completions', {
    messages: [
      ...ask("What's the weather in Prague?"),
      { role: 'assistant', content: null, function_call: call },
      { role: 'function', name: 'get_weather', content: '{"temperature": 21}' },
    ],
    functions: [WEATHER_FN],
    max_tokens: 30,
  });
  assert.equal(next.status, 200, JSON.stringify(next.json));

  const res = await fetch(`${server.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: ask("What's the weather in Prague?"),
      functions: [WEATHER_FN],
      function_call: { name: 'get_weather' },
      temperature: 0,
      stream: true,
    }),
  });
  const frames = (await res.text())
    .split('\n\n')
    .filter((f) => f.startsWith('data: {'))
    .map((f) => JSON.parse(f.slice(6)) as { choices: { delta: Record<string, unknown>; finish_reason: string | null }[] });
  const deltas = frames.flatMap((f) => f.choices);
  const name = deltas.map((d) => (d.delta.function_call as { name?: string } | undefined)?.name).find(Boolean);
  const args = deltas.map((d) => (d.delta.function_call as { arguments?: string } | undefined)?.arguments ?? '').join('');
  assert.equal(name, 'get_weather');
  assert.equal(args, call.arguments);
  assert.equal(deltas.at(-1)!.finish_reason, 'function_call');
});

test('parallel_tool_calls false with tool_choice auto: never more than one call (12 seeds)', async () => {
  const tools: OpenAI.Chat.Completions.ChatCompletionFunctionTool[] = [{ type: 'function', function: WEATHER_FN }];
  let calls = 0;
  for (let seed = 0; seed < 12; seed++) {
    const r = await client.chat.completions.create({
      model: 'svc-tiny-chat',
      messages: ask("What's the weather in Prague, in Paris and in Rome?"),
      tools,
      tool_choice: 'auto',
      parallel_tool_calls: false,
      temperature: 1.0,
      seed,
      max_tokens: 300,
    });
    const n = r.choices[0]!.message.tool_calls?.length ?? 0;
    assert.ok(n <= 1, `seed ${seed}: ${n} calls`);
    calls += n;
  }
  assert.ok(calls > 0, 'the model called the tool at least once');
});

test('reasoning_effort none turns thinking off; include_reasoning false keeps the reasoning out', async () => {
  const off = await post('/v1/chat/completions', {
    messages: ask('What is 2+2?'),
    reasoning_effort: 'none',
    temperature: 0,
    max_tokens: 60,
  });
  const offMsg = (off.json.choices as { message: Message }[])[0]!.message;
  assert.equal(offMsg.reasoning, undefined);

  const on = await post('/v1/chat/completions', { messages: ask('What is 2+2?'), temperature: 0, max_tokens: 60 });
  assert.ok((on.json.choices as { message: Message }[])[0]!.message.reasoning);

  const hidden = await post('/v1/chat/completions', {
    messages: ask('What is 2+2?'),
    include_reasoning: false,
    temperature: 0,
    max_tokens: 60,
  });
  const hiddenMsg = (hidden.json.choices as { message: Message }[])[0]!.message;
  assert.equal(hiddenMsg.reasoning, undefined);
  // The model still reasoned: the same tokens were spent.
  assert.equal(
    (hidden.json.usage as { completion_tokens: number }).completion_tokens,
    (on.json.usage as { completion_tokens: number }).completion_tokens,
  );
});
