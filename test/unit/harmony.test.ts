// OpenAI harmony (GPT-OSS) end to end on the output side, token by token: a scripted vocabulary
// whose harmony tags are single special tokens (as in GPT-OSS's tokenizer) and whose `<|call|>` /
// `<|return|>` are stop tokens (GPT-OSS's generation_config), through the real output pipeline and
// the stages the output plan builds for the registry's gpt-oss entry; the tool-call grammar; the
// prompt side (the message shape GPT-OSS's template reads); and the chat-completions route over a
// scripted engine. The chunking conformance of the same stages is in test/conformance/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { OutputEvent } from '../../src/chat/events.js';
import { OutputPipeline, runTextStages } from '../../src/chat/pipeline.js';
import { planChatOutput, textStages } from '../../src/chat/output-plan.js';
import { REASONING_FORMATS } from '../../src/chat/reasoning.js';
import { chatTemplateInput } from '../../src/chat/prompt.js';
import { renderChatTemplate } from '../../src/chat/template.js';
import { decodeChatRequest } from '../../src/protocols/openai/chat.js';
import { compileGrammar, VocabIndex } from '../../src/engine/grammar/index.js';
import { toolGrammarConstraint } from '../../src/chat/tool-formats/constraint.js';
import { findModelToml } from '../../src/model/model-toml.js';
import type { ToolSchema } from '../../src/chat/tool-formats/registry.js';
import { IM_END, scriptedApp, tinyTokenizer } from '../helpers/scripted-app.js';

// ------------------------------------------------------------------------------------------------
// A scripted harmony vocabulary: ids 0..6 are the special tokens, the rest are text pieces.

const SPECIALS = ['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|constrain|>', '<|call|>', '<|return|>'] as const;
const CALL_ID = 5;
const RETURN_ID = 6;

class Vocab {
  readonly pieces: string[] = [...SPECIALS];

  /** Ids for a text written with the special tokens and ` `-separated pieces (`|` splits pieces without a space). */
  ids(text: string): number[] {
    const out: number[] = [];
    const re = /<\|[a-z]+\|>/g;
    let last = 0;
    const words = (t: string) => {
      for (const w of t.split(/(?<= )|\|/)) if (w !== '') out.push(this.id(w));
    };
    for (const m of text.matchAll(re)) {
      words(text.slice(last, m.index));
      out.push(this.id(m[0]));
      last = m.index + m[0].length;
    }
    words(text.slice(last));
    return out;
  }

  private id(piece: string): number {
    let i = this.pieces.indexOf(piece);
    if (i < 0) i = this.pieces.push(piece) - 1;
    return i;
  }

  decode = (ids: number[]): string => ids.map((i) => this.pieces[i]).join('');
}

const TOOLS: ToolSchema[] = [
  {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] },
  },
  { name: 'now', parameters: { type: 'object', properties: {} } },
];

function pipeline(vocab: Vocab, stopTokenIds = [CALL_ID, RETURN_ID], tools = true): OutputPipeline {
  return new OutputPipeline({
    decoder: { decode: vocab.decode },
    skipSpecialTokens: false,
    stop: [],
    stopTokenIds,
    stages: textStages({
      reasoning: true,
      startsInReasoning: false,
      reasoningFormat: REASONING_FORMATS.harmony,
      toolCallParser: tools ? 'harmony' : null,
      tools: TOOLS,
    }),
  });
}

/** Each token pushed alone; the events of each push, then the finish events. */
function stream(p: OutputPipeline, ids: number[], reason: 'stop' | 'length' = 'stop'): { steps: OutputEvent[][]; finish: OutputEvent[] } {
  const steps: OutputEvent[][] = [];
  for (const id of ids) {
    if (p.ended) break;
    steps.push(p.push([id]));
  }
  return { steps, finish: p.finish(reason) };
}

function fold(events: OutputEvent[]) {
  let reasoning = '';
  let content = '';
  const calls: { name: string; args: string }[] = [];
  let finish: string | null = null;
  for (const e of events) {
    if (e.type === 'reasoning') reasoning += e.text;
    else if (e.type === 'text') content += e.text;
    else if (e.type === 'tool_call_start') calls.push({ name: e.name, args: '' });
    else if (e.type === 'tool_call_args') calls[e.index]!.args += e.fragment;
    else finish = e.reason;
  }
  return { reasoning, content, calls: calls.map((c) => ({ name: c.name, arguments: JSON.parse(c.args) as unknown })), finish };
}

