// Reasoning splitter cases, and pipeline cases (splitter, then a tool-call parser on
// the text) for reasoning mixed with tool calls.

import type { ExpectedCall } from './types.js';

export interface ReasoningCase {
  name: string;
  /** The rendered prompt's tail; the case starts in reasoning iff it opens a think block. */
  prompt: string;
  input: string;
  reasoning: string;
  text: string;
  toolOpeners?: string[];
  tags?: { openTag: string; closeTag: string };
}

export interface PipelineCase {
  name: string;
  prompt: string;
  parser: string;
  input: string;
  reasoning: string;
  content: string;
  calls: ExpectedCall[];
}

/** Qwen3 with enable_thinking=false: the template forces an empty, closed think block. */
const FORCED_EMPTY = '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n';
/** A template that opens the think block for the model (DeepSeek-R1 style). */
const OPENED = '<｜User｜>Hi<｜Assistant｜><think>\n';
/** Qwen3 thinking mode: the model writes `<think>` itself. */
const PLAIN = '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n';

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
    name: 'spontaneous think mid-stream',
    prompt: PLAIN,
    input: 'First part. <think>\nreconsider\n</think>\n\nSecond part.',
    reasoning: 'reconsider',
    text: 'First part. Second part.',
  },
  { name: 'empty think block in the output', prompt: PLAIN, input: '<think>\n\n</think>\n\nHi', reasoning: '', text: 'Hi' },
  { name: 'two think spans', prompt: PLAIN, input: '<think>a</think>x <think>b</think>y', reasoning: 'ab', text: 'x y' },
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
  { name: 'a stray </think> in text is dropped', prompt: PLAIN, input: 'Answer.</think>\n\nMore.', reasoning: '', text: 'Answer.More.' },
  {
    name: 'a repeated <think> inside reasoning is dropped',
    prompt: OPENED,
    input: '<think>\nX\n</think>\n\nY',
    reasoning: 'X',
    text: 'Y',
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
    name: 'other tag pairs ([THINK] … [/THINK])',
    prompt: PLAIN,
    input: '[THINK]hmm[/THINK]ok',
    reasoning: 'hmm',
    text: 'ok',
    tags: { openTag: '[THINK]', closeTag: '[/THINK]' },
  },
];

const weather = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>';
const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3 } };

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
];
