// Chat templates: the fixture cases (template + messages + expected rendering), the Qwen3 template of
// svc-tiny-chat with tools, tool calls, tool results and enable_thinking, Qwen2.5's and SmolLM2's templates,
// and finding templates in model directories and GGUF files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { FIXTURES, MODELS, TINY_CHAT } from '../helpers/paths.js';
import { findChatTemplate, renderChatTemplate, strftimeNow, ChatTemplateError, type ChatTemplateMessage } from '../../src/chat/template.js';
import { writeGguf } from '../../src/model/loaders/gguf-writer.js';

// ---------------------------------------------------------------------------------------------------------
// tiny-hf-fixtures/chat_template_cases.json

interface TemplateCase {
  messages: ChatTemplateMessage[];
  add_generation_prompt: boolean;
  expected?: string;
  raises?: boolean;
  error?: string;
  reasoning_effort?: string;
}
const families = JSON.parse(readFileSync(join(FIXTURES, 'chat_template_cases.json'), 'utf8')) as Record<
  string,
  { template: string; cases: TemplateCase[] }
>;

// The fixture does not record BOS/EOS; these are each family's real tokens, which its expected texts contain.
const SPECIAL_TOKENS: Record<string, [string, string]> = {
  llama2: ['<s>', '</s>'],
  mistral: ['<s>', '</s>'],
  zephyr: ['<s>', '</s>'],
  llama3: ['<|begin_of_text|>', '<|eot_id|>'],
  gemma: ['<bos>', '<eos>'],
  phi3: ['<s>', '<|endoftext|>'],
  deepseek: ['<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>'],
};

/** The fixture's reasoning_effort: "off" was rendered as enable_thinking=false, other levels as the reasoning_effort variable. */
function reasoningKwargs(effort: string | undefined): Record<string, unknown> {
  if (effort === undefined) return {};
  return effort === 'off' ? { enable_thinking: false } : { reasoning_effort: effort };
}