const A = '<|start|>assistant';
const ANALYSIS = '<|channel|>analysis<|message|>The user wants the weather. I should call get_weather.<|end|>';
const CALL = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"|city|":| "|Paris|",| "|days|":| 3|}';

test('analysis then final: reasoning and content arrive token by token; <|return|> is hidden', () => {
  const v = new Vocab();
  const ids = v.ids(`${ANALYSIS}${A}<|channel|>final<|message|>It is sunny in Paris.<|return|>`);
  const { steps, finish } = stream(pipeline(v), ids);
  const all = [...steps.flat(), ...finish];
  assert.deepEqual(fold(all), {
    reasoning: 'The user wants the weather. I should call get_weather.',
    content: 'It is sunny in Paris.',
    calls: [],
    finish: 'stop',
  });
  // Incremental: the first reasoning word comes out with its own token, not at the end.
  const firstReasoning = steps.findIndex((s) => s.some((e) => e.type === 'reasoning'));
  assert.equal(v.decode(ids.slice(0, firstReasoning + 1)), '<|channel|>analysis<|message|>The ');
  const contentSteps = steps.filter((s) => s.some((e) => e.type === 'text')).length;
  assert.equal(contentSteps, 'It is sunny in Paris.'.split(' ').length);
  // No framing leaks anywhere.
  for (const e of all) if (e.type === 'text' || e.type === 'reasoning') assert.doesNotMatch(e.text, /<\||\|>/);
});

test('analysis then a tool call: the call starts at its header, arguments stream, <|call|> ends it', () => {
  const v = new Vocab();
  const ids = v.ids(`${ANALYSIS}${A}${CALL}<|call|>`);
  const { steps, finish } = stream(pipeline(v), ids);
  assert.deepEqual(fold([...steps.flat(), ...finish]), {
    reasoning: 'The user wants the weather. I should call get_weather.',
    content: '',
    calls: [{ name: 'get_weather', arguments: { city: 'Paris', days: 3 } }],
    finish: 'tool_calls',
  });
  const start = steps.findIndex((s) => s.some((e) => e.type === 'tool_call_start'));
  assert.ok(v.decode(ids.slice(0, start + 1)).endsWith('<|constrain|>json<|message|>'), 'committed at the header');
  const argSteps = steps.filter((s) => s.some((e) => e.type === 'tool_call_args')).length;
  assert.ok(argSteps >= 3, `arguments stream (${argSteps} steps)`);
});

test('two tool calls, a preamble, and the recipient-first header', () => {
  const v = new Vocab();
  const text =
    `${ANALYSIS}${A}<|channel|>commentary<|message|>Checking two things.<|end|>` +
    `${A}${CALL}<|end|>${A} to=functions.now<|channel|>commentary json<|message|>{}<|call|>`;
  const { steps, finish } = stream(pipeline(v), v.ids(text));
  assert.deepEqual(fold([...steps.flat(), ...finish]), {
    reasoning: 'The user wants the weather. I should call get_weather.',
    content: 'Checking two things.',
    calls: [
      { name: 'get_weather', arguments: { city: 'Paris', days: 3 } },
      { name: 'now', arguments: {} },
    ],
    finish: 'tool_calls',
  });
});

test('truncated by max_tokens in each channel', () => {
  const cut = (text: string) => {
    const v = new Vocab();
    const { steps, finish } = stream(pipeline(v), v.ids(text), 'length');
    return fold([...steps.flat(), ...finish]);
  };
  assert.deepEqual(cut('<|channel|>analysis<|message|>Let me think about'), {
    reasoning: 'Let me think about',
    content: '',
    calls: [],
    finish: 'length',
  });
  assert.deepEqual(cut(`${ANALYSIS}${A}<|channel|>final<|message|>The answer is`), {
    reasoning: 'The user wants the weather. I should call get_weather.',
    content: 'The answer is',
    calls: [],
    finish: 'length',
  });
  // A call cut off: its arguments are closed where they stop (the client gets a call, as vLLM).
  assert.deepEqual(cut(`${A}<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"|city|":| "|Par`), {
    reasoning: '',
    content: '',
    calls: [{ name: 'get_weather', arguments: { city: 'Par' } }],
    finish: 'tool_calls',
  });
  // Cut inside a header: nothing of it is content.
  assert.deepEqual(cut(`${ANALYSIS}${A}<|channel|>fi|nal`), {
    reasoning: 'The user wants the weather. I should call get_weather.',
    content: '',
    calls: [],
    finish: 'length',
  });
});

