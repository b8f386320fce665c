// fam1_coder / fam1_xml: Qwen3-Coder XML, values typed by the tool schema.

import type { ParserCase } from './types.js';

const weather =
  '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=hourly>\ntrue\n</parameter>\n</function>\n</tool_call>';
const WEATHER = { name: 'get_weather', arguments: { city: 'Paris', days: 3, hourly: true } };
const now = '<tool_call>\n<function=now>\n</function>\n</tool_call>';
const NOW = { name: 'now', arguments: {} };

export const fam1CoderCases: ParserCase[] = [
  { name: 'plain text', input: 'No tools needed: 2 < 3 > 1.', content: 'No tools needed: 2 < 3 > 1.', calls: [] },
  { name: 'one call, typed values', input: weather, content: '', calls: [WEATHER] },
  {
    name: 'text before and after',
    input: `I will look it up.\n\n${weather}\nDone.`,
    content: 'I will look it up.\n\n\nDone.',
    calls: [WEATHER],
  },
  { name: 'two blocks', input: `${weather}\n${now}`, content: '', calls: [WEATHER, NOW] },
  {
    name: 'two functions in one block',
    input: '<tool_call>\n<function=now>\n</function>\n<function=search>\n<parameter=query>\nx\n</parameter>\n</function>\n</tool_call>',
    content: '',
    calls: [NOW, { name: 'search', arguments: { query: 'x' } }],
  },
  {
    name: 'missing </parameter> tags',
    input: '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n<parameter=days>\n3\n</function>\n</tool_call>',
    content: '',
    calls: [{ name: 'get_weather', arguments: { city: 'Paris', days: 3 } }],
  },
  {
    name: 'missing </function>: the block close ends it',
    input: '<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</tool_call>',
    content: '',
    calls: [{ name: 'get_weather', arguments: { city: 'Rome' } }],
  },
  {
    name: 'no wrapper (bare function block)',
    input: 'Calling:\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>',
    content: 'Calling:\n',
    calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }],
  },
  {
    name: 'string values keep inner newlines; one framing newline each side is trimmed',
    input:
      '<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a.py\n</parameter>\n<parameter=content>\n\ndef f():\n    return "<b>"\n\n</parameter>\n</function>\n</tool_call>',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: '/tmp/a.py', content: '\ndef f():\n    return "<b>"\n' } }],
  },
  {
    name: 'object, array, number and nullable values',
    input:
      '<tool_call>\n<function=search>\n<parameter=query>\ncats\n</parameter>\n<parameter=filters>\n{"age": [1, 2]}\n</parameter>\n<parameter=tags>\n["a", "b"]\n</parameter>\n<parameter=score>\n0.5\n</parameter>\n<parameter=limit>\nnull\n</parameter>\n</function>\n</tool_call>',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'cats', filters: { age: [1, 2] }, tags: ['a', 'b'], score: 0.5, limit: null } }],
  },
  {
    name: 'string-typed "null" and numbers stay strings; unknown parameters stay strings',
    input:
      '<tool_call>\n<function=search>\n<parameter=query>\nnull\n</parameter>\n<parameter=extra>\n42\n</parameter>\n</function>\n</tool_call>',
    content: '',
    calls: [{ name: 'search', arguments: { query: 'null', extra: '42' } }],
  },
  {
    name: 'a value that does not fit its type stays a string',
    input:
      '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>',
    content: '',
    calls: [{ name: 'get_weather', arguments: { city: 'Paris', days: 'three' } }],
  },
  {
    name: 'without tool schemas every value is a string',
    input: weather,
    content: '',
    calls: [{ name: 'get_weather', arguments: { city: 'Paris', days: '3', hourly: 'true' } }],
    tools: [],
  },
  {
    name: 'xml code fence around the call',
    input: `Sure:\n\`\`\`xml\n${weather}\n\`\`\`\nBye`,
    content: 'Sure:\nBye',
    calls: [WEATHER],
  },
  {
    name: 'a block without a function: text',
    input: 'x <tool_call>\nnot a function\n</tool_call> y',
    content: 'x <tool_call>\nnot a function\n</tool_call> y',
    calls: [],
  },
  { name: 'empty {} body: text', input: '<tool_call>{}</tool_call>', content: '<tool_call>{}</tool_call>', calls: [] },
  {
    name: 'cut off inside a value: the value so far is kept',
    input: '<tool_call>\n<function=write_file>\n<parameter=path>\nnotes.txt\n</parameter>\n<parameter=content>\nfirst line',
    content: '',
    calls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'first line' } }],
  },
  {
    name: 'cut off inside the function tag: text',
    input: 'ok <tool_call>\n<function=get_wea',
    content: 'ok <tool_call>\n<function=get_wea',
    calls: [],
  },
  {
    name: 'function lookalikes stay text',
    input: 'Write <function> or <function name> or <tool_cal',
    content: 'Write <function> or <function name> or <tool_cal',
    calls: [],
  },
];

export const fam1XmlCases: ParserCase[] = [
  { name: 'plain text', input: 'Nothing to call.', content: 'Nothing to call.', calls: [] },
  {
    name: 'bare function block',
    input: '<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>',
    content: '',
    calls: [{ name: 'get_weather', arguments: { city: 'Paris', days: 2 } }],
  },
  {
    name: 'two bare blocks with text around',
    input: 'Two calls.\n<function=now>\n</function>\n<function=search>\n<parameter=query>\nq\n</function>\nThat is all.',
    content: 'Two calls.\n\nThat is all.',
    calls: [
      { name: 'now', arguments: {} },
      { name: 'search', arguments: { query: 'q' } },
    ],
  },
  {
    name: 'the wrapper is accepted too',
    input: '<tool_call>\n<function=now>\n</function>\n</tool_call>',
    content: '',
    calls: [{ name: 'now', arguments: {} }],
  },
  {
    name: 'fenced bare block',
    input: '```xml\n<function=now>\n</function>\n```',
    content: '',
    calls: [{ name: 'now', arguments: {} }],
  },
  {
    name: 'a function tag spanning lines is not a tag',
    input: '<function=get\nweather>',
    content: '<function=get\nweather>',
    calls: [],
  },
];