for (const [family, { template, cases }] of Object.entries(families)) {
  test(`chat_template_cases ${family}: ${cases.length} cases`, () => {
    const [bosToken, eosToken] = SPECIAL_TOKENS[family] ?? [null, null];
    cases.forEach((c, i) => {
      const render = () =>
        renderChatTemplate(template, {
          messages: c.messages,
          addGenerationPrompt: c.add_generation_prompt,
          bosToken,
          eosToken,
          extra: reasoningKwargs(c.reasoning_effort),
        });
      if (c.raises) {
        assert.throws(
          render,
          (err: unknown) => err instanceof ChatTemplateError && err.raisedByTemplate && err.message === c.error,
          `case ${i}`,
        );
      } else {
        assert.equal(render(), c.expected, `case ${i}`);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Real model templates. Expected texts were rendered by Jinja2 3.1.6 set up as transformers sets it up
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, tojson with ensure_ascii=False,
// raise_exception), with tool-call arguments as mappings and '' for tool-only assistant content.
const REFERENCE = {
  qwen3_tool_round_trip:
    '<|im_start|>system\nYou are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Météo: current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}\n{"type": "function", "function": {"name": "get_time", "description": "Current time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": []}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWhat\'s the weather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{"temp": 21, "sky": "clear"}\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  qwen3_parallel_then_followup:
    '<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Météo: current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}\n{"type": "function", "function": {"name": "get_time", "description": "Current time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": []}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris and the time in Tokyo?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "Asia/Tokyo"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\n09:00\n</tool_response><|im_end|>\n<|im_start|>assistant\nIt is sunny in Paris and 09:00 in Tokyo.<|im_end|>\n<|im_start|>user\nThanks!<|im_end|>\n<|im_start|>assistant\n',
  qwen3_reasoning_content:
    '<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n<think>\nAlso simple.\n</think>\n\n6<|im_end|>\n',
  qwen3_thinking_off_plain: '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  qwen3_thinking_default_plain: '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
  qwen25_tools:
    '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Météo: current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}\n{"type": "function", "function": {"name": "get_time", "description": "Current time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": []}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
  smollm2_default_system:
    '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
  smollm2_own_system: '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n',
};

const qwen3Template = findChatTemplate(TINY_CHAT)!;
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Météo: current weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['c', 'f'] } },
        required: ['city'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      description: 'Current time',
      parameters: { type: 'object', properties: { tz: { type: 'string' } }, required: [] },
    },
  },
];
const qwen3 = (
  messages: ChatTemplateMessage[],
  opts: { tools?: unknown[]; addGenerationPrompt?: boolean; extra?: Record<string, unknown> } = {},
) =>
  renderChatTemplate(qwen3Template, {
    messages,
    tools: opts.tools,
    addGenerationPrompt: opts.addGenerationPrompt ?? true,
    bosToken: null,
    eosToken: '<|im_end|>',
    extra: opts.extra,
  });

test('qwen3: tools, a tool-call turn (OpenAI shape) and its result, thinking off', () => {
  const messages: ChatTemplateMessage[] = [
    { role: 'system', content: 'You are a helpful assistant.' },
    { role: 'user', content: "What's the weather in Paris?" },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', name: 'get_weather', content: '{"temp": 21, "sky": "clear"}' },
  ];
  const before = structuredClone(messages);
  assert.equal(qwen3(messages, { tools: TOOLS, extra: { enable_thinking: false } }), REFERENCE.qwen3_tool_round_trip);
  assert.deepEqual(messages, before, "the caller's messages are not changed");
});

test('qwen3: parallel tool calls, their results, and history think blocks dropped', () => {
  const call = (id: string, name: string, args: string) => ({ id, type: 'function', function: { name, arguments: args } });
  const messages: ChatTemplateMessage[] = [
    { role: 'user', content: 'Weather in Paris and the time in Tokyo?' },
    {
      role: 'assistant',
      content: '<think>\nTwo tools needed.\n</think>\n\n',
      tool_calls: [call('a', 'get_weather', '{"city": "Paris"}'), call('b', 'get_time', '{"tz": "Asia/Tokyo"}')],
    },
    { role: 'tool', tool_call_id: 'a', name: 'get_weather', content: 'sunny' },
    { role: 'tool', tool_call_id: 'b', name: 'get_time', content: '09:00' },
    { role: 'assistant', content: '<think>\nCombine both.\n</think>\n\nIt is sunny in Paris and 09:00 in Tokyo.' },
    { role: 'user', content: 'Thanks!' },
  ];
  assert.equal(qwen3(messages, { tools: TOOLS }), REFERENCE.qwen3_parallel_then_followup);
});

test('qwen3: arguments given as an object render the same as the JSON string', () => {
  const withArgs = (args: string | Record<string, unknown>): ChatTemplateMessage[] => [
    { role: 'user', content: 'Weather?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'x', type: 'function', function: { name: 'get_weather', arguments: args } }] },
  ];
  const fromObject = qwen3(withArgs({ city: 'Paris' }), { addGenerationPrompt: false });
  assert.equal(qwen3(withArgs('{"city":"Paris"}'), { addGenerationPrompt: false }), fromObject);
  assert.ok(fromObject.includes('{"name": "get_weather", "arguments": {"city": "Paris"}}'), fromObject);
  // Arguments that are not a JSON object reach the template as the text the client sent.
  assert.ok(qwen3(withArgs('not json'), { addGenerationPrompt: false }).includes('"arguments": not json}'));
});

test('qwen3: reasoning_content after the last query, enable_thinking off and default', () => {
  assert.equal(
    qwen3(
      [
        { role: 'user', content: '2+2?' },
        { role: 'assistant', content: '4', reasoning_content: 'Simple arithmetic.' },
        { role: 'user', content: 'And 3+3?' },
        { role: 'assistant', content: '6', reasoning_content: 'Also simple.' },
      ],
      { addGenerationPrompt: false },
    ),
    REFERENCE.qwen3_reasoning_content,
  );
  assert.equal(qwen3([{ role: 'user', content: 'Hi' }], { extra: { enable_thinking: false } }), REFERENCE.qwen3_thinking_off_plain);
  assert.equal(qwen3([{ role: 'user', content: 'Hi' }]), REFERENCE.qwen3_thinking_default_plain);
  // An empty tools list is the same as none.
  assert.equal(qwen3([{ role: 'user', content: 'Hi' }], { tools: [] }), REFERENCE.qwen3_thinking_default_plain);
});

// Expected text rendered by Jinja2 as for REFERENCE above.
test('qwen3.5 (fixture template): string arguments reach `arguments|items` as a mapping', () => {
  const out = renderChatTemplate(families.qwen3_5.template, {
    messages: [
      { role: 'user', content: 'Weather in Paris for 3 days?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","days":3,"opts":{"unit":"c"}}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c', name: 'get_weather', content: 'sunny' },
    ],
    addGenerationPrompt: true,
    bosToken: null,
    eosToken: '<|im_end|>',
  });
  assert.equal(
    out,
    '<|im_start|>user\nWeather in Paris for 3 days?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{"unit": "c"}\n</parameter>\n</function>\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n',
  );
});

test('qwen2.5: tools and a tool call', () => {
  const template = findChatTemplate(join(MODELS, 'qwen2.5-0.5b-instruct-tokenizer'))!;
  const out = renderChatTemplate(template, {
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'c', name: 'get_weather', content: 'sunny' },
    ],
    tools: TOOLS,
    addGenerationPrompt: true,
    bosToken: null,
    eosToken: '<|im_end|>',
  });
  assert.equal(out, REFERENCE.qwen25_tools);
});

test('smollm2: chat_template.jinja with its default system prompt, and with one given', () => {
  const template = findChatTemplate(join(MODELS, 'smollm2-135m-instruct-tokenizer'))!;
  const render = (messages: ChatTemplateMessage[], addGenerationPrompt: boolean) =>
    renderChatTemplate(template, { messages, addGenerationPrompt, bosToken: '<|im_start|>', eosToken: '<|im_end|>' });
  assert.equal(render([{ role: 'user', content: 'Hi' }], true), REFERENCE.smollm2_default_system);
  assert.equal(
    render(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello!' },
      ],
      false,
    ),
    REFERENCE.smollm2_own_system,
  );
});

