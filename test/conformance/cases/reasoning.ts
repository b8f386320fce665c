// Reasoning splitter cases, and pipeline cases (splitter, then a tool-call parser on
// the text) for reasoning mixed with tool calls. The rules they pin are in the header
// of src/chat/reasoning.ts: where a span opens (prompt, or an open tag at a line start
// before any call opener), where it closes (close tag, or a call opener: promotion),
// and that tags outside reasoning are text.

import type { ReasoningFormatName } from '../../../src/model/model-toml.js';
import type { ExpectedCall } from './types.js';
import { harmonyPipelineCases, harmonyReasoningCases } from './harmony-reasoning.js';

export interface ReasoningCase {
  name: string;
  /** The rendered prompt's tail; the case starts in reasoning iff it opens a reasoning block. */
  prompt: string;
  input: string;
  reasoning: string;
  text: string;
  toolOpeners?: string[];
  /** The model's reasoning format (default think). */
  format?: ReasoningFormatName;
}

export interface PipelineCase {
  name: string;
  prompt: string;
  parser: string;
  input: string;
  reasoning: string;
  content: string;
  calls: ExpectedCall[];
  format?: ReasoningFormatName;
}

/** Qwen3 with enable_thinking=false: the template forces an empty, closed think block. */
const FORCED_EMPTY = '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n';
/** A template that opens the think block for the model (DeepSeek-R1 style). */
const OPENED = '<｜User｜>Hi<｜Assistant｜><think>\n';
/** Qwen3 thinking mode: the model writes `<think>` itself. */
const PLAIN = '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n';
/** Magistral: the system prompt asks for [THINK] … [/THINK]; the model opens it. */
const MISTRAL = '[SYSTEM_PROMPT]Think first.[/SYSTEM_PROMPT][INST]Hi[/INST]';
/** Gemma 4 thinking on (`<|think|>` in the system turn): the model opens the thought channel. */
const GEMMA = '<|turn>system\n<|think|><turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n';
/** Gemma 4 thinking off: the template writes an empty thought block itself. */
const GEMMA_FORCED_EMPTY = '<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>';
/** A Gemma-4-style template that leaves the thought channel open for the model. */
const GEMMA_OPENED = '<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n';