test('special tokens split across deltas (text-level chunks) never leak', () => {
  const text = `${ANALYSIS}${A}<|channel|>final<|message|>Done.<|end|>`;
  const stages = textStages({
    reasoning: true,
    startsInReasoning: false,
    reasoningFormat: REASONING_FORMATS.harmony,
    toolCallParser: 'harmony',
    tools: TOOLS,
  });
  // Every special token cut after its second letter: `<|ch` + `annel|>analysis<|me` + …
  const pieces = text.split(/(?<=<\|[a-z]{2})/);
  assert.ok(pieces.length > 5);
  const events: OutputEvent[] = [];
  for (const piece of pieces) {
    const evs = runTextStages(stages, piece, false);
    for (const e of evs) if (e.type === 'text' || e.type === 'reasoning') assert.doesNotMatch(e.text, /<\|/, JSON.stringify(piece));
    events.push(...evs);
  }
  events.push(...runTextStages(stages, '', true));
  const r = fold(events);
  assert.equal(r.reasoning, 'The user wants the weather. I should call get_weather.');
  assert.equal(r.content, 'Done.');
});

test('<|return|> that is not a stop token ends the output: the job is cancelled, what follows is dropped', () => {
  const v = new Vocab();
  const p = pipeline(v, []);
  const { steps, finish } = stream(p, v.ids(`<|channel|>final<|message|>Bye.<|return|>${A}<|channel|>final<|message|>More`));
  assert.equal(p.ended, true);
  assert.deepEqual(fold([...steps.flat(), ...finish]), { reasoning: '', content: 'Bye.', calls: [], finish: 'stop' });
});

test('without tools, analysis is still reasoning and final is content', () => {
  const v = new Vocab();
  const { steps, finish } = stream(pipeline(v, [CALL_ID, RETURN_ID], false), v.ids(`${ANALYSIS}${A}<|channel|>final<|message|>Hi.`));
  assert.deepEqual(fold([...steps.flat(), ...finish]), {
    reasoning: 'The user wants the weather. I should call get_weather.',
    content: 'Hi.',
    calls: [],
    finish: 'stop',
  });
});

// ------------------------------------------------------------------------------------------------
// The registry entry and the plan built from it.

test('the built-in gpt-oss entry selects the harmony stages', () => {
  const toml = findModelToml('/nonexistent/openai/gpt-oss-20b', 'gpt_oss', 'gpt-oss-20b');
  assert.ok(toml);
  assert.equal(toml.model.toolCallParser, 'harmony');
  assert.equal(toml.model.reasoning, true);
  assert.equal(toml.model.reasoningFormat, 'harmony');
});

// ------------------------------------------------------------------------------------------------
// The tool-call grammar (tool_choice required / named), over a byte vocabulary: id 256 ends.

const byteVocab = new VocabIndex(Array.from({ length: 256 }, (_, b) => Uint8Array.of(b)));

function accepts(text: string, tools = TOOLS): boolean {
  const constraint = toolGrammarConstraint({ format: 'harmony', tools, endTokenIds: [256] });
  assert.ok(constraint);
  const g = compileGrammar(structuredClone(constraint), byteVocab)!;
  let st = g.start();
  for (const b of new TextEncoder().encode(text)) {
    const next = g.tryAdvance(st, b);
    if (next === null) return false;
    st = next;
  }
  return g.tryAdvance(st, 256) !== null;
}

test('grammar: one call message, optionally after an analysis message, then the end', () => {
  const call = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}';
  assert.equal(accepts(call), true);
  assert.equal(accepts(`<|channel|>analysis<|message|>Think <|channel|> freely.<|end|><|start|>assistant${call}`), true);
  assert.equal(accepts('<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}'), true);
  assert.equal(accepts('<|channel|>final<|message|>Paris.'), false, 'no answer instead of a call');
  assert.equal(accepts('<|channel|>commentary to=functions.lookup <|constrain|>json<|message|>{}'), false, 'a tool not offered');
  assert.equal(accepts('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"days": 3}'), false, 'schema');
  assert.equal(accepts(`${call}<|end|>`), false, 'the call ends the turn (<|call|> is the end token)');
  // What the grammar lets through, the parser reads back.
  const v = new Vocab();
  const { steps, finish } = stream(pipeline(v), v.ids(`<|channel|>analysis<|message|>x<|end|><|start|>assistant${call}`));
  assert.deepEqual(fold([...steps.flat(), ...finish]).calls, [{ name: 'get_weather', arguments: { city: 'Paris' } }]);
});