// ---------------------------------------------------------------------------------------------------------
// Globals and errors

test('strftime_now formats like Python in the C locale', () => {
  assert.equal(
    strftimeNow('%Y-%m-%d %H:%M:%S|%a %A|%b %B|%j|%y|%I%p|%e|%%|%Q', new Date(2024, 0, 5, 13, 7, 9)),
    '2024-01-05 13:07:09|Fri Friday|Jan January|005|24|01PM| 5|%|%Q',
  );
  const out = renderChatTemplate('{{ strftime_now("%Y") }}', { messages: [], addGenerationPrompt: false, bosToken: null, eosToken: null });
  assert.equal(out, String(new Date().getFullYear()));
});

test("template errors are ChatTemplateError; raise_exception is marked as the template's own", () => {
  const ctx = { messages: [{ role: 'user', content: 'x' }], addGenerationPrompt: false, bosToken: null, eosToken: null };
  assert.throws(
    () => renderChatTemplate('{{ raise_exception("no " + messages[0].role) }}', ctx),
    (e: unknown) => e instanceof ChatTemplateError && e.raisedByTemplate && e.message === 'no user',
  );
  assert.throws(
    () => renderChatTemplate('{% if %}', ctx),
    (e: unknown) => e instanceof ChatTemplateError && !e.raisedByTemplate,
  );
  assert.throws(
    () => renderChatTemplate('{{ messages[0].content.no_such_method() }}', ctx),
    (e: unknown) => e instanceof ChatTemplateError && !e.raisedByTemplate,
  );
});

test('bos_token/eos_token and chat_template_kwargs reach the template; null tokens render empty', () => {
  const t = '{{ bos_token }}|{{ eos_token }}|{{ custom }}|{{ add_generation_prompt }}';
  assert.equal(
    renderChatTemplate(t, { messages: [], addGenerationPrompt: true, bosToken: '<s>', eosToken: '</s>', extra: { custom: 'yes' } }),
    '<s>|</s>|yes|true',
  );
  assert.equal(
    renderChatTemplate(t, { messages: [], addGenerationPrompt: false, bosToken: null, eosToken: null, extra: { custom: 1 } }),
    '||1|false',
  );
});

// ---------------------------------------------------------------------------------------------------------
// Finding templates

test('findChatTemplate: tokenizer_config.json string, chat_template.jinja, none', () => {
  assert.equal(findChatTemplate(TINY_CHAT), readFileSync(join(MODELS, 'qwen3-chat-template', 'Qwen-Qwen3-0.6B.jinja'), 'utf8'));
  assert.equal(
    findChatTemplate(join(MODELS, 'smollm2-135m-instruct-tokenizer')),
    readFileSync(join(MODELS, 'smollm2-135m-instruct-tokenizer', 'chat_template.jinja'), 'utf8'),
  );
  assert.equal(findChatTemplate(join(MODELS, 'tinystories-656k')), null);
  assert.equal(findChatTemplate(join(MODELS, 'stories260k-gguf', 'stories260K.gguf')), null);
  assert.equal(findChatTemplate(join(MODELS, 'no-such-model')), null);
});

test('findChatTemplate: a list of named templates (default preferred) and a GGUF file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tpl-'));
  try {
    writeFileSync(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({
        chat_template: [
          { name: 'tool_use', template: 'T' },
          { name: 'default', template: 'D' },
        ],
      }),
    );
    assert.equal(findChatTemplate(dir), 'D');
    assert.equal(findChatTemplate(dir, 'tool_use'), 'T');
    assert.equal(findChatTemplate(dir, 'rag'), null);
    // chat_template.jinja wins over tokenizer_config.json, as in transformers.
    writeFileSync(join(dir, 'chat_template.jinja'), 'J');
    assert.equal(findChatTemplate(dir), 'J');
    const gguf = join(dir, 'model.gguf');
    writeGguf(gguf, { metadata: { 'general.architecture': 'llama', 'tokenizer.chat_template': qwen3Template } });
    assert.equal(findChatTemplate(gguf), qwen3Template);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