export const reasoningCases: ReasoningCase[] = [
  { name: 'no think block', prompt: PLAIN, input: 'Hello there.', reasoning: '', text: 'Hello there.' },
  {
    name: 'template-forced empty think block does not start reasoning',
    prompt: FORCED_EMPTY,
    input: 'Paris is the capital.',
    reasoning: '',
    text: 'Paris is the capital.',
  },
  {
    name: 'unclosed think from the prompt',
    prompt: OPENED,
    input: 'Let me think.\nStep 2.\n</think>\n\nThe answer is 4.',
    reasoning: 'Let me think.\nStep 2.',
    text: 'The answer is 4.',
  },
  {
    name: 'think emitted by the model at the start (Qwen3 formatting trimmed)',
    prompt: PLAIN,
    input: '<think>\nPlan the answer.\n</think>\n\nAnswer.',
    reasoning: 'Plan the answer.',
    text: 'Answer.',
  },
  {
    name: 'spontaneous think mid-stream, at a line start',
    prompt: PLAIN,
    input: 'First part.\n<think>\nreconsider\n</think>\n\nSecond part.',
    reasoning: 'reconsider',
    text: 'First part.\nSecond part.',
  },
  {
    name: 'a line start may be indented',
    prompt: PLAIN,
    input: 'Intro.\n  \t<think>x</think>\nEnd.',
    reasoning: 'x',
    text: 'Intro.\n  \tEnd.',
  },
  {
    name: 'think mid-sentence is text (and so is the close after it)',
    prompt: PLAIN,
    input: 'First part. <think>\nreconsider\n</think>\n\nSecond part.',
    reasoning: '',
    text: 'First part. <think>\nreconsider\n</think>\n\nSecond part.',
  },
  { name: 'empty think block in the output', prompt: PLAIN, input: '<think>\n\n</think>\n\nHi', reasoning: '', text: 'Hi' },
  { name: 'a block right after a closed one', prompt: PLAIN, input: '<think>a</think><think>b</think>y', reasoning: 'ab', text: 'y' },
  {
    name: 'a new block at a line start after a first closed block',
    prompt: PLAIN,
    input: '<think>\nA\n</think>\n\nPart one.\n<think>\nB\n</think>\n\nPart two.',
    reasoning: 'AB',
    text: 'Part one.\nPart two.',
  },
  {
    name: 'after a closed block, think after text on the same line is text',
    prompt: PLAIN,
    input: '<think>a</think>x <think>b</think>y',
    reasoning: 'a',
    text: 'x <think>b</think>y',
  },
  { name: 'unterminated think at the end', prompt: PLAIN, input: '<think>\nstill going\n', reasoning: 'still going', text: '' },
  {
    name: 'inner newlines are kept',
    prompt: PLAIN,
    input: '<think>\n\na\n\nb\n\n</think>\n\n\nc\n',
    reasoning: 'a\n\nb',
    text: 'c\n',
  },
  {
    name: 'lookalike tags stay text',
    prompt: PLAIN,
    input: 'Use <thinking> tags, not </thinks>, or <thin',
    reasoning: '',
    text: 'Use <thinking> tags, not </thinks>, or <thin',
  },
  {
    name: 'a stray </think> in text is kept',
    prompt: PLAIN,
    input: 'Answer.</think>\n\nMore.',
    reasoning: '',
    text: 'Answer.</think>\n\nMore.',
  },
  {
    name: 'after reasoning closed, a </think> mid-line is kept and one at a line start is dropped',
    prompt: OPENED,
    input: 'R.\n</think>\n\nThe tag </think> ends a block.\n  </think>\nEnd.',
    reasoning: 'R.',
    text: 'The tag </think> ends a block.\n  End.',
  },
  {
    name: 'thinking budget: the model closes its cut-off thought again on a later line',
    prompt: PLAIN,
    input: '<think>\nThe user asks\n</think>\n\nabout Mexico.\n</think>\n\nMexico City.',
    reasoning: 'The user asks',
    text: 'about Mexico.\nMexico City.',
  },
  {
    name: 'a close at a line start that pairs with an open tag kept as text is text',
    prompt: PLAIN,
    input: 'Wrap it as <think>\nnotes\n</think>\nthen answer.\n</think>\nDone.',
    reasoning: '',
    text: 'Wrap it as <think>\nnotes\n</think>\nthen answer.\nDone.',
  },
  {
    name: 'a close right after a close is dropped',
    prompt: PLAIN,
    input: '<think>a</think></think>b',
    reasoning: 'a',
    text: 'b',
  },
  {
    name: 'a </think> before any output closes a block the template opened unseen',
    prompt: PLAIN,
    input: '</think>\n\nAnswer.',
    reasoning: '',
    text: 'Answer.',
  },
  {
    name: 'a </think> before any output, after the forced empty block, is dropped too',
    prompt: FORCED_EMPTY,
    input: '  </think>\nAnswer.',
    reasoning: '',
    text: '  Answer.',
  },
  {
    name: 'a repeated <think> at the start of the span is dropped',
    prompt: OPENED,
    input: '<think>\nX\n</think>\n\nY',
    reasoning: 'X',
    text: 'Y',
  },
  {
    name: 'a <think> later in a span is reasoning text',
    prompt: OPENED,
    input: 'Use <think> tags.\n</think>\n\nOK',
    reasoning: 'Use <think> tags.',
    text: 'OK',
  },
  {
    name: 'a tool-call opener ends an unterminated span',
    prompt: OPENED,
    input: "I'll call it.\n<tool_call>\n{}\n",
    reasoning: "I'll call it.",
    text: '<tool_call>\n{}\n',
    toolOpeners: ['<tool_call>'],
  },
  {
    name: 'tool-call openers mean nothing in text',
    prompt: PLAIN,
    input: 'a <tool_call> b',
    reasoning: '',
    text: 'a <tool_call> b',
    toolOpeners: ['<tool_call>'],
  },
  {
    name: 'no block opens after a tool-call opener, even at a line start',
    prompt: PLAIN,
    input: '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>\n<think>\nmore\n</think>\nDone.',
    reasoning: '',
    text: '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>\n<think>\nmore\n</think>\nDone.',
    toolOpeners: ['<tool_call>'],
  },
  {
    name: 'after a promoted call, tags are text',
    prompt: PLAIN,
    input: '<think>\nPlan\n<tool_call>\n{}\n</tool_call>\n</think>\n<think>\nx',
    reasoning: 'Plan',
    text: '<tool_call>\n{}\n</tool_call>\n</think>\n<think>\nx',
    toolOpeners: ['<tool_call>'],
  },
  // Mistral (Magistral, Ministral reasoning): [THINK] … [/THINK].
  {
    name: 'mistral: [THINK] … [/THINK]',
    prompt: MISTRAL,
    input: '[THINK]hmm[/THINK]ok',
    reasoning: 'hmm',
    text: 'ok',
    format: 'mistral',
  },
  {
    name: 'mistral: [THINK] mid-sentence and a later [/THINK] are text',
    prompt: MISTRAL,
    input: '[THINK]a[/THINK]Write [THINK] to think and [/THINK] to stop.',
    reasoning: 'a',
    text: 'Write [THINK] to think and [/THINK] to stop.',
    format: 'mistral',
  },
  {
    name: 'mistral: <think> tags are text',
    prompt: MISTRAL,
    input: '<think>x</think>y',
    reasoning: '',
    text: '<think>x</think>y',
    format: 'mistral',
  },
  {
    name: 'mistral: [TOOL_CALLS] ends a [THINK] block that never closes',
    prompt: MISTRAL,
    input: '[THINK]Call it.[TOOL_CALLS]now[ARGS]{}',
    reasoning: 'Call it.',
    text: '[TOOL_CALLS]now[ARGS]{}',
    toolOpeners: ['[TOOL_CALLS]'],
    format: 'mistral',
  },
  // Gemma 4: <|channel>thought\n … <channel|>.
  {
    name: 'gemma4: thought block, label dropped',
    prompt: GEMMA,
    input: '<|channel>thought\nPlan it.\nStep 2.<channel|>The answer.',
    reasoning: 'Plan it.\nStep 2.',
    text: 'The answer.',
    format: 'gemma4',
  },
  {
    name: 'gemma4: a block with only the label is empty',
    prompt: GEMMA,
    input: '<|channel>thought\n<channel|>Hi',
    reasoning: '',
    text: 'Hi',
    format: 'gemma4',
  },
  {
    name: 'gemma4: text that starts like the label is reasoning',
    prompt: GEMMA,
    input: '<|channel>thousand reasons<channel|>Done',
    reasoning: 'thousand reasons',
    text: 'Done',
    format: 'gemma4',
  },
  {
    name: 'gemma4: the label alone at the end of output is kept',
    prompt: GEMMA,
    input: '<|channel>thought',
    reasoning: 'thought',
    text: '',
    format: 'gemma4',
  },
  {
    name: 'gemma4: the prompt opened the thought channel',
    prompt: GEMMA_OPENED,
    input: 'Reasoning.\n<channel|>Answer',
    reasoning: 'Reasoning.',
    text: 'Answer',
    format: 'gemma4',
  },
  {
    name: 'gemma4: the template closed an empty thought block',
    prompt: GEMMA_FORCED_EMPTY,
    input: 'Answer <|channel> and <channel|> here.',
    reasoning: '',
    text: 'Answer <|channel> and <channel|> here.',
    format: 'gemma4',
  },
  {
    name: 'gemma4: <|tool_call> ends a thought block that never closes',
    prompt: GEMMA,
    input: '<|channel>thought\nNeed now.\n<|tool_call>call:now{}<tool_call|>',
    reasoning: 'Need now.',
    text: '<|tool_call>call:now{}<tool_call|>',
    toolOpeners: ['<|tool_call>'],
    format: 'gemma4',
  },
  ...harmonyReasoningCases,
];