test('grammar: names the parser cannot read back are refused (decoding stays unconstrained)', () => {
  assert.equal(toolGrammarConstraint({ format: 'harmony', tools: [{ name: 'a b' }], endTokenIds: [256] }), null);
});

// ------------------------------------------------------------------------------------------------
// The prompt side: what reaches GPT-OSS's chat template.

/**
 * A stand-in for GPT-OSS's chat template, written for this test: it reads the same variables and
 * message fields as the real one (openai/gpt-oss-20b's chat_template.jinja, vendored by llama.cpp as
 * models/templates/openai-gpt-oss-120b.jinja; not available offline, so not used here): the system
 * message's `Reasoning: {reasoning_effort}` (default medium), an assistant turn with tool_calls
 * rendered from `thinking` and its first call's `function.name` / `arguments|tojson`, tool results
 * named after the last call.
 */
const GPT_OSS_LIKE_TEMPLATE = `<|start|>system<|message|>Reasoning: {{ reasoning_effort if reasoning_effort is defined else 'medium' }}<|end|>
{%- set last = namespace(name=none) -%}
{%- for m in messages -%}
{%- if m.role == 'user' -%}<|start|>user<|message|>{{ m.content }}<|end|>
{%- elif m.role == 'assistant' and m.tool_calls -%}
{%- set call = m.tool_calls[0].function -%}
{%- if m.thinking %}<|start|>assistant<|channel|>analysis<|message|>{{ m.thinking }}<|end|>{% endif -%}
<|start|>assistant to=functions.{{ call.name }}<|channel|>commentary json<|message|>{{ call.arguments|tojson }}<|call|>
{%- set last.name = call.name -%}
{%- elif m.role == 'assistant' -%}<|start|>assistant<|channel|>final<|message|>{{ m.content }}<|end|>
{%- elif m.role == 'tool' -%}<|start|>functions.{{ last.name }} to=assistant<|channel|>commentary<|message|>{{ m.content|tojson }}<|end|>
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}<|start|>assistant{% endif %}`;

test('prompt: reasoning reaches the template as `thinking`, tool calls as OpenAI shapes, effort as `reasoning_effort`', () => {
  const req = decodeChatRequest(
    {
      model: 'gpt-oss',
      reasoning_effort: 'high',
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          reasoning_content: 'Need the weather tool.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
    } as never,
    { defaultMinP: 0, defaultTopNSigma: 0 },
  );
  const input = chatTemplateInput(req);
  const text = renderChatTemplate(GPT_OSS_LIKE_TEMPLATE, {
    messages: input.messages,
    tools: input.tools,
    addGenerationPrompt: true,
    bosToken: null,
    eosToken: null,
    extra: input.chatTemplateKwargs,
  });
  assert.equal(
    text,
    '<|start|>system<|message|>Reasoning: high<|end|>' +
      '<|start|>user<|message|>Weather in Paris?<|end|>' +
      '<|start|>assistant<|channel|>analysis<|message|>Need the weather tool.<|end|>' +
      '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>' +
      '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"sunny"<|end|>' +
      '<|start|>assistant',
  );
});

// ------------------------------------------------------------------------------------------------
// The chat-completions route over a scripted engine (svc-tiny-chat's tokenizer spells the harmony
// tags in pieces, and <|im_end|> stands in for <|call|> / <|return|> as the EOS).

function harmonyApp(output: string) {
  const setup = scriptedApp({ script: { ids: [...tinyTokenizer.encode(output), IM_END], chunk: 1 }, chatOutput: planChatOutput });
  setup.runtime.chat = {
    toolCallParser: 'harmony',
    reasoning: true,
    reasoningFormat: 'harmony',
    disableThinking: false,
    maxThinkingBudget: null,
  };
  return setup;
}

const WEATHER_TOOL = { type: 'function', function: TOOLS[0] };

test('chat completions: reasoning and a tool call, whole and streamed', async () => {
  const output = `<|channel|>analysis<|message|>Call the tool.<|end|>${A}<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}`;
  const { app } = harmonyApp(output);
  const body = { model: 'svc-tiny-chat', messages: [{ role: 'user', content: 'Weather?' }], tools: [WEATHER_TOOL] };
  const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: body });
  assert.equal(res.statusCode, 200, res.body);
  const choice = (res.json() as { choices: { message: Record<string, unknown>; finish_reason: string }[] }).choices[0]!;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.reasoning ?? choice.message.reasoning_content, 'Call the tool.');
  assert.ok(!choice.message.content, `no content: ${JSON.stringify(choice.message.content)}`);
  const calls = choice.message.tool_calls as { function: { name: string; arguments: string } }[];
  assert.equal(calls.length, 1);
  assert.equal(calls[0]!.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(calls[0]!.function.arguments), { city: 'Paris' });

  const sres = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { ...body, stream: true } });
  assert.equal(sres.statusCode, 200);
  const chunks = sres.body
    .split('\n\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)) as { choices: { delta: Record<string, unknown>; finish_reason: string | null }[] });
  let reasoning = '';
  let args = '';
  let content = '';
  let reasoningChunks = 0;
  for (const c of chunks) {
    const d = c.choices[0]?.delta ?? {};
    const r = (d.reasoning ?? d.reasoning_content) as string | undefined;
    if (r) {
      reasoning += r;
      reasoningChunks++;
    }
    if (typeof d.content === 'string') content += d.content;
    for (const t of (d.tool_calls ?? []) as { function?: { arguments?: string } }[]) args += t.function?.arguments ?? '';
  }
  assert.equal(reasoning, 'Call the tool.');
  assert.ok(reasoningChunks > 1, 'reasoning streams in several deltas');
  assert.equal(content, '');
  assert.deepEqual(JSON.parse(args), { city: 'Paris' });
  assert.equal(chunks.at(-1)?.choices[0]?.finish_reason ?? chunks.at(-2)?.choices[0]?.finish_reason, 'tool_calls');
  await app.close();
});

test('chat completions: analysis and a final answer', async () => {
  const { app } = harmonyApp(`<|channel|>analysis<|message|>Easy.<|end|>${A}<|channel|>final<|message|>Paris.`);
  const res = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    payload: { model: 'svc-tiny-chat', messages: [{ role: 'user', content: 'Capital of France?' }] },
  });
  const choice = (res.json() as { choices: { message: Record<string, unknown>; finish_reason: string }[] }).choices[0]!;
  assert.equal(choice.message.content, 'Paris.');
  assert.equal(choice.message.reasoning ?? choice.message.reasoning_content, 'Easy.');
  assert.equal(choice.finish_reason, 'stop');
  await app.close();
});

// ------------------------------------------------------------------------------------------------
// The plan's constraints for the gpt-oss entry: no free prefix before the harmony call grammar; a
// structured answer after `<|channel|>final<|message|>`.

function planFor(body: Record<string, unknown>) {
  const { runtime } = harmonyApp('');
  runtime.eosTokenIds = [256];
  const request = decodeChatRequest({ model: 'x', messages: [{ role: 'user', content: 'Hi' }], ...body } as never, {
    defaultMinP: 0,
    defaultTopNSigma: 0,
  });
  return planChatOutput({ request, runtime, promptText: '<|start|>user<|message|>Hi<|end|><|start|>assistant' });
}

function acceptsPlan(body: Record<string, unknown>, text: string): boolean {
  const plan = planFor(body);
  assert.ok(plan.constraint);
  const g = compileGrammar(structuredClone(plan.constraint), byteVocab)!;
  let st = g.start();
  for (const b of new TextEncoder().encode(text)) {
    const next = g.tryAdvance(st, b);
    if (next === null) return false;
    st = next;
  }
  return g.tryAdvance(st, 256) !== null;
}

test('plan: tool_choice required takes a call with or without analysis before it', () => {
  const body = { tools: [WEATHER_TOOL], tool_choice: 'required' };
  const call = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}';
  assert.equal(acceptsPlan(body, call), true);
  assert.equal(acceptsPlan(body, `<|channel|>analysis<|message|>hm<|end|><|start|>assistant${call}`), true);
  assert.equal(acceptsPlan(body, '<|channel|>final<|message|>No.'), false);
  assert.equal(planFor(body).thinkingBudget ?? null, null, 'no thinking budget for harmony');
});

test('plan: a structured answer is enforced in the final channel, after free analysis', () => {
  const body = { response_format: { type: 'json_object' } };
  assert.equal(acceptsPlan(body, '<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>{"a": 1}'), true);
  assert.equal(acceptsPlan(body, '<|channel|>final<|message|>{"a": 1}'), true);
  assert.equal(acceptsPlan(body, '<|channel|>final<|message|>not json'), false);
});