const weather = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>';
const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };
const Q = '<|"|>';
const gemmaWeather = `<|tool_call>call:get_weather{city:${Q}Paris${Q},days:3}<tool_call|>`;

export const pipelineCases: PipelineCase[] = [
  {
    name: 'think, then a tool call',
    prompt: PLAIN,
    parser: 'hermes',
    input: `<think>\nThe user wants weather.\n</think>\n\n${weather}`,
    reasoning: 'The user wants weather.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'unterminated think (opened by the prompt) containing a tool call',
    prompt: OPENED,
    parser: 'hermes',
    input: `I need the weather.\n${weather}`,
    reasoning: 'I need the weather.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'unterminated think (opened by the model) containing a tool call, then text',
    prompt: PLAIN,
    parser: 'hermes',
    input: `<think>\nPlan\n${weather}\nWaiting.`,
    reasoning: 'Plan',
    content: '\nWaiting.',
    calls: [WEATHER],
  },
  {
    name: 'reasoning that talks about calls without the tag stays reasoning',
    prompt: PLAIN,
    parser: 'hermes',
    input: `<think>\nCall get_weather with {"city": "Paris"}.\n</think>\n\nSure.\n${weather}`,
    reasoning: 'Call get_weather with {"city": "Paris"}.',
    content: 'Sure.\n',
    calls: [WEATHER],
  },
  {
    name: '</think> and <think> inside a hermes tool argument after reasoning closed are kept',
    prompt: PLAIN,
    parser: 'hermes',
    input:
      '<think>\nWrite the note.\n</think>\n\n<tool_call>\n{"name": "write_file", "arguments": {"path": "n.md", "content": "contains </think> and <think> tags"}}\n</tool_call>',
    reasoning: 'Write the note.',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'n.md', content: 'contains </think> and <think> tags' } }],
  },
  {
    name: '<think> inside tool arguments, reasoning never opened, stays in the argument',
    prompt: FORCED_EMPTY,
    parser: 'hermes',
    input:
      '<tool_call>\n{"name": "write_file", "arguments": {"path": "t.md", "content": "<think> opens a block\\n</think> closes it"}}\n</tool_call>',
    reasoning: '',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 't.md', content: '<think> opens a block\n</think> closes it' } }],
  },
  {
    name: '<think> mid-sentence in content is text, then a call',
    prompt: PLAIN,
    parser: 'hermes',
    input: `Tags like <think> and </think> are text here.\n${weather}`,
    reasoning: '',
    content: 'Tags like <think> and </think> are text here.\n',
    calls: [WEATHER],
  },
  {
    name: 'a new think block at a line start after a first closed block, then a call',
    prompt: PLAIN,
    parser: 'hermes',
    input: `<think>\nFirst.\n</think>\n\nLet me check.\n<think>\nSecond.\n</think>\n\n${weather}`,
    reasoning: 'First.Second.',
    content: 'Let me check.\n',
    calls: [WEATHER],
  },
  {
    name: 'a </think> in content after reasoning closed is kept',
    prompt: OPENED,
    parser: 'hermes',
    input: 'R.\n</think>\n\nThe tag </think> ends reasoning.',
    reasoning: 'R.',
    content: 'The tag </think> ends reasoning.',
    calls: [],
  },
  {
    name: 'forced empty think, then an XML tool call',
    prompt: FORCED_EMPTY,
    parser: 'fam1_coder',
    input:
      '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>',
    reasoning: '',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'XML call: a line-start <think> inside a parameter value stays in the value',
    prompt: PLAIN,
    parser: 'fam1_coder',
    input:
      '<think>\nWrite it.\n</think>\n\n<tool_call>\n<function=write_file>\n<parameter=path>\na.md\n</parameter>\n<parameter=content>\n<think>\nnot reasoning\n</think>\n</parameter>\n</function>\n</tool_call>',
    reasoning: 'Write it.',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'a.md', content: '<think>\nnot reasoning\n</think>' } }],
  },
  {
    name: 'Qwen3.5: the prompt opens think, the model closes it, then an XML call',
    prompt: '<|im_start|>assistant\n<think>\n',
    parser: 'fam1_coder',
    input:
      'Weather needed.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>',
    reasoning: 'Weather needed.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'Qwen3.5: an XML call inside a think block that never closes',
    prompt: '<|im_start|>assistant\n<think>\n',
    parser: 'fam1_coder',
    input:
      'Weather needed.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>',
    reasoning: 'Weather needed.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'MiniMax: think, then a tool block',
    prompt: PLAIN,
    parser: 'fam4_xml',
    input:
      '<think>\nuse the tool\n</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>',
    reasoning: 'use the tool',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'Magistral: [THINK] … [/THINK], then content, then [TOOL_CALLS]',
    prompt: MISTRAL,
    parser: 'fam2',
    format: 'mistral',
    input: '[THINK]The user wants the weather.[/THINK]Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}',
    reasoning: 'The user wants the weather.',
    content: 'Checking.',
    calls: [WEATHER],
  },
  {
    name: 'Magistral: a [TOOL_CALLS] inside a [THINK] block is promoted to a call',
    prompt: MISTRAL,
    parser: 'fam2',
    format: 'mistral',
    input: '[THINK]I will call it.\n[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}',
    reasoning: 'I will call it.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'Magistral: [THINK] and [/THINK] inside call arguments stay in them',
    prompt: MISTRAL,
    parser: 'fam2',
    format: 'mistral',
    input: '[THINK]ok[/THINK][TOOL_CALLS]write_file[ARGS]{"path": "m.md", "content": "[THINK] then [/THINK]"}',
    reasoning: 'ok',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'm.md', content: '[THINK] then [/THINK]' } }],
  },
  {
    name: 'Gemma 4: a thought block, then a call',
    prompt: GEMMA,
    parser: 'fam3',
    format: 'gemma4',
    input: `<|channel>thought\nThe user wants the weather.<channel|>${gemmaWeather}`,
    reasoning: 'The user wants the weather.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'Gemma 4: a call inside a thought block that never closes is promoted',
    prompt: GEMMA,
    parser: 'fam3',
    format: 'gemma4',
    input: `<|channel>thought\nThe user wants the weather.\n${gemmaWeather}`,
    reasoning: 'The user wants the weather.',
    content: '',
    calls: [WEATHER],
  },
  {
    name: 'Gemma 4: channel tags inside call arguments stay in them',
    prompt: GEMMA,
    parser: 'fam3',
    format: 'gemma4',
    input: `<|channel>thought\nok<channel|><|tool_call>call:write_file{path:${Q}g.md${Q},content:${Q}<|channel> and <channel|>${Q}}<tool_call|>`,
    reasoning: 'ok',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'g.md', content: '<|channel> and <channel|>' } }],
  },
  ...harmonyPipelineCases,
];
